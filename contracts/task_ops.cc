#include "task_ops.h"

#include <string>

#include "accounts.h"
#include "checked_math.h"
#include "deadlines.h"
#include "keys.h"
#include "records.h"
#include "staking.h"

namespace polnode::contracts {
namespace {

void EmitSlash(ExecContext& ctx, const proto::Task& task, proto::Role role, std::string_view offender,
               std::string recipient, std::uint64_t amount, std::string_view reason) {
  ctx.Emit("slash", {{"task", ToHex(task.id())},
                     {"role", std::string(RoleName(role))},
                     {"offender", ToHex(offender)},
                     {"recipient", std::move(recipient)},
                     {"amount", std::to_string(amount)},
                     {"reason", std::string(reason)}});
}

}  // namespace

Status PayFromEscrow(ExecContext& ctx, proto::Task& task, std::string_view recipient, std::uint64_t amount,
                     std::string_view reason) {
  if (amount == 0) return Status::Ok();
  if (task.escrow() < amount) return Status::Internal("task escrow is short of a payout");
  task.set_escrow(task.escrow() - amount);
  POLNODE_RETURN_IF_ERROR(Credit(ctx.state, recipient, amount));
  ctx.Emit("payout", {{"task", ToHex(task.id())},
                      {"recipient", ToHex(recipient)},
                      {"amount", std::to_string(amount)},
                      {"reason", std::string(reason)}});
  return Status::Ok();
}

Status RefundEscrow(ExecContext& ctx, proto::Task& task) {
  return PayFromEscrow(ctx, task, task.submitter(), task.escrow(), "refund");
}

Status SlashTo(ExecContext& ctx, const proto::Task& task, proto::Role role, std::string_view offender,
               std::uint64_t amount, std::string_view recipient, std::string_view reason) {
  POLNODE_RETURN_IF_ERROR(SlashLocked(ctx.state, role, offender, amount));
  POLNODE_RETURN_IF_ERROR(Credit(ctx.state, recipient, amount));
  EmitSlash(ctx, task, role, offender, ToHex(recipient), amount, reason);
  return Status::Ok();
}

Status SlashToJackpot(ExecContext& ctx, const proto::Task& task, proto::Role role, std::string_view offender,
                      std::uint64_t amount, std::string_view reason) {
  POLNODE_RETURN_IF_ERROR(SlashLocked(ctx.state, role, offender, amount));
  POLNODE_RETURN_IF_ERROR(AddToJackpot(ctx.state, amount));
  EmitSlash(ctx, task, role, offender, "jackpot", amount, reason);
  return Status::Ok();
}

Status SlashSplit(ExecContext& ctx, const proto::Task& task, proto::Role role, std::string_view offender,
                  std::uint64_t amount, const std::vector<std::string>& recipients, std::string_view reason) {
  if (recipients.empty()) return SlashToJackpot(ctx, task, role, offender, amount, reason);
  POLNODE_RETURN_IF_ERROR(SlashLocked(ctx.state, role, offender, amount));
  const std::uint64_t share = amount / recipients.size();
  for (const std::string& recipient : recipients) {
    POLNODE_RETURN_IF_ERROR(Credit(ctx.state, recipient, share));
    EmitSlash(ctx, task, role, offender, ToHex(recipient), share, reason);
  }
  const std::uint64_t dust = amount - share * recipients.size();
  if (dust > 0) {
    POLNODE_RETURN_IF_ERROR(AddToJackpot(ctx.state, dust));
    EmitSlash(ctx, task, role, offender, "jackpot", dust, reason);
  }
  return Status::Ok();
}

Status EnterStatus(ExecContext& ctx, proto::Task& task, proto::TaskStatus status, std::uint64_t window,
                   proto::DueKind due) {
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t deadline, CheckedAdd(ctx.block.height, window, "deadline"));
  task.set_status(status);
  task.set_deadline(deadline);
  POLNODE_RETURN_IF_ERROR(ScheduleTaskDue(ctx.state, deadline, due, task.id()));
  ctx.Emit(
      "task_status",
      {{"task", ToHex(task.id())}, {"status", proto::TaskStatus_Name(status)}, {"deadline", std::to_string(deadline)}});
  return Status::Ok();
}

Status CloseTask(ExecContext& ctx, proto::Task& task, proto::TaskStatus status, proto::TaskOutcome outcome) {
  task.set_status(status);
  task.set_outcome(outcome);
  task.set_deadline(0);
  task.set_settle_height(ctx.block.height);
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t prune_at, CheckedAdd(ctx.block.height, ctx.params.audit_window(), "prune height"));
  POLNODE_RETURN_IF_ERROR(ScheduleTaskDue(ctx.state, prune_at, proto::DUE_PRUNE, task.id()));
  StoreTask(ctx.state, task);
  ctx.Emit("task_closed", {{"task", ToHex(task.id())},
                           {"status", proto::TaskStatus_Name(status)},
                           {"outcome", proto::TaskOutcome_Name(outcome)}});
  return Status::Ok();
}

Status OnPrune(ExecContext& ctx, proto::Task& task) {
  if (task.pruned() || task.settle_height() == 0) return Status::Ok();
  for (const std::string& challenger : GameChallengers(task)) {
    auto game = LoadGame(ctx.state, task.id(), challenger);
    if (!game.ok() && game.status().code() == StatusCode::kNotFound) continue;
    POLNODE_RETURN_IF_ERROR(game.status());
    for (proto::MoveRecord& move : *game->mutable_moves()) move.clear_payload();
    game->set_pruned(true);
    StoreGame(ctx.state, *game);
  }
  for (std::uint64_t checkpoint : task.published()) {
    POLNODE_ASSIGN_OR_RETURN(proto::PublishedCheckpoint published, LoadPublished(ctx.state, task.id(), checkpoint));
    for (int t = 0; t < published.tensors_size(); ++t) {
      for (std::uint32_t c = 0; c < published.chunks_received(t); ++c) {
        ctx.state.Delete(PublishChunkKey(task.id(), checkpoint, static_cast<std::uint32_t>(t), c));
      }
    }
    StorePublished(ctx.state, task.id(), checkpoint, proto::PublishedCheckpoint());
  }
  StoreRevealed(ctx.state, task.id(), proto::RevealedCheckpoints());
  task.set_pruned(true);
  StoreTask(ctx.state, task);
  ctx.Emit("task_pruned", {{"task", ToHex(task.id())}});
  return Status::Ok();
}

}  // namespace polnode::contracts
