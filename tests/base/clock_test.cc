#include "polnode/base/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace polnode {
namespace {

using namespace std::chrono_literals;

TEST(ManualClockTest, TimeMovesOnlyWhenAdvanced) {
  ManualClock clock(5'000);
  const Clock::TimePoint start = clock.Now();
  EXPECT_EQ(clock.UnixMillis(), 5'000);
  EXPECT_EQ(clock.Now(), start);
  clock.Advance(1500ms);
  EXPECT_EQ(clock.Now() - start, 1500ms);
  EXPECT_EQ(clock.UnixMillis(), 6'500);
  clock.Advance(-1s);  // never backwards
  EXPECT_EQ(clock.Now() - start, 1500ms);
}

TEST(ManualClockTest, ASleeperWakesExactlyWhenTheTestHasAdvancedPastItsDeadline) {
  ManualClock clock;
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    clock.SleepFor(10s);
    woke = true;
  });
  clock.AwaitWaiters(1);
  clock.Advance(9s);
  // Still asleep: 9 of its 10 s have passed. The advance woke it to check; it sleeps again.
  clock.AwaitWaiters(1);
  EXPECT_FALSE(woke);
  clock.Advance(1s);
  sleeper.join();
  EXPECT_TRUE(woke);
  EXPECT_EQ(clock.waiters(), 0u);
}

TEST(ManualClockTest, AConditionEndsAWaitEarlyAndSaysSo) {
  ManualClock clock;
  std::atomic<bool> stop{false};
  bool held = false;
  std::thread waiter([&] { held = clock.WaitFor(1h, [&] { return stop.load(); }); });
  clock.AwaitWaiters(1);
  stop = true;
  clock.Notify();
  waiter.join();
  EXPECT_TRUE(held);
  // A wait that reaches its deadline reports that the condition did not hold.
  EXPECT_FALSE(clock.WaitUntil(clock.Now(), [] { return false; }));
}

TEST(ManualClockTest, ANotifyWakesAWaiterOnlyToTestItsConditionAgain) {
  ManualClock clock;
  std::atomic<bool> stop{false};
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    clock.WaitFor(1h, [&] { return stop.load(); });
    returned = true;
  });
  clock.AwaitWaiters(1);
  clock.Notify();  // the condition is still false: the waiter goes back to sleep
  clock.AwaitWaiters(1);
  EXPECT_FALSE(returned);
  stop = true;
  clock.Notify();
  waiter.join();
  EXPECT_TRUE(returned);
  EXPECT_EQ(clock.waiters(), 0u);
}

TEST(ClockTest, AConditionThatAlreadyHoldsEndsTheWaitAtOnceOnEitherClock) {
  ManualClock manual;
  const Clock::TimePoint start = manual.Now();
  EXPECT_TRUE(manual.WaitFor(1h, [] { return true; }));
  EXPECT_EQ(manual.Now(), start);
  EXPECT_TRUE(SystemClock().WaitFor(1h, [] { return true; }));
}

TEST(SystemClockTest, IsMonotonicAndWakesOnNotify) {
  Clock& clock = SystemClock();
  const Clock::TimePoint a = clock.Now();
  EXPECT_LE(a, clock.Now());
  EXPECT_GT(clock.UnixMillis(), 1'600'000'000'000);  // after 2020
  std::atomic<bool> stop{false};
  bool held = false;
  // An hour-long wait ends as soon as its condition is made true and Notify called.
  std::thread waiter([&] { held = clock.WaitFor(1h, [&] { return stop.load(); }); });
  stop = true;
  clock.Notify();
  waiter.join();
  EXPECT_TRUE(held);
}

}  // namespace
}  // namespace polnode
