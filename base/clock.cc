#include "polnode/base/clock.h"

namespace polnode {
namespace {

class RealClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }

  std::int64_t UnixMillis() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  bool WaitUntil(TimePoint deadline, const std::function<bool()>& done) override {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_until(lock, deadline, [&] { return done && done(); });
  }

  void Notify() override {
    // Taking the lock orders the notification after any waiter's test of its condition: a waiter
    // either sees the new state or is already blocked and gets woken.
    { std::lock_guard<std::mutex> lock(mu_); }
    changed_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
};

}  // namespace

Clock& SystemClock() {
  static RealClock* const clock = new RealClock();  // never destroyed: threads may wait on it at exit
  return *clock;
}

ManualClock::ManualClock(std::int64_t start_unix_ms) : start_unix_ms_(start_unix_ms) {}

Clock::TimePoint ManualClock::Now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return TimePoint(elapsed_);
}

std::int64_t ManualClock::UnixMillis() const {
  std::lock_guard<std::mutex> lock(mu_);
  return start_unix_ms_ + std::chrono::duration_cast<std::chrono::milliseconds>(elapsed_).count();
}

bool ManualClock::WaitUntil(TimePoint deadline, const std::function<bool()>& done) {
  std::unique_lock<std::mutex> lock(mu_);
  ++waiters_;
  changed_.notify_all();  // AwaitWaiters
  bool held = false;
  changed_.wait(lock, [&] {
    held = done && done();
    return held || TimePoint(elapsed_) >= deadline;
  });
  --waiters_;
  changed_.notify_all();
  return held;
}

void ManualClock::Notify() {
  { std::lock_guard<std::mutex> lock(mu_); }
  changed_.notify_all();
}

void ManualClock::Advance(Duration duration) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (duration > Duration::zero()) elapsed_ += duration;
  }
  changed_.notify_all();
}

std::size_t ManualClock::waiters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiters_;
}

void ManualClock::AwaitWaiters(std::size_t count) const {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return waiters_ >= count; });
}

}  // namespace polnode
