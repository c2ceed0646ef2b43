// The pinpoint dispute game (DESIGN.md section 6) on the ledger: one game per disputed verdict,
// played one after another in verifier-slot order once the solver's reveal showed the round was
// not a forced error.
//
// Parties. The challenger says the committed proof is wrong, the defender that it is right:
//   accept verdict disputed by a whistleblower: challenger = whistleblower, defender = verifier;
//   reject verdict disputed (by the solver or a whistleblower): challenger = verifier, defender =
//   the disputer.
//
// Rounds. Every round has a deadline params.dispute_move_window blocks after it starts; moves name
// the round they answer.
//   opening  the challenger names segment j, proves checkpoints j and j+1 against the task's
//            proof_root, and gives its own hash for the state after the segment (it must differ).
//   steps    (level 1) while hi - lo > 1: both post the state hash after step mid = (lo + hi) / 2
//            of the segment; equal hashes move lo to mid, different ones move hi to mid.
//            ceil(log2 k) rounds.
//   graph    (level 2) both descend their trees over the leaves of step lo -> lo + 1 (dispute.proto):
//            each round reveals the two children of the party's current node (the first round
//            also proves the last leaf to be the party's level-1 claim for hi); the game enters
//            the left child when the left children differ, else the right one.
//            ceil(log2 step_leaf_count) rounds.
//   referee  (level 3) anyone posts the evidence (referee.h); the ledger computes the true leaf.
//            The defender wins exactly when its leaf is the true one: the defender asserted the
//            proof's transition, so a wrong leaf on agreed inputs loses it.
// Timeouts: a party that misses a steps or graph round loses (the challenger alone moves in the
// opening); when both miss, or nobody posts the referee evidence, the disputer loses.
//
// Outcome of a game: the loser's task lock is slashed to the winner; a whistleblower's lock is
// released when it wins; a referee ruling for the challenger marks the proof disproven. When no
// game is left, settlement.h's SettleAfterGames pays out.
#ifndef POLNODE_CONTRACTS_DISPUTE_GAME_H_
#define POLNODE_CONTRACTS_DISPUTE_GAME_H_

#include <string>
#include <string_view>

#include "exec_context.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/dispute.pb.h"

namespace polnode::contracts {

/// Starts the game over the next disputed verdict without a result, or, when none is left,
/// settles the task. Precondition: the task is TASK_DISPUTED. Stores the task.
[[nodiscard]] Status StartNextGameOrSettle(ExecContext& ctx, proto::Task& task);

/// dispute/move: a move in the running game named by (task_id, verifier) for its current round.
/// kFailedPrecondition for a move of the wrong kind or round, kPermissionDenied for a signer who
/// may not make it, kAlreadyExists for a second move in one round, kInvalidArgument for a move
/// whose hashes or proofs do not check. Nothing changes on error.
[[nodiscard]] Status ExecuteDisputeMove(ExecContext& ctx, std::string_view signer, std::string_view payload,
                                        const proto::DisputeMoveTx& msg);

/// DUE_GAME_DEADLINE: decides the running game of a disputed task against whoever missed the
/// round's deadline (see above). Stale entries are ignored.
[[nodiscard]] Status OnGameDeadline(ExecContext& ctx, proto::Task& task);

// The pieces above, without persistence or stake movements, for auditors that re-execute a
// recorded game (dispute_audit.h).

/// What a move or a timeout decided.
struct MoveEffect {
  bool ruled = false;          // the game is decided
  bool challenger_won = false;
  std::string ruling;
};

/// The game over `slot`'s verdict as it starts at ctx.block.height (round 1, opening).
[[nodiscard]] Result<proto::DisputeGame> NewGame(ExecContext& ctx, const proto::Task& task,
                                                 const proto::VerifierSlot& slot);

/// Applies one move to `game` (recording it) as ExecuteDisputeMove does, without storing anything
/// but the deadlines NextRound schedules in ctx.state. Errors as ExecuteDisputeMove's.
[[nodiscard]] Result<MoveEffect> ApplyMove(ExecContext& ctx, const proto::Task& task, proto::DisputeGame& game,
                                           std::string_view signer, std::string_view payload,
                                           const proto::DisputeMoveTx& msg);

/// What the deadline of `game`'s current round decides (see the file comment).
MoveEffect TimeoutEffect(const proto::DisputeGame& game);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_DISPUTE_GAME_H_
