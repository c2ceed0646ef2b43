// The training state (DESIGN.md section 3): weights, optimizer buffers and the step counter, with
// its canonical byte encoding (what checkpoint blobs hold) and its state hash (what checkpoints,
// proofs and disputes name).
//
// The state hash is version 2 of consensus/pinpoint.h: SHA-256 over the step, the tensor count
// and, per tensor in state order, its name and its tensor hash. It is NOT the SHA-256 of the
// encoding below: a checkpoint blob is stored under its content hash (SHA-256 of EncodeState),
// and a proof manifest names each checkpoint by both (the state hash and the blob's content
// hash). The two-level form lets one tensor of an agreed state be proven by its tensor hash.
//
// Encoding, version 1 (all integers little-endian):
//   8 bytes  "PLNSTATE"
//   u32      version = 1
//   u64      step (number of completed steps)
//   u32      tensor count
//   per tensor, in state order:
//     u32 name length (1..255), the name (printable ASCII, no spaces)
//     u32 rank (1..8), rank x u64 dimensions
//     the elements row-major, each as the u32 of its IEEE-754 bits
// Nothing follows the last tensor.
//
// State order: the model's parameters in ModelSpec::params order, then, parameter by parameter,
// its optimizer buffers in OptimizerBufferSuffixes order (e.g. fc1.w, fc1.b, fc2.w, fc2.b,
// fc1.w.velocity, fc1.b.velocity, fc2.w.velocity, fc2.b.velocity).
#ifndef POLNODE_SOLVER_TRAIN_STATE_H_
#define POLNODE_SOLVER_TRAIN_STATE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/kernels/tensor.h"

namespace polnode::solver {

struct NamedTensor {
  std::string name;
  kernels::Tensor tensor;
};

struct TrainState {
  std::int64_t step = 0;
  std::vector<NamedTensor> tensors;

  /// The tensor called `name`, or nullptr.
  const kernels::Tensor* Find(std::string_view name) const;
};

/// The version-1 encoding above. Precondition: every name is 1..255 printable ASCII characters
/// and every tensor has rank 1..8 (states built by this library always do).
std::vector<std::uint8_t> EncodeState(const TrainState& state);
/// EncodeState into `out` (its contents replaced), reusing its capacity: a writer that encodes
/// one checkpoint after another allocates once.
void EncodeStateInto(const TrainState& state, std::vector<std::uint8_t>& out);

/// EncodeState's bytes without copying the large tensors: `pieces` is set to spans that, one
/// after another, are the encoding; each is either a tensor's elements, in `state`'s own storage,
/// or bytes copied into `scratch` (headers and small tensors; its contents replaced, its capacity
/// reused). The spans stay valid while `state`'s tensors and `scratch` are left as they are. For
/// writing a checkpoint straight from the state.
void EncodeStatePieces(const TrainState& state, std::vector<std::uint8_t>& scratch,
                       std::vector<std::span<const std::uint8_t>>& pieces);

/// Decodes bytes from anywhere (a checkpoint blob, a peer). kCorruption, saying what and where,
/// for any deviation from the encoding: wrong magic or version, truncation, a name or rank out of
/// range, a repeated name, dimensions whose element count does not fit in the remaining bytes, a
/// negative step, trailing bytes.
Result<TrainState> DecodeState(std::span<const std::uint8_t> bytes);

/// The version-2 state hash (consensus::StateHashFromTensorHashes over state.step, the names and
/// TensorHashes(state)), computed without copying any tensor. Precondition: step >= 0.
consensus::Hash256 StateHash(const TrainState& state);

/// StateHash(state) from TensorHashes(state) computed elsewhere (on several threads, say).
/// Precondition: tensor_hashes.size() == state.tensors.size(), step >= 0.
consensus::Hash256 StateHashFrom(const TrainState& state, std::span<const consensus::Hash256> tensor_hashes);

/// SHA-256 naming one tensor (state tensors, per-node outputs in the pinpoint game):
/// consensus::TensorHashOf, version 3: "polnode.tensor.v3\n", u32 rank, rank x u64 dimensions and
/// the root of the Merkle tree over the tensor's 64 x 64 blocks (all little-endian).
consensus::Hash256 TensorHash(const kernels::Tensor& tensor);

/// TensorHash of each tensor of `state`, in state order.
std::vector<consensus::Hash256> TensorHashes(const TrainState& state);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_TRAIN_STATE_H_
