// File helpers for commands: whole-file reads and atomic writes, with errors as values whose
// messages name the path and the operating system's reason.
#ifndef POLNODE_NODE_FILE_UTIL_H_
#define POLNODE_NODE_FILE_UTIL_H_

#include <string>
#include <string_view>

#include "polnode/base/status.h"

namespace polnode::node {

/// The bytes of the file at `path`. kNotFound if it does not exist; kIOError otherwise. Files
/// above `max_bytes` are refused with kResourceExhausted before being read into memory.
Result<std::string> ReadFile(const std::string& path, std::size_t max_bytes = std::size_t{64} << 20);

/// Writes `bytes` to `path` so that the file is either the old one or the complete new one:
/// a temporary file in the same directory is written, fsynced and renamed over `path`.
/// `mode` is the new file's permission bits.
[[nodiscard]] Status WriteFileAtomic(const std::string& path, std::string_view bytes, unsigned mode = 0644);

}  // namespace polnode::node

#endif  // POLNODE_NODE_FILE_UTIL_H_
