// A forced round's proofs (forced_round.h): the committed proof is falsified exactly at the forced
// checkpoints (exact mode: one bit; tolerant mode: the drawn elements moved by +-forced_delta) and
// trained on from them, so every segment replayed from a committed checkpoint reaches the result
// proof's next checkpoint; the result proof is the committed one with the forced checkpoints
// restored (tolerant mode: from the honest values kept in a private directory); an interrupted
// forced run resumes to the same proofs.
#include "polnode/solver/forced_round.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

#include "polnode/base/block_grid.h"
#include "polnode/base/file_util.h"
#include "polnode/consensus/forced_perturbation.h"
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

// 2^-10, solver::kDefaultForcedDelta's value (task_binding.h is not this test's subject).
constexpr float kDelta = 0.0009765625f;

ForcedRound Round(ReproMode mode, std::vector<std::uint64_t> checkpoints) {
  ForcedRound round;
  round.secret = std::string(32, 's');
  round.forced_seed = std::string(32, 'f');
  round.task_id = std::string(32, 't');
  round.mode = mode;
  round.checkpoints = std::move(checkpoints);
  return round;
}

// A tolerant round keeping its honest values in `honest_dir`.
ForcedRound TolerantRound(std::vector<std::uint64_t> checkpoints, const std::string& honest_dir) {
  ForcedRound round = Round(ReproMode::kTolerant, std::move(checkpoints));
  round.forced_delta = kDelta;
  round.honest_dir = honest_dir;
  return round;
}

// The tiny task in tolerant mode with a first tensor (fc1.w, 16 x 160) of three 64 x 64 blocks, so
// the drawn block is not the whole tensor.
TaskSpec TolerantTask(const ImageDataset& data) {
  TaskSpec task = testing::TinyTask(data);
  task.model = "mlp:16-160-3";
  task.mode = ReproMode::kTolerant;
  return task;
}

std::uint32_t Bits(float v) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

// Expects `committed` to be `honest` with exactly the perturbation of checkpoint `k` of `round`:
// the drawn elements of the first tensor hold consensus::PerturbedValue's bits, every other bit of
// the state is the same.
void ExpectPerturbedExactly(const TrainState& committed, const TrainState& honest, const ForcedRound& round,
                            std::uint64_t k) {
  ASSERT_EQ(committed.tensors.size(), honest.tensors.size());
  ASSERT_EQ(committed.step, honest.step);
  const kernels::Tensor& c = committed.tensors[0].tensor;
  const kernels::Tensor& h = honest.tensors[0].tensor;
  const consensus::Perturbation p = consensus::DrawPerturbation(round.secret, round.forced_seed, round.task_id, k, h.shape());
  ASSERT_EQ(p.elements.size(), consensus::kPerturbedElements);
  std::set<std::int64_t> drawn;
  const BlockGrid grid = BlockGrid::Of(h.shape());
  for (const consensus::PerturbedElement& e : p.elements) {
    drawn.insert(e.flat);
    EXPECT_EQ(grid.BlockOf(e.flat), p.block);
    EXPECT_EQ(Bits(c.data()[e.flat]), Bits(consensus::PerturbedValue(h.data()[e.flat], e.sign, round.forced_delta)))
        << "element " << e.flat;
    EXPECT_TRUE(consensus::PerturbationVisible(h.data()[e.flat], c.data()[e.flat], round.forced_delta));
  }
  for (std::int64_t i = 0; i < c.numel(); ++i) {
    if (!drawn.contains(i)) {
      EXPECT_EQ(Bits(c.data()[i]), Bits(h.data()[i])) << "element " << i << " is not drawn";
    }
  }
  for (std::size_t t = 1; t < committed.tensors.size(); ++t) {
    EXPECT_EQ(TensorHash(committed.tensors[t].tensor), TensorHash(honest.tensors[t].tensor)) << "only tensor 0 changes";
  }
}

std::set<std::string> FileNames(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
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

TEST(ForcedRoundTest, ExactFalsificationIsItsOwnInverseAndDrawnFromTheRound) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = testing::TinyTask(data);
  Result<TaskStepper> stepper = TaskStepper::Create(task, data);
  ASSERT_TRUE(stepper.ok());
  const TrainState initial = stepper->Initial();
  const ForcedRound round = Round(ReproMode::kExact, {3});
  TrainState state = initial;
  ASSERT_TRUE(FalsifyCheckpoint(state, round, 3).ok());
  EXPECT_NE(StateHash(state), StateHash(initial));
  const kernels::Tensor& before = initial.tensors[0].tensor;
  const kernels::Tensor& after = state.tensors[0].tensor;
  int changed = 0;
  for (std::int64_t i = 0; i < before.numel(); ++i) {
    const std::uint32_t a = Bits(before.data()[i]), b = Bits(after.data()[i]);
    if (a == b) continue;
    ++changed;
    // The lowest mantissa bit of the drawn element.
    EXPECT_EQ(a ^ b, 1u);
    EXPECT_EQ(static_cast<std::uint64_t>(i), FalsifiedElement(round, 3, static_cast<std::uint64_t>(before.numel())));
  }
  EXPECT_EQ(changed, 1);
  for (std::size_t t = 1; t < state.tensors.size(); ++t) {
    EXPECT_EQ(TensorHash(state.tensors[t].tensor), TensorHash(initial.tensors[t].tensor)) << "only tensor 0 changes";
  }
  ASSERT_TRUE(FalsifyCheckpoint(state, round, 3).ok());
  EXPECT_EQ(StateHash(state), StateHash(initial));
  // Another checkpoint or another secret draws (almost always) another element.
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

TEST(ForcedRoundTest, TolerantFalsificationMovesExactlyTheDrawnElementsByTheForcedDelta) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = TolerantTask(data);
  Result<TaskStepper> stepper = TaskStepper::Create(task, data);
  ASSERT_TRUE(stepper.ok());
  const TrainState initial = stepper->Initial();
  ASSERT_EQ(initial.tensors[0].tensor.shape(), (kernels::Shape{16, 160}));
  const ForcedRound round = TolerantRound({3}, "unused");
  std::set<std::uint64_t> blocks;
  for (std::uint64_t k : {3u, 4u, 5u, 6u, 7u}) {
    TrainState state = initial;
    ASSERT_TRUE(FalsifyCheckpoint(state, round, k).ok());
    EXPECT_NE(StateHash(state), StateHash(initial));
    ExpectPerturbedExactly(state, initial, round, k);
    blocks.insert(consensus::DrawPerturbation(round.secret, round.forced_seed, round.task_id, k,
                                              initial.tensors[0].tensor.shape()).block);
  }
  EXPECT_GT(blocks.size(), 1u) << "the block is drawn per checkpoint";

  // A drawn element that no +-delta moves visibly (a NaN, a value so large that adding delta
  // rounds back to it), or a delta that is not finite and positive, is refused, the state left as
  // it was.
  const consensus::Perturbation p =
      consensus::DrawPerturbation(round.secret, round.forced_seed, round.task_id, 3, initial.tensors[0].tensor.shape());
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), 1.0e9f, std::numeric_limits<float>::infinity()}) {
    TrainState state = initial;
    state.tensors[0].tensor.data()[p.elements[1].flat] = bad;
    const consensus::Hash256 before = StateHash(state);
    EXPECT_EQ(FalsifyCheckpoint(state, round, 3).code(), StatusCode::kFailedPrecondition) << bad;
    EXPECT_EQ(StateHash(state), before);
  }
  for (float delta : {0.0f, -kDelta, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    ForcedRound bad = round;
    bad.forced_delta = delta;
    TrainState state = initial;
    EXPECT_EQ(FalsifyCheckpoint(state, bad, 3).code(), StatusCode::kFailedPrecondition) << delta;
    EXPECT_EQ(StateHash(state), StateHash(initial));
  }
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

TEST(ForcedRoundTest, TolerantCommittedProofIsPerturbedAtTheForcedCheckpointsAndTheResultRestoresTheHonestStates) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = TolerantTask(data);
  polnode::testing::TempDir committed_dir("tol-committed"), result_dir("tol-result"), honest_dir("tol-honest"),
      plain_dir("tol-plain");
  const ForcedRound round = TolerantRound({2, 3, 6, 8}, honest_dir.path());  // two in a row, and the final one
  const Proofs proofs = ProveForced(task, data, round, committed_dir.path(), result_dir.path());
  ASSERT_EQ(proofs.committed.checkpoint_hashes.size(), 9u);
  ASSERT_EQ(proofs.result.checkpoint_hashes.size(), 9u);
  for (std::size_t k = 0; k < 9; ++k) {
    EXPECT_EQ(proofs.committed.checkpoint_hashes[k] != proofs.result.checkpoint_hashes[k], round.Forced(k))
        << "checkpoint " << k;
  }
  EXPECT_EQ(proofs.result.merkle_root, consensus::MerkleRoot(proofs.result.checkpoint_hashes));
  EXPECT_TRUE(proofs.result.is_signed);
  EXPECT_EQ(proofs.result.loss_bits, proofs.committed.loss_bits);
  EXPECT_TRUE(CheckManifestIntegrity(proofs.result).ok());

  // At each forced checkpoint the committed state is the result's with exactly the drawn
  // perturbation; the honest values are kept in the private directory only, one file each.
  std::set<std::string> expected_files;
  for (std::uint64_t k : round.checkpoints) {
    Result<TrainState> committed = Load(committed_dir.path(), k);
    Result<TrainState> result = Load(result_dir.path(), k);
    ASSERT_TRUE(committed.ok() && result.ok());
    EXPECT_EQ(StateHash(*result), proofs.result.checkpoint_hashes[k]);
    ExpectPerturbedExactly(*committed, *result, round, k);
    expected_files.insert("checkpoint-" + std::to_string(k) + ".f32");
  }
  EXPECT_EQ(FileNames(honest_dir.path()), expected_files);
  for (const std::string& dir : {committed_dir.path(), result_dir.path()}) {
    for (const std::string& name : FileNames(dir)) EXPECT_EQ(name.find(".f32"), std::string::npos) << dir;
  }

  // Every segment, replayed from the committed checkpoint it starts at, reaches the result proof's
  // checkpoint at its end bit for bit: the honest state of a forced checkpoint.
  Result<TaskStepper> stepper = TaskStepper::Create(task, data);
  ASSERT_TRUE(stepper.ok());
  std::unique_ptr<kernels::Backend> backend = kernels::MakeReferenceBackend();
  for (std::size_t i = 0; i < 8; ++i) {
    Result<TrainState> start = Load(committed_dir.path(), i);
    ASSERT_TRUE(start.ok()) << start.status().ToString();
    TrainState state = std::move(*start);
    for (std::int64_t step = 0; step < task.checkpoint_interval; ++step) ASSERT_TRUE(stepper->Step(state, *backend).ok());
    EXPECT_EQ(StateHash(state), proofs.result.checkpoint_hashes[i + 1]) << "segment " << i;
  }

  // The result proof is an unforced training's until training goes on from the first perturbed
  // state, and all of it when only the final checkpoint is forced (nothing trains on from it).
  const consensus::SecretKey key = TestKey();
  ProveOptions options;
  options.out_dir = plain_dir.path();
  options.key = &key;
  Result<ProveResult> plain = Prove(task, data, *backend, options);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->manifest.checkpoint_hashes[1], proofs.result.checkpoint_hashes[1]);
  EXPECT_EQ(plain->manifest.checkpoint_hashes[2], proofs.result.checkpoint_hashes[2]);
  EXPECT_NE(plain->manifest.checkpoint_hashes[3], proofs.result.checkpoint_hashes[3]);
  polnode::testing::TempDir final_committed("tol-final"), final_result("tol-final-result"), final_honest("tol-final-honest");
  const ForcedRound final_only = TolerantRound({8}, final_honest.path());
  const Proofs final_proofs = ProveForced(task, data, final_only, final_committed.path(), final_result.path());
  EXPECT_NE(final_proofs.committed.merkle_root, plain->manifest.merkle_root);
  EXPECT_EQ(final_proofs.result.checkpoint_hashes, plain->manifest.checkpoint_hashes);
  EXPECT_EQ(final_proofs.result.merkle_root, plain->manifest.merkle_root);
}

TEST(ForcedRoundTest, TolerantResultProofNeedsItsOwnHonestValuesOutsideTheServedProofs) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = TolerantTask(data);
  polnode::testing::TempDir committed_dir("tol-committed"), result_dir("tol-result"), honest_dir("tol-honest");
  const ForcedRound round = TolerantRound({4, 8}, honest_dir.path());
  const Proofs proofs = ProveForced(task, data, round, committed_dir.path(), result_dir.path());
  ASSERT_EQ(proofs.result.checkpoint_hashes.size(), 9u);
  const consensus::SecretKey key = TestKey();

  // Not under either proof directory, which are served; not missing.
  ForcedRound inside = round;
  inside.honest_dir = committed_dir.File("honest");
  EXPECT_EQ(WriteResultProof(committed_dir.path(), result_dir.path(), inside, key).status().code(),
            StatusCode::kInvalidArgument);
  inside.honest_dir = result_dir.path() + "/./";
  EXPECT_EQ(WriteResultProof(committed_dir.path(), result_dir.path(), inside, key).status().code(),
            StatusCode::kInvalidArgument);
  inside.honest_dir.clear();
  EXPECT_EQ(WriteResultProof(committed_dir.path(), result_dir.path(), inside, key).status().code(),
            StatusCode::kInvalidArgument);
  // The hook refuses to perturb without a place for the honest values.
  std::unique_ptr<kernels::Backend> backend = kernels::MakeReferenceBackend();
  polnode::testing::TempDir unkept("tol-unkept");
  ProveOptions options;
  options.out_dir = unkept.path();
  options.key = &key;
  options.on_checkpoint = ForcedCheckpointHook(inside, task.checkpoint_interval);
  EXPECT_EQ(Prove(task, data, *backend, options).status().code(), StatusCode::kFailedPrecondition);

  // Values that the committed state was not perturbed from (another round's) are refused, and so
  // is a missing file.
  polnode::testing::TempDir again("tol-again");
  const std::string file = honest_dir.File("checkpoint-4.f32");
  Result<std::vector<std::uint8_t>> kept = ReadWholeFile(file, 64);
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->size(), consensus::kPerturbedElements * sizeof(float));
  std::vector<std::uint8_t> wrong = *kept;
  wrong[2] ^= 0x40;  // the first value's top mantissa bit: far more than rounding could hide
  ASSERT_TRUE(WriteFileAtomically(file, wrong).ok());
  EXPECT_EQ(WriteResultProof(committed_dir.path(), again.path(), round, key).status().code(), StatusCode::kCorruption);
  wrong.pop_back();
  ASSERT_TRUE(WriteFileAtomically(file, wrong).ok());
  EXPECT_EQ(WriteResultProof(committed_dir.path(), again.path(), round, key).status().code(), StatusCode::kCorruption);
  std::filesystem::remove(file);
  EXPECT_EQ(WriteResultProof(committed_dir.path(), again.path(), round, key).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(WriteFileAtomically(file, *kept).ok());
  Result<consensus::Hash256> restored = WriteResultProof(committed_dir.path(), again.path(), round, key);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(*restored, proofs.result.merkle_root);
}

TEST(ForcedRoundTest, AnInterruptedTolerantRunResumesToTheSameProofsAndHonestValues) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = TolerantTask(data);
  polnode::testing::TempDir a_committed("tol-a"), a_result("tol-a-result"), a_honest("tol-a-honest");
  polnode::testing::TempDir b_committed("tol-b"), b_result("tol-b-result"), b_honest("tol-b-honest");
  const ForcedRound a_round = TolerantRound({4, 5}, a_honest.path());
  const ForcedRound b_round = TolerantRound({4, 5}, b_honest.path());
  const Proofs whole = ProveForced(task, data, a_round, a_committed.path(), a_result.path());
  // Stopped just after the perturbed checkpoint 4 was written (step 20), then resumed from it.
  const Proofs resumed = ProveForced(task, data, b_round, b_committed.path(), b_result.path(), 22);
  EXPECT_EQ(EncodeManifest(whole.committed), EncodeManifest(resumed.committed));
  EXPECT_EQ(EncodeManifest(whole.result), EncodeManifest(resumed.result));
  for (const char* name : {"checkpoint-4.f32", "checkpoint-5.f32"}) {
    Result<std::vector<std::uint8_t>> a = ReadWholeFile(a_honest.File(name), 64);
    Result<std::vector<std::uint8_t>> b = ReadWholeFile(b_honest.File(name), 64);
    ASSERT_TRUE(a.ok() && b.ok()) << name;
    EXPECT_EQ(*a, *b) << name;
  }
  // A training that redoes the forced checkpoints (its progress lost) rewrites the same honest
  // values, and the same proofs follow from them.
  polnode::testing::TempDir redo_committed("tol-redo"), redo_result("tol-redo-result");
  Result<std::vector<std::uint8_t>> before = ReadWholeFile(a_honest.File("checkpoint-4.f32"), 64);
  ASSERT_TRUE(before.ok());
  const Proofs redone = ProveForced(task, data, a_round, redo_committed.path(), redo_result.path());
  Result<std::vector<std::uint8_t>> after = ReadWholeFile(a_honest.File("checkpoint-4.f32"), 64);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*before, *after);
  EXPECT_EQ(EncodeManifest(whole.committed), EncodeManifest(redone.committed));
  EXPECT_EQ(EncodeManifest(whole.result), EncodeManifest(redone.result));
  // The result proof is written the same way every time.
  const consensus::SecretKey key = TestKey();
  Result<consensus::Hash256> again = WriteResultProof(a_committed.path(), a_result.path(), a_round, key);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, whole.result.merkle_root);
}

}  // namespace
}  // namespace polnode::solver
