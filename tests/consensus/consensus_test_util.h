// Helpers shared by the consensus test files.
#ifndef POLNODE_TESTS_CONSENSUS_CONSENSUS_TEST_UTIL_H_
#define POLNODE_TESTS_CONSENSUS_CONSENSUS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/consensus/hex.h"

namespace polnode::consensus::testing {

/// Bytes from hex text; fails the current test on malformed hex.
inline std::vector<std::uint8_t> Unhex(std::string_view hex) {
  Result<std::vector<std::uint8_t>> bytes = HexToBytes(hex);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString() << " for " << hex;
  return bytes.ok() ? *bytes : std::vector<std::uint8_t>{};
}

/// A fresh empty directory, removed with its contents when the object goes away.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::path(::testing::TempDir()) / "polnode-test-XXXXXX").string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    char* made = ::mkdtemp(buf.data());
    EXPECT_NE(made, nullptr) << "mkdtemp failed for " << pattern;
    if (made != nullptr) path_ = made;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string File(std::string_view name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace polnode::consensus::testing

#endif  // POLNODE_TESTS_CONSENSUS_CONSENSUS_TEST_UTIL_H_
