// polnode's HTTP API served from a validator's ABCI application (AbciLedgerBackend under LedgerApi),
// in process over a real RocksDB, driven by ABCI requests as CometBFT sends them: the reads the
// role daemons make see exactly the committed blocks, a block finalized but not committed stays
// invisible, and a post that cannot reach CometBFT is a 503. CometBFT's broadcast_tx_sync answers
// (the shapes v0.38 writes) map to the embedded ledger's statuses. tests/node/abci_e2e_test.cc runs
// the same API in front of a real CometBFT.
#include "polnode/rpc/ledger_api.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "polnode/consensus/hex.h"
#include "polnode/contracts/payloads.h"
#include "polnode/rpc/abci_genesis.h"
#include "polnode/rpc/genesis_json.h"
#include "polnode/rpc/ledger_api_backend.h"
#include "polnode/rpc/ledger_json.h"
#include "polnode/testing/ledger_fixtures.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using polnode::testing::KeyFromByte;

constexpr char kChain[] = "abci-http";
constexpr std::uint64_t kBalance = 1'000'000'000;

std::string Transfer(std::uint64_t nonce, std::uint64_t amount) {
  return polnode::testing::SignedTx(KeyFromByte(1), kChain, nonce, contracts::payload::kTransfer,
                                    polnode::testing::TransferTo(KeyFromByte(2), amount));
}

// A loopback port bound but never listened on, for as long as this object lives: a connection to it
// is refused, and no other process can take the port and answer in the meantime.
class RefusingPort {
 public:
  RefusingPort() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 &&
             ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
    port_ = ntohs(addr.sin_port);
  }
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  ~RefusingPort() {
    if (fd_ >= 0) ::close(fd_);
  }

  bool bound() const { return bound_; }
  std::uint16_t port() const { return port_; }

 private:
  int fd_;
  bool bound_ = false;
  std::uint16_t port_ = 0;
};

class AbciHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AbciAppOptions options;
    options.data_dir = dir_.File("data");
    options.sync_writes = false;
    auto app = AbciApp::Open(options, ParseAbciGenesisJson);
    ASSERT_TRUE(app.ok()) << app.status().ToString();
    app_ = std::move(app).value();
    ASSERT_TRUE(comet_.bound());
    backend_ = std::make_unique<AbciLedgerBackend>(*app_, HttpEndpoint{"127.0.0.1", comet_.port()},
                                                   std::chrono::milliseconds(2000));
    api_ = std::make_unique<LedgerApi>(*backend_);
  }

  abci::Response Send(const abci::Request& r) { return app_->Handle(r); }

  void InitChain() {
    abci::Request r;
    r.mutable_init_chain()->set_chain_id(kChain);
    // One validator's VRF key registered (the tests go no further than block 1, which needs none).
    BeaconKeys keys;
    keys.emplace(std::string(kValidatorAddressBytes, '\x07'), KeyFromByte(50).PublicKey());
    Result<std::string> app_state =
        AddBeaconKeys(FormatGenesisJson(polnode::testing::TestGenesis(kChain, KeyFromByte(1), kBalance)), keys);
    ASSERT_TRUE(app_state.ok()) << app_state.status().ToString();
    r.mutable_init_chain()->set_app_state_bytes(*app_state);
    r.mutable_init_chain()->mutable_time()->set_seconds(1'700'000'000);
    r.mutable_init_chain()->mutable_consensus_params()->mutable_abci()->set_vote_extensions_enable_height(1);
    ASSERT_TRUE(Send(r).has_init_chain());
  }

  void CheckTx(const std::string& tx) {
    abci::Request r;
    r.mutable_check_tx()->set_tx(tx);
    ASSERT_EQ(Send(r).check_tx().code(), 0u);
  }

  void Finalize(std::int64_t height, const std::vector<std::string>& txs) {
    abci::Request r;
    for (const std::string& tx : txs) r.mutable_finalize_block()->add_txs(tx);
    r.mutable_finalize_block()->set_height(height);
    r.mutable_finalize_block()->set_hash(std::string(32, static_cast<char>(height)));
    r.mutable_finalize_block()->mutable_time()->set_seconds(1'700'000'000 + height);
    r.mutable_finalize_block()->set_proposer_address(std::string(20, '\x07'));
    ASSERT_TRUE(Send(r).has_finalize_block());
  }

  void Commit() {
    abci::Request r;
    r.mutable_commit();
    ASSERT_TRUE(Send(r).has_commit());
  }

  HttpResponse Get(const std::string& target) { return api_->Handle(HttpRequest{"GET", target, "", "", ""}); }

  polnode::testing::TempDir dir_{"abci-http"};
  // Where the backend looks for CometBFT: nothing answers there for the whole test.
  RefusingPort comet_;
  std::unique_ptr<AbciApp> app_;
  std::unique_ptr<AbciLedgerBackend> backend_;
  std::unique_ptr<LedgerApi> api_;
};

TEST_F(AbciHttpTest, BeforeInitChainStateReadsAreRefusedNotCrashed) {
  const HttpResponse status = Get("/v1/status");
  EXPECT_EQ(status.status, 200) << status.body;
  EXPECT_NE(status.body.find("\"height\":0"), std::string::npos) << status.body;
  EXPECT_EQ(Get("/v1/params").status, 422);
  EXPECT_EQ(Get("/v1/blocks/0").status, 404);
  EXPECT_EQ(Get("/v1/accounts/" + consensus::ToHex(KeyFromByte(1).PublicKey().bytes()) + "/pending").body,
            "{\"next_nonce\":null}");
}

TEST_F(AbciHttpTest, ServesCommittedBlocksOnlyAsTheRolesReadThem) {
  InitChain();
  const std::string tx0 = Transfer(0, 500);
  const std::string tx1 = Transfer(1, 700);
  CheckTx(tx0);
  CheckTx(tx1);
  const std::string sender = consensus::ToHex(KeyFromByte(1).PublicKey().bytes());
  const std::string recipient = consensus::ToHex(KeyFromByte(2).PublicKey().bytes());
  const std::string id0 = consensus::ToHex(consensus::TxId(tx0));

  // Both wait in this node's pool: pending, with the sender's next nonce after them.
  EXPECT_NE(Get("/v1/txs/" + id0).body.find("\"status\":\"pending\""), std::string::npos);
  EXPECT_EQ(Get("/v1/accounts/" + sender + "/pending").body, "{\"next_nonce\":2}");

  // Block 1 finalized with tx0 only: not committed, so nothing of it shows.
  Finalize(1, {tx0});
  EXPECT_NE(Get("/v1/status").body.find("\"height\":0"), std::string::npos);
  EXPECT_EQ(Get("/v1/blocks/1").status, 404);
  EXPECT_NE(Get("/v1/accounts/" + recipient).body.find("\"balance\":0"), std::string::npos);

  Commit();
  const HttpResponse status = Get("/v1/status");
  EXPECT_NE(status.body.find("\"chain_id\":\"abci-http\""), std::string::npos) << status.body;
  EXPECT_NE(status.body.find("\"height\":1"), std::string::npos) << status.body;
  EXPECT_NE(status.body.find("\"state_root\":\"" + consensus::ToHex(app_->state_root()) + "\""), std::string::npos)
      << status.body;
  EXPECT_NE(status.body.find("\"mempool_size\":1"), std::string::npos) << status.body;
  const HttpResponse tx = Get("/v1/txs/" + id0);
  EXPECT_NE(tx.body.find("\"status\":\"committed\",\"height\":1,\"index\":0,\"result\":\"ok\""), std::string::npos)
      << tx.body;
  EXPECT_NE(Get("/v1/accounts/" + recipient).body.find("\"balance\":500"), std::string::npos);
  EXPECT_NE(Get("/v1/blocks/latest").body.find("\"height\":1"), std::string::npos);
  EXPECT_NE(Get("/v1/tasks").body.find("\"tasks\":[]"), std::string::npos) << Get("/v1/tasks").body;

  // The roles' own decoders read these answers: the client's view is the app's.
  const HttpResponse params = Get("/v1/params");
  ASSERT_EQ(params.status, 200) << params.body;
  EXPECT_TRUE(DecodeParams(params.body).ok());
  Result<LedgerInfo> info = DecodeLedgerInfo(status.body);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->height, 1u);

  // Metrics count what CheckTx admitted and what the committed block held.
  const std::string metrics = Get("/metrics").body;
  EXPECT_NE(metrics.find("polnode_block_height 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("polnode_txs_accepted_total 2\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("polnode_txs_committed_total 1\n"), std::string::npos) << metrics;
}

TEST_F(AbciHttpTest, APostThatCannotReachCometbftIsUnavailable) {
  InitChain();
  const HttpResponse r = api_->Handle(HttpRequest{"POST", "/v1/tx", "application/x-protobuf", "", Transfer(0, 5)});
  EXPECT_EQ(r.status, 503) << r.body;
  // Nothing reached the pool: a forwarded tx enters it only through CometBFT's CheckTx.
  EXPECT_FALSE(app_->IsPending(consensus::TxId(Transfer(0, 5))));
}

TEST(BroadcastTxSyncTest, RequestCarriesTheTxAsBase64) {
  EXPECT_EQ(BroadcastTxSyncRequest(std::string("\x00\xff\x10\x41", 4)),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"broadcast_tx_sync\",\"params\":{\"tx\":\"AP8QQQ==\"}}");
  EXPECT_NE(BroadcastTxSyncRequest("abc").find("\"tx\":\"YWJj\""), std::string::npos);
  EXPECT_NE(BroadcastTxSyncRequest("ab").find("\"tx\":\"YWI=\""), std::string::npos);
}

TEST(BroadcastTxSyncTest, AnswersMapToTheEmbeddedLedgersStatuses) {
  EXPECT_TRUE(ParseBroadcastTxSyncAnswer(
                  R"({"jsonrpc":"2.0","id":1,"result":{"code":0,"data":"","log":"","codespace":"","hash":"AB"}})")
                  .ok());
  const Status nonce = ParseBroadcastTxSyncAnswer(
      R"({"jsonrpc":"2.0","id":1,"result":{"code":7,"data":"","log":"failed precondition: nonce 9 is outside the window","codespace":"polnode","hash":"AB"}})");
  EXPECT_EQ(nonce.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(nonce.message(), "nonce 9 is outside the window");
  const Status duplicate = ParseBroadcastTxSyncAnswer(
      R"({"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":"tx already exists in cache"}})");
  EXPECT_EQ(duplicate.code(), StatusCode::kAlreadyExists);
  const Status full = ParseBroadcastTxSyncAnswer(
      R"({"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":"mempool is full"}})");
  EXPECT_EQ(full.code(), StatusCode::kUnavailable);
  EXPECT_EQ(ParseBroadcastTxSyncAnswer(R"({"jsonrpc":"2.0","id":1,"result":{"code":3,"codespace":"sdk","log":"x"}})").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseBroadcastTxSyncAnswer("<html>").code(), StatusCode::kCorruption);
  EXPECT_EQ(ParseBroadcastTxSyncAnswer(R"({"jsonrpc":"2.0","id":1})").code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace polnode::node
