#include "tasks.h"

#include <string>

#include "accounts.h"
#include "checked_math.h"
#include "deadlines.h"
#include "keys.h"
#include "move_fields.h"
#include "polnode/consensus/merkle.h"
#include "polnode/contracts/beacon.h"
#include "records.h"
#include "staking.h"
#include "task_ops.h"

namespace polnode::contracts {
namespace {

// The spec rules that depend on params (the stateless ones are checked at decode).
Status CheckSpecAgainstParams(const proto::TaskSpec& spec, const proto::Params& params) {
  if (spec.claim_window() > params.max_claim_window()) {
    return Status::InvalidArgument("claim_window exceeds the maximum " + std::to_string(params.max_claim_window()));
  }
  if (spec.training_window() > params.max_training_window()) {
    return Status::InvalidArgument("training_window exceeds the maximum " +
                                   std::to_string(params.max_training_window()));
  }
  if (spec.training_window() <= params.beacon_delay()) {
    return Status::InvalidArgument("training_window must exceed the beacon delay " +
                                   std::to_string(params.beacon_delay()) + " so the proof can be committed");
  }
  if (spec.segments_per_verification() > params.max_segments_per_verification()) {
    return Status::InvalidArgument("segments_per_verification exceeds the maximum " +
                                   std::to_string(params.max_segments_per_verification()));
  }
  if (spec.total_steps() > params.max_total_steps()) {
    return Status::InvalidArgument("total_steps exceeds the maximum " + std::to_string(params.max_total_steps()));
  }
  if (spec.total_steps() / spec.checkpoint_interval() > params.max_segments()) {
    return Status::InvalidArgument("total_steps / checkpoint_interval exceeds the maximum of " +
                                   std::to_string(params.max_segments()) + " segments");
  }
  return Status::Ok();
}

// Whether a task no longer holds its spec hash: it closed before any proof was committed, so the
// document was never trained for it and may be posted again.
bool ReleasesSpec(const proto::Task& task) {
  return task.status() == proto::TASK_CANCELLED && task.proof_root().empty();
}

}  // namespace

Status ExecuteSubmitTask(ExecContext& ctx, const VerifiedTx& tx, const proto::SubmitTaskTx& msg) {
  const proto::TaskSpec& spec = msg.spec();
  POLNODE_RETURN_IF_ERROR(CheckSpecAgainstParams(spec, ctx.params));
  const std::string_view submitter = SignerBytes(tx);
  const Hash256 spec_hash = TaskSpecHash(spec);
  const std::string id = ToBytes(TaskIdFor(spec_hash, submitter, tx.nonce));
  POLNODE_ASSIGN_OR_RETURN(auto existing, ctx.state.Get(TaskKey(id)));
  if (existing.has_value()) return Status::AlreadyExists("task " + ToHex(id) + " exists");
  POLNODE_ASSIGN_OR_RETURN(std::optional<std::string> owner, LoadSpecOwner(ctx.state, ToBytes(spec_hash)));
  if (owner.has_value()) {
    POLNODE_ASSIGN_OR_RETURN(proto::Task holder, LoadTask(ctx.state, *owner));
    if (!ReleasesSpec(holder)) {
      return Status::AlreadyExists("task " + ToHex(*owner) +
                                   " already has this spec; a document is trained once (change its seed)");
    }
  }
  StoreSpecOwner(ctx.state, ToBytes(spec_hash), id);

  POLNODE_RETURN_IF_ERROR(Debit(ctx.state, submitter, spec.payment()));
  const std::uint64_t cut = BpsOf(spec.payment(), ctx.params.jackpot_cut_bps());

  POLNODE_ASSIGN_OR_RETURN(std::uint64_t seq, LoadU64(ctx.state, kTaskCountKey));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t next_seq, CheckedAdd(seq, 1, "task count"));
  StoreU64(ctx.state, kTaskCountKey, next_seq);
  ctx.state.Put(TaskSeqKey(seq), id);

  proto::Task task;
  task.set_id(id);
  task.set_seq(seq);
  task.set_submitter(std::string(submitter));
  *task.mutable_spec() = spec;
  task.set_spec_hash(ToBytes(spec_hash));
  task.set_spec_uri(msg.spec_uri());
  task.set_escrow(spec.payment());
  task.set_jackpot_cut(cut);
  task.set_seed_commitment(msg.seed_commitment());
  task.set_submit_height(ctx.block.height);
  ctx.Emit("task_submitted", {{"task", ToHex(id)},
                              {"submitter", ToHex(submitter)},
                              {"payment", std::to_string(spec.payment())},
                              {"jackpot_cut", std::to_string(cut)}});
  POLNODE_RETURN_IF_ERROR(EnterStatus(ctx, task, proto::TASK_OPEN, spec.claim_window(), proto::DUE_CLAIM_DEADLINE));
  StoreTask(ctx.state, task);
  return Status::Ok();
}

Status ExecuteCancelTask(ExecContext& ctx, std::string_view signer, const proto::CancelTaskTx& msg) {
  POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(ctx.state, msg.task_id()));
  if (task.submitter() != signer) return Status::PermissionDenied("only the submitter may cancel a task");
  if (task.status() != proto::TASK_OPEN) return Status::FailedPrecondition("only an unclaimed task can be cancelled");
  POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
  return CloseTask(ctx, task, proto::TASK_CANCELLED, proto::OUTCOME_CANCELLED_BY_SUBMITTER);
}

Status ExecuteClaimTask(ExecContext& ctx, std::string_view signer, const proto::ClaimTaskTx& msg) {
  POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(ctx.state, msg.task_id()));
  if (task.status() != proto::TASK_OPEN) return Status::FailedPrecondition("the task is not open for claims");
  if (task.submitter() == signer) return Status::PermissionDenied("a submitter cannot solve its own task");
  const std::uint64_t lock = TaskLock(ctx.params, proto::ROLE_SOLVER, task.spec().payment());
  POLNODE_RETURN_IF_ERROR(LockStake(ctx.state, proto::ROLE_SOLVER, signer, lock));
  task.set_solver_lock(lock);
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t seed_height,
                           CheckedAdd(ctx.block.height, ctx.params.beacon_delay(), "seed height"));
  task.set_solver(std::string(signer));
  task.set_claim_height(ctx.block.height);
  task.set_secret_commitment(msg.secret_commitment());
  ctx.Emit("task_claimed", {{"task", ToHex(task.id())}, {"solver", ToHex(signer)}});
  POLNODE_RETURN_IF_ERROR(
      EnterStatus(ctx, task, proto::TASK_CLAIMED, task.spec().training_window(), proto::DUE_COMMIT_DEADLINE));
  POLNODE_RETURN_IF_ERROR(ScheduleTaskDue(ctx.state, seed_height, proto::DUE_FORCED_SEED, task.id()));
  StoreTask(ctx.state, task);
  return Status::Ok();
}

Status ExecuteCommitProof(ExecContext& ctx, std::string_view signer, const proto::CommitProofTx& msg) {
  POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(ctx.state, msg.task_id()));
  if (task.solver() != signer) return Status::PermissionDenied("only the task's solver may commit a proof");
  if (task.status() != proto::TASK_CLAIMED) return Status::FailedPrecondition("the task is not awaiting a proof");
  if (task.forced_seed().empty()) {
    return Status::FailedPrecondition("the forced-error seed is drawn at the end of block " +
                                      std::to_string(task.claim_height() + ctx.params.beacon_delay()) +
                                      "; commit after it");
  }
  // Checkpoint 0 is the state the task fixes: a proof that starts anywhere else is refused here,
  // where the ledger can check it, instead of in a dispute game, where it could not.
  POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof initial, ProofField(msg.initial_proof(), "initial_proof"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 root, HashField(msg.proof_root(), "proof_root"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 initial_hash, HashField(task.spec().initial_state_hash(), "initial_state_hash"));
  if (initial.leaf_index != 0 || initial.leaf_count != task.spec().total_steps() / task.spec().checkpoint_interval() + 1 ||
      !consensus::VerifyMerkleProof(root, initial_hash, initial).ok()) {
    return Status::InvalidArgument("initial_proof does not show checkpoint 0 of the root to be the task's initial state");
  }
  task.set_proof_root(msg.proof_root());
  task.set_proof_uri(msg.proof_uri());
  task.set_commit_height(ctx.block.height);
  ctx.Emit("proof_committed", {{"task", ToHex(task.id())}, {"proof_root", ToHex(msg.proof_root())}});
  POLNODE_RETURN_IF_ERROR(
      EnterStatus(ctx, task, proto::TASK_COMMITTED, ctx.params.beacon_delay(), proto::DUE_SEGMENT_BEACON));
  StoreTask(ctx.state, task);
  return Status::Ok();
}

Status OnClaimDeadline(ExecContext& ctx, proto::Task& task) {
  if (task.status() != proto::TASK_OPEN || task.deadline() != ctx.block.height) return Status::Ok();
  POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
  return CloseTask(ctx, task, proto::TASK_CANCELLED, proto::OUTCOME_UNCLAIMED);
}

Status OnForcedSeed(ExecContext& ctx, proto::Task& task) {
  if (task.status() != proto::TASK_CLAIMED || !task.forced_seed().empty()) return Status::Ok();
  task.set_forced_seed(ToBytes(ForcedSeed(ctx.block.randomness, task.id())));
  StoreTask(ctx.state, task);
  ctx.Emit("forced_seed_drawn", {{"task", ToHex(task.id())}, {"seed", ToHex(task.forced_seed())}});
  return Status::Ok();
}

Status OnCommitDeadline(ExecContext& ctx, proto::Task& task) {
  if (task.status() != proto::TASK_CLAIMED || task.deadline() != ctx.block.height) return Status::Ok();
  // To the jackpot, not the submitter: a submitter that claims its own task under a second key
  // must not get the abandoned lock back.
  POLNODE_RETURN_IF_ERROR(
      SlashToJackpot(ctx, task, proto::ROLE_SOLVER, task.solver(), task.solver_lock(), slash_reason::kNoCommit));
  POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
  return CloseTask(ctx, task, proto::TASK_CANCELLED, proto::OUTCOME_NO_COMMIT);
}

}  // namespace polnode::contracts
