// A forced round's proofs (forced_round.h): the committed proof is falsified exactly at the forced
// checkpoints and trained on from them, so every segment replayed from a committed checkpoint
// reaches the result proof's next checkpoint; the result proof is the committed one with the
// forced checkpoints restored; an interrupted forced run resumes to the same proofs.
#include "polnode/solver/forced_round.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "polnode/consensus/merkle.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/task_steps.h"
#include "polnode/testing/fashion_mnist.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_task.h"

namespace polnode::solver {
namespace {

consensus::SecretKey TestKey() {
  std::array<std::uint8_t, 32> bytes{};
  bytes.fill(0x23);
  return *consensus::SecretKey::FromBytes(bytes);
}

ForcedRound Round(ReproMode mode, std::vector<std::uint64_t> checkpoints) {
  ForcedRound round;
  round.secret = std::string(32, 's');
  round.forced_seed = std::string(32, 'f');
  round.task_id = std::string(32, 't');
  round.mode = mode;
  round.checkpoints = std::move(checkpoints);
  return round;
}

// The committed and the result proof of `task` forced by `round`, written into `committed_dir`
// and `result_dir`.
struct Proofs {
  ProofManifest committed;
  ProofManifest result;
};

Proofs ProveForced(const TaskSpec& task, const ImageDataset& data, const ForcedRound& round,
                   const std::string& committed_dir, const std::string& result_dir, std::int64_t stop_after = -1) {
  Proofs proofs;
  std::unique_ptr<kernels::Backend> backend = kernels::MakeReferenceBackend();
  const consensus::SecretKey key = TestKey();
  ProveOptions options;
  options.out_dir = committed_dir;
  options.key = &key;
  options.on_checkpoint = ForcedCheckpointHook(round, task.checkpoint_interval);
  if (stop_after >= 0) {
    options.stop_after_step = stop_after;
    EXPECT_EQ(Prove(task, data, *backend, options).status().code(), StatusCode::kFailedPrecondition);
    options.stop_after_step = -1;
  }
  Result<ProveResult> proved = Prove(task, data, *backend, options);
  EXPECT_TRUE(proved.ok()) << proved.status().ToString();
  if (!proved.ok()) return proofs;
  proofs.committed = proved->manifest;
  Result<consensus::Hash256> root = WriteResultProof(committed_dir, result_dir, round, key);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  Result<ProofDir> result = OpenProofDir(result_dir);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (result.ok()) proofs.result = result->manifest;
  if (root.ok()) {
    EXPECT_EQ(*root, proofs.result.merkle_root);
  }
  return proofs;
}

Result<TrainState> Load(const std::string& dir, std::size_t checkpoint) {
  POLNODE_ASSIGN_OR_RETURN(ProofDir proof, OpenProofDir(dir));
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, proof.store.Get(proof.manifest.checkpoint_blobs[checkpoint]));
  return DecodeState(bytes);
}

TEST(ForcedRoundTest, FalsificationIsItsOwnInverseAndDrawnFromTheRound) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = testing::TinyTask(data);
  Result<TaskStepper> stepper = TaskStepper::Create(task, data);
  ASSERT_TRUE(stepper.ok());
  const TrainState initial = stepper->Initial();
  for (ReproMode mode : {ReproMode::kExact, ReproMode::kTolerant}) {
    const ForcedRound round = Round(mode, {3});
    TrainState state = initial;
    ASSERT_TRUE(FalsifyCheckpoint(state, round, 3).ok());
    EXPECT_NE(StateHash(state), StateHash(initial));
    const kernels::Tensor& before = initial.tensors[0].tensor;
    const kernels::Tensor& after = state.tensors[0].tensor;
    int changed = 0;
    for (std::int64_t i = 0; i < before.numel(); ++i) {
      std::uint32_t a = 0, b = 0;
      std::memcpy(&a, before.data() + i, 4);
      std::memcpy(&b, after.data() + i, 4);
      if (a == b) continue;
      ++changed;
      // Exact: the lowest mantissa bit of the drawn element; tolerant: every element's sign.
      EXPECT_EQ(a ^ b, mode == ReproMode::kExact ? 1u : 0x80000000u);
      if (mode == ReproMode::kExact) {
        EXPECT_EQ(static_cast<std::uint64_t>(i), FalsifiedElement(round, 3, static_cast<std::uint64_t>(before.numel())));
      }
    }
    EXPECT_EQ(changed, mode == ReproMode::kExact ? 1 : before.numel());
    for (std::size_t t = 1; t < state.tensors.size(); ++t) {
      EXPECT_EQ(TensorHash(state.tensors[t].tensor), TensorHash(initial.tensors[t].tensor)) << "only tensor 0 changes";
    }
    ASSERT_TRUE(FalsifyCheckpoint(state, round, 3).ok());
    EXPECT_EQ(StateHash(state), StateHash(initial));
  }
  // Another checkpoint or another secret draws (almost always) another element.
  const ForcedRound round = Round(ReproMode::kExact, {});
  ForcedRound other = round;
  other.secret = std::string(32, 'x');
  int same = 0;
  for (std::uint64_t k = 1; k <= 32; ++k) {
    same += FalsifiedElement(round, k, 1u << 20) == FalsifiedElement(round, k + 1, 1u << 20);
    same += FalsifiedElement(round, k, 1u << 20) == FalsifiedElement(other, k, 1u << 20);
  }
  EXPECT_LT(same, 2);
  TrainState empty;
  EXPECT_EQ(FalsifyCheckpoint(empty, round, 1).code(), StatusCode::kFailedPrecondition);
}

TEST(ForcedRoundTest, CommittedProofDiffersFromTheResultExactlyAtForcedCheckpointsAndEverySegmentReplaysToTheResult) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = testing::TinyTask(data);  // 8 segments of 5 steps, exact mode
  ASSERT_EQ(task.mode, ReproMode::kExact);
  polnode::testing::TempDir committed_dir("forced-committed"), result_dir("forced-result"), honest_dir("forced-honest");
  const ForcedRound round = Round(ReproMode::kExact, {2, 3, 6, 8});  // two in a row, and the final one
  const Proofs proofs = ProveForced(task, data, round, committed_dir.path(), result_dir.path());
  ASSERT_EQ(proofs.committed.checkpoint_hashes.size(), 9u);
  ASSERT_EQ(proofs.result.checkpoint_hashes.size(), 9u);
  for (std::size_t k = 0; k < 9; ++k) {
    EXPECT_EQ(proofs.committed.checkpoint_hashes[k] != proofs.result.checkpoint_hashes[k], round.Forced(k))
        << "checkpoint " << k;
  }
  EXPECT_NE(proofs.committed.merkle_root, proofs.result.merkle_root);
  EXPECT_EQ(proofs.result.merkle_root, consensus::MerkleRoot(proofs.result.checkpoint_hashes));
  EXPECT_TRUE(proofs.result.is_signed);
  EXPECT_EQ(proofs.result.loss_bits, proofs.committed.loss_bits);
  EXPECT_TRUE(CheckManifestIntegrity(proofs.result).ok());

  // Every segment, replayed from the committed checkpoint it starts at, reaches the result proof's
  // checkpoint at its end (the committed one there exactly when it is not forced).
  Result<TaskStepper> stepper = TaskStepper::Create(task, data);
  ASSERT_TRUE(stepper.ok());
  std::unique_ptr<kernels::Backend> backend = kernels::MakeReferenceBackend();
  for (std::size_t i = 0; i < 8; ++i) {
    Result<TrainState> start = Load(committed_dir.path(), i);
    ASSERT_TRUE(start.ok()) << start.status().ToString();
    EXPECT_EQ(StateHash(*start), proofs.committed.checkpoint_hashes[i]);
    TrainState state = std::move(*start);
    for (std::int64_t step = 0; step < task.checkpoint_interval; ++step) ASSERT_TRUE(stepper->Step(state, *backend).ok());
    EXPECT_EQ(StateHash(state), proofs.result.checkpoint_hashes[i + 1]) << "segment " << i;
  }
  // The result proof's states are served: each blob decodes to the state its hash names.
  for (std::size_t k : {2u, 3u, 8u}) {
    Result<TrainState> state = Load(result_dir.path(), k);
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    EXPECT_EQ(StateHash(*state), proofs.result.checkpoint_hashes[k]);
  }
  // Training on from falsified states is not honest training: after a forced checkpoint the
  // result proof leaves the unforced run's path.
  std::unique_ptr<kernels::Backend> plain = kernels::MakeReferenceBackend();
  const consensus::SecretKey key = TestKey();
  ProveOptions options;
  options.out_dir = honest_dir.path();
  options.key = &key;
  Result<ProveResult> honest = Prove(task, data, *plain, options);
  ASSERT_TRUE(honest.ok());
  EXPECT_EQ(honest->manifest.checkpoint_hashes[1], proofs.result.checkpoint_hashes[1]);
  EXPECT_EQ(honest->manifest.checkpoint_hashes[2], proofs.result.checkpoint_hashes[2]);
  EXPECT_NE(honest->manifest.checkpoint_hashes[3], proofs.result.checkpoint_hashes[3]);
}

TEST(ForcedRoundTest, AnInterruptedForcedRunResumesToTheSameProofs) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = testing::TinyTask(data);
  const ForcedRound round = Round(ReproMode::kExact, {4, 5});
  polnode::testing::TempDir a_committed("forced-a"), a_result("forced-a-result");
  polnode::testing::TempDir b_committed("forced-b"), b_result("forced-b-result");
  const Proofs whole = ProveForced(task, data, round, a_committed.path(), a_result.path());
  // Stopped just after the falsified checkpoint 4 was written (step 20), then resumed from it.
  const Proofs resumed = ProveForced(task, data, round, b_committed.path(), b_result.path(), 22);
  EXPECT_EQ(EncodeManifest(whole.committed), EncodeManifest(resumed.committed));
  EXPECT_EQ(EncodeManifest(whole.result), EncodeManifest(resumed.result));
  // The result proof is written the same way every time.
  const consensus::SecretKey key = TestKey();
  Result<consensus::Hash256> again = WriteResultProof(a_committed.path(), a_result.path(), round, key);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, whole.result.merkle_root);
  // A forced checkpoint the proof lacks is refused.
  EXPECT_EQ(WriteResultProof(a_committed.path(), a_result.path(), Round(ReproMode::kExact, {9}), key).status().code(),
            StatusCode::kOutOfRange);
}

TEST(ForcedRoundTest, TolerantModeFalsifiesTheFinalCheckpointBeyondAnyThreshold) {
  const ImageDataset data = testing::TinyDataset();
  TaskSpec task = testing::TinyTask(data);
  task.mode = ReproMode::kTolerant;
  polnode::testing::TempDir committed_dir("forced-tol"), result_dir("forced-tol-result");
  const ForcedRound round = Round(ReproMode::kTolerant, {8});
  const Proofs proofs = ProveForced(task, data, round, committed_dir.path(), result_dir.path());
  ASSERT_EQ(proofs.committed.checkpoint_hashes.size(), 9u);
  for (std::size_t k = 0; k < 9; ++k) {
    EXPECT_EQ(proofs.committed.checkpoint_hashes[k] != proofs.result.checkpoint_hashes[k], k == 8) << "checkpoint " << k;
  }
  Result<TrainState> committed = Load(committed_dir.path(), 8);
  Result<TrainState> result = Load(result_dir.path(), 8);
  ASSERT_TRUE(committed.ok() && result.ok());
  const kernels::Tensor& c = committed->tensors[0].tensor;
  const kernels::Tensor& r = result->tensors[0].tensor;
  for (std::int64_t i = 0; i < c.numel(); ++i) {
    std::uint32_t a = 0, b = 0;
    std::memcpy(&a, c.data() + i, 4);
    std::memcpy(&b, r.data() + i, 4);
    EXPECT_EQ(a ^ b, 0x80000000u) << "element " << i;
  }
}

}  // namespace
}  // namespace polnode::solver
