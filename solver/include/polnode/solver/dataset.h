// Image classification data sets in the IDX format (MNIST, Fashion-MNIST), their content hash, the
// per-epoch sample order and the conversion of a batch to tensors (DESIGN.md section 4: the task
// fixes the data by content hash and the order as a pure function of seed and epoch).
#ifndef POLNODE_SOLVER_DATASET_H_
#define POLNODE_SOLVER_DATASET_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/kernels/tensor.h"
#include "polnode/solver/text_data.h"

namespace polnode::solver {

/// How pixel bytes become floats: PixelToFloat(x) = (x / 255 - mean) / stddev, each operation
/// one float rounding in that order. The default (0, 1) is plain x / 255.
struct PixelNormalization {
  float mean = 0.0f;
  float stddev = 1.0f;
};

/// One split (train or test): `count` grayscale images of rows x cols bytes, row-major, image after
/// image, and one label byte per image, plus how its pixels become floats (LoadImageDataset gives
/// both splits the train split's ComputeNormalization, so test images are scaled like training
/// images).
struct ImageSplit {
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::uint8_t> pixels;  // count * rows * cols
  // A tabular split (.npy, dataset_npy.h) holds float32 features instead of pixels: count * rows *
  // cols of them (rows 1), fed to the model as they are; pixels is then empty.
  std::vector<float> features;
  std::vector<std::uint8_t> labels;  // count
  PixelNormalization normalization;

  std::int64_t pixels_per_image() const { return rows * cols; }
};

/// A task's data set: both image splits and the number of classes (largest label of either split
/// + 1), or, for a language model (a gpt: task), a text corpus in `text`; the image splits are
/// then empty and num_classes is the corpus's vocabulary size. (Every layer passes a task's data
/// as this one type, so a text task travels the same paths as an image task.)
struct ImageDataset {
  ImageSplit train;
  ImageSplit test;
  int num_classes = 0;
  std::optional<TextCorpus> text;
};

/// The data set a model trains on: for a gpt: model, LoadTextCorpus(location) wrapped in an
/// ImageDataset; otherwise LoadImageDataset(location).
Result<ImageDataset> LoadDatasetFor(std::string_view model_text, std::string_view location);

/// The files LoadDatasetFor(model_text, location) reads, in the order it reads them: a gpt:
/// model's corpus file, the four files of a .npy data set directory, or the four IDX files of an
/// image data set directory (each the .gz name, or the plain one where only that exists). This is what a submitter serves for the data set
/// (node/rpc/file_http.h); the same loader then reads them back from the fetched copies.
/// kNotFound naming the first file that does not exist.
Result<std::vector<std::string>> DatasetFiles(std::string_view model_text, std::string_view location);

/// A text data set (ImageDataset::text set, num_classes its vocabulary size).
ImageDataset TextDataset(TextCorpus corpus);

/// The mean and standard deviation of the split's pixels on the x / 255 scale, a pure function of
/// its bytes: the byte sum and the sum of squares are exact integers; then, in double,
/// m = sum / n, var = sumsq / n - m * m, and mean = float(m / 255), stddev = float(sqrt(var) /
/// 255), every step correctly rounded. A split of one constant value gets stddev 1.
PixelNormalization ComputeNormalization(const ImageSplit& split);

/// The directory Debian's dataset-fashion-mnist package installs.
inline constexpr std::string_view kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// The dimensions and payload of an IDX file.
struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> data;
};

/// Reads an IDX file of unsigned bytes (type 0x08), gzip-compressed (detected by the gzip magic)
/// or plain. Checks: the magic (two zero bytes, type 0x08, `expected_rank` dimensions), every
/// dimension >= 1, and that the payload holds exactly the product of the dimensions. Returns the
/// dimensions and the payload. kNotFound/kIOError for a file that cannot be read, kCorruption for
/// a bad gzip stream or a malformed IDX file; every message names the path.
Result<IdxArray> ReadIdxFile(const std::string& path, int expected_rank);

/// Reads one split from an images file (rank 3: count, rows, cols) and a labels file (rank 1:
/// count); the counts must agree.
Result<ImageSplit> ReadIdxSplit(const std::string& images_path, const std::string& labels_path);

/// Loads `{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz` from `dir` (or, when a .gz file is
/// absent, the same name without .gz); a directory holding a .npy data set (dataset_npy.h) is
/// read by LoadNpyDataset instead. `dir` may be "fashion-mnist", meaning kFashionMnistDir.
/// Both splits must have the same image size. Both get ComputeNormalization(train).
Result<ImageDataset> LoadImageDataset(std::string_view dir);

/// SHA-256 over the canonical encoding of the decoded data set, independent of gzip settings:
///   "polnode.image-dataset.v1\n", then for the train split and then the test split:
///   u64 count, u64 rows, u64 cols (little-endian), the pixel bytes, the label bytes.
/// A text data set's hash is TextContentHash of its corpus; a tabular one's is defined in
/// dataset_npy.h.
consensus::Hash256 DatasetContentHash(const ImageDataset& data);

/// The float value of a pixel byte: (x / 255 - norm.mean) / norm.stddev in float, one rounding
/// per operation in that order.
float PixelToFloat(std::uint8_t x, const PixelNormalization& norm);

/// Fills `images` (shape `image_shape`, whose first dimension is indices.size() and whose other
/// dimensions multiply to the split's pixels per image) with PixelToFloat(x, split.normalization)
/// of the chosen samples in the given order (a tabular split's features as they are), and `labels` (shape [batch]) with their labels as
/// exact floats. kInvalidArgument for a shape mismatch or an index out of range.
[[nodiscard]] Status GatherBatch(const ImageSplit& split, std::span<const std::uint32_t> indices,
                                 const kernels::Shape& image_shape, kernels::Tensor& images,
                                 kernels::Tensor& labels);

/// Where step `step` takes its batch from: epoch = step / steps_per_epoch and the batch's position
/// within the epoch. steps_per_epoch = count / batch (the last partial batch of every epoch is
/// dropped, so every step sees exactly `batch` samples).
struct BatchPosition {
  std::int64_t epoch = 0;
  std::int64_t first = 0;  // index into the epoch's permutation of the batch's first sample
};
BatchPosition PositionOfStep(std::int64_t step, std::int64_t steps_per_epoch, std::int64_t batch);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_DATASET_H_
