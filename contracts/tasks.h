// The task life cycle up to the proof commitment: submission with escrow, cancellation by the
// submitter, a solver's claim, and the proof commitment; plus the deadlines of those stages.
#ifndef POLNODE_CONTRACTS_TASKS_H_
#define POLNODE_CONTRACTS_TASKS_H_

#include <string_view>

#include "exec_context.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts {

/// task/submit: checks the spec's windows and sizes against params, takes the payment from the
/// signer into escrow and opens the task until height + claim_window. The jackpot cut
/// (params.jackpot_cut_bps of the payment) is recorded and leaves the escrow only when
/// verification starts (verification.h), so a task nobody trained is refunded in full. A spec hash
/// is held by one task: kAlreadyExists while another task holds it, unless that task closed before
/// any proof was committed.
[[nodiscard]] Status ExecuteSubmitTask(ExecContext& ctx, const VerifiedTx& tx, const proto::SubmitTaskTx& msg);

/// task/cancel: the submitter closes an open (unclaimed) task; the escrow is refunded.
/// kPermissionDenied for anyone else, kFailedPrecondition once claimed.
[[nodiscard]] Status ExecuteCancelTask(ExecContext& ctx, std::string_view signer, const proto::CancelTaskTx& msg);

/// task/claim: locks the task's solver lock (staking.h TaskLock) of the signer's solver stake,
/// records the secret commitment, schedules the forced-error seed draw at height + beacon_delay
/// and the commit deadline at height + training_window. kPermissionDenied for the submitter.
[[nodiscard]] Status ExecuteClaimTask(ExecContext& ctx, std::string_view signer, const proto::ClaimTaskTx& msg);

/// task/commit: the solver commits its proof root, once the forced-error seed exists (so the
/// solver knew whether to submit a deliberately wrong proof), with the Merkle proof that its
/// checkpoint 0 is the spec's initial_state_hash (kInvalidArgument otherwise). Schedules the segment beacon at
/// height + beacon_delay: randomness that does not exist yet when the root is committed.
[[nodiscard]] Status ExecuteCommitProof(ExecContext& ctx, std::string_view signer, const proto::CommitProofTx& msg);

/// DUE_CLAIM_DEADLINE: an unclaimed task is cancelled and its escrow refunded.
[[nodiscard]] Status OnClaimDeadline(ExecContext& ctx, proto::Task& task);

/// DUE_FORCED_SEED: draws the forced-error seed of a claimed task from this block's randomness.
[[nodiscard]] Status OnForcedSeed(ExecContext& ctx, proto::Task& task);

/// DUE_COMMIT_DEADLINE: a solver that committed nothing loses its lock to the jackpot; the task is
/// cancelled and its escrow refunded in full.
[[nodiscard]] Status OnCommitDeadline(ExecContext& ctx, proto::Task& task);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_TASKS_H_
