// LedgerClient: a typed client of a ledger's HTTP API (ledger_api.h) for `polnode tx`, the role
// daemons, `polnode status` and `polnode devnet`. Records come back as the protobuf messages the
// contracts keep (the API's "record" fields), so callers read exactly what the ledger stored.
//
// Every call is one HTTP exchange with a deadline; kUnavailable means the ledger could not be
// reached (the daemons retry on it), other errors carry the ledger's own reason.
#ifndef POLNODE_NODE_LEDGER_CLIENT_H_
#define POLNODE_NODE_LEDGER_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http_client.h"
#include "polnode/base/status.h"
#include "polnode/consensus/keys.h"
#include "polnode/contracts.pb.h"
#include "polnode/dispute.pb.h"

namespace polnode::node {

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

struct TaskPage {
  std::uint64_t total = 0;          // tasks ever submitted
  std::vector<proto::Task> tasks;   // in submission order from the requested start
};

struct GamesView {
  proto::Task task;
  proto::Params params;
  std::vector<proto::DisputeGame> games;  // in verifier-slot order
};

class LedgerClient {
 public:
  explicit LedgerClient(HttpEndpoint endpoint, std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : endpoint_(std::move(endpoint)), timeout_(timeout) {}
  /// "http://HOST:PORT" or "HOST:PORT"; kInvalidArgument otherwise.
  [[nodiscard]] static Result<LedgerClient> FromUrl(std::string_view url);

  const HttpEndpoint& endpoint() const { return endpoint_; }
  std::string url() const { return "http://" + endpoint_.host + ":" + std::to_string(endpoint_.port); }

  [[nodiscard]] Result<LedgerInfo> Info() const;
  [[nodiscard]] Result<proto::Params> Params() const;
  /// kNotFound for an unknown task.
  [[nodiscard]] Result<proto::Task> Task(std::string_view task_id) const;
  /// Up to `limit` (the API caps it at 100) tasks from submission number `start`.
  [[nodiscard]] Result<TaskPage> Tasks(std::uint64_t start, std::uint64_t limit) const;
  [[nodiscard]] Result<GamesView> Games(std::string_view task_id) const;
  /// Balance and nonce; a never-seen account is all zeros.
  [[nodiscard]] Result<proto::Account> Account(std::string_view pubkey) const;
  [[nodiscard]] Result<proto::StakeRecord> Stake(std::string_view pubkey, proto::Role role) const;

  /// The account's next nonce, counting its transactions still in the mempool.
  [[nodiscard]] Result<std::uint64_t> NextNonce(std::string_view pubkey) const;
  /// Posts an encoded TxEnvelope; returns the tx id in hex. A refusal (4xx) is kFailedPrecondition
  /// (kAlreadyExists for 409: a duplicate tx or nonce) with the ledger's reason.
  [[nodiscard]] Result<std::string> PostTx(std::string_view envelope_bytes) const;
  /// Signs `payload` of `payload_type` with `key` for the ledger's chain (or `chain_id`) at the
  /// account's next nonce (or `nonce`) and posts it; returns the tx id in hex and the nonce used.
  struct Sent {
    std::string id_hex;
    std::uint64_t nonce = 0;
    std::string envelope;  // the encoded signed envelope
  };
  [[nodiscard]] Result<Sent> Send(const consensus::SecretKey& key, std::string_view payload_type, std::string payload,
                                  std::optional<std::uint64_t> nonce = std::nullopt,
                                  std::optional<std::string> chain_id = std::nullopt) const;
  /// As Send, without posting: the signed envelope and its id (what the ledger will call it).
  [[nodiscard]] Result<Sent> Sign(const consensus::SecretKey& key, std::string_view payload_type, std::string payload,
                                  std::optional<std::uint64_t> nonce = std::nullopt,
                                  std::optional<std::string> chain_id = std::nullopt) const;
  [[nodiscard]] Result<TxState> Tx(std::string_view id_hex) const;
  /// Polls Tx until the transaction is in a block; returns its height. A committed tx whose payload
  /// failed is kFailedPrecondition with the ledger's reason; a tx that left the mempool unexecuted
  /// is kFailedPrecondition too; kUnavailable after `timeout`.
  [[nodiscard]] Result<std::uint64_t> WaitCommitted(std::string_view id_hex, std::chrono::milliseconds timeout) const;

  /// GET `target` and the body of a 200 answer; the error otherwise.
  [[nodiscard]] Result<std::string> GetJson(std::string_view target) const;

 private:
  HttpEndpoint endpoint_;
  std::chrono::milliseconds timeout_;
};

// Decoding of the ledger API's answers (ledger_api.h), apart from the HTTP exchange so that it can
// be tested and fuzzed without a socket; the LedgerClient methods above call these on the body of a
// 200 answer. Each accepts any bytes and never throws or aborts: a body that is not a JSON object,
// or whose field is missing, of the wrong type or not a valid record, is kCorruption whose message
// names the answer and the field ("field 'tasks[2].record' of the /v1/tasks answer is not hex").
// Fields the client does not read are ignored.

/// GET /v1/status: chain_id (string) and height.
[[nodiscard]] Result<LedgerInfo> DecodeLedgerInfo(std::string_view body);
/// GET /v1/params: the hex protobuf "record".
[[nodiscard]] Result<proto::Params> DecodeParams(std::string_view body);
/// GET /v1/tasks/{id}: the hex protobuf "record".
[[nodiscard]] Result<proto::Task> DecodeTask(std::string_view body);
/// GET /v1/tasks?start=&limit=: "total" and the "record" of every object in the "tasks" array.
[[nodiscard]] Result<TaskPage> DecodeTaskPage(std::string_view body);
/// GET /v1/tasks/{id}/games: "task_record", "params_record" and the "record" of every object in
/// the "games" array.
[[nodiscard]] Result<GamesView> DecodeGamesView(std::string_view body);
/// GET /v1/accounts/{pubkey}: "balance" and "nonce" (the other fields of proto::Account stay unset).
[[nodiscard]] Result<proto::Account> DecodeAccount(std::string_view body);
/// GET /v1/accounts/{pubkey}/stakes: bonded, locked and unbonding of the object named after `role`
/// ("solver", "verifier", "whistleblower"); kInvalidArgument for another role.
[[nodiscard]] Result<proto::StakeRecord> DecodeStake(std::string_view body, proto::Role role);
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

/// 32 raw bytes from 64 hex characters; kInvalidArgument naming `what` otherwise.
[[nodiscard]] Result<std::string> RawFromHex(std::string_view hex, std::string_view what);

}  // namespace polnode::node

#endif  // POLNODE_NODE_LEDGER_CLIENT_H_
