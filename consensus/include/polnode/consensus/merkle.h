// Merkle trees over lists of 32-byte hashes (checkpoint hashes, operator output hashes,
// transaction ids), with inclusion proofs.
//
// Definition (version 1), exact to the byte. For leaves L[0..n):
//
//   leaf hash       H0[i]   = SHA-256(0x00 || L[i])
//   node hash       parent  = SHA-256(0x01 || left || right)
//   level k+1       pairs (H[0],H[1]), (H[2],H[3]), ... of level k are hashed into parents.
//                   Odd-count rule: when level k has an odd number of nodes, its last node is
//                   promoted unchanged to level k+1. It is NOT paired with a copy of itself:
//                   Bitcoin's duplication rule makes [a,b,c] and [a,b,c,c] share a root
//                   (CVE-2012-2459), which this rule avoids.
//   top             the single node left when a level has one node
//   root            SHA-256(0x02 || u64le(n) || top)      for n >= 1
//                   SHA-256(0x02 || u64le(0))             for the empty tree (n = 0)
//
// The distinct first bytes keep leaves, inner nodes and roots from ever being confused for each
// other (a leaf cannot pose as an inner node to shorten or extend a path). The root commits to
// the leaf count n, so a proof authenticates its (index, count) pair as well as the leaf: without
// this, a proof for leaf 0 of a 5-leaf tree would also verify as "leaf 0 of 7" (same path).
//
// A proof of leaf i lists the sibling at every level bottom-up, skipping the levels where the
// path's node is promoted (it has no sibling there). Its length is a function of (i, n), see
// MerkleProofLength, and verification rejects any other length.
#ifndef POLNODE_CONSENSUS_MERKLE_H_
#define POLNODE_CONSENSUS_MERKLE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"

namespace polnode::consensus {

/// SHA-256(0x00 || leaf).
Hash256 MerkleLeafHash(const Hash256& leaf);

/// SHA-256(0x01 || left || right).
Hash256 MerkleNodeHash(const Hash256& left, const Hash256& right);

/// The root of the tree over `leaves` as defined above; the empty list has a defined root.
Hash256 MerkleRoot(std::span<const Hash256> leaves);

/// Proof that one leaf sits at `leaf_index` of a tree with `leaf_count` leaves.
struct MerkleProof {
  std::uint64_t leaf_index = 0;
  std::uint64_t leaf_count = 0;
  std::vector<Hash256> siblings;  // bottom-up, promoted levels skipped

  friend bool operator==(const MerkleProof&, const MerkleProof&) = default;
};

/// Number of siblings in the proof of leaf `index` in a tree of `count` leaves (0 for a one-leaf
/// tree). Precondition: index < count; returns 0 otherwise. Never more than 64.
std::uint32_t MerkleProofLength(std::uint64_t index, std::uint64_t count);

/// Checks that `leaf` is leaf `proof.leaf_index` of the `proof.leaf_count`-leaf tree whose root is
/// `root`. Returns ok, or kInvalidArgument for a malformed proof (count 0, index >= count, wrong
/// number of siblings), or kCorruption when the path does not lead to `root` (wrong leaf, index,
/// count, sibling or root).
[[nodiscard]] Status VerifyMerkleProof(const Hash256& root, const Hash256& leaf, const MerkleProof& proof);

/// A built tree that keeps every level, for producing many proofs over the same leaves.
/// Memory: about 2 * n hashes.
class MerkleTree {
 public:
  explicit MerkleTree(std::span<const Hash256> leaves);

  std::uint64_t leaf_count() const { return leaf_count_; }
  const Hash256& root() const { return root_; }

  /// The proof of leaf `index`; kOutOfRange if index >= leaf_count().
  Result<MerkleProof> Prove(std::uint64_t index) const;

 private:
  std::uint64_t leaf_count_ = 0;
  std::vector<std::vector<Hash256>> levels_;  // levels_[0] = leaf hashes, last = {top}
  Hash256 root_{};
};

/// Serialized proof format (encoding.h conventions):
///   U8 version (= 1) || U64 leaf_index || U64 leaf_count || sibling[0] || ... (32 bytes each)
/// The sibling count is not stored: it is MerkleProofLength(leaf_index, leaf_count).
inline constexpr std::uint8_t kMerkleProofVersion = 1;

/// Serializes `proof` in the format above. The proof is written as given, even if malformed.
std::vector<std::uint8_t> SerializeMerkleProof(const MerkleProof& proof);

/// Parses the format above. kCorruption for an unknown version, truncation, or trailing bytes;
/// kInvalidArgument for count 0 or index >= count. A parsed proof has exactly
/// MerkleProofLength(index, count) siblings; it still needs VerifyMerkleProof.
Result<MerkleProof> ParseMerkleProof(std::span<const std::uint8_t> bytes);

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_MERKLE_H_
