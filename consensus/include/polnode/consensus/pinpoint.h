// The hashes the pinpoint dispute game (DESIGN.md section 6) names, defined here so that the ledger
// (contracts/), the parties that answer moves (verifier/) and the trainer (solver/) compute the
// same bytes. Everything is SHA-256 over the encoding.h conventions (little-endian integers).
//
// Tensor hash, version 3 (names one tensor: a state tensor, a node output, a batch). The tensor is
// cut into the 64 x 64 blocks of its block grid (base/block_grid.h: the 2-D view [product of all
// dims but the last, last dim]); each block is a leaf of a game tree (game_tree.h: a perfect
// binary tree, padded with the all-zero hash, inner nodes SHA-256(0x01 || left || right)):
//   block leaf   = SHA-256(0x00 || the block's elements, row by row, IEEE-754 bits as U32, every
//                  NaN as kCanonicalNanBits)
//   block root   = the root of the game tree over the block leaves in block order (the all-zero
//                  hash for a tensor without elements)
//   tensor hash  = SHA-256("polnode.tensor.v3\n" || U32 rank || rank x U64 dims || block root)
// So a tensor named by its hash can be opened block by block: a slice is proven by the block root
// (checked against the hash with the dims), the blocks that hold it and their Merkle paths, and a
// disputed tensor can be descended to its first disputed block (DESIGN.md section 6, step 3).
// (v1 was a flat SHA-256 over the elements, which only the whole tensor could be checked against.)
//
// State hash, version 2 (names a training state: checkpoints, proofs and level 1 of the game):
//   SHA-256("polnode.state.v2\n" || U64 step || U32 count || per tensor, in state order:
//           String name (U64 length, the bytes) || its 32-byte tensor hash)
// Two levels, so that one tensor of an agreed state can be proven by its tensor hash and the other
// tensors' hashes (count x 32 bytes) instead of the whole state (megabytes).
//
// Batch leaf (the task's batch root is MerkleRoot over the batch leaves of steps 0..total_steps-1,
// the step with s completed steps being leaf s):
//   SHA-256("polnode.batch.v1\n" || images tensor hash || labels tensor hash)
//
// Chain state (the partial sums of one output tile after `position` units of its operator's
// evaluation chain, kernels/tile.h; the game bisects over them, contracts/dispute_game.h):
//   SHA-256("polnode.chain.v1\n" || U64 position || U32 count || each value's bits as U32, every
//           NaN as kCanonicalNanBits)
//
// NaN payloads and signs never reach a hash. An invalid operation gives 0xFFC00000 on x86,
// 0x7FFFFFFF on NVIDIA GPUs and 0x7FC00000 on AMD ones, and which operand's payload an operation
// on two NaNs keeps differs between instructions; no operator lets a payload or a NaN's sign
// change anything but which NaN it outputs (kernels/op.h), so reading every NaN as one pattern
// makes every hash above the same on every backend. Tensors without NaN hash as they always did.
#ifndef POLNODE_CONSENSUS_PINPOINT_H_
#define POLNODE_CONSENSUS_PINPOINT_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "polnode/base/block_grid.h"
#include "polnode/consensus/game_tree.h"
#include "polnode/consensus/sha256.h"
#include "polnode/consensus/sha256_lanes.h"

namespace polnode::consensus {

/// The one NaN every hash of float values reads in place of any NaN: the IEEE-754 default quiet
/// NaN with a clear sign bit.
inline constexpr std::uint32_t kCanonicalNanBits = 0x7FC00000u;

/// The block leaf above over one block's values (row by row).
Hash256 BlockLeafHash(std::span<const float> block);

/// The values of block `index` of a tensor of `dims` holding `data`, row by row. Preconditions:
/// the product of `dims` equals data.size(); index < BlockGrid::Of(dims).block_count().
std::vector<float> BlockValues(std::span<const std::int64_t> dims, std::span<const float> data, std::uint64_t index);

/// The block leaves of a tensor, in block order (empty for a tensor without elements).
/// Precondition: the product of `dims` equals data.size().
/// Hashed many leaves at a time through the multi-buffer SHA-256 at BestSha256Isa().
std::vector<Hash256> TensorBlockLeaves(std::span<const std::int64_t> dims, std::span<const float> data);

/// The same leaves computed at `isa` (kOpenSsl: one leaf at a time), for tests and benchmarks that
/// compare the levels. Preconditions: those of TensorBlockLeaves; `isa` is one of
/// AvailableSha256Isas().
std::vector<Hash256> TensorBlockLeavesAt(Sha256Isa isa, std::span<const std::int64_t> dims,
                                         std::span<const float> data);

/// The block root of `leaves` (the all-zero hash when there are none).
Hash256 BlockRootOf(std::span<const Hash256> leaves);

/// The version-3 tensor hash from the dims and the block root.
Hash256 TensorHashFromBlockRoot(std::span<const std::int64_t> dims, const Hash256& block_root);

/// The version-3 tensor hash above. Precondition: the product of `dims` equals data.size().
Hash256 TensorHashOf(std::span<const std::int64_t> dims, std::span<const float> data);

/// A tensor's block tree, kept to answer descent moves and to prove blocks.
class TensorBlockTree {
 public:
  /// Precondition: the product of `dims` equals data.size().
  TensorBlockTree(std::span<const std::int64_t> dims, std::span<const float> data);

  const BlockGrid& grid() const { return grid_; }
  /// The block root and the tensor hash.
  const Hash256& root() const { return root_; }
  Hash256 tensor_hash() const { return TensorHashFromBlockRoot(dims_, root_); }
  /// The tree over the block leaves; absent for a tensor without elements.
  const GameTree* tree() const { return tree_ ? &*tree_ : nullptr; }

 private:
  std::vector<std::int64_t> dims_;
  BlockGrid grid_;
  std::optional<GameTree> tree_;
  Hash256 root_{};
};

/// The version-2 state hash above from the state's step, tensor names and tensor hashes (the
/// latter two of equal length).
Hash256 StateHashFromTensorHashes(std::uint64_t step, std::span<const std::string> names,
                                  std::span<const Hash256> tensor_hashes);

/// The batch leaf above.
Hash256 BatchLeaf(const Hash256& images_hash, const Hash256& labels_hash);

/// The chain state hash above.
Hash256 ChainStateHash(std::uint64_t position, std::span<const float> state);

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_PINPOINT_H_
