// verifier::DisputePlayer in a forced round's game (protocol v5): segments start from the
// committed (falsified) proof, whose root is the game's start_root, and end at the result proof,
// whose root is its proof_root. Over the honest result proof a challenger finds nothing to open;
// over a cheat it opens the cheated segment with the start proven against the committed root and
// the end against the result root; a player that took the committed proof for the proof on trial
// would "find" the falsified checkpoints instead.
#include "polnode/verifier/dispute_player.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>

#include "polnode/consensus/merkle.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/forced_round.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/tampering_backend.h"
#include "polnode/solver/task_binding.h"
#include "polnode/solver/task_steps.h"
#include "polnode/testing/fashion_mnist.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_task.h"

namespace polnode::verifier {
namespace {

std::string Raw(const consensus::Hash256& h) { return std::string(h.begin(), h.end()); }

consensus::Hash256 HashOf(const std::string& raw) {
  consensus::Hash256 h{};
  std::copy_n(raw.begin(), std::min(raw.size(), h.size()), h.begin());
  return h;
}

consensus::SecretKey Key() {
  std::array<std::uint8_t, 32> bytes{};
  bytes.fill(0x31);
  return *consensus::SecretKey::FromBytes(bytes);
}

class ForcedGamePlayerTest : public ::testing::Test {
 protected:
  // A forced round of the tiny task (forced checkpoints 3 and 8), trained honestly or with
  // `tamper`: the committed proof in committed_, the result proof in result_.
  void Prove(std::optional<solver::TamperSpec> tamper) {
    round_.secret = std::string(32, 's');
    round_.forced_seed = std::string(32, 'f');
    round_.task_id = std::string(32, 't');
    round_.checkpoints = {3, 8};
    std::unique_ptr<kernels::Backend> reference = kernels::MakeReferenceBackend();
    std::unique_ptr<solver::TamperingBackend> tampering;
    if (tamper) {
      Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task_, data_);
      ASSERT_TRUE(stepper.ok());
      tampering = std::make_unique<solver::TamperingBackend>(*reference, stepper->graph().nodes.size(), *tamper);
    }
    const consensus::SecretKey key = Key();
    solver::ProveOptions options;
    options.out_dir = committed_dir_.path();
    options.key = &key;
    options.on_checkpoint = solver::ForcedCheckpointHook(round_, task_.checkpoint_interval);
    Result<solver::ProveResult> proved = solver::Prove(task_, data_, tampering ? *tampering : *reference, options);
    ASSERT_TRUE(proved.ok()) << proved.status().ToString();
    committed_ = proved->manifest;
    ASSERT_TRUE(solver::WriteResultProof(committed_dir_.path(), result_dir_.path(), round_, key).ok());
    Result<solver::ProofDir> result = solver::OpenProofDir(result_dir_.path());
    ASSERT_TRUE(result.ok());
    result_ = result->manifest;
  }

  // The challenger's context: the result proof on trial, segments starting from the committed one.
  PlayerContext Context() {
    PlayerContext context;
    context.task = &task_;
    context.data = &data_;
    context.backend = backend_.get();
    context.key = std::string(32, '\x07');
    context.checkpoint_hashes = result_.checkpoint_hashes;
    context.start_hashes = committed_.checkpoint_hashes;
    const std::string dir = committed_dir_.path();
    context.load_checkpoint = [dir](std::uint64_t checkpoint) -> Result<solver::TrainState> {
      POLNODE_ASSIGN_OR_RETURN(solver::ProofDir proof, solver::OpenProofDir(dir));
      POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, proof.store.Get(proof.manifest.checkpoint_blobs[checkpoint]));
      return solver::DecodeState(bytes);
    };
    return context;
  }

  proto::Task LedgerTask() const {
    proto::Task task;
    task.set_id(round_.task_id);
    *task.mutable_spec() = *solver::LedgerSpecFor(task_, data_, solver::TaskTerms{1000, 20, 40});
    task.set_proof_root(Raw(result_.merkle_root));
    task.set_forced_root(Raw(committed_.merkle_root));
    return task;
  }

  proto::DisputeGame Opening() const {
    proto::DisputeGame game;
    game.set_task_id(round_.task_id);
    game.mutable_challenger()->set_key(std::string(32, '\x07'));
    game.mutable_defender()->set_key(std::string(32, '\x08'));
    game.set_phase(proto::GAME_OPENING);
    game.set_proof_root(Raw(result_.merkle_root));
    game.set_start_root(Raw(committed_.merkle_root));
    return game;
  }

  const solver::ImageDataset data_ = solver::testing::TinyDataset();
  const solver::TaskSpec task_ = solver::testing::TinyTask(data_);
  std::unique_ptr<kernels::Backend> backend_ = kernels::MakeReferenceBackend();
  polnode::testing::TempDir committed_dir_{"forced-game-committed"}, result_dir_{"forced-game-result"};
  solver::ForcedRound round_;
  solver::ProofManifest committed_, result_;
};

TEST_F(ForcedGamePlayerTest, NothingToOpenOverAnHonestResultProofFromTheCommittedStarts) {
  Prove(std::nullopt);
  ASSERT_FALSE(HasFatalFailure());
  Result<DisputePlayer> player = DisputePlayer::Create(Context());
  ASSERT_TRUE(player.ok()) << player.status().ToString();
  Result<std::optional<proto::DisputeMoveTx>> move = player->NextMove(LedgerTask(), Opening());
  ASSERT_TRUE(move.ok()) << move.status().ToString();
  EXPECT_FALSE(move->has_value()) << "every segment replays from its committed start to the result proof's end";

  // Taking the committed proof for the proof on trial, the falsified checkpoint 3 looks wrong.
  PlayerContext committed_only = Context();
  committed_only.checkpoint_hashes = committed_.checkpoint_hashes;
  committed_only.start_hashes.clear();
  Result<DisputePlayer> naive = DisputePlayer::Create(std::move(committed_only));
  ASSERT_TRUE(naive.ok());
  proto::DisputeGame over_committed = Opening();
  over_committed.set_proof_root(Raw(committed_.merkle_root));
  move = naive->NextMove(LedgerTask(), over_committed);
  ASSERT_TRUE(move.ok()) << move.status().ToString();
  ASSERT_TRUE(move->has_value() && (*move)->has_open());
  EXPECT_EQ((*move)->open().segment(), 2u);

  // A game whose segments start from another proof is refused; so are start hashes that do not
  // match the proof's length.
  proto::DisputeGame other_start = Opening();
  other_start.set_start_root(std::string(32, '\x02'));
  EXPECT_EQ(player->NextMove(LedgerTask(), other_start).status().code(), StatusCode::kFailedPrecondition);
  PlayerContext short_starts = Context();
  short_starts.start_hashes.pop_back();
  EXPECT_EQ(DisputePlayer::Create(std::move(short_starts)).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ForcedGamePlayerTest, ACheatInTheResultProofIsOpenedWithItsStartProvenAgainstTheCommittedRoot) {
  // A flip at step 27 (segment 5) that does not live on past the step's forward pass.
  Prove(solver::TamperSpec{27, 3, 0, 22});
  ASSERT_FALSE(HasFatalFailure());
  Result<DisputePlayer> player = DisputePlayer::Create(Context());
  ASSERT_TRUE(player.ok()) << player.status().ToString();
  Result<std::optional<proto::DisputeMoveTx>> move = player->NextMove(LedgerTask(), Opening());
  ASSERT_TRUE(move.ok()) << move.status().ToString();
  ASSERT_TRUE(move->has_value() && (*move)->has_open());
  const proto::OpenMove& open = (*move)->open();
  EXPECT_EQ(open.segment(), 5u);
  EXPECT_EQ(open.start_hash(), Raw(committed_.checkpoint_hashes[5]));
  EXPECT_EQ(open.end_hash(), Raw(result_.checkpoint_hashes[6]));
  EXPECT_NE(open.claimed_end_hash(), open.end_hash());
  const auto proves = [](const std::string& bytes, const std::string& root, const std::string& leaf) {
    Result<consensus::MerkleProof> proof =
        consensus::ParseMerkleProof(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
    return proof.ok() && consensus::VerifyMerkleProof(HashOf(root), HashOf(leaf), *proof).ok();
  };
  EXPECT_TRUE(proves(open.start_proof(), Raw(committed_.merkle_root), open.start_hash()));
  EXPECT_TRUE(proves(open.end_proof(), Raw(result_.merkle_root), open.end_hash()));
}

}  // namespace
}  // namespace polnode::verifier
