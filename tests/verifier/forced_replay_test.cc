// Tolerant replays judged element by element (ReplayFromStates with an element limit): a forced
// round's perturbation of checkpoint k (consensus/forced_perturbation.h: a few elements of the first
// tensor moved by +-D) makes the segment ending at k fail, and the evidence names exactly the
// perturbed elements, which the verdict commits to; a change below D / 2 that the thresholds admit
// passes and names nothing. Exact mode judges by the hash and ignores the limit.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "pol_fixture.h"
#include "polnode/consensus/forced_perturbation.h"

namespace polnode::verifier {
namespace {

constexpr float kDelta = 0x1p-10f;  // forced_delta D
constexpr double kLimit = static_cast<double>(kDelta) / 2.0;

solver::TaskSpec TolerantTinyTask(const solver::ImageDataset& data) {
  solver::TaskSpec task = solver::testing::TinyTask(data);
  task.mode = solver::ReproMode::kTolerant;
  return task;
}

class ForcedReplayTest : public ::testing::Test {
 protected:
  ForcedReplayTest() : data_(solver::testing::TinyDataset()), task_(TolerantTinyTask(data_)) {}

  // The perturbation forced checkpoint `k` of a round with this secret draws on the tiny task's
  // first tensor.
  consensus::Perturbation Drawn(const solver::TrainState& state, std::uint64_t k) const {
    const std::vector<std::int64_t>& dims = state.tensors[0].tensor.shape();
    return consensus::DrawPerturbation(std::string(32, '\x41'), std::string(32, '\x42'), std::string(32, '\x43'), k, dims);
  }

  // `state` with `perturbation`'s elements moved by sign * delta (consensus::PerturbedValue).
  static solver::TrainState Perturbed(solver::TrainState state, const consensus::Perturbation& perturbation, float delta) {
    float* values = state.tensors[0].tensor.data();
    for (const consensus::PerturbedElement& e : perturbation.elements) {
      const float honest = values[e.flat];
      values[e.flat] = consensus::PerturbedValue(honest, e.sign, delta);
      EXPECT_NE(values[e.flat], honest) << "element " << e.flat;
    }
    return state;
  }

  // Replays segment 3 of the honest chain against `end` in place of checkpoint 4.
  Result<SegmentEvidence> ReplayAgainst(const solver::TrainState& end, const Thresholds& thresholds,
                                        std::optional<double> limit) {
    Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task_, data_);
    EXPECT_TRUE(stepper.ok()) << stepper.status().ToString();
    auto backend = kernels::MakeBackend("cpu", 1);
    EXPECT_TRUE(backend.ok());
    return ReplayFromStates(*stepper, **backend, 3, chain_.checkpoints[3], end, {}, thresholds, limit);
  }

  solver::ImageDataset data_;
  solver::TaskSpec task_;
  testing::Chain chain_ = testing::HonestChain(task_, data_);
};

TEST_F(ForcedReplayTest, TheSegmentEndingAtAPerturbedCheckpointFailsNamingExactlyThePerturbedElements) {
  const consensus::Perturbation p = Drawn(chain_.checkpoints[4], 4);
  ASSERT_EQ(p.elements.size(), consensus::kPerturbedElements);
  const solver::TrainState committed = Perturbed(chain_.checkpoints[4], p, kDelta);
  const std::vector<std::uint64_t> perturbed = consensus::PerturbedIndices(p);

  // Thresholds of 0 (every backend here replays bit for bit alike): the distances fail it too.
  Result<SegmentEvidence> e = ReplayAgainst(committed, Thresholds{}, kLimit);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(e->available);
  EXPECT_FALSE(e->ok);
  EXPECT_EQ(e->beyond_limit, perturbed);
  EXPECT_EQ(consensus::PerturbedIndicesHash(e->beyond_limit), consensus::PerturbedIndicesHash(perturbed));

  // Thresholds loose enough to admit the perturbation's distances: the elements still fail it.
  const Thresholds loose{1.0, 1.0, 1.0, 1.0, 1.0};
  e = ReplayAgainst(committed, loose, kLimit);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_FALSE(e->ok);
  EXPECT_EQ(e->beyond_limit, perturbed);
  EXPECT_NE(e->reason.find("4 elements of the replayed state differ from checkpoint 4"), std::string::npos) << e->reason;
  EXPECT_NE(e->reason.find("flat index " + std::to_string(perturbed.front())), std::string::npos) << e->reason;
  // Without the limit those thresholds pass it: the limit is what sees a forced round.
  e = ReplayAgainst(committed, loose, std::nullopt);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->ok) << e->reason;
  EXPECT_TRUE(e->beyond_limit.empty());
}

TEST_F(ForcedReplayTest, AChangeBelowHalfTheDeltaThatTheThresholdsAdmitPassesAndNamesNothing) {
  const consensus::Perturbation p = Drawn(chain_.checkpoints[4], 4);
  const solver::TrainState nudged = Perturbed(chain_.checkpoints[4], p, kDelta / 4);
  // A profile whose linf threshold admits D / 4 (and is below D / 2, as a checker of forced rounds
  // requires).
  const Thresholds profiled{1.0, 1.0, static_cast<double>(kDelta) * 0.375, 1.0, 1.0};
  Result<SegmentEvidence> e = ReplayAgainst(nudged, profiled, kLimit);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(e->ok) << e->reason;
  EXPECT_TRUE(e->beyond_limit.empty());
  EXPECT_GT(e->distances.linf, 0.0);

  // The honest checkpoint passes with nothing named, under thresholds of 0.
  e = ReplayAgainst(chain_.checkpoints[4], Thresholds{}, kLimit);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(e->ok) << e->reason;
  EXPECT_TRUE(e->beyond_limit.empty());
}

TEST_F(ForcedReplayTest, ANanInTheClaimedEndIsNamedAndFails) {
  solver::TrainState claimed = chain_.checkpoints[4];
  const std::size_t last = claimed.tensors.size() - 1;
  claimed.tensors[last].tensor.data()[1] = std::numeric_limits<float>::quiet_NaN();
  std::uint64_t flat = 1;
  for (std::size_t t = 0; t < last; ++t) flat += static_cast<std::uint64_t>(claimed.tensors[t].tensor.numel());
  const Thresholds loose{1.0, 1.0, 1.0, 1.0, 1.0};
  Result<SegmentEvidence> e = ReplayAgainst(claimed, loose, kLimit);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_FALSE(e->ok);
  EXPECT_EQ(e->beyond_limit, std::vector<std::uint64_t>{flat});
}

TEST_F(ForcedReplayTest, ExactModeIgnoresTheLimitAndABadLimitIsAnError) {
  const consensus::Perturbation p = Drawn(chain_.checkpoints[4], 4);
  const solver::TrainState committed = Perturbed(chain_.checkpoints[4], p, kDelta);
  Result<SegmentEvidence> e = ReplayAgainst(committed, Thresholds{}, -1.0);
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  e = ReplayAgainst(committed, Thresholds{}, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);

  task_.mode = solver::ReproMode::kExact;
  e = ReplayAgainst(committed, Thresholds{}, kLimit);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_FALSE(e->ok);
  EXPECT_TRUE(e->beyond_limit.empty());
  EXPECT_EQ(e->reason, "replayed state hash differs from checkpoint 4");
}

}  // namespace
}  // namespace polnode::verifier
