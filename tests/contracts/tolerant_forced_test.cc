// Tolerant-mode forced rounds (protocol v7, econ/README.md item 1): each checkpoint is forced with
// probability 1/2 as in exact mode; the solver commits the honest state with kPerturbedElements
// elements of its first tensor moved by +-forced_delta, a reject commits to the indices its replay
// found beyond forced_delta / 2, and the reveal proves the perturbation block by block
// (contracts/perturbation.h). TaskFlow commits real states for tolerant specs, so every hash and
// block below is the real thing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "forced_flow.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/forced.h"
#include "polnode/contracts/payloads.h"
#include "polnode/contracts/perturbation.h"
#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {
namespace {

using Segments = std::vector<std::uint64_t>;

constexpr float kDelta = 0x1p-10f;

// Whether some covered segment of slot `slot` ends at a forced checkpoint before the final one.
bool CoversAMiddleForcedEnd(const TaskFlow& f, std::uint32_t slot) {
  const Segments ends = f.ForcedEnds(f.SlotCovered(slot));
  return std::any_of(ends.begin(), ends.end(), [&](std::uint64_t s) { return s != f.FinalSegment(); });
}

std::unique_ptr<TaskFlow> TolerantFlow(const std::function<bool(const TaskFlow&)>& want,
                                       const std::function<void(TaskFlow&)>& prepare = nullptr) {
  return ForcedFlow(want, ForcedParams(), /*tolerant=*/true, prepare);
}

TEST(TolerantForced, MiddleCheckpointsAreForcedAndDiligentRejectsCatchThem) {
  auto flow = TolerantFlow([](const TaskFlow& f) { return CoversAMiddleForcedEnd(f, 0) && CoversAMiddleForcedEnd(f, 1); });
  ASSERT_TRUE(flow);
  ASSERT_EQ(flow->DiligentVerdict(0).code, StatusCode::kOk);
  ASSERT_EQ(flow->DiligentVerdict(1).code, StatusCode::kOk);
  EXPECT_EQ(flow->task().verifiers(0).segment_digests_size(), flow->task().verifiers(0).failed_segments_size());
  flow->AdvancePastDeadline();
  const std::uint64_t jackpot = flow->chain.Jackpot();
  ASSERT_EQ(flow->RevealForced().code, StatusCode::kOk);
  const proto::Task task = flow->task();
  ASSERT_GE(task.forced_checkpoints_size(), 1);
  EXPECT_EQ(task.perturbed_index_hashes_size(), task.forced_checkpoints_size());
  EXPECT_LT(task.forced_checkpoints(0), flow->Segments());  // a middle checkpoint is forced
  EXPECT_TRUE(task.verifiers(0).vouched());
  EXPECT_TRUE(task.verifiers(1).vouched());
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_ERROR);
  EXPECT_LT(flow->chain.Jackpot(), jackpot);  // the catchers were paid from the pool
}

// The deviation tolerant mode used to reward (+5,822 per task at P = 10^6): replaying the final
// segment only. A drawn segment ending at a forced checkpoint is missed, so the verdict is wrong
// and the lock goes to the jackpot.
TEST(TolerantForced, AVerifierThatReplaysOnlyTheFinalSegmentIsWrong) {
  auto flow = TolerantFlow([](const TaskFlow& f) { return CoversAMiddleForcedEnd(f, 0); });
  ASSERT_TRUE(flow);
  const Segments final_only = flow->ForcedEnds({flow->FinalSegment()});
  const PubKey lazy = flow->KeyOfSlot(0);
  const std::uint64_t bonded = flow->chain.Stake(proto::ROLE_VERIFIER, lazy).bonded();
  ASSERT_EQ(flow->SlotVerdict(0, final_only.empty() ? proto::VERDICT_ACCEPT : proto::VERDICT_REJECT, final_only).code,
            StatusCode::kOk);
  ASSERT_EQ(flow->DiligentVerdict(1).code, StatusCode::kOk);
  flow->AdvancePastDeadline();
  ASSERT_EQ(flow->RevealForced().code, StatusCode::kOk);
  flow->chain.AdvanceTo(flow->chain.height() + 100);  // any game the wrong reject plays ends
  const proto::Task task = flow->task();
  EXPECT_FALSE(task.verifiers(0).vouched());
  EXPECT_TRUE(task.verifiers(1).vouched());
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
  EXPECT_LT(flow->chain.Stake(proto::ROLE_VERIFIER, lazy).bonded(), bonded);  // its lock is gone
}

// Condition (c) of the rule: a solver (with a whistleblower that knows its secret) perturbing below
// the verifiers' tolerance would make honest accepts count as wrong. Its reveal is refused, so it
// cannot settle the round except by not revealing, which slashes it; the accepts are released.
TEST(TolerantForced, ASolverCannotRevealAPerturbationBelowTheTolerance) {
  auto flow = TolerantFlow([](const TaskFlow& f) { return CoversAMiddleForcedEnd(f, 0); },
                           [](TaskFlow& f) { f.committed_delta = kDelta / 4; });
  ASSERT_TRUE(flow);
  // Honest replays see nothing beyond forced_delta / 2: they accept.
  ASSERT_EQ(flow->SlotVerdict(0, proto::VERDICT_ACCEPT).code, StatusCode::kOk);
  ASSERT_EQ(flow->SlotVerdict(1, proto::VERDICT_ACCEPT).code, StatusCode::kOk);
  flow->AdvancePastDeadline();
  const TxResult reveal = flow->RevealForced();
  EXPECT_EQ(reveal.code, StatusCode::kInvalidArgument);
  EXPECT_NE(reveal.log.find("forced_delta"), std::string::npos) << reveal.log;
  EXPECT_EQ(flow->task().status(), proto::TASK_REVEALING);
  const PubKey v0 = flow->KeyOfSlot(0);
  const std::uint64_t v0_bonded = flow->chain.Stake(proto::ROLE_VERIFIER, v0).bonded();
  const std::uint64_t solver_bonded = flow->chain.Stake(proto::ROLE_SOLVER, flow->solver).bonded();
  flow->AdvancePastDeadline();
  const proto::Task task = flow->task();
  EXPECT_EQ(task.outcome(), proto::OUTCOME_NO_REVEAL);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_VERIFIER, v0).bonded(), v0_bonded);
  EXPECT_EQ(flow->chain.Stake(proto::ROLE_VERIFIER, v0).locked(), 0u);
  EXPECT_LT(flow->chain.Stake(proto::ROLE_SOLVER, flow->solver).bonded(), solver_bonded);
}

void FlipBits(std::string& block, std::size_t element) {
  ASSERT_LT(element * sizeof(float) + 3, block.size());
  block[element * sizeof(float)] ^= 0x01;
}

// Every part of a perturbation proof is checked: a reveal that shows any other change than the
// drawn perturbation, or proves it against anything but the two checkpoint hashes, is refused and
// changes nothing; the true reveal then passes.
TEST(TolerantForced, TheRevealMustProveExactlyThePerturbation) {
  proto::Params params = ForcedParams();
  params.set_reveal_window(30);  // room for every forged reveal (one block each) before the honest one
  auto flow = ForcedFlow([](const TaskFlow& f) { return CoversAMiddleForcedEnd(f, 0); }, params, /*tolerant=*/true);
  ASSERT_TRUE(flow);
  ASSERT_EQ(flow->DiligentVerdict(0).code, StatusCode::kOk);
  ASSERT_EQ(flow->DiligentVerdict(1).code, StatusCode::kOk);
  flow->AdvancePastDeadline();
  const proto::RevealTx honest = flow->ForcedReveal();
  ASSERT_GE(honest.perturbations_size(), 1);
  const proto::Task before = flow->task();
  const proto::PerturbationProof& first = honest.perturbations(0);
  // Which offsets of the block are drawn: where the committed and honest blocks differ.
  std::vector<std::size_t> drawn;
  for (std::size_t j = 0; j * sizeof(float) < first.committed_block().size(); ++j) {
    if (std::memcmp(first.committed_block().data() + j * 4, first.honest_block().data() + j * 4, 4) != 0) drawn.push_back(j);
  }
  ASSERT_EQ(drawn.size(), 4u);
  std::size_t undrawn = 0;
  while (std::find(drawn.begin(), drawn.end(), undrawn) != drawn.end()) ++undrawn;

  std::vector<std::pair<std::string, std::function<void(proto::RevealTx&)>>> forgeries = {
      {"no perturbation proofs", [](proto::RevealTx& m) { m.clear_perturbations(); }},
      {"one element more changed", [&](proto::RevealTx& m) { FlipBits(*m.mutable_perturbations(0)->mutable_committed_block(), undrawn); }},
      {"a drawn element moved by another amount", [&](proto::RevealTx& m) { FlipBits(*m.mutable_perturbations(0)->mutable_committed_block(), drawn[0]); }},
      {"an honest value that is not the result proof's", [&](proto::RevealTx& m) {
         FlipBits(*m.mutable_perturbations(0)->mutable_honest_block(), undrawn);
         FlipBits(*m.mutable_perturbations(0)->mutable_committed_block(), undrawn);
       }},
      {"the blocks swapped", [](proto::RevealTx& m) {
         proto::PerturbationProof* p = m.mutable_perturbations(0);
         std::string c = p->committed_block();
         p->set_committed_block(p->honest_block());
         p->set_honest_block(c);
       }},
      {"a short block", [](proto::RevealTx& m) { m.mutable_perturbations(0)->mutable_committed_block()->pop_back(); }},
      {"a sibling changed", [](proto::RevealTx& m) { (*m.mutable_perturbations(0)->mutable_block_siblings(0))[0] ^= 1; }},
      {"a sibling missing", [](proto::RevealTx& m) { m.mutable_perturbations(0)->mutable_block_siblings()->RemoveLast(); }},
      {"another tensor's hash", [](proto::RevealTx& m) { (*m.mutable_perturbations(0)->mutable_tensor_hashes(0))[5] ^= 1; }},
      {"a name missing", [](proto::RevealTx& m) { m.mutable_perturbations(0)->mutable_names()->RemoveLast(); }},
      {"other dims", [](proto::RevealTx& m) { m.mutable_perturbations(0)->set_dims(0, 50); }},
      {"another checkpoint", [](proto::RevealTx& m) { m.mutable_perturbations(0)->set_checkpoint(m.perturbations(0).checkpoint() + 1); }},
  };
  for (const auto& [what, forge] : forgeries) {
    SCOPED_TRACE(what);
    proto::RevealTx forged = honest;
    forge(forged);
    EXPECT_EQ(flow->chain.Run(flow->solver, payload::kReveal, forged).code, StatusCode::kInvalidArgument);
    EXPECT_EQ(flow->task().status(), proto::TASK_REVEALING);
    EXPECT_EQ(flow->task().perturbed_index_hashes_size(), 0);
  }
  EXPECT_EQ(flow->task().verifiers(0).SerializeAsString(), before.verifiers(0).SerializeAsString());
  ASSERT_EQ(flow->chain.Run(flow->solver, payload::kReveal, honest).code, StatusCode::kOk);
  EXPECT_TRUE(flow->task().verifiers(0).vouched());
}

TEST(TolerantForced, ATaskSpecCarriesAForcedDeltaExactlyWhenItIsTolerant) {
  TaskFlow flow;
  const auto submit = [&](bool tolerant, float delta) {
    proto::SubmitTaskTx msg = TaskSubmission(10'000);
    msg.mutable_spec()->set_tolerant(tolerant);
    msg.mutable_spec()->set_forced_delta(delta);
    return flow.chain.Run(flow.submitter, payload::kSubmitTask, msg).code;
  };
  EXPECT_EQ(submit(true, 0.0f), StatusCode::kInvalidArgument);
  EXPECT_EQ(submit(true, -kDelta), StatusCode::kInvalidArgument);
  EXPECT_EQ(submit(true, std::numeric_limits<float>::infinity()), StatusCode::kInvalidArgument);
  EXPECT_EQ(submit(true, std::numeric_limits<float>::quiet_NaN()), StatusCode::kInvalidArgument);
  EXPECT_EQ(submit(false, kDelta), StatusCode::kInvalidArgument);
  EXPECT_EQ(submit(true, kDelta), StatusCode::kOk);
  EXPECT_EQ(submit(false, 0.0f), StatusCode::kOk);
}

TEST(TolerantForced, TheSpecHashCoversTheForcedDeltaOfTolerantTasksOnly) {
  proto::TaskSpec exact = TaskSubmission(10'000).spec();
  const Hash256 exact_hash = TaskSpecHash(exact);
  proto::TaskSpec tolerant = exact;
  tolerant.set_tolerant(true);
  tolerant.set_forced_delta(kDelta);
  proto::TaskSpec other = tolerant;
  other.set_forced_delta(2 * kDelta);
  EXPECT_NE(TaskSpecHash(tolerant), TaskSpecHash(other));
  EXPECT_NE(TaskSpecHash(tolerant), exact_hash);
  // Golden: an exact spec hashes as it did before forced_delta existed (protocol v6).
  EXPECT_EQ(consensus::ToHex(exact_hash), "289ed345c7368c0874965dc25be3442d4a0d88c611fc4f8a444079c835bb100d");
}

// The one builder every revealer uses (solver role, econ, test flows, fuzz fixture): it refuses
// states that differ outside the drawn block, whose reveal no single block path could prove, and
// sizes that do not match the dims.
TEST(BuildPerturbationProofTest, RefusesStatesThatDifferOutsideTheDrawnBlock) {
  const std::vector<std::int64_t> dims = {70, 130};  // 2 x 3 blocks of 64 x 64, the edges smaller
  std::vector<float> honest(70 * 130);
  for (std::size_t i = 0; i < honest.size(); ++i) honest[i] = static_cast<float>(i % 97) / 97.0f;
  std::vector<float> committed = honest;
  committed[5] += 0x1p-10f;  // block 0
  const std::vector<std::string> names = {"w"};
  Result<proto::PerturbationProof> in_block = BuildPerturbationProof(2, names, dims, committed, honest, {}, 0);
  ASSERT_TRUE(in_block.ok()) << in_block.status().ToString();
  EXPECT_EQ(in_block->checkpoint(), 2u);
  EXPECT_EQ(in_block->committed_block().size(), 64u * 64u * sizeof(float));
  EXPECT_NE(in_block->committed_block(), in_block->honest_block());

  const Result<proto::PerturbationProof> outside = BuildPerturbationProof(2, names, dims, committed, honest, {}, 1);
  EXPECT_EQ(outside.status().code(), StatusCode::kInvalidArgument);
  const std::vector<float> short_values(honest.begin(), honest.end() - 1);
  EXPECT_EQ(BuildPerturbationProof(2, names, dims, short_values, short_values, {}, 0).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildPerturbationProof(2, names, dims, committed, honest, {}, 6).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace polnode::contracts::testing
