#include "thread_pool.h"

#include <algorithm>

#include "polnode/base/cpus.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace polnode::kernels {
namespace {

// How long a thread watches for its condition before it sleeps: 4,096 pause instructions, about
// 15 to 150 microseconds depending on the processor's pause latency. Long enough to bridge the
// gap between two operators of a step, short enough that an idle pool stops using the core.
constexpr int kSpinPauses = 4096;

inline void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until done() holds or `pauses` pause instructions ran; returns done()'s last value.
template <typename Done>
bool SpinUntil(int pauses, Done&& done) {
  for (int i = 0; i < pauses; ++i) {
    if (done()) return true;
    Pause();
  }
  return done();
}

}  // namespace

// Spinning pays only when every thread has a CPU of its own: with more threads than CPUs a
// spinning thread holds the CPU that the thread it waits for needs.
ThreadPool::ThreadPool(int threads) : spin_pauses_(threads <= AvailableCpus() ? kSpinPauses : 0) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    generation_.fetch_add(1, std::memory_order_release);  // ends the workers' spins
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Run(std::int64_t tasks, const std::function<void(std::int64_t)>& task) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {
    for (std::int64_t i = 0; i < tasks; ++i) task(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    task_ = &task;
    num_tasks_ = tasks;
    next_task_ = 0;
    unfinished_.store(tasks, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_ready_.notify_all();
  RunTasks();
  if (!SpinUntil(spin_pauses_, [this] { return unfinished_.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock<std::mutex> lock(mu_);
    work_done_.wait(lock, [this] { return unfinished_.load(std::memory_order_relaxed) == 0; });
  }
  std::lock_guard<std::mutex> lock(mu_);
  task_ = nullptr;
}

void ThreadPool::RunTasks() {
  std::unique_lock<std::mutex> lock(mu_);
  while (next_task_ < num_tasks_) {
    const std::int64_t index = next_task_++;
    const std::function<void(std::int64_t)>* task = task_;
    lock.unlock();
    (*task)(index);
    lock.lock();
    if (unfinished_.fetch_sub(1, std::memory_order_acq_rel) == 1) work_done_.notify_all();
  }
}

void ThreadPool::WorkerLoop() {
  std::uint64_t seen = 0;
  while (true) {
    SpinUntil(spin_pauses_, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_ready_.wait(lock, [&] { return stopping_ || generation_.load(std::memory_order_relaxed) != seen; });
      if (stopping_) return;
      seen = generation_.load(std::memory_order_relaxed);
    }
    RunTasks();
  }
}

}  // namespace polnode::kernels
