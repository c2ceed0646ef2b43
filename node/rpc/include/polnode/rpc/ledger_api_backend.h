// LedgerBackend: what polnode's HTTP API (ledger_api.h) serves from, so one set of routes and one
// JSON writer answer for both kinds of node:
//   EmbeddedLedgerBackend  `polnode ledger`: the embedded single-producer Ledger (ledger.h)
//   AbciLedgerBackend      `polnode abci --http`: a validator's AbciApp (abci_app.h) for reads, and
//                          its local CometBFT node's RPC for transaction posts
// The roles talk to either through the same LedgerClient, unchanged.
#ifndef POLNODE_RPC_LEDGER_API_BACKEND_H_
#define POLNODE_RPC_LEDGER_API_BACKEND_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "polnode/base/status.h"
#include "polnode/consensus/block.h"
#include "polnode/consensus/chain_store.h"
#include "polnode/contracts/state_store.h"
#include "polnode/ledger/abci_app.h"
#include "polnode/ledger/ledger.h"
#include "polnode/rpc/http_client.h"

namespace polnode::node {

/// Reads return committed state only (whole blocks); SubmitTx may be called from many threads.
class LedgerBackend {
 public:
  virtual ~LedgerBackend() = default;

  virtual LedgerStatus GetStatus() const = 0;

  /// Admits one encoded TxEnvelope; its id, or why it was refused (the codes of ledger_api.h's
  /// error table: kInvalidArgument malformed, kAlreadyExists duplicate, kFailedPrecondition nonce
  /// or balance, kResourceExhausted too large, kUnavailable pool full or backend unreachable).
  [[nodiscard]] virtual Result<consensus::Hash256> SubmitTx(std::string_view encoded_envelope) = 0;

  /// The committed block at `height` (stored protobuf form); kNotFound past the tip.
  [[nodiscard]] virtual Result<std::string> GetEncodedBlock(std::uint64_t height) const = 0;

  /// Where a committed tx is and its outcome; kNotFound if in no committed block.
  [[nodiscard]] virtual Result<consensus::TxLocation> FindTx(const consensus::Hash256& id) const = 0;

  /// Whether the tx waits in this node's pool.
  virtual bool IsPending(const consensus::Hash256& id) const = 0;

  /// The nonce after `signer`'s pending txs; nullopt when it has none.
  virtual std::optional<std::uint64_t> NextPendingNonce(const std::array<std::uint8_t, 32>& signer) const = 0;

  /// `read` over the committed state, which no block changes while it runs.
  [[nodiscard]] virtual Result<std::string> ReadCommitted(
      const std::function<Result<std::string>(const contracts::StateStore&)>& read) const = 0;

  /// Counters for /metrics.
  virtual const LedgerCounters& counters() const = 0;
};

/// The embedded ledger, call for call. `ledger` must outlive the backend.
class EmbeddedLedgerBackend final : public LedgerBackend {
 public:
  explicit EmbeddedLedgerBackend(Ledger& ledger) : ledger_(ledger) {}

  LedgerStatus GetStatus() const override { return ledger_.GetStatus(); }
  [[nodiscard]] Result<consensus::Hash256> SubmitTx(std::string_view encoded_envelope) override {
    return ledger_.SubmitTx(encoded_envelope);
  }
  [[nodiscard]] Result<std::string> GetEncodedBlock(std::uint64_t height) const override {
    return ledger_.GetEncodedBlock(height);
  }
  [[nodiscard]] Result<consensus::TxLocation> FindTx(const consensus::Hash256& id) const override {
    return ledger_.FindTx(id);
  }
  bool IsPending(const consensus::Hash256& id) const override { return ledger_.IsPending(id); }
  std::optional<std::uint64_t> NextPendingNonce(const std::array<std::uint8_t, 32>& signer) const override {
    return ledger_.NextPendingNonce(signer);
  }
  [[nodiscard]] Result<std::string> ReadCommitted(
      const std::function<Result<std::string>(const contracts::StateStore&)>& read) const override {
    return ledger_.ReadCommitted(read);
  }
  const LedgerCounters& counters() const override { return ledger_.counters(); }

 private:
  Ledger& ledger_;
};

/// A validator: reads from `app` (its committed state), transaction posts forwarded to the local
/// CometBFT node's JSON-RPC `broadcast_tx_sync` at `comet_rpc` (real HTTP), whose CheckTx runs on
/// this same application's mempool connection: the answer is that CheckTx's result, and the tx
/// then gossips to the other validators. `app` must outlive the backend.
class AbciLedgerBackend final : public LedgerBackend {
 public:
  AbciLedgerBackend(AbciApp& app, HttpEndpoint comet_rpc, std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : app_(app), comet_rpc_(std::move(comet_rpc)), timeout_(timeout) {}

  LedgerStatus GetStatus() const override { return app_.GetStatus(); }
  /// kUnavailable when CometBFT's RPC cannot be reached or answers with a JSON-RPC error other
  /// than a duplicate (kAlreadyExists); CheckTx's own code and reason otherwise.
  [[nodiscard]] Result<consensus::Hash256> SubmitTx(std::string_view encoded_envelope) override;
  [[nodiscard]] Result<std::string> GetEncodedBlock(std::uint64_t height) const override {
    return app_.GetEncodedBlock(height);
  }
  [[nodiscard]] Result<consensus::TxLocation> FindTx(const consensus::Hash256& id) const override { return app_.FindTx(id); }
  bool IsPending(const consensus::Hash256& id) const override { return app_.IsPending(id); }
  std::optional<std::uint64_t> NextPendingNonce(const std::array<std::uint8_t, 32>& signer) const override {
    return app_.NextPendingNonce(signer);
  }
  [[nodiscard]] Result<std::string> ReadCommitted(
      const std::function<Result<std::string>(const contracts::StateStore&)>& read) const override {
    return app_.ReadCommitted(read);
  }
  const LedgerCounters& counters() const override { return app_.counters(); }

 private:
  AbciApp& app_;
  const HttpEndpoint comet_rpc_;
  const std::chrono::milliseconds timeout_;
};

/// The JSON-RPC 2.0 body of CometBFT's `broadcast_tx_sync` for `tx` (base64, as CometBFT's JSON
/// encodes bytes).
std::string BroadcastTxSyncRequest(std::string_view tx);

/// Reads CometBFT's answer to BroadcastTxSyncRequest: Ok for CheckTx code 0; polnode's StatusCode
/// for a non-zero code in the "polnode" codespace (AbciApp answers StatusCode values); kAlreadyExists
/// for CometBFT's "tx already exists in cache"; kUnavailable for any other JSON-RPC error (mempool
/// full, CometBFT not ready); kCorruption for an answer that is not JSON-RPC.
[[nodiscard]] Status ParseBroadcastTxSyncAnswer(std::string_view body);

}  // namespace polnode::node

#endif  // POLNODE_RPC_LEDGER_API_BACKEND_H_
