#include "settlement.h"

#include <algorithm>
#include <string>
#include <vector>

#include "accounts.h"
#include "checked_math.h"
#include "dispute_game.h"
#include "keys.h"
#include "move_fields.h"
#include "polnode/consensus/merkle.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/forced.h"
#include "polnode/contracts/perturbation.h"
#include "records.h"
#include "staking.h"
#include "task_ops.h"
#include "verification.h"

namespace polnode::contracts {
namespace {

using consensus::Hash256;

// The verifier fee each verdict that agrees with the outcome earns, and the solver's pay.
struct Shares {
  std::uint64_t per_verifier = 0;
  std::uint64_t solver = 0;
};

Shares ComputeShares(const proto::Task& task, const proto::Params& params) {
  const std::uint64_t fee_budget = BpsOf(task.escrow(), params.verifier_fee_bps());
  return Shares{fee_budget / params.verifiers_per_task(), task.escrow() - fee_budget};
}

bool Live(const proto::VerifierSlot& slot) { return !slot.absent() && slot.verdict() != proto::VERDICT_NONE; }

// An overdue slot's verdict counts but earns no fee: a verifier gains nothing by answering after
// the others, and each overdue slot has at most one fresh slot beside it, so at most
// verifiers_per_task fees are ever paid.
Status PayVerifier(ExecContext& ctx, proto::Task& task, const proto::VerifierSlot& slot, const Shares& shares) {
  if (!slot.overdue()) {
    POLNODE_RETURN_IF_ERROR(PayFromEscrow(ctx, task, slot.verifier(), shares.per_verifier, "verifier_fee"));
  }
  return UnlockStake(ctx.state, proto::ROLE_VERIFIER, slot.verifier(), slot.lock());
}

Status ReleaseVerifier(ExecContext& ctx, const proto::VerifierSlot& slot) {
  return UnlockStake(ctx.state, proto::ROLE_VERIFIER, slot.verifier(), slot.lock());
}

Status ReleaseChallenger(ExecContext& ctx, const proto::Challenge& challenge) {
  return UnlockStake(ctx.state, proto::ROLE_WHISTLEBLOWER, challenge.challenger(), challenge.lock());
}

Status PaySolver(ExecContext& ctx, proto::Task& task, const Shares& shares) {
  POLNODE_RETURN_IF_ERROR(PayFromEscrow(ctx, task, task.solver(), shares.solver, "solver_pay"));
  return UnlockStake(ctx.state, proto::ROLE_SOLVER, task.solver(), task.solver_lock());
}

// Pays min(pool * payout_bps, payment * cap_bps) / 10000, split equally among `catchers`; the
// remainder stays in the pool. The cap ties what one forced round can take out of the pool to the
// size of the task, so small tasks cannot farm it.
Status PayJackpot(ExecContext& ctx, const proto::Task& task, const std::vector<std::string>& catchers) {
  if (catchers.empty()) return Status::Ok();
  POLNODE_ASSIGN_OR_RETURN(proto::Jackpot jackpot, LoadJackpot(ctx.state));
  const std::uint64_t payout = std::min(BpsOf(jackpot.pool(), ctx.params.jackpot_payout_bps()),
                                        BpsOf(task.spec().payment(), ctx.params.jackpot_payout_cap_bps()));
  const std::uint64_t share = payout / catchers.size();
  jackpot.set_pool(jackpot.pool() - share * catchers.size());
  StoreJackpot(ctx.state, jackpot);
  for (const std::string& catcher : catchers) {
    POLNODE_RETURN_IF_ERROR(Credit(ctx.state, catcher, share));
    ctx.Emit("jackpot_paid",
             {{"task", ToHex(task.id())}, {"recipient", ToHex(catcher)}, {"amount", std::to_string(share)}});
  }
  return Status::Ok();
}

bool RightByResult(proto::GameResult result) {
  return result == proto::GAME_CHALLENGER_WON || result == proto::GAME_DEFENDER_FORFEIT ||
         result == proto::GAME_NOT_PLAYED;
}

// A challenger that lost its own game pays the solver that defended; one that forfeited together
// with the solver pays the jackpot.
Status SlashLoser(ExecContext& ctx, const proto::Task& task, proto::Role role, const std::string& key,
                  std::uint64_t lock, proto::GameResult result) {
  if (result == proto::GAME_BOTH_FORFEIT) {
    return SlashToJackpot(ctx, task, role, key, lock, slash_reason::kForfeitedDisputeGame);
  }
  return SlashTo(ctx, task, role, key, lock, task.solver(),
                 result == proto::GAME_CHALLENGER_FORFEIT ? slash_reason::kForfeitedDisputeGame
                                                          : slash_reason::kLostDisputeGame);
}

// Whether an accepting verifier replayed the segment the proof was disproven at.
bool AcceptedDisprovenSegment(const proto::Task& task, const proto::VerifierSlot& slot) {
  if (task.standing() != proto::PROOF_DISPROVEN) return false;
  const std::uint64_t s = task.disproven_segment();
  return s == SegmentCount(task.spec()) - 1 || std::find(slot.segments().begin(), slot.segments().end(), s) !=
                                                   slot.segments().end();
}

// Pays or slashes one rejecting verifier whose verdict is a claim against the proof on trial.
Status SettleRejectClaim(ExecContext& ctx, proto::Task& task, const proto::VerifierSlot& slot, const Shares& shares,
                         std::vector<std::string>& right) {
  // An undisputed reject (non-forced rounds) stands; its game result is NONE.
  const proto::GameResult result = slot.disputed() ? slot.game_result() : proto::GAME_NOT_PLAYED;
  if (RightByResult(result)) {
    right.push_back(slot.verifier());
    return PayVerifier(ctx, task, slot, shares);
  }
  return SlashLoser(ctx, task, proto::ROLE_VERIFIER, slot.verifier(), slot.lock(), result);
}

// Releases or slashes one whistleblower whose challenge is a claim against the proof on trial: one
// that won its game shares the solver's lock, one whose game was not needed is released.
Status SettleChallengeClaim(ExecContext& ctx, const proto::Task& task, const proto::Challenge& challenge,
                            std::vector<std::string>& right) {
  if (!RightByResult(challenge.game_result())) {
    return SlashLoser(ctx, task, proto::ROLE_WHISTLEBLOWER, challenge.challenger(), challenge.lock(),
                      challenge.game_result());
  }
  if (challenge.game_result() != proto::GAME_NOT_PLAYED) right.push_back(challenge.challenger());
  return ReleaseChallenger(ctx, challenge);
}

Status SettleForcedSlots(ExecContext& ctx, proto::Task& task, const Shares& shares, std::vector<std::string>& right,
                         std::vector<std::string>& catchers) {
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (!Live(slot)) continue;
    if (slot.verdict() == proto::VERDICT_ACCEPT) {
      if (!slot.vouched()) {
        POLNODE_RETURN_IF_ERROR(SlashToJackpot(ctx, task, proto::ROLE_VERIFIER, slot.verifier(), slot.lock(),
                                               slash_reason::kAcceptedForcedError));
      } else if (AcceptedDisprovenSegment(task, slot)) {
        // Right about the forced checkpoints, but it passed a transition of the result proof that
        // a game showed wrong, as an accept of a round that was not forced would have.
        POLNODE_RETURN_IF_ERROR(SlashTo(ctx, task, proto::ROLE_VERIFIER, slot.verifier(), slot.lock(),
                                        task.disprover(), slash_reason::kAcceptedWrongSegment));
      } else {
        POLNODE_RETURN_IF_ERROR(PayVerifier(ctx, task, slot, shares));
      }
    } else if (slot.vouched()) {
      catchers.push_back(slot.verifier());
      POLNODE_RETURN_IF_ERROR(PayVerifier(ctx, task, slot, shares));
    } else {
      POLNODE_RETURN_IF_ERROR(SettleRejectClaim(ctx, task, slot, shares, right));
    }
  }
  for (const proto::Challenge& challenge : task.challenges()) {
    if (challenge.caught()) {
      catchers.push_back(challenge.challenger());
      POLNODE_RETURN_IF_ERROR(ReleaseChallenger(ctx, challenge));
    } else {
      POLNODE_RETURN_IF_ERROR(SettleChallengeClaim(ctx, task, challenge, right));
    }
  }
  return Status::Ok();
}

Status SettleSlots(ExecContext& ctx, proto::Task& task, const Shares& shares, bool accepted,
                   std::vector<std::string>& right) {
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (!Live(slot)) continue;
    if (slot.verdict() == proto::VERDICT_REJECT) {
      POLNODE_RETURN_IF_ERROR(SettleRejectClaim(ctx, task, slot, shares, right));
    } else if (accepted) {
      POLNODE_RETURN_IF_ERROR(PayVerifier(ctx, task, slot, shares));
    } else if (AcceptedDisprovenSegment(task, slot)) {
      POLNODE_RETURN_IF_ERROR(SlashTo(ctx, task, proto::ROLE_VERIFIER, slot.verifier(), slot.lock(), task.disprover(),
                                      slash_reason::kAcceptedWrongSegment));
    } else {
      POLNODE_RETURN_IF_ERROR(ReleaseVerifier(ctx, slot));
    }
  }
  for (const proto::Challenge& challenge : task.challenges()) {
    POLNODE_RETURN_IF_ERROR(SettleChallengeClaim(ctx, task, challenge, right));
  }
  return Status::Ok();
}

// Whether `proof_bytes` (consensus::SerializeMerkleProof) proves `leaf` as checkpoint `k` of the
// `segments` + 1 leaf proof whose root is `root`.
bool Climbs(std::string_view proof_bytes, std::uint64_t k, std::uint64_t segments, const Hash256& root,
            const Hash256& leaf) {
  Result<consensus::MerkleProof> path = ProofField(proof_bytes, "proof");
  return path.ok() && path->leaf_index == k && path->leaf_count == segments + 1 &&
         consensus::VerifyMerkleProof(root, leaf, *path).ok();
}

// Checks one revealed leaf: its hashes climb to `committed_root` and `result_root` at checkpoint
// `k`, and differ exactly when `k` is `forced`.
Status CheckRevealedLeaf(const proto::RevealedLeaf& leaf, std::uint64_t k, std::uint64_t segments, bool forced,
                         const Hash256& committed_root, const Hash256& result_root) {
  const std::string at = "revealed checkpoint " + std::to_string(k);
  POLNODE_ASSIGN_OR_RETURN(Hash256 committed, HashField(leaf.committed_hash(), at + ": committed_hash"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 result, HashField(leaf.result_hash(), at + ": result_hash"));
  if (!Climbs(leaf.committed_proof(), k, segments, committed_root, committed)) {
    return Status::InvalidArgument(at + ": committed_proof does not prove committed_hash against the committed root");
  }
  if (!Climbs(leaf.result_proof(), k, segments, result_root, result)) {
    return Status::InvalidArgument(at + ": result_proof does not prove result_hash against result_root");
  }
  if (forced && committed == result) {
    return Status::InvalidArgument(at + " is forced: the result proof must differ from the committed one there");
  }
  if (!forced && committed != result) {
    return Status::InvalidArgument(at + " is not forced: the result proof must equal the committed one there");
  }
  return Status::Ok();
}

// Checks a forced round's reveal (exactly the checkpoints of forced.h RevealCheckpoints, each in
// both proofs, different exactly at the forced ones) and records the shown forced checkpoints with
// their honest hashes, who vouched (forced.h VerdictRight) and which challenges caught the error.
// Rejects and challenges that were not right claim the result proof is wrong: the solver defends
// it in a game. Nothing in `task` changes on error.
Status AcceptForcedReveal(proto::Task& task, const proto::RevealTx& msg) {
  POLNODE_ASSIGN_OR_RETURN(Hash256 committed_root, HashField(task.proof_root(), "proof_root"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 result_root, HashField(msg.result_root(), "result_root"));
  const std::uint64_t segments = SegmentCount(task.spec());
  const std::vector<std::uint64_t> wanted = RevealCheckpoints(task);
  if (static_cast<std::size_t>(msg.leaves_size()) != wanted.size()) {
    return Status::InvalidArgument("forced-error round: the reveal shows " + std::to_string(msg.leaves_size()) +
                                   " checkpoints; the verdicts and challenges need " + std::to_string(wanted.size()));
  }
  const bool tolerant = task.spec().tolerant();
  std::vector<std::uint64_t> forced;
  std::vector<std::string> honest;
  std::vector<std::string> perturbed;  // tolerant mode: per forced checkpoint, its indices' hash
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    const proto::RevealedLeaf& leaf = msg.leaves(static_cast<int>(i));
    if (leaf.checkpoint() != wanted[i]) {
      return Status::InvalidArgument("forced-error round: revealed leaf " + std::to_string(i) + " must be checkpoint " +
                                     std::to_string(wanted[i]) + ", not " + std::to_string(leaf.checkpoint()));
    }
    const bool is_forced = IsForcedCheckpoint(msg.secret(), task.forced_seed(), task.id(), wanted[i], segments);
    POLNODE_RETURN_IF_ERROR(CheckRevealedLeaf(leaf, wanted[i], segments, is_forced, committed_root, result_root));
    if (!is_forced) continue;
    if (tolerant) {
      const std::size_t p = forced.size();
      if (p >= static_cast<std::size_t>(msg.perturbations_size())) {
        return Status::InvalidArgument("forced-error round: forced checkpoint " + std::to_string(wanted[i]) +
                                       " needs its perturbation proof");
      }
      POLNODE_ASSIGN_OR_RETURN(std::string indices,
                               CheckPerturbationProof(task, msg.secret(), leaf, msg.perturbations(static_cast<int>(p))));
      perturbed.push_back(std::move(indices));
    }
    forced.push_back(wanted[i]);
    honest.push_back(leaf.result_hash());
  }
  if (static_cast<std::size_t>(msg.perturbations_size()) != (tolerant ? forced.size() : 0)) {
    return Status::InvalidArgument(tolerant ? "forced-error round: one perturbation proof per shown forced checkpoint"
                                            : "forced-error round: an exact task's reveal has no perturbation proofs");
  }
  task.set_forced_root(task.proof_root());
  task.set_proof_root(msg.result_root());
  *task.mutable_forced_checkpoints() = {forced.begin(), forced.end()};
  *task.mutable_honest_hashes() = {honest.begin(), honest.end()};
  *task.mutable_perturbed_index_hashes() = {perturbed.begin(), perturbed.end()};
  for (proto::VerifierSlot& slot : *task.mutable_verifiers()) {
    if (!Live(slot)) continue;
    slot.set_vouched(VerdictRight(task, slot));
    // A right reject is right by construction: no game over it, even if the solver disputed it.
    if (slot.verdict() == proto::VERDICT_REJECT) slot.set_disputed(!slot.vouched());
  }
  for (proto::Challenge& challenge : *task.mutable_challenges()) challenge.set_caught(ChallengeCaught(task, challenge));
  return Status::Ok();
}

}  // namespace

Status SettleAfterGames(ExecContext& ctx, proto::Task& task) {
  if (task.standing() == proto::PROOF_STANDING_NONE) task.set_standing(proto::PROOF_UPHELD);
  const Shares shares = ComputeShares(task, ctx.params);
  const bool upheld = task.standing() == proto::PROOF_UPHELD;
  // Too few slots answered: upheld or not, nobody checked enough of the proof to pay for it.
  const bool checked = !VerificationShort(task, ctx.params);
  std::vector<std::string> right;  // who shares the solver's lock when it is slashed
  proto::TaskOutcome outcome = proto::OUTCOME_REJECTED;
  bool paid = false;
  if (task.forced_error()) {
    std::vector<std::string> catchers;
    POLNODE_RETURN_IF_ERROR(SettleForcedSlots(ctx, task, shares, right, catchers));
    POLNODE_RETURN_IF_ERROR(PayJackpot(ctx, task, catchers));
    const bool vouched = std::any_of(task.verifiers().begin(), task.verifiers().end(),
                                     [](const proto::VerifierSlot& s) { return s.vouched(); });
    if (upheld) {
      paid = vouched && checked;
      outcome = paid ? proto::OUTCOME_FORCED_ERROR : proto::OUTCOME_FORCED_UNVERIFIED;
    }
  } else {
    POLNODE_RETURN_IF_ERROR(SettleSlots(ctx, task, shares, upheld && checked, right));
    if (upheld) {
      paid = checked;
      outcome = checked ? proto::OUTCOME_ACCEPTED : proto::OUTCOME_UNVERIFIED;
    }
  }
  if (paid) {
    POLNODE_RETURN_IF_ERROR(PaySolver(ctx, task, shares));
  } else if (upheld) {
    POLNODE_RETURN_IF_ERROR(UnlockStake(ctx.state, proto::ROLE_SOLVER, task.solver(), task.solver_lock()));
  } else {
    POLNODE_RETURN_IF_ERROR(SlashSplit(ctx, task, proto::ROLE_SOLVER, task.solver(), task.solver_lock(), right,
                                       slash_reason::kRejectedProof));
  }
  POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
  return CloseTask(ctx, task, proto::TASK_SETTLED, outcome);
}

Status ExecuteReveal(ExecContext& ctx, std::string_view signer, const proto::RevealTx& msg) {
  POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(ctx.state, msg.task_id()));
  if (task.solver() != signer) return Status::PermissionDenied("only the task's solver may reveal");
  if (task.status() != proto::TASK_REVEALING) return Status::FailedPrecondition("the task is not awaiting a reveal");
  if (ToBytes(SecretCommitment(msg.secret())) != task.secret_commitment()) {
    return Status::InvalidArgument("the secret does not match the claim's commitment");
  }
  const bool forced = IsForcedError(msg.secret(), task.forced_seed(), task.id(), ctx.params.forced_error_rate());
  if (forced) {
    POLNODE_RETURN_IF_ERROR(AcceptForcedReveal(task, msg));
    // Kept so that a challenger can prove a game's end against the result root without the
    // solver's server (records.h LoadRevealed).
    proto::RevealedCheckpoints revealed;
    *revealed.mutable_leaves() = msg.leaves();
    StoreRevealed(ctx.state, task.id(), revealed);
  } else {
    if (msg.result_root() != task.proof_root()) {
      return Status::InvalidArgument("not a forced-error round: result_root must equal the committed proof root");
    }
    if (msg.leaves_size() > 0 || msg.perturbations_size() > 0) {
      return Status::InvalidArgument("not a forced-error round: the reveal shows no checkpoints");
    }
    // A reject the solver left undisputed stands: the solver conceded its proof.
    for (const proto::VerifierSlot& slot : task.verifiers()) {
      if (Live(slot) && slot.verdict() == proto::VERDICT_REJECT && !slot.disputed()) {
        task.set_standing(proto::PROOF_UNPROVEN);
      }
    }
  }
  task.set_forced_error(forced);
  task.set_result_root(msg.result_root());
  ctx.Emit("revealed", {{"task", ToHex(task.id())}, {"forced_error", forced ? "true" : "false"}});
  return StartGamesOrSettle(ctx, task);
}

Status OnRevealDeadline(ExecContext& ctx, proto::Task& task) {
  if (task.status() != proto::TASK_REVEALING || task.deadline() != ctx.block.height) return Status::Ok();
  const Shares shares = ComputeShares(task, ctx.params);
  std::vector<std::string> right;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (!Live(slot)) continue;
    if (slot.verdict() == proto::VERDICT_REJECT) {
      right.push_back(slot.verifier());
      POLNODE_RETURN_IF_ERROR(PayVerifier(ctx, task, slot, shares));
    } else {
      POLNODE_RETURN_IF_ERROR(ReleaseVerifier(ctx, slot));
    }
  }
  for (const proto::Challenge& challenge : task.challenges()) {
    right.push_back(challenge.challenger());
    POLNODE_RETURN_IF_ERROR(ReleaseChallenger(ctx, challenge));
  }
  task.set_standing(proto::PROOF_UNPROVEN);
  POLNODE_RETURN_IF_ERROR(
      SlashSplit(ctx, task, proto::ROLE_SOLVER, task.solver(), task.solver_lock(), right, slash_reason::kNoReveal));
  POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
  return CloseTask(ctx, task, proto::TASK_SETTLED, proto::OUTCOME_NO_REVEAL);
}

Status SettleUnavailable(ExecContext& ctx, proto::Task& task) {
  const Shares shares = ComputeShares(task, ctx.params);
  std::vector<std::string> right;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (!Live(slot)) continue;
    if (slot.verdict() == proto::VERDICT_ACCEPT) {
      POLNODE_RETURN_IF_ERROR(ReleaseVerifier(ctx, slot));
    } else {
      right.push_back(slot.verifier());
      POLNODE_RETURN_IF_ERROR(PayVerifier(ctx, task, slot, shares));
    }
  }
  task.set_standing(proto::PROOF_UNPROVEN);
  POLNODE_RETURN_IF_ERROR(SlashSplit(ctx, task, proto::ROLE_SOLVER, task.solver(), task.solver_lock(), right,
                                     slash_reason::kUnavailableProof));
  POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
  return CloseTask(ctx, task, proto::TASK_SETTLED, proto::OUTCOME_UNAVAILABLE);
}

Status SettleNoSeed(ExecContext& ctx, proto::Task& task) {
  if (task.jackpot_cut() > 0) {
    task.set_escrow(task.escrow() - task.jackpot_cut());
    POLNODE_RETURN_IF_ERROR(AddToJackpot(ctx.state, task.jackpot_cut()));
  }
  POLNODE_RETURN_IF_ERROR(PaySolver(ctx, task, ComputeShares(task, ctx.params)));
  POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
  return CloseTask(ctx, task, proto::TASK_SETTLED, proto::OUTCOME_NO_SEED);
}

Status SettleUnverified(ExecContext& ctx, proto::Task& task) {
  POLNODE_RETURN_IF_ERROR(UnlockStake(ctx.state, proto::ROLE_SOLVER, task.solver(), task.solver_lock()));
  POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
  return CloseTask(ctx, task, proto::TASK_CANCELLED, proto::OUTCOME_UNVERIFIED);
}

}  // namespace polnode::contracts
