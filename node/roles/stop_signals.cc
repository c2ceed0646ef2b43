#include "polnode/roles/stop_signals.h"

#include <signal.h>
#include <time.h>

#include <algorithm>

namespace polnode::node {
namespace {

sigset_t StopSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

StopSignals::StopSignals() {
  const sigset_t set = StopSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int StopSignals::WaitFor(std::chrono::nanoseconds timeout) {
  const sigset_t set = StopSet();
  timeout = std::max(timeout, std::chrono::nanoseconds(0));
  timespec wait{};
  wait.tv_sec = static_cast<time_t>(timeout.count() / 1000000000);
  wait.tv_nsec = static_cast<long>(timeout.count() % 1000000000);
  const int signal_number = sigtimedwait(&set, nullptr, &wait);
  return signal_number > 0 ? signal_number : 0;
}

int StopSignals::Wait() {
  const sigset_t set = StopSet();
  int signal_number = 0;
  while (sigwait(&set, &signal_number) != 0) {
  }
  return signal_number;
}

}  // namespace polnode::node
