// LedgerClient's decoding of ledger answers (ledger_client.h Decode*), without sockets: the real
// answers of LedgerApi over a real Ledger decode to what the chain holds, and truncated, garbage
// and wrongly typed answers are kCorruption naming the answer and the field at fault.
#include <gtest/gtest.h>

#include <google/protobuf/util/message_differencer.h>

#include "polnode/consensus/hex.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/contracts/genesis.h"
#include "polnode/contracts/payloads.h"
#include "polnode/rpc/ledger_api.h"
#include "polnode/rpc/ledger_client.h"
#include "polnode/rpc/ledger_json.h"
#include "polnode/testing/ledger_fixtures.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using google::protobuf::util::MessageDifferencer;
using polnode::testing::KeyFromByte;
using polnode::testing::UnboundTaskSpec;

constexpr char kChain[] = "decode-test";
constexpr std::uint64_t kFunds = 1'000'000;
constexpr std::uint64_t kStake = 2'000;

// From key 1.
std::string Envelope(std::uint64_t nonce, std::string_view type, const google::protobuf::MessageLite& payload) {
  return polnode::testing::SignedTx(KeyFromByte(1), kChain, nonce, type, payload);
}

std::string Transfer(std::uint64_t nonce, std::uint64_t amount) {
  return Envelope(nonce, contracts::payload::kTransfer, polnode::testing::TransferTo(KeyFromByte(2), amount));
}

std::string Hex(const consensus::SecretKey& key) { return consensus::ToHex(key.PublicKey().bytes()); }

std::string TxPath(const std::string& tx) { return "/v1/txs/" + consensus::ToHex(consensus::TxId(tx)); }

// A ledger at height 1 whose block holds a solver stake, a task submission, a transfer and a
// failing transfer, with one more transfer pending.
class LedgerClientDecodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const GenesisFile g = polnode::testing::TestGenesis(kChain, KeyFromByte(1), kFunds);
    auto ledger = polnode::testing::OpenTestLedger(dir_.File("data"), g);
    ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
    ledger_ = std::move(ledger).value();
    api_ = std::make_unique<LedgerApi>(*ledger_);

    proto::StakeTx stake;
    stake.set_role(proto::ROLE_SOLVER);
    stake.set_amount(kStake);
    proto::SubmitTaskTx submit;
    *submit.mutable_spec() = UnboundTaskSpec();
    submit.set_spec_uri("http://127.0.0.1:7001/v1/specs/x");
    for (const std::string& tx : {Envelope(0, contracts::payload::kStake, stake),
                                  Envelope(1, contracts::payload::kSubmitTask, submit), ok_tx_, failing_tx_}) {
      HttpResponse r = Post(tx);
      ASSERT_EQ(r.status, 200) << r.body;
    }
    ASSERT_TRUE(ledger_->ProduceBlock(1700000001000).ok());
    posted_ = Post(pending_tx_);
    ASSERT_EQ(posted_.status, 200) << posted_.body;
  }

  HttpResponse Post(const std::string& tx) {
    return api_->Handle(HttpRequest{"POST", "/v1/tx", "application/x-protobuf", "", tx});
  }

  std::string Get(const std::string& target) {
    HttpResponse r = api_->Handle(HttpRequest{"GET", target, "", "", ""});
    EXPECT_EQ(r.status, 200) << target << ": " << r.body;
    return r.body;
  }

  polnode::testing::TempDir dir_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<LedgerApi> api_;
  const std::string ok_tx_ = Transfer(2, 5);
  const std::string failing_tx_ = Transfer(3, kFunds * 10);  // over the balance: committed, failed
  const std::string pending_tx_ = Transfer(4, 1);
  HttpResponse posted_;
};

// The status's message names `field` and says `what` about it.
void ExpectCorruptionNaming(const Status& s, std::string_view field, std::string_view what) {
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find("field '" + std::string(field) + "'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
}

TEST_F(LedgerClientDecodeTest, RealAnswersDecodeToWhatTheChainHolds) {
  Result<LedgerInfo> info = DecodeLedgerInfo(Get("/v1/status"));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->chain_id, kChain);
  EXPECT_EQ(info->height, 1u);

  Result<proto::Params> params = DecodeParams(Get("/v1/params"));
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  EXPECT_TRUE(MessageDifferencer::Equals(*params, contracts::DefaultParams()));

  Result<contracts::TaskPage> page = DecodeTaskPage(Get("/v1/tasks?start=0&limit=10"));
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->total, 1u);
  ASSERT_EQ(page->tasks.size(), 1u);
  EXPECT_TRUE(MessageDifferencer::Equals(page->tasks[0].spec(), UnboundTaskSpec()));
  const std::string task_hex = consensus::ToHex(page->tasks[0].id());
  Result<proto::Task> task = DecodeTask(Get("/v1/tasks/" + task_hex));
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_TRUE(MessageDifferencer::Equals(*task, page->tasks[0]));
  Result<contracts::TaskPage> past_end = DecodeTaskPage(Get("/v1/tasks?start=5"));
  ASSERT_TRUE(past_end.ok()) << past_end.status().ToString();
  EXPECT_EQ(past_end->total, 1u);
  EXPECT_TRUE(past_end->tasks.empty());

  Result<contracts::TaskGames> games = DecodeTaskGames(Get("/v1/tasks/" + task_hex + "/games"));
  ASSERT_TRUE(games.ok()) << games.status().ToString();
  EXPECT_TRUE(MessageDifferencer::Equals(games->task, *task));
  EXPECT_TRUE(MessageDifferencer::Equals(games->params, contracts::DefaultParams()));
  EXPECT_TRUE(games->games.empty());

  Result<proto::Account> account = DecodeAccount(Get("/v1/accounts/" + Hex(KeyFromByte(2))));
  ASSERT_TRUE(account.ok()) << account.status().ToString();
  EXPECT_EQ(account->balance(), 5u);
  EXPECT_EQ(account->nonce(), 0u);

  const std::string stakes = Get("/v1/accounts/" + Hex(KeyFromByte(1)) + "/stakes");
  Result<proto::StakeRecord> solver = DecodeStake(stakes, proto::ROLE_SOLVER);
  ASSERT_TRUE(solver.ok()) << solver.status().ToString();
  EXPECT_EQ(solver->bonded(), kStake);
  Result<proto::StakeRecord> verifier = DecodeStake(stakes, proto::ROLE_VERIFIER);
  ASSERT_TRUE(verifier.ok()) << verifier.status().ToString();
  EXPECT_EQ(verifier->bonded(), 0u);

  Result<std::optional<std::uint64_t>> pending =
      DecodePendingNonce(Get("/v1/accounts/" + Hex(KeyFromByte(1)) + "/pending"));
  ASSERT_TRUE(pending.ok()) << pending.status().ToString();
  EXPECT_EQ(*pending, std::optional<std::uint64_t>(5));
  Result<std::optional<std::uint64_t>> none =
      DecodePendingNonce(Get("/v1/accounts/" + Hex(KeyFromByte(3)) + "/pending"));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, std::nullopt);

  Result<std::string> id = DecodeTxId(posted_.body);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, consensus::ToHex(consensus::TxId(pending_tx_)));
}

TEST_F(LedgerClientDecodeTest, TxStatesDecodeCommittedFailedAndPending) {
  Result<TxState> ok = DecodeTxState(Get(TxPath(ok_tx_)));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->kind, TxState::Kind::kCommitted);
  EXPECT_EQ(ok->height, 1u);
  Result<TxState> failed = DecodeTxState(Get(TxPath(failing_tx_)));
  ASSERT_TRUE(failed.ok()) << failed.status().ToString();
  EXPECT_EQ(failed->kind, TxState::Kind::kFailed);
  EXPECT_EQ(failed->height, 1u);
  EXPECT_FALSE(failed->error.empty());
  Result<TxState> pending = DecodeTxState(Get(TxPath(pending_tx_)));
  ASSERT_TRUE(pending.ok()) << pending.status().ToString();
  EXPECT_EQ(pending->kind, TxState::Kind::kPending);
}

TEST_F(LedgerClientDecodeTest, GameRecordsInTheGamesArrayDecode) {
  Result<contracts::TaskPage> page = DecodeTaskPage(Get("/v1/tasks"));
  ASSERT_TRUE(page.ok() && page->tasks.size() == 1) << page.status().ToString();
  std::string body = Get("/v1/tasks/" + consensus::ToHex(page->tasks[0].id()) + "/games");
  proto::DisputeGame game;
  game.set_task_id(page->tasks[0].id());
  game.set_round(3);
  const std::size_t empty = body.rfind("[]");
  ASSERT_NE(empty, std::string::npos) << body;
  body.replace(empty, 2, "[{\"round\":3,\"record\":\"" + consensus::ToHex(game.SerializeAsString()) + "\"}]");
  Result<contracts::TaskGames> games = DecodeTaskGames(body);
  ASSERT_TRUE(games.ok()) << games.status().ToString();
  ASSERT_EQ(games->games.size(), 1u);
  EXPECT_TRUE(MessageDifferencer::Equals(games->games[0], game));
}

TEST_F(LedgerClientDecodeTest, TruncatedAnswersAreNotJson) {
  const std::string status = Get("/v1/status");
  Result<LedgerInfo> info = DecodeLedgerInfo(status.substr(0, status.size() / 2));
  EXPECT_EQ(info.status().code(), StatusCode::kCorruption);
  EXPECT_NE(info.status().message().find("the /v1/status answer is not a JSON object"), std::string::npos)
      << info.status().message();
  const std::string tasks = Get("/v1/tasks");
  Result<contracts::TaskPage> page = DecodeTaskPage(tasks.substr(0, tasks.size() - 1));
  EXPECT_EQ(page.status().code(), StatusCode::kCorruption);
  EXPECT_NE(page.status().message().find("/v1/tasks answer"), std::string::npos) << page.status().message();
}

TEST(LedgerClientDecode, GarbageIsCorruptionNotACrash) {
  for (const std::string& body : {std::string(), std::string("\x00\xff", 2), std::string("[]"), std::string("null"),
                                  std::string("\"text\""), std::string("{\"a\":1} trailing")}) {
    EXPECT_EQ(DecodeLedgerInfo(body).status().code(), StatusCode::kCorruption) << body;
    EXPECT_EQ(DecodeTaskPage(body).status().code(), StatusCode::kCorruption) << body;
    EXPECT_EQ(DecodeTxState(body).status().code(), StatusCode::kCorruption) << body;
  }
}

// The recursive parser would overflow the stack here; a ledger answer may be 64 MiB.
TEST(LedgerClientDecode, DeeplyNestedAnswerIsCorruptionNotAStackOverflow) {
  const std::size_t depth = 4'000'000;
  const std::string body = "{\"games\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  Result<contracts::TaskGames> games = DecodeTaskGames(body);
  EXPECT_EQ(games.status().code(), StatusCode::kCorruption);
}

TEST(LedgerClientDecode, WrongTypesAndMissingFieldsNameTheField) {
  ExpectCorruptionNaming(DecodeLedgerInfo(R"({"chain_id":5,"height":1})").status(), "chain_id", "not a string");
  ExpectCorruptionNaming(DecodeLedgerInfo(R"({"chain_id":"c","height":"1"})").status(), "height",
                         "not an unsigned 64-bit integer");
  ExpectCorruptionNaming(DecodeLedgerInfo(R"({"chain_id":"c"})").status(), "height", "is missing");
  ExpectCorruptionNaming(DecodeAccount(R"({"balance":-1,"nonce":0})").status(), "balance", "not an unsigned");
  ExpectCorruptionNaming(DecodeAccount(R"({"balance":1,"nonce":1.5})").status(), "nonce", "not an unsigned");
  ExpectCorruptionNaming(DecodeTask(R"({"record":"zz"})").status(), "record", "is not hex");
  ExpectCorruptionNaming(DecodeParams(R"({"record":"ff"})").status(), "record",
                         "not a valid polnode.proto.Params record");
  ExpectCorruptionNaming(DecodeTaskPage(R"({"total":1,"tasks":{}})").status(), "tasks", "not an array");
  ExpectCorruptionNaming(DecodeTaskPage(R"({"total":1,"tasks":[1]})").status(), "tasks[0].record",
                         "its parent is not an object");
  ExpectCorruptionNaming(DecodeTaskPage(R"({"total":2,"tasks":[{"record":""},{"record":7}]})").status(),
                         "tasks[1].record", "not a string");
  ExpectCorruptionNaming(DecodeTaskGames(R"({"task_record":"","params_record":"","games":[{}]})").status(),
                         "games[0].record", "is missing");
  ExpectCorruptionNaming(DecodeStake(R"({"solver":[]})", proto::ROLE_SOLVER).status(), "solver", "not an object");
  ExpectCorruptionNaming(DecodeStake(R"({"solver":{"bonded":1,"locked":0}})", proto::ROLE_SOLVER).status(),
                         "solver.unbonding", "is missing");
  ExpectCorruptionNaming(DecodePendingNonce(R"({"next_nonce":"3"})").status(), "next_nonce", "neither null nor");
  ExpectCorruptionNaming(DecodeTxId(R"({"tx_id":null})").status(), "tx_id", "not a string");
  ExpectCorruptionNaming(DecodeTxState(R"({"status":"lost"})").status(), "status", "neither");
  ExpectCorruptionNaming(DecodeTxState(R"({"status":"committed"})").status(), "height", "is missing");
  ExpectCorruptionNaming(DecodeTxState(R"({"status":"committed","height":1,"result":"failed"})").status(), "error",
                         "is missing");
}

TEST(LedgerClientDecode, VerifierSetRoundTripsAndABadMemberIsNamed) {
  contracts::VerifierStake member;
  member.pubkey = std::string(32, '\x07');
  member.stake.set_bonded(900);
  member.stake.set_locked(300);
  member.stake.set_unbonding(5);
  Result<std::vector<contracts::VerifierStake>> decoded = DecodeVerifiers(VerifiersJson({member, member}));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded->size(), 2u);
  EXPECT_EQ((*decoded)[1].pubkey, member.pubkey);
  EXPECT_TRUE(MessageDifferencer::Equals((*decoded)[1].stake, member.stake));
  ExpectCorruptionNaming(DecodeVerifiers(R"({"verifiers":[{"pubkey":"ab","bonded":1,"locked":0,"unbonding":0}]})").status(),
                         "verifiers[0].pubkey", "not 64 hex");
  ExpectCorruptionNaming(DecodeVerifiers(R"({"verifiers":[{"pubkey":")" + std::string(64, 'a') + R"(","bonded":1}]})")
                             .status(),
                         "verifiers[0].locked", "is missing");
}

TEST(LedgerClientDecode, StakeOfARoleTheLedgerDoesNotReportIsInvalidArgument) {
  EXPECT_EQ(DecodeStake("{}", proto::ROLE_UNSPECIFIED).status().code(), StatusCode::kInvalidArgument);
}

TEST(LedgerClientDecode, RefusalCarriesTheLedgersReasonAndMapsTheStatus) {
  const Status missing = DecodeRefusal("GET /v1/tasks/x", 404, R"({"error":"no task x"})");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), "GET /v1/tasks/x: the ledger answered 404: no task x");
  EXPECT_EQ(DecodeRefusal("POST /v1/tx", 409, R"({"error":"dup"})").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(DecodeRefusal("POST /v1/tx", 503, R"({"error":"full"})").code(), StatusCode::kUnavailable);
  const Status refused = DecodeRefusal("POST /v1/tx", 422, "not json");
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.message(), "POST /v1/tx: the ledger answered 422: not json");
  EXPECT_EQ(DecodeRefusal("GET /v1/status", 400, R"({"error":7})").message(),
            R"(GET /v1/status: the ledger answered 400: {"error":7})");
}

}  // namespace
}  // namespace polnode::node
