// The hashes the pinpoint dispute game (DESIGN.md section 6) names, defined here so that the ledger
// (contracts/), the parties that answer moves (verifier/) and the trainer (solver/) compute the
// same bytes. Everything is SHA-256 over the encoding.h conventions (little-endian integers).
//
// Tensor hash (names one tensor: a state tensor, a node output, a batch):
//   SHA-256("polnode.tensor.v1\n" || U32 rank || rank x U64 dims || each element's IEEE-754 bits as U32)
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
#ifndef POLNODE_CONSENSUS_PINPOINT_H_
#define POLNODE_CONSENSUS_PINPOINT_H_

#include <cstdint>
#include <span>
#include <string>

#include "polnode/consensus/sha256.h"

namespace polnode::consensus {

/// The tensor hash above. Precondition: the product of `dims` equals data.size().
Hash256 TensorHashOf(std::span<const std::int64_t> dims, std::span<const float> data);

/// The version-2 state hash above from the state's step, tensor names and tensor hashes (the
/// latter two of equal length).
Hash256 StateHashFromTensorHashes(std::uint64_t step, std::span<const std::string> names,
                                  std::span<const Hash256> tensor_hashes);

/// The batch leaf above.
Hash256 BatchLeaf(const Hash256& images_hash, const Hash256& labels_hash);

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_PINPOINT_H_
