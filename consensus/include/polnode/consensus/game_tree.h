// The Merkle tree each party of a pinpoint game commits to over the leaves of one training step
// (DESIGN.md section 6, level 2), shaped for bisection by descent: a perfect binary tree.
//
// For n >= 1 leaves L[0..n): depth D = ceil(log2 n) (0 for one leaf); the leaves are padded with
// the all-zero hash up to 2^D; a leaf's node is the leaf value itself (leaf values are already
// domain-separated hashes: tensor, state and batch hashes); an inner node is
// MerkleNodeHash(left, right) = SHA-256(0x01 || left || right). The root does not commit to n:
// n is fixed by the task's graph, which both parties and the ledger know.
//
// Node (level, index): level 0 holds the leaves, level D the root; node (l, i) has the children
// (l-1, 2i) and (l-1, 2i+1).
//
// Descent: at each level the two parties reveal the children of their current node; the game goes
// to the left child when the left children differ, else to the right one (the left subtree is then
// agreed). After D rounds it stands at the first leaf d where the parties differ, and every leaf
// j < d lies in one of the agreed left subtrees: the one at height floor(log2(j XOR d)).
#ifndef POLNODE_CONSENSUS_GAME_TREE_H_
#define POLNODE_CONSENSUS_GAME_TREE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"

namespace polnode::consensus {

/// ceil(log2 n); 0 for n <= 1.
std::uint32_t GameTreeDepth(std::uint64_t leaf_count);

/// The height of the agreed subtree that holds leaf `j` once the descent stands at leaf `d`:
/// floor(log2(j XOR d)). Precondition: j < d.
std::uint32_t AgreedSubtreeHeight(std::uint64_t j, std::uint64_t d);

/// Climbs `siblings.size()` levels from `leaf` at leaf index `index`: the hash of the ancestor at
/// height siblings.size(). siblings[0] is the leaf's sibling, and so on up.
Hash256 ClimbGameTree(const Hash256& leaf, std::uint64_t index, std::span<const Hash256> siblings);

/// Multiproofs: many leaves of one tree proven together. For ascending distinct leaf indices the
/// verifier climbs level by level, left to right: at each level a node whose sibling is also known
/// pairs with it, and any other node takes its sibling from the proof. The proof lists those
/// siblings in the order they are taken (level 0 first, ascending index within a level), so its
/// length is a function of the indices and the depth (MultiProofLength).
std::uint64_t MultiProofLength(std::span<const std::uint64_t> indices, std::uint32_t depth);

/// The root of a depth-`depth` tree from `leaves` (index, value), ascending and distinct indices
/// below 2^depth, and the multiproof `siblings`. kInvalidArgument when the indices are not
/// ascending, distinct and in range, or the proof has another length than MultiProofLength.
Result<Hash256> ClimbGameTreeMany(std::span<const std::pair<std::uint64_t, Hash256>> leaves, std::uint32_t depth,
                                  std::span<const Hash256> siblings);

/// A whole tree, kept for answering descent moves and proving leaves.
class GameTree {
 public:
  /// Precondition: leaves is not empty.
  explicit GameTree(std::span<const Hash256> leaves);

  std::uint64_t leaf_count() const { return leaf_count_; }
  std::uint32_t depth() const { return static_cast<std::uint32_t>(levels_.size() - 1); }
  const Hash256& root() const { return levels_.back()[0]; }

  /// Node (level, index); kOutOfRange outside the tree.
  Result<Hash256> Node(std::uint32_t level, std::uint64_t index) const;

  /// The siblings of leaf `index` from level 0 up to (excluding) level `height`, as
  /// ClimbGameTree takes them; kOutOfRange for index >= 2^depth or height > depth.
  Result<std::vector<Hash256>> Siblings(std::uint64_t index, std::uint32_t height) const;

  /// The multiproof of leaves `indices` (ascending, distinct, below 2^depth), as
  /// ClimbGameTreeMany takes it; kOutOfRange / kInvalidArgument otherwise.
  Result<std::vector<Hash256>> MultiSiblings(std::span<const std::uint64_t> indices) const;

 private:
  std::uint64_t leaf_count_ = 0;
  std::vector<std::vector<Hash256>> levels_;  // levels_[0] = padded leaves, back() = {root}
};

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_GAME_TREE_H_
