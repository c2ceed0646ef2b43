// End to end: the real `polnode` binary. `polnode init` makes a home, `polnode ledger` runs on a
// free loopback port, signed transactions go in over real HTTP, malformed requests bounce off it,
// and kill -9 at random moments never loses a committed block (verify-chain after every crash).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rapidjson/document.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "polnode/base/clock.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/key_file.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/payloads.h"
#include "polnode/rpc/http_client.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/tx_json.h"
#include "polnode/testing/data_files.h"
#include "polnode/testing/eventually.h"
#include "polnode/testing/ledger_fixtures.h"
#include "polnode/testing/ledger_process.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using polnode::testing::Eventually;
using polnode::testing::LedgerProcess;
using polnode::testing::PolnodeBinary;
using polnode::testing::RunProcess;
using polnode::testing::TempDir;
using namespace std::chrono_literals;

rapidjson::Document Json(const std::string& body) {
  rapidjson::Document d;
  d.Parse(body.c_str());
  return d;
}

std::string Get(const LedgerProcess& p, const std::string& target, int* status = nullptr) {
  auto r = HttpCall(p.endpoint(), "GET", target);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (status) *status = r.ok() ? r->status : 0;
  return r.ok() ? r->body : "";
}

std::uint64_t U64Field(const std::string& body, const char* name) {
  auto d = Json(body);
  return d.IsObject() && d.HasMember(name) && d[name].IsUint64() ? d[name].GetUint64() : UINT64_MAX;
}

std::string StringField(const std::string& body, const char* name) {
  auto d = Json(body);
  return d.IsObject() && d.HasMember(name) && d[name].IsString() ? d[name].GetString() : "";
}

std::string SignedTransfer(const consensus::SecretKey& from, const std::string& chain, std::uint64_t nonce,
                           const consensus::SecretKey& to, std::uint64_t amount) {
  return polnode::testing::SignedTx(from, chain, nonce, contracts::payload::kTransfer,
                                    polnode::testing::TransferTo(to, amount));
}

std::string RawExchange(std::uint16_t port, const std::string& bytes) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, 3000) > 0) {
      char buf[4096];
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

class LedgerE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    user_key_path_ = keys_.File("user.key");
    ASSERT_TRUE(consensus::WriteKeyFile(user_key_path_, user_).ok());
    home_ = dir_.File("home");
    auto init = RunProcess({PolnodeBinary(), "init", "--home", home_, "--chain-id", kChain, "--block-interval-ms",
                            "100", "--accounts", consensus::ToHex(user_.PublicKey().bytes()) + "=1000000", "--json"});
    ASSERT_EQ(init.exit_code, 0) << init.err;
    EXPECT_NE(init.out.find("\"chain_id\":\"e2e-chain\""), std::string::npos) << init.out;
  }

  std::string Account(const LedgerProcess& p, const consensus::SecretKey& k) {
    return Get(p, "/v1/accounts/" + consensus::ToHex(k.PublicKey().bytes()));
  }

  static constexpr char kChain[] = "e2e-chain";
  TempDir dir_;
  TempDir keys_;
  std::string home_;
  std::string user_key_path_;
  const consensus::SecretKey user_ = *consensus::SecretKey::Generate();
  const consensus::SecretKey bob_ = *consensus::SecretKey::Generate();
};

TEST_F(LedgerE2ETest, ASecondLedgerOnTheSameHomeIsRefusedByNameAndTheFirstKeepsServing) {
  LedgerProcess ledger(home_);
  ASSERT_TRUE(ledger.Start());
  auto second = RunProcess({PolnodeBinary(), "ledger", "--home", home_, "--listen", "127.0.0.1:0"});
  EXPECT_EQ(second.exit_code, 1) << second.out << second.err;
  EXPECT_NE(second.err.find("ledger home " + home_ + " is in use by another polnode process (pid "), std::string::npos)
      << second.err;
  EXPECT_EQ(second.err.find("LOCK"), std::string::npos) << "RocksDB's own lock error leaked: " << second.err;
  auto status = HttpCall(ledger.endpoint(), "GET", "/v1/status", "", "");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->status, 200);
  // A crash releases the home: a ledger restarted after kill -9 starts.
  ledger.Kill9();
  ASSERT_TRUE(ledger.Start());
}

TEST_F(LedgerE2ETest, ManualBlocksAreMadeOnlyWhenATestAsksAndOnlyWithTheFlag) {
  // A production ledger has no such endpoint.
  LedgerProcess timed(home_);
  ASSERT_TRUE(timed.Start());
  int status = 0;
  auto refused = HttpCall(timed.endpoint(), "POST", "/v1/test/produce-block");
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 404) << refused->body;
  EXPECT_FALSE(timed.ProduceBlocks(1));
  EXPECT_EQ(timed.Terminate(), 0);

  LedgerProcess ledger(home_, /*manual_blocks=*/true);
  ASSERT_TRUE(ledger.Start());
  const std::uint64_t start = U64Field(Get(ledger, "/v1/status"), "height");
  // A transfer waits in the mempool until the test makes a block, however long that takes.
  auto posted = HttpCall(ledger.endpoint(), "POST", "/v1/tx", SignedTransfer(user_, kChain, 0, bob_, 3),
                         "application/x-protobuf");
  ASSERT_TRUE(posted.ok());
  ASSERT_EQ(posted->status, 200) << posted->body;
  EXPECT_EQ(ledger.MempoolSize(), 1u);
  EXPECT_EQ(U64Field(Get(ledger, "/v1/status", &status), "height"), start);
  std::uint64_t height = 0;
  ASSERT_TRUE(ledger.ProduceBlocks(1, &height));
  EXPECT_EQ(height, start + 1);
  EXPECT_EQ(ledger.MempoolSize(), 0u);
  EXPECT_EQ(U64Field(Account(ledger, bob_), "balance"), 3u);
  // Several at once, their times one configured interval (100 ms) apart.
  ASSERT_TRUE(ledger.ProduceBlocks(5, &height));
  EXPECT_EQ(height, start + 6);
  const std::int64_t t5 = static_cast<std::int64_t>(U64Field(Get(ledger, "/v1/blocks/" + std::to_string(start + 5)), "time_unix_ms"));
  const std::int64_t t6 = static_cast<std::int64_t>(U64Field(Get(ledger, "/v1/blocks/" + std::to_string(start + 6)), "time_unix_ms"));
  EXPECT_EQ(t6 - t5, 100);
  // Bad requests make no block.
  for (const char* target : {"/v1/test/produce-block?count=0", "/v1/test/produce-block?count=x",
                             "/v1/test/produce-block?count=10001", "/v1/test/produce-block?n=2"}) {
    auto bad = HttpCall(ledger.endpoint(), "POST", target);
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(bad->status, 400) << target << ": " << bad->body;
  }
  auto get = HttpCall(ledger.endpoint(), "GET", "/v1/test/produce-block");
  ASSERT_TRUE(get.ok());
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(U64Field(Get(ledger, "/v1/status"), "height"), start + 6);
  EXPECT_EQ(ledger.Terminate(), 0) << ledger.Log();
}

TEST_F(LedgerE2ETest, ASecondRoleDaemonOnTheSameHomeIsRefusedByName) {
  LedgerProcess ledger(home_, /*manual_blocks=*/true);
  ASSERT_TRUE(ledger.Start());
  const std::string role_home = dir_.File("verifier");
  polnode::testing::DaemonProcess first;
  ASSERT_TRUE(first.Start({PolnodeBinary(), "verifier", "--home", role_home, "--ledger", ledger.url()},
                          dir_.File("first.out"), dir_.File("first.err")));
  // The key is created after the home is locked: once it exists, the first daemon holds the home.
  Eventually([&] { return std::filesystem::exists(role_home + "/role.key") || !first.Running(); });
  ASSERT_TRUE(first.Running()) << polnode::testing::ReadFileText(dir_.File("first.err"));
  auto second = RunProcess({PolnodeBinary(), "verifier", "--home", role_home, "--ledger", ledger.url()});
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("role home " + role_home + " is in use by another polnode process (pid "),
            std::string::npos)
      << second.err;
  EXPECT_TRUE(first.Running());
  // Its key holds nothing: it says once what to fund, instead of failing every pass.
  const auto out = [&] { return polnode::testing::ReadFileText(dir_.File("first.out")); };
  Eventually([&] { return out().find(" needs_funds ") != std::string::npos; });
  EXPECT_EQ(first.Terminate(), 0);
  const std::string log = out();
  const std::size_t notice = log.find(" needs_funds ");
  ASSERT_NE(notice, std::string::npos) << log;
  EXPECT_EQ(log.find(" needs_funds ", notice + 1), std::string::npos) << "logged once per shortfall: " << log;
  EXPECT_NE(log.find("stake_role=ROLE_VERIFIER balance=0 need="), std::string::npos) << log;
  EXPECT_NE(log.find("hint=\"transfer at least "), std::string::npos) << log;
  EXPECT_EQ(log.find(" pass_error "), std::string::npos) << log;

  // Restarted without --listen, it serves where its last run did (proof and spec URIs on the
  // ledger name that address).
  const std::string served = polnode::testing::ReadFileText(role_home + "/listen");
  ASSERT_FALSE(served.empty());
  polnode::testing::DaemonProcess again;
  ASSERT_TRUE(again.Start({PolnodeBinary(), "verifier", "--home", role_home, "--ledger", ledger.url()},
                          dir_.File("again.out"), dir_.File("again.err")));
  const auto again_out = [&] { return polnode::testing::ReadFileText(dir_.File("again.out")); };
  Eventually([&] { return again_out().find("serving") != std::string::npos || !again.Running(); });
  EXPECT_NE(again_out().find("serving http://" + served.substr(0, served.size() - 1) + ","), std::string::npos)
      << again_out() << " vs " << served;
  EXPECT_EQ(again.Terminate(), 0);
}

TEST_F(LedgerE2ETest, AStakeThatCouldNeverBeUsedIsRefusedBeforeItsFeeIsSpent) {
  LedgerProcess ledger(home_, /*manual_blocks=*/true);
  ASSERT_TRUE(ledger.Start());
  const auto stake = [&](const std::string& amount) {
    return ledger.RunCommitting({PolnodeBinary(), "tx", "stake", "--key", user_key_path_, "--ledger", ledger.url(), "--role",
                       "verifier", "--amount", amount, "--wait"});
  };
  auto small = stake("10");
  EXPECT_NE(small.exit_code, 0);
  EXPECT_NE(small.err.find("the verifier stake would be 10, below min_stake_verifier = 500"), std::string::npos)
      << small.err;
  EXPECT_NE(small.err.find("bond at least 500"), std::string::npos) << small.err;
  auto broke = stake("5000000");
  EXPECT_NE(broke.exit_code, 0);
  EXPECT_NE(broke.err.find("fund this key first"), std::string::npos) << broke.err;
  // Nothing was sent: the account's nonce is still 0 and its balance whole.
  const std::string before = Account(ledger, user_);
  EXPECT_NE(before.find("\"nonce\":0"), std::string::npos) << before;
  EXPECT_NE(before.find("\"balance\":1000000"), std::string::npos) << before;

  auto enough = stake("500");
  EXPECT_EQ(enough.exit_code, 0) << enough.err;
  // Topping up a stake already at the minimum is fine in any amount.
  auto top_up = stake("1");
  EXPECT_EQ(top_up.exit_code, 0) << top_up.err;

  // `polnode account` shows where the money went: two fees, 501 bonded as verifier stake.
  auto account = RunProcess({PolnodeBinary(), "account", "--key", user_key_path_, "--ledger", ledger.url(), "--json"});
  ASSERT_EQ(account.exit_code, 0) << account.err;
  EXPECT_NE(account.out.find("\"balance\":999497,\"nonce\":2"), std::string::npos) << account.out;
  EXPECT_NE(account.out.find("\"verifier\":{\"bonded\":501,\"locked\":0,\"free\":501,\"unbonding\":0}"),
            std::string::npos)
      << account.out;
  EXPECT_NE(account.out.find("\"tasks\":[]"), std::string::npos) << account.out;
  auto by_pubkey = RunProcess({PolnodeBinary(), "account", consensus::ToHex(user_.PublicKey().bytes()), "--ledger",
                               ledger.url()});
  ASSERT_EQ(by_pubkey.exit_code, 0) << by_pubkey.err;
  EXPECT_NE(by_pubkey.out.find("balance 999497, nonce 2"), std::string::npos) << by_pubkey.out;
  auto ambiguous = RunProcess({PolnodeBinary(), "account", consensus::ToHex(user_.PublicKey().bytes()), "--key",
                               user_key_path_, "--ledger", ledger.url()});
  EXPECT_EQ(ambiguous.exit_code, 2) << ambiguous.err;
}

TEST_F(LedgerE2ETest, TransactionsOverHttpSurviveBadRequestsAndKillNine) {
  LedgerProcess ledger(home_, /*manual_blocks=*/true);
  ASSERT_TRUE(ledger.Start());

  // 20 protobuf transfers and one in JSON, all from the user to bob.
  for (std::uint64_t n = 0; n < 20; ++n) {
    auto r = HttpCall(ledger.endpoint(), "POST", "/v1/tx", SignedTransfer(user_, kChain, n, bob_, 10),
                      "application/x-protobuf");
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->status, 200) << r->body;
  }
  JsonWriter w;
  w.BeginObject();
  WriteTxFields(w, *consensus::DecodeEnvelope(SignedTransfer(user_, kChain, 20, bob_, 5)));
  w.EndObject();
  auto json_tx = HttpCall(ledger.endpoint(), "POST", "/v1/tx", w.str(), "application/json");
  ASSERT_TRUE(json_tx.ok());
  ASSERT_EQ(json_tx->status, 200) << json_tx->body;

  // Nothing commits until the test makes a block.
  EXPECT_EQ(U64Field(Account(ledger, bob_), "balance"), 0u);
  EXPECT_EQ(ledger.MempoolSize(), 21u);

  // The CLI: nonce (21) and chain id asked from the ledger, waits for the block, which commits
  // the 21 waiting transfers and its own.
  auto cli = ledger.RunCommitting({PolnodeBinary(), "tx", "transfer", "--key", user_key_path_, "--ledger", ledger.url(), "--to",
                         consensus::ToHex(bob_.PublicKey().bytes()), "--amount", "7", "--wait", "--json"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find("\"status\":\"committed\""), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("\"nonce\":21"), std::string::npos) << cli.out;

  ASSERT_EQ(U64Field(Account(ledger, bob_), "balance"), 212u) << Account(ledger, bob_);
  EXPECT_EQ(ledger.MempoolSize(), 0u);
  EXPECT_EQ(U64Field(Account(ledger, user_), "nonce"), 22u);

  // Malformed and hostile requests: each gets its 4xx and the node keeps serving.
  auto bad_json = HttpCall(ledger.endpoint(), "POST", "/v1/tx", "{\"chain_id\": ", "application/json");
  ASSERT_TRUE(bad_json.ok());
  EXPECT_EQ(bad_json->status, 400);
  EXPECT_NE(bad_json->body.find("\"error\""), std::string::npos);
  auto huge = HttpCall(ledger.endpoint(), "POST", "/v1/tx", std::string(2 << 20, 'x'), "application/x-protobuf");
  ASSERT_TRUE(huge.ok()) << huge.status().ToString();
  EXPECT_EQ(huge->status, 413);
  auto wrong_method = HttpCall(ledger.endpoint(), "GET", "/v1/tx");
  ASSERT_TRUE(wrong_method.ok());
  EXPECT_EQ(wrong_method->status, 405);
  auto unknown = HttpCall(ledger.endpoint(), "GET", "/v2/everything");
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->status, 404);
  std::string garbage = RawExchange(ledger.endpoint().port, std::string("\x00\xff\x13garbage\r\n\r\n", 14));
  EXPECT_EQ(garbage.rfind("HTTP/1.1 400", 0), 0u) << garbage;
  int status = 0;
  Get(ledger, "/v1/status", &status);
  EXPECT_EQ(status, 200);
  std::string metrics = Get(ledger, "/metrics");
  EXPECT_NE(metrics.find("polnode_http_requests_total{code=\"413\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("polnode_txs_accepted_total 22"), std::string::npos) << metrics;

  // kill -9, restart: the chain resumes at its last block with the same state.
  const std::string before = Get(ledger, "/v1/status");
  const std::uint64_t height = U64Field(before, "height");
  const std::string hash = StringField(Get(ledger, "/v1/blocks/" + std::to_string(height)), "hash");
  const std::string user_before = Account(ledger, user_);
  const std::string bob_before = Account(ledger, bob_);
  ledger.Kill9();
  ASSERT_TRUE(ledger.Start());
  EXPECT_EQ(U64Field(Get(ledger, "/v1/status"), "height"), height);
  EXPECT_EQ(StringField(Get(ledger, "/v1/blocks/" + std::to_string(height)), "hash"), hash);
  EXPECT_EQ(Account(ledger, user_), user_before);
  EXPECT_EQ(Account(ledger, bob_), bob_before);
  EXPECT_EQ(ledger.Terminate(), 0) << ledger.Log();

  auto verify = RunProcess({PolnodeBinary(), "ledger", "verify-chain", "--home", home_, "--json"});
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_NE(verify.out.find("\"ok\":true"), std::string::npos) << verify.out;
  EXPECT_NE(verify.out.find("\"transactions\":22"), std::string::npos) << verify.out;
}

TEST_F(LedgerE2ETest, KillNineAtRandomMomentsUnderTrafficNeverLosesACommittedBlock) {
  LedgerProcess ledger(home_);
  std::mt19937 rng(7);
  std::uint64_t txs_accepted = 0;
  std::uint64_t seen_height = 0;
  std::string seen_hash;
  for (int round = 0; round <= 20; ++round) {
    ASSERT_TRUE(ledger.Start()) << "round " << round;
    if (round > 0) {
      // Every block seen before the previous kill is still there, unchanged.
      EXPECT_GE(U64Field(Get(ledger, "/v1/status"), "height"), seen_height) << "round " << round;
      EXPECT_EQ(StringField(Get(ledger, "/v1/blocks/" + std::to_string(seen_height)), "hash"), seen_hash)
          << "block " << seen_height << " seen before crash " << round << " was lost or changed";
    }
    if (round == 20) break;
    // Pending txs die with the process; the committed nonce is where to continue.
    std::uint64_t nonce = U64Field(Account(ledger, user_), "nonce");
    ASSERT_NE(nonce, UINT64_MAX);
    std::string last_status;
    // Real time on purpose: the ledger makes blocks on its timer and the kill lands at a random
    // moment of it (mid-commit included); every moment must keep the committed blocks.
    const Clock::TimePoint kill_at = SystemClock().Now() + std::chrono::milliseconds(100 + rng() % 500);
    while (SystemClock().Now() < kill_at) {
      auto r = HttpCall(ledger.endpoint(), "POST", "/v1/tx",
                        SignedTransfer(user_, kChain, nonce, bob_, 1), "application/x-protobuf");
      ASSERT_TRUE(r.ok());
      if (r->status == 200) {
        ++nonce;
        ++txs_accepted;
      }
      last_status = Get(ledger, "/v1/status");
    }
    seen_height = U64Field(last_status, "height");
    seen_hash = StringField(last_status, "tip_hash");
    ledger.Kill9();

    auto verify = RunProcess({PolnodeBinary(), "ledger", "verify-chain", "--home", home_});
    ASSERT_EQ(verify.exit_code, 0) << "after crash " << round + 1 << ": " << verify.err;
  }
  ledger.Kill9();
  EXPECT_GT(txs_accepted, 20u);
}

}  // namespace
}  // namespace polnode::node
