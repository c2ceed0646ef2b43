#include "polnode/ledger/block_producer.h"

namespace polnode::node {

BlockProducer::BlockProducer(Ledger& ledger, Clock& clock, std::chrono::milliseconds interval, BlockObserver observer)
    : ledger_(ledger), clock_(clock), interval_(interval), observer_(std::move(observer)) {}

BlockProducer::~BlockProducer() { Stop(); }

void BlockProducer::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void BlockProducer::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  clock_.Notify();
  if (thread_.joinable()) thread_.join();
}

void BlockProducer::Loop() {
  Clock::TimePoint next = clock_.Now() + interval_;
  while (true) {
    if (clock_.WaitUntil(next, [this] { return stop_.load(); })) return;
    Result<ProducedBlock> produced = ledger_.ProduceBlock(clock_.UnixMillis());
    if (observer_) observer_(produced);
    next += interval_;
    const Clock::TimePoint now = clock_.Now();
    if (next < now) next = now;
  }
}

}  // namespace polnode::node
