#include "polnode/testing/eventually.h"

#include "polnode/base/clock.h"

namespace polnode::testing {

bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout, std::chrono::milliseconds pause) {
  Clock& clock = SystemClock();
  const Clock::TimePoint deadline = clock.Now() + timeout;
  while (true) {
    if (done()) return true;
    if (clock.Now() >= deadline) return false;
    clock.SleepFor(pause);
  }
}

}  // namespace polnode::testing
