// Target ledger_http: raw bytes as one HTTP request to the ledger's router (HandleRawRequest ->
// LedgerApi::Handle) over a real Ledger in a temporary RocksDB directory; no sockets.
// Properties: never crashes or throws; every answer has a valid status; every error is a JSON
// {"error": ...} body; a 5xx only ever means storage trouble, never bad input.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fuzz.h"
#include "http_properties.h"
#include "http_server.h"
#include "ledger_api.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/genesis.h"
#include "polnode/contracts/payloads.h"

namespace polnode::fuzz {
namespace {

consensus::SecretKey FixedKey(std::uint8_t b) {
  std::array<std::uint8_t, 32> bytes{};
  bytes.fill(b);
  return *consensus::SecretKey::FromBytes(bytes);
}

constexpr char kChain[] = "polnode-fuzz";

struct Fixture {
  std::string dir;
  std::unique_ptr<node::Ledger> ledger;
  std::unique_ptr<node::LedgerApi> api;
  node::HttpLimits limits;
};

std::string g_dir_to_remove;

Fixture& Shared() {
  static Fixture* fixture = [] {
    auto* f = new Fixture();
    std::string tmpl = (std::filesystem::temp_directory_path() / "polnode-fuzz-http-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    f->dir = tmpl;
    g_dir_to_remove = tmpl;
    std::atexit([] { std::filesystem::remove_all(g_dir_to_remove); });
    node::GenesisFile genesis;
    genesis.spec.set_chain_id(kChain);
    *genesis.spec.mutable_params() = contracts::DefaultParams();
    proto::Allocation* a = genesis.spec.add_allocations();
    a->set_pubkey(FixedKey(1).PublicKey().bytes().data(), 32);
    a->set_amount(1000000);
    node::LedgerOptions options;
    options.data_dir = f->dir + "/data";
    options.sync_writes = false;
    auto ledger = node::Ledger::Open(options, genesis, FixedKey(9));
    if (!ledger.ok()) std::abort();
    f->ledger = std::move(ledger).value();
    f->api = std::make_unique<node::LedgerApi>(*f->ledger);
    f->limits.max_body_bytes = 64 * 1024;
    return f;
  }();
  return *fixture;
}

void Run(FuzzInput input) {
  Fixture& f = Shared();
  const std::string_view raw(reinterpret_cast<const char*>(input.data()), input.size());
  node::HttpResponse r = node::HandleRawRequest(raw, f.limits, [&](const node::HttpRequest& req) { return f.api->Handle(req); });
  CheckAnswer(r);
}

std::string SignedTransferWire() {
  proto::TransferTx payload;
  payload.set_to(FixedKey(2).PublicKey().bytes().data(), 32);
  payload.set_amount(5);
  consensus::TxEnvelope e;
  e.chain_id = kChain;
  e.nonce = 0;
  e.payload_type = std::string(contracts::payload::kTransfer);
  e.payload = payload.SerializeAsString();
  const std::array<std::uint8_t, 32> aux{};
  return *consensus::EncodeEnvelope(*consensus::SignEnvelope(FixedKey(1), e, aux));
}

std::vector<Seed> Seeds() {
  const std::string tx = SignedTransferWire();
  const std::string account = consensus::ToHex(FixedKey(1).PublicKey().bytes());
  return {
      {"get-status", Bytes("GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")},
      {"get-block", Bytes("GET /v1/blocks/0 HTTP/1.1\r\nHost: x\r\nAccept: application/x-protobuf\r\n\r\n")},
      {"get-account", Bytes("GET /v1/accounts/" + account + " HTTP/1.1\r\nHost: x\r\n\r\n")},
      {"get-tasks", Bytes("GET /v1/tasks?start=0&limit=3 HTTP/1.1\r\nHost: x\r\n\r\n")},
      {"get-task", Bytes("GET /v1/tasks/" + std::string(64, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n")},
      {"get-tx", Bytes("GET /v1/txs/" + std::string(64, '0') + " HTTP/1.1\r\nHost: x\r\n\r\n")},
      {"metrics", Bytes("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")},
      {"post-tx-protobuf", Bytes("POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: " +
                                 std::to_string(tx.size()) + "\r\n\r\n" + tx)},
      {"post-tx-json", Bytes("POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n"
                             "{\"chain_id\":1}")},
      {"post-chunked", Bytes("POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "3\r\n{}x\r\n0\r\n\r\n")},
      {"wrong-method", Bytes("DELETE /v1/tx HTTP/1.1\r\nHost: x\r\n\r\n")},
      {"garbage", Bytes("\x16\x03\x01 not http at all")},
  };
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(ledger_http, Run, Seeds);

}  // namespace polnode::fuzz
