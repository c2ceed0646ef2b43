// Settlement: the solver's reveal after the challenge window, and what each outcome pays.
//
// Money of a task: escrow E (the payment, less the jackpot cut once verification started). The
// verifier fee budget F = E * verifier_fee_bps / 10000 pays f = F / verifiers_per_task to each
// verifier whose verdict agrees with the outcome; the solver's pay is E - F, and only for an
// accepted proof. An overdue slot (verification.h) is settled like any other except that it earns
// no fee. Every unpaid part of E is refunded to the submitter. Each lock is released or slashed
// exactly once, here or at the verdict deadline (absent verifiers).
//
// The standing of the proof (after any dispute games, dispute_game.h): upheld when no claim against
// it stood; disproven when a referee ruled against a transition the solver asserted; unproven when
// the solver did not defend it (forfeited a game, left a reject undisputed, did not reveal).
//
// Not forced, upheld: ACCEPTED. The solver is paid; accepting verifiers are paid; rejecting
//   verifiers and whistleblowers lost their games and their locks go to the solver. When the
//   verification was short (verification.h VerificationShort: a slot ended absent and fewer than
//   verifiers_per_task slots answered) the proof was not checked enough to be paid for:
//   UNVERIFIED, the solver's lock is released unpaid, accepting verifiers are released unpaid, the
//   escrow is refunded (the losers of games still pay as above). A forced round's upheld result
//   proof is then FORCED_UNVERIFIED.
// Not forced, disproven or unproven: REJECTED. The solver is not paid and its lock is split among
//   the right challengers (rejects that stood, challengers that won); rejecting verifiers that
//   stood are paid; accepting verifiers are not, and one whose own segments (or the final one)
//   include the disproven segment accepted a wrong transition it replayed: its lock goes to the
//   disprover. A challenger that lost its own game pays the solver; one whose game was not needed
//   is released.
// Forced: the committed proof was deliberately wrong at its forced checkpoints (beacon.h
//   ForcedCheckpoints: each with probability 1/2; exact mode flips a bit, tolerant mode moves a few
//   elements by +-forced_delta, perturbation.h), and the solver trained on from them; RevealTx shows, for every checkpoint a verdict or challenge covered
//   (forced.h RevealCheckpoints), its hash in the committed and in the result proof, and from
//   then on proof_root names the result proof. A verdict is right (forced.h VerdictRight, it
//   vouches) when it is an accept none of whose covered segments ends at a forced checkpoint, or
//   a reject naming exactly the covered segments that do, each with the digest of the honest hash
//   there (exact mode) or of the indices perturbed there (tolerant mode). So replaying only the final segment is not enough: a middle segment may
//   end at a forced checkpoint too. Right accepts are paid; accepts that covered a forced
//   checkpoint accepted a forced error: their locks go to the jackpot. Right rejects are
//   catchers: paid, and they vouch. Challenges that pass the same test over their covered
//   segments (forced.h ChallengeCaught) are catchers too (released), so copying a public reject's
//   segments catches nothing unless the challenger's own drawn segments need exactly those.
//   The jackpot pays min(pool * jackpot_payout_bps, payment * jackpot_payout_cap_bps) / 10000,
//   split among the catchers. Other rejecters and challengers claim the result proof is wrong
//   and play dispute games over it against the solver: a challenger that loses pays the solver
//   its lock. The solver is paid only when the result proof is upheld and some verdict vouched
//   (OUTCOME_FORCED_ERROR); upheld but vouched for by nobody it is released unpaid
//   (OUTCOME_FORCED_UNVERIFIED); disproven or unproven it is REJECTED as above (and a right
//   accept that covered the disproven segment pays its lock to the disprover). So a solver that
//   knows its round is forced gains nothing by committing garbage.
#ifndef POLNODE_CONTRACTS_SETTLEMENT_H_
#define POLNODE_CONTRACTS_SETTLEMENT_H_

#include <string_view>

#include "exec_context.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts {

/// task/reveal: the solver reveals its secret while the task is revealing. The secret must hash to
/// the claim's commitment. Not forced: result_root must equal the committed root and leaves be
/// empty. Forced: leaves must show exactly forced.h RevealCheckpoints, ascending, each hash pair
/// proven (checkpoint index, S + 1 leaves) against the committed root and result_root, different
/// exactly at the forced checkpoints (beacon.h IsForcedCheckpoint from the secret); a tolerant
/// task's reveal has one perturbation proof per shown forced checkpoint (perturbation.h
/// CheckPerturbationProof), an exact task's none. The task then records the shown forced
/// checkpoints with their result hashes (and, tolerant, their perturbed indices' hashes), forced_root = the committed
/// root, proof_root = result_root, and each slot's vouched and challenge's caught. Then the
/// dispute games start (dispute_game.h) or the task settles. Every error is kInvalidArgument (but
/// the permission and status ones) and changes nothing.
[[nodiscard]] Status ExecuteReveal(ExecContext& ctx, std::string_view signer, const proto::RevealTx& msg);

/// After the last dispute game (or when none is needed): pays out by the proof's standing as
/// described above and closes the task.
[[nodiscard]] Status SettleAfterGames(ExecContext& ctx, proto::Task& task);

/// DUE_REVEAL_DEADLINE: a solver that does not reveal leaves its proof unproven: it is not paid and
/// its lock is split among rejecting verifiers and challengers (the jackpot when there are none);
/// rejecting verifiers are paid, accepting ones released unpaid, challengers released.
/// OUTCOME_NO_REVEAL.
[[nodiscard]] Status OnRevealDeadline(ExecContext& ctx, proto::Task& task);

/// The publication window passed incomplete (publication.h): the unavailable verdicts stand. The
/// solver is not paid; its lock is split among the unavailable and rejecting verifiers, who are
/// paid; accepting verifiers are released unpaid. OUTCOME_UNAVAILABLE.
[[nodiscard]] Status SettleUnavailable(ExecContext& ctx, proto::Task& task);

/// The submitter committed to a beacon seed and never revealed it: it chose not to have the proof
/// checked. The jackpot cut leaves the escrow, the solver is paid its share and its lock released,
/// the verifier fee budget is refunded. OUTCOME_NO_SEED.
[[nodiscard]] Status SettleNoSeed(ExecContext& ctx, proto::Task& task);

/// Verification ended without a single verdict: the solver's lock is released, the escrow
/// refunded. OUTCOME_UNVERIFIED.
[[nodiscard]] Status SettleUnverified(ExecContext& ctx, proto::Task& task);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_SETTLEMENT_H_
