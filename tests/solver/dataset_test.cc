#include "polnode/solver/dataset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "polnode/testing/data_files.h"
#include "polnode/testing/fashion_mnist.h"
#include "polnode/testing/status_matchers.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::solver {
namespace {

using polnode::testing::IdxBytes;
using polnode::testing::IsOk;
using polnode::testing::TempDir;

void WriteGzip(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  ASSERT_TRUE(IsOk(polnode::testing::WriteGzipFile(path, bytes)));
}

void WritePlain(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  ASSERT_TRUE(IsOk(polnode::testing::WritePlainFile(path, bytes)));
}

std::vector<std::uint8_t> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Three 2x3 images with pixel value 10*i + p, labels 2, 0, 1.
std::vector<std::uint8_t> TinyPixels() {
  std::vector<std::uint8_t> px;
  for (int i = 0; i < 3; ++i) {
    for (int p = 0; p < 6; ++p) px.push_back(static_cast<std::uint8_t>(10 * i + p));
  }
  return px;
}
const std::vector<std::uint8_t> kTinyLabels = {2, 0, 1};

// Writes a complete tiny data set (train = the three images, test = the first two) into `dir`.
void WriteTinyDataset(const TempDir& dir) {
  const std::vector<std::uint8_t> px = TinyPixels();
  WriteGzip(dir.File("train-images-idx3-ubyte.gz"), IdxBytes({3, 2, 3}, px));
  WriteGzip(dir.File("train-labels-idx1-ubyte.gz"), IdxBytes({3}, kTinyLabels));
  WriteGzip(dir.File("t10k-images-idx3-ubyte.gz"),
            IdxBytes({2, 2, 3}, std::vector<std::uint8_t>(px.begin(), px.begin() + 12)));
  // The test labels are stored uncompressed: the loader accepts either form.
  WritePlain(dir.File("t10k-labels-idx1-ubyte"), IdxBytes({2}, {2, 0}));
}

TEST(IdxReaderTest, ReadsGzipAndPlainFiles) {
  TempDir dir("idx");
  const std::vector<std::uint8_t> bytes = IdxBytes({3, 2, 3}, TinyPixels());
  WriteGzip(dir.File("a.gz"), bytes);
  WritePlain(dir.File("a"), bytes);
  for (const char* name : {"a.gz", "a"}) {
    Result<IdxArray> array = ReadIdxFile(dir.File(name), 3);
    ASSERT_TRUE(array.ok()) << array.status().ToString();
    EXPECT_EQ(array->dims, (std::vector<std::int64_t>{3, 2, 3}));
    EXPECT_EQ(array->data, TinyPixels());
  }
}

TEST(IdxReaderTest, MissingFileIsNotFoundNamingThePath) {
  TempDir dir("idx");
  const std::string path = dir.File("nope.gz");
  Result<IdxArray> array = ReadIdxFile(path, 1);
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().code(), StatusCode::kNotFound);
  EXPECT_NE(array.status().message().find(path), std::string::npos) << array.status().ToString();
}

TEST(IdxReaderTest, CorruptGzipIsCorruptionNamingThePath) {
  TempDir dir("idx");
  const std::string path = dir.File("bad.gz");
  WriteGzip(path, IdxBytes({3, 2, 3}, TinyPixels()));
  std::vector<std::uint8_t> gz = ReadFile(path);
  for (std::size_t i = 12; i < gz.size() - 8; ++i) gz[i] ^= 0x5a;  // damage the deflate data
  WritePlain(path, gz);
  Result<IdxArray> array = ReadIdxFile(path, 3);
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().code(), StatusCode::kCorruption);
  EXPECT_NE(array.status().message().find(path), std::string::npos) << array.status().ToString();
}

TEST(IdxReaderTest, TruncatedGzipIsCorruption) {
  TempDir dir("idx");
  const std::string path = dir.File("short.gz");
  WriteGzip(path, IdxBytes({3, 2, 3}, TinyPixels()));
  std::vector<std::uint8_t> gz = ReadFile(path);
  ASSERT_GT(gz.size(), 20u);
  gz.erase(gz.end() - 10, gz.end());
  WritePlain(path, gz);
  Result<IdxArray> array = ReadIdxFile(path, 3);
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().code(), StatusCode::kCorruption);
  EXPECT_NE(array.status().message().find("truncated"), std::string::npos)
      << array.status().ToString();
}

TEST(IdxReaderTest, MalformedHeadersAndSizesAreCorruption) {
  TempDir dir("idx");
  struct Case {
    std::vector<std::uint8_t> bytes;
    int rank;
    std::string expect;
  };
  std::vector<std::uint8_t> wrong_type = IdxBytes({3}, {1, 2, 3});
  wrong_type[2] = 0x0D;  // float elements
  std::vector<std::uint8_t> nonzero_magic = IdxBytes({3}, {1, 2, 3});
  nonzero_magic[0] = 1;
  const std::vector<Case> cases = {
      {{0, 0}, 1, "too short"},
      {nonzero_magic, 1, "not an IDX file"},
      {wrong_type, 1, "element type"},
      {IdxBytes({3}, {1, 2, 3}), 3, "dimensions, expected 3"},
      {{0, 0, 0x08, 3, 0, 0, 0, 3, 0, 0}, 3, "header is truncated"},
      {IdxBytes({4}, {1, 2, 3}), 1, "more data than the file holds"},
      {IdxBytes({2}, {1, 2, 3}), 1, "need 2 bytes of data, the file holds 3"},
      {IdxBytes({0}, {}), 1, "dimension 0 is 0"},
      {IdxBytes({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {1}), 3, "more data than the file holds"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir.File("case" + std::to_string(i));
    WritePlain(path, cases[i].bytes);
    Result<IdxArray> array = ReadIdxFile(path, cases[i].rank);
    ASSERT_FALSE(array.ok()) << "case " << i;
    EXPECT_EQ(array.status().code(), StatusCode::kCorruption) << "case " << i;
    EXPECT_NE(array.status().message().find(path), std::string::npos) << array.status().ToString();
    EXPECT_NE(array.status().message().find(cases[i].expect), std::string::npos)
        << "case " << i << ": " << array.status().ToString();
  }
}

TEST(IdxReaderTest, GarbageAfterTheGzipStreamIsCorruption) {
  TempDir dir("idx");
  const std::string path = dir.File("tail.gz");
  WriteGzip(path, IdxBytes({3}, {1, 2, 3}));
  std::vector<std::uint8_t> gz = ReadFile(path);
  gz.push_back(0x42);
  WritePlain(path, gz);
  Result<IdxArray> array = ReadIdxFile(path, 1);
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().code(), StatusCode::kCorruption);
}

TEST(DatasetTest, LoadsADirectoryAndHashesTheDecodedContent) {
  TempDir dir("ds");
  WriteTinyDataset(dir);
  Result<ImageDataset> data = LoadImageDataset(dir.path());
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->train.count, 3);
  EXPECT_EQ(data->train.rows, 2);
  EXPECT_EQ(data->train.cols, 3);
  EXPECT_EQ(data->test.count, 2);
  EXPECT_EQ(data->num_classes, 3);
  EXPECT_EQ(data->train.labels, kTinyLabels);

  // The hash is of the decoded content: storing the same bytes uncompressed changes nothing...
  TempDir plain("ds");
  const std::vector<std::uint8_t> px = TinyPixels();
  WritePlain(plain.File("train-images-idx3-ubyte"), IdxBytes({3, 2, 3}, px));
  WritePlain(plain.File("train-labels-idx1-ubyte"), IdxBytes({3}, kTinyLabels));
  WritePlain(plain.File("t10k-images-idx3-ubyte"),
             IdxBytes({2, 2, 3}, std::vector<std::uint8_t>(px.begin(), px.begin() + 12)));
  WritePlain(plain.File("t10k-labels-idx1-ubyte"), IdxBytes({2}, {2, 0}));
  Result<ImageDataset> same = LoadImageDataset(plain.path());
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(DatasetContentHash(*data), DatasetContentHash(*same));
  // ...while any changed label or pixel does.
  ImageDataset changed = *data;
  changed.test.labels[1] = 1;
  EXPECT_NE(DatasetContentHash(*data), DatasetContentHash(changed));
  changed = *data;
  changed.train.pixels[5] ^= 1;
  EXPECT_NE(DatasetContentHash(*data), DatasetContentHash(changed));
}

TEST(DatasetTest, MissingDirectoryOrFileIsNotFound) {
  Result<ImageDataset> none = LoadImageDataset("/nonexistent/polnode-data");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("/nonexistent/polnode-data"), std::string::npos);

  TempDir dir("ds");
  WriteTinyDataset(dir);
  std::filesystem::remove(dir.File("t10k-images-idx3-ubyte.gz"));
  Result<ImageDataset> partial = LoadImageDataset(dir.path());
  ASSERT_FALSE(partial.ok());
  EXPECT_EQ(partial.status().code(), StatusCode::kNotFound);
  EXPECT_NE(partial.status().message().find("t10k-images-idx3-ubyte.gz"), std::string::npos)
      << partial.status().ToString();
}

TEST(DatasetTest, ImageAndLabelCountsMustAgree) {
  TempDir dir("ds");
  WriteTinyDataset(dir);
  WriteGzip(dir.File("train-labels-idx1-ubyte.gz"), IdxBytes({2}, {1, 0}));
  Result<ImageDataset> data = LoadImageDataset(dir.path());
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), StatusCode::kCorruption);
  EXPECT_NE(data.status().message().find("3 images but"), std::string::npos)
      << data.status().ToString();
}

TEST(DatasetTest, GatherBatchConvertsPixelsExactlyInTheGivenOrder) {
  TempDir dir("ds");
  WriteTinyDataset(dir);
  Result<ImageDataset> data = LoadImageDataset(dir.path());
  ASSERT_TRUE(data.ok());
  kernels::Tensor images, labels;
  const std::vector<std::uint32_t> order = {2, 0};
  const PixelNormalization norm = data->train.normalization;
  EXPECT_EQ(data->test.normalization.mean, norm.mean);
  EXPECT_EQ(data->test.normalization.stddev, norm.stddev);
  ASSERT_TRUE(GatherBatch(data->train, order, {2, 1, 2, 3}, images, labels).ok());
  EXPECT_EQ(images.shape(), (kernels::Shape{2, 1, 2, 3}));
  for (int p = 0; p < 6; ++p) {
    EXPECT_EQ(images.data()[p], (static_cast<float>(20 + p) / 255.0f - norm.mean) / norm.stddev);
    EXPECT_EQ(images.data()[6 + p], (static_cast<float>(p) / 255.0f - norm.mean) / norm.stddev);
  }
  EXPECT_EQ(labels.data()[0], 1.0f);
  EXPECT_EQ(labels.data()[1], 2.0f);
  const PixelNormalization plain;
  EXPECT_EQ(PixelToFloat(0, plain), 0.0f);
  EXPECT_EQ(PixelToFloat(255, plain), 1.0f);
  EXPECT_EQ(PixelToFloat(51, plain), 0.2f);

  EXPECT_FALSE(GatherBatch(data->train, order, {2, 5}, images, labels).ok());
  const std::vector<std::uint32_t> out_of_range = {3};
  EXPECT_FALSE(GatherBatch(data->train, out_of_range, {1, 6}, images, labels).ok());
}

TEST(DatasetTest, NormalizationIsTheExactMeanAndDeviationOfTheTrainPixels) {
  ImageSplit split;
  split.pixels = {0, 0, 255, 255};
  PixelNormalization norm = ComputeNormalization(split);
  EXPECT_EQ(norm.mean, 0.5f);
  EXPECT_EQ(norm.stddev, 0.5f);
  // The tiny data set: bytes 0..25 in three runs; checked against a direct computation.
  double sum = 0.0, sum_sq = 0.0;
  for (std::uint8_t p : TinyPixels()) {
    sum += p;
    sum_sq += static_cast<double>(p) * p;
  }
  split.pixels = TinyPixels();
  norm = ComputeNormalization(split);
  const double m = sum / 18.0;
  EXPECT_EQ(norm.mean, static_cast<float>(m / 255.0));
  EXPECT_EQ(norm.stddev, static_cast<float>(std::sqrt(sum_sq / 18.0 - m * m) / 255.0));
  split.pixels = {7, 7, 7};
  EXPECT_EQ(ComputeNormalization(split).stddev, 1.0f);
}

TEST(DatasetTest, StepsMapToEpochsAndDropTheLastPartialBatch) {
  // 10 samples, batch 3: 3 steps per epoch, sample 9 is never used.
  EXPECT_EQ(PositionOfStep(0, 3, 3).epoch, 0);
  EXPECT_EQ(PositionOfStep(2, 3, 3).first, 6);
  EXPECT_EQ(PositionOfStep(3, 3, 3).epoch, 1);
  EXPECT_EQ(PositionOfStep(3, 3, 3).first, 0);
  EXPECT_EQ(PositionOfStep(7, 3, 3).epoch, 2);
  EXPECT_EQ(PositionOfStep(7, 3, 3).first, 3);
}

TEST(DatasetTest, FashionMnistHasTheExpectedShape) {
  POLNODE_REQUIRE_FASHION_MNIST(data);
  EXPECT_EQ(data->train.count, 60000);
  EXPECT_EQ(data->test.count, 10000);
  EXPECT_EQ(data->train.rows, 28);
  EXPECT_EQ(data->train.cols, 28);
  EXPECT_EQ(data->num_classes, 10);
  // The published statistics of Fashion-MNIST's training images.
  EXPECT_NEAR(data->train.normalization.mean, 0.2860, 1e-4);
  EXPECT_NEAR(data->train.normalization.stddev, 0.3530, 1e-4);
}

}  // namespace
}  // namespace polnode::solver
