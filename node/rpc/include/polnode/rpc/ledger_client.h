// LedgerClient: a typed client of a ledger's HTTP API (ledger_api.h) for `polnode tx`, the role
// daemons, `polnode status` and `polnode devnet`. Records come back as the protobuf messages the
// contracts keep (the API's "record" fields), so callers read exactly what the ledger stored.
//
// Every call is one HTTP exchange with a deadline; kUnavailable means the ledger could not be
// reached (the daemons retry on it), other errors carry the ledger's own reason. The answers are
// decoded by ledger_json.h.
#ifndef POLNODE_RPC_LEDGER_CLIENT_H_
#define POLNODE_RPC_LEDGER_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/clock.h"
#include "polnode/base/status.h"
#include "polnode/consensus/keys.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/queries.h"
#include "polnode/solver/train_state.h"
#include "polnode/rpc/http_client.h"
#include "polnode/rpc/ledger_json.h"

namespace polnode::node {

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
  [[nodiscard]] Result<contracts::TaskPage> Tasks(std::uint64_t start, std::uint64_t limit) const;
  [[nodiscard]] Result<contracts::TaskGames> Games(std::string_view task_id) const;
  /// Checkpoint `checkpoint` of `task` as its solver published it on the ledger (contracts'
  /// publication.h), as a training state: every tensor assembled from its chunks and checked
  /// against its published hash. kNotFound when the checkpoint is not published,
  /// kFailedPrecondition while it is incomplete, kCorruption for answers that do not add up.
  [[nodiscard]] Result<solver::TrainState> PublishedState(const proto::Task& task, std::uint64_t checkpoint) const;
  /// The ledger's record of published checkpoint `checkpoint` of task `task_id`: its tensor
  /// headers, progress, state hash and the Merkle proof the ledger checked. kNotFound when no
  /// header was published.
  [[nodiscard]] Result<proto::PublishedCheckpoint> Published(std::string_view task_id, std::uint64_t checkpoint) const;
  /// The checkpoints a forced round's reveal showed, as the ledger checked them, with their
  /// Merkle proofs against the committed and result roots. kNotFound before the reveal, in a
  /// round that was not forced, and once the task is pruned.
  [[nodiscard]] Result<proto::RevealedCheckpoints> Revealed(std::string_view task_id) const;
  /// Balance and nonce; a never-seen account is all zeros.
  [[nodiscard]] Result<proto::Account> Account(std::string_view pubkey) const;
  [[nodiscard]] Result<proto::StakeRecord> Stake(std::string_view pubkey, proto::Role role) const;
  /// GET /v1/verifiers: the verifier set and each member's verifier stake.
  [[nodiscard]] Result<std::vector<contracts::VerifierStake>> Verifiers() const;

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
  /// is kFailedPrecondition too; kUnavailable once `timeout` has passed on `clock`, which also
  /// times the pause between polls.
  [[nodiscard]] Result<std::uint64_t> WaitCommitted(std::string_view id_hex, std::chrono::milliseconds timeout,
                                                    Clock& clock = SystemClock()) const;

  /// GET `target` and the body of a 200 answer; the error otherwise.
  [[nodiscard]] Result<std::string> GetJson(std::string_view target) const;

 private:
  HttpEndpoint endpoint_;
  std::chrono::milliseconds timeout_;
};

/// 32 raw bytes from 64 hex characters; kInvalidArgument naming `what` otherwise.
[[nodiscard]] Result<std::string> RawFromHex(std::string_view hex, std::string_view what);

}  // namespace polnode::node

#endif  // POLNODE_RPC_LEDGER_CLIENT_H_
