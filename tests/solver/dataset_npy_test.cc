// Tabular .npy data sets (dataset_npy.h) written by numpy itself (Debian's python3-numpy, the
// python3 that has torch), read back exactly, hashed, batched; and the files polnode refuses.
#include "polnode/solver/dataset_npy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "polnode/base/file_util.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/trainer.h"
#include "polnode/testing/status_matchers.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/torch_files.h"

namespace polnode::solver {
namespace {

using polnode::testing::StatusIs;

// Writes a data set with numpy into `dir`: 20 train and 5 test samples of 6 features, feature j
// of sample i = i * 0.25 - j (exact in float32), label i % 3. `tweak` is Python run before saving,
// with the arrays as train_x, train_y, test_x, test_y and numpy as np.
void WriteWithNumpy(const std::string& dir, const std::string& tweak = "") {
  const std::string script =
      "import sys, numpy as np\n"
      "d = sys.argv[1]\n"
      "def x(n): return np.array([[i * 0.25 - j for j in range(6)] for i in range(n)], dtype=np.float32)\n"
      "train_x, test_x = x(20), x(5)\n"
      "train_y = np.arange(20, dtype=np.int64) % 3\n"
      "test_y = np.arange(5, dtype=np.int64) % 3\n" +
      tweak +
      "\nfor name in ('train_x', 'train_y', 'test_x', 'test_y'): np.save(d + '/' + name + '.npy', globals()[name])\n";
  const polnode::testing::ProcessResult run = polnode::testing::RunProcess({polnode::testing::kTorchPython, "-c", script, dir});
  ASSERT_EQ(run.exit_code, 0) << run.err;
}

TEST(DatasetNpyTest, ANumpyWrittenSetLoadsExactlyAndHashesItsContent) {
  polnode::testing::TempDir dir("npy");
  ASSERT_NO_FATAL_FAILURE(WriteWithNumpy(dir.path()));
  Result<ImageDataset> data = LoadImageDataset(dir.path());
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->train.count, 20);
  EXPECT_EQ(data->test.count, 5);
  EXPECT_EQ(data->train.cols, 6);
  EXPECT_EQ(data->train.pixels_per_image(), 6);
  EXPECT_EQ(data->num_classes, 3);
  EXPECT_TRUE(data->train.pixels.empty());
  EXPECT_EQ(data->train.features[7 * 6 + 2], 7 * 0.25f - 2);
  EXPECT_EQ(data->test.labels[4], 1);

  // The batch is the features as they are, in the order asked.
  kernels::Tensor x, y;
  const std::uint32_t order[] = {7, 0};
  ASSERT_TRUE(polnode::testing::IsOk(GatherBatch(data->train, order, {2, 6}, x, y)));
  EXPECT_EQ(x.data()[0 * 6 + 2], 7 * 0.25f - 2);
  EXPECT_EQ(x.data()[1 * 6 + 5], -5.0f);
  EXPECT_EQ(y.data()[0], 1.0f);

  Result<std::vector<std::string>> files = DatasetFiles("mlp:6-8-3", dir.path());
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 4u);
  EXPECT_EQ(std::filesystem::path((*files)[0]).filename(), "train_x.npy");

  // The hash covers every feature bit and label; int32 labels hold the same data set.
  const consensus::Hash256 hash = DatasetContentHash(*data);
  polnode::testing::TempDir other("npy");
  ASSERT_NO_FATAL_FAILURE(WriteWithNumpy(other.path(), "train_y = train_y.astype(np.int32)"));
  Result<ImageDataset> same = LoadImageDataset(other.path());
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(DatasetContentHash(*same), hash);
  ASSERT_NO_FATAL_FAILURE(WriteWithNumpy(other.path(), "train_x[19, 5] = np.nextafter(train_x[19, 5], np.float32(1))"));
  Result<ImageDataset> moved = LoadImageDataset(other.path());
  ASSERT_TRUE(moved.ok());
  EXPECT_NE(DatasetContentHash(*moved), hash);
}

// An mlp: task trains on a numpy-written set through the ordinary trainer: the label is which of
// the first three features is largest, so the model learns it; every thread count gives the
// same state hash.
TEST(DatasetNpyTest, AnMlpTrainsOnItBitIdenticallyOnOneAndTwoThreads) {
  polnode::testing::TempDir dir("npy");
  ASSERT_NO_FATAL_FAILURE(WriteWithNumpy(dir.path(),
                                         "rng = np.random.default_rng(5)\n"
                                         "train_x = rng.standard_normal((600, 6)).astype(np.float32)\n"
                                         "test_x = rng.standard_normal((200, 6)).astype(np.float32)\n"
                                         "train_y = np.argmax(train_x[:, :3], axis=1).astype(np.int64)\n"
                                         "test_y = np.argmax(test_x[:, :3], axis=1).astype(np.int64)"));
  TrainConfig config;
  config.model = "mlp:6-16-3";
  config.data = dir.path();
  config.steps = 300;
  config.batch = 32;
  config.optimizer.lr = 0.1f;
  std::string hash;
  for (int threads : {1, 2}) {
    Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("cpu", threads);
    ASSERT_TRUE(backend.ok());
    Result<TrainSummary> run = Train(config, **backend, nullptr);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    ASSERT_TRUE(run->test.has_value());
    EXPECT_GT(run->test->accuracy(), 0.85) << threads << " threads";
    if (hash.empty()) hash = run->state_hash_hex;
    EXPECT_EQ(run->state_hash_hex, hash) << threads << " threads";
  }
}

TEST(DatasetNpyTest, WhatPolnodeDoesNotTakeIsRefusedWithTheReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train_x = train_x.astype(np.float64)", "'<f8'"},
      {"train_x = train_x.astype('>f4')", "'>f4'"},
      {"train_x = np.asfortranarray(train_x)", "Fortran"},
      {"train_y = train_y.astype(np.float32)", "integer labels"},
      {"train_y = train_y[:19]", "samples"},
      {"train_y[3] = 300", "not in 0..255"},
      {"train_y[3] = -1", "not in 0..255"},
      {"train_x[2, 2] = np.nan", "not finite"},
      {"train_x = train_x.reshape(20, 2, 3)", "[samples, features]"},
      {"test_x = test_x[:, :5]", "features"},
  };
  for (const auto& [tweak, reason] : cases) {
    SCOPED_TRACE(tweak);
    polnode::testing::TempDir dir("npy");
    ASSERT_NO_FATAL_FAILURE(WriteWithNumpy(dir.path(), tweak));
    Result<ImageDataset> data = LoadImageDataset(dir.path());
    ASSERT_FALSE(data.ok());
    EXPECT_NE(data.status().message().find(reason), std::string::npos) << data.status().ToString();
  }
}

TEST(DatasetNpyTest, TruncatedAndDamagedFilesAreCorruption) {
  polnode::testing::TempDir dir("npy");
  ASSERT_NO_FATAL_FAILURE(WriteWithNumpy(dir.path()));
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(dir.path() + "/train_x.npy", 1 << 20);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(DecodeNpy(*bytes).ok());
  for (std::size_t cut : {bytes->size() - 1, bytes->size() - 4, std::size_t{60}, std::size_t{9}, std::size_t{0}}) {
    SCOPED_TRACE(cut);
    EXPECT_TRUE(StatusIs(DecodeNpy(std::span(bytes->data(), cut)).status(), StatusCode::kCorruption));
  }
  std::vector<std::uint8_t> longer = *bytes;
  longer.push_back(0);
  EXPECT_TRUE(StatusIs(DecodeNpy(longer).status(), StatusCode::kCorruption));
  std::vector<std::uint8_t> no_magic = *bytes;
  no_magic[1] = 'X';
  EXPECT_TRUE(StatusIs(DecodeNpy(no_magic).status(), StatusCode::kCorruption));
  // The truncated file on disk: the load names it, and nothing is loaded.
  ASSERT_TRUE(polnode::testing::IsOk(WriteFileAtomically(
      dir.path() + "/test_x.npy", std::span<const std::uint8_t>(bytes->data(), bytes->size() - 3))));
  Result<ImageDataset> data = LoadImageDataset(dir.path());
  EXPECT_TRUE(StatusIs(data.status(), StatusCode::kCorruption));
  EXPECT_NE(data.status().message().find("test_x.npy"), std::string::npos) << data.status().ToString();
}

}  // namespace
}  // namespace polnode::solver
