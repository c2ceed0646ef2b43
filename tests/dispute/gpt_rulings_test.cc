// GPT disputes ruled on every operator kind of the GPT step graph (issue 12, item 5): the tiny GPT
// task is proven by a cheating solver (or an honest one a lying verifier rejects), and two
// verifier::DisputePlayers post every move through the contracts Application. Each game must be
// pinpointed to the tampered step and operator output (attention's products, the causal softmax
// and its gradient, LayerNorm and its gradient, GELU, the embedding gather and its scatter-add
// gradient), be ruled by the real referee against the dishonest party, settle the task, and
// re-execute without differences in the auditor (`polnode dispute replay`). Bad moves (a token id
// the agreed batch does not hold, a softmax scale the task's graph does not commit to) are refused
// by the ledger with their reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>

#include "polnode/kernels/backend.h"
#include "polnode/solver/pinpoint_graph.h"
#include "polnode/testing/tiny_gpt.h"
#include "polnode/verifier/pinpoint.h"
#include "real_match.h"

namespace polnode::dispute_testing {
namespace {

using contracts::testing::Raw;

struct GptCase {
  const char* name;
  Scenario scenario;
  const char* node;  // the operator whose output the cheat (or the lie) corrupts
  int output;
  std::int64_t step;
  std::int64_t element = 9;
};

// Element 9 of every output: row 1, column 1 of the first head's 8 x 8 attention matrices (a
// position the causal mask keeps), and an element of the first row elsewhere; in the embedding
// gradient dW[V, 16], element 25: the row of the space (id 1 after '\n'), which every batch
// holds, so the corrupted gradient moves the weights (row 0's may be a zero the bit flip leaves
// too small to move them). Steps lie in different segments (k = 6), the task's first step included.
const GptCase kCases[] = {
    {"AttentionScoresCheatRejectedThenDisputedBySolver", Scenario::kCheatingSolverDisputesReject, "h0.attn.scores", 0,
     13},
    {"AttentionMixCheatAcceptedByLazyVerifier", Scenario::kLazyVerifierAcceptedCheat, "h0.attn.mix", 0, 20},
    {"CausalSoftmaxCheatRejectedThenDisputedBySolver", Scenario::kCheatingSolverDisputesReject, "h0.attn.softmax", 0,
     7},
    {"CausalSoftmaxGradCheatAcceptedByLazyVerifier", Scenario::kLazyVerifierAcceptedCheat, "h0.attn.softmax.grad", 0,
     16},
    {"LayerNormCheatRejectedThenDisputedBySolver", Scenario::kCheatingSolverDisputesReject, "h0.ln1", 0, 9},
    {"LayerNormGradGainCheatAcceptedByLazyVerifier", Scenario::kLazyVerifierAcceptedCheat, "h0.ln2.grad", 1, 3},
    {"GeluCheatAcceptedByLazyVerifier", Scenario::kLazyVerifierAcceptedCheat, "h0.mlp.gelu", 0, 22},
    {"EmbeddingGatherCheatRejectedThenDisputedBySolver", Scenario::kCheatingSolverDisputesReject, "wte.embedding", 0,
     0},
    {"EmbeddingGradScatterAddCheatAcceptedByLazyVerifier", Scenario::kLazyVerifierAcceptedCheat, "wte.embedding.grad",
     0, 11, 25},
    {"EmbeddingGradHonestProofRejectedByLyingVerifier", Scenario::kLazyVerifierRejectedHonest, "wte.embedding.grad", 0,
     5, 25},
};

void PrintTo(const GptCase& c, std::ostream* os) { *os << c.name; }

MatchOptions OptionsFor(const solver::ImageDataset& data, Scenario scenario, const char* node, int output,
                        std::int64_t step, std::int64_t element = 9) {
  MatchOptions options;
  options.scenario = scenario;
  options.task = solver::testing::TinyGptTask(data);
  const solver::StepGraph graph = GraphOf(options.task, data);
  options.tamper = solver::TamperSpec{step, NodeIndex(graph, node), output, 22, element};
  options.backend = "cpu";
  return options;
}

// The honest replay of the game's disputed step, from the proof's checkpoint at its segment.
std::unique_ptr<verifier::PinpointResponder> HonestReplay(RealMatch& match, const solver::TaskSpec& task,
                                                          const solver::ImageDataset& data,
                                                          kernels::Backend& backend) {
  const proto::DisputeGame game = match.Game();
  Result<solver::TrainState> start = match.proof().Loader()(game.segment());
  EXPECT_TRUE(start.ok()) << start.status().ToString();
  if (!start.ok()) return nullptr;
  Result<verifier::PinpointResponder> replay =
      verifier::PinpointResponder::Create(task, data, backend, std::move(*start));
  EXPECT_TRUE(replay.ok()) << replay.status().ToString();
  if (!replay.ok()) return nullptr;
  return std::make_unique<verifier::PinpointResponder>(std::move(*replay));
}

// A move of `game` for its current round.
proto::DisputeMoveTx MoveFor(const proto::DisputeGame& game) {
  proto::DisputeMoveTx tx;
  tx.set_task_id(game.task_id());
  tx.set_challenger(game.challenger().key());
  tx.set_round(game.round());
  return tx;
}

class GptRulings : public ::testing::TestWithParam<GptCase> {};

TEST_P(GptRulings, PinpointsAndRulesTheTamperedOperator) {
  const GptCase& c = GetParam();
  const solver::ImageDataset data = solver::testing::TinyTextDataset();
  const MatchOptions options = OptionsFor(data, c.scenario, c.node, c.output, c.step, c.element);
  ASSERT_GE(options.tamper.node, 0);
  const solver::StepGraph graph = GraphOf(options.task, data);
  RealMatch match(data, options);
  match.Setup();
  if (::testing::Test::HasFatalFailure()) return;
  // Pinpointed at the tamper's segment, step and operator output, ruled on a leaf for the honest
  // party by the real referee (no forfeit); its value is the honest block.
  const proto::DisputeGame game = match.PlayToRuling(c.name, graph);
  if (::testing::Test::HasFatalFailure()) return;
  const proto::Task task = match.LedgerTask();
  EXPECT_FALSE(game.forfeit());
  std::unique_ptr<kernels::Backend> reference = kernels::MakeReferenceBackend();
  std::unique_ptr<verifier::PinpointResponder> replay = HonestReplay(match, options.task, data, *reference);
  ASSERT_NE(replay, nullptr);
  Result<const consensus::TensorBlockTree*> blocks = replay->OutputBlocks(static_cast<std::int64_t>(game.lo()), game.leaf());
  ASSERT_TRUE(blocks.ok()) << blocks.status().ToString();
  EXPECT_EQ(game.tile(), (*blocks)->grid().BlockOf(options.tamper.element));
  const consensus::Hash256 truth = *(*blocks)->tree()->Node(0, game.tile());
  EXPECT_EQ(game.true_leaf(), std::string(truth.begin(), truth.end()));
  const proto::GameSide& dishonest_side = match.proof_wrong() ? game.defender() : game.challenger();
  EXPECT_NE(dishonest_side.chain_hi_hash(), game.true_leaf());
  // The task settled as it deserves.
  EXPECT_EQ(task.status(), proto::TASK_SETTLED);
  EXPECT_EQ(task.outcome(), match.proof_wrong() ? proto::OUTCOME_REJECTED : proto::OUTCOME_ACCEPTED);
  EXPECT_EQ(task.standing(), match.proof_wrong() ? proto::PROOF_DISPROVEN : proto::PROOF_UPHELD);
  // The auditor (dispute replay) re-executes the game to the same ruling and names the operator.
  match.ExpectAuditAgrees(c.node);
}

INSTANTIATE_TEST_SUITE_P(Games, GptRulings, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GptCase>& p) { return std::string(p.param.name); });

// A first tile move into the causal softmax whose descriptor carries another scale than the one
// the task's graph root commits to is refused; the game then goes on to the honest ruling.
TEST(GptBadMoves, ASoftmaxDescriptorWithAnotherScaleIsRefused) {
  const solver::ImageDataset data = solver::testing::TinyTextDataset();
  const MatchOptions options = OptionsFor(data, Scenario::kCheatingSolverDisputesReject, "h0.attn.softmax", 0, 7);
  RealMatch match(data, options);
  match.Setup();
  if (::testing::Test::HasFatalFailure()) return;
  match.Play(64, proto::GAME_TILES);
  if (::testing::Test::HasFatalFailure()) return;
  const proto::DisputeGame game = match.Game();
  ASSERT_EQ(game.phase(), proto::GAME_TILES);
  std::unique_ptr<kernels::Backend> reference = kernels::MakeReferenceBackend();
  std::unique_ptr<verifier::PinpointResponder> replay = HonestReplay(match, options.task, data, *reference);
  ASSERT_NE(replay, nullptr);
  Result<proto::TileMove> honest =
      replay->AnswerTileMove(static_cast<std::int64_t>(game.lo()), game.leaf(), game.tile_level(), game.tile(), true);
  ASSERT_TRUE(honest.ok()) << honest.status().ToString();
  proto::PinpointDescriptor descriptor;
  ASSERT_TRUE(descriptor.ParseFromString(honest->node_descriptor()));
  ASSERT_EQ(descriptor.node().op(), static_cast<std::uint32_t>(kernels::Op::kCausalSoftmax));
  EXPECT_EQ(descriptor.node().scale(), 1.0f / std::sqrt(8.0f)) << "head width 8";
  for (const float scale : {1.0f, 2.0f * descriptor.node().scale()}) {
    proto::PinpointDescriptor wrong = descriptor;
    wrong.mutable_node()->set_scale(scale);
    proto::DisputeMoveTx tx = MoveFor(game);
    *tx.mutable_tile() = *honest;
    tx.mutable_tile()->set_node_descriptor(solver::DescriptorBytes(wrong));
    const contracts::BlockResult result = match.Post({{match.honest(), tx}});
    ASSERT_EQ(result.tx_results.size(), 1u);
    EXPECT_EQ(result.tx_results[0].code, StatusCode::kInvalidArgument) << result.tx_results[0].log;
    EXPECT_NE(result.tx_results[0].log.find("node_descriptor is not an operator node of the task's graph"),
              std::string::npos)
        << result.tx_results[0].log;
  }
  EXPECT_EQ(match.Game().round(), game.round()) << "a refused move changes nothing";
  match.Play();
  if (::testing::Test::HasFatalFailure()) return;
  EXPECT_EQ(match.Game().winner(), Raw(match.honest())) << match.Game().ruling();
}

// Referee evidence for an embedding gather tile whose token ids differ from the agreed batch's
// (another id in the ids block, which would make the referee copy another table row) is refused;
// the honest evidence then rules.
TEST(GptBadMoves, GatherEvidenceWithOtherTokenIdsIsRefused) {
  const solver::ImageDataset data = solver::testing::TinyTextDataset();
  const MatchOptions options = OptionsFor(data, Scenario::kCheatingSolverDisputesReject, "wte.embedding", 0, 0);
  RealMatch match(data, options);
  match.Setup();
  if (::testing::Test::HasFatalFailure()) return;
  match.Play(64, proto::GAME_REFEREE);
  if (::testing::Test::HasFatalFailure()) return;
  const proto::DisputeGame game = match.Game();
  ASSERT_EQ(game.phase(), proto::GAME_REFEREE);
  std::unique_ptr<kernels::Backend> reference = kernels::MakeReferenceBackend();
  std::unique_ptr<verifier::PinpointResponder> replay = HonestReplay(match, options.task, data, *reference);
  ASSERT_NE(replay, nullptr);
  Result<proto::RefereeMove> honest = replay->TileEvidence(static_cast<std::int64_t>(game.lo()), game.leaf(), game.tile(),
                                                           static_cast<std::int64_t>(game.chain_lo()),
                                                           static_cast<std::int64_t>(game.chain_hi()));
  ASSERT_TRUE(honest.ok()) << honest.status().ToString();
  // Inputs: the table W (0) and the ids (1), whose one block holds the batch's token ids.
  ASSERT_EQ(honest->tile_inputs_size(), 2);
  ASSERT_EQ(honest->tile_inputs(1).blocks_size(), 1);
  proto::RefereeMove wrong = *honest;
  std::string& ids = *wrong.mutable_tile_inputs(1)->mutable_blocks(0);
  float id;
  std::memcpy(&id, ids.data(), sizeof id);
  id = id == 0.0f ? 1.0f : 0.0f;  // another row of the table, still a valid id
  std::memcpy(ids.data(), &id, sizeof id);
  proto::DisputeMoveTx tx = MoveFor(game);
  *tx.mutable_referee() = wrong;
  const contracts::BlockResult result = match.Post({{match.honest(), tx}});
  ASSERT_EQ(result.tx_results.size(), 1u);
  EXPECT_EQ(result.tx_results[0].code, StatusCode::kInvalidArgument) << result.tx_results[0].log;
  EXPECT_NE(result.tx_results[0].log.find("tile input 1's blocks are not those of its agreed tensor"),
            std::string::npos)
      << result.tx_results[0].log;
  EXPECT_EQ(match.Game().phase(), proto::GAME_REFEREE) << "a refused move decides nothing";
  *tx.mutable_referee() = *honest;
  const contracts::BlockResult ruled = match.Post({{match.honest(), tx}});
  ASSERT_EQ(ruled.tx_results.size(), 1u);
  EXPECT_EQ(ruled.tx_results[0].code, StatusCode::kOk) << ruled.tx_results[0].log;
  const proto::DisputeGame decided = match.Game();
  EXPECT_EQ(decided.phase(), proto::GAME_RESOLVED);
  EXPECT_EQ(decided.winner(), Raw(match.honest())) << decided.ruling();
  EXPECT_TRUE(decided.challenger_won());
}

}  // namespace
}  // namespace polnode::dispute_testing
