// Clock: where the node reads the time and waits for it to pass (leveldb's Env and bitcoin's mock
// time are the models). Production code takes a Clock& and is handed SystemClock(); a test hands it
// a ManualClock, whose time moves only when the test says, so an outcome that depends on time
// (a retry pause, a block interval, a deadline) is decided by the test and never by how fast the
// machine runs.
//
// Waiting goes through the clock too (Clock::WaitUntil): a thread waits until the clock reaches a
// time point or a condition of the caller's holds, and whoever makes the condition true calls
// Clock::Notify. A ManualClock wakes its waiters when the test advances it, so a thread sleeping on
// it sleeps exactly as long, in clock time, as the test lets pass.
#ifndef POLNODE_BASE_CLOCK_H_
#define POLNODE_BASE_CLOCK_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>

namespace polnode {

class Clock {
 public:
  /// Monotonic time: never goes back, unrelated to the calendar. Points of two clocks do not compare.
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;

  /// The monotonic now. Thread-safe.
  virtual TimePoint Now() const = 0;
  /// Calendar time in milliseconds since the Unix epoch (block times, log lines). Thread-safe.
  virtual std::int64_t UnixMillis() const = 0;

  /// Blocks until Now() >= deadline or `done()` holds, whichever comes first; returns whether
  /// `done()` held. `done` is called with the clock's internal lock held: it must be cheap, must not
  /// call into this clock, and must read only state that its writer publishes before calling
  /// Notify() (an atomic, or state under a lock the writer releases before Notify). A null `done`
  /// never holds (a plain sleep).
  virtual bool WaitUntil(TimePoint deadline, const std::function<bool()>& done) = 0;

  /// Wakes every WaitUntil of this clock to test its condition again. Call it after making a
  /// waiter's `done` true.
  virtual void Notify() = 0;

  /// WaitUntil(Now() + duration, done).
  bool WaitFor(Duration duration, const std::function<bool()>& done) { return WaitUntil(Now() + duration, done); }
  /// Sleeps `duration` of this clock's time.
  void SleepFor(Duration duration) { WaitFor(duration, nullptr); }
};

/// The process's real clock: std::chrono::steady_clock and system_clock, waits on a condition
/// variable. The one place outside bench/ that reads them.
Clock& SystemClock();

/// A clock for tests. It starts at a fixed point (Unix time `start_unix_ms`) and moves only by
/// Advance; waiters wake when it reaches their deadline. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::int64_t start_unix_ms = 1'700'000'000'000);

  TimePoint Now() const override;
  std::int64_t UnixMillis() const override;
  bool WaitUntil(TimePoint deadline, const std::function<bool()>& done) override;
  void Notify() override;

  /// Moves the time forward by `duration` (>= 0) and wakes the waiters it reached.
  void Advance(Duration duration);
  /// How many threads are in WaitUntil now.
  std::size_t waiters() const;
  /// Blocks (in real time, unbounded) until at least `count` threads wait on this clock: a test's
  /// way to know a worker has reached its sleep before it advances the time past it.
  void AwaitWaiters(std::size_t count) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;  // time moved, Notify, or a waiter came or went
  Duration elapsed_{0};                      // since the start; guarded by mu_
  const std::int64_t start_unix_ms_;
  std::size_t waiters_ = 0;                  // guarded by mu_
};

}  // namespace polnode

#endif  // POLNODE_BASE_CLOCK_H_
