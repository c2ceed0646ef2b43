// The block leaves of pinpoint.h through the multi-buffer SHA-256 (TensorBlockLeavesAt at every
// level this CPU runs) against the per-leaf definition, BlockLeafHash over BlockValues, bit for
// bit: ragged shapes of every rank, whose edge blocks are smaller and fill the lanes partly, and
// values with NaNs of several payloads and signs, +-0, +-inf and subnormals.
#include "polnode/consensus/pinpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "polnode/consensus/hex.h"
#include "polnode/consensus/sha256_lanes.h"

namespace polnode::consensus {
namespace {

float FloatOfBits(std::uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

std::int64_t ElementsOf(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

// Ordinary values with, about one in four, a special one: NaNs (x86's, NVIDIA's, AMD's, a
// signalling one, signed and other payloads), +-0, +-inf, subnormals.
std::vector<float> ValuesWithSpecials(std::int64_t n, std::mt19937_64& rng) {
  static constexpr std::uint32_t kSpecials[] = {0xFFC00000u, 0x7FFFFFFFu, 0x7FC00000u, 0x7F800001u, 0xFFC0BEEFu,
                                                0xFFFFFFFFu, 0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                                0x00000001u, 0x807FFFFFu, 0x00400000u};
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (float& v : values) {
    const std::uint64_t r = rng();
    v = r % 4 == 0 ? FloatOfBits(kSpecials[(r >> 8) % std::size(kSpecials)]) : normal(rng);
  }
  return values;
}

// The per-leaf definition the multi-buffer path must reproduce.
std::vector<Hash256> ReferenceLeaves(const std::vector<std::int64_t>& dims, const std::vector<float>& data) {
  std::vector<Hash256> leaves;
  for (std::uint64_t b = 0; b < BlockGrid::Of(dims).block_count(); ++b) {
    leaves.push_back(BlockLeafHash(BlockValues(dims, data, b)));
  }
  return leaves;
}

std::string DimsText(const std::vector<std::int64_t>& dims) {
  std::string text = "[";
  for (std::int64_t d : dims) text += std::to_string(d) + ",";
  return text + "]";
}

// Ranks 0 to 4; edge blocks narrower and shorter than 64, and block counts that fill the lanes'
// sets wholly, partly (one set, two sets, less than half a set) or not at all.
const std::vector<std::vector<std::int64_t>>& RaggedShapes() {
  static const std::vector<std::vector<std::int64_t>> shapes = {
      {}, {1}, {10}, {63}, {64}, {65}, {127}, {128}, {129}, {1000}, {64 * 37 + 5}, {64 * 45 + 7},
      {63, 63}, {64, 64}, {65, 65}, {127, 129}, {129, 127}, {1000, 3}, {3, 1000}, {70, 1}, {1, 70},
      {784, 256}, {320, 256}, {256, 128}, {128, 10},
      {2, 3, 70, 130}, {5, 1, 64, 64}, {4, 2, 33, 65},
      {0, 4}, {0}};
  return shapes;
}

TEST(PinpointLanes, BlockLeavesMatchThePerLeafDefinition) {
  std::mt19937_64 rng(64);
  for (const std::vector<std::int64_t>& dims : RaggedShapes()) {
    const std::vector<float> data = ValuesWithSpecials(ElementsOf(dims), rng);
    const std::vector<Hash256> reference = ReferenceLeaves(dims, data);
    for (Sha256Isa isa : AvailableSha256Isas()) {
      const std::vector<Hash256> leaves = TensorBlockLeavesAt(isa, dims, data);
      ASSERT_EQ(leaves.size(), reference.size()) << DimsText(dims);
      for (std::size_t b = 0; b < leaves.size(); ++b) {
        ASSERT_EQ(ToHex(leaves[b]), ToHex(reference[b]))
            << Sha256IsaName(isa) << " " << DimsText(dims) << " block " << b;
      }
    }
    EXPECT_EQ(TensorBlockLeaves(dims, data), reference) << DimsText(dims);
    EXPECT_EQ(TensorHashOf(dims, data), TensorHashFromBlockRoot(dims, BlockRootOf(reference))) << DimsText(dims);
    EXPECT_EQ(TensorBlockTree(dims, data).root(), BlockRootOf(reference)) << DimsText(dims);
  }
}

// Random bits (NaNs of every payload among them), and one tensor whose every element is a NaN.
TEST(PinpointLanes, RandomBitsAndAllNanMatchThePerLeafDefinition) {
  std::mt19937_64 rng(7);
  const std::vector<std::int64_t> dims = {200, 190};
  std::vector<float> bits(200 * 190);
  for (float& v : bits) v = FloatOfBits(static_cast<std::uint32_t>(rng()));
  std::vector<float> nans(200 * 190);
  for (float& v : nans) v = FloatOfBits(0x7F800000u | static_cast<std::uint32_t>(rng() % 0x7FFFFF + 1) |
                                        (static_cast<std::uint32_t>(rng() & 1) << 31));
  for (const std::vector<float>* data : {&bits, &nans}) {
    const std::vector<Hash256> reference = ReferenceLeaves(dims, *data);
    for (Sha256Isa isa : AvailableSha256Isas()) {
      EXPECT_EQ(TensorBlockLeavesAt(isa, dims, *data), reference) << Sha256IsaName(isa);
    }
  }
}

// The state hash of an MLP's state (weights, biases and their momentum, 784-256-128-10) from the
// multi-buffer tensor hashes equals the one from per-leaf tensor hashes.
TEST(PinpointLanes, StateHashOfAnMlpMatchesThePerLeafDefinition) {
  std::mt19937_64 rng(1);
  const std::vector<std::vector<std::int64_t>> shapes = {{784, 256}, {256}, {256, 128}, {128}, {128, 10}, {10}};
  std::vector<std::string> names;
  std::vector<Hash256> fast;
  std::vector<Hash256> reference;
  for (const char* kind : {"param", "momentum"}) {
    for (std::size_t t = 0; t < shapes.size(); ++t) {
      const std::vector<float> data = ValuesWithSpecials(ElementsOf(shapes[t]), rng);
      names.push_back(std::string(kind) + std::to_string(t));
      fast.push_back(TensorHashOf(shapes[t], data));
      reference.push_back(TensorHashFromBlockRoot(shapes[t], BlockRootOf(ReferenceLeaves(shapes[t], data))));
    }
  }
  EXPECT_EQ(ToHex(StateHashFromTensorHashes(100, names, fast)),
            ToHex(StateHashFromTensorHashes(100, names, reference)));
}

}  // namespace
}  // namespace polnode::consensus
