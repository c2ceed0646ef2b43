// Read-only queries over the contracts' state: what the ledger's HTTP API, `polnode status` and
// auditors (`polnode dispute replay --home`) read. Results are typed records; the state machine
// never writes JSON or parses request paths (node/rpc does both).
#ifndef POLNODE_CONTRACTS_QUERIES_H_
#define POLNODE_CONTRACTS_QUERIES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/state_store.h"
#include "polnode/dispute.pb.h"

namespace polnode::contracts {

/// QueryTasks returns at most this many tasks per page.
inline constexpr std::uint64_t kMaxTasksPerPage = 100;

/// Where the chain stands.
struct ChainInfo {
  std::string chain_id;
  std::uint64_t height = 0;
  std::uint64_t task_count = 0;
};

/// An account's stake in each role that stakes.
struct AccountStakes {
  proto::StakeRecord solver;
  proto::StakeRecord verifier;
  proto::StakeRecord whistleblower;
};

/// A member of the verifier set and its verifier stake.
struct VerifierStake {
  std::string pubkey;  // raw 32 bytes
  proto::StakeRecord stake;
};

/// Tasks in submission order, from sequence number `start`.
struct TaskPage {
  std::uint64_t total = 0;  // tasks ever submitted
  std::uint64_t start = 0;
  std::vector<proto::Task> tasks;
};

/// A task, the params its games ran under, and its dispute games: those of rejecting verifiers in
/// slot order, then those of whistleblowers in challenge order.
struct TaskGames {
  proto::Task task;
  proto::Params params;
  std::vector<proto::DisputeGame> games;
};

/// The params fixed at genesis; kFailedPrecondition before genesis.
[[nodiscard]] Result<proto::Params> QueryParams(const StateStore& state);
/// Chain id, height and task count; kFailedPrecondition before genesis.
[[nodiscard]] Result<ChainInfo> QueryChainInfo(const StateStore& state);
/// The account of `pubkey` (32 raw bytes); an unknown account reads as zero.
[[nodiscard]] Result<proto::Account> QueryAccount(const StateStore& state, std::string_view pubkey);
/// The stakes of `pubkey` (32 raw bytes); roles it never staked in read as zero.
[[nodiscard]] Result<AccountStakes> QueryStakes(const StateStore& state, std::string_view pubkey);
/// The verifier set in its stored order, with each member's verifier stake.
[[nodiscard]] Result<std::vector<VerifierStake>> QueryVerifiers(const StateStore& state);
[[nodiscard]] Result<proto::Jackpot> QueryJackpot(const StateStore& state);
/// At most min(limit, kMaxTasksPerPage) tasks from sequence number `start` (none past the end).
[[nodiscard]] Result<TaskPage> QueryTasks(const StateStore& state, std::uint64_t start, std::uint64_t limit);
/// The task `task_id` (32 raw bytes); kNotFound when there is none.
[[nodiscard]] Result<proto::Task> QueryTask(const StateStore& state, std::string_view task_id);
/// The task `task_id` (32 raw bytes) with its games; kNotFound when there is no such task.
[[nodiscard]] Result<TaskGames> QueryGames(const StateStore& state, std::string_view task_id);
/// Checkpoint `checkpoint` of task `task_id` as its solver published it (contracts' publication.h):
/// the tensors' names, shapes and hashes and how far their chunks got. kNotFound when no header was
/// published.
[[nodiscard]] Result<proto::PublishedCheckpoint> QueryPublished(const StateStore& state, std::string_view task_id,
                                                                std::uint64_t checkpoint);
/// One stored chunk of a published tensor: IEEE-754 float32 little-endian bytes. kNotFound when it
/// was not stored.
[[nodiscard]] Result<std::string> QueryPublishedChunk(const StateStore& state, std::string_view task_id,
                                                      std::uint64_t checkpoint, std::uint32_t tensor,
                                                      std::uint32_t chunk);
/// The checkpoints a forced round's reveal showed, as the ledger checked them (proto::
/// RevealedCheckpoints), ascending: with the published checkpoints, what a challenger needs to open
/// a game over the result proof when the solver's server is down. kNotFound when the task has no
/// such record: no reveal yet, a round that was not forced, or a pruned task.
[[nodiscard]] Result<proto::RevealedCheckpoints> QueryRevealed(const StateStore& state, std::string_view task_id);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_QUERIES_H_
