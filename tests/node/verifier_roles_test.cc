// The verifier and whistleblower daemons' roles (verifier_role.h, whistleblower_role.h) against a
// real ledger in this process (Ledger + LedgerApi on a loopback HttpServer) and a real proof of the
// tiny task served over loopback. The test plays submitter and solver itself with plain
// transactions and produces every block, so each step happens in a known order: no timing
// assumption beyond generous deadlines for the roles' worker threads.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>

#include "genesis_file.h"
#include "ledger.h"
#include "ledger_api.h"
#include "pol_task_fixture.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/genesis.h"
#include "polnode/contracts/payloads.h"
#include "subprocess.h"
#include "verifier_role.h"
#include "whistleblower_role.h"

namespace polnode::node {
namespace {

using namespace std::chrono_literals;
using testing::KeyOf;
using testing::RawHash;
using testing::RawKey;

constexpr std::uint64_t kFunds = 100'000;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A role with its own home and context.
struct Daemon {
  std::unique_ptr<Role> role;
  std::unique_ptr<RoleContext> ctx;
  std::string home;
};

class RolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GenesisFile genesis;
    genesis.spec.set_chain_id("roles-test");
    proto::Params params = contracts::DefaultParams();
    params.set_forced_error_rate(0);  // every round is a real one: disputes go to games
    params.set_verify_window(1000);   // the test waits on the roles, never on this window
    params.set_challenge_window(12);
    params.set_reveal_window(100);
    params.set_dispute_move_window(4);
    *genesis.spec.mutable_params() = params;
    params_ = params;
    for (const consensus::SecretKey* key : {&submitter_, &solver_, &honest_, &lazy_, &whistleblower_}) {
      proto::Allocation* a = genesis.spec.add_allocations();
      a->set_pubkey(RawKey(*key));
      a->set_amount(kFunds);
    }
    LedgerOptions options;
    options.data_dir = dir_.File("ledger");
    options.sync_writes = false;
    options.max_tx_bytes = 4 << 20;
    Result<std::unique_ptr<Ledger>> ledger = Ledger::Open(options, genesis, KeyOf(0x09));
    ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
    ledger_ = std::move(*ledger);
    api_ = std::make_unique<LedgerApi>(*ledger_);
    HttpServerOptions server_options;
    server_options.limits.max_body_bytes = 12 << 20;
    Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(
        server_options, [this](const HttpRequest& r) { return api_->Handle(r); }, [](int) {});
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    client_ = std::make_unique<LedgerClient>(*LedgerClient::FromUrl(LedgerUrl()));
  }

  void TearDown() override {
    for (Daemon& d : daemons_) d.role->Stop();
    daemons_.clear();
    if (server_) server_->Stop();
  }

  std::string LedgerUrl() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  DataCache::Loader TinyLoader() const {
    return [](const solver::TaskSpec& document) -> Result<solver::ImageDataset> {
      if (document.data_location != "synthetic") return Status::NotFound("no data at " + document.data_location);
      return solver::testing::TinyDataset();
    };
  }

  Daemon& AddVerifier(const consensus::SecretKey& key, bool lazy, const std::string& name) {
    VerifierOptions options;
    options.lazy = lazy;
    options.backend = "reference";
    options.loader = TinyLoader();
    return AddDaemon(std::make_unique<VerifierRole>(std::move(options)), "verifier", key, name);
  }

  Daemon& AddWhistleblower(const consensus::SecretKey& key) {
    WhistleblowerOptions options;
    options.backend = "reference";
    options.loader = TinyLoader();
    return AddDaemon(std::make_unique<WhistleblowerRole>(std::move(options)), "whistleblower", key, "whistleblower");
  }

  Daemon& AddDaemon(std::unique_ptr<Role> role, const std::string& role_name, const consensus::SecretKey& key,
                    const std::string& name) {
    Daemon d;
    d.home = dir_.File(name);
    std::filesystem::create_directories(d.home);
    d.role = std::move(role);
    d.ctx = std::make_unique<RoleContext>(role_name, d.home, key, *LedgerClient::FromUrl(LedgerUrl()));
    daemons_.push_back(std::move(d));
    return daemons_.back();
  }

  void Block() {
    static std::int64_t clock_ms = 1'700'000'000'000;
    clock_ms += 1000;
    Result<ProducedBlock> block = ledger_->ProduceBlock(clock_ms);
    ASSERT_TRUE(block.ok()) << block.status().ToString();
  }

  // Polls every daemon once per round, then produces a block (every round when `every_round`,
  // else only when a transaction waits), until `done` or the deadline. Pass errors fail the test.
  bool RunUntil(const std::function<bool()>& done, bool every_round) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      for (Daemon& d : daemons_) {
        const Status s = d.role->Poll(*d.ctx);
        EXPECT_TRUE(s.ok()) << d.home << ": " << s.ToString();
      }
      if (every_round || ledger_->GetStatus().mempool_size > 0) Block();
      if (done()) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }

  // Sends a transaction as a user would and commits it in the next block.
  void SendAndCommit(const consensus::SecretKey& key, std::string_view type, const google::protobuf::Message& msg) {
    Result<LedgerClient::Sent> sent = client_->Send(key, type, msg.SerializeAsString());
    ASSERT_TRUE(sent.ok()) << type << ": " << sent.status().ToString();
    Block();
    Result<TxState> state = client_->Tx(sent->id_hex);
    ASSERT_TRUE(state.ok());
    ASSERT_EQ(state->kind, TxState::Kind::kCommitted) << type << ": " << state->error;
  }

  proto::Task TheTask() const {
    Result<TaskPage> page = client_->Tasks(0, 1);
    EXPECT_TRUE(page.ok() && page->tasks.size() == 1);
    return page.ok() && !page->tasks.empty() ? page->tasks[0] : proto::Task();
  }

  std::uint64_t Bonded(const consensus::SecretKey& key, proto::Role role) const {
    Result<proto::StakeRecord> stake = client_->Stake(RawKey(key), role);
    return stake.ok() ? stake->bonded() : 0;
  }

  std::uint64_t Balance(const consensus::SecretKey& key) const {
    Result<proto::Account> account = client_->Account(RawKey(key));
    return account.ok() ? account->balance() : 0;
  }

  // Balance plus whistleblower stake: what a whistleblower owns.
  std::uint64_t Holdings(const consensus::SecretKey& key) const {
    return Balance(key) + Bonded(key, proto::ROLE_WHISTLEBLOWER);
  }

  static const proto::VerifierSlot* SlotOf(const proto::Task& task, const consensus::SecretKey& key) {
    for (const proto::VerifierSlot& slot : task.verifiers()) {
      if (slot.verifier() == RawKey(key)) return &slot;
    }
    return nullptr;
  }

  // Submits the tiny task, claims it as solver_ and commits `proof`, then produces blocks until
  // the ledger has assigned verifiers. The roles are polled throughout, so they stake first.
  void SubmitClaimAndCommit(const testing::TinyProof& proof) {
    ASSERT_TRUE(RunUntil(
        [&] {
          for (const Daemon& d : daemons_) {
            const bool verifier = d.ctx->role() == "verifier";
            const std::uint64_t needed =
                verifier ? 4 * params_.min_stake_verifier() : 2 * params_.min_stake_whistleblower();
            const proto::Role role = verifier ? proto::ROLE_VERIFIER : proto::ROLE_WHISTLEBLOWER;
            if (Bonded(d.ctx->key(), role) < needed) return false;
          }
          return true;
        },
        true));
    proto::StakeTx stake;
    stake.set_role(proto::ROLE_SOLVER);
    stake.set_amount(params_.min_stake_solver());
    SendAndCommit(solver_, contracts::payload::kStake, stake);

    proto::SubmitTaskTx submit;
    *submit.mutable_spec() = *LedgerSpecFor(document_, data_, TaskTerms{10'000, 100, 100});
    submit.set_spec_uri(task_server_.AddDocument(document_));
    SendAndCommit(submitter_, contracts::payload::kSubmitTask, submit);
    const std::string task_id = TheTask().id();

    proto::ClaimTaskTx claim;
    claim.set_task_id(task_id);
    claim.set_secret_commitment(RawHash(contracts::SecretCommitment(secret_)));
    SendAndCommit(solver_, contracts::payload::kClaimTask, claim);
    ASSERT_TRUE(RunUntil([&] { return !TheTask().forced_seed().empty(); }, true));

    proto::CommitProofTx commit;
    commit.set_task_id(task_id);
    commit.set_proof_root(RawHash(proof.manifest.merkle_root));
    commit.set_proof_uri(task_server_.AddProof(proof.dir->path().string()));
    SendAndCommit(solver_, contracts::payload::kCommitProof, commit);
    ASSERT_TRUE(RunUntil([&] { return TheTask().status() != proto::TASK_COMMITTED; }, true));
    ASSERT_EQ(TheTask().status(), proto::TASK_VERIFYING);
  }

  const solver::ImageDataset data_ = solver::testing::TinyDataset();
  const solver::TaskSpec document_ = solver::testing::TinyTask(data_);
  const consensus::SecretKey submitter_ = KeyOf(0x11);
  const consensus::SecretKey solver_ = KeyOf(0x12);
  const consensus::SecretKey honest_ = KeyOf(0x13);
  const consensus::SecretKey lazy_ = KeyOf(0x14);
  const consensus::SecretKey whistleblower_ = KeyOf(0x15);
  const std::string secret_ = std::string(32, 's');
  proto::Params params_;
  polnode::testing::TempDir dir_;
  testing::TaskServer task_server_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<LedgerApi> api_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<LedgerClient> client_;
  std::deque<Daemon> daemons_;  // stable addresses: tests hold references
};

TEST_F(RolesTest, HonestVerdictIsPostedOnceWithItsReportAndARestartDoesNotPostAgain) {
  Daemon& verifier = AddVerifier(honest_, false, "honest");
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  SubmitClaimAndCommit(proof);
  const std::string task_hex = consensus::ToHex(TheTask().id());
  const std::string report_path = verifier.home + "/reports/" + task_hex + ".json";

  // Poll without producing blocks until the verdict waits in the mempool.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (verifier.ctx->metrics().Get("verdicts_accept_total") + verifier.ctx->metrics().Get("verdicts_reject_total") ==
             0 &&
         std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(verifier.role->Poll(*verifier.ctx).ok());
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(verifier.ctx->metrics().Get("verdicts_accept_total"), 1);
  EXPECT_EQ(verifier.ctx->metrics().Get("verifications_total"), 1);
  const std::string report = ReadFile(report_path);
  ASSERT_FALSE(report.empty());
  EXPECT_EQ(report.rfind(R"({"verdict":"accept")", 0), 0u) << report;

  // A restarted verifier (new role, new context, same home) finds its verdict journalled.
  Daemon restarted;
  restarted.role = std::make_unique<VerifierRole>(VerifierOptions{false, 0, "reference", 1, TinyLoader()});
  restarted.ctx =
      std::make_unique<RoleContext>("verifier", verifier.home, honest_, *LedgerClient::FromUrl(LedgerUrl()));
  restarted.home = verifier.home;
  verifier.role->Stop();
  daemons_.clear();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(restarted.role->Poll(*restarted.ctx).ok());
    Block();
  }
  EXPECT_EQ(restarted.ctx->metrics().Get("txs_sent_total"), 0);
  EXPECT_EQ(restarted.ctx->metrics().Get("verifications_total"), 0);
  const proto::Task task = TheTask();
  ASSERT_NE(SlotOf(task, honest_), nullptr);
  EXPECT_EQ(SlotOf(task, honest_)->verdict(), proto::VERDICT_ACCEPT);
  EXPECT_EQ(SlotOf(task, honest_)->report_hash(), RawHash(consensus::Sha256(report)));
  EXPECT_EQ(ReadFile(report_path), report);
  restarted.role->Stop();
}

TEST_F(RolesTest, CheatIsRejectedTheLazyAcceptIsDisputedAndTheWhistleblowerWinsTheGame) {
  Daemon& honest = AddVerifier(honest_, false, "honest");
  Daemon& lazy = AddVerifier(lazy_, true, "lazy");
  Daemon& whistleblower = AddWhistleblower(whistleblower_);
  // The cheat sits in the final segment, which every verifier replays: the honest verifier must
  // reject and the whistleblower must disagree with the lazy accept, whatever the beacon draws.
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, solver::TamperSpec{37, 3, 0, 22});
  SubmitClaimAndCommit(proof);
  const std::string task_hex = consensus::ToHex(TheTask().id());

  ASSERT_TRUE(RunUntil([&] { return TheTask().status() != proto::TASK_VERIFYING; }, false));
  proto::Task task = TheTask();
  ASSERT_EQ(task.status(), proto::TASK_CHALLENGE);
  ASSERT_EQ(task.verifiers_size(), 2);
  EXPECT_EQ(SlotOf(task, honest_)->verdict(), proto::VERDICT_REJECT);
  EXPECT_EQ(SlotOf(task, lazy_)->verdict(), proto::VERDICT_ACCEPT);
  const std::string report = ReadFile(honest.home + "/reports/" + task_hex + ".json");
  EXPECT_EQ(report.rfind(R"({"verdict":"reject","reason":"segment 7: )", 0), 0u) << report;
  EXPECT_EQ(SlotOf(task, honest_)->report_hash(), RawHash(consensus::Sha256(report)));
  EXPECT_NE(ReadFile(lazy.home + "/reports/" + task_hex + ".json").find("lazy"), std::string::npos);
  EXPECT_EQ(lazy.ctx->metrics().Get("verifications_total"), 0);

  // The whistleblower disputes the lazy accept only; blocks come only to commit transactions,
  // so the challenge window cannot close under it.
  ASSERT_TRUE(RunUntil([&] { return SlotOf(TheTask(), lazy_)->disputer() == RawKey(whistleblower_); }, false));
  const std::uint64_t holdings_at_dispute = Holdings(whistleblower_);
  ASSERT_TRUE(RunUntil([&] { return TheTask().status() == proto::TASK_REVEALING; }, true));
  task = TheTask();
  EXPECT_TRUE(SlotOf(task, honest_)->disputer().empty());
  EXPECT_EQ(whistleblower.ctx->metrics().Get("checks_total"), 2);
  EXPECT_EQ(whistleblower.ctx->metrics().Get("disagreements_total"), 1);
  EXPECT_EQ(whistleblower.ctx->metrics().Get("disputes_total"), 1);

  // Not a forced round, so the reveal starts the game, which the lazy verifier loses by timeout.
  proto::RevealTx reveal;
  reveal.set_task_id(task.id());
  reveal.set_secret(secret_);
  reveal.set_result_root(task.proof_root());
  SendAndCommit(solver_, contracts::payload::kReveal, reveal);
  ASSERT_EQ(TheTask().status(), proto::TASK_DISPUTED);
  ASSERT_TRUE(RunUntil([&] { return TheTask().status() == proto::TASK_SETTLED; }, true));
  task = TheTask();
  EXPECT_EQ(SlotOf(task, lazy_)->game_result(), proto::GAME_CHALLENGER_WON);
  EXPECT_GE(whistleblower.ctx->metrics().Get("dispute_moves_total"), 1);
  EXPECT_EQ(lazy.ctx->metrics().Get("dispute_moves_total"), 0);

  // The settlement is logged once, with the balance the ledger holds; the lazy verifier's lock
  // went to the whistleblower, its own lock came back, and its moves cost a fee each.
  ASSERT_TRUE(RunUntil([&] { return whistleblower.ctx->metrics().Get("settled_total") > 0; }, false));
  EXPECT_EQ(whistleblower.ctx->metrics().Get("settled_total"), 1);
  EXPECT_EQ(whistleblower.ctx->metrics().Get("balance"), static_cast<double>(Balance(whistleblower_)));
  EXPECT_GT(Holdings(whistleblower_), holdings_at_dispute + params_.min_stake_verifier() / 2);
  EXPECT_FALSE(std::filesystem::exists(whistleblower.home + "/watch/" + task_hex));
}

TEST(SelectedForCheckTest, IsDeterministicAndAuditsTheGivenShare) {
  const std::string task(32, 't');
  const std::string self(32, 'w');
  int chosen = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::string verifier = RawHash(consensus::Sha256("verifier " + std::to_string(i)));
    EXPECT_TRUE(SelectedForCheck(task, verifier, self, 1.0));
    EXPECT_FALSE(SelectedForCheck(task, verifier, self, 0.0));
    const bool half = SelectedForCheck(task, verifier, self, 0.5);
    EXPECT_EQ(SelectedForCheck(task, verifier, self, 0.5), half);
    chosen += half ? 1 : 0;
  }
  // 1000 fair coin flips: ~16 standard deviations of room each side.
  EXPECT_GT(chosen, 250);
  EXPECT_LT(chosen, 750);
  // Another whistleblower audits other verdicts.
  int same = 0;
  for (int i = 0; i < 200; ++i) {
    const std::string verifier = RawHash(consensus::Sha256("verifier " + std::to_string(i)));
    same += SelectedForCheck(task, verifier, self, 0.5) == SelectedForCheck(task, verifier, std::string(32, 'x'), 0.5);
  }
  EXPECT_LT(same, 150);
}

}  // namespace
}  // namespace polnode::node
