// The prover: checkpoints every k steps as blobs, a manifest that checks out, deterministic
// signatures, and resumption that yields a byte-identical manifest.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <functional>

#include "polnode/base/clock.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/merkle.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/task_steps.h"
#include "polnode/testing/fashion_mnist.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_task.h"

namespace polnode::solver {
namespace {

std::vector<std::uint8_t> ReadAll(const std::string& path) {
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(path, 1 << 26);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<std::uint8_t>{};
}

consensus::SecretKey TestKey() {
  std::array<std::uint8_t, 32> bytes{};
  bytes.fill(0x22);
  return *consensus::SecretKey::FromBytes(bytes);
}

TEST(ProofProverTest, WritesEveryCheckpointAndAConsistentSignedManifest) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = testing::TinyTask(data);
  polnode::testing::TempDir dir("prove");
  auto backend = kernels::MakeBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  const consensus::SecretKey key = TestKey();
  ProveOptions options;
  options.out_dir = dir.path();
  options.key = &key;
  Result<ProveResult> result = Prove(task, data, **backend, options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const ProofManifest& m = result->manifest;
  ASSERT_EQ(m.checkpoint_hashes.size(), 9u);
  ASSERT_EQ(m.checkpoint_blobs.size(), 9u);
  EXPECT_EQ(m.loss_bits.size(), 40u);
  EXPECT_EQ(m.task_id, TaskId(task));
  EXPECT_TRUE(CheckManifestIntegrity(m).ok());

  // Checkpoint 0 is the task's initial state and the last one the trained state.
  Result<TaskStepper> stepper = TaskStepper::Create(task, data);
  ASSERT_TRUE(stepper.ok());
  TrainState state = stepper->Initial();
  EXPECT_EQ(m.checkpoint_hashes[0], StateHash(state));
  while (state.step < task.steps) ASSERT_TRUE(stepper->Step(state, **backend).ok());
  EXPECT_EQ(m.checkpoint_hashes.back(), StateHash(state));

  Result<BlobStore> store = BlobStore::Open(options.out_dir + "/blobs");
  ASSERT_TRUE(store.ok());
  // Each blob is stored under its state hash and decodes to the state the manifest names.
  for (std::size_t i = 0; i < m.checkpoint_blobs.size(); ++i) {
    EXPECT_EQ(m.checkpoint_blobs[i], m.checkpoint_hashes[i]);
    Result<std::vector<std::uint8_t>> bytes = store->Get(m.checkpoint_blobs[i]);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    Result<TrainState> decoded = DecodeState(*bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(StateHash(*decoded), m.checkpoint_hashes[i]) << "checkpoint " << i;
    EXPECT_EQ(decoded->step, static_cast<std::int64_t>(i) * task.checkpoint_interval);
  }
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(store->dir())) files += entry.is_regular_file();
  EXPECT_EQ(files, 9);  // no temporary file left
  EXPECT_EQ(m.merkle_root, consensus::MerkleRoot(m.checkpoint_hashes));
  Result<ProofManifest> decoded = DecodeManifest(ReadAll(options.out_dir + "/manifest.pb"));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(EncodeManifest(*decoded), EncodeManifest(m));
}

// Checkpoints hashed and written by the writer thread or on the backend's threads: the same
// manifest and the same blob files, for one thread and for two.
TEST(ProofProverTest, WriterThreadAndHostThreadsWriteTheSameProof) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = testing::TinyTask(data);
  const consensus::SecretKey key = TestKey();
  std::vector<std::uint8_t> want_manifest;
  std::vector<std::vector<std::uint8_t>> want_blobs;
  for (int threads : {1, 2}) {
    auto backend = kernels::MakeBackend("cpu", threads);
    ASSERT_TRUE(backend.ok());
    for (CheckpointWork work : {CheckpointWork::kWriterThread, CheckpointWork::kHostThreads, CheckpointWork::kAuto}) {
      polnode::testing::TempDir dir("prove-work");
      ProveOptions options;
      options.out_dir = dir.path();
      options.key = &key;
      options.checkpoint_work = work;
      Result<ProveResult> result = Prove(task, data, **backend, options);
      ASSERT_TRUE(result.ok()) << result.status().ToString();
      const std::vector<std::uint8_t> manifest = ReadAll(dir.File("manifest.pb"));
      std::vector<std::vector<std::uint8_t>> blobs;
      for (const consensus::Hash256& blob : result->manifest.checkpoint_blobs) {
        blobs.push_back(ReadAll(dir.path() + "/blobs/" + consensus::ToHex(blob)));
      }
      if (want_manifest.empty()) {
        want_manifest = manifest;
        want_blobs = blobs;
        continue;
      }
      EXPECT_EQ(manifest, want_manifest) << threads << " threads, work " << static_cast<int>(work);
      EXPECT_EQ(blobs, want_blobs) << threads << " threads, work " << static_cast<int>(work);
    }
  }
}

TEST(ProofProverTest, ResumedRunProducesTheIdenticalManifest) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = testing::TinyTask(data);
  auto backend = kernels::MakeBackend("cpu", 2);
  ASSERT_TRUE(backend.ok());
  const consensus::SecretKey key = TestKey();
  polnode::testing::TempDir clean("prove-clean");
  ProveOptions options;
  options.key = &key;
  options.out_dir = clean.path();
  ASSERT_TRUE(Prove(task, data, **backend, options).ok());
  const std::vector<std::uint8_t> want = ReadAll(clean.File("manifest.pb"));

  // Interrupted twice, once between checkpoints (steps 13..15 are redone) and once on one.
  polnode::testing::TempDir resumed("prove-resumed");
  options.out_dir = resumed.path();
  options.stop_after_step = 13;
  Result<ProveResult> first = Prove(task, data, **backend, options);
  EXPECT_EQ(first.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(std::filesystem::exists(resumed.File("manifest.pb")));
  options.stop_after_step = 30;
  EXPECT_FALSE(Prove(task, data, **backend, options).ok());
  options.stop_after_step = -1;
  Result<ProveResult> last = Prove(task, data, **backend, options);
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(last->resumed_from_step, 30);
  EXPECT_EQ(ReadAll(resumed.File("manifest.pb")), want);
}

// on_checkpoint_saved names each checkpoint once it is durable: a copy of the directory taken in
// the callback (as if the process died right there) resumes from exactly that step and still
// yields the manifest of an uninterrupted run.
TEST(ProofProverTest, EachSavedCheckpointIsReportedOnceItIsDurable) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = testing::TinyTask(data);
  auto backend = kernels::MakeBackend("cpu", 2);
  ASSERT_TRUE(backend.ok());
  const consensus::SecretKey key = TestKey();
  polnode::testing::TempDir run("prove-reported");
  polnode::testing::TempDir snapshot("prove-snapshot");
  constexpr std::int64_t kSnapshotStep = 20;
  std::vector<std::int64_t> saved;
  ProveOptions options;
  options.key = &key;
  options.out_dir = run.path();
  options.commit_interval = Clock::Duration::zero();  // each checkpoint durable on its own
  options.on_checkpoint_saved = [&](std::int64_t step) {
    saved.push_back(step);
    if (step == kSnapshotStep) {
      std::filesystem::copy(run.path(), snapshot.path(), std::filesystem::copy_options::recursive);
    }
  };
  ASSERT_TRUE(Prove(task, data, **backend, options).ok());
  std::vector<std::int64_t> want_steps;
  for (std::int64_t step = 0; step <= task.steps; step += task.checkpoint_interval) want_steps.push_back(step);
  EXPECT_EQ(saved, want_steps);

  options.on_checkpoint_saved = nullptr;
  options.out_dir = snapshot.path();
  Result<ProveResult> resumed = Prove(task, data, **backend, options);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->resumed_from_step, kSnapshotStep);
  EXPECT_EQ(ReadAll(snapshot.File("manifest.pb")), ReadAll(run.File("manifest.pb")));
}

// Proves `task` on two threads with `clock` into a fresh directory and copies that directory when
// the checkpoint at `snapshot_step` is reported durable; returns the steps reported, in order, and
// the step a run on the copy resumes from (its manifest checked against the uninterrupted one's).
struct BatchedRun {
  std::vector<std::int64_t> saved;
  std::int64_t resumed_from = -1;
};
BatchedRun ProveAndResumeFromSnapshot(const TaskSpec& task, ManualClock& clock, std::int64_t snapshot_step,
                                      std::function<Status(TrainState&)> on_checkpoint) {
  const ImageDataset data = testing::TinyDataset();
  auto backend = kernels::MakeBackend("cpu", 2);
  EXPECT_TRUE(backend.ok());
  const consensus::SecretKey key = TestKey();
  polnode::testing::TempDir run("prove-batched");
  polnode::testing::TempDir snapshot("prove-batched-snapshot");
  BatchedRun result;
  ProveOptions options;
  options.key = &key;
  options.out_dir = run.path();
  options.clock = &clock;
  options.commit_interval = std::chrono::seconds(1);
  options.on_checkpoint = std::move(on_checkpoint);
  options.on_checkpoint_saved = [&](std::int64_t step) {
    result.saved.push_back(step);
    if (step == snapshot_step) {
      std::filesystem::copy(run.path(), snapshot.path(), std::filesystem::copy_options::recursive);
    }
  };
  Result<ProveResult> proved = Prove(task, data, **backend, options);
  EXPECT_TRUE(proved.ok()) << proved.status().ToString();
  options = ProveOptions{};
  options.key = &key;
  options.out_dir = snapshot.path();
  Result<ProveResult> resumed = Prove(task, data, **backend, options);
  EXPECT_TRUE(resumed.ok()) << resumed.status().ToString();
  if (!proved.ok() || !resumed.ok()) return result;
  result.resumed_from = resumed->resumed_from_step;
  EXPECT_EQ(ReadAll(snapshot.File("manifest.pb")), ReadAll(run.File("manifest.pb")));
  return result;
}

std::vector<std::int64_t> CheckpointSteps(const TaskSpec& task) {
  std::vector<std::int64_t> steps;
  for (std::int64_t step = 0; step <= task.steps; step += task.checkpoint_interval) steps.push_back(step);
  return steps;
}

// Checkpoints are made durable in batches: one handed over less than commit_interval after the
// checkpoint that made the previous batch durable waits for the next. The clock moves only at step
// 15, by the interval, so steps 0 to 15 are one batch and 20 to 40 another (at the end). Each
// checkpoint is reported after its batch, in order: a copy taken at step 0's report resumes from
// step 15.
TEST(ProofProverTest, CheckpointsAreMadeDurableInBatches) {
  const TaskSpec task = testing::TinyTask(testing::TinyDataset());
  ManualClock clock;
  const BatchedRun run = ProveAndResumeFromSnapshot(task, clock, 0, [&](TrainState& state) {
    if (state.step == 15) clock.Advance(std::chrono::seconds(1));
    return Status::Ok();
  });
  EXPECT_EQ(run.saved, CheckpointSteps(task));
  EXPECT_EQ(run.resumed_from, 15);
}

// However slowly the clock moves, at most 32 checkpoints wait: with a clock that never moves, the
// 32nd makes steps 0 to 31 durable.
TEST(ProofProverTest, AtMost32CheckpointsWaitForTheirBatch) {
  TaskSpec task = testing::TinyTask(testing::TinyDataset());
  task.checkpoint_interval = 1;
  ManualClock clock;
  const BatchedRun run = ProveAndResumeFromSnapshot(task, clock, 0, nullptr);
  EXPECT_EQ(run.saved, CheckpointSteps(task));
  EXPECT_EQ(run.resumed_from, 31);
}

TEST(ProofProverTest, RefusesDataWithAnotherHashAndProgressOfAnotherTask) {
  const ImageDataset data = testing::TinyDataset();
  TaskSpec task = testing::TinyTask(data);
  auto backend = kernels::MakeBackend("reference", 1);
  ASSERT_TRUE(backend.ok());
  polnode::testing::TempDir dir("prove-refuse");
  ProveOptions options;
  options.out_dir = dir.path();
  options.stop_after_step = 5;
  EXPECT_FALSE(Prove(task, data, **backend, options).ok());
  task.optimizer.lr = 0.05f;
  options.stop_after_step = -1;
  EXPECT_EQ(Prove(task, data, **backend, options).status().code(), StatusCode::kFailedPrecondition);
  task.dataset_hash[0] ^= 1;
  EXPECT_EQ(Prove(task, data, **backend, options).status().code(), StatusCode::kFailedPrecondition);
}

TEST(ProofProverTest, CorruptProgressFileIsReportedNotTrusted) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = testing::TinyTask(data);
  auto backend = kernels::MakeBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  polnode::testing::TempDir dir("prove-corrupt");
  ProveOptions options;
  options.out_dir = dir.path();
  options.stop_after_step = 10;
  EXPECT_FALSE(Prove(task, data, **backend, options).ok());
  std::vector<std::uint8_t> progress = ReadAll(dir.File("progress.bin"));
  progress.pop_back();
  ASSERT_TRUE(WriteFileAtomically(dir.File("progress.bin"), progress).ok());
  options.stop_after_step = -1;
  EXPECT_EQ(Prove(task, data, **backend, options).status().code(), StatusCode::kCorruption);
}

// The progress file names each checkpoint by state hash and blob hash; a resumed run checks the
// last blob against both, so a blob replaced by another valid state (stored under its own content
// hash and named in a rewritten progress file) is corruption, not silently trained on.
TEST(ProofProverTest, ResumeChecksTheLastCheckpointsStateHash) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = testing::TinyTask(data);
  auto backend = kernels::MakeBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  polnode::testing::TempDir dir("prove-swap");
  ProveOptions options;
  options.out_dir = dir.path();
  options.stop_after_step = 10;
  EXPECT_FALSE(Prove(task, data, **backend, options).ok());
  std::vector<std::uint8_t> progress = ReadAll(dir.File("progress.bin"));
  // Checkpoint 2's blob hash is the last 32 bytes before U64 m and the 10 losses.
  const std::size_t blob_at = progress.size() - 10 * 4 - 8 - 32;
  Result<BlobStore> store = BlobStore::Open(dir.File("blobs"));
  ASSERT_TRUE(store.ok());
  consensus::Hash256 blob{};
  std::copy_n(progress.begin() + static_cast<long>(blob_at), 32, blob.begin());
  Result<std::vector<std::uint8_t>> bytes = store->Get(blob);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Result<TrainState> state = DecodeState(*bytes);
  ASSERT_TRUE(state.ok());
  state->tensors[0].tensor.data()[0] += 1.0f;
  Result<consensus::Hash256> forged = store->Put(EncodeState(*state));
  ASSERT_TRUE(forged.ok());
  std::copy(forged->begin(), forged->end(), progress.begin() + static_cast<long>(blob_at));
  ASSERT_TRUE(WriteFileAtomically(dir.File("progress.bin"), progress).ok());
  options.stop_after_step = -1;
  Result<ProveResult> resumed = Prove(task, data, **backend, options);
  EXPECT_EQ(resumed.status().code(), StatusCode::kCorruption);
  EXPECT_NE(resumed.status().message().find("state hash"), std::string::npos) << resumed.status().ToString();
}

}  // namespace
}  // namespace polnode::solver
