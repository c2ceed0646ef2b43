// The JSON documents of the ledger's HTTP API (ledger_api.h), both ways: the ledger writes them from
// the contracts' typed query results (contracts/queries.h) and its clients (ledger_client.h) decode
// them. Keys, ids and hashes are lowercase hex, amounts JSON numbers, statuses their enum names;
// a "record" field holds the protobuf record in the contracts' own encoding
// (contracts/record_encoding.h), hex, so that a reader gets every field exactly.
#ifndef POLNODE_RPC_LEDGER_JSON_H_
#define POLNODE_RPC_LEDGER_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/queries.h"
#include "polnode/contracts/supply.h"
#include "polnode/dispute.pb.h"

namespace polnode::node {

// The answers' bodies, as the ledger writes them.

/// GET /v1/params: every param by name, and "record".
std::string ParamsJson(const proto::Params& params);
/// GET /v1/accounts/{pubkey}: "pubkey", "balance", "nonce". `pubkey` is 32 raw bytes.
std::string AccountJson(std::string_view pubkey, const proto::Account& account);
/// GET /v1/accounts/{pubkey}/stakes: "pubkey" and per role ("solver", "verifier",
/// "whistleblower") an object with bonded, locked, free and unbonding.
std::string StakesJson(std::string_view pubkey, const contracts::AccountStakes& stakes);
/// GET /v1/verifiers: "verifiers", each with its pubkey and its stake's fields.
std::string VerifiersJson(const std::vector<contracts::VerifierStake>& verifiers);
/// GET /v1/jackpot: "pool".
std::string JackpotJson(const proto::Jackpot& jackpot);
/// GET /v1/tasks/{id}: every field of the task (spec and verifier slots as nested objects), and
/// "record".
std::string TaskJson(const proto::Task& task);
/// GET /v1/tasks: "total", "start" and "tasks", each as TaskJson writes it.
std::string TaskPageJson(const contracts::TaskPage& page);
/// GET /v1/tasks/{id}/games: "task_id", "task_record", "params_record" and "games", each with its
/// parties, phase, round, deadline, moves, winner, ruling and "record".
std::string TaskGamesJson(const contracts::TaskGames& games);
/// GET /v1/supply: every holding, "total" and "balanced".
std::string SupplyJson(const contracts::SupplyReport& report);
/// GET /v1/tasks/{id}/published/{checkpoint}: the tensors' names, shapes and hashes, how many
/// chunks each has and whether it is complete, and "record".
std::string PublishedCheckpointJson(const proto::PublishedCheckpoint& published);
/// GET /v1/tasks/{id}/published/{checkpoint}/{tensor}/{chunk}: the chunk's bytes as hex "data".
std::string PublishedChunkJson(std::string_view bytes);
/// GET /v1/tasks/{id}/revealed: a forced round's revealed checkpoints, each with its committed and
/// result hashes and Merkle proofs in hex, and "record".
std::string RevealedCheckpointsJson(const proto::RevealedCheckpoints& revealed);

// Decoding of the answers, apart from the HTTP exchange so that it can be tested and fuzzed without
// a socket; the LedgerClient methods call these on the body of a 200 answer. Each accepts any bytes
// and never throws or aborts: a body that is not a JSON object, or whose field is missing, of the
// wrong type or not a valid record, is kCorruption whose message names the answer and the field
// ("field 'tasks[2].record' of the /v1/tasks answer is not hex"). Fields a decoder does not read
// are ignored.

/// What GET /v1/status says about the chain.
struct LedgerInfo {
  std::string chain_id;
  std::uint64_t height = 0;
};

/// Where a transaction is.
struct TxState {
  enum class Kind { kPending, kCommitted, kFailed, kUnknown };
  Kind kind = Kind::kUnknown;  // kUnknown: neither in a block nor in the mempool
  std::uint64_t height = 0;    // kCommitted and kFailed
  std::string error;           // kFailed: the ledger's reason
};

/// GET /v1/status: chain_id (string) and height.
[[nodiscard]] Result<LedgerInfo> DecodeLedgerInfo(std::string_view body);
/// GET /v1/params: the hex protobuf "record".
[[nodiscard]] Result<proto::Params> DecodeParams(std::string_view body);
/// GET /v1/tasks/{id}: the hex protobuf "record".
[[nodiscard]] Result<proto::Task> DecodeTask(std::string_view body);
/// GET /v1/tasks?start=&limit=: "total", the "record" of every object in the "tasks" array, "start".
[[nodiscard]] Result<contracts::TaskPage> DecodeTaskPage(std::string_view body);
/// GET /v1/tasks/{id}/games: "task_record", "params_record" and the "record" of every object in
/// the "games" array.
[[nodiscard]] Result<contracts::TaskGames> DecodeTaskGames(std::string_view body);
/// GET /v1/tasks/{id}/published/{checkpoint}: the hex "record" of the published header.
[[nodiscard]] Result<proto::PublishedCheckpoint> DecodePublishedCheckpoint(std::string_view body);
/// GET /v1/tasks/{id}/published/{checkpoint}/{tensor}/{chunk}: the hex "data" of one chunk.
[[nodiscard]] Result<std::vector<std::uint8_t>> DecodePublishedChunk(std::string_view body);
/// GET /v1/tasks/{id}/revealed: the hex "record" of the revealed checkpoints.
[[nodiscard]] Result<proto::RevealedCheckpoints> DecodeRevealedCheckpoints(std::string_view body);
/// GET /v1/accounts/{pubkey}: "balance" and "nonce" (the other fields of proto::Account stay unset).
[[nodiscard]] Result<proto::Account> DecodeAccount(std::string_view body);
/// GET /v1/accounts/{pubkey}/stakes: bonded, locked and unbonding of the object named after `role`
/// ("solver", "verifier", "whistleblower"); kInvalidArgument for another role.
[[nodiscard]] Result<proto::StakeRecord> DecodeStake(std::string_view body, proto::Role role);
/// GET /v1/verifiers: every member of the verifier set with its verifier stake.
[[nodiscard]] Result<std::vector<contracts::VerifierStake>> DecodeVerifiers(std::string_view body);
/// GET /v1/accounts/{pubkey}/pending: "next_nonce", nullopt when it is null (no pending txs).
[[nodiscard]] Result<std::optional<std::uint64_t>> DecodePendingNonce(std::string_view body);
/// POST /v1/tx: the "tx_id" string.
[[nodiscard]] Result<std::string> DecodeTxId(std::string_view body);
/// GET /v1/txs/{id} answered 200: "status" is "pending", or "committed" with its "height" and,
/// when "result" is "failed", the ledger's "error" (kFailed). kUnknown is never returned: that is
/// the 404 answer, which has no body to decode.
[[nodiscard]] Result<TxState> DecodeTxState(std::string_view body);
/// A non-200 answer to `what` ("GET /v1/status") as an error carrying the ledger's reason (the
/// "error" string of a JSON body, else the body itself): kNotFound for 404, kAlreadyExists for
/// 409, kUnavailable for 5xx, kFailedPrecondition otherwise. Never ok.
[[nodiscard]] Status DecodeRefusal(std::string_view what, int status, std::string_view body);

}  // namespace polnode::node

#endif  // POLNODE_RPC_LEDGER_JSON_H_
