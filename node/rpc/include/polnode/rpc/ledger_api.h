// LedgerApi: the HTTP routes of `polnode ledger` and of `polnode abci --http`, as a pure function
// from request to response over a LedgerBackend (ledger_api_backend.h: the embedded Ledger, or a
// validator's ABCI application with posts forwarded to its CometBFT node); no sockets,
// http_server.h carries the bytes.
//
//   POST /v1/tx                 body: TxEnvelope protobuf bytes (Content-Type
//                               application/x-protobuf or application/octet-stream) or the signed
//                               JSON form of tx_json.h (application/json). 200 {"tx_id": hex}.
//   GET  /v1/status             chain id, height, tip hash, state root, mempool size, producer
//                               (zero on a validator: CometBFT's proposers are not polnode accounts)
//   GET  /v1/blocks/{height}    JSON, or the stored protobuf bytes with Accept: application/x-protobuf;
//                               {height} may be "latest"
//   GET  /v1/txs/{id}           {"status": "committed", height, index, "result": "ok"} or, for a tx
//                               whose payload failed (it still paid the fee), "result": "failed",
//                               "code": status code name, "error": the reason (no "result" for a tx
//                               stored before results were kept); or {"status": "pending"}
//   GET  /v1/accounts/{pubkey}  balance and nonce
//   GET  /v1/accounts/{pubkey}/stakes  per role: bonded, locked, free, unbonding
//   GET  /v1/accounts/{pubkey}/pending  {"next_nonce": N or null}: the nonce after the account's
//                               mempool txs (read it before the account's nonce; use the larger)
//   GET  /v1/tasks[?start=&limit=]  tasks in submission order, at most 100 per page
//   GET  /v1/tasks/{id}, /v1/tasks/{id}/games
//   GET  /v1/params, /v1/jackpot, /v1/supply, /v1/verifiers
// The state routes answer with contracts/queries.h's records, written by ledger_json.h.
//   GET  /metrics               Prometheus text format
//
// Errors are JSON {"error": "..."}: 400 malformed input or a bad signature, 404 unknown path or
// missing object, 405 wrong method (with Allow), 409 duplicate tx or nonce, 413 too large, 415
// unsupported Content-Type, 422 rejected by the state machine (nonce, balance, payload), 503
// mempool full, 500 storage failure.
#ifndef POLNODE_RPC_LEDGER_API_H_
#define POLNODE_RPC_LEDGER_API_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "polnode/ledger/ledger.h"
#include "polnode/rpc/http_types.h"
#include "polnode/rpc/ledger_api_backend.h"

namespace polnode::node {

class LedgerApi {
 public:
  /// Serves the embedded `ledger`, which must outlive the API.
  explicit LedgerApi(Ledger& ledger)
      : embedded_(std::make_unique<EmbeddedLedgerBackend>(ledger)), ledger_(*embedded_) {}

  /// Serves `backend`, which must outlive the API.
  explicit LedgerApi(LedgerBackend& backend) : ledger_(backend) {}

  /// Routes one request. Never throws; every outcome is a response.
  HttpResponse Handle(const HttpRequest& request);

  /// Counts a response sent with `status` (called by the server for every response, its own
  /// 400/408/413 ones included), for the http_requests_total metric.
  void CountResponse(int status);

  /// The /metrics body.
  std::string Metrics() const;

 private:
  HttpResponse PostTx(const HttpRequest& request);
  HttpResponse GetBlock(std::string_view height_text, const HttpRequest& request);
  HttpResponse GetTx(std::string_view id_hex);
  HttpResponse GetTasks(std::string_view query);
  // Answers with the JSON `query` renders from the committed state, or its error.
  HttpResponse Query(const std::function<Result<std::string>(const contracts::StateStore&)>& query);
  // As Query, for a route whose last segment names a key or task id (64 hex: 400 otherwise).
  HttpResponse QueryById(std::string_view id_hex,
                         const std::function<Result<std::string>(const contracts::StateStore&, const std::string&)>& query);

  std::unique_ptr<EmbeddedLedgerBackend> embedded_;  // set when constructed from a Ledger
  LedgerBackend& ledger_;
  std::array<std::atomic<std::uint64_t>, 600> responses_by_code_{};
};

/// The HTTP status for a Status returned by the ledger (the mapping in the file comment).
int HttpStatusFor(const Status& status);

}  // namespace polnode::node

#endif  // POLNODE_RPC_LEDGER_API_H_
