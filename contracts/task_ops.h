// Operations shared by every step of the task life cycle: moving money out of escrow, slashing
// locked stake to a named recipient, entering a status with a deadline, and closing a task.
// Each keeps the total supply constant: what leaves one holding (escrow, stake, jackpot) is
// credited to another in the same call.
#ifndef POLNODE_CONTRACTS_TASK_OPS_H_
#define POLNODE_CONTRACTS_TASK_OPS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "exec_context.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts {

/// Pays `amount` from the task's escrow to `recipient`. kInternal if the escrow is short.
[[nodiscard]] Status PayFromEscrow(ExecContext& ctx, proto::Task& task, std::string_view recipient,
                                   std::uint64_t amount, std::string_view reason);

/// Pays whatever escrow is left back to the submitter.
[[nodiscard]] Status RefundEscrow(ExecContext& ctx, proto::Task& task);

/// Slashes `amount` of the locked stake of `offender` in `role` and credits it to `recipient`.
[[nodiscard]] Status SlashTo(ExecContext& ctx, const proto::Task& task, proto::Role role, std::string_view offender,
                             std::uint64_t amount, std::string_view recipient, std::string_view reason);
/// Slashes `amount` of the locked stake of `offender` in `role` into the jackpot pool (no one in
/// particular proved it wrong: absent verifiers, acceptances of a forced error).
[[nodiscard]] Status SlashToJackpot(ExecContext& ctx, const proto::Task& task, proto::Role role,
                                    std::string_view offender, std::uint64_t amount, std::string_view reason);
/// Slashes `amount` of the locked stake of `offender` and splits it equally among `recipients`;
/// the indivisible remainder, or everything when there are no recipients, goes to the jackpot.
[[nodiscard]] Status SlashSplit(ExecContext& ctx, const proto::Task& task, proto::Role role, std::string_view offender,
                                std::uint64_t amount, const std::vector<std::string>& recipients,
                                std::string_view reason);
/// Sets `status` with deadline height + `window` and schedules `due` for that deadline.
/// The caller stores the task.
[[nodiscard]] Status EnterStatus(ExecContext& ctx, proto::Task& task, proto::TaskStatus status, std::uint64_t window,
                                 proto::DueKind due);

/// Sets a terminal status and outcome, clears the deadline, stores the task, schedules its pruning
/// params.audit_window blocks later and emits "task_closed".
[[nodiscard]] Status CloseTask(ExecContext& ctx, proto::Task& task, proto::TaskStatus status,
                               proto::TaskOutcome outcome);

/// DUE_PRUNE: the audit window of a closed task is over. Its games keep their summaries (segment,
/// leaf, ruling, result) but lose the moves' payloads (pruned = true); its published checkpoints
/// are deleted. The task record itself stays (pruned = true).
[[nodiscard]] Status OnPrune(ExecContext& ctx, proto::Task& task);

/// The `reason` attribute values of slash events, for tests and explorers.
namespace slash_reason {
inline constexpr std::string_view kNoCommit = "no_commit";
inline constexpr std::string_view kAbsentVerifier = "absent_verifier";
inline constexpr std::string_view kRejectedProof = "rejected_proof";
inline constexpr std::string_view kUnavailableProof = "unavailable_proof";
inline constexpr std::string_view kAcceptedForcedError = "accepted_forced_error";
inline constexpr std::string_view kAcceptedWrongSegment = "accepted_wrong_segment";
inline constexpr std::string_view kNoReveal = "no_reveal";
inline constexpr std::string_view kLostDisputeGame = "lost_dispute_game";
inline constexpr std::string_view kForfeitedDisputeGame = "forfeited_dispute_game";
}  // namespace slash_reason

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_TASK_OPS_H_
