// The multi-buffer SHA-256 (sha256_lanes.h) at every level this CPU runs, bit for bit against
// OpenSSL's one-message SHA-256: every length across the padding's edge cases and long messages,
// lanes of different content in one call, and groups that do not fill the lanes.
#include "polnode/consensus/sha256_lanes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "polnode/consensus/hex.h"
#include "polnode/consensus/sha256.h"

namespace polnode::consensus {
namespace {

// `count` messages of `length` random bytes, each different.
std::vector<std::vector<std::uint8_t>> RandomMessages(std::size_t count, std::size_t length, std::mt19937_64& rng) {
  std::vector<std::vector<std::uint8_t>> messages(count, std::vector<std::uint8_t>(length));
  for (std::vector<std::uint8_t>& m : messages) {
    for (std::uint8_t& b : m) b = static_cast<std::uint8_t>(rng());
  }
  return messages;
}

// Every message's digest at `isa` equals Sha256 of it.
void ExpectLanesMatchOpenSsl(Sha256Isa isa, const std::vector<std::vector<std::uint8_t>>& messages) {
  std::vector<std::span<const std::uint8_t>> spans(messages.begin(), messages.end());
  std::vector<Hash256> digests(messages.size());
  Sha256Lanes(isa, spans, digests);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    ASSERT_EQ(ToHex(digests[i]), ToHex(Sha256(messages[i])))
        << Sha256IsaName(isa) << ", length " << messages[i].size() << ", message " << i;
  }
}

TEST(Sha256Lanes, LevelsStartWithOpenSslAndNameTheirLanes) {
  const std::span<const Sha256Isa> isas = AvailableSha256Isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Sha256Isa::kOpenSsl);
  EXPECT_NE(std::find(isas.begin(), isas.end(), BestSha256Isa()), isas.end());
  if (isas.back() == Sha256Isa::kAvx512) {
    EXPECT_EQ(BestSha256Isa(), Sha256Isa::kAvx512);
  }
  for (Sha256Isa isa : isas) {
    const std::size_t lanes = Sha256LaneCount(isa);
    EXPECT_EQ(lanes, isa == Sha256Isa::kOpenSsl ? 1u : isa == Sha256Isa::kAvx2 ? 16u : 32u) << Sha256IsaName(isa);
  }
}

// Lengths 0 to 300 cover every position of the 0x80 byte and of the length within a block (55 and
// 56 bytes are where the padding spills into a second block).
TEST(Sha256Lanes, EveryShortLengthMatchesOpenSsl) {
  std::mt19937_64 rng(256);
  for (Sha256Isa isa : AvailableSha256Isas()) {
    const std::size_t lanes = Sha256LaneCount(isa);
    for (std::size_t length = 0; length <= 300; ++length) {
      ExpectLanesMatchOpenSsl(isa, RandomMessages(lanes, length, rng));
    }
  }
}

// Long messages, the block leaf's length (16385 bytes) among them, around block boundaries.
TEST(Sha256Lanes, LongLengthsMatchOpenSsl) {
  std::mt19937_64 rng(16385);
  std::vector<std::size_t> lengths = {257, 4097, 16385, 16384, 16383, 100003};
  for (std::size_t k : {2u, 5u, 16u, 63u, 256u}) {
    for (std::size_t length : {64 * k - 9, 64 * k - 8, 64 * k - 1, 64 * k, 64 * k + 1}) lengths.push_back(length);
  }
  for (Sha256Isa isa : AvailableSha256Isas()) {
    for (std::size_t length : lengths) ExpectLanesMatchOpenSsl(isa, RandomMessages(Sha256LaneCount(isa), length, rng));
  }
}

// Several groups in one call, the last one partial (its idle lanes must not leak into the
// digests), and lanes that differ in one byte only.
TEST(Sha256Lanes, PartialGroupsAndNearlyEqualLanes) {
  std::mt19937_64 rng(3);
  for (Sha256Isa isa : AvailableSha256Isas()) {
    const std::size_t lanes = Sha256LaneCount(isa);
    for (std::size_t count : {std::size_t{1}, lanes - 1 + (lanes == 1), 2 * lanes + 3}) {
      ExpectLanesMatchOpenSsl(isa, RandomMessages(count, 200, rng));
    }
    std::vector<std::vector<std::uint8_t>> close(lanes, RandomMessages(1, 1000, rng)[0]);
    for (std::size_t l = 0; l < lanes; ++l) close[l][(l * 61) % 1000] ^= static_cast<std::uint8_t>(1u << (l % 8));
    ExpectLanesMatchOpenSsl(isa, close);
    std::vector<std::span<const std::uint8_t>> none;
    std::vector<Hash256> no_digests;
    Sha256Lanes(isa, none, no_digests);
  }
}

}  // namespace
}  // namespace polnode::consensus
