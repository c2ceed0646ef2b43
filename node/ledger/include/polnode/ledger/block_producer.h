// BlockProducer: the thread that makes one block per interval in `polnode ledger`.
#ifndef POLNODE_LEDGER_BLOCK_PRODUCER_H_
#define POLNODE_LEDGER_BLOCK_PRODUCER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

#include "polnode/base/clock.h"
#include "polnode/ledger/ledger.h"

namespace polnode::node {

/// Told about every production attempt (a block, or why there is none this time).
using BlockObserver = std::function<void(const Result<ProducedBlock>&)>;

class BlockProducer {
 public:
  /// `ledger` and `clock` must outlive the producer. Blocks are made on `clock`'s time and stamped
  /// with its calendar time (SystemClock() in `polnode ledger`; a ManualClock makes a test decide
  /// when each block is due). Nothing runs until Start.
  BlockProducer(Ledger& ledger, Clock& clock, std::chrono::milliseconds interval, BlockObserver observer);
  ~BlockProducer();  // Stop()
  BlockProducer(const BlockProducer&) = delete;
  BlockProducer& operator=(const BlockProducer&) = delete;

  /// Starts the thread: a block at every multiple of the interval after Start. When a block takes
  /// longer than the interval the next one starts at once (ticks are not made up for).
  void Start();

  /// Stops after the block in progress, if any, and joins the thread. Idempotent.
  void Stop();

 private:
  void Loop();

  Ledger& ledger_;
  Clock& clock_;
  const std::chrono::milliseconds interval_;
  BlockObserver observer_;
  std::mutex mu_;                  // Start and Stop
  std::atomic<bool> stop_{false};  // read by the clock's wait (Clock::WaitUntil)
  std::thread thread_;
};

}  // namespace polnode::node

#endif  // POLNODE_LEDGER_BLOCK_PRODUCER_H_
