// The CPU backend's thread pool: every task index runs exactly once per Run, whether the threads
// find the next job while spinning or after they went to sleep, and Run returns only when every
// task is done.
#include "thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

namespace polnode::kernels {
namespace {

// Work that keeps a thread busy far longer than the pool's spin budget (thread_pool.cc), so the
// other threads give up spinning and block; a loop, not a sleep, so the test never waits on time.
std::uint64_t BusyWork(std::uint64_t rounds) {
  std::uint64_t x = 88172645463325252ull;
  for (std::uint64_t i = 0; i < rounds; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

TEST(ThreadPool, EveryIndexRunsOnceInBackToBackRuns) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int run = 0; run < 2000; ++run) {
      const std::int64_t tasks = 1 + run % 7;
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(tasks));
      pool.Run(tasks, [&](std::int64_t i) { hits[static_cast<std::size_t>(i)].fetch_add(1); });
      for (std::int64_t i = 0; i < tasks; ++i) {
        ASSERT_EQ(hits[static_cast<std::size_t>(i)].load(), 1) << threads << " threads, run " << run << ", task " << i;
      }
    }
  }
}

TEST(ThreadPool, RunsAfterTheWorkersSleptAndWaitsForSlowTasks) {
  ThreadPool pool(3);
  std::atomic<std::uint64_t> sink{0};
  for (int run = 0; run < 20; ++run) {
    // The caller is busy between runs long enough for the workers to stop spinning and block.
    sink.fetch_add(BusyWork(20'000'000));
    std::vector<std::atomic<int>> hits(5);
    std::atomic<int> finished{0};
    pool.Run(5, [&](std::int64_t i) {
      // One slow task makes the caller give up its spin and block until the last task ends.
      if (i == 4) sink.fetch_add(BusyWork(20'000'000));
      hits[static_cast<std::size_t>(i)].fetch_add(1);
      finished.fetch_add(1);
    });
    EXPECT_EQ(finished.load(), 5) << "Run returned before every task finished, run " << run;
    for (int i = 0; i < 5; ++i) EXPECT_EQ(hits[static_cast<std::size_t>(i)].load(), 1) << "run " << run << ", task " << i;
  }
  EXPECT_NE(sink.load(), 0u);
}

TEST(ThreadPool, NoTasksAndOneTaskRunOnTheCaller) {
  ThreadPool pool(2);
  int calls = 0;
  pool.Run(0, [&](std::int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  pool.Run(1, [&](std::int64_t i) { calls += 1 + static_cast<int>(i); });
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace polnode::kernels
