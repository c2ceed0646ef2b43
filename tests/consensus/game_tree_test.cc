// The pinpoint game tree and hashes: shape, descent invariants, and pinned known answers.
#include "polnode/consensus/game_tree.h"

#include <gtest/gtest.h>

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

// Known answers computed independently with Python's hashlib and struct (little-endian).
TEST(PinpointHashes, KnownAnswers) {
  const std::vector<std::int64_t> dims = {2, 2};
  const std::vector<float> data = {1.0f, -2.0f, 0.5f, 0.0f};
  const Hash256 tensor = TensorHashOf(dims, data);
  EXPECT_EQ(ToHex(tensor), "936b3f3d6e2602f7dd12d91b7d0aa877806a63f4a8cf607d9775aa14437fd2c7");
  const std::vector<std::string> names = {"w"};
  const std::vector<Hash256> hashes = {tensor};
  EXPECT_EQ(ToHex(StateHashFromTensorHashes(3, names, hashes)),
            "f90efc7ed77a2910b4e01575da1a9976c9f28223b1596d628f8d6ca8fc7ab20e");
  EXPECT_EQ(ToHex(BatchLeaf(tensor, Hash256{})),
            "e1b0422bc8d829a738a34ccef53299289e1a2f3da953587a209cc65da002f9d4");
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
