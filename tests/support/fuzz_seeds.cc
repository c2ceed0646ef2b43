#include "polnode/testing/fuzz_seeds.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "polnode/base/file_util.h"

namespace polnode::testing {

std::string FuzzSeed(std::string_view target, std::string_view name) {
  // The largest committed seed is a few KiB; the bound only keeps a mistaken path from reading a
  // large file.
  constexpr std::uint64_t kMaxSeedBytes = 1 << 20;
  const std::string path = std::string(POLNODE_SOURCE_DIR) + "/fuzz/corpus/" + std::string(target) + "/" + std::string(name);
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(path, kMaxSeedBytes);
  if (!bytes.ok()) {
    ADD_FAILURE() << "fuzz seed " << path << ": " << bytes.status().ToString();
    return "";
  }
  return std::string(bytes->begin(), bytes->end());
}

}  // namespace polnode::testing
