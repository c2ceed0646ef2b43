// Tabular data sets as NumPy .npy files (issue 13 item 3): float32 features and integer labels,
// for mlp: tasks. A data set is a directory holding four files, as numpy.save writes them:
//   train_x.npy  float32 [N, D], little-endian ('<f4'), C order
//   train_y.npy  integer [N] ('<i8', '<i4', '|u1' or '<u1'), every label in 0..255
//   test_x.npy   float32 [M, D]
//   test_y.npy   integer [M]
// The features go into the network as they are (no normalisation). Anything else (another dtype,
// big-endian, Fortran order, a rank or shape that does not fit, a truncated or padded payload, a
// label out of range, a NaN or infinite feature) is refused with the file and the reason.
//
// Content hash (DatasetContentHash, dataset.h, for a set whose splits hold features):
//   "polnode.tabular-dataset.v1\n", then for the train split and then the test split:
//   u64 count, u64 features per sample (little-endian), each feature's float32 bits as u32
//   little-endian, the label bytes.
#ifndef POLNODE_SOLVER_DATASET_NPY_H_
#define POLNODE_SOLVER_DATASET_NPY_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/solver/dataset.h"

namespace polnode::solver {

/// The file names of a .npy data set directory, in the order they are read.
inline constexpr std::string_view kNpyFiles[] = {"train_x.npy", "train_y.npy", "test_x.npy", "test_y.npy"};

/// Largest .npy file LoadNpyDataset reads.
inline constexpr std::uint64_t kMaxNpyBytes = std::uint64_t{2} << 30;

/// A decoded .npy file: its dtype descriptor as written ("<f4"), its shape, and its payload.
struct NpyArray {
  std::string descr;
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> data;  // exactly product(shape) * item size bytes
};

/// Decodes .npy bytes (format versions 1.0, 2.0 and 3.0) from untrusted input: the magic, a header
/// that is a Python dict literal of exactly 'descr', 'fortran_order' and 'shape', fortran_order
/// False, a descr of '<f4', '<i8', '<i4', '|u1' or '<u1', every dimension >= 0 and a payload of
/// exactly the shape's size. kCorruption naming what is wrong; kInvalidArgument for a well-formed
/// file polnode does not take (another dtype, Fortran order).
[[nodiscard]] Result<NpyArray> DecodeNpy(std::span<const std::uint8_t> bytes);

/// One split from its decoded features (float32, rank 2) and labels (an integer dtype above, rank
/// 1, the same count, each label in 0..255); rows = 1, cols = features per sample, pixels empty.
/// kInvalidArgument naming the problem. Every feature must be finite.
[[nodiscard]] Result<ImageSplit> NpySplit(const NpyArray& features, const NpyArray& labels);

/// Whether `dir` holds a .npy data set (its train_x.npy exists).
bool IsNpyDataset(std::string_view dir);

/// Reads the four files of a .npy data set directory; both splits must have the same number of
/// features; num_classes is the largest label + 1. Errors name the file.
[[nodiscard]] Result<ImageDataset> LoadNpyDataset(std::string_view dir);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_DATASET_NPY_H_
