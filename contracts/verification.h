// Verification rounds: verifier assignment (drawn after the proof commitment), verdicts, overdue and
// absent verifiers and the fresh slots drawn beside overdue ones, and the challenges raised in the
// challenge window.
//
// Slots. Each verifier slot is drawn by free stake with replacement (beacon.h StakeWeightedPicks):
// a key drawn for several slots of one task holds each, locks one lock per slot and replays each
// slot's own segments, so stake split over several keys holds exactly as many slots as the same
// stake on one key. The slot, not the key, is the unit of verdicts, disputes and settlement.
//
// Verdicts. An assigned verifier replays the segments its slot names (drawn for the slot from the
// round's beacon) plus the final segment, and posts accept, reject (naming the failed segments) or
// unavailable (it could not get the proof's data), one per slot. A reject carries, per failed
// segment, a digest of what its replay of that segment found (beacon.h SegmentDigest: the end
// state's hash in exact mode, the indices beyond forced_delta / 2 in tolerant mode), which a
// forced round checks against what the solver reveals (forced.h).
//
// Overdue and absent verifiers. A chain that makes blocks on a timer can end a verify window while
// an honest replay still runs and a lazy accept is long in (tests/node/slow_verifier_race_test.cc),
// so a deadline does not simply hand the slot to someone else:
// - At a verdict deadline with verification rounds left, a slot without a verdict becomes
//   *overdue*: it keeps its lock and may still answer until the next deadline, and its verdict
//   counts for the outcome like any other, but it earns no fee (settlement.h), so waiting to see
//   the others' verdicts gains nothing. Beside it a fresh slot is drawn, by stake, among keys that
//   hold no slot of the task, at most one fresh slot per key (a key that already answered would
//   only repeat itself, and in a small network the lazy verifier would be the only voice). Where
//   no such key is left, none is drawn.
// - A slot still without a verdict at the next deadline (or at the last round's) is *absent*: its
//   lock goes to the jackpot.
// - Verification is *short* (VerificationShort) when a slot ended absent and fewer than
//   params.verifiers_per_task slots answered: too few voices checked the proof, so an upheld
//   proof is not paid but settles OUTCOME_UNVERIFIED (escrow refunded, solver lock released). A
//   slow honest verifier can therefore cost an honest solver its pay, never turn a cheat into pay.
//
// Unavailable data is the solver's burden: unavailable verdicts send the task to TASK_PUBLISHING
// (publication.h); once the solver published the checkpoints they need on the ledger, those
// verifiers replay from there (ReopenVerification) and may no longer answer unavailable.
//
// Challenges (TASK_CHALLENGE). The solver disputes reject verdicts it holds wrong (it then defends
// its proof against each in a dispute game); a reject it leaves undisputed stands. A staked
// whistleblower (not the submitter, not a verifier of the task) challenges the proof itself,
// locking the task's whistleblower lock. The ledger draws the segments it covers then (beacon.h
// ChallengeSegments: from the beacon and its key, plus the final one), and the challenge names
// which of them failed, with digests like a reject's. It plays a game against the solver, unless
// the round was forced and it named exactly its covered segments that end at forced checkpoints,
// with the honest hashes' digests (forced.h ChallengeCaught: then the proof was wrong by
// construction and the challenge is a catch). A challenge copied from public verdicts names
// segments drawn for someone else: it must play, and cannot win.
#ifndef POLNODE_CONTRACTS_VERIFICATION_H_
#define POLNODE_CONTRACTS_VERIFICATION_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "exec_context.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts {

/// The number of segments of a task: total_steps / checkpoint_interval (checked at submission).
std::uint64_t SegmentCount(const proto::TaskSpec& spec);

/// The segments slot `slot` of `task` covers: its drawn segments plus the final one, ascending
/// and distinct.
std::vector<std::uint64_t> CoveredSegments(const proto::Task& task, const proto::VerifierSlot& slot);

/// "accept", "reject", "unavailable" or "none".
std::string_view VerdictName(proto::Verdict verdict);

/// DUE_SEGMENT_BEACON: draws the round-1 beacon from this block's randomness and assigns
/// params.verifiers_per_task slots, each drawn by free stake with replacement among the eligible
/// (staked, neither solver nor submitter, free stake for the lock staking.h TaskLock; a key is
/// drawn again while its free stake covers another lock); each slot records its drawn segments
/// and lock. The jackpot cut leaves the escrow. With no eligible
/// verifier the task is cancelled: escrow refunded in full, solver lock released.
[[nodiscard]] Status OnSegmentBeacon(ExecContext& ctx, proto::Task& task);

/// task/seed: the submitter reveals the seed its submission committed to, while the task is
/// committed (after the proof root, before the beacon); the beacon is then drawn at the end of
/// the next block, or at the usual beacon height if that is later. Without a commitment there is
/// nothing to reveal (kFailedPrecondition); a seed that does not hash to it is kInvalidArgument.
/// A committed seed not revealed within params.seed_reveal_window blocks of the proof commitment
/// settles OUTCOME_NO_SEED (settlement.h).
[[nodiscard]] Status ExecuteRevealSeed(ExecContext& ctx, std::string_view signer, const proto::SeedRevealTx& msg);

/// task/verdict: the verdict of live (not absent; overdue ones included) slot msg.slot, once, while
/// verifying.
/// kPermissionDenied when the signer does not hold that slot (or it was absent), kInvalidArgument for a reject whose failed segments are not
/// strictly ascending covered segments of the slot (its drawn ones or the final one) or whose
/// digests are not one per failed segment, or an accept or
/// unavailable verdict with segments or digests; kFailedPrecondition for unavailable on a
/// published slot. When every live slot has answered, verification ends at once.
[[nodiscard]] Status ExecuteVerdict(ExecContext& ctx, std::string_view signer, const proto::VerdictTx& msg);

/// DUE_VERDICT_DEADLINE: while rounds remain (verification_round < max_verification_rounds), slots
/// without a verdict that were not overdue become overdue, one fresh slot per such slot is drawn
/// by stake among keys holding no slot of the task, one per key (fewer where fewer are left) and the task verifies for
/// another verify window; every other slot without a verdict is absent (lock slashed to the
/// jackpot). When no slot became overdue, verification ends: no verdict at all settles
/// OUTCOME_UNVERIFIED (settlement.h), unavailable verdicts start the publication, anything else
/// opens the challenge window.
[[nodiscard]] Status OnVerdictDeadline(ExecContext& ctx, proto::Task& task);

/// Whether too few slots answered for an upheld proof to be paid: some slot ended absent and
/// fewer than params.verifiers_per_task slots (absent ones not counted) have a verdict.
[[nodiscard]] bool VerificationShort(const proto::Task& task, const proto::Params& params);

/// After a publication completed (publication.h): the unavailable slots are reopened as published
/// and the task verifies again for params.verify_window blocks. Stores the task.
[[nodiscard]] Status ReopenVerification(ExecContext& ctx, proto::Task& task);

/// task/dispute: the solver disputes the reject verdict of slot msg.slot (held by msg.verifier), or
/// a whistleblower challenges the proof (see the file comment), which records the challenge's
/// covered segments (beacon.h ChallengeSegments of the segment beacon, its key, the segment count
/// and segments_per_verification). Errors: kFailedPrecondition outside
/// the challenge window or for a non-reject verdict, kNotFound for a slot that msg.verifier does
/// not hold (or that was absent), kAlreadyExists for a repeat, kInvalidArgument for a challenge's
/// failed segments or digests that break the verdict rules over its covered segments,
/// kPermissionDenied for the submitter or a verifier of the task, kResourceExhausted beyond
/// params.max_challengers, and LockStake's errors.
[[nodiscard]] Status ExecuteDispute(ExecContext& ctx, std::string_view signer, const proto::DisputeTx& msg);

/// DUE_CHALLENGE_END: the challenge window closes; the solver must reveal within reveal_window.
[[nodiscard]] Status OnChallengeEnd(ExecContext& ctx, proto::Task& task);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_VERIFICATION_H_
