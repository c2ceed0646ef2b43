// Real models' dispute games through the ledger's real referee (issue 6, gap 1): a solver::Prove
// proof, real verdicts, and two verifier::DisputePlayers posting every move through the
// contracts Application until the referee runs the disputed operator. Each game must pinpoint
// exactly the tampered step and operator, be ruled by the referee, move the loser's lock to the
// honest party, settle the task as it deserves, and re-execute without differences in AuditGame.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <ostream>
#include <string>

#include "polnode/consensus/game_tree.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/pinpoint_graph.h"
#include "polnode/testing/tiny_task.h"
#include "polnode/verifier/pinpoint.h"
#include "real_match.h"

namespace polnode::dispute_testing {
namespace {

using contracts::testing::Raw;

enum class Model { kMlp, kCnn, kScheduledCnn };

struct Case {
  const char* name;
  Model model;
  Scenario scenario;
  const char* node;  // the operator whose output the cheat (or the lie) corrupts
  int output;        // ... which of its outputs
  std::int64_t step;
  bool restart_players;
};

// Steps at the start, inside and at the end of a segment (k = 5), the task's first step included.
const Case kCases[] = {
    {"MlpCheatInForwardOpRejectedThenDisputedBySolver", Model::kMlp, Scenario::kCheatingSolverDisputesReject,
     "fc2.matmul", 0, 13, false},
    {"MlpCheatInBackwardOpAcceptedByLazyVerifier", Model::kMlp, Scenario::kLazyVerifierAcceptedCheat,
     "fc2.bias_add.grad", 0, 22, false},
    {"MlpCheatInLossProbabilitiesAcceptedByLazyVerifier", Model::kMlp, Scenario::kLazyVerifierAcceptedCheat,
     "loss.softmax_xent", 1, 25, false},
    {"MlpHonestProofRejectedByLyingVerifier", Model::kMlp, Scenario::kLazyVerifierRejectedHonest, "fc1.w.sgd", 0, 0,
     false},
    {"CnnCheatInOptimizerUpdateRejectedThenDisputedBySolver", Model::kCnn,
     Scenario::kCheatingSolverDisputesReject, "fc2.w.adam", 0, 31, true},
    {"CnnCheatInConvBackwardAcceptedByLazyVerifier", Model::kCnn, Scenario::kLazyVerifierAcceptedCheat,
     "conv1.conv.grad_weight", 0, 4, false},
    {"CnnHonestProofRejectedByLyingVerifier", Model::kCnn, Scenario::kLazyVerifierRejectedHonest, "conv1.conv", 0, 38,
     false},
    // The referee runs the update with the scheduled lr of the disputed step (in warm-up and in
    // the decay), not the descriptor's peak: the honest party wins either way round.
    {"ScheduledCnnCheatInOptimizerUpdateDuringTheDecay", Model::kScheduledCnn,
     Scenario::kCheatingSolverDisputesReject, "fc2.w.adam", 0, 23, false},
    {"ScheduledCnnHonestUpdateInWarmUpRejectedByLyingVerifier", Model::kScheduledCnn,
     Scenario::kLazyVerifierRejectedHonest, "conv1.w.adam", 0, 2, false},
    // Gradient clipping's coefficient and one scaled gradient, ruled like any operator.
    {"ScheduledCnnCheatInTheClipCoefficient", Model::kScheduledCnn, Scenario::kCheatingSolverDisputesReject,
     "grad_norm.clip", 0, 12, false},
    {"ScheduledCnnCheatInAClippedGradientAcceptedByLazyVerifier", Model::kScheduledCnn,
     Scenario::kLazyVerifierAcceptedCheat, "fc2.w.grad.clipped", 0, 31, false},
};

// gtest names a parameter by its case name instead of dumping its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// The level-1 rounds a k-step segment takes to narrow down to its step `t` (the state after t
// steps agreed, after t + 1 disputed), following the ledger's bisection.
int StepRounds(std::uint64_t k, std::uint64_t t) {
  std::uint64_t lo = 0, hi = k;
  int rounds = 0;
  for (; hi - lo > 1; ++rounds) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    (t < mid ? hi : lo) = mid;
  }
  return rounds;
}

class RealDisputeGame : public ::testing::TestWithParam<Case> {};

TEST_P(RealDisputeGame, PinpointsTheTamperedOperator) {
  const Case& c = GetParam();
  const solver::ImageDataset data = solver::testing::TinyDataset();
  MatchOptions options;
  options.scenario = c.scenario;
  options.task = c.model == Model::kMlp ? MlpTask(data)
                 : c.model == Model::kCnn ? CnnTask(data)
                                          : ScheduledCnnTask(data);
  const solver::StepGraph graph = GraphOf(options.task, data);
  const int node = NodeIndex(graph, c.node);
  ASSERT_GE(node, 0);
  options.tamper = solver::TamperSpec{c.step, node, c.output, 22};
  options.restart_players = c.restart_players;

  RealMatch match(data, options);
  match.Setup();
  if (::testing::Test::HasFatalFailure()) return;
  contracts::testing::TaskFlow& flow = match.flow();
  const PubKey dishonest = match.dishonest();
  const PubKey honest = match.honest();
  // The solver defends in every scenario: the dishonest party is the cheating solver, or the lazy
  // verifier that rejected an honest proof.
  const proto::Role loser_role = match.proof_wrong() ? proto::ROLE_SOLVER : proto::ROLE_VERIFIER;
  const std::uint64_t loser_bonded = flow.chain.Stake(loser_role, dishonest).bonded();
  const std::uint64_t loser_lock = loser_role == proto::ROLE_SOLVER ? flow.chain.params().min_stake_solver()
                                                                    : flow.chain.params().min_stake_verifier();
  const std::uint64_t honest_balance = flow.chain.Balance(honest);
  // Pinpointed at the segment and step of the tamper and the tampered output of its operator,
  // ruled by the referee for the honest party.
  const proto::DisputeGame game = match.PlayToRuling(c.name, graph);
  if (::testing::Test::HasFatalFailure()) return;
  const proto::Task task = match.LedgerTask();
  const std::int64_t k = options.task.checkpoint_interval;
  // The leaf is the tampered operator's output, ruled tile by tile: the game descended the
  // output's block tree to the block holding the tampered element, and the referee's value is
  // that block as an honest replay of the step computes it.
  Result<solver::TrainState> start = match.proof().Loader()(game.segment());
  ASSERT_TRUE(start.ok()) << start.status().ToString();
  std::unique_ptr<kernels::Backend> reference = kernels::MakeReferenceBackend();
  Result<verifier::PinpointResponder> replay =
      verifier::PinpointResponder::Create(options.task, data, *reference, std::move(*start));
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  Result<verifier::StepLeaves> leaves = replay->LeavesOfStep(static_cast<std::int64_t>(game.lo()));
  ASSERT_TRUE(leaves.ok()) << leaves.status().ToString();
  Result<const consensus::TensorBlockTree*> blocks = replay->OutputBlocks(static_cast<std::int64_t>(game.lo()), game.leaf());
  ASSERT_TRUE(blocks.ok()) << blocks.status().ToString();
  EXPECT_EQ((*blocks)->tensor_hash(), leaves->leaves[game.leaf()]);
  EXPECT_EQ(game.tile(), (*blocks)->grid().BlockOf(0));
  EXPECT_EQ(game.output(), static_cast<std::uint32_t>(c.output));
  EXPECT_EQ(game.chain_hi(), game.chain_units()) << "the tiny models' tiles fit one ruling";
  const consensus::Hash256 truth = *(*blocks)->tree()->Node(0, game.tile());
  EXPECT_EQ(game.true_leaf(), std::string(truth.begin(), truth.end()));
  const proto::GameSide& honest_side = match.proof_wrong() ? game.challenger() : game.defender();
  const proto::GameSide& dishonest_side = match.proof_wrong() ? game.defender() : game.challenger();
  EXPECT_EQ(honest_side.hash(), std::string(leaves->leaves[game.leaf()].begin(), leaves->leaves[game.leaf()].end()));
  EXPECT_EQ(honest_side.chain_hi_hash(), game.true_leaf());
  EXPECT_NE(dishonest_side.chain_hi_hash(), game.true_leaf());
  // Moves: the opening, two per level-1, per level-2 round (graph, tiles: one at least) and
  // chain round (none here), and the deciding referee move.
  const int step_rounds = StepRounds(static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(c.step % k));
  const int graph_rounds = static_cast<int>(consensus::GameTreeDepth(solver::StepLeafCount(graph)));
  const int tile_rounds = std::max(1, static_cast<int>(game.tile_depth()));
  EXPECT_EQ(match.stats().tile_rounds, tile_rounds);
  EXPECT_EQ(match.stats().chain_rounds, 0);
  EXPECT_EQ(game.moves_size(), 1 + 2 * step_rounds + 2 * graph_rounds + 2 * tile_rounds + 1);
  EXPECT_EQ(game.moves(game.moves_size() - 1).signer(), Raw(dishonest))
      << "the dishonest party's own evidence convicts it";

  // The loser's lock went to the honest party; the task settled as it deserves.
  EXPECT_EQ(flow.chain.Stake(loser_role, dishonest).bonded(), loser_bonded - loser_lock);
  EXPECT_GT(flow.chain.Balance(honest), honest_balance);
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(task.outcome(), match.proof_wrong() ? proto::OUTCOME_REJECTED : proto::OUTCOME_ACCEPTED);
  EXPECT_EQ(task.standing(), match.proof_wrong() ? proto::PROOF_DISPROVEN : proto::PROOF_UPHELD);
  const proto::GameResult result = match.proof_wrong() ? proto::GAME_CHALLENGER_WON : proto::GAME_DEFENDER_WON;
  if (c.scenario == Scenario::kLazyVerifierAcceptedCheat) {
    EXPECT_EQ(task.challenges(0).game_result(), result);
    // The whistleblower's lock is released, and it earned the solver's lock as the only right
    // challenger, less a fee of 1 per move it posted.
    EXPECT_EQ(flow.chain.Stake(proto::ROLE_WHISTLEBLOWER, honest).locked(), 0u);
    EXPECT_GE(flow.chain.Balance(honest), honest_balance + loser_lock - static_cast<std::uint64_t>(match.stats().posted));
  } else {
    EXPECT_EQ(task.verifiers(0).game_result(), result);
  }

  // The auditor's re-execution of the recorded game agrees with the ledger and names the operator.
  match.ExpectAuditAgrees(c.node);
}

INSTANTIATE_TEST_SUITE_P(Games, RealDisputeGame, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace polnode::dispute_testing
