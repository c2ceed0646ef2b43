// The pinpoint dispute game on the contracts' state machine, played over GameWorld's tiny model:
// cheating solvers and lazy verifiers are pinpointed to the exact step and operator, every
// timeout path decides, malformed moves change nothing, and in >= 100 randomised games an honest
// party never loses whatever the dishonest one does.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "game_world.h"
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
      : world_(k, segments), scenario_(scenario), rng_(seed), dishonest_plan_(std::move(dishonest)) {
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

  // Plays to the reveal: the game is opening.
  void Setup() {
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

  GameWorld& world() { return world_; }
  /// From this round on the honest party posts nothing either (timeout tests).
  void SilenceHonestFrom(std::int64_t round) { honest_silent_from_ = round; }
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
    if (!honest && (Lies() || claimed == open->end_hash())) claimed = RandomHash();
    open->set_claimed_end_hash(claimed);
    return move;
  }

  // The party's tree over the step the game descends (the dishonest one's possibly doctored).
  consensus::GameTree StepTree(const proto::DisputeGame& game, bool honest) {
    const std::uint64_t step = game.first_step() + game.lo();
    std::vector<Hash256> leaves = world_.Leaves(View(honest)[step], step, ViewTamper(honest));
    if (!honest) {
      const proto::GameSide& side = Raw(dishonest_) == game.challenger().key() ? game.challenger() : game.defender();
      std::copy(side.hi_hash().begin(), side.hi_hash().end(), leaves.back().begin());
      if (dishonest_plan_.lie_about_inputs) leaves[rng_() % 4][0] ^= 1;
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
      case proto::GAME_REFEREE: {
        proto::DisputeMoveTx move = Move(game);
        const std::uint64_t step = game.first_step() + game.lo();
        if (!honest) {
          // Evidence for its own story: rejected unless it is the truth.
          *move.mutable_referee() = world_.Evidence(View(false)[step], step, game.leaf(), *trees_[0], ViewTamper(false));
          return move;
        }
        *move.mutable_referee() = world_.Evidence(truth_[step], step, game.leaf(), *trees_[1], std::nullopt);
        return move;
      }
      default:
        return std::nullopt;
    }
  }

  void PlayRound() {
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
};

TEST(DisputeGame, CheatingSolverIsPinpointedToItsStepAndOperatorAndSlashed) {
  for (int node : {0, 1}) {
    const Tamper tamper{13, node};  // segment 1 of k = 8
    GameRunner runner(Scenario::kCheatingSolverDisputesReject, 8, 3, tamper, Plan{false, tamper, 0, false}, 1);
    const std::uint64_t solver_bonded = runner.flow().chain.Stake(proto::ROLE_SOLVER, runner.flow().solver).bonded();
    const Outcome outcome = runner.Play();
    EXPECT_TRUE(outcome.honest_won) << outcome.game.ruling();
    EXPECT_EQ(outcome.game.segment(), 1u);
    EXPECT_EQ(outcome.game.first_step() + outcome.game.lo(), 13u);
    EXPECT_EQ(outcome.game.leaf(), node == 0 ? 4u : 5u);  // the tampered operator's output
    EXPECT_TRUE(outcome.game.challenger_won());
    EXPECT_FALSE(outcome.game.forfeit());
    EXPECT_EQ(outcome.task.status(), proto::TASK_SETTLED);
    EXPECT_EQ(outcome.task.outcome(), proto::OUTCOME_REJECTED);
    EXPECT_EQ(outcome.task.standing(), proto::PROOF_DISPROVEN);
    EXPECT_EQ(outcome.task.disproven_segment(), 1u);
    EXPECT_EQ(runner.flow().chain.Stake(proto::ROLE_SOLVER, runner.flow().solver).bonded(), solver_bonded - 1'000);
    // Rounds: opening + ceil(log2 8) steps + ceil(log2 7) graph + the referee.
    EXPECT_EQ(outcome.game.moves_size(), 2 * (3 + 3) + 1 + 1);
    // Bytes posted, for the report (visible with --gtest_output=xml).
    // The last recorded move is the referee's evidence, which decided the game.
    std::size_t move_bytes = 0;
    for (int i = 0; i + 1 < outcome.game.moves_size(); ++i) move_bytes += outcome.game.moves(i).payload().size();
    const std::size_t referee_bytes = outcome.game.moves(outcome.game.moves_size() - 1).payload().size();
    RecordProperty("move_payload_bytes_without_referee", static_cast<int>(move_bytes));
    RecordProperty("referee_payload_bytes", static_cast<int>(referee_bytes));
    // The auditor's re-execution agrees with the ledger, and names the operator.
    Result<GameAudit> audit = AuditGame(runner.flow().chain.params(), outcome.task, outcome.game);
    ASSERT_TRUE(audit.ok()) << audit.status().ToString();
    EXPECT_TRUE(audit->differences.empty()) << audit->differences.front();
    EXPECT_EQ(audit->result, proto::GAME_CHALLENGER_WON);
    ASSERT_TRUE(audit->node.has_value());
    EXPECT_EQ(audit->node->name(), node == 0 ? "add" : "relu");
    // A ledger that recorded another ruling, or a move it should have refused, is caught.
    proto::DisputeGame forged = outcome.game;
    forged.set_challenger_won(false);
    EXPECT_FALSE(AuditGame(runner.flow().chain.params(), outcome.task, forged)->differences.empty());
    forged = outcome.game;
    proto::DisputeMoveTx move;
    ASSERT_TRUE(move.ParseFromString(forged.moves(3).payload()));
    move.mutable_step()->set_state_hash(std::string(32, '\x07'));
    forged.mutable_moves(3)->set_payload(move.SerializeAsString());
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
  const Tamper tamper{5, 0};
  GameRunner runner(Scenario::kLazyVerifierAcceptedCheat, 4, 4, tamper, Plan{false, tamper, 0, false}, 2);
  TaskFlow& flow = runner.flow();
  const PubKey wb = flow.whistleblower;
  const std::uint64_t solver_bonded = flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded();
  const Outcome outcome = runner.Play();
  EXPECT_TRUE(outcome.honest_won) << outcome.game.ruling();
  EXPECT_EQ(outcome.game.defender().key(), Raw(flow.solver));
  EXPECT_EQ(outcome.game.first_step() + outcome.game.lo(), 5u);
  EXPECT_EQ(outcome.game.leaf(), 4u);
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
  const Tamper lie{2, 1};
  GameRunner runner(Scenario::kLazyVerifierRejectedHonest, 4, 2, std::nullopt, Plan{false, lie, 0, false}, 3);
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
  int referee_rulings = 0;
  for (int i = 0; i < 120; ++i) {
    const Scenario scenario = static_cast<Scenario>(rng() % 4);
    const std::uint64_t k = 1 + rng() % 9;
    const std::uint64_t segments = 1 + rng() % 3;
    const std::uint64_t steps = k * segments;
    const bool proof_wrong =
        scenario == Scenario::kCheatingSolverDisputesReject || scenario == Scenario::kLazyVerifierAcceptedCheat;
    std::optional<Tamper> solver_tamper;
    if (proof_wrong) solver_tamper = Tamper{rng() % steps, static_cast<int>(rng() % 2)};
    Plan dishonest{false, std::nullopt, 0.15 * static_cast<double>(rng() % 4), rng() % 3 == 0};
    // A dishonest defender of a wrong proof tells the proof's story; a dishonest challenger of an
    // honest proof invents a wrong step somewhere.
    dishonest.tamper = proof_wrong ? solver_tamper : std::optional<Tamper>(Tamper{rng() % steps, static_cast<int>(rng() % 2)});
    GameRunner runner(scenario, k, segments, solver_tamper, dishonest, rng());
    const Outcome outcome = runner.Play();
    ASSERT_EQ(outcome.game.phase(), proto::GAME_RESOLVED) << "game " << i;
    EXPECT_TRUE(outcome.honest_won) << "game " << i << " scenario " << static_cast<int>(scenario) << " k " << k
                                    << ": " << outcome.game.ruling();
    EXPECT_EQ(outcome.task.status(), proto::TASK_SETTLED);
    if (outcome.game.ruling().rfind("leaf", 0) == 0) ++referee_rulings;
    Result<GameAudit> audit = AuditGame(runner.flow().chain.params(), outcome.task, outcome.game);
    ASSERT_TRUE(audit.ok());
    EXPECT_TRUE(audit->differences.empty()) << "game " << i << ": " << audit->differences.front();
  }
  EXPECT_GE(referee_rulings, 30);  // most games reach the referee, not only timeouts
}

TEST(DisputeGame, EveryTimeoutPathDecides) {
  const Tamper lie{1, 0};
  struct Case {
    const char* name;
    Scenario scenario;
    std::int64_t dishonest_silent_from;
    std::int64_t honest_silent_from;
    bool honest_wins;
    const char* ruling_prefix;
  };
  const Case cases[] = {
      // The dishonest challenger never opens.
      {"no opening", Scenario::kLazyVerifierRejectedHonest, 0, -1, true, "timeout: the challenger did not open"},
      // The dishonest solver stops in level 1 / level 2; the honest challenger moved.
      {"solver misses a step round", Scenario::kCheatingSolverDisputesReject, 1, -1, true, "timeout: the solver"},
      {"solver misses a graph round", Scenario::kCheatingSolverDisputesReject, 4, -1, true, "timeout: the solver"},
      // Both stop: both owed the round, both forfeit; nobody wins.
      {"both silent", Scenario::kCheatingSolverDisputesReject, 2, 2, false, "timeout: neither party moved"},
      // Nobody posts the referee's evidence (opening round 1, steps 2-4, graph 5-7, referee 8): the
      // solver owes it (review finding 1: the party that owes data loses), here a cheat.
      {"no referee evidence", Scenario::kLazyVerifierAcceptedCheat, 8, 8, true, "timeout: nobody posted"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    GameRunner runner(c.scenario, 8, 1, c.scenario == Scenario::kLazyVerifierRejectedHonest ? std::nullopt : std::optional<Tamper>(lie),
                      Plan{false, lie, 0, false, c.dishonest_silent_from}, 5);
    runner.SilenceHonestFrom(c.honest_silent_from);
    const Outcome outcome = runner.Play();
    EXPECT_EQ(outcome.game.phase(), proto::GAME_RESOLVED);
    EXPECT_EQ(outcome.honest_won, c.honest_wins) << outcome.game.ruling();
    EXPECT_TRUE(outcome.game.ruling().starts_with(c.ruling_prefix)) << outcome.game.ruling();
    EXPECT_EQ(outcome.task.status(), proto::TASK_SETTLED);
    EXPECT_TRUE(outcome.game.forfeit());
    // A timeout never disproves; a solver's forfeit leaves the proof unproven (not paid).
    EXPECT_NE(outcome.task.standing(), proto::PROOF_DISPROVEN);
    EXPECT_EQ(outcome.task.outcome() == proto::OUTCOME_ACCEPTED, outcome.task.standing() == proto::PROOF_UPHELD);
  }
}

TEST(DisputeGame, MalformedMovesAreRejectedWithAReasonAndChangeNothing) {
  const Tamper tamper{3, 0};
  GameRunner runner(Scenario::kCheatingSolverDisputesReject, 4, 2, tamper, Plan{false, tamper, 0, false}, 6);
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
