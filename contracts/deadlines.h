// Deadlines and delayed draws. Every deadline of the protocol is processed automatically at the
// end of the block at its height (after the block's transactions, so a tx in the deadline block
// itself is still on time); no one needs to send a "tick" transaction, and no deadline can be
// skipped because nobody cared to trigger it.
//
// Scheduling appends an entry to "due/<height>". Processing reads that list in order and then
// deletes it. A task entry is acted on only if the task is still in the status (and, for
// deadlines, at the deadline) the entry was made for; otherwise the task moved on in time and the
// entry is stale. Outcomes per entry:
//   DUE_CLAIM_DEADLINE    open task, unclaimed        -> cancelled, escrow refunded
//   DUE_FORCED_SEED       claimed task                -> forced-error seed drawn
//   DUE_COMMIT_DEADLINE   claimed, no commitment      -> cancelled, refund, solver stake slashed
//                                                        to the submitter
//   DUE_SEGMENT_BEACON    committed task              -> beacon drawn, verifiers assigned (or
//                                                        cancelled with refunds if none exists)
//   DUE_VERDICT_DEADLINE  verifying                   -> absent verifiers slashed to the jackpot;
//                                                        challenge window opens (or, with no
//                                                        verdict at all, cancelled with refunds)
//   DUE_CHALLENGE_END     challenge window            -> the solver must reveal
//   DUE_REVEAL_DEADLINE   no reveal                   -> solver slashed to the submitter, voting
//                                                        verifiers paid, rest refunded
//   DUE_GAME_DEADLINE     a dispute game's round      -> decided against whoever missed it
//                                                        (dispute_game.h)
//   DUE_UNBOND            unbonding stake             -> returned to the balance
#ifndef POLNODE_CONTRACTS_DEADLINES_H_
#define POLNODE_CONTRACTS_DEADLINES_H_

#include <cstdint>

#include "exec_context.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts {

/// Appends `entry` to the list processed at the end of block `height`. Callers pass a height
/// above the current one (every window is >= 1 by the params rules), computed with checked
/// arithmetic; an entry at a past height would never run.
[[nodiscard]] Status ScheduleDue(StateStore& state, std::uint64_t height, proto::DueEntry entry);

/// Schedules a task entry of `kind` at `height`.
[[nodiscard]] Status ScheduleTaskDue(StateStore& state, std::uint64_t height, proto::DueKind kind,
                                     std::string_view task_id);

/// Processes every entry due at ctx.block.height (see the file comment) and deletes the list.
/// Errors are block-fatal: these transitions involve no user input, so a failure is a bug or a
/// broken store.
[[nodiscard]] Status ProcessDue(ExecContext& ctx);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_DEADLINES_H_
