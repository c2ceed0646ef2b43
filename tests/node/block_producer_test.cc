// BlockProducer on a ManualClock: a block is due one interval of the clock after the last, stamped
// with the clock's calendar time, and nothing is made while the clock stands still, however long
// the test takes.
#include "polnode/ledger/block_producer.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include "polnode/base/clock.h"
#include "polnode/testing/ledger_fixtures.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kStart = 1'800'000'000'000;

class BlockProducerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<Ledger>> opened = testing::OpenTestLedger(
        dir_.File("data"), testing::TestGenesis("producer-chain", testing::KeyFromByte(1), 1'000));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    ledger_ = std::move(*opened);
  }

  // Told about each block: its height and the tip's time.
  void Observe(const Result<ProducedBlock>& produced) {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_TRUE(produced.ok()) << produced.status().ToString();
    if (produced.ok()) made_.push_back({produced->height, ledger_->GetStatus().tip_time_unix_ms});
    changed_.notify_all();
  }

  // Waits (real time, unbounded: the producer's thread only has to get there) for `count` blocks,
  // then for the producer to sleep on the clock again; returns (height, time) of each.
  std::vector<std::pair<std::uint64_t, std::int64_t>> AwaitBlocks(std::size_t count) {
    std::vector<std::pair<std::uint64_t, std::int64_t>> made;
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [&] { return made_.size() >= count; });
      made = made_;
    }
    clock_.AwaitWaiters(1);
    return made;
  }

  testing::TempDir dir_;
  std::unique_ptr<Ledger> ledger_;
  ManualClock clock_{kStart};
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::pair<std::uint64_t, std::int64_t>> made_;
};

TEST_F(BlockProducerTest, MakesABlockEachIntervalOfItsClockAndNoneWhileItStandsStill) {
  BlockProducer producer(*ledger_, clock_, 100ms, [this](const Result<ProducedBlock>& b) { Observe(b); });
  producer.Start();
  clock_.AwaitWaiters(1);
  clock_.Advance(99ms);
  clock_.AwaitWaiters(1);
  EXPECT_EQ(ledger_->GetStatus().height, 0u) << "a block before its interval had passed";
  clock_.Advance(1ms);
  auto made = AwaitBlocks(1);
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(made[0], std::make_pair(std::uint64_t{1}, kStart + 100));

  // Late by 150 ms (a slow block, a stalled process): the missed tick is made at once, not made up
  // for twice, and the next is due an interval after that.
  clock_.Advance(250ms);
  made = AwaitBlocks(3);
  ASSERT_EQ(made.size(), 3u);
  EXPECT_EQ(made[1], std::make_pair(std::uint64_t{2}, kStart + 350));
  EXPECT_EQ(made[2], std::make_pair(std::uint64_t{3}, kStart + 350));
  clock_.Advance(99ms);
  clock_.AwaitWaiters(1);
  EXPECT_EQ(ledger_->GetStatus().height, 3u);
  clock_.Advance(1ms);
  made = AwaitBlocks(4);
  EXPECT_EQ(made[3], std::make_pair(std::uint64_t{4}, kStart + 450));

  // Stop wakes the sleeping producer at once: the clock need not move.
  producer.Stop();
  EXPECT_EQ(clock_.waiters(), 0u);
  EXPECT_EQ(ledger_->GetStatus().height, 4u);
}

}  // namespace
}  // namespace polnode::node
