// The runtime every role daemon (`polnode submitter|solver|verifier|whistleblower`) shares: its home
// (key, duty journal), a ledger client that survives the ledger going away, one log line per
// protocol event, Prometheus metrics, an HTTP server (/metrics plus the role's own routes) and the
// poll loop that drives the role until SIGINT/SIGTERM.
//
// Roles are written as "look at the ledger, do what is due": every pass reads the ledger's records
// and sends the transactions the role owes. A transaction is sent through a named duty (SendDuty)
// whose tx id is journalled in the home before anything else happens, so a restarted daemon, or a
// pass that runs while the tx is still in the mempool, never sends it twice; a tx the ledger lost
// (it restarted with an empty mempool) is sent again.
#ifndef POLNODE_ROLES_ROLE_RUNTIME_H_
#define POLNODE_ROLES_ROLE_RUNTIME_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "polnode/base/clock.h"
#include "polnode/base/status.h"
#include "polnode/consensus/keys.h"
#include "polnode/roles/stop_signals.h"
#include "polnode/rpc/fetch_policy.h"
#include "polnode/rpc/http_types.h"
#include "polnode/rpc/ledger_client.h"

namespace polnode::node {

/// A metric's one label (Prometheus: a dimension of one family, such as an HTTP status code);
/// none when `name` is empty.
struct MetricLabel {
  std::string_view name;
  std::string value;
};

/// Thread-safe counters and gauges, exposed as Prometheus text under polnode_<role>_<name>. A name
/// ending in `_total` is a counter, any other a gauge; each family gets the `# HELP` line
/// MetricHelp gives and a `# TYPE` line, then one sample per label value.
class RoleMetrics {
 public:
  void Add(std::string_view name, double delta = 1.0, const MetricLabel& label = {});
  void Set(std::string_view name, double value, const MetricLabel& label = {});
  double Get(std::string_view name, const MetricLabel& label = {}) const;
  std::string Text(std::string_view role) const;

 private:
  mutable std::mutex mu_;
  // family name -> label text ("" or `code="200"`) -> value
  std::map<std::string, std::map<std::string, double>, std::less<>> values_;
};

/// The help text of role metric `name` (a family RoleMetrics holds): what it counts or measures
/// and in which unit. Every name a role sets has one; an unknown name gets "polnode role metric".
std::string_view MetricHelp(std::string_view name);

/// How a daemon writes its log lines (--log-format).
enum class LogFormat {
  kText,  // "<ISO-8601 UTC time> <role> <event> key=value ...", values with spaces JSON-quoted
  kJson,  // {"time":"<ISO-8601 UTC>","role":"...","event":"...","key":"value",...}, values as strings
};
/// "text" or "json"; kInvalidArgument naming both for anything else.
[[nodiscard]] Result<LogFormat> ParseLogFormat(std::string_view text);

/// `unix_ms` as ISO-8601 UTC with milliseconds: "2026-11-26T13:08:57.123Z".
std::string Iso8601Utc(std::int64_t unix_ms);

/// One line per protocol event on `out` (stdout when null) in the chosen format (text unless
/// set_format says otherwise), flushed. The time is `clock`'s calendar time; `clock` and `out` must
/// outlive the log.
class EventLog {
 public:
  explicit EventLog(std::string role, Clock& clock = SystemClock(), std::ostream* out = nullptr)
      : role_(std::move(role)), clock_(clock), out_(out) {}
  /// Set before the first event (the daemon does, from --log-format).
  void set_format(LogFormat format) { format_ = format; }
  void Event(std::string_view event, std::initializer_list<std::pair<std::string_view, std::string>> fields = {});

 private:
  std::mutex mu_;
  std::string role_;
  Clock& clock_;
  std::ostream* out_;
  std::atomic<LogFormat> format_{LogFormat::kText};
};

/// What a duty's transaction is doing.
enum class DutyState {
  kSent,       // sent in this call
  kPending,    // sent earlier, still in the mempool
  kCommitted,  // in a block, payload executed
  kFailed,     // in a block, payload failed (never re-sent; the reason is logged once)
};

/// The file in a role's home that holds the HOST:PORT its last run served at.
inline constexpr char kRoleListenFile[] = "listen";

struct RoleOptions {
  std::string home;
  std::string ledger_url;
  std::string listen = "127.0.0.1:0";
  std::chrono::milliseconds poll_interval{200};
  FetchPolicy fetch;  // what the role may fetch from URIs on the ledger (HOME/role.toml's [fetch])
  LogFormat log_format = LogFormat::kText;  // event lines and the startup line (--log-format)
};

/// What a role's pass may use. Methods are thread-safe (roles run long work on worker threads).
class RoleContext {
 public:
  /// `clock` (which must outlive the context) is the role's time: retry pauses, event times, the
  /// replay stopwatch. Daemons get SystemClock(); tests may pass a ManualClock.
  RoleContext(std::string role, std::string home, consensus::SecretKey key, LedgerClient ledger,
              FetchPolicy fetch = FetchPolicy(), Clock& clock = SystemClock());

  const std::string& role() const { return role_; }
  const std::string& home() const { return home_; }
  const consensus::SecretKey& key() const { return key_; }
  /// The role's x-only public key, raw 32 bytes (as records hold keys).
  const std::string& pubkey() const { return pubkey_; }
  const LedgerClient& ledger() const { return ledger_; }
  /// What every fetch of a URI named on the ledger goes through; fixed for the context's life.
  const FetchPolicy& fetch_policy() const { return fetch_; }
  Clock& clock() const { return clock_; }
  EventLog& log() { return log_; }
  RoleMetrics& metrics() { return metrics_; }
  /// The base URL of this role's HTTP server, once it is listening.
  std::string http_url() const;
  void set_http_url(std::string url);

  /// Sends `payload` as the transaction of duty `name` (a file name: [A-Za-z0-9._-]) unless the
  /// journal shows it was already sent; see DutyState. Errors: the ledger refused the tx outright
  /// (e.g. kFailedPrecondition) or is unreachable (kUnavailable; nothing is journalled); the
  /// duty's journal cannot be read (DecodeDutyJournal's errors, naming the file, which is left as
  /// it is and nothing is sent).
  [[nodiscard]] Result<DutyState> SendDuty(std::string_view name, std::string_view payload_type, std::string payload);
  /// Whether duty `name` was ever sent (journalled).
  bool DutySent(std::string_view name) const;
  /// The ledger's reason for duty `name`'s transaction failing, as journalled when SendDuty first
  /// returned kFailed for it; "" when it did not fail (or failed before reasons were journalled).
  std::string DutyFailure(std::string_view name) const;

  /// Makes sure at least `amount` of `role` stake is free (bonded minus locked), staking the
  /// difference from the balance. Returns whether it is free now. When the balance cannot pay the
  /// difference and the fee, sends nothing and logs `needs_funds` (the key, the amount it needs)
  /// once per shortfall, so an operator learns what to fund instead of watching failed passes.
  [[nodiscard]] Result<bool> EnsureStake(proto::Role role, std::uint64_t amount);

 private:
  std::string DutyPath(std::string_view name) const;

  std::string role_;
  std::string home_;
  consensus::SecretKey key_;
  std::string pubkey_;
  LedgerClient ledger_;
  FetchPolicy fetch_;
  Clock& clock_;
  EventLog log_;
  RoleMetrics metrics_;
  mutable std::mutex mu_;  // serialises sends (nonces) and the journal
  std::string funding_notice_;  // the last needs_funds logged; guarded by mu_
  std::string http_url_;
};

/// A role daemon's behaviour.
class Role {
 public:
  virtual ~Role() = default;
  /// One pass: read the ledger, send what is due, start or collect long work. kUnavailable means
  /// the ledger is unreachable (the loop logs it once and retries); other errors are logged and the
  /// loop goes on.
  [[nodiscard]] virtual Status Poll(RoleContext& ctx) = 0;
  /// The role's own HTTP routes (proof blobs, task documents); nullopt for 404.
  virtual std::optional<HttpResponse> Handle(const HttpRequest& request);
  /// Whether the role has finished its work and the daemon should exit (the submitter, once its
  /// tasks settled); daemons that serve forever return false.
  virtual bool Done() const { return false; }
  /// Called once the loop ends (stop worker threads).
  virtual void Stop() {}
};

/// Loads (or, on first start, creates with mode 0600) `home`/role.key.
[[nodiscard]] Result<consensus::SecretKey> LoadOrCreateRoleKey(const std::string& home);

/// Runs `role` until a stop signal or role.Done(): creates the home, loads the key, starts the
/// HTTP server on options.listen and prints one startup line to `out` (a JSON object when `json`
/// or options.log_format is kJson: role, pubkey, url, ledger, and with kJson the time and event
/// "started" as every event line has), then polls every options.poll_interval of `clock`'s time. A stop signal is taken
/// at the end of that wait, so a daemon stops at most one interval after it. Returns when stopped.
/// `stop` must have been constructed before the caller started any thread (stop_signals.h).
[[nodiscard]] Status RunRoleDaemon(std::string_view role_name, Role& role, const RoleOptions& options,
                                   const std::function<Status(RoleContext&)>& on_start, bool json, StopSignals& stop,
                                   std::ostream& out, Clock& clock = SystemClock());

}  // namespace polnode::node

#endif  // POLNODE_ROLES_ROLE_RUNTIME_H_
