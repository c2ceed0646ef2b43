#include "polnode/solver/dataset.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <filesystem>
#include <string>

#include "polnode/kernels/cpu_backend.h"
#include "polnode/solver/dataset_npy.h"
#include "polnode/solver/model_spec.h"

namespace polnode::solver {
namespace {

// The .gz name if that file exists, else the uncompressed name if that exists, else the .gz name
// (so the error names the file the Debian package installs).
std::string PickFile(const std::filesystem::path& dir, const std::string& stem) {
  std::error_code ec;
  const std::filesystem::path gz = dir / (stem + ".gz");
  if (std::filesystem::exists(gz, ec)) return gz.string();
  const std::filesystem::path plain = dir / stem;
  if (std::filesystem::exists(plain, ec)) return plain.string();
  return gz.string();
}

void AppendU64(consensus::Sha256Hasher& h, std::uint64_t v) {
  std::array<std::uint8_t, 8> le;
  for (int i = 0; i < 8; ++i)
    le[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
  h.Update(le);
}

}  // namespace

Result<ImageDataset> LoadImageDataset(std::string_view dir_text) {
  const std::filesystem::path dir = dir_text == "fashion-mnist"
                                        ? std::filesystem::path(kFashionMnistDir)
                                        : std::filesystem::path(dir_text);
  std::error_code ec;
  if (IsNpyDataset(dir.string())) return LoadNpyDataset(dir.string());
  if (!std::filesystem::is_directory(dir, ec)) {
    std::string msg = "data set directory " + dir.string() + " does not exist";
    if (dir == std::filesystem::path(kFashionMnistDir)) {
      msg += " (install Debian's dataset-fashion-mnist package)";
    }
    return Status::NotFound(msg);
  }
  ImageDataset data;
  POLNODE_ASSIGN_OR_RETURN(data.train, ReadIdxSplit(PickFile(dir, "train-images-idx3-ubyte"),
                                                    PickFile(dir, "train-labels-idx1-ubyte")));
  POLNODE_ASSIGN_OR_RETURN(data.test, ReadIdxSplit(PickFile(dir, "t10k-images-idx3-ubyte"),
                                                   PickFile(dir, "t10k-labels-idx1-ubyte")));
  if (data.train.rows != data.test.rows || data.train.cols != data.test.cols) {
    return Status::Corruption(
        "data set " + dir.string() + ": train images are " + std::to_string(data.train.rows) + "x" +
        std::to_string(data.train.cols) + " but test images are " + std::to_string(data.test.rows) +
        "x" + std::to_string(data.test.cols));
  }
  std::uint8_t max_label = 0;
  for (std::uint8_t l : data.train.labels) max_label = std::max(max_label, l);
  for (std::uint8_t l : data.test.labels) max_label = std::max(max_label, l);
  data.num_classes = max_label + 1;
  data.train.normalization = ComputeNormalization(data.train);
  data.test.normalization = data.train.normalization;
  return data;
}

Result<std::vector<std::string>> DatasetFiles(std::string_view model_text, std::string_view location) {
  std::vector<std::string> files;
  if (IsGptSpec(model_text)) {
    files.push_back(location == "jargon" ? std::string(kJargonPath) : std::string(location));
  } else {
    const std::filesystem::path dir =
        location == "fashion-mnist" ? std::filesystem::path(kFashionMnistDir) : std::filesystem::path(location);
    if (IsNpyDataset(dir.string())) {
      for (std::string_view name : kNpyFiles) files.push_back((dir / std::string(name)).string());
    } else {
      for (const char* stem : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                               "t10k-labels-idx1-ubyte"}) {
        files.push_back(PickFile(dir, stem));
      }
    }
  }
  for (const std::string& f : files) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(f, ec)) return Status::NotFound("data set file " + f + " does not exist");
  }
  return files;
}

Result<ImageDataset> LoadDatasetFor(std::string_view model_text, std::string_view location) {
  if (!IsGptSpec(model_text)) return LoadImageDataset(location);
  POLNODE_ASSIGN_OR_RETURN(TextCorpus corpus, LoadTextCorpus(location));
  return TextDataset(std::move(corpus));
}

ImageDataset TextDataset(TextCorpus corpus) {
  ImageDataset data;
  data.num_classes = static_cast<int>(corpus.vocab_size());
  data.text = std::move(corpus);
  return data;
}

consensus::Hash256 DatasetContentHash(const ImageDataset& data) {
  if (data.text) return TextContentHash(*data.text);
  consensus::Sha256Hasher h;
  if (!data.train.features.empty() || !data.test.features.empty()) {
    h.Update(std::string_view("polnode.tabular-dataset.v1\n"));
    for (const ImageSplit* split : {&data.train, &data.test}) {
      AppendU64(h, static_cast<std::uint64_t>(split->count));
      AppendU64(h, static_cast<std::uint64_t>(split->cols));
      std::vector<std::uint8_t> le(split->features.size() * 4);
      for (std::size_t i = 0; i < split->features.size(); ++i) {
        const std::uint32_t bits = std::bit_cast<std::uint32_t>(split->features[i]);
        for (int b = 0; b < 4; ++b) le[i * 4 + static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(bits >> (8 * b));
      }
      h.Update(le);
      h.Update(split->labels);
    }
    return h.Finalize();
  }
  h.Update(std::string_view("polnode.image-dataset.v1\n"));
  for (const ImageSplit* split : {&data.train, &data.test}) {
    AppendU64(h, static_cast<std::uint64_t>(split->count));
    AppendU64(h, static_cast<std::uint64_t>(split->rows));
    AppendU64(h, static_cast<std::uint64_t>(split->cols));
    h.Update(split->pixels);
    h.Update(split->labels);
  }
  return h.Finalize();
}

PixelNormalization ComputeNormalization(const ImageSplit& split) {
  // Exact: at most 2^32 * 2^32 pixels would overflow, and IDX dimensions keep far below that.
  std::uint64_t sum = 0, sum_sq = 0;
  for (std::uint8_t p : split.pixels) {
    sum += p;
    sum_sq += std::uint64_t{p} * p;
  }
  PixelNormalization norm;
  if (split.pixels.empty()) return norm;
  const double n = static_cast<double>(split.pixels.size());
  const double m = static_cast<double>(sum) / n;
  const double var = static_cast<double>(sum_sq) / n - m * m;
  norm.mean = static_cast<float>(m / 255.0);
  norm.stddev = var > 0.0 ? static_cast<float>(std::sqrt(var) / 255.0) : 1.0f;
  if (!(norm.stddev > 0.0f)) norm.stddev = 1.0f;  // a variance too small for float
  return norm;
}

float PixelToFloat(std::uint8_t x, const PixelNormalization& norm) {
  return (static_cast<float>(x) / 255.0f - norm.mean) / norm.stddev;
}

Status GatherBatch(const ImageSplit& split, std::span<const std::uint32_t> indices,
                   const kernels::Shape& image_shape, kernels::Tensor& images,
                   kernels::Tensor& labels) {
  const std::int64_t batch = static_cast<std::int64_t>(indices.size());
  const std::int64_t per_image = split.pixels_per_image();
  if (image_shape.empty() || image_shape[0] != batch ||
      kernels::NumElements(image_shape) != batch * per_image) {
    return Status::InvalidArgument("batch shape " + kernels::ShapeToString(image_shape) +
                                   " does not hold " + std::to_string(batch) + " images of " +
                                   std::to_string(per_image) + " pixels");
  }
  for (std::uint32_t i : indices) {
    if (i >= split.count) {
      return Status::InvalidArgument("sample index " + std::to_string(i) + " out of range (" +
                                     std::to_string(split.count) + " samples)");
    }
  }
  images.Resize(image_shape);
  labels.Resize({batch});
  float* out = images.data();
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::uint32_t i = indices[static_cast<std::size_t>(b)];
    labels.data()[b] = static_cast<float>(split.labels[i]);
    if (!split.features.empty()) {
      std::copy_n(split.features.data() + static_cast<std::int64_t>(i) * per_image, per_image, out + b * per_image);
      continue;
    }
    // PixelToFloat's operations a register at a time: its bits, at less than half the cost of a
    // table look-up per pixel (the look-up was 8% of the small MLP's step on one core, this 3%).
    const std::span<const std::uint8_t> src(split.pixels.data() + static_cast<std::int64_t>(i) * per_image,
                                            static_cast<std::size_t>(per_image));
    kernels::NormalizePixels(src, split.normalization.mean, split.normalization.stddev, out + b * per_image);
  }
  return Status::Ok();
}

BatchPosition PositionOfStep(std::int64_t step, std::int64_t steps_per_epoch, std::int64_t batch) {
  return {step / steps_per_epoch, (step % steps_per_epoch) * batch};
}

}  // namespace polnode::solver
