// Merkle trees: the byte-exact definition, the odd-count rule, and proofs for every leaf of every
// tree of 1..33 leaves, each of which must fail after any single-byte change.
#include "polnode/consensus/merkle.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "polnode/consensus/encoding.h"

namespace polnode::consensus {
namespace {

Hash256 TestLeaf(std::uint64_t i) {
  BufferWriter w;
  w.String("merkle-test-leaf");
  w.U64(i);
  return Sha256(w.bytes());
}

std::vector<Hash256> TestLeaves(std::uint64_t n) {
  std::vector<Hash256> leaves;
  for (std::uint64_t i = 0; i < n; ++i) leaves.push_back(TestLeaf(i));
  return leaves;
}

// The root computed straight from the definition in merkle.h, without the library's tree code.
Hash256 RootByDefinition(std::uint64_t count, const Hash256* top) {
  BufferWriter w;
  w.U8(0x02);
  w.U64(count);
  if (top != nullptr) w.Fixed(*top);
  return Sha256(w.bytes());
}

TEST(MerkleTest, LeafAndNodeHashesAreTagged) {
  const Hash256 a = TestLeaf(1);
  const Hash256 b = TestLeaf(2);
  BufferWriter leaf;
  leaf.U8(0x00);
  leaf.Fixed(a);
  EXPECT_EQ(MerkleLeafHash(a), Sha256(leaf.bytes()));
  BufferWriter node;
  node.U8(0x01);
  node.Fixed(a);
  node.Fixed(b);
  EXPECT_EQ(MerkleNodeHash(a, b), Sha256(node.bytes()));
  EXPECT_NE(MerkleNodeHash(a, b), MerkleNodeHash(b, a));
}

TEST(MerkleTest, EmptyAndSingleLeafRoots) {
  EXPECT_EQ(MerkleRoot({}), RootByDefinition(0, nullptr));
  EXPECT_EQ(MerkleTree({}).root(), RootByDefinition(0, nullptr));
  EXPECT_EQ(MerkleTree({}).leaf_count(), 0u);
  EXPECT_EQ(MerkleTree({}).Prove(0).status().code(), StatusCode::kOutOfRange);

  const std::vector<Hash256> one = TestLeaves(1);
  const Hash256 top = MerkleLeafHash(one[0]);
  EXPECT_EQ(MerkleRoot(one), RootByDefinition(1, &top));
}

TEST(MerkleTest, OddNodeIsPromotedNotDuplicated) {
  const std::vector<Hash256> l = TestLeaves(5);
  std::vector<Hash256> h;
  for (const Hash256& leaf : l) h.push_back(MerkleLeafHash(leaf));
  // Level 1: N(h0,h1), N(h2,h3), h4 promoted. Level 2: N(.,.), h4 promoted. Level 3: top.
  const Hash256 top = MerkleNodeHash(MerkleNodeHash(MerkleNodeHash(h[0], h[1]), MerkleNodeHash(h[2], h[3])), h[4]);
  EXPECT_EQ(MerkleRoot(l), RootByDefinition(5, &top));

  // CVE-2012-2459: under duplication [a,b,c] and [a,b,c,c] share a root; here they must not.
  std::vector<Hash256> three = TestLeaves(3);
  std::vector<Hash256> four = three;
  four.push_back(three[2]);
  EXPECT_NE(MerkleRoot(three), MerkleRoot(four));
}

TEST(MerkleTest, RootCommitsToLeafCount) {
  // The same top for different counts must give different roots.
  const Hash256 top = TestLeaf(9);
  EXPECT_NE(RootByDefinition(5, &top), RootByDefinition(7, &top));
  // Leaf 0 has the same path shape in trees of 5 and 7 leaves; the proof must not transfer.
  const std::vector<Hash256> leaves = TestLeaves(5);
  MerkleTree tree(leaves);
  MerkleProof proof = *tree.Prove(0);
  ASSERT_EQ(MerkleProofLength(0, 5), MerkleProofLength(0, 7));
  proof.leaf_count = 7;
  EXPECT_EQ(VerifyMerkleProof(tree.root(), leaves[0], proof).code(), StatusCode::kCorruption);
}

TEST(MerkleTest, ProofLengths) {
  EXPECT_EQ(MerkleProofLength(0, 1), 0u);
  EXPECT_EQ(MerkleProofLength(0, 2), 1u);
  EXPECT_EQ(MerkleProofLength(2, 3), 1u);  // promoted at level 0
  EXPECT_EQ(MerkleProofLength(0, 3), 2u);
  EXPECT_EQ(MerkleProofLength(4, 5), 1u);  // promoted twice
  EXPECT_EQ(MerkleProofLength(5, 5), 0u);  // out of range
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(MerkleProofLength(0, max), 64u);
  // The last of 2^64 - 1 leaves is promoted once; the level above has 2^63 nodes, all paired.
  EXPECT_EQ(MerkleProofLength(max - 1, max), 63u);
  EXPECT_EQ(MerkleProofLength(8, 9), 1u);  // promoted at sizes 9, 5 and 3, paired at size 2
  EXPECT_EQ(MerkleProofLength(0, std::uint64_t{1} << 63), 63u);
}

// The heart of the suite: every proof of every tree of 1..33 leaves verifies, round-trips
// through its serialization, and is rejected after any single-byte change of the serialization,
// the leaf, or the root.
TEST(MerkleTest, EveryProofOfTreesUpTo33LeavesVerifiesAndResistsByteFlips) {
  for (std::uint64_t n = 1; n <= 33; ++n) {
    const std::vector<Hash256> leaves = TestLeaves(n);
    const MerkleTree tree(leaves);
    ASSERT_EQ(tree.root(), MerkleRoot(leaves)) << "n=" << n;
    for (std::uint64_t i = 0; i < n; ++i) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " leaf=" << i);
      Result<MerkleProof> proof = tree.Prove(i);
      ASSERT_TRUE(proof.ok()) << proof.status().ToString();
      ASSERT_EQ(proof->siblings.size(), MerkleProofLength(i, n));
      ASSERT_TRUE(VerifyMerkleProof(tree.root(), leaves[i], *proof).ok());

      const std::vector<std::uint8_t> bytes = SerializeMerkleProof(*proof);
      ASSERT_EQ(bytes.size(), 17 + 32 * proof->siblings.size());
      Result<MerkleProof> parsed = ParseMerkleProof(bytes);
      ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
      ASSERT_EQ(*parsed, *proof);

      // Header bytes (version, index, count) get every single-bit flip, so that small changes
      // of index or count are tried; sibling bytes are inverted whole.
      for (std::size_t pos = 0; pos < bytes.size(); ++pos) {
        const std::vector<std::uint8_t> masks =
            pos < 17 ? std::vector<std::uint8_t>{1, 2, 4, 8, 16, 32, 64, 128, 255} : std::vector<std::uint8_t>{255};
        for (std::uint8_t mask : masks) {
          std::vector<std::uint8_t> mutated = bytes;
          mutated[pos] ^= mask;
          Result<MerkleProof> bad = ParseMerkleProof(mutated);
          if (!bad.ok()) continue;
          ASSERT_FALSE(VerifyMerkleProof(tree.root(), leaves[i], *bad).ok()) << "byte " << pos << " mask " << +mask;
        }
      }
      for (std::size_t pos = 0; pos < 32; ++pos) {
        Hash256 leaf = leaves[i];
        leaf[pos] ^= 0x01;
        ASSERT_EQ(VerifyMerkleProof(tree.root(), leaf, *proof).code(), StatusCode::kCorruption);
        Hash256 root = tree.root();
        root[pos] ^= 0x01;
        ASSERT_EQ(VerifyMerkleProof(root, leaves[i], *proof).code(), StatusCode::kCorruption);
      }
    }
  }
}

TEST(MerkleTest, ProofOfAnotherLeafFails) {
  const std::vector<Hash256> leaves = TestLeaves(9);
  const MerkleTree tree(leaves);
  for (std::uint64_t i = 0; i < 9; ++i) {
    const MerkleProof proof = *tree.Prove(i);
    for (std::uint64_t j = 0; j < 9; ++j) {
      if (j == i) continue;
      EXPECT_FALSE(VerifyMerkleProof(tree.root(), leaves[j], proof).ok()) << i << " vs " << j;
      MerkleProof moved = proof;
      moved.leaf_index = j;
      EXPECT_FALSE(VerifyMerkleProof(tree.root(), leaves[i], moved).ok()) << i << " moved to " << j;
    }
  }
}

TEST(MerkleTest, MalformedProofsAreInvalidArgument) {
  const std::vector<Hash256> leaves = TestLeaves(6);
  const MerkleTree tree(leaves);
  const MerkleProof good = *tree.Prove(3);

  MerkleProof longer = good;
  longer.siblings.push_back(leaves[0]);
  EXPECT_EQ(VerifyMerkleProof(tree.root(), leaves[3], longer).code(), StatusCode::kInvalidArgument);

  MerkleProof shorter = good;
  shorter.siblings.pop_back();
  EXPECT_EQ(VerifyMerkleProof(tree.root(), leaves[3], shorter).code(), StatusCode::kInvalidArgument);

  MerkleProof outside = good;
  outside.leaf_index = 6;
  EXPECT_EQ(VerifyMerkleProof(tree.root(), leaves[3], outside).code(), StatusCode::kInvalidArgument);

  MerkleProof empty_tree = good;
  empty_tree.leaf_count = 0;
  EXPECT_EQ(VerifyMerkleProof(tree.root(), leaves[3], empty_tree).code(), StatusCode::kInvalidArgument);

  EXPECT_EQ(tree.Prove(6).status().code(), StatusCode::kOutOfRange);
}

TEST(MerkleTest, ParseRejectsBadFraming) {
  const std::vector<Hash256> leaves = TestLeaves(4);
  const std::vector<std::uint8_t> bytes = SerializeMerkleProof(*MerkleTree(leaves).Prove(1));

  std::vector<std::uint8_t> wrong_version = bytes;
  wrong_version[0] = 2;
  EXPECT_EQ(ParseMerkleProof(wrong_version).status().code(), StatusCode::kCorruption);

  for (std::size_t len = 0; len < bytes.size(); ++len) {
    std::vector<std::uint8_t> truncated(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_FALSE(ParseMerkleProof(truncated).ok()) << "length " << len;
  }

  std::vector<std::uint8_t> trailing = bytes;
  trailing.push_back(0);
  EXPECT_EQ(ParseMerkleProof(trailing).status().code(), StatusCode::kCorruption);

  MerkleProof zero_count;
  EXPECT_EQ(ParseMerkleProof(SerializeMerkleProof(zero_count)).status().code(), StatusCode::kInvalidArgument);
  MerkleProof index_past_end{.leaf_index = 4, .leaf_count = 4, .siblings = {}};
  EXPECT_EQ(ParseMerkleProof(SerializeMerkleProof(index_past_end)).status().code(), StatusCode::kInvalidArgument);
}

TEST(MerkleTest, ParseHandlesTheLargestCount) {
  // 2^64 - 1 leaves: leaf 0 needs 64 siblings; the parser must size them without overflow.
  MerkleProof huge{.leaf_index = 0, .leaf_count = std::numeric_limits<std::uint64_t>::max(), .siblings = {}};
  huge.siblings.assign(64, TestLeaf(0));
  Result<MerkleProof> parsed = ParseMerkleProof(SerializeMerkleProof(huge));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, huge);
  EXPECT_EQ(VerifyMerkleProof(MerkleRoot(TestLeaves(3)), TestLeaf(0), huge).code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace polnode::consensus
