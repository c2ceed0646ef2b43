#include "polnode/ledger/block_producer.h"

namespace polnode::node {

BlockProducer::BlockProducer(Ledger& ledger, std::chrono::milliseconds interval, BlockObserver observer)
    : ledger_(ledger), interval_(interval), observer_(std::move(observer)) {}

BlockProducer::~BlockProducer() { Stop(); }

void BlockProducer::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void BlockProducer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BlockProducer::Loop() {
  auto next = std::chrono::steady_clock::now() + interval_;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (wake_.wait_until(lock, next, [this] { return stop_; })) return;
    }
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    Result<ProducedBlock> produced = ledger_.ProduceBlock(now_ms);
    if (observer_) observer_(produced);
    next += interval_;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;
  }
}

}  // namespace polnode::node
