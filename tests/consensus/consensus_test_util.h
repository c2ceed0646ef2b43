// Helpers shared by the consensus test files.
#ifndef POLNODE_TESTS_CONSENSUS_CONSENSUS_TEST_UTIL_H_
#define POLNODE_TESTS_CONSENSUS_CONSENSUS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
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

}  // namespace polnode::consensus::testing

#endif  // POLNODE_TESTS_CONSENSUS_CONSENSUS_TEST_UTIL_H_
