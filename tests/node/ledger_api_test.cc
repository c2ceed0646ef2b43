// LedgerApi routing over a real Ledger (RocksDB in a temp dir), without sockets: every route, the
// error statuses and their JSON reasons, and the metrics text.
#include "polnode/rpc/ledger_api.h"

#include <gtest/gtest.h>

#include "polnode/consensus/hex.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/genesis.h"
#include "polnode/contracts/payloads.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/ledger_api_backend.h"
#include "polnode/rpc/tx_json.h"
#include "polnode/testing/ledger_fixtures.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using consensus::SecretKey;
using polnode::testing::KeyFromByte;

constexpr char kChain[] = "api-test";

// From key 1 to key 2.
consensus::TxEnvelope SignedTransfer(std::uint64_t nonce, std::uint64_t amount) {
  return polnode::testing::SignedEnvelope(KeyFromByte(1), kChain, nonce, contracts::payload::kTransfer,
                                          polnode::testing::TransferTo(KeyFromByte(2), amount));
}

class LedgerApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const GenesisFile g = polnode::testing::TestGenesis(kChain, KeyFromByte(1), 100000);
    auto ledger = polnode::testing::OpenTestLedger(dir_.File("data"), g);
    ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
    ledger_ = std::move(ledger).value();
    api_ = std::make_unique<LedgerApi>(*ledger_);
  }

  HttpResponse Call(std::string method, std::string target, std::string body = "", std::string type = "",
                    std::string accept = "") {
    HttpResponse r = api_->Handle(HttpRequest{std::move(method), std::move(target), std::move(type), std::move(accept), std::move(body)});
    api_->CountResponse(r.status);
    return r;
  }

  void ExpectError(const HttpResponse& r, int status, std::string_view text) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.body.rfind("{\"error\":", 0), 0u) << r.body;
    EXPECT_NE(r.body.find(text), std::string::npos) << r.body;
  }

  polnode::testing::TempDir dir_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<LedgerApi> api_;
};

TEST_F(LedgerApiTest, PostProtobufTxThenSeeItPendingThenCommitted) {
  std::string bytes = *consensus::EncodeEnvelope(SignedTransfer(0, 50));
  HttpResponse r = Call("POST", "/v1/tx", bytes, "application/x-protobuf");
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string id = consensus::ToHex(consensus::TxId(bytes));
  EXPECT_NE(r.body.find(id), std::string::npos);
  EXPECT_NE(Call("GET", "/v1/txs/" + id).body.find("\"pending\""), std::string::npos);
  ASSERT_TRUE(ledger_->ProduceBlock(1).ok());
  HttpResponse tx = Call("GET", "/v1/txs/" + id);
  EXPECT_NE(tx.body.find("\"committed\""), std::string::npos) << tx.body;
  EXPECT_NE(tx.body.find("\"height\":1"), std::string::npos) << tx.body;
  HttpResponse bob = Call("GET", "/v1/accounts/" + consensus::ToHex(KeyFromByte(2).PublicKey().bytes()));
  EXPECT_EQ(bob.status, 200);
  EXPECT_NE(bob.body.find("\"balance\":50"), std::string::npos) << bob.body;
}

// The embedded ledger, except that the first time GET /v1/txs/{id} looks the tx up (pending or
// committed, whichever it asks first), a block commits it right after that answer: the moment
// between the two lookups where a block lands.
class BlockBetweenLookups final : public LedgerBackend {
 public:
  explicit BlockBetweenLookups(Ledger& ledger) : inner_(ledger), ledger_(ledger) {}
  LedgerStatus GetStatus() const override { return inner_.GetStatus(); }
  Result<consensus::Hash256> SubmitTx(std::string_view encoded) override { return inner_.SubmitTx(encoded); }
  Result<std::string> GetEncodedBlock(std::uint64_t height) const override { return inner_.GetEncodedBlock(height); }
  Result<consensus::TxLocation> FindTx(const consensus::Hash256& id) const override {
    Result<consensus::TxLocation> found = inner_.FindTx(id);
    CommitOnce();
    return found;
  }
  bool IsPending(const consensus::Hash256& id) const override {
    const bool pending = inner_.IsPending(id);
    CommitOnce();
    return pending;
  }
  std::optional<std::uint64_t> NextPendingNonce(const std::array<std::uint8_t, 32>& signer) const override {
    return inner_.NextPendingNonce(signer);
  }
  Result<std::string> ReadCommitted(
      const std::function<Result<std::string>(const contracts::StateStore&)>& read) const override {
    return inner_.ReadCommitted(read);
  }
  const LedgerCounters& counters() const override { return inner_.counters(); }
  void Arm() { armed_ = true; }

 private:
  void CommitOnce() const {
    if (!armed_) return;
    armed_ = false;
    EXPECT_TRUE(ledger_.ProduceBlock(1).ok());
  }
  EmbeddedLedgerBackend inner_;
  Ledger& ledger_;
  mutable bool armed_ = false;
};

// A block that commits a pending tx while its status is being read must not make it look unknown:
// the tx is reported pending (the client asks again) or committed, never 404 (which made
// `polnode tx --wait` give up on a committed tx under load).
TEST_F(LedgerApiTest, ATxCommittedDuringItsLookupIsNeverUnknown) {
  BlockBetweenLookups backend(*ledger_);
  LedgerApi api(backend);
  const std::string bytes = *consensus::EncodeEnvelope(SignedTransfer(0, 50));
  ASSERT_EQ(api.Handle(HttpRequest{"POST", "/v1/tx", "application/x-protobuf", "", bytes}).status, 200);
  const std::string id = consensus::ToHex(consensus::TxId(bytes));
  backend.Arm();
  const HttpResponse during = api.Handle(HttpRequest{"GET", "/v1/txs/" + id, "", "", ""});
  EXPECT_EQ(during.status, 200) << during.body;
  EXPECT_TRUE(during.body.find("\"pending\"") != std::string::npos ||
              during.body.find("\"committed\"") != std::string::npos)
      << during.body;
  const HttpResponse after = api.Handle(HttpRequest{"GET", "/v1/txs/" + id, "", "", ""});
  EXPECT_NE(after.body.find("\"committed\""), std::string::npos) << after.body;
}

// A tx whose payload fails is still committed (it paid the fee and used its nonce); the result
// must say it did not take effect, and why.
TEST_F(LedgerApiTest, CommittedTxReportsWhetherItsPayloadSucceeded) {
  const std::string ok_bytes = *consensus::EncodeEnvelope(SignedTransfer(0, 50));
  const std::string failing_bytes = *consensus::EncodeEnvelope(SignedTransfer(1, 10'000'000));  // > balance
  ASSERT_EQ(Call("POST", "/v1/tx", ok_bytes, "application/x-protobuf").status, 200);
  HttpResponse posted = Call("POST", "/v1/tx", failing_bytes, "application/x-protobuf");
  ASSERT_EQ(posted.status, 200) << "admission checks the fee, not the payload: " << posted.body;
  auto block = ledger_->ProduceBlock(1);
  ASSERT_TRUE(block.ok()) << block.status().ToString();
  EXPECT_EQ(block->tx_count, 2u);
  EXPECT_EQ(block->failed_txs, 1u);

  HttpResponse ok = Call("GET", "/v1/txs/" + consensus::ToHex(consensus::TxId(ok_bytes)));
  EXPECT_EQ(ok.status, 200);
  EXPECT_NE(ok.body.find("\"status\":\"committed\""), std::string::npos) << ok.body;
  EXPECT_NE(ok.body.find("\"result\":\"ok\""), std::string::npos) << ok.body;
  EXPECT_EQ(ok.body.find("\"error\""), std::string::npos) << ok.body;

  HttpResponse failed = Call("GET", "/v1/txs/" + consensus::ToHex(consensus::TxId(failing_bytes)));
  EXPECT_EQ(failed.status, 200);
  EXPECT_NE(failed.body.find("\"status\":\"committed\""), std::string::npos) << failed.body;
  EXPECT_NE(failed.body.find("\"index\":1"), std::string::npos) << failed.body;
  EXPECT_NE(failed.body.find("\"result\":\"failed\""), std::string::npos) << failed.body;
  EXPECT_NE(failed.body.find("\"code\":\"" + std::string(StatusCodeName(StatusCode::kFailedPrecondition)) + "\""),
            std::string::npos) << failed.body;
  EXPECT_NE(failed.body.find("insufficient balance"), std::string::npos) << failed.body;
}

TEST_F(LedgerApiTest, PostJsonTx) {
  JsonWriter w;
  w.BeginObject();
  WriteTxFields(w, SignedTransfer(0, 5));
  w.EndObject();
  HttpResponse r = Call("POST", "/v1/tx", w.str(), "application/json; charset=utf-8");
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(LedgerApiTest, BadTransactionsGetClientErrorsWithReasons) {
  ExpectError(Call("POST", "/v1/tx", "{not json", "application/json"), 400, "not valid JSON");
  ExpectError(Call("POST", "/v1/tx", "\x01\x02garbage", "application/x-protobuf"), 400, "error");
  ExpectError(Call("POST", "/v1/tx", "x", "text/plain"), 415, "Content-Type");
  consensus::TxEnvelope bad = SignedTransfer(0, 5);
  bad.signature[1] ^= 1;
  ExpectError(Call("POST", "/v1/tx", *consensus::EncodeEnvelope(bad), "application/x-protobuf"), 400, "signature");
  std::string good = *consensus::EncodeEnvelope(SignedTransfer(0, 5));
  ASSERT_EQ(Call("POST", "/v1/tx", good, "application/x-protobuf").status, 200);
  ExpectError(Call("POST", "/v1/tx", good, "application/x-protobuf"), 409, "already pending");
  ExpectError(Call("POST", "/v1/tx", std::string(100000, 'x'), "application/x-protobuf"), 413, "exceeds");
  consensus::TxEnvelope wrong_chain = SignedTransfer(1, 5);
  wrong_chain.chain_id = "elsewhere";
  wrong_chain = *consensus::SignEnvelope(KeyFromByte(1), wrong_chain);
  ExpectError(Call("POST", "/v1/tx", *consensus::EncodeEnvelope(wrong_chain), "application/x-protobuf"), 400, "chain id");
}

TEST_F(LedgerApiTest, UnknownPathsAndWrongMethods) {
  ExpectError(Call("GET", "/nope"), 404, "no such endpoint");
  ExpectError(Call("GET", "/v1/nope"), 404, "no such endpoint");
  ExpectError(Call("GET", "/v1/blocks/1/extra"), 404, "no such endpoint");
  HttpResponse wrong = Call("GET", "/v1/tx");
  ExpectError(wrong, 405, "POST");
  EXPECT_EQ(wrong.allow, "POST");
  ExpectError(Call("DELETE", "/v1/status"), 405, "GET");
  ExpectError(Call("POST", "/metrics", "x", "text/plain"), 405, "GET");
  ExpectError(Call("GET", "relative"), 400, "absolute path");
}

TEST_F(LedgerApiTest, StatusBlocksAndQueries) {
  ASSERT_TRUE(ledger_->ProduceBlock(1).ok());
  HttpResponse status = Call("GET", "/v1/status");
  EXPECT_EQ(status.status, 200);
  EXPECT_NE(status.body.find("\"chain_id\":\"api-test\""), std::string::npos) << status.body;
  EXPECT_NE(status.body.find("\"height\":1"), std::string::npos);

  HttpResponse block = Call("GET", "/v1/blocks/1");
  EXPECT_EQ(block.status, 200);
  EXPECT_NE(block.body.find("\"prev_hash\""), std::string::npos);
  HttpResponse latest = Call("GET", "/v1/blocks/latest", "", "", "application/x-protobuf");
  EXPECT_EQ(latest.content_type, "application/x-protobuf");
  auto decoded = consensus::DecodeBlock(latest.body);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->header.height, 1u);
  ExpectError(Call("GET", "/v1/blocks/99"), 404, "no block");
  ExpectError(Call("GET", "/v1/blocks/-1"), 400, "non-negative");
  ExpectError(Call("GET", "/v1/txs/zz"), 400, "64 hex");
  ExpectError(Call("GET", "/v1/txs/" + std::string(64, '0')), 404, "neither pending nor committed");

  EXPECT_EQ(Call("GET", "/v1/tasks").status, 200);
  EXPECT_EQ(Call("GET", "/v1/tasks?start=0&limit=5").status, 200);
  ExpectError(Call("GET", "/v1/tasks/" + std::string(64, 'a')), 404, "");
  ExpectError(Call("GET", "/v1/tasks/xyz"), 400, "");
  ExpectError(Call("GET", "/v1/accounts/short"), 400, "");
  ExpectError(Call("GET", "/v1/accounts/" + std::string(64, 'g') + "/stakes"), 400, "non-hex");
  ExpectError(Call("GET", "/v1/tasks?limit=ten"), 400, "'limit' is not an unsigned integer");
  ExpectError(Call("GET", "/v1/tasks/" + std::string(64, 'a') + "/games"), 404, "");
  EXPECT_EQ(Call("GET", "/v1/params").status, 200);
  EXPECT_EQ(Call("GET", "/v1/jackpot").body, R"({"pool":0})");
  EXPECT_EQ(Call("GET", "/v1/verifiers").body, R"({"verifiers":[]})");
  EXPECT_EQ(Call("GET", "/v1/supply").status, 200);
  EXPECT_EQ(Call("GET", "/v1/accounts/" + consensus::ToHex(KeyFromByte(1).PublicKey().bytes()) + "/stakes").status, 200);
}

TEST_F(LedgerApiTest, MetricsReportHeightMempoolTxsAndResponseCodes) {
  ASSERT_EQ(Call("POST", "/v1/tx", *consensus::EncodeEnvelope(SignedTransfer(0, 5)), "application/x-protobuf").status, 200);
  Call("GET", "/nope");
  Call("POST", "/v1/tx", "junk", "application/x-protobuf");
  HttpResponse m = Call("GET", "/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.content_type.rfind("text/plain", 0), 0u);
  EXPECT_NE(m.body.find("polnode_block_height 0\n"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("polnode_mempool_size 1\n"), std::string::npos);
  EXPECT_NE(m.body.find("polnode_txs_accepted_total 1\n"), std::string::npos);
  EXPECT_NE(m.body.find("polnode_txs_rejected_total 1\n"), std::string::npos);
  EXPECT_NE(m.body.find("polnode_http_requests_total{code=\"404\"} 1\n"), std::string::npos);
  EXPECT_NE(m.body.find("# TYPE polnode_txs_accepted_total counter"), std::string::npos);
}

}  // namespace
}  // namespace polnode::node
