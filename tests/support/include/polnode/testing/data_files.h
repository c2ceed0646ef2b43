// Files for tests and fuzz targets: one read back whole, IDX files (the MNIST container
// solver::LoadImageDataset reads), plain or gzip-compressed, and a whole data set written as the
// four files it loads.
#ifndef POLNODE_TESTING_DATA_FILES_H_
#define POLNODE_TESTING_DATA_FILES_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/solver/dataset.h"

namespace polnode::testing {

/// The whole file at `path` as text; empty when it cannot be read.
std::string ReadFileText(const std::string& path);

/// An IDX file's bytes: magic 00 00 08 <rank>, the dimensions as big-endian uint32, the payload.
std::vector<std::uint8_t> IdxBytes(const std::vector<std::uint32_t>& dims, const std::vector<std::uint8_t>& payload);

/// Writes `bytes` to `path` as they are.
[[nodiscard]] Status WritePlainFile(const std::string& path, std::span<const std::uint8_t> bytes);
/// Writes `bytes` to `path` gzip-compressed.
[[nodiscard]] Status WriteGzipFile(const std::string& path, std::span<const std::uint8_t> bytes);

/// Writes `data` into the existing directory `dir` as {train,t10k}-{images-idx3,labels-idx1}-ubyte
/// (uncompressed), so that LoadImageDataset(dir) reads it back.
[[nodiscard]] Status WriteIdxDataset(const std::string& dir, const solver::ImageDataset& data);

}  // namespace polnode::testing

#endif  // POLNODE_TESTING_DATA_FILES_H_
