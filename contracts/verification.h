// Verification rounds: the segment beacon and verifier assignment (drawn after the proof
// commitment), verdicts, the verdict deadline, and disputes raised in the challenge window.
#ifndef POLNODE_CONTRACTS_VERIFICATION_H_
#define POLNODE_CONTRACTS_VERIFICATION_H_

#include <string_view>

#include "exec_context.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts {

/// DUE_SEGMENT_BEACON: draws the segment beacon from this block's randomness and assigns the
/// params.verifiers_per_task eligible verifiers with the lowest AssignmentScore, locking
/// params.min_stake_verifier from each. Eligible: in the verifier set, neither the solver nor the
/// submitter, with enough free verifier stake. With no eligible verifier the task is cancelled:
/// escrow refunded, solver lock released (unverifiable work is never paid).
[[nodiscard]] Status OnSegmentBeacon(ExecContext& ctx, proto::Task& task);

/// task/verdict: an assigned verifier's accept/reject, once per verifier, while verifying. When
/// the last verdict arrives the challenge window opens at once.
[[nodiscard]] Status ExecuteVerdict(ExecContext& ctx, std::string_view signer, const proto::VerdictTx& msg);

/// DUE_VERDICT_DEADLINE: every verifier without a verdict loses its lock to the jackpot pool. If
/// no verdict arrived at all the task is cancelled with refunds (escrow to the submitter, solver
/// lock released); otherwise the challenge window opens.
[[nodiscard]] Status OnVerdictDeadline(ExecContext& ctx, proto::Task& task);

/// task/dispute: in the challenge window, disputes one verifier's verdict. A whistleblower may
/// dispute any verdict and locks params.min_stake_whistleblower; the solver may dispute a reject
/// verdict and locks nothing more (its claim lock is already at stake). One dispute per verdict;
/// nobody disputes their own verdict.
[[nodiscard]] Status ExecuteDispute(ExecContext& ctx, std::string_view signer, const proto::DisputeTx& msg);

/// DUE_CHALLENGE_END: the challenge window closes; the solver must reveal within reveal_window.
[[nodiscard]] Status OnChallengeEnd(ExecContext& ctx, proto::Task& task);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_VERIFICATION_H_
