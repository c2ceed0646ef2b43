// The read-only queries of queries.h.
#include "polnode/contracts/queries.h"

#include <algorithm>

#include "keys.h"
#include "records.h"

namespace polnode::contracts {

Result<proto::Params> QueryParams(const StateStore& state) { return LoadParams(state); }

Result<ChainInfo> QueryChainInfo(const StateStore& state) {
  ChainInfo info;
  POLNODE_ASSIGN_OR_RETURN(info.chain_id, LoadChainId(state));
  POLNODE_ASSIGN_OR_RETURN(info.height, LoadU64(state, kHeightKey));
  POLNODE_ASSIGN_OR_RETURN(info.task_count, LoadU64(state, kTaskCountKey));
  return info;
}

Result<proto::Account> QueryAccount(const StateStore& state, std::string_view pubkey) {
  return LoadAccount(state, pubkey);
}

Result<AccountStakes> QueryStakes(const StateStore& state, std::string_view pubkey) {
  AccountStakes stakes;
  POLNODE_ASSIGN_OR_RETURN(stakes.solver, LoadStake(state, proto::ROLE_SOLVER, pubkey));
  POLNODE_ASSIGN_OR_RETURN(stakes.verifier, LoadStake(state, proto::ROLE_VERIFIER, pubkey));
  POLNODE_ASSIGN_OR_RETURN(stakes.whistleblower, LoadStake(state, proto::ROLE_WHISTLEBLOWER, pubkey));
  return stakes;
}

Result<std::vector<VerifierStake>> QueryVerifiers(const StateStore& state) {
  POLNODE_ASSIGN_OR_RETURN(proto::VerifierSet set, LoadVerifierSet(state));
  std::vector<VerifierStake> out;
  for (const std::string& pubkey : set.pubkeys()) {
    POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, LoadStake(state, proto::ROLE_VERIFIER, pubkey));
    out.push_back(VerifierStake{pubkey, std::move(stake)});
  }
  return out;
}

Result<proto::Jackpot> QueryJackpot(const StateStore& state) { return LoadJackpot(state); }

Result<TaskPage> QueryTasks(const StateStore& state, std::uint64_t start, std::uint64_t limit) {
  limit = std::min(limit, kMaxTasksPerPage);
  TaskPage page;
  page.start = start;
  POLNODE_ASSIGN_OR_RETURN(page.total, LoadU64(state, kTaskCountKey));
  for (std::uint64_t seq = start; seq < page.total && seq - start < limit; ++seq) {
    POLNODE_ASSIGN_OR_RETURN(auto id, state.Get(TaskSeqKey(seq)));
    if (!id.has_value()) return Status::Corruption("task sequence " + std::to_string(seq) + " has no task");
    POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(state, *id));
    page.tasks.push_back(std::move(task));
  }
  return page;
}

Result<proto::Task> QueryTask(const StateStore& state, std::string_view task_id) { return LoadTask(state, task_id); }

Result<TaskGames> QueryGames(const StateStore& state, std::string_view task_id) {
  TaskGames out;
  POLNODE_ASSIGN_OR_RETURN(out.task, LoadTask(state, task_id));
  POLNODE_ASSIGN_OR_RETURN(out.params, LoadParams(state));
  // Games are stored by challenger: rejecting verifiers in slot order, then whistleblowers.
  for (const std::string& challenger : GameChallengers(out.task)) {
    Result<proto::DisputeGame> game = LoadGame(state, task_id, challenger);
    if (!game.ok() && game.status().code() == StatusCode::kNotFound) continue;
    if (!game.ok()) return game.status();
    out.games.push_back(std::move(game).value());
  }
  return out;
}

Result<proto::PublishedCheckpoint> QueryPublished(const StateStore& state, std::string_view task_id,
                                                  std::uint64_t checkpoint) {
  POLNODE_ASSIGN_OR_RETURN(proto::PublishedCheckpoint published, LoadPublished(state, task_id, checkpoint));
  if (published.tensors_size() == 0) {
    return Status::NotFound("checkpoint " + std::to_string(checkpoint) + " is not published");
  }
  return published;
}

Result<proto::RevealedCheckpoints> QueryRevealed(const StateStore& state, std::string_view task_id) {
  POLNODE_ASSIGN_OR_RETURN(proto::RevealedCheckpoints revealed, LoadRevealed(state, task_id));
  if (revealed.leaves().empty()) return Status::NotFound("the task has no forced round's reveal on record");
  return revealed;
}

Result<std::string> QueryPublishedChunk(const StateStore& state, std::string_view task_id, std::uint64_t checkpoint,
                                        std::uint32_t tensor, std::uint32_t chunk) {
  POLNODE_ASSIGN_OR_RETURN(std::optional<std::string> bytes,
                           state.Get(PublishChunkKey(task_id, checkpoint, tensor, chunk)));
  if (!bytes) return Status::NotFound("no such published chunk");
  return std::move(*bytes);
}

}  // namespace polnode::contracts
