// A tolerant-mode forced round's perturbation (protocol v7, econ/README.md item 1): in a forced
// round the solver commits, at each forced checkpoint, the honest state with a few elements of its
// first tensor moved by +-D (TaskSpec.forced_delta), all in one 64 x 64 block of that tensor
// (base/block_grid.h). A replay of the segment ending there reaches the honest state within the
// profiled replay error e, which a verifier must hold below D / 4 (or decline the task), and the
// ledger accepts only perturbations that move an element by at least 3D / 4, so the perturbed
// elements differ from the replay by more than 3D / 4 - e > D / 2 and every other element by
// e < D / 4: the perturbed elements are exactly those where the replay and the committed state
// differ by more than D / 2, whatever the rounding. The verdict commits to them by
// PerturbedIndicesHash. Without a replay they are a handful of elements moved by
// less than a segment of training moves them.
//
// Pure functions of their arguments, shared by the solver that perturbs, the ledger that checks the
// revealed block (both states' values of the block prove the perturbation and nothing else) and
// the verifiers, so all of them agree on every bit.
#ifndef POLNODE_CONSENSUS_FORCED_PERTURBATION_H_
#define POLNODE_CONSENSUS_FORCED_PERTURBATION_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "polnode/consensus/sha256.h"

namespace polnode::consensus {

/// How many elements a forced checkpoint perturbs (fewer only in a block with fewer elements).
inline constexpr std::uint32_t kPerturbedElements = 4;

struct PerturbedElement {
  std::int64_t offset = 0;  // position among the block's values (row by row)
  std::int64_t flat = 0;    // flat index in the first tensor, which is also the flat state index
  float sign = 1.0f;        // +1 or -1
};

struct Perturbation {
  std::uint64_t block = 0;                // block index in the first tensor's block grid
  std::vector<PerturbedElement> elements; // ascending offset (and flat index), distinct
};

/// The perturbation of forced checkpoint `k`, drawn from H("polnode/forced-perturbation/v1",
/// secret, forced seed, task id, k, counter): the block uniformly among the block grid of a
/// tensor of `dims`, then min(kPerturbedElements, the block's elements) distinct offsets in it and
/// a sign each (rejection sampling: no modulo bias). Known only to the solver until it reveals its
/// secret. Precondition: `dims` has at least one element.
Perturbation DrawPerturbation(std::string_view secret, std::string_view forced_seed, std::string_view task_id,
                              std::uint64_t k, std::span<const std::int64_t> dims);

/// The committed value of a perturbed element: honest + sign * delta, one IEEE-754 single
/// precision addition (round to nearest even), so every machine computes the same bits.
float PerturbedValue(float honest, float sign, float delta);

/// Whether a perturbation of `honest` by `delta` is certain to be seen by a replay whose error is
/// below delta / 4: `committed` differs from `honest` by at least 3 delta / 4 (false for NaN or
/// infinite values, and for an `honest` so large that adding delta moves it by less after
/// rounding: |honest| beyond about 2^22 delta).
bool PerturbationVisible(float honest, float committed, float delta);

/// What a tolerant verdict's segment digest commits to (beacon.h SegmentDigest's end):
/// H("polnode/perturbed-indices/v1", count, each index), for the flat state indices (over every
/// tensor of the state, state order) at which a replayed end differs from the committed one by
/// more than delta / 2. Precondition: `flat_indices` ascending.
Hash256 PerturbedIndicesHash(std::span<const std::uint64_t> flat_indices);

/// The flat state indices of `perturbation`'s elements, ascending: what PerturbedIndicesHash of
/// an honest replay's differences is taken over.
std::vector<std::uint64_t> PerturbedIndices(const Perturbation& perturbation);

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_FORCED_PERTURBATION_H_
