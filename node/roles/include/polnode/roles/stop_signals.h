#ifndef POLNODE_ROLES_STOP_SIGNALS_H_
#define POLNODE_ROLES_STOP_SIGNALS_H_

#include <chrono>

namespace polnode::node {

/// SIGINT and SIGTERM as a request to stop that one thread takes when it is ready to, instead of
/// a default action that kills the process wherever it is.
///
/// The constructor blocks both signals in the calling thread; threads started afterwards inherit
/// the mask, so a waiting thread alone receives them. Construct it first thing in a daemon's
/// command, before anything (a backend's thread pool, an HTTP server) starts a thread: a thread
/// started earlier does not have the mask, and a signal the kernel hands to it kills the process
/// without a clean stop. Daemon entry points take a StopSignals& to make that order hard to miss.
class StopSignals {
 public:
  StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// Waits up to `timeout` for a stop signal; returns the signal's number, or 0 when none came.
  int WaitFor(std::chrono::nanoseconds timeout);
  /// Waits for a stop signal and returns its number.
  int Wait();
};

}  // namespace polnode::node

#endif  // POLNODE_ROLES_STOP_SIGNALS_H_
