// verifier::DisputePlayer on the ledger's records of real games: who has something to post and
// when, what it refuses to play, and that a player rebuilt from nothing (a restarted daemon)
// posts exactly what the one it replaces would have.
#include "polnode/verifier/dispute_player.h"

#include <gtest/gtest.h>

#include <memory>

#include "polnode/testing/tiny_task.h"
#include "real_match.h"

namespace polnode::dispute_testing {
namespace {

using MaybeMove = std::optional<proto::DisputeMoveTx>;

class DisputePlayerTest : public ::testing::Test {
 protected:
  // A match over the MLP whose cheat (or lie) corrupts fc2.matmul at step 13 (segment 2), set up
  // to the opening.
  std::unique_ptr<RealMatch> Match(Scenario scenario) {
    MatchOptions options;
    options.scenario = scenario;
    options.task = MlpTask(data_);
    options.tamper = solver::TamperSpec{13, NodeIndex(GraphOf(options.task, data_), "fc2.matmul"), 0, 22};
    auto match = std::make_unique<RealMatch>(data_, options);
    match->Setup();
    return match;
  }

  static std::optional<verifier::DisputePlayer> Player(verifier::PlayerContext context) {
    Result<verifier::DisputePlayer> player = verifier::DisputePlayer::Create(std::move(context));
    EXPECT_TRUE(player.ok()) << player.status().ToString();
    if (!player.ok()) return std::nullopt;
    return std::move(player).value();
  }

  // The player's next move in the match's game; fails the test on an error.
  static MaybeMove Next(verifier::DisputePlayer& player, RealMatch& match) {
    Result<MaybeMove> move = player.NextMove(match.LedgerTask(), match.Game());
    EXPECT_TRUE(move.ok()) << move.status().ToString();
    return move.ok() ? *move : std::nullopt;
  }

  const solver::ImageDataset data_ = solver::testing::TinyDataset();
};

TEST_F(DisputePlayerTest, CreateRefusesAnIncompleteContext) {
  const solver::TaskSpec task = MlpTask(data_);
  const Proof proof = ProveTask(task, data_, std::nullopt);
  std::unique_ptr<kernels::Backend> backend = kernels::MakeReferenceBackend();
  verifier::PlayerContext good;
  good.task = &task;
  good.data = &data_;
  good.backend = backend.get();
  good.key = std::string(32, '\x03');
  good.checkpoint_hashes = proof.manifest.checkpoint_hashes;
  good.load_checkpoint = proof.Loader();
  good.suspect_segments = {7, 0};
  EXPECT_TRUE(verifier::DisputePlayer::Create(good).ok());
  std::vector<verifier::PlayerContext> bad(6, good);
  bad[0].task = nullptr;
  bad[1].backend = nullptr;
  bad[2].load_checkpoint = nullptr;
  bad[3].key = "short";
  bad[4].checkpoint_hashes.pop_back();
  bad[5].suspect_segments = {8};  // 8 segments: 0..7
  for (std::size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(verifier::DisputePlayer::Create(bad[i]).status().code(), StatusCode::kInvalidArgument) << i;
  }
}

TEST_F(DisputePlayerTest, OnlyPartiesWithSomethingToSayPost) {
  std::unique_ptr<RealMatch> match = Match(Scenario::kCheatingSolverDisputesReject);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  std::optional<verifier::DisputePlayer> outsider = Player(match->ContextFor(match->flow().outsider, true));
  std::optional<verifier::DisputePlayer> defender = Player(match->ContextFor(match->dishonest(), false));
  std::optional<verifier::DisputePlayer> challenger = Player(match->ContextFor(match->honest(), true));
  ASSERT_TRUE(outsider && defender && challenger);
  EXPECT_FALSE(Next(*outsider, *match).has_value());
  EXPECT_FALSE(Next(*defender, *match).has_value()) << "only the challenger opens";
  const MaybeMove open = Next(*challenger, *match);
  ASSERT_TRUE(open.has_value() && open->has_open());
  EXPECT_EQ(open->open().segment(), 2u);

  // A record of another task, a game over another proof, or a ledger task that commits to another
  // step graph.
  proto::DisputeGame other_game = match->Game();
  other_game.set_task_id(std::string(32, '\x01'));
  EXPECT_EQ(challenger->NextMove(match->LedgerTask(), other_game).status().code(), StatusCode::kInvalidArgument);
  other_game = match->Game();
  other_game.set_proof_root(std::string(32, '\x02'));
  EXPECT_EQ(challenger->NextMove(match->LedgerTask(), other_game).status().code(), StatusCode::kFailedPrecondition);
  proto::Task other_task = match->LedgerTask();
  other_task.mutable_spec()->set_graph_root(std::string(32, '\x02'));
  std::optional<verifier::DisputePlayer> fresh = Player(match->ContextFor(match->honest(), true));
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->NextMove(other_task, match->Game()).status().code(), StatusCode::kFailedPrecondition);

  match->Play();
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  EXPECT_EQ(match->Game().phase(), proto::GAME_RESOLVED);
  EXPECT_FALSE(Next(*challenger, *match).has_value()) << "nothing to post once the game is decided";
  EXPECT_FALSE(Next(*defender, *match).has_value());
}

TEST_F(DisputePlayerTest, ChallengerOpensTheFirstWrongSegmentSuspectsFirstAndNothingOnARightProof) {
  std::unique_ptr<RealMatch> cheat = Match(Scenario::kCheatingSolverDisputesReject);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  const std::vector<std::vector<std::uint64_t>> suspect_lists = {{}, {5, 0}, {2}, {7, 2, 1}};
  for (const std::vector<std::uint64_t>& suspects : suspect_lists) {
    verifier::PlayerContext context = cheat->ContextFor(cheat->honest(), true);
    context.suspect_segments = suspects;
    std::optional<verifier::DisputePlayer> player = Player(std::move(context));
    ASSERT_TRUE(player);
    const MaybeMove open = Next(*player, *cheat);
    ASSERT_TRUE(open.has_value() && open->has_open());
    EXPECT_EQ(open->open().segment(), 2u);
    EXPECT_NE(open->open().claimed_end_hash(), open->open().end_hash());
  }

  // The verifier that rejected an honest proof: replayed honestly, no segment is wrong, so there
  // is nothing to open; replayed with its lie, the lie's segment.
  std::unique_ptr<RealMatch> honest_proof = Match(Scenario::kLazyVerifierRejectedHonest);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  std::optional<verifier::DisputePlayer> truthful = Player(honest_proof->ContextFor(honest_proof->dishonest(), true));
  std::optional<verifier::DisputePlayer> liar = Player(honest_proof->ContextFor(honest_proof->dishonest(), false));
  ASSERT_TRUE(truthful && liar);
  EXPECT_FALSE(Next(*truthful, *honest_proof).has_value());
  const MaybeMove lie = Next(*liar, *honest_proof);
  ASSERT_TRUE(lie.has_value() && lie->has_open());
  EXPECT_EQ(lie->open().segment(), 2u);
}

TEST_F(DisputePlayerTest, PostsOncePerRoundAndARestartedPlayerPostsTheSameMove) {
  std::unique_ptr<RealMatch> match = Match(Scenario::kCheatingSolverDisputesReject);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  std::optional<verifier::DisputePlayer> challenger = Player(match->ContextFor(match->honest(), true));
  std::optional<verifier::DisputePlayer> defender = Player(match->ContextFor(match->dishonest(), false));
  ASSERT_TRUE(challenger && defender);
  const MaybeMove open = Next(*challenger, *match);
  ASSERT_TRUE(open.has_value());
  ASSERT_EQ(match->Post({{match->honest(), *open}}).tx_results.at(0).code, StatusCode::kOk);
  ASSERT_EQ(match->Game().phase(), proto::GAME_STEPS);
  // Only the challenger moves in this round: it has nothing more to post, the defender has.
  const MaybeMove step = Next(*challenger, *match);
  ASSERT_TRUE(step.has_value() && step->has_step());
  ASSERT_EQ(match->Post({{match->honest(), *step}}).tx_results.at(0).code, StatusCode::kOk);
  EXPECT_FALSE(Next(*challenger, *match).has_value());
  const MaybeMove answer = Next(*defender, *match);
  ASSERT_TRUE(answer.has_value() && answer->has_step());
  // A restarted defender, knowing only the ledger, answers with the same bytes.
  std::optional<verifier::DisputePlayer> restarted = Player(match->ContextFor(match->dishonest(), false));
  ASSERT_TRUE(restarted);
  const MaybeMove again = Next(*restarted, *match);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->SerializeAsString(), answer->SerializeAsString());
  // The match's own players take over from here and the honest challenger still wins.
  match->Play();
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  EXPECT_EQ(match->Game().winner(), contracts::testing::Raw(match->honest()));
}

TEST_F(DisputePlayerTest, AReplayThatContradictsThePartysOwnClaimIsAnErrorNotAMove) {
  // The lazy verifier that accepted a cheat defends the proof, but replays honestly: it agrees
  // with the challenger on every level-1 hash, so its claim for the segment's end stays the
  // proof's, which its own tree for the last step cannot hold.
  std::unique_ptr<RealMatch> match = Match(Scenario::kLazyVerifierAcceptedCheat);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  std::optional<verifier::DisputePlayer> challenger = Player(match->ContextFor(match->honest(), true));
  std::optional<verifier::DisputePlayer> defender = Player(match->ContextFor(match->dishonest(), true));
  ASSERT_TRUE(challenger && defender);
  for (int round = 0; round < 8 && match->Game().phase() != proto::GAME_GRAPH; ++round) {
    std::vector<std::pair<PubKey, proto::DisputeMoveTx>> moves;
    for (auto [player, key] : {std::pair{&*challenger, match->honest()}, std::pair{&*defender, match->dishonest()}}) {
      const MaybeMove move = Next(*player, *match);
      if (move) moves.emplace_back(key, *move);
    }
    for (const contracts::TxResult& r : match->Post(moves).tx_results) EXPECT_EQ(r.code, StatusCode::kOk) << r.log;
  }
  const proto::DisputeGame game = match->Game();
  ASSERT_EQ(game.phase(), proto::GAME_GRAPH);
  EXPECT_EQ(game.first_step() + game.lo(), 14u) << "every level-1 hash agreed, up to the segment's last step";
  EXPECT_EQ(defender->NextMove(match->LedgerTask(), game).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Next(*challenger, *match).has_value());
}

TEST_F(DisputePlayerTest, ACheckpointThatIsNotTheProofsIsCorruption) {
  std::unique_ptr<RealMatch> match = Match(Scenario::kCheatingSolverDisputesReject);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  verifier::PlayerContext context = match->ContextFor(match->honest(), true);
  const verifier::CheckpointLoader real = context.load_checkpoint;
  context.load_checkpoint = [real](std::uint64_t checkpoint) { return real(checkpoint + 1); };
  std::optional<verifier::DisputePlayer> player = Player(std::move(context));
  ASSERT_TRUE(player);
  EXPECT_EQ(player->NextMove(match->LedgerTask(), match->Game()).status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace polnode::dispute_testing
