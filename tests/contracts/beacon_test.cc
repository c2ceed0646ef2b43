// Task naming, forced-error flags and segment draws.
#include "polnode/contracts/beacon.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "polnode/testing/chain_harness.h"

namespace polnode::contracts::testing {
namespace {

TEST(TaskSpecHash, EveryFieldChangesTheHash) {
  const proto::TaskSpec spec = TaskSubmission(100).spec();
  const Hash256 base = TaskSpecHash(spec);
  EXPECT_EQ(TaskSpecHash(spec), base);
  std::vector<proto::TaskSpec> variants(13, spec);
  variants[0].set_model_spec("other");
  variants[1].set_dataset_hash(Bytes32(1));
  variants[2].set_hyperparameters_hash(Bytes32(1));
  variants[3].set_total_steps(2000);
  variants[4].set_checkpoint_interval(50);
  variants[5].set_segments_per_verification(3);
  variants[6].set_payment(101);
  variants[7].set_claim_window(11);
  variants[8].set_training_window(21);
  variants[9].set_graph_root(Bytes32(1));
  variants[10].set_batch_root(Bytes32(1));
  variants[11].set_step_leaf_count(41);
  variants[12].set_state_tensor_count(9);
  for (const proto::TaskSpec& variant : variants) EXPECT_NE(TaskSpecHash(variant), base);
}

TEST(TaskIdFor, DependsOnSubmitterAndNonce) {
  const Hash256 spec = TaskSpecHash(TaskSubmission(100).spec());
  const Hash256 id = TaskIdFor(spec, Raw(Key(1)), 0);
  EXPECT_NE(TaskIdFor(spec, Raw(Key(2)), 0), id);
  EXPECT_NE(TaskIdFor(spec, Raw(Key(1)), 1), id);
}

TEST(IsForcedError, RateZeroNeverRateOneAlwaysOtherwiseAboutOneInN) {
  const std::string seed = Bytes32(9);
  const std::string task = Bytes32(8);
  int forced = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::string secret = Bytes32(static_cast<std::uint8_t>(i)) + std::to_string(i);
    EXPECT_FALSE(IsForcedError(secret, seed, task, 0));
    EXPECT_TRUE(IsForcedError(secret, seed, task, 1));
    if (IsForcedError(secret, seed, task, 4)) ++forced;
  }
  // Binomial(4000, 1/4): mean 1000, sd ~27; the bounds are > 7 sd away.
  EXPECT_GT(forced, 800);
  EXPECT_LT(forced, 1200);
}

TEST(IsForcedError, DependsOnTheSeedSoTheSolverCannotPrecompute) {
  int differ = 0;
  for (int i = 0; i < 64; ++i) {
    const std::string secret = Bytes32(static_cast<std::uint8_t>(i));
    if (IsForcedError(secret, Bytes32(1), Bytes32(2), 2) != IsForcedError(secret, Bytes32(3), Bytes32(2), 2)) ++differ;
  }
  EXPECT_GT(differ, 10);
}

TEST(DrawSegments, DistinctSortedInRangeAndDeterministic) {
  const std::string beacon = Bytes32(0x42);
  const std::vector<std::uint64_t> a = DrawSegments(beacon, 1, 10, 4);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::set<std::uint64_t>(a.begin(), a.end()).size(), 4u);
  for (std::uint64_t index : a) EXPECT_LT(index, 10u);
  EXPECT_EQ(DrawSegments(beacon, 1, 10, 4), a);
  EXPECT_EQ(DrawSegments(beacon, 1, 5, 5), (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(DrawSegments(beacon, 1, 3, 4).empty());
  EXPECT_TRUE(DrawSegments(beacon, 1, 3, 0).empty());
}

// Segments are drawn per slot, so two slots one key was drawn for check different segments.
TEST(DrawSegments, SlotsCheckDifferentSegmentsAndCoverageIsUniform) {
  std::vector<int> hits(10, 0);
  int identical = 0;
  for (std::uint32_t slot = 0; slot < 500; ++slot) {
    const auto mine = DrawSegments(Bytes32(7), slot, 10, 1);
    const auto next = DrawSegments(Bytes32(7), slot + 1000, 10, 1);
    ASSERT_EQ(mine.size(), 1u);
    ++hits[mine[0]];
    if (mine == next) ++identical;
  }
  for (int h : hits) EXPECT_GT(h, 20);  // mean 50
  EXPECT_LT(identical, 100);            // ~1 in 10 by chance
  // Another beacon, another draw for the same slot.
  int same_slot_same_draw = 0;
  for (std::uint32_t slot = 0; slot < 100; ++slot) {
    same_slot_same_draw += DrawSegments(Bytes32(7), slot, 10, 3) == DrawSegments(Bytes32(8), slot, 10, 3) ? 1 : 0;
  }
  EXPECT_LT(same_slot_same_draw, 10);  // 1 in 120 by chance
}

}  // namespace
}  // namespace polnode::contracts::testing
