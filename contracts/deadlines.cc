#include "deadlines.h"

#include <string>

#include "dispute_game.h"
#include "keys.h"
#include "publication.h"
#include "records.h"
#include "settlement.h"
#include "staking.h"
#include "task_ops.h"
#include "tasks.h"
#include "verification.h"

namespace polnode::contracts {
namespace {

Status ProcessTaskEntry(ExecContext& ctx, const proto::DueEntry& entry) {
  auto loaded = LoadTask(ctx.state, entry.task_id());
  if (!loaded.ok()) {
    // Tasks are never deleted, so a due entry always names an existing task.
    if (loaded.status().code() == StatusCode::kNotFound) return Status::Corruption("a due entry names no task");
    return loaded.status();
  }
  proto::Task& task = loaded.value();
  switch (entry.kind()) {
    case proto::DUE_CLAIM_DEADLINE:
      return OnClaimDeadline(ctx, task);
    case proto::DUE_FORCED_SEED:
      return OnForcedSeed(ctx, task);
    case proto::DUE_COMMIT_DEADLINE:
      return OnCommitDeadline(ctx, task);
    case proto::DUE_SEGMENT_BEACON:
      return OnSegmentBeacon(ctx, task);
    case proto::DUE_VERDICT_DEADLINE:
      return OnVerdictDeadline(ctx, task);
    case proto::DUE_CHALLENGE_END:
      return OnChallengeEnd(ctx, task);
    case proto::DUE_REVEAL_DEADLINE:
      return OnRevealDeadline(ctx, task);
    case proto::DUE_GAME_DEADLINE:
      return OnGameDeadline(ctx, task);
    case proto::DUE_PUBLISH_DEADLINE:
      return OnPublishDeadline(ctx, task);
    case proto::DUE_PRUNE:
      return OnPrune(ctx, task);
    default:
      return Status::Corruption("a due entry has an unknown kind");
  }
}

}  // namespace

Status ScheduleDue(StateStore& state, std::uint64_t height, proto::DueEntry entry) {
  POLNODE_ASSIGN_OR_RETURN(proto::DueList list, LoadDueList(state, height));
  *list.add_entries() = std::move(entry);
  StoreDueList(state, height, list);
  return Status::Ok();
}

Status ScheduleTaskDue(StateStore& state, std::uint64_t height, proto::DueKind kind, std::string_view task_id) {
  proto::DueEntry entry;
  entry.set_kind(kind);
  entry.set_task_id(std::string(task_id));
  return ScheduleDue(state, height, std::move(entry));
}

Status ProcessDue(ExecContext& ctx) {
  POLNODE_ASSIGN_OR_RETURN(proto::DueList list, LoadDueList(ctx.state, ctx.block.height));
  for (const proto::DueEntry& entry : list.entries()) {
    if (entry.kind() == proto::DUE_UNBOND) {
      POLNODE_RETURN_IF_ERROR(ReleaseUnbonded(ctx, entry.account(), entry.role(), entry.amount()));
    } else {
      POLNODE_RETURN_IF_ERROR(ProcessTaskEntry(ctx, entry));
    }
  }
  ctx.state.Delete(DueKey(ctx.block.height));
  return Status::Ok();
}

}  // namespace polnode::contracts
