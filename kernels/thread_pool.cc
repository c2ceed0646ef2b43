#include "thread_pool.h"

namespace polnode::kernels {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
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
    unfinished_ = tasks;
    ++generation_;
  }
  work_ready_.notify_all();
  RunTasks();
  std::unique_lock<std::mutex> lock(mu_);
  work_done_.wait(lock, [this] { return unfinished_ == 0; });
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
    if (--unfinished_ == 0) work_done_.notify_all();
  }
}

void ThreadPool::WorkerLoop() {
  std::uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    RunTasks();
  }
}

}  // namespace polnode::kernels
