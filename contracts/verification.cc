#include "verification.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "keys.h"
#include "polnode/contracts/beacon.h"
#include "records.h"
#include "staking.h"
#include "task_ops.h"

namespace polnode::contracts {
namespace {

// The eligible verifiers ordered by their assignment score for `beacon`.
Result<std::vector<std::string>> RankEligibleVerifiers(const ExecContext& ctx, const proto::Task& task,
                                                       std::string_view beacon) {
  POLNODE_ASSIGN_OR_RETURN(proto::VerifierSet set, LoadVerifierSet(ctx.state));
  std::vector<std::pair<Hash256, std::string>> ranked;
  for (const std::string& verifier : set.pubkeys()) {
    if (verifier == task.solver() || verifier == task.submitter()) continue;
    POLNODE_ASSIGN_OR_RETURN(std::uint64_t free, FreeStake(ctx.state, proto::ROLE_VERIFIER, verifier));
    if (free < ctx.params.min_stake_verifier()) continue;
    ranked.emplace_back(AssignmentScore(beacon, verifier), verifier);
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> verifiers;
  for (auto& entry : ranked) verifiers.push_back(std::move(entry.second));
  return verifiers;
}

// The slot of `verifier` in the task, or nullptr.
proto::VerifierSlot* FindSlot(proto::Task& task, std::string_view verifier) {
  for (proto::VerifierSlot& slot : *task.mutable_verifiers()) {
    if (slot.verifier() == verifier) return &slot;
  }
  return nullptr;
}

}  // namespace

Status OnSegmentBeacon(ExecContext& ctx, proto::Task& task) {
  if (task.status() != proto::TASK_COMMITTED || task.deadline() != ctx.block.height) return Status::Ok();
  task.set_segment_beacon(ToBytes(SegmentBeacon(ctx.block.randomness, task.id(), task.proof_root())));
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::string> ranked, RankEligibleVerifiers(ctx, task, task.segment_beacon()));
  if (ranked.empty()) {
    POLNODE_RETURN_IF_ERROR(UnlockStake(ctx.state, proto::ROLE_SOLVER, task.solver(), ctx.params.min_stake_solver()));
    POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
    return CloseTask(ctx, task, proto::TASK_CANCELLED, proto::OUTCOME_NO_VERIFIERS);
  }
  if (ranked.size() > ctx.params.verifiers_per_task()) ranked.resize(ctx.params.verifiers_per_task());
  for (const std::string& verifier : ranked) {
    POLNODE_RETURN_IF_ERROR(LockStake(ctx.state, proto::ROLE_VERIFIER, verifier, ctx.params.min_stake_verifier()));
    task.add_verifiers()->set_verifier(verifier);
    ctx.Emit("verifier_assigned", {{"task", ToHex(task.id())}, {"verifier", ToHex(verifier)}});
  }
  ctx.Emit("segment_beacon", {{"task", ToHex(task.id())}, {"beacon", ToHex(task.segment_beacon())}});
  POLNODE_RETURN_IF_ERROR(
      EnterStatus(ctx, task, proto::TASK_VERIFYING, ctx.params.verify_window(), proto::DUE_VERDICT_DEADLINE));
  StoreTask(ctx.state, task);
  return Status::Ok();
}

Status ExecuteVerdict(ExecContext& ctx, std::string_view signer, const proto::VerdictTx& msg) {
  POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(ctx.state, msg.task_id()));
  if (task.status() != proto::TASK_VERIFYING) return Status::FailedPrecondition("the task is not awaiting verdicts");
  proto::VerifierSlot* slot = FindSlot(task, signer);
  if (slot == nullptr) return Status::PermissionDenied("the signer is not assigned to this task");
  if (slot->verdict() != proto::VERDICT_NONE) return Status::AlreadyExists("this verifier already gave its verdict");
  slot->set_verdict(msg.accept() ? proto::VERDICT_ACCEPT : proto::VERDICT_REJECT);
  slot->set_report_hash(msg.report_hash());
  ctx.Emit("verdict",
           {{"task", ToHex(task.id())}, {"verifier", ToHex(signer)}, {"verdict", msg.accept() ? "accept" : "reject"}});
  const bool all_in = std::all_of(task.verifiers().begin(), task.verifiers().end(),
                                  [](const proto::VerifierSlot& s) { return s.verdict() != proto::VERDICT_NONE; });
  if (all_in) {
    POLNODE_RETURN_IF_ERROR(
        EnterStatus(ctx, task, proto::TASK_CHALLENGE, ctx.params.challenge_window(), proto::DUE_CHALLENGE_END));
  }
  StoreTask(ctx.state, task);
  return Status::Ok();
}

Status OnVerdictDeadline(ExecContext& ctx, proto::Task& task) {
  if (task.status() != proto::TASK_VERIFYING || task.deadline() != ctx.block.height) return Status::Ok();
  bool any_verdict = false;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (slot.verdict() != proto::VERDICT_NONE) {
      any_verdict = true;
      continue;
    }
    POLNODE_RETURN_IF_ERROR(
        SlashToJackpot(ctx, task, proto::ROLE_VERIFIER, slot.verifier(), slash_reason::kAbsentVerifier));
  }
  if (!any_verdict) {
    POLNODE_RETURN_IF_ERROR(UnlockStake(ctx.state, proto::ROLE_SOLVER, task.solver(), ctx.params.min_stake_solver()));
    POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
    return CloseTask(ctx, task, proto::TASK_CANCELLED, proto::OUTCOME_UNVERIFIED);
  }
  POLNODE_RETURN_IF_ERROR(
      EnterStatus(ctx, task, proto::TASK_CHALLENGE, ctx.params.challenge_window(), proto::DUE_CHALLENGE_END));
  StoreTask(ctx.state, task);
  return Status::Ok();
}

Status ExecuteDispute(ExecContext& ctx, std::string_view signer, const proto::DisputeTx& msg) {
  POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(ctx.state, msg.task_id()));
  if (task.status() != proto::TASK_CHALLENGE) return Status::FailedPrecondition("the challenge window is not open");
  proto::VerifierSlot* slot = FindSlot(task, msg.verifier());
  if (slot == nullptr) return Status::NotFound("that key is not a verifier of this task");
  if (slot->verdict() == proto::VERDICT_NONE) return Status::FailedPrecondition("that verifier gave no verdict");
  if (!slot->disputer().empty()) return Status::AlreadyExists("that verdict is already disputed");
  if (signer == slot->verifier()) return Status::InvalidArgument("a verifier cannot dispute its own verdict");
  const bool by_solver = signer == task.solver();
  if (by_solver) {
    if (slot->verdict() != proto::VERDICT_REJECT) {
      return Status::FailedPrecondition("the solver may only dispute a reject verdict");
    }
  } else {
    POLNODE_RETURN_IF_ERROR(
        LockStake(ctx.state, proto::ROLE_WHISTLEBLOWER, signer, ctx.params.min_stake_whistleblower()));
  }
  slot->set_disputer(std::string(signer));
  slot->set_disputer_is_solver(by_solver);
  ctx.Emit("dispute", {{"task", ToHex(task.id())},
                       {"verifier", ToHex(msg.verifier())},
                       {"disputer", ToHex(signer)},
                       {"by", by_solver ? "solver" : "whistleblower"}});
  StoreTask(ctx.state, task);
  return Status::Ok();
}

Status OnChallengeEnd(ExecContext& ctx, proto::Task& task) {
  if (task.status() != proto::TASK_CHALLENGE || task.deadline() != ctx.block.height) return Status::Ok();
  POLNODE_RETURN_IF_ERROR(
      EnterStatus(ctx, task, proto::TASK_REVEALING, ctx.params.reveal_window(), proto::DUE_REVEAL_DEADLINE));
  StoreTask(ctx.state, task);
  return Status::Ok();
}

}  // namespace polnode::contracts
