// Status and Result: errors as values for every layer of polnode.
//
// Consensus, contracts and kernels never throw: a function that can fail returns a Status (no value)
// or a Result<T> (a value or the Status that explains why there is none). Both are [[nodiscard]], so
// a caller that drops one gets a compiler error under -Werror. Exceptions are reserved for the CLI
// edge (node/cli/main.cpp), which turns a failed Status into a message on stderr and a non-zero exit.
#ifndef POLNODE_BASE_STATUS_H_
#define POLNODE_BASE_STATUS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace polnode {

enum class StatusCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,    // the caller passed something malformed; retrying the same call fails again
  kNotFound,           // a named thing (file, key, blob, account) does not exist
  kAlreadyExists,      // creating something that is already there
  kPermissionDenied,   // e.g. a key file readable by others
  kCorruption,         // stored or received bytes fail their own integrity checks
  kIOError,            // the operating system refused a read or write
  kFailedPrecondition, // the state does not allow this now (wrong nonce, deadline passed, ...)
  kOutOfRange,         // an index or a value beyond its allowed range
  kResourceExhausted,  // a size or count limit was hit
  kUnavailable,        // a backend or peer that is not present on this machine or not reachable
  kInternal,           // an invariant of polnode itself was broken: a bug
};

/// Short stable name of a code ("invalid argument", ...), used in messages and JSON output.
std::string_view StatusCodeName(StatusCode code);

/// The outcome of an operation that returns no value. Cheap to copy when ok.
class [[nodiscard]] Status {
 public:
  /// An ok status.
  Status() = default;

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) { return {StatusCode::kAlreadyExists, std::move(msg)}; }
  static Status PermissionDenied(std::string msg) { return {StatusCode::kPermissionDenied, std::move(msg)}; }
  static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status IOError(std::string msg) { return {StatusCode::kIOError, std::move(msg)}; }
  static Status FailedPrecondition(std::string msg) { return {StatusCode::kFailedPrecondition, std::move(msg)}; }
  static Status OutOfRange(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
  static Status ResourceExhausted(std::string msg) { return {StatusCode::kResourceExhausted, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// "ok" or "<code name>: <message>".
  std::string ToString() const;

  /// Returns a copy whose message is prefixed by `context` and ": ", for errors that travel up
  /// through layers ("loading checkpoint 3: corruption: ..."). An ok status stays ok.
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}

  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

/// A value of type T, or the non-ok Status explaining why there is none.
///
/// Constructing a Result from an ok Status is a bug: it becomes an kInternal error, so the misuse
/// cannot be mistaken for success.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status)                           // NOLINT(google-explicit-constructor)
      : state_(status.ok() ? Status::Internal("Result constructed from an ok Status") : std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(state_); }

  /// The error; Status::Ok() when a value is present.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(state_); }

  /// The value. Precondition: ok(). Checked: calling it on an error aborts via std::get.
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }

  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace polnode

#define POLNODE_STATUS_CONCAT_INNER_(a, b) a##b
#define POLNODE_STATUS_CONCAT_(a, b) POLNODE_STATUS_CONCAT_INNER_(a, b)

/// Evaluates `expr` (a Status); returns it from the enclosing function if it is not ok.
#define POLNODE_RETURN_IF_ERROR(expr)                   \
  do {                                                  \
    ::polnode::Status polnode_status_ = (expr);         \
    if (!polnode_status_.ok()) return polnode_status_;  \
  } while (false)

/// Evaluates `rexpr` (a Result<T>); on error returns its Status, else moves the value into `lhs`
/// (a declaration such as `auto x` or an existing variable).
#define POLNODE_ASSIGN_OR_RETURN(lhs, rexpr) \
  POLNODE_ASSIGN_OR_RETURN_IMPL_(POLNODE_STATUS_CONCAT_(polnode_result_, __LINE__), lhs, rexpr)
#define POLNODE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                   \
  if (!tmp.ok()) return tmp.status();                   \
  lhs = std::move(tmp).value()

#endif  // POLNODE_BASE_STATUS_H_
