// The pinpoint game tree and hashes: shape, descent invariants, and pinned known answers.
#include "polnode/consensus/game_tree.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "polnode/consensus/hex.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/pinpoint.h"

namespace polnode::consensus {
namespace {

Hash256 Leaf(std::uint64_t i) { return Sha256("leaf " + std::to_string(i)); }

std::vector<Hash256> Leaves(std::uint64_t n) {
  std::vector<Hash256> leaves;
  for (std::uint64_t i = 0; i < n; ++i) leaves.push_back(Leaf(i));
  return leaves;
}

TEST(GameTree, DepthIsCeilLog2) {
  EXPECT_EQ(GameTreeDepth(1), 0u);
  EXPECT_EQ(GameTreeDepth(2), 1u);
  EXPECT_EQ(GameTreeDepth(3), 2u);
  EXPECT_EQ(GameTreeDepth(4), 2u);
  EXPECT_EQ(GameTreeDepth(5), 3u);
  EXPECT_EQ(GameTreeDepth(1024), 10u);
  EXPECT_EQ(GameTreeDepth(1025), 11u);
}

TEST(GameTree, PadsWithZeroLeavesAndHashesPairs) {
  const std::vector<Hash256> leaves = Leaves(3);
  GameTree tree(leaves);
  EXPECT_EQ(tree.depth(), 2u);
  const Hash256 left = MerkleNodeHash(leaves[0], leaves[1]);
  const Hash256 right = MerkleNodeHash(leaves[2], Hash256{});
  EXPECT_EQ(tree.root(), MerkleNodeHash(left, right));
  EXPECT_EQ(*tree.Node(1, 1), right);
  EXPECT_EQ(*tree.Node(0, 3), Hash256{});
  EXPECT_FALSE(tree.Node(0, 4).ok());
  EXPECT_FALSE(tree.Node(3, 0).ok());
}

TEST(GameTree, OneLeafIsItsOwnRoot) {
  const std::vector<Hash256> leaves = Leaves(1);
  GameTree tree(leaves);
  EXPECT_EQ(tree.depth(), 0u);
  EXPECT_EQ(tree.root(), leaves[0]);
}

TEST(GameTree, SiblingsClimbToEveryAncestor) {
  const std::vector<Hash256> leaves = Leaves(13);
  GameTree tree(leaves);
  for (std::uint64_t i = 0; i < 16; ++i) {
    for (std::uint32_t h = 0; h <= tree.depth(); ++h) {
      Result<std::vector<Hash256>> siblings = tree.Siblings(i, h);
      ASSERT_TRUE(siblings.ok());
      ASSERT_EQ(siblings->size(), h);
      const Hash256 leaf = i < leaves.size() ? leaves[i] : Hash256{};
      EXPECT_EQ(ClimbGameTree(leaf, i, *siblings), *tree.Node(h, i >> h)) << i << " " << h;
    }
  }
  EXPECT_FALSE(tree.Siblings(16, 1).ok());
  EXPECT_FALSE(tree.Siblings(0, 5).ok());
}

// Two trees that differ from leaf d on: the descent rule (left when the left children differ)
// reaches d, and every earlier leaf is inside an agreed left subtree at AgreedSubtreeHeight.
TEST(GameTree, DescentFindsTheFirstDifferingLeaf) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::uint64_t n = 1 + rng() % 70;
    std::vector<Hash256> a = Leaves(n);
    std::vector<Hash256> b = a;
    const std::uint64_t d = rng() % n;
    for (std::uint64_t i = d; i < n; ++i) {
      if (i == d || rng() % 2 == 0) b[i][0] ^= 1;
    }
    GameTree ta(a), tb(b);
    ASSERT_NE(ta.root(), tb.root());
    std::uint64_t index = 0;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> agreed;  // (level, index) of agreed nodes
    for (std::uint32_t level = ta.depth(); level > 0; --level) {
      const Hash256 la = *ta.Node(level - 1, 2 * index), lb = *tb.Node(level - 1, 2 * index);
      if (la != lb) {
        index = 2 * index;
      } else {
        agreed.emplace_back(level - 1, 2 * index);
        index = 2 * index + 1;
      }
    }
    EXPECT_EQ(index, d);
    for (std::uint64_t j = 0; j < d; ++j) {
      const std::uint32_t h = AgreedSubtreeHeight(j, d);
      bool found = false;
      for (const auto& [level, node] : agreed) found |= level == h && node == (j >> h);
      EXPECT_TRUE(found) << "leaf " << j << " of " << n << ", d = " << d;
      EXPECT_EQ(ClimbGameTree(a[j], j, *ta.Siblings(j, h)), *tb.Node(h, j >> h));
    }
  }
}

// Known answers computed independently with Python's hashlib and struct (little-endian): the
// version-3 tensor hash over 64 x 64 blocks (one block; two block rows; three blocks of a rank-1
// tensor, padded to four), the state and batch hashes over it, and a chain state hash.
TEST(PinpointHashes, KnownAnswers) {
  const std::vector<std::int64_t> dims = {2, 2};
  const std::vector<float> data = {1.0f, -2.0f, 0.5f, 0.0f};
  const Hash256 tensor = TensorHashOf(dims, data);
  EXPECT_EQ(ToHex(tensor), "4159ee1838476dee84113ca270a432b23b31201d8cb6da31875dcc1730ab703b");
  const std::vector<std::string> names = {"w"};
  const std::vector<Hash256> hashes = {tensor};
  EXPECT_EQ(ToHex(StateHashFromTensorHashes(3, names, hashes)),
            "0be2acd6fb04d6942a2557411e9644b481f88691d45c01f2da7bf31e474cee11");
  EXPECT_EQ(ToHex(BatchLeaf(tensor, Hash256{})),
            "45b89472558dfa78747712cb9edd206c6cb94142f507fd25a359a48d57d60e04");
  std::vector<float> tall(65 * 3);
  for (std::size_t i = 0; i < tall.size(); ++i) tall[i] = static_cast<float>(i) * 0.25f - 3.0f;
  const std::vector<std::int64_t> tall_dims = {65, 3};
  EXPECT_EQ(ToHex(TensorHashOf(tall_dims, tall)),
            "6128e74caf5041675c953ce46f15c91061804c6d25273600fc81b9440e4e86c1");
  std::vector<float> wide(130);
  for (std::size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<float>(i) * 0.5f;
  const std::vector<std::int64_t> wide_dims = {130};
  EXPECT_EQ(ToHex(TensorHashOf(wide_dims, wide)),
            "b00697476608d13c4a6a240d54d3468a3b60940f99d4d67b55fec1d12c4ec155");
  const std::vector<float> state = {1.5f, -0.0f};
  EXPECT_EQ(ToHex(ChainStateHash(7, state)), "02942a1ed4882dc4b7b74b5ff2e78b7cce30aac10f9112e49eda2fe44c127a2b");
}

float FloatOfBits(std::uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// Every NaN reads as 0x7FC00000, whatever its payload and sign: the x86, NVIDIA and AMD default
// NaNs, a signalling NaN and a signed payload give one tensor, block and chain hash (known answers
// from Python's hashlib with 0x7FC00000 written in), while +-0, +-inf and NaN stay apart.
TEST(PinpointHashes, EveryNanHashesAsTheCanonicalNan) {
  const std::vector<std::int64_t> dims = {2, 2};
  for (std::uint32_t nan_bits : {0xFFC00000u, 0x7FFFFFFFu, 0x7FC00000u, 0x7F800001u, 0xFFC0BEEFu}) {
    const float nan = FloatOfBits(nan_bits);
    const std::vector<float> data = {nan, 1.0f, nan, -0.0f};
    EXPECT_EQ(ToHex(TensorHashOf(dims, data)), "9b9b53bd9382dd949b7412047ea035897493ac50d00e57cd94db6b3a1302a93c")
        << std::hex << nan_bits;
    EXPECT_EQ(TensorBlockTree(dims, data).tensor_hash(), TensorHashOf(dims, data));
    EXPECT_EQ(BlockLeafHash(data), TensorBlockLeaves(dims, data)[0]);
    const std::vector<float> state = {nan, 1.5f};
    EXPECT_EQ(ToHex(ChainStateHash(7, state)), "6ceacaabac2a3165399832e2737a6f266be96a779da8b232f68ff1d9006c9cac")
        << std::hex << nan_bits;
  }
  // A long run of NaNs across rows and blocks (the canonical pattern is written in pieces) hashes
  // as the same values written out.
  const std::vector<std::int64_t> big = {130, 70};
  std::vector<float> vendor(130 * 70, 0.25f);
  std::vector<float> canonical = vendor;
  for (std::size_t i = 100; i < 9000; ++i) {
    vendor[i] = FloatOfBits(i % 2 == 0 ? 0x7FFFFFFFu : 0xFFC00000u);
    canonical[i] = FloatOfBits(kCanonicalNanBits);
  }
  EXPECT_EQ(TensorHashOf(big, vendor), TensorHashOf(big, canonical));
  EXPECT_EQ(ChainStateHash(1, vendor), ChainStateHash(1, canonical));

  const float inf = FloatOfBits(0x7F800000u);
  const std::vector<std::int64_t> one = {1};
  std::vector<Hash256> distinct;
  for (float v : {FloatOfBits(kCanonicalNanBits), inf, -inf, 0.0f, -0.0f, FloatOfBits(1u)}) {
    distinct.push_back(TensorHashOf(one, std::vector<float>{v}));
  }
  for (std::size_t i = 0; i < distinct.size(); ++i) {
    for (std::size_t j = i + 1; j < distinct.size(); ++j) EXPECT_NE(distinct[i], distinct[j]) << i << " " << j;
  }
}

// A block tree proves any set of blocks together against the tensor hash; every forged value,
// index or sibling fails.
TEST(PinpointHashes, BlocksOfATensorAreProvenAgainstItsHash) {
  const std::vector<std::int64_t> dims = {3, 70, 130};  // view [210, 130]: 4 x 3 blocks
  std::vector<float> data(3 * 70 * 130);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 977) - 400.0f;
  const TensorBlockTree tree(dims, data);
  ASSERT_EQ(tree.grid().block_count(), 12u);
  EXPECT_EQ(tree.tensor_hash(), TensorHashOf(dims, data));
  EXPECT_EQ(TensorHashFromBlockRoot(dims, tree.root()), TensorHashOf(dims, data));
  for (const std::vector<std::uint64_t>& pick :
       std::vector<std::vector<std::uint64_t>>{{0}, {11}, {0, 1}, {1, 2, 5, 11}, {3, 4, 5, 6, 7, 8}}) {
    std::vector<std::pair<std::uint64_t, Hash256>> leaves;
    for (std::uint64_t b : pick) leaves.emplace_back(b, BlockLeafHash(BlockValues(dims, data, b)));
    Result<std::vector<Hash256>> siblings = tree.tree()->MultiSiblings(pick);
    ASSERT_TRUE(siblings.ok());
    EXPECT_EQ(siblings->size(), MultiProofLength(pick, tree.tree()->depth()));
    Result<Hash256> root = ClimbGameTreeMany(leaves, tree.tree()->depth(), *siblings);
    ASSERT_TRUE(root.ok()) << root.status().ToString();
    EXPECT_EQ(*root, tree.root());
    // A changed value, a missing or extra sibling, or leaves out of order do not give the root.
    std::vector<std::pair<std::uint64_t, Hash256>> forged = leaves;
    forged[0].second[3] ^= 1;
    EXPECT_NE(*ClimbGameTreeMany(forged, tree.tree()->depth(), *siblings), tree.root());
    if (!siblings->empty()) {
      std::vector<Hash256> fewer(siblings->begin(), siblings->end() - 1);
      EXPECT_FALSE(ClimbGameTreeMany(leaves, tree.tree()->depth(), fewer).ok());
      std::vector<Hash256> changed = *siblings;
      changed.back()[0] ^= 1;
      EXPECT_NE(*ClimbGameTreeMany(leaves, tree.tree()->depth(), changed), tree.root());
    }
    std::vector<Hash256> more = *siblings;
    more.push_back(Hash256{});
    EXPECT_FALSE(ClimbGameTreeMany(leaves, tree.tree()->depth(), more).ok());
    if (leaves.size() > 1) {
      std::swap(forged[0], forged[1]);
      EXPECT_FALSE(ClimbGameTreeMany(forged, tree.tree()->depth(), *siblings).ok());
    }
  }
  // Out-of-range and repeated indices are refused.
  const std::vector<std::uint64_t> beyond = {16};
  const std::vector<std::uint64_t> repeated = {2, 2};
  EXPECT_FALSE(tree.tree()->MultiSiblings(beyond).ok());
  EXPECT_FALSE(tree.tree()->MultiSiblings(repeated).ok());
  // A single block's multiproof is its ordinary path.
  const std::vector<std::uint64_t> one = {5};
  EXPECT_EQ(*tree.tree()->MultiSiblings(one), *tree.tree()->Siblings(5, tree.tree()->depth()));
  // A tensor without elements has no blocks and the all-zero root.
  const std::vector<std::int64_t> empty_dims = {0, 4};
  const TensorBlockTree empty(empty_dims, std::span<const float>());
  EXPECT_EQ(empty.grid().block_count(), 0u);
  EXPECT_EQ(empty.tree(), nullptr);
  EXPECT_EQ(empty.root(), Hash256{});
}

TEST(PinpointHashes, EveryInputChangesTheHash) {
  const std::vector<std::int64_t> dims = {4};
  const std::vector<std::int64_t> other_dims = {1, 4};
  const std::vector<float> data = {1.0f, 2.0f, 3.0f, 4.0f};
  std::vector<float> changed = data;
  changed[3] = 4.0000005f;
  EXPECT_NE(TensorHashOf(dims, data), TensorHashOf(other_dims, data));
  EXPECT_NE(TensorHashOf(dims, data), TensorHashOf(dims, changed));
  const std::vector<std::string> names = {"a", "b"};
  const std::vector<std::string> renamed = {"a", "c"};
  const std::vector<Hash256> hashes = {Leaf(1), Leaf(2)};
  const std::vector<Hash256> swapped = {Leaf(2), Leaf(1)};
  const Hash256 base = StateHashFromTensorHashes(5, names, hashes);
  EXPECT_NE(base, StateHashFromTensorHashes(6, names, hashes));
  EXPECT_NE(base, StateHashFromTensorHashes(5, renamed, hashes));
  EXPECT_NE(base, StateHashFromTensorHashes(5, names, swapped));
  EXPECT_NE(BatchLeaf(Leaf(1), Leaf(2)), BatchLeaf(Leaf(2), Leaf(1)));
}

}  // namespace
}  // namespace polnode::consensus
