// Tolerant-mode forced rounds: the ledger's check that a committed checkpoint is the honest one
// with exactly the drawn perturbation (consensus/forced_perturbation.h, proto PerturbationProof).
// Without it a solver (with a whistleblower that knows its secret) could commit a perturbation
// below the verifiers' tolerance, so that honest accepts count as wrong and their locks go to the
// jackpot; with it the only forced round a solver can reveal is one a replay sees.
#ifndef POLNODE_CONTRACTS_PERTURBATION_H_
#define POLNODE_CONTRACTS_PERTURBATION_H_

#include <string>
#include <string_view>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts {

/// Checks `proof` for forced checkpoint `leaf.checkpoint()` of tolerant `task` under `secret`:
/// the names are the task's state_tensor_count, the first tensor's dims have elements, the two
/// blocks are the drawn block's size, one block path and one list of the other tensors' hashes
/// climb from them to leaf.committed_hash and leaf.result_hash (state hash v2 at step checkpoint x
/// checkpoint_interval, tensor hash v3), and every element of the committed block has the honest
/// block's bits except the drawn ones, which are consensus::PerturbedValue(honest, sign,
/// spec.forced_delta) and visible (consensus::PerturbationVisible). Returns the raw 32-byte
/// consensus::PerturbedIndicesHash of the drawn elements; kInvalidArgument naming what failed.
[[nodiscard]] Result<std::string> CheckPerturbationProof(const proto::Task& task, std::string_view secret,
                                                         const proto::RevealedLeaf& leaf,
                                                         const proto::PerturbationProof& proof);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_PERTURBATION_H_
