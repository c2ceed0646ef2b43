// A child `polnode` process for `polnode devnet`: started with its stdout and stderr appended to a
// log file, stopped with a signal, reaped. The destructor kills a child still running, so a devnet
// that fails half-way leaves no daemons behind.
#ifndef POLNODE_DEVNET_CHILD_PROCESS_H_
#define POLNODE_DEVNET_CHILD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "polnode/base/clock.h"
#include "polnode/base/status.h"

namespace polnode::node {

class ChildProcess {
 public:
  /// Starts argv[0] (a path) with argv, stdin from /dev/null, stdout and stderr appended to
  /// `log_path`. kIOError when the log cannot be opened or the process not started.
  [[nodiscard]] static Result<ChildProcess> Spawn(const std::vector<std::string>& argv, const std::string& log_path);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }

  /// Sends `signal` (no-op once reaped).
  void Signal(int signal) const;
  /// Whether it has exited; reaps it if so (exit_code() then holds its status).
  bool Exited();
  /// Waits up to `timeout` of `clock`'s time for it to exit; returns its exit code (128 + signal
  /// when killed) or nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout, Clock& clock = SystemClock());
  /// SIGTERM, up to `grace` for it to exit, then SIGKILL; returns the exit code. Process exits
  /// take real time, so the grace is on the system clock.
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  std::optional<int> exit_code() const { return exit_code_; }

 private:
  ChildProcess(pid_t pid, std::string log_path) : pid_(pid), log_path_(std::move(log_path)) {}
  pid_t pid_ = -1;
  std::string log_path_;
  std::optional<int> exit_code_;
};

/// The path of the running binary (/proc/self/exe), to start more of itself.
[[nodiscard]] Result<std::string> SelfExecutable();

/// The size of the file at `path`, 0 when it does not exist: where a process started now, that
/// appends to that log, begins writing.
std::uintmax_t LogSize(const std::string& path);

/// Waits up to `timeout` of `clock`'s time for a line of `process`'s log, after byte offset `from` (LogSize before
/// the start, for a log a restarted process appends to), that starts with `prefix`; returns it.
/// kFailedPrecondition when the process exits first, kUnavailable on timeout; both messages name
/// the log and its last line.
[[nodiscard]] Result<std::string> WaitForLogLine(ChildProcess& process, std::uintmax_t from, std::string_view prefix,
                                                 std::chrono::milliseconds timeout, Clock& clock = SystemClock());

}  // namespace polnode::node

#endif  // POLNODE_DEVNET_CHILD_PROCESS_H_
