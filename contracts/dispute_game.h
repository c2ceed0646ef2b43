// The pinpoint dispute game (DESIGN.md section 6) on the ledger. The solver defends its own proof
// in every game about it; one game per claim against the proof, played one after another: the
// reject verdicts the solver disputed (slot order; a key that holds several disputed reject slots
// plays one game for all of them, whose result is each slot's), then the whistleblowers' challenges
// (arrival order) but those that caught a forced round's error (settlement.h). A game that finds the proof wrong ends the series:
// the remaining claims stand without a game (GAME_NOT_PLAYED).
//
// Parties. The challenger (the rejecting verifier or the whistleblower) says the proof is wrong at
// a segment; the defender (the task's solver) says it is right. The proof on trial is the game's
// proof_root: the committed root, or after a forced round's reveal the result root. A segment
// starts at the game's start_root checkpoint: proof_root's, or in a forced round the committed
// root's, because the solver trained on from the falsified checkpoints it committed (the result
// proof's segment j runs from committed checkpoint j to result checkpoint j + 1).
//
// Rounds. Every round has a deadline params.dispute_move_window blocks after it starts; moves name
// the round they answer.
//   opening  the challenger names segment j, proves checkpoint j against start_root and j+1
//            against proof_root, and gives its own hash for the state after the segment (it
//            must differ).
//   steps    (level 1) while hi - lo > 1: both post the state hash after step mid = (lo + hi) / 2
//            of the segment; equal hashes move lo to mid, different ones move hi to mid.
//            ceil(log2 k) rounds.
//   graph    (level 2) both descend their trees over the leaves of step lo -> lo + 1 (dispute.proto):
//            each round reveals the two children of the party's current node (the first round
//            also proves the last leaf to be the party's level-1 claim for hi); the game enters
//            the left child when the left children differ, else the right one.
//            ceil(log2 step_leaf_count) rounds. An operator's output leaf goes on to tiles, any
//            other leaf to the referee.
//   tiles    (level 2, inside the output; ruling.h) both descend the tree over the output's
//            64 x 64 blocks (its tensor hash v3): the first round gives the node's descriptor
//            (proven against graph_root, writing the leaf), the party's block root (with the
//            output's dims it must hash to the party's leaf) and the root's children; later
//            rounds the current node's children; the game enters the left child when the left
//            children differ. max(1, ceil(log2 blocks)) rounds. It ends at the disputed block,
//            the tile: the referee follows when the tile's whole chain fits one ruling
//            (ruling.h), else the chain bisection.
//   chain    (level 2, along the tile's chain) both post the hash of the tile's chain state
//            after mid = (chain_lo + chain_hi) / 2 units; equal hashes move chain_lo to mid,
//            different ones chain_hi. Ends when units [chain_lo, chain_hi) fit one ruling or one
//            unit is left.
//   referee  (level 3) anyone posts the evidence (referee.h); the ledger computes the true leaf,
//            or for a tile the true state (or block) at chain_hi. The defender wins exactly when
//            its value is the true one: it asserted the proof's transition, so a wrong value on
//            agreed inputs disproves the proof.
// Forfeits count against whoever owed the move: the challenger owes the opening; both owe each
// steps, graph, tiles and chain round (one missing forfeits alone, both missing forfeit together;
// a move the ledger refuses is a missing move); the referee's evidence is the solver's data, so
// nobody posting it is the solver's forfeit. A forfeit by the solver leaves its proof unproven.
//
// No stake moves during the games: settlement.h pays out once, by the proof's standing and each
// claim's GameResult.
#ifndef POLNODE_CONTRACTS_DISPUTE_GAME_H_
#define POLNODE_CONTRACTS_DISPUTE_GAME_H_

#include <string>
#include <string_view>

#include "exec_context.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/dispute.pb.h"

namespace polnode::contracts {

/// What a move or a timeout decided.
struct MoveEffect {
  bool ruled = false;  // the game is decided
  proto::GameResult result = proto::GAME_RESULT_NONE;
  std::string ruling;
};

/// Starts the game over the next claim without a result, or, when none is left (or the proof has
/// already fallen, which marks the rest GAME_NOT_PLAYED), settles the task (settlement.h).
/// Precondition: the task is revealing or disputed. Stores the task.
[[nodiscard]] Status StartGamesOrSettle(ExecContext& ctx, proto::Task& task);

/// dispute/move: a move in the running game named by (task_id, challenger) for its current round.
/// kFailedPrecondition for a move of the wrong kind or round, kPermissionDenied for a signer who
/// may not make it, kAlreadyExists for a second move in one round, kInvalidArgument for a move
/// whose hashes or proofs do not check. Nothing changes on error.
[[nodiscard]] Status ExecuteDisputeMove(ExecContext& ctx, std::string_view signer, std::string_view payload,
                                        const proto::DisputeMoveTx& msg);

/// DUE_GAME_DEADLINE: decides the running game of a disputed task against whoever owed a move it
/// did not make (see above). Stale entries are ignored.
[[nodiscard]] Status OnGameDeadline(ExecContext& ctx, proto::Task& task);

// The pieces above, without persistence, for auditors that re-execute a recorded game
// (dispute_audit.h).

/// The game `challenger` (a rejecting verifier when `challenger_is_verifier`, else a whistleblower)
/// plays against the task's solver over the proof `proof_root` (segment ends), its segments
/// starting at `start_root`'s checkpoints (the committed root in a forced round, else
/// `proof_root`), as it starts at ctx.block.height (round 1, opening).
[[nodiscard]] Result<proto::DisputeGame> NewGame(ExecContext& ctx, const proto::Task& task,
                                                 std::string_view challenger, bool challenger_is_verifier,
                                                 std::string_view proof_root, std::string_view start_root);

/// Applies one move to `game` (recording it) as ExecuteDisputeMove does, without storing anything
/// but the deadlines NextRound schedules in ctx.state. Errors as ExecuteDisputeMove's.
[[nodiscard]] Result<MoveEffect> ApplyMove(ExecContext& ctx, const proto::Task& task, proto::DisputeGame& game,
                                           std::string_view signer, std::string_view payload,
                                           const proto::DisputeMoveTx& msg);

/// What the deadline of `game`'s current round decides (see the file comment).
MoveEffect TimeoutEffect(const proto::DisputeGame& game);

/// Writes `result` into the game record's challenger_won / forfeit / both_forfeited, winner, loser.
void SetGameResult(proto::DisputeGame& game, proto::GameResult result);

/// The GameResult a resolved game record holds; GAME_RESULT_NONE while it runs.
proto::GameResult GameResultOf(const proto::DisputeGame& game);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_DISPUTE_GAME_H_
