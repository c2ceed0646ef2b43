// Settlement: the solver's reveal after the challenge window, and what each outcome pays.
//
// Money of a task: escrow E (payment minus the jackpot cut). Verifier fee budget
// F = E * verifier_fee_bps / 10000, one share F / (assigned verifiers) per verifier that gave a
// verdict and is not proven wrong; the solver's pay is E - F; every unpaid part of E (absent or
// wrong verifiers' shares, rounding dust, the solver's pay when it is not earned) is refunded to
// the submitter. Each lock (solver, verifier, whistleblower) is released or slashed exactly once.
//
// The reveal fixes whether the round was a forced error (beacon.h IsForcedError):
//   forced: the committed proof was deliberately wrong, so every accept verdict is wrong and every
//     reject verdict right. An accepting verifier is slashed: to the whistleblower who disputed it,
//     else to the jackpot. A rejecting verifier is paid its share, and a whistleblower who disputed
//     it is slashed to it. The jackpot pays jackpot_payout_bps of the pool, split equally among the
//     catchers (rejecting verifiers and successful whistleblowers). The solver followed the rules:
//     its lock is released and it is paid; result_root names its honest proof.
//   not forced, any dispute standing: the task becomes TASK_DISPUTED with every lock and the
//     escrow held while the dispute games (dispute_game.h) run, then SettleAfterGames pays out.
//   not forced, a reject verdict, no dispute: the solver's lock is split among the rejecting
//     verifiers; voting verifiers are paid; the solver is not.
//   not forced, only accept verdicts, no dispute: solver and voting verifiers are paid.
#ifndef POLNODE_CONTRACTS_SETTLEMENT_H_
#define POLNODE_CONTRACTS_SETTLEMENT_H_

#include <string_view>

#include "exec_context.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts {

/// task/reveal: the solver reveals its secret while the task is revealing. The secret must hash
/// to the claim's commitment, and result_root must equal the committed proof root exactly when the
/// round is not forced. Then settles as described above.
[[nodiscard]] Status ExecuteReveal(ExecContext& ctx, std::string_view signer, const proto::RevealTx& msg);

/// After the last dispute game of a task (dispute_game.h): a verifier that lost its game was slashed
/// there and earns nothing; every other voting verifier is paid. The solver's lock goes, split
/// equally, to the challengers whose referee ruling disproved the proof, or else to the reject
/// verdicts that stand (undisputed or upheld); if neither exists the solver is paid
/// (OUTCOME_ACCEPTED). A solver that lost a game it defended was slashed there and is not paid.
/// The rest of the escrow is refunded and the task settles.
[[nodiscard]] Status SettleAfterGames(ExecContext& ctx, proto::Task& task);

/// DUE_REVEAL_DEADLINE: a solver that did not reveal cannot show its proof was honest or forced:
/// its lock is slashed to the submitter and it is not paid; voting verifiers are paid (their work
/// cannot be judged); whistleblower locks are released; the rest of the escrow is refunded.
[[nodiscard]] Status OnRevealDeadline(ExecContext& ctx, proto::Task& task);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_SETTLEMENT_H_
