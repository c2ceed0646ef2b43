// The prover's progress file as a versioned local archive: it round-trips; a newer version, a
// truncated or a damaged file is refused with an error naming the file and is left untouched by
// the run that refused it; a file of the hand-written encoding before it still resumes; and a run
// resumed from it commits to the Merkle root of an uninterrupted run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "polnode/consensus/merkle.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/prove_progress.h"
#include "polnode/solver/prover.h"
#include "polnode/testing/data_files.h"
#include "polnode/testing/fuzz_seeds.h"
#include "polnode/testing/legacy_progress.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_task.h"

namespace polnode::solver {
namespace {

std::vector<std::uint8_t> ReadAll(const std::string& path) {
  const std::string text = polnode::testing::ReadFileText(path);
  return {text.begin(), text.end()};
}

ProveProgress Sample() {
  ProveProgress p;
  p.task_id.fill(7);
  p.hashes.assign(3, consensus::Hash256{});
  p.blobs.assign(3, consensus::Hash256{});
  for (std::size_t i = 0; i < 3; ++i) {
    p.hashes[i].fill(static_cast<std::uint8_t>(i + 1));
    p.blobs[i].fill(static_cast<std::uint8_t>(i + 100));
  }
  p.loss_bits = {1, 2, 3, 0xffffffffu};
  return p;
}

using testing::LegacyProgressBytes;

// Offset of the envelope's version: cereal's endianness byte, then the 16-byte kind.
constexpr std::size_t kVersionAt = 1 + kLocalKindBytes;

TEST(ProveProgressTest, RoundTripsAndStartsWithItsKindAndVersion) {
  const ProveProgress p = Sample();
  const std::vector<std::uint8_t> bytes = EncodeProgress(p);
  const std::string kind(bytes.begin() + 1, bytes.begin() + 1 + 12);
  EXPECT_EQ(kind, "pol-progress");
  EXPECT_EQ(bytes[kVersionAt], 1);  // little-endian uint32 1
  Result<ProveProgress> decoded = DecodeProgress(bytes, "p.bin");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, p);
}

TEST(ProveProgressTest, ANewerVersionIsRefusedByName) {
  std::vector<std::uint8_t> bytes = EncodeProgress(Sample());
  bytes[kVersionAt] = 2;
  Result<ProveProgress> decoded = DecodeProgress(bytes, "/x/progress.bin");
  EXPECT_EQ(decoded.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(decoded.status().message().find("/x/progress.bin"), std::string::npos) << decoded.status().ToString();
  EXPECT_NE(decoded.status().message().find("version 2"), std::string::npos) << decoded.status().ToString();
}

TEST(ProveProgressTest, AnotherKindOfFileIsRefused) {
  std::vector<std::uint8_t> bytes = EncodeProgress(Sample());
  bytes[1] = 'q';
  EXPECT_EQ(DecodeProgress(bytes, "p.bin").status().code(), StatusCode::kFailedPrecondition);
}

TEST(ProveProgressTest, EveryTruncationIsCorruptionNamingTheFile) {
  const std::vector<std::uint8_t> bytes = EncodeProgress(Sample());
  for (std::size_t n = kVersionAt + 4; n < bytes.size(); ++n) {
    Result<ProveProgress> decoded = DecodeProgress(std::span(bytes.data(), n), "/x/progress.bin");
    ASSERT_EQ(decoded.status().code(), StatusCode::kCorruption) << n << " bytes";
    EXPECT_NE(decoded.status().message().find("/x/progress.bin"), std::string::npos);
  }
  std::vector<std::uint8_t> trailing = bytes;
  trailing.push_back(0);
  EXPECT_EQ(DecodeProgress(trailing, "p.bin").status().code(), StatusCode::kCorruption);
}

TEST(ProveProgressTest, AHugeLengthIsRefusedBeforeAllocating) {
  std::vector<std::uint8_t> bytes = EncodeProgress(Sample());
  // The checkpoint count follows the envelope and the 32-byte task id; its top byte claims 2^62.
  bytes[kVersionAt + 4 + 32 + 7] = 0x40;
  Result<ProveProgress> decoded = DecodeProgress(bytes, "p.bin");
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  EXPECT_NE(decoded.status().message().find("exceeds"), std::string::npos) << decoded.status().ToString();
}

TEST(ProveProgressTest, TheLegacyEncodingIsStillRead) {
  const ProveProgress p = Sample();
  Result<ProveProgress> decoded = DecodeProgress(LegacyProgressBytes(p), "p.bin");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, p);
  std::vector<std::uint8_t> truncated = LegacyProgressBytes(p);
  truncated.pop_back();
  EXPECT_EQ(DecodeProgress(truncated, "p.bin").status().code(), StatusCode::kCorruption);
}

// The committed seeds of the prove_progress fuzz target still mean what their names say (when the
// format changes, regenerate them: polnode_fuzz --write-seeds=fuzz/corpus).
TEST(ProveProgressTest, TheFuzzSeedsMeanWhatTheirNamesSay) {
  const auto seed = [](const std::string& name) {
    const std::string bytes = polnode::testing::FuzzSeed("prove_progress", name);
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
  };
  EXPECT_TRUE(DecodeProgress(seed("valid"), "valid").ok());
  EXPECT_TRUE(DecodeProgress(seed("legacy"), "legacy").ok());
  EXPECT_EQ(DecodeProgress(seed("truncated"), "truncated").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeProgress(seed("newer-version"), "newer").status().code(), StatusCode::kFailedPrecondition);
}

class ProveProgressResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = kernels::MakeBackend("cpu", 1);
    ASSERT_TRUE(backend.ok());
    backend_ = std::move(*backend);
    ProveOptions options;
    options.out_dir = clean_.path();
    Result<ProveResult> whole = Prove(task_, data_, *backend_, options);
    ASSERT_TRUE(whole.ok()) << whole.status().ToString();
    want_root_ = whole->manifest.merkle_root;
  }

  // Runs the task into `dir` until step 10 (two checkpoints after the initial one).
  void Interrupt(const polnode::testing::TempDir& dir) {
    ProveOptions options;
    options.out_dir = dir.path();
    options.stop_after_step = 10;
    EXPECT_EQ(Prove(task_, data_, *backend_, options).status().code(), StatusCode::kFailedPrecondition);
  }

  Result<ProveResult> Finish(const polnode::testing::TempDir& dir) {
    ProveOptions options;
    options.out_dir = dir.path();
    return Prove(task_, data_, *backend_, options);
  }

  const ImageDataset data_ = testing::TinyDataset();
  const TaskSpec task_ = testing::TinyTask(data_);
  std::unique_ptr<kernels::Backend> backend_;
  polnode::testing::TempDir clean_{"progress-clean"};
  consensus::Hash256 want_root_{};
};

TEST_F(ProveProgressResumeTest, ResumingFromTheNewEncodingGivesTheUninterruptedMerkleRoot) {
  polnode::testing::TempDir dir("progress-new");
  Interrupt(dir);
  Result<ProveProgress> saved = DecodeProgress(ReadAll(dir.File("progress.bin")), "progress.bin");
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  EXPECT_EQ(saved->hashes.size(), 3u);
  Result<ProveResult> resumed = Finish(dir);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->resumed_from_step, 10);
  EXPECT_EQ(resumed->manifest.merkle_root, want_root_);
  EXPECT_EQ(resumed->manifest.merkle_root, consensus::MerkleRoot(resumed->manifest.checkpoint_hashes));
}

TEST_F(ProveProgressResumeTest, ResumingFromALegacyFileGivesTheUninterruptedMerkleRoot) {
  polnode::testing::TempDir dir("progress-legacy");
  Interrupt(dir);
  Result<ProveProgress> saved = DecodeProgress(ReadAll(dir.File("progress.bin")), "progress.bin");
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  ASSERT_TRUE(WriteFileAtomically(dir.File("progress.bin"), LegacyProgressBytes(*saved)).ok());
  Result<ProveResult> resumed = Finish(dir);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->resumed_from_step, 10);
  EXPECT_EQ(resumed->manifest.merkle_root, want_root_);
}

// A file the run cannot read stops it before it writes anything: the file keeps its bytes (a newer
// polnode's progress survives an older one started on the same directory by mistake).
TEST_F(ProveProgressResumeTest, AnUnreadableFileIsLeftExactlyAsItWas) {
  polnode::testing::TempDir dir("progress-unreadable");
  Interrupt(dir);
  std::vector<std::uint8_t> newer = ReadAll(dir.File("progress.bin"));
  newer[kVersionAt] = 9;
  ASSERT_TRUE(WriteFileAtomically(dir.File("progress.bin"), newer).ok());
  Result<ProveResult> refused = Finish(dir);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find(dir.File("progress.bin")), std::string::npos) << refused.status().ToString();
  EXPECT_EQ(ReadAll(dir.File("progress.bin")), newer);

  std::vector<std::uint8_t> damaged = newer;
  damaged[kVersionAt] = 1;
  damaged.resize(damaged.size() - 3);
  ASSERT_TRUE(WriteFileAtomically(dir.File("progress.bin"), damaged).ok());
  refused = Finish(dir);
  EXPECT_EQ(refused.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ReadAll(dir.File("progress.bin")), damaged);
}

}  // namespace
}  // namespace polnode::solver
