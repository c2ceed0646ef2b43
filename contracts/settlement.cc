#include "settlement.h"

#include <algorithm>
#include <string>
#include <vector>

#include "accounts.h"
#include "checked_math.h"
#include "dispute_game.h"
#include "keys.h"
#include "polnode/contracts/beacon.h"
#include "records.h"
#include "staking.h"
#include "task_ops.h"

namespace polnode::contracts {
namespace {

// The share of the escrow each assigned verifier earns, and the solver's pay.
struct Shares {
  std::uint64_t per_verifier = 0;
  std::uint64_t solver = 0;
};

Shares ComputeShares(const proto::Task& task, const proto::Params& params) {
  const std::uint64_t fee_budget = BpsOf(task.escrow(), params.verifier_fee_bps());
  const std::uint64_t slots = static_cast<std::uint64_t>(task.verifiers_size());
  return Shares{slots == 0 ? 0 : fee_budget / slots, task.escrow() - fee_budget};
}

bool HasVerdict(const proto::VerifierSlot& slot) { return slot.verdict() != proto::VERDICT_NONE; }

// Pays a verifier its share and releases its lock.
Status PayVerifier(ExecContext& ctx, proto::Task& task, const proto::VerifierSlot& slot, const Shares& shares) {
  POLNODE_RETURN_IF_ERROR(PayFromEscrow(ctx, task, slot.verifier(), shares.per_verifier, "verifier_fee"));
  return UnlockStake(ctx.state, proto::ROLE_VERIFIER, slot.verifier(), ctx.params.min_stake_verifier());
}

Status PaySolver(ExecContext& ctx, proto::Task& task, const Shares& shares) {
  POLNODE_RETURN_IF_ERROR(PayFromEscrow(ctx, task, task.solver(), shares.solver, "solver_pay"));
  return UnlockStake(ctx.state, proto::ROLE_SOLVER, task.solver(), ctx.params.min_stake_solver());
}

// Pays jackpot_payout_bps of the pool, split equally among `catchers`; the remainder stays.
Status PayJackpot(ExecContext& ctx, const proto::Task& task, const std::vector<std::string>& catchers) {
  if (catchers.empty()) return Status::Ok();
  POLNODE_ASSIGN_OR_RETURN(proto::Jackpot jackpot, LoadJackpot(ctx.state));
  const std::uint64_t share = BpsOf(jackpot.pool(), ctx.params.jackpot_payout_bps()) / catchers.size();
  jackpot.set_pool(jackpot.pool() - share * catchers.size());
  StoreJackpot(ctx.state, jackpot);
  for (const std::string& catcher : catchers) {
    POLNODE_RETURN_IF_ERROR(Credit(ctx.state, catcher, share));
    ctx.Emit("jackpot_paid",
             {{"task", ToHex(task.id())}, {"recipient", ToHex(catcher)}, {"amount", std::to_string(share)}});
  }
  return Status::Ok();
}

Status SettleForcedError(ExecContext& ctx, proto::Task& task) {
  const Shares shares = ComputeShares(task, ctx.params);
  std::vector<std::string> catchers;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    const bool whistleblower = !slot.disputer().empty() && !slot.disputer_is_solver();
    if (slot.verdict() == proto::VERDICT_ACCEPT) {
      if (whistleblower) {
        POLNODE_RETURN_IF_ERROR(SlashTo(ctx, task, proto::ROLE_VERIFIER, slot.verifier(), slot.disputer(),
                                        slash_reason::kAcceptedForcedError));
        POLNODE_RETURN_IF_ERROR(
            UnlockStake(ctx.state, proto::ROLE_WHISTLEBLOWER, slot.disputer(), ctx.params.min_stake_whistleblower()));
        catchers.push_back(slot.disputer());
      } else {
        POLNODE_RETURN_IF_ERROR(
            SlashToJackpot(ctx, task, proto::ROLE_VERIFIER, slot.verifier(), slash_reason::kAcceptedForcedError));
      }
    } else if (slot.verdict() == proto::VERDICT_REJECT) {
      POLNODE_RETURN_IF_ERROR(PayVerifier(ctx, task, slot, shares));
      catchers.push_back(slot.verifier());
      if (whistleblower) {
        POLNODE_RETURN_IF_ERROR(SlashTo(ctx, task, proto::ROLE_WHISTLEBLOWER, slot.disputer(), slot.verifier(),
                                        slash_reason::kWrongDispute));
      }
    }
  }
  POLNODE_RETURN_IF_ERROR(PayJackpot(ctx, task, catchers));
  POLNODE_RETURN_IF_ERROR(PaySolver(ctx, task, shares));
  POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
  return CloseTask(ctx, task, proto::TASK_SETTLED, proto::OUTCOME_FORCED_ERROR);
}

Status SettleByVerdicts(ExecContext& ctx, proto::Task& task) {
  const Shares shares = ComputeShares(task, ctx.params);
  std::vector<std::string> rejecters;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (!HasVerdict(slot)) continue;
    POLNODE_RETURN_IF_ERROR(PayVerifier(ctx, task, slot, shares));
    if (slot.verdict() == proto::VERDICT_REJECT) rejecters.push_back(slot.verifier());
  }
  proto::TaskOutcome outcome = proto::OUTCOME_ACCEPTED;
  if (rejecters.empty()) {
    POLNODE_RETURN_IF_ERROR(PaySolver(ctx, task, shares));
  } else {
    outcome = proto::OUTCOME_REJECTED;
    POLNODE_RETURN_IF_ERROR(
        SlashSplit(ctx, task, proto::ROLE_SOLVER, task.solver(), rejecters, slash_reason::kRejectedProof));
  }
  POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
  return CloseTask(ctx, task, proto::TASK_SETTLED, outcome);
}

// A standing dispute: nothing moves until the dispute games (dispute_game.h) have decided.
Status EnterDisputed(ExecContext& ctx, proto::Task& task) {
  task.set_status(proto::TASK_DISPUTED);
  task.set_deadline(0);
  ctx.Emit("task_disputed", {{"task", ToHex(task.id())}});
  return StartNextGameOrSettle(ctx, task);
}

// Whether the verifier of `slot` lost the game over its verdict (its lock is already slashed).
bool VerifierLostGame(const proto::VerifierSlot& slot) {
  if (slot.verdict() == proto::VERDICT_ACCEPT) return slot.game_result() == proto::GAME_CHALLENGER_WON;
  return slot.game_result() == proto::GAME_DEFENDER_WON;
}

}  // namespace

Status SettleAfterGames(ExecContext& ctx, proto::Task& task) {
  const Shares shares = ComputeShares(task, ctx.params);
  std::vector<std::string> disprovers;  // challengers whose referee ruling found the proof wrong
  std::vector<std::string> standing_rejecters;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (!HasVerdict(slot)) continue;
    if (slot.game_result() == proto::GAME_CHALLENGER_WON) {
      disprovers.push_back(slot.verdict() == proto::VERDICT_ACCEPT ? slot.disputer() : slot.verifier());
    }
    if (VerifierLostGame(slot)) continue;
    POLNODE_RETURN_IF_ERROR(PayVerifier(ctx, task, slot, shares));
    if (slot.verdict() == proto::VERDICT_REJECT) standing_rejecters.push_back(slot.verifier());
  }
  proto::TaskOutcome outcome = proto::OUTCOME_REJECTED;
  if (task.solver_slashed()) {
    // The solver lost a game it defended: its lock already went to the winner.
  } else if (task.proof_disproven()) {
    POLNODE_RETURN_IF_ERROR(
        SlashSplit(ctx, task, proto::ROLE_SOLVER, task.solver(), disprovers, slash_reason::kRejectedProof));
  } else if (!standing_rejecters.empty()) {
    POLNODE_RETURN_IF_ERROR(
        SlashSplit(ctx, task, proto::ROLE_SOLVER, task.solver(), standing_rejecters, slash_reason::kRejectedProof));
  } else {
    outcome = proto::OUTCOME_ACCEPTED;
    POLNODE_RETURN_IF_ERROR(PaySolver(ctx, task, shares));
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
  if (!forced && msg.result_root() != task.proof_root()) {
    return Status::InvalidArgument("not a forced-error round: result_root must equal the committed proof root");
  }
  if (forced && msg.result_root() == task.proof_root()) {
    return Status::InvalidArgument("forced-error round: result_root must name the honest proof, not the committed one");
  }
  task.set_forced_error(forced);
  task.set_result_root(msg.result_root());
  ctx.Emit("revealed", {{"task", ToHex(task.id())}, {"forced_error", forced ? "true" : "false"}});
  if (forced) return SettleForcedError(ctx, task);
  const bool disputed = std::any_of(task.verifiers().begin(), task.verifiers().end(),
                                    [](const proto::VerifierSlot& slot) { return !slot.disputer().empty(); });
  if (disputed) return EnterDisputed(ctx, task);
  return SettleByVerdicts(ctx, task);
}

Status OnRevealDeadline(ExecContext& ctx, proto::Task& task) {
  if (task.status() != proto::TASK_REVEALING || task.deadline() != ctx.block.height) return Status::Ok();
  const Shares shares = ComputeShares(task, ctx.params);
  POLNODE_RETURN_IF_ERROR(
      SlashTo(ctx, task, proto::ROLE_SOLVER, task.solver(), task.submitter(), slash_reason::kNoReveal));
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (!HasVerdict(slot)) continue;
    POLNODE_RETURN_IF_ERROR(PayVerifier(ctx, task, slot, shares));
    if (!slot.disputer().empty() && !slot.disputer_is_solver()) {
      POLNODE_RETURN_IF_ERROR(
          UnlockStake(ctx.state, proto::ROLE_WHISTLEBLOWER, slot.disputer(), ctx.params.min_stake_whistleblower()));
    }
  }
  POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
  return CloseTask(ctx, task, proto::TASK_SETTLED, proto::OUTCOME_NO_REVEAL);
}

}  // namespace polnode::contracts
