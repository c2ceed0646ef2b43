// Tolerant-mode forced rounds (protocol v7): what the ledger checks of a revealed perturbation
// (consensus/forced_perturbation.h, proto PerturbationProof). Without it a solver (with a
// whistleblower that knows its secret) could perturb below the verifiers' tolerance, so that honest
// accepts count as wrong and their locks go to the jackpot; with it the only forced round a solver
// can reveal is one a replay sees.
#ifndef POLNODE_CONTRACTS_PERTURBATION_H_
#define POLNODE_CONTRACTS_PERTURBATION_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts {

/// Checks `proof` for forced checkpoint `leaf.checkpoint()` of tolerant `task` under `secret`
/// (consensus/forced_perturbation.h). The names are the task's state_tensor_count, the first tensor's dims (at most 8) have between 1 and 2^40 elements, the
/// two blocks are the drawn block's size, one block path and one list of the other tensors' hashes
/// climb from them to leaf.committed_hash and leaf.result_hash (state hash v2 at step checkpoint x
/// checkpoint_interval, tensor hash v3), and every element of the committed block has the honest
/// block's bits except the drawn ones, which are consensus::PerturbedValue(honest, sign,
/// spec.forced_delta) and visible (consensus::PerturbationVisible). So the two states differ in
/// exactly the drawn elements, by exactly forced_delta: a solver cannot perturb below the
/// verifiers' tolerance (which would make honest accepts count as wrong) and still reveal.
/// Returns the raw 32-byte consensus::PerturbedIndicesHash of the drawn elements, which a right
/// reject's digests commit to; kInvalidArgument naming what failed. Pure: reads only its arguments.
[[nodiscard]] Result<std::string> CheckPerturbationProof(const proto::Task& task, std::string_view secret,
                                                         const proto::RevealedLeaf& leaf,
                                                         const proto::PerturbationProof& proof);

/// The PerturbationProof that CheckPerturbationProof takes for forced checkpoint `checkpoint`: the
/// state's tensor `names`, the first tensor's `dims` and its values in the committed
/// (`committed_first`) and the honest state (`honest_first`), the other tensors' hashes (the same in
/// both states) and the drawn `block` (consensus::DrawPerturbation). kInvalidArgument when a size
/// does not match the dims, the block is not one of the tensor's, or the two first tensors differ
/// outside the block (no one block path then climbs from both). Pure.
[[nodiscard]] Result<proto::PerturbationProof> BuildPerturbationProof(
    std::uint64_t checkpoint, std::span<const std::string> names, std::span<const std::int64_t> dims,
    std::span<const float> committed_first, std::span<const float> honest_first,
    std::span<const consensus::Hash256> other_hashes, std::uint64_t block);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_PERTURBATION_H_
