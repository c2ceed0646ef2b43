// A small persistent thread pool for the fast CPU backend. Work is split by output only (each
// task writes its own slice), so results never depend on which thread runs which task.
//
// A training step hands the pool dozens of short jobs (a small MLP's step is under a millisecond
// and runs 26 operators), so waking a sleeping thread through the kernel for each job would cost
// as much as the job. Threads therefore spin for a bounded number of pause instructions (a few
// tens of microseconds) watching for the next job, or for the last task to finish, before they
// block on a condition variable; a pool left idle sleeps. A pool with more threads than the
// process has CPUs does not spin.
#ifndef POLNODE_KERNELS_THREAD_POOL_H_
#define POLNODE_KERNELS_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace polnode::kernels {

class ThreadPool {
 public:
  /// A pool that runs work on `threads` threads in all: the caller plus threads - 1 workers.
  /// threads < 1 is treated as 1 (no workers).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Number of threads that run tasks (workers + the caller).
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// Calls task(i) once for every i in [0, tasks), spread over the pool, and returns when all
  /// have finished. The calling thread takes part. Not reentrant: a task must not call Run on
  /// the same pool, and only one thread may call Run at a time.
  void Run(std::int64_t tasks, const std::function<void(std::int64_t)>& task);

 private:
  void WorkerLoop();
  void RunTasks();  // takes task indices until none are left

  const int spin_pauses_;  // 0: block at once
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  const std::function<void(std::int64_t)>* task_ = nullptr;  // guarded by mu_
  std::int64_t num_tasks_ = 0;                               // guarded by mu_
  std::int64_t next_task_ = 0;                               // guarded by mu_
  bool stopping_ = false;                                    // guarded by mu_
  // Written only under mu_ (so the condition variables' predicates are exact); read without it
  // while a thread spins.
  std::atomic<std::int64_t> unfinished_{0};
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace polnode::kernels

#endif  // POLNODE_KERNELS_THREAD_POOL_H_
