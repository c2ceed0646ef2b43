// Whole-file reads with a size bound and crash-safe whole-file writes, shared by every layer that
// touches the disk outside RocksDB (blobs, proof progress, task files, key-less config files).
#ifndef POLNODE_BASE_FILE_UTIL_H_
#define POLNODE_BASE_FILE_UTIL_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"

namespace polnode {

/// Writes `bytes` to `path` atomically: a temporary file in the same directory is written,
/// fsynced and renamed over `path`, and the directory is fsynced so the rename itself survives a
/// power loss. The new file has mode 0644. kIOError with the OS reason on failure (no temporary
/// file is left behind).
[[nodiscard]] Status WriteFileAtomically(const std::string& path, std::span<const std::uint8_t> bytes);
[[nodiscard]] Status WriteFileAtomically(const std::string& path, std::string_view bytes);

/// Reads a whole file of at most `max_bytes`. kNotFound when absent, kResourceExhausted when
/// larger, kIOError for other failures.
Result<std::vector<std::uint8_t>> ReadWholeFile(const std::string& path, std::uint64_t max_bytes);

}  // namespace polnode

#endif  // POLNODE_BASE_FILE_UTIL_H_
