// Typed access to the state records of contracts.proto. Every record is written with
// deterministic protobuf serialization by this file only; a stored value that does not parse is
// kCorruption (the store is damaged or was written by something else), never a transaction error.
// Records whose every field is zero are deleted instead of stored, so "absent" and "zero" have one
// representation and the state root does not depend on history.
#ifndef POLNODE_CONTRACTS_RECORDS_H_
#define POLNODE_CONTRACTS_RECORDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/dispute.pb.h"
#include "polnode/contracts/record_encoding.h"
#include "polnode/contracts/state_store.h"

namespace polnode::contracts {

/// Parses `bytes` into `message`; kCorruption naming `key` when they do not parse.
[[nodiscard]] Status DecodeRecord(std::string_view bytes, std::string_view key, google::protobuf::MessageLite& message);

/// A big-endian uint64 stored at `key`; 0 when absent, kCorruption when not 8 bytes.
Result<std::uint64_t> LoadU64(const StateStore& state, std::string_view key);
void StoreU64(StateStore& state, std::string_view key, std::uint64_t value);

/// The chain id fixed at genesis; kFailedPrecondition when there is no genesis yet.
Result<std::string> LoadChainId(const StateStore& state);

/// The params fixed at genesis; kFailedPrecondition when there is no genesis yet.
Result<proto::Params> LoadParams(const StateStore& state);

/// The account of `pubkey`; an all-zero account when absent.
Result<proto::Account> LoadAccount(const StateStore& state, std::string_view pubkey);
void StoreAccount(StateStore& state, std::string_view pubkey, const proto::Account& account);

/// The stake of `pubkey` in `role`; all-zero when absent.
Result<proto::StakeRecord> LoadStake(const StateStore& state, proto::Role role, std::string_view pubkey);
void StoreStake(StateStore& state, proto::Role role, std::string_view pubkey, const proto::StakeRecord& stake);

Result<proto::Jackpot> LoadJackpot(const StateStore& state);
void StoreJackpot(StateStore& state, const proto::Jackpot& jackpot);

Result<proto::VerifierSet> LoadVerifierSet(const StateStore& state);
void StoreVerifierSet(StateStore& state, const proto::VerifierSet& set);

/// The task `task_id`; kNotFound when there is none.
Result<proto::Task> LoadTask(const StateStore& state, std::string_view task_id);
void StoreTask(StateStore& state, const proto::Task& task);

/// The deadlines and draws due at the end of block `height`; empty when none.
Result<proto::DueList> LoadDueList(const StateStore& state, std::uint64_t height);
void StoreDueList(StateStore& state, std::uint64_t height, const proto::DueList& list);

/// The game `challenger` plays against the solver of task `task_id`; kNotFound when there is none.
Result<proto::DisputeGame> LoadGame(const StateStore& state, std::string_view task_id, std::string_view challenger);
void StoreGame(StateStore& state, const proto::DisputeGame& game);
/// Every key that may play a game of `task` (games are stored by challenger), each once: its
/// verifiers in slot order (a key drawn for several slots plays one game for all), then its
/// whistleblowers in arrival order.
std::vector<std::string> GameChallengers(const proto::Task& task);

/// The task that holds `spec_hash` (raw 32 bytes), or nullopt.
Result<std::optional<std::string>> LoadSpecOwner(const StateStore& state, std::string_view spec_hash);
void StoreSpecOwner(StateStore& state, std::string_view spec_hash, std::string_view task_id);

/// Checkpoint `checkpoint` of a task as published so far; all-empty when nothing is.
Result<proto::PublishedCheckpoint> LoadPublished(const StateStore& state, std::string_view task_id,
                                                 std::uint64_t checkpoint);
void StorePublished(StateStore& state, std::string_view task_id, std::uint64_t checkpoint,
                    const proto::PublishedCheckpoint& published);

/// A forced round's reveal as the ledger checked it; all-empty before the reveal, in a round that
/// was not forced, and after pruning.
Result<proto::RevealedCheckpoints> LoadRevealed(const StateStore& state, std::string_view task_id);
/// Stores `revealed`, or deletes the record when it is empty.
void StoreRevealed(StateStore& state, std::string_view task_id, const proto::RevealedCheckpoints& revealed);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_RECORDS_H_
