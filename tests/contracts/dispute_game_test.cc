// The pinpoint dispute game on the contracts' state machine, played over GameWorld's small model:
// cheating solvers and lazy verifiers are pinpointed to the exact step, operator, block of its
// output and range of that block's chain, every timeout path (the tile and chain levels included)
// decides against whoever owed the move, malformed moves change nothing, and in >= 100 randomised
// games an honest party never loses whatever the dishonest one does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <tuple>

#include "game_world.h"
#include "polnode/base/block_grid.h"
#include "polnode/consensus/game_tree.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/dispute_audit.h"
#include "polnode/contracts/payloads.h"
#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {
namespace {

using consensus::Hash256;

// How one party plays. An honest party replays the true trajectory; a dishonest one claims the
// trajectory of `tamper` and, with probability `p_lie` per move, lies at random.
struct Plan {
  bool honest = true;
  std::optional<Tamper> tamper;
  double p_lie = 0;
  bool lie_about_inputs = false;  // its step tree gets a wrong state-input or batch leaf
  std::int64_t silent_from = -1;  // from this round on it posts nothing (-1: never silent)
  std::optional<proto::GamePhase> silent_in;  // it posts nothing once the game is in this phase
  bool hide_in_padding = false;  // its story is honest but for a value hidden in relu's block-tree padding
};

// The solver defends its proof in every scenario; the challenger is a rejecting verifier (the
// solver disputed its reject) or a whistleblower (it challenged the proof).
enum class Scenario {
  kCheatingSolverDisputesReject,  // solver cheated; honest verifier rejected; solver defends
  kLazyVerifierAcceptedCheat,     // solver cheated; verifiers accepted; honest whistleblower challenges
  kLazyVerifierRejectedHonest,    // honest proof; verifier rejected without replaying; solver defends
  kFalseWhistleblower,            // honest proof; honest accepts; whistleblower challenges it
};

struct Outcome {
  proto::DisputeGame game;
  proto::Task task;
  bool honest_won = false;
};

class GameRunner {
 public:
  GameRunner(Scenario scenario, std::uint64_t k, std::uint64_t segments, std::optional<Tamper> solver_tamper,
             Plan dishonest, std::uint64_t seed)
      : world_(k, segments), scenario_(scenario), rng_(seed), dishonest_plan_(std::move(dishonest)),
        flow_(GameWorld::Params()) {
    truth_ = world_.Trajectory(std::nullopt);
    proof_ = world_.Trajectory(solver_tamper);
    flow_.spec = world_.Spec();
    std::vector<Hash256> leaves;
    for (std::uint64_t i = 0; i * world_.k() <= world_.total_steps(); ++i) leaves.push_back(world_.Checkpoint(proof_, i));
    flow_.SetCheckpoints(std::move(leaves));
  }

  // Plays to the reveal, the game, and the settlement.
  Outcome Play() {
    Setup();
    for (int guard = 0; guard < 200 && Game().phase() != proto::GAME_RESOLVED; ++guard) PlayRound();
    Outcome outcome{Game(), flow_.task(), false};
    outcome.honest_won = outcome.game.winner() == Raw(honest_);
    return outcome;
  }

  // Plays to the reveal: the game is opening. Once per runner.
  void Setup() {
    if (set_up_) return;
    set_up_ = true;
    flow_.RunToVerifying();
    const std::vector<PubKey> assigned = flow_.Assigned();
    verifier_ = assigned[0];
    const bool accept = scenario_ == Scenario::kLazyVerifierAcceptedCheat || scenario_ == Scenario::kFalseWhistleblower;
    EXPECT_EQ(flow_.Verdict(assigned[0], accept).code, StatusCode::kOk);
    EXPECT_EQ(flow_.Verdict(assigned[1], true).code, StatusCode::kOk);
    if (accept) {
      EXPECT_EQ(flow_.Challenge(flow_.whistleblower).code, StatusCode::kOk);
      challenger_key_ = flow_.whistleblower;
    } else {
      EXPECT_EQ(flow_.Dispute(verifier_).code, StatusCode::kOk);
      challenger_key_ = verifier_;
    }
    flow_.AdvancePastDeadline();
    EXPECT_EQ(flow_.Reveal(flow_.proof_root).code, StatusCode::kOk);
    const proto::DisputeGame opened = Game();
    // Not a forced round: the segments start and end on the committed proof.
    EXPECT_EQ(opened.start_root(), flow_.proof_root);
    EXPECT_EQ(opened.proof_root(), flow_.proof_root);
    challenger_ = KeyOf(opened.challenger().key());
    defender_ = KeyOf(opened.defender().key());
    const bool challenger_honest =
        scenario_ == Scenario::kCheatingSolverDisputesReject || scenario_ == Scenario::kLazyVerifierAcceptedCheat;
    honest_ = challenger_honest ? challenger_ : defender_;
    dishonest_ = challenger_honest ? defender_ : challenger_;
    dishonest_trajectory_ = dishonest_plan_.tamper ? world_.Trajectory(dishonest_plan_.tamper) : proof_;
  }

  /// The honest party's opening move (the challenger's, in the scenarios where it is honest).
  proto::DisputeMoveTx HonestOpening() { return OpenMove(Game(), true); }

  /// Sets up and plays rounds until the game is in `phase` (or decided).
  void PlayUntil(proto::GamePhase phase) {
    Setup();
    for (int guard = 0; guard < 200; ++guard) {
      const proto::GamePhase now = Game().phase();
      if (now == phase || now == proto::GAME_RESOLVED) return;
      PlayRound();
    }
  }

  /// The honest party's move in the game as it stands.
  std::optional<proto::DisputeMoveTx> HonestMove() { return PartyMove(Game(), true); }

  /// One round: both parties post what they owe (a party that already moved posts nothing).
  void PlayRound() { PlayRoundImpl(); }

  GameWorld& world() { return world_; }
  /// From this round on, or once the game is in `phase`, the honest party posts nothing either
  /// (timeout tests).
  void SilenceHonestFrom(std::int64_t round) { honest_silent_from_ = round; }
  void SilenceHonestIn(proto::GamePhase phase) { honest_silent_in_ = phase; }
  TaskFlow& flow() { return flow_; }
  const PubKey& honest() const { return honest_; }
  const PubKey& verifier() const { return verifier_; }
  const PubKey& dishonest() const { return dishonest_; }

  proto::DisputeGame Game() {
    // state_store.h: "game/<task id hex>/<challenger hex>".
    auto hex = [](const std::string& raw) {
      return consensus::ToHex(std::span(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size()));
    };
    Result<std::optional<std::string>> bytes =
        flow_.chain.state().Get("game/" + hex(flow_.task_id) + "/" + hex(Raw(challenger_key_)));
    proto::DisputeGame game;
    EXPECT_TRUE(bytes.ok() && bytes->has_value() && game.ParseFromString(**bytes));
    return game;
  }

 private:
  static PubKey KeyOf(const std::string& raw) {
    PubKey key;
    std::copy(raw.begin(), raw.end(), key.begin());
    return key;
  }

  std::string RandomHash() {
    std::string h(32, '\0');
    for (char& c : h) c = static_cast<char>(rng_() & 0xFF);
    return h;
  }

  bool Lies() { return std::uniform_real_distribution<double>(0, 1)(rng_) < dishonest_plan_.p_lie; }

  proto::DisputeMoveTx Move(const proto::DisputeGame& game) {
    proto::DisputeMoveTx move;
    move.set_task_id(flow_.task_id);
    move.set_challenger(Raw(challenger_key_));
    move.set_round(game.round());
    return move;
  }

  // The states a party stands for: the honest truth, or the dishonest party's claimed trajectory.
  const std::vector<WorldState>& View(bool honest) const { return honest ? truth_ : dishonest_trajectory_; }
  std::optional<Tamper> ViewTamper(bool honest) const { return honest ? std::nullopt : dishonest_plan_.tamper; }

  proto::DisputeMoveTx OpenMove(const proto::DisputeGame& game, bool honest) {
    std::uint64_t segment = 0;
    const std::vector<WorldState>& view = View(honest);
    const std::uint64_t segments = world_.total_steps() / world_.k();
    // The first segment whose proof end differs from the party's own replay.
    while (segment + 1 < segments && world_.Checkpoint(proof_, segment + 1) == world_.Checkpoint(view, segment + 1)) {
      ++segment;
    }
    proto::DisputeMoveTx move = Move(game);
    proto::OpenMove* open = move.mutable_open();
    open->set_segment(segment);
    open->set_start_hash(HashBytes(world_.Checkpoint(proof_, segment)));
    open->set_start_proof(world_.CheckpointProof(proof_, segment));
    open->set_end_hash(HashBytes(world_.Checkpoint(proof_, segment + 1)));
    open->set_end_proof(world_.CheckpointProof(proof_, segment + 1));
    std::string claimed = HashBytes(world_.Checkpoint(view, segment + 1));
    if (!honest && dishonest_plan_.hide_in_padding) {
      // k = 1: the segment is the step, and the state after it names the doctored tensor.
      claimed = HashBytes(world_.HideInPadding(view[segment], segment).state_after);
    } else if (!honest && (Lies() || claimed == open->end_hash())) {
      claimed = RandomHash();
    }
    open->set_claimed_end_hash(claimed);
    return move;
  }

  // The party's tree over the step the game descends (the dishonest one's possibly doctored).
  consensus::GameTree StepTree(const proto::DisputeGame& game, bool honest) {
    const std::uint64_t step = game.first_step() + game.lo();
    std::vector<Hash256> leaves = world_.Leaves(View(honest)[step], step, ViewTamper(honest));
    if (!honest && dishonest_plan_.hide_in_padding) leaves[6] = world_.HideInPadding(View(false)[step], step).tensor_hash;
    if (!honest) {
      const proto::GameSide& side = Raw(dishonest_) == game.challenger().key() ? game.challenger() : game.defender();
      std::copy(side.hi_hash().begin(), side.hi_hash().end(), leaves.back().begin());
      if (dishonest_plan_.lie_about_inputs) leaves[rng_() % (GameWorld::kStateTensors + 2)][0] ^= 1;
      if (Lies()) leaves[rng_() % (leaves.size() - 1)][1] ^= 1;
    }
    return consensus::GameTree(leaves);
  }

  std::optional<proto::DisputeMoveTx> PartyMove(const proto::DisputeGame& game, bool honest) {
    const proto::GameSide& side = (honest ? Raw(honest_) : Raw(dishonest_)) == game.challenger().key()
                                      ? game.challenger()
                                      : game.defender();
    if (side.moved()) return std::nullopt;
    const std::int64_t silent_from = honest ? honest_silent_from_ : dishonest_plan_.silent_from;
    if (silent_from >= 0 && game.round() >= silent_from) return std::nullopt;
    const std::optional<proto::GamePhase> silent_in = honest ? honest_silent_in_ : dishonest_plan_.silent_in;
    if (silent_in && game.phase() == *silent_in) return std::nullopt;
    if (!honest && Lies() && rng_() % 4 == 0) return std::nullopt;  // misses the round
    switch (game.phase()) {
      case proto::GAME_OPENING:
        if (side.key() != game.challenger().key()) return std::nullopt;
        return OpenMove(game, honest);
      case proto::GAME_STEPS: {
        const std::uint64_t mid = game.lo() + (game.hi() - game.lo()) / 2;
        proto::DisputeMoveTx move = Move(game);
        std::string hash = HashBytes(world_.StateHash(View(honest)[game.first_step() + mid], game.first_step() + mid));
        if (!honest && Lies()) {
          hash = rng_() % 2 == 0 ? RandomHash()
                                 : HashBytes(world_.StateHash(truth_[game.first_step() + mid], game.first_step() + mid));
        }
        move.mutable_step()->set_state_hash(hash);
        return move;
      }
      case proto::GAME_GRAPH: {
        if (game.level() == game.depth()) trees_[honest].emplace(StepTree(game, honest));
        const consensus::GameTree& tree = *trees_[honest];
        proto::DisputeMoveTx move = Move(game);
        proto::GraphMove* graph = move.mutable_graph();
        graph->set_left(HashBytes(*tree.Node(game.level() - 1, 2 * game.node_index())));
        graph->set_right(HashBytes(*tree.Node(game.level() - 1, 2 * game.node_index() + 1)));
        if (game.level() == game.depth()) {
          const std::vector<Hash256> siblings = *tree.Siblings(GameWorld::kLeaves - 1, tree.depth());
          for (const Hash256& s : siblings) graph->add_last_leaf_siblings(HashBytes(s));
        }
        if (!honest && Lies()) graph->set_left(RandomHash());  // does not hash to its node: rejected
        return move;
      }
      case proto::GAME_TILES: {
        const std::uint64_t step = game.first_step() + game.lo();
        const bool first = side.block_root().empty();
        const std::uint32_t level = first ? world_.TileDepth(game.leaf()) : game.tile_level();
        proto::DisputeMoveTx move = Move(game);
        *move.mutable_tile() =
            !honest && dishonest_plan_.hide_in_padding
                ? world_.TileMoveFromTree(world_.HideInPadding(View(false)[step], step).tree, game.leaf(), level,
                                          first ? 0 : game.tile(), first)
                : world_.TileMoveFor(View(honest)[step], step, game.leaf(), level, first ? 0 : game.tile(), first,
                                     ViewTamper(honest));
        if (!honest && Lies()) {
          // A root that does not give its leaf, or children that do not give its node: refused.
          if (first && rng_() % 2 == 0) {
            move.mutable_tile()->set_block_root(RandomHash());
          } else {
            move.mutable_tile()->set_right(RandomHash());
          }
        }
        return move;
      }
      case proto::GAME_CHAIN: {
        const std::uint64_t step = game.first_step() + game.lo();
        const std::uint64_t mid = game.chain_lo() + (game.chain_hi() - game.chain_lo()) / 2;
        proto::DisputeMoveTx move = Move(game);
        std::string hash = HashBytes(world_.ChainHash(View(honest)[step], step, game.leaf(), game.tile(), mid, ViewTamper(honest)));
        if (!honest && Lies()) hash = RandomHash();  // a wrong partial sum: it loses where the chain goes wrong
        move.mutable_chain()->set_state_hash(hash);
        return move;
      }
      case proto::GAME_REFEREE: {
        proto::DisputeMoveTx move = Move(game);
        const std::uint64_t step = game.first_step() + game.lo();
        const bool tile = !game.node_descriptor().empty();
        // The dishonest party posts evidence for its own story: refused, or it convicts itself.
        const std::vector<WorldState>& view = View(honest);
        const consensus::GameTree& tree = *trees_[honest ? 1 : 0];
        *move.mutable_referee() =
            tile ? world_.TileEvidence(view[step], step, game.leaf(), game.tile(), game.chain_lo(), game.chain_hi(), tree,
                                       ViewTamper(honest))
                 : world_.Evidence(view[step], step, game.leaf(), tree, ViewTamper(honest));
        return move;
      }
      default:
        return std::nullopt;
    }
  }

  void PlayRoundImpl() {
    const proto::DisputeGame game = Game();
    std::vector<VerifiedTx> txs;
    // The dishonest party moves first, so that a referee ruling on its evidence comes first too.
    for (bool honest : {false, true}) {
      std::optional<proto::DisputeMoveTx> move = PartyMove(game, honest);
      if (move) txs.push_back(flow_.chain.Tx(honest ? honest_ : dishonest_, payload::kDisputeMove, *move));
    }
    const std::uint32_t round = game.round();
    flow_.chain.Block(txs);
    const proto::DisputeGame after = Game();
    if (after.phase() != proto::GAME_RESOLVED && after.round() == round) flow_.chain.AdvanceTo(after.deadline());
  }

  GameWorld world_;
  Scenario scenario_;
  std::mt19937_64 rng_;
  Plan dishonest_plan_;
  TaskFlow flow_;
  std::vector<WorldState> truth_, proof_, dishonest_trajectory_;
  PubKey verifier_{}, challenger_key_{}, challenger_{}, defender_{}, honest_{}, dishonest_{};
  std::optional<consensus::GameTree> trees_[2];  // [honest]: the party's tree of the step
  std::int64_t honest_silent_from_ = -1;
  std::optional<proto::GamePhase> honest_silent_in_;
  bool set_up_ = false;
};

// The leaf of the output `tamper` corrupts, and the block of it that holds the corrupted element.
std::uint64_t LeafOf(const Tamper& t) { return t.node == 3 ? 8u + static_cast<std::uint64_t>(t.output) : 5u + static_cast<std::uint64_t>(t.node); }
std::uint64_t BlockOf(const Tamper& t) {
  const std::vector<std::int64_t> dims = t.node <= 1 ? std::vector<std::int64_t>{GameWorld::kRows, GameWorld::kCols}
                                                     : std::vector<std::int64_t>{GameWorld::kCols};
  const BlockGrid grid = BlockGrid::Of(dims);
  return grid.BlockOf(t.element % (grid.rows() * grid.cols()));
}

// The GameResult a resolved game's record holds.
proto::GameResult ResultOf(const proto::DisputeGame& game) {
  if (game.both_forfeited()) return proto::GAME_BOTH_FORFEIT;
  if (game.forfeit()) return game.challenger_won() ? proto::GAME_DEFENDER_FORFEIT : proto::GAME_CHALLENGER_FORFEIT;
  return game.challenger_won() ? proto::GAME_CHALLENGER_WON : proto::GAME_DEFENDER_WON;
}

// The moves of each kind a game record holds.
std::map<std::string, int> MoveKinds(const proto::DisputeGame& game) {
  std::map<std::string, int> kinds;
  for (const proto::MoveRecord& m : game.moves()) {
    proto::DisputeMoveTx move;
    if (!move.ParseFromString(m.payload())) continue;
    ++kinds[move.has_open() ? "open" : move.has_step() ? "step" : move.has_graph() ? "graph" : move.has_tile() ? "tile"
            : move.has_chain() ? "chain" : "referee"];
  }
  return kinds;
}

// A tamper at a random element of a random output of `steps` steps; the sum (whose first block's
// chain is bisected) twice as often as the others.
Tamper RandomTamper(std::mt19937_64& rng, std::uint64_t steps) {
  Tamper t;
  t.step = rng() % steps;
  constexpr int kNodes[] = {0, 1, 2, 2, 3};
  t.node = kNodes[rng() % 5];
  t.output = t.node == 3 ? static_cast<int>(rng() % 2) : 0;
  t.element = static_cast<std::int64_t>(rng() % (t.node <= 1 ? GameWorld::kRows * GameWorld::kCols : GameWorld::kCols));
  return t;
}

TEST(DisputeGame, CheatingSolverIsPinpointedToItsStepOperatorTileAndChainAndSlashed) {
  // An element of each output: add and relu (10 blocks each), sum in its first block (a chain too
  // long for one ruling under GameWorld::Params) and in its second (short enough), and v'.
  const Tamper tampers[] = {{13, 0, 0, 250 * 70 + 66}, {13, 1, 0, 5}, {13, 2, 0, 10}, {13, 2, 0, 67}, {13, 3, 1, 3}};
  for (const Tamper& tamper : tampers) {
    SCOPED_TRACE("node " + std::to_string(tamper.node) + " element " + std::to_string(tamper.element));
    GameRunner runner(Scenario::kCheatingSolverDisputesReject, 8, 3, tamper, Plan{false, tamper, 0, false, -1, {}}, 1);
    const std::uint64_t solver_bonded = runner.flow().chain.Stake(proto::ROLE_SOLVER, runner.flow().solver).bonded();
    const Outcome outcome = runner.Play();
    const proto::DisputeGame& game = outcome.game;
    EXPECT_TRUE(outcome.honest_won) << game.ruling();
    EXPECT_EQ(game.segment(), 1u);
    EXPECT_EQ(game.first_step() + game.lo(), 13u);
    EXPECT_EQ(game.leaf(), LeafOf(tamper));  // the tampered operator's output
    EXPECT_EQ(game.tile(), BlockOf(tamper));  // the block holding the tampered element
    EXPECT_EQ(game.output(), static_cast<std::uint32_t>(tamper.output));
    EXPECT_TRUE(game.ruling().starts_with("leaf ")) << game.ruling();
    EXPECT_TRUE(game.challenger_won());
    EXPECT_FALSE(game.forfeit());
    EXPECT_EQ(outcome.task.status(), proto::TASK_SETTLED);
    EXPECT_EQ(outcome.task.outcome(), proto::OUTCOME_REJECTED);
    EXPECT_EQ(outcome.task.standing(), proto::PROOF_DISPROVEN);
    EXPECT_EQ(outcome.task.disproven_segment(), 1u);
    EXPECT_EQ(runner.flow().chain.Stake(proto::ROLE_SOLVER, runner.flow().solver).bonded(), solver_bonded - 1'000);
    // Rounds: opening, ceil(log2 8) steps, ceil(log2 11) graph, the output's block tree (one
    // round at least), the chain where a whole tile does not fit one ruling, and the referee.
    const std::map<std::string, int> kinds = MoveKinds(game);
    const int tile_rounds = std::max<int>(1, static_cast<int>(game.tile_depth()));
    const bool chained = tamper.node == 2 && game.tile() == 0;
    EXPECT_EQ(game.tile_depth(), tamper.node <= 1 ? 4u : 1u);
    EXPECT_EQ(kinds.count("tile") ? kinds.at("tile") : 0, 2 * tile_rounds);
    EXPECT_EQ(kinds.count("chain") > 0, chained);
    EXPECT_EQ(game.chain_units(), tamper.node == 2 ? 300u : 0u);
    if (chained) {
      // The parties agree on every partial sum (the cheat is in the output, not the chain), so
      // the bisection ends at the chain's last units, from a posted and agreed partial state.
      EXPECT_EQ(game.chain_hi(), 300u);
      EXPECT_GT(game.chain_lo(), 0u);
      EXPECT_FALSE(game.chain_lo_hash().empty());
    }
    const int chain_rounds = kinds.count("chain") ? kinds.at("chain") / 2 : 0;
    EXPECT_EQ(game.moves_size(), 1 + 2 * (3 + 4 + tile_rounds + chain_rounds) + 1);
    // Bytes posted, for the report (visible with --gtest_output=xml); every move fits
    // the world's 48 KiB transactions.
    std::size_t largest = 0;
    for (const proto::MoveRecord& m : game.moves()) largest = std::max(largest, m.payload().size());
    EXPECT_LE(largest, GameWorld::Params().max_payload_bytes());
    RecordProperty("largest_move_bytes", static_cast<int>(largest));
    RecordProperty("referee_payload_bytes", static_cast<int>(game.moves(game.moves_size() - 1).payload().size()));
    // The auditor's re-execution agrees with the ledger, and names the operator.
    Result<GameAudit> audit = AuditGame(runner.flow().chain.params(), outcome.task, game);
    ASSERT_TRUE(audit.ok()) << audit.status().ToString();
    EXPECT_TRUE(audit->differences.empty()) << audit->differences.front();
    EXPECT_EQ(audit->result, proto::GAME_CHALLENGER_WON);
    ASSERT_TRUE(audit->node.has_value());
    EXPECT_EQ(audit->node->name(), std::vector<std::string>({"add", "relu", "sum", "sgd"})[static_cast<std::size_t>(tamper.node)]);
    // A ledger that recorded another ruling, or a move it should have refused, is caught.
    proto::DisputeGame forged = game;
    forged.set_challenger_won(false);
    EXPECT_FALSE(AuditGame(runner.flow().chain.params(), outcome.task, forged)->differences.empty());
    forged = game;
    proto::DisputeMoveTx move;
    ASSERT_TRUE(move.ParseFromString(forged.moves(3).payload()));
    move.mutable_step()->set_state_hash(std::string(32, '\x07'));
    forged.mutable_moves(3)->set_payload(move.SerializeAsString());
    EXPECT_FALSE(AuditGame(runner.flow().chain.params(), outcome.task, forged)->differences.empty());
    // ... and so is a tile move the ledger should have refused.
    forged = game;
    const int first_tile = 1 + 2 * (3 + 4);
    ASSERT_TRUE(move.ParseFromString(forged.moves(first_tile).payload()));
    ASSERT_TRUE(move.has_tile());
    move.mutable_tile()->set_block_root(std::string(32, '\x08'));
    forged.mutable_moves(first_tile)->set_payload(move.SerializeAsString());
    EXPECT_FALSE(AuditGame(runner.flow().chain.params(), outcome.task, forged)->differences.empty());
    // After the audit window the moves' payloads are pruned; the summary stays.
    TaskFlow& flow = runner.flow();
    flow.chain.AdvanceTo(outcome.task.settle_height() + flow.chain.params().audit_window());
    const proto::DisputeGame pruned = runner.Game();
    EXPECT_TRUE(pruned.pruned());
    EXPECT_EQ(pruned.moves_size(), outcome.game.moves_size());
    for (const proto::MoveRecord& m : pruned.moves()) EXPECT_TRUE(m.payload().empty());
    EXPECT_EQ(pruned.leaf(), outcome.game.leaf());
    EXPECT_EQ(pruned.ruling(), outcome.game.ruling());
    EXPECT_LT(pruned.ByteSizeLong(), outcome.game.ByteSizeLong() / 2);
    EXPECT_EQ(AuditGame(flow.chain.params(), flow.task(), pruned).status().code(), StatusCode::kFailedPrecondition);
  }
}

// Review finding 3: a caught cheat was paid when the accepters never answered the whistleblower.
// Now the solver itself defends its proof, loses at the referee, and is not paid.
TEST(DisputeGame, CheatThatVerifiersAcceptedIsDisprovenByTheWhistleblowerAgainstTheSolver) {
  const Tamper tamper{5, 0, 0, 0};
  GameRunner runner(Scenario::kLazyVerifierAcceptedCheat, 4, 4, tamper, Plan{false, tamper, 0, false, -1, {}}, 2);
  TaskFlow& flow = runner.flow();
  const PubKey wb = flow.whistleblower;
  const std::uint64_t solver_bonded = flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded();
  const Outcome outcome = runner.Play();
  EXPECT_TRUE(outcome.honest_won) << outcome.game.ruling();
  EXPECT_EQ(outcome.game.defender().key(), Raw(flow.solver));
  EXPECT_EQ(outcome.game.first_step() + outcome.game.lo(), 5u);
  EXPECT_EQ(outcome.game.leaf(), 5u);
  EXPECT_EQ(outcome.task.outcome(), proto::OUTCOME_REJECTED);
  EXPECT_EQ(outcome.task.standing(), proto::PROOF_DISPROVEN);
  EXPECT_EQ(outcome.task.challenges(0).game_result(), proto::GAME_CHALLENGER_WON);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_WHISTLEBLOWER, wb).locked(), 0u);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded(), solver_bonded - 1'000);
  // Accepters that replayed the disproven segment (or the final one) accepted a wrong transition:
  // their locks go to the whistleblower with the solver's.
  int caught = 0;
  for (const proto::VerifierSlot& slot : outcome.task.verifiers()) {
    const bool drew = std::find(slot.segments().begin(), slot.segments().end(), 1u) != slot.segments().end();
    PubKey key;
    std::copy(slot.verifier().begin(), slot.verifier().end(), key.begin());
    EXPECT_EQ(flow.chain.Stake(proto::ROLE_VERIFIER, key).bonded(), drew ? 0u : 500u);
    caught += drew ? 1 : 0;
  }
  RecordProperty("accepters_caught", caught);
}

TEST(DisputeGame, LazyVerifierWhoRejectedAnHonestProofLosesToTheSolver) {
  const Tamper lie{2, 1, 0, 100};
  GameRunner runner(Scenario::kLazyVerifierRejectedHonest, 4, 2, std::nullopt, Plan{false, lie, 0, false, -1, {}}, 3);
  const Outcome outcome = runner.Play();
  EXPECT_TRUE(outcome.honest_won) << outcome.game.ruling();
  EXPECT_FALSE(outcome.game.challenger_won());
  EXPECT_EQ(outcome.task.outcome(), proto::OUTCOME_ACCEPTED);
  EXPECT_EQ(outcome.task.standing(), proto::PROOF_UPHELD);
}

// >= 100 games; the dishonest side picks its story and its lies at random, including lying about
// agreed inputs (state tensors, the batch) and committing trees inconsistent with its claims.
TEST(DisputeGame, HonestPartyNeverLosesRandomisedGames) {
  std::mt19937_64 rng(2026);
  int referee_rulings = 0, tile_games = 0, chain_games = 0;
  for (int i = 0; i < 160; ++i) {
    const Scenario scenario = static_cast<Scenario>(rng() % 4);
    const std::uint64_t k = 1 + rng() % 9;
    const std::uint64_t segments = 1 + rng() % 3;
    const std::uint64_t steps = k * segments;
    const bool proof_wrong =
        scenario == Scenario::kCheatingSolverDisputesReject || scenario == Scenario::kLazyVerifierAcceptedCheat;
    std::optional<Tamper> solver_tamper;
    if (proof_wrong) solver_tamper = RandomTamper(rng, steps);
    Plan dishonest{false, std::nullopt, 0.1 * static_cast<double>(rng() % 4), rng() % 3 == 0, -1, {}};
    // A dishonest defender of a wrong proof tells the proof's story; a dishonest challenger of an
    // honest proof invents a wrong step somewhere.
    dishonest.tamper = proof_wrong ? solver_tamper : std::optional<Tamper>(RandomTamper(rng, steps));
    GameRunner runner(scenario, k, segments, solver_tamper, dishonest, rng());
    const Outcome outcome = runner.Play();
    ASSERT_EQ(outcome.game.phase(), proto::GAME_RESOLVED) << "game " << i;
    EXPECT_TRUE(outcome.honest_won) << "game " << i << " scenario " << static_cast<int>(scenario) << " k " << k
                                    << ": " << outcome.game.ruling();
    EXPECT_EQ(outcome.task.status(), proto::TASK_SETTLED);
    if (outcome.game.ruling().rfind("leaf", 0) == 0) ++referee_rulings;
    const std::map<std::string, int> kinds = MoveKinds(outcome.game);
    if (kinds.count("tile")) ++tile_games;
    if (kinds.count("chain")) ++chain_games;
    Result<GameAudit> audit = AuditGame(runner.flow().chain.params(), outcome.task, outcome.game);
    ASSERT_TRUE(audit.ok());
    EXPECT_TRUE(audit->differences.empty()) << "game " << i << ": " << audit->differences.front();
  }
  EXPECT_GE(referee_rulings, 30);  // most games reach the referee, not only timeouts
  EXPECT_GE(tile_games, 30);       // ... most of them inside an operator's output
  EXPECT_GE(chain_games, 10);      // ... some along a tile's chain
  std::cout << "[dispute-game] " << referee_rulings << " referee rulings, " << tile_games << " games inside an output, "
            << chain_games << " along a tile's chain\n";
  RecordProperty("tile_games", tile_games);
  RecordProperty("chain_games", chain_games);
}

TEST(DisputeGame, EveryTimeoutPathDecides) {
  const Tamper lie{1, 0, 0, 0};
  const Tamper chain_lie{1, 2, 0, 3};  // the sum: its first block's chain is bisected
  struct Case {
    const char* name;
    Scenario scenario;
    Tamper tamper;
    std::int64_t dishonest_silent_from;
    std::int64_t honest_silent_from;
    std::optional<proto::GamePhase> dishonest_silent_in;
    std::optional<proto::GamePhase> honest_silent_in;
    bool honest_wins;
    proto::GameResult result;
    const char* ruling_prefix;
  };
  const Case cases[] = {
      // The dishonest challenger never opens.
      {"no opening", Scenario::kLazyVerifierRejectedHonest, lie, 0, -1, {}, {}, true, proto::GAME_CHALLENGER_FORFEIT,
       "timeout: the challenger did not open"},
      // The dishonest solver stops at some level; the honest challenger moved: the solver forfeits.
      {"solver misses a step round", Scenario::kCheatingSolverDisputesReject, lie, 2, -1, {}, {}, true,
       proto::GAME_DEFENDER_FORFEIT, "timeout: the solver"},
      {"solver misses a graph round", Scenario::kCheatingSolverDisputesReject, lie, -1, -1, proto::GAME_GRAPH, {}, true,
       proto::GAME_DEFENDER_FORFEIT, "timeout: the solver"},
      {"solver misses a tile round", Scenario::kCheatingSolverDisputesReject, lie, -1, -1, proto::GAME_TILES, {}, true,
       proto::GAME_DEFENDER_FORFEIT, "timeout: the solver"},
      {"solver misses a chain round", Scenario::kCheatingSolverDisputesReject, chain_lie, -1, -1, proto::GAME_CHAIN, {},
       true, proto::GAME_DEFENDER_FORFEIT, "timeout: the solver"},
      // A dishonest challenger (lying verifier) stops inside the output or its chain: it forfeits.
      {"challenger misses a tile round", Scenario::kLazyVerifierRejectedHonest, lie, -1, -1, proto::GAME_TILES, {}, true,
       proto::GAME_CHALLENGER_FORFEIT, "timeout: the challenger"},
      {"challenger misses a chain round", Scenario::kLazyVerifierRejectedHonest, chain_lie, -1, -1, proto::GAME_CHAIN, {},
       true, proto::GAME_CHALLENGER_FORFEIT, "timeout: the challenger"},
      // Both stop: both owed the round, both forfeit; nobody wins.
      {"both silent", Scenario::kCheatingSolverDisputesReject, lie, 2, 2, {}, {}, false, proto::GAME_BOTH_FORFEIT,
       "timeout: neither party moved"},
      {"both silent in tiles", Scenario::kCheatingSolverDisputesReject, lie, -1, -1, proto::GAME_TILES, proto::GAME_TILES,
       false, proto::GAME_BOTH_FORFEIT, "timeout: neither party moved"},
      {"both silent in the chain", Scenario::kLazyVerifierAcceptedCheat, chain_lie, -1, -1, proto::GAME_CHAIN,
       proto::GAME_CHAIN, false, proto::GAME_BOTH_FORFEIT, "timeout: neither party moved"},
      // Nobody posts the referee's evidence, for a tile ruling: the solver owes it (review finding
      // 1: the party that owes data loses), here a cheat; and an honest solver that withholds it
      // loses too.
      {"no referee evidence", Scenario::kLazyVerifierAcceptedCheat, chain_lie, -1, -1, proto::GAME_REFEREE,
       proto::GAME_REFEREE, true, proto::GAME_DEFENDER_FORFEIT, "timeout: nobody posted"},
      {"honest solver withholds the evidence", Scenario::kLazyVerifierRejectedHonest, lie, -1, -1, proto::GAME_REFEREE,
       proto::GAME_REFEREE, false, proto::GAME_DEFENDER_FORFEIT, "timeout: nobody posted"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const bool honest_proof = c.scenario == Scenario::kLazyVerifierRejectedHonest;
    Plan plan{false, c.tamper, 0, false, c.dishonest_silent_from, c.dishonest_silent_in};
    GameRunner runner(c.scenario, 8, 1, honest_proof ? std::nullopt : std::optional<Tamper>(c.tamper), plan, 5);
    runner.SilenceHonestFrom(c.honest_silent_from);
    if (c.honest_silent_in) runner.SilenceHonestIn(*c.honest_silent_in);
    const Outcome outcome = runner.Play();
    EXPECT_EQ(outcome.game.phase(), proto::GAME_RESOLVED);
    EXPECT_EQ(outcome.honest_won, c.honest_wins) << outcome.game.ruling();
    EXPECT_EQ(ResultOf(outcome.game), c.result) << outcome.game.ruling();
    EXPECT_TRUE(outcome.game.ruling().starts_with(c.ruling_prefix)) << outcome.game.ruling();
    EXPECT_EQ(outcome.task.status(), proto::TASK_SETTLED);
    EXPECT_TRUE(outcome.game.forfeit());
    // A timeout never disproves; a solver's forfeit leaves the proof unproven (not paid).
    EXPECT_NE(outcome.task.standing(), proto::PROOF_DISPROVEN);
    EXPECT_EQ(outcome.task.outcome() == proto::OUTCOME_ACCEPTED, outcome.task.standing() == proto::PROOF_UPHELD);
    // The levels the case is about were reached.
    if (c.dishonest_silent_in == proto::GAME_CHAIN || c.honest_silent_in == proto::GAME_CHAIN) {
      EXPECT_GT(MoveKinds(outcome.game).count("tile"), 0u);
    }
    Result<GameAudit> audit = AuditGame(runner.flow().chain.params(), outcome.task, outcome.game);
    ASSERT_TRUE(audit.ok());
    EXPECT_TRUE(audit->differences.empty()) << audit->differences.front();
  }
}

TEST(DisputeGame, MalformedMovesAreRejectedWithAReasonAndChangeNothing) {
  const Tamper tamper{3, 0, 0, 0};
  GameRunner runner(Scenario::kCheatingSolverDisputesReject, 4, 2, tamper, Plan{false, tamper, 0, false, -1, {}}, 6);
  runner.Setup();
  TaskFlow& flow = runner.flow();
  const std::string before = runner.Game().SerializeAsString();
  const proto::DisputeMoveTx good = runner.HonestOpening();
  // All in one block, so the opening round's deadline does not pass in between.
  std::vector<VerifiedTx> txs;
  std::vector<StatusCode> want;
  auto expect = [&](const PubKey& signer, const proto::DisputeMoveTx& move, StatusCode code) {
    txs.push_back(flow.chain.Tx(signer, payload::kDisputeMove, move));
    want.push_back(code);
  };
  proto::DisputeMoveTx m = good;
  m.set_round(good.round() + 1);
  expect(runner.honest(), m, StatusCode::kFailedPrecondition);  // a stale or future round
  expect(runner.dishonest(), good, StatusCode::kPermissionDenied);  // only the challenger opens
  expect(flow.outsider, good, StatusCode::kPermissionDenied);
  m = good;
  m.mutable_open()->set_claimed_end_hash(good.open().end_hash());
  expect(runner.honest(), m, StatusCode::kInvalidArgument);  // disputes nothing
  m = good;
  m.mutable_open()->set_start_hash(std::string(32, '\x01'));
  expect(runner.honest(), m, StatusCode::kInvalidArgument);  // not the committed checkpoint
  m = good;
  m.mutable_open()->set_end_proof("garbage");
  expect(runner.honest(), m, StatusCode::kInvalidArgument);
  m = good;
  m.mutable_open()->set_segment(2);
  expect(runner.honest(), m, StatusCode::kInvalidArgument);  // the proof has 2 segments
  m = good;
  m.mutable_open()->set_claimed_end_hash("short");
  expect(runner.honest(), m, StatusCode::kInvalidArgument);
  m = good;
  m.mutable_step()->set_state_hash(std::string(32, '\x02'));
  expect(runner.honest(), m, StatusCode::kFailedPrecondition);  // a level-1 move while opening
  m = good;
  m.mutable_referee();
  expect(flow.outsider, m, StatusCode::kFailedPrecondition);
  m = good;
  m.clear_open();
  expect(runner.honest(), m, StatusCode::kInvalidArgument);  // no move at all
  m = good;
  m.set_challenger(std::string(32, '\x09'));
  expect(runner.honest(), m, StatusCode::kNotFound);  // no such game
  const BlockResult result = flow.chain.Block(txs);
  ASSERT_EQ(result.tx_results.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(result.tx_results[i].code, want[i]) << "move " << i << ": " << result.tx_results[i].log;
    EXPECT_FALSE(result.tx_results[i].log.empty());
  }
  EXPECT_EQ(runner.Game().SerializeAsString(), before);
  // The good move still works afterwards.
  EXPECT_EQ(flow.chain.Run(runner.honest(), payload::kDisputeMove, good).code, StatusCode::kOk);
  EXPECT_EQ(runner.Game().phase(), proto::GAME_STEPS);
}

}  // namespace
}  // namespace polnode::contracts::testing

namespace polnode::contracts::testing {
namespace {

// Posts `moves` in one block; each must be refused with its code and a reason, and the game must
// not change.
void ExpectRefused(GameRunner& runner, const std::vector<std::tuple<PubKey, proto::DisputeMoveTx, StatusCode, const char*>>& moves) {
  TaskFlow& flow = runner.flow();
  const std::string before = runner.Game().SerializeAsString();
  std::vector<VerifiedTx> txs;
  for (const auto& [signer, move, code, what] : moves) txs.push_back(flow.chain.Tx(signer, payload::kDisputeMove, move));
  const BlockResult result = flow.chain.Block(txs);
  ASSERT_EQ(result.tx_results.size(), moves.size());
  for (std::size_t i = 0; i < moves.size(); ++i) {
    EXPECT_EQ(result.tx_results[i].code, std::get<2>(moves[i])) << std::get<3>(moves[i]) << ": " << result.tx_results[i].log;
    EXPECT_FALSE(result.tx_results[i].log.empty()) << std::get<3>(moves[i]);
    if (std::getenv("POLNODE_SHOW_REFUSALS")) std::cout << std::get<3>(moves[i]) << " -> " << result.tx_results[i].log << "\n";
  }
  EXPECT_EQ(runner.Game().SerializeAsString(), before) << "a refused move changed the game";
}

// A party that hides a value where nobody computes one, in the padding of an output's block tree
// (so its tensor hash differs from the honest one while every block agrees), is led to that
// padding block, whose value the referee knows without evidence: the all-zero hash.
TEST(DisputeGame, AValueHiddenInBlockTreePaddingLosesAtTheReferee) {
  Plan liar{false, std::nullopt, 0, false, -1, {}};
  liar.hide_in_padding = true;
  GameRunner runner(Scenario::kLazyVerifierRejectedHonest, 1, 1, std::nullopt, liar, 9);
  const Outcome outcome = runner.Play();
  const proto::DisputeGame& game = outcome.game;
  EXPECT_TRUE(outcome.honest_won) << game.ruling();
  EXPECT_EQ(game.leaf(), 6u);
  EXPECT_EQ(game.tile(), 15u);  // relu's 10 blocks, padded to 16
  EXPECT_EQ(game.true_leaf(), std::string(32, '\0'));
  EXPECT_FALSE(game.forfeit());
  EXPECT_EQ(outcome.task.outcome(), proto::OUTCOME_ACCEPTED);
  Result<GameAudit> audit = AuditGame(runner.flow().chain.params(), outcome.task, game);
  ASSERT_TRUE(audit.ok());
  EXPECT_TRUE(audit->differences.empty()) << audit->differences.front();
}

TEST(DisputeGame, MalformedTileMovesAreRefusedWithAReasonAndChangeNothing) {
  const Tamper tamper{3, 0, 0, 250 * 70 + 66};  // add: 10 blocks, descended over 4 rounds
  GameRunner runner(Scenario::kCheatingSolverDisputesReject, 4, 2, tamper, Plan{false, tamper, 0, false, -1, {}}, 7);
  runner.PlayUntil(proto::GAME_TILES);
  ASSERT_EQ(runner.Game().phase(), proto::GAME_TILES);
  const PubKey honest = runner.honest();
  std::optional<proto::DisputeMoveTx> good = runner.HonestMove();
  ASSERT_TRUE(good && good->has_tile());
  const proto::DisputeGame game = runner.Game();
  const std::uint64_t step = game.first_step() + game.lo();
  const WorldState before = runner.world().Trajectory(std::nullopt)[step];
  // The descriptor of another node (sum), with its own valid proof.
  const proto::TileMove other = runner.world().TileMoveFor(before, step, 7, 1, 0, true, std::nullopt);
  std::vector<std::tuple<PubKey, proto::DisputeMoveTx, StatusCode, const char*>> bad;
  auto with = [&](auto edit) {
    proto::DisputeMoveTx m = *good;
    edit(*m.mutable_tile());
    return m;
  };
  proto::DisputeMoveTx stale = *good;
  stale.set_round(good->round() + 1);
  bad.emplace_back(honest, stale, StatusCode::kFailedPrecondition, "another round");
  bad.emplace_back(runner.flow().outsider, *good, StatusCode::kPermissionDenied, "not a party");
  bad.emplace_back(honest, with([](proto::TileMove& t) { t.set_node_descriptor("garbage"); }), StatusCode::kInvalidArgument,
                   "descriptor does not parse");
  bad.emplace_back(honest, with([](proto::TileMove& t) { t.clear_node_descriptor(); }), StatusCode::kInvalidArgument,
                   "no descriptor in the first round");
  bad.emplace_back(honest, with([&](proto::TileMove& t) {
                     t.set_node_descriptor(other.node_descriptor());
                     t.set_node_descriptor_proof(other.node_descriptor_proof());
                   }),
                   StatusCode::kInvalidArgument, "a node that does not write the leaf");
  bad.emplace_back(honest, with([&](proto::TileMove& t) { t.set_node_descriptor_proof(other.node_descriptor_proof()); }),
                   StatusCode::kInvalidArgument, "a proof of another descriptor");
  bad.emplace_back(honest, with([](proto::TileMove& t) { t.set_block_root(std::string(32, '\x05')); }),
                   StatusCode::kInvalidArgument, "a block root that does not give the leaf");
  bad.emplace_back(honest, with([](proto::TileMove& t) { t.set_block_root("short"); }), StatusCode::kInvalidArgument,
                   "a short block root");
  bad.emplace_back(honest, with([](proto::TileMove& t) { t.set_left(std::string(32, '\x06')); }),
                   StatusCode::kInvalidArgument, "children that do not give the root");
  bad.emplace_back(honest, with([](proto::TileMove& t) { t.clear_right(); }), StatusCode::kInvalidArgument,
                   "a missing child");
  proto::DisputeMoveTx chain = *good;
  chain.mutable_chain()->set_state_hash(std::string(32, '\x01'));
  bad.emplace_back(honest, chain, StatusCode::kFailedPrecondition, "a chain move while descending tiles");
  proto::DisputeMoveTx graph = *good;
  graph.mutable_graph()->set_left(std::string(32, '\x01'));
  graph.mutable_graph()->set_right(std::string(32, '\x02'));
  bad.emplace_back(honest, graph, StatusCode::kFailedPrecondition, "a graph move while descending tiles");
  proto::DisputeMoveTx referee = *good;
  referee.mutable_referee();
  bad.emplace_back(runner.flow().outsider, referee, StatusCode::kFailedPrecondition, "evidence before the referee");
  ExpectRefused(runner, bad);
  // The good move still works, and a second one in the round is refused (one block: the round's
  // deadline is near).
  const BlockResult twice = runner.flow().chain.Block({runner.flow().chain.Tx(honest, payload::kDisputeMove, *good),
                                                       runner.flow().chain.Tx(honest, payload::kDisputeMove, *good)});
  ASSERT_EQ(twice.tx_results.size(), 2u);
  EXPECT_EQ(twice.tx_results[0].code, StatusCode::kOk) << twice.tx_results[0].log;
  EXPECT_EQ(twice.tx_results[1].code, StatusCode::kAlreadyExists) << twice.tx_results[1].log;
  // Later rounds (the other party completes the first): no descriptor or root any more, and
  // children of the party's current node.
  runner.PlayRound();
  ASSERT_EQ(runner.Game().phase(), proto::GAME_TILES);
  ASSERT_LT(runner.Game().tile_level(), runner.Game().tile_depth());
  std::optional<proto::DisputeMoveTx> later = runner.HonestMove();
  ASSERT_TRUE(later && later->has_tile());
  good = later;
  bad.clear();
  bad.emplace_back(honest, with([&](proto::TileMove& t) {
                     t.set_node_descriptor(other.node_descriptor());
                     t.set_node_descriptor_proof(other.node_descriptor_proof());
                   }),
                   StatusCode::kInvalidArgument, "a descriptor after the first round");
  bad.emplace_back(honest, with([](proto::TileMove& t) { t.set_block_root(std::string(32, '\x05')); }),
                   StatusCode::kInvalidArgument, "a block root after the first round");
  bad.emplace_back(honest, with([](proto::TileMove& t) { t.set_right(std::string(32, '\x07')); }),
                   StatusCode::kInvalidArgument, "children that do not give the current node");
  ExpectRefused(runner, bad);
  EXPECT_EQ(runner.flow().chain.Run(honest, payload::kDisputeMove, *good).code, StatusCode::kOk);
}

TEST(DisputeGame, MalformedChainMovesAndTileEvidenceAreRefusedWithAReasonAndChangeNothing) {
  const Tamper tamper{3, 2, 0, 3};  // sum, first block: its chain is bisected
  GameRunner runner(Scenario::kCheatingSolverDisputesReject, 4, 2, tamper, Plan{false, tamper, 0, false, -1, {}}, 8);
  runner.PlayUntil(proto::GAME_CHAIN);
  ASSERT_EQ(runner.Game().phase(), proto::GAME_CHAIN);
  const PubKey honest = runner.honest();
  std::optional<proto::DisputeMoveTx> good = runner.HonestMove();
  ASSERT_TRUE(good && good->has_chain());
  std::vector<std::tuple<PubKey, proto::DisputeMoveTx, StatusCode, const char*>> bad;
  proto::DisputeMoveTx m = *good;
  m.mutable_chain()->set_state_hash("short");
  bad.emplace_back(honest, m, StatusCode::kInvalidArgument, "a short state hash");
  m = *good;
  m.set_round(good->round() + 1);
  bad.emplace_back(honest, m, StatusCode::kFailedPrecondition, "another round");
  bad.emplace_back(runner.flow().outsider, *good, StatusCode::kPermissionDenied, "not a party");
  m = *good;
  m.mutable_tile()->set_left(std::string(32, '\x01'));
  bad.emplace_back(honest, m, StatusCode::kFailedPrecondition, "a tile move while bisecting the chain");
  ExpectRefused(runner, bad);
  EXPECT_EQ(runner.flow().chain.Run(honest, payload::kDisputeMove, *good).code, StatusCode::kOk);

  // At the referee: the honest evidence for the disputed box, and ways to break it.
  runner.PlayUntil(proto::GAME_REFEREE);
  const proto::DisputeGame game = runner.Game();
  ASSERT_EQ(game.phase(), proto::GAME_REFEREE);
  ASSERT_GT(game.chain_lo(), 0u) << "the parties agree on every partial sum";
  good = runner.HonestMove();
  ASSERT_TRUE(good && good->has_referee());
  ASSERT_EQ(good->referee().tile_inputs_size(), 1);
  ASSERT_GE(good->referee().tile_inputs(0).blocks_size(), 1);
  auto with = [&](auto edit) {
    proto::DisputeMoveTx e = *good;
    edit(*e.mutable_referee());
    return e;
  };
  const PubKey anyone = runner.flow().outsider;  // evidence is checked on its merits, whoever posts it
  bad.clear();
  bad.emplace_back(anyone, with([](proto::RefereeMove& r) { r.clear_tile_inputs(); }), StatusCode::kInvalidArgument,
                   "no inputs");
  bad.emplace_back(anyone, with([](proto::RefereeMove& r) { r.add_tile_inputs(); }), StatusCode::kInvalidArgument,
                   "an extra input");
  bad.emplace_back(anyone, with([](proto::RefereeMove& r) { r.mutable_tile_inputs(0)->mutable_blocks()->RemoveLast(); }),
                   StatusCode::kInvalidArgument, "a block the box reads is missing");
  bad.emplace_back(anyone, with([](proto::RefereeMove& r) { r.mutable_tile_inputs(0)->mutable_blocks(0)->pop_back(); }),
                   StatusCode::kInvalidArgument, "a block of the wrong size");
  bad.emplace_back(anyone, with([](proto::RefereeMove& r) { (*r.mutable_tile_inputs(0)->mutable_blocks(0))[5] ^= 1; }),
                   StatusCode::kInvalidArgument, "a changed element");
  bad.emplace_back(anyone, with([](proto::RefereeMove& r) { r.mutable_tile_inputs(0)->set_block_root(std::string(32, '\x03')); }),
                   StatusCode::kInvalidArgument, "another block root");
  bad.emplace_back(anyone, with([](proto::RefereeMove& r) {
                     if (r.tile_inputs(0).siblings_size() > 0) {
                       (*r.mutable_tile_inputs(0)->mutable_siblings(0))[0] ^= 1;
                     } else {
                       r.mutable_tile_inputs(0)->add_siblings(std::string(32, '\x04'));
                     }
                   }),
                   StatusCode::kInvalidArgument, "a wrong path to the agreed input leaf");
  bad.emplace_back(anyone, with([](proto::RefereeMove& r) { r.mutable_tile_inputs(0)->add_proof(std::string(32, '\x04')); }),
                   StatusCode::kInvalidArgument, "a multiproof of the wrong length");
  bad.emplace_back(anyone, with([](proto::RefereeMove& r) { r.clear_lo_state(); }), StatusCode::kInvalidArgument,
                   "no agreed partial state");
  bad.emplace_back(anyone, with([](proto::RefereeMove& r) { (*r.mutable_lo_state())[0] ^= 1; }), StatusCode::kInvalidArgument,
                   "a partial state that is not the agreed one");
  bad.emplace_back(anyone, with([](proto::RefereeMove& r) { r.mutable_lo_state()->append("1234"); }),
                   StatusCode::kInvalidArgument, "a partial state of the wrong size");
  ExpectRefused(runner, bad);
  // The honest evidence, posted by anyone, decides the game for the honest party.
  EXPECT_EQ(runner.flow().chain.Run(anyone, payload::kDisputeMove, *good).code, StatusCode::kOk);
  EXPECT_EQ(runner.Game().phase(), proto::GAME_RESOLVED);
  EXPECT_EQ(runner.Game().winner(), Raw(honest)) << runner.Game().ruling();
}

}  // namespace
}  // namespace polnode::contracts::testing
