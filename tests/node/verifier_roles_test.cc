// The verifier and whistleblower daemons' roles (verifier_role.h, whistleblower_role.h) against a
// real ledger in this process (Ledger + LedgerApi on a loopback HttpServer) and a real proof of the
// tiny task served over loopback, under protocol v3 (docs/protocol.md). The test plays submitter
// and solver itself with plain transactions (the solver's dispute moves through its DisputeDuty)
// and produces every block, so each step happens in a known order: no timing assumption beyond
// generous deadlines for the roles' worker threads.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>

#include "polnode/base/clock.h"
#include "polnode/roles/challenge_watch.h"
#include "polnode/roles/dispute_duty.h"
#include "polnode/contracts/forced.h"
#include "polnode/ledger/genesis_file.h"
#include "polnode/ledger/ledger.h"
#include "polnode/solver/pol_files.h"
#include "polnode/roles/solver_role.h"
#include "polnode/rpc/ledger_api.h"
#include "pol_task_fixture.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/beacon.h"
#include "polnode/consensus/merkle.h"
#include "polnode/contracts/genesis.h"
#include "polnode/contracts/locks.h"
#include "polnode/contracts/payloads.h"
#include "polnode/solver/task_binding.h"
#include "polnode/testing/data_files.h"
#include "polnode/testing/eventually.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/roles/verifier_role.h"
#include "polnode/roles/whistleblower_role.h"

namespace polnode::node {
namespace {

using namespace std::chrono_literals;
using testing::KeyFromByte;
using testing::LoopbackFetchPolicy;
using testing::RawHash;
using testing::RawPubKey;

constexpr std::uint64_t kFunds = 100'000;
constexpr std::uint64_t kPayment = 10'000;
// How far the roles' clock moves in one round of RunUntil.
constexpr auto kRoundTime = 100ms;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A role with its own home and context.
struct Daemon {
  std::unique_ptr<Role> role;
  std::unique_ptr<RoleContext> ctx;
  std::string home;
  std::uint64_t stake = 0;  // the free stake it keeps bonded in its role
};

class RolesTest : public ::testing::Test {
 protected:
  void SetUp() override { StartLedger(0); }

  // `forced_error_rate` 0: every round is a real one; 1: every round is forced.
  void StartLedger(std::uint64_t forced_error_rate) {
    GenesisFile genesis;
    genesis.spec.set_chain_id("roles-test");
    proto::Params params = contracts::DefaultParams();
    params.set_forced_error_rate(forced_error_rate);
    params.set_publish_window(1000);  // the test waits on the solver's publication, never on this window
    params.set_verify_window(1000);   // the test waits on the roles, never on this window
    params.set_challenge_window(12);
    params.set_reveal_window(100);
    params.set_dispute_move_window(4);
    *genesis.spec.mutable_params() = params;
    params_ = params;
    for (const consensus::SecretKey* key : {&submitter_, &solver_, &honest_, &lazy_, &whistleblower_}) {
      proto::Allocation* a = genesis.spec.add_allocations();
      a->set_pubkey(RawPubKey(*key));
      a->set_amount(kFunds);
    }
    LedgerOptions options;
    options.data_dir = dir_.File("ledger");
    options.sync_writes = false;
    options.max_tx_bytes = 4 << 20;
    Result<std::unique_ptr<Ledger>> ledger = Ledger::Open(options, genesis, KeyFromByte(0x09));
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
    // A role's Stop ends its worker's fetch retry pause itself (BackgroundCheck); the clock stays.
    for (Daemon& d : daemons_) d.role->Stop();
    daemons_.clear();
    if (server_) server_->Stop();
  }

  // A restart of the ledger with other parameters (before any daemon was added).
  void RestartLedger(std::uint64_t forced_error_rate) {
    server_->Stop();
    server_.reset();
    api_.reset();
    ledger_.reset();
    std::filesystem::remove_all(dir_.File("ledger"));
    StartLedger(forced_error_rate);
  }

  std::string LedgerUrl() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  DataCache::Loader TinyLoader() const {
    return [](const solver::TaskSpec& document) -> Result<solver::ImageDataset> {
      if (document.data_location != "synthetic") return Status::NotFound("no data at " + document.data_location);
      return solver::testing::TinyDataset();
    };
  }

  // The free stake a verifier keeps: `locks` task locks of kPayment. Slots are drawn by stake with
  // replacement, so one lock holds at most one slot of the task; more may hold several.
  std::uint64_t VerifierStake(std::uint64_t locks = 1) const {
    return locks * contracts::TaskLock(params_, proto::ROLE_VERIFIER, kPayment);
  }

  Daemon& AddVerifier(const consensus::SecretKey& key, bool lazy, const std::string& name, std::uint64_t locks = 1) {
    VerifierOptions options;
    options.lazy = lazy;
    options.stake = VerifierStake(locks);
    options.backend = "reference";
    options.loader = TinyLoader();
    Daemon& d = AddDaemon(std::make_unique<VerifierRole>(std::move(options)), "verifier", key, name);
    d.stake = VerifierStake(locks);
    return d;
  }

  Daemon& AddWhistleblower(const consensus::SecretKey& key) {
    WhistleblowerOptions options;
    options.backend = "reference";
    options.loader = TinyLoader();
    Daemon& d = AddDaemon(std::make_unique<WhistleblowerRole>(std::move(options)), "whistleblower", key, "whistleblower");
    d.stake = 2 * params_.min_stake_whistleblower();
    return d;
  }

  Daemon& AddDaemon(std::unique_ptr<Role> role, const std::string& role_name, const consensus::SecretKey& key,
                    const std::string& name) {
    Daemon d;
    d.home = dir_.File(name);
    std::filesystem::create_directories(d.home);
    d.role = std::move(role);
    d.ctx = std::make_unique<RoleContext>(role_name, d.home, key, *LedgerClient::FromUrl(LedgerUrl()),
                                          LoopbackFetchPolicy(), clock_);
    daemons_.push_back(std::move(d));
    return daemons_.back();
  }

  void Block() {
    static std::int64_t clock_ms = 1'700'000'000'000;
    clock_ms += 1000;
    Result<ProducedBlock> block = ledger_->ProduceBlock(clock_ms);
    ASSERT_TRUE(block.ok()) << block.status().ToString();
  }

  // Polls every daemon once per round, then produces a block (every round when `every_round` and
  // no daemon's replay runs, else only when a transaction waits), until `done` or 60 s. A block
  // made while a replay runs on a worker thread would race it (issue 16 item 8): deadlines move
  // only while the roles are caught up. The roles' clock moves kRoundTime a round, so their pauses
  // (a fetch retried, a failed check retried) pass in rounds, not in real time. Pass errors fail
  // the test.
  bool RunUntil(const std::function<bool()>& done, bool every_round) {
    return polnode::testing::Eventually(
        [&] {
          bool checking = false;
          for (Daemon& d : daemons_) {
            const Status s = d.role->Poll(*d.ctx);
            EXPECT_TRUE(s.ok()) << d.home << ": " << s.ToString();
            checking = checking || d.ctx->metrics().Get("checking") != 0;
          }
          for (const std::function<void()>& also : each_round_) also();
          clock_.Advance(kRoundTime);
          if ((every_round && !checking) || ledger_->GetStatus().mempool_size > 0) Block();
          return done();
        },
        60s, 5ms);
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
    Result<contracts::TaskPage> page = client_->Tasks(0, 1);
    EXPECT_TRUE(page.ok() && page->tasks.size() == 1);
    return page.ok() && !page->tasks.empty() ? page->tasks[0] : proto::Task();
  }

  std::uint64_t Bonded(const consensus::SecretKey& key, proto::Role role) const {
    Result<proto::StakeRecord> stake = client_->Stake(RawPubKey(key), role);
    return stake.ok() ? stake->bonded() : 0;
  }

  std::uint64_t Balance(const consensus::SecretKey& key) const {
    Result<proto::Account> account = client_->Account(RawPubKey(key));
    return account.ok() ? account->balance() : 0;
  }

  // Balance plus whistleblower stake: what a whistleblower owns.
  std::uint64_t Holdings(const consensus::SecretKey& key) const {
    return Balance(key) + Bonded(key, proto::ROLE_WHISTLEBLOWER);
  }

  static const proto::VerifierSlot* SlotOf(const proto::Task& task, const consensus::SecretKey& key) {
    for (const proto::VerifierSlot& slot : task.verifiers()) {
      if (slot.verifier() == RawPubKey(key)) return &slot;
    }
    return nullptr;
  }

  // The index of `key`'s first slot, as report file names spell it.
  static std::string SlotIndex(const proto::Task& task, const consensus::SecretKey& key) {
    const std::vector<std::uint32_t> slots = SlotsOf(task, RawPubKey(key));
    EXPECT_FALSE(slots.empty());
    return slots.empty() ? "none" : std::to_string(slots[0]);
  }

  // Submits the tiny task, claims it as solver_ and commits the proof in `proof_dir` (served from
  // there), then produces blocks until the ledger has assigned verifiers. The roles are polled
  // throughout, so they stake first.
  void SubmitClaimAndCommit(const std::string& proof_dir) {
    SubmitAndClaim();
    if (::testing::Test::HasFatalFailure()) return;
    Commit(proof_dir);
  }

  // Submits the task and claims it with secret_, once every daemon's stake is bonded; returns when
  // the forced-error seed is drawn.
  void SubmitAndClaim() {
    ASSERT_TRUE(RunUntil(
        [&] {
          for (const Daemon& d : daemons_) {
            const proto::Role role = d.ctx->role() == "verifier" ? proto::ROLE_VERIFIER : proto::ROLE_WHISTLEBLOWER;
            if (Bonded(d.ctx->key(), role) < d.stake) return false;
          }
          return true;
        },
        true));
    proto::StakeTx stake;
    stake.set_role(proto::ROLE_SOLVER);
    stake.set_amount(contracts::TaskLock(params_, proto::ROLE_SOLVER, kPayment));
    SendAndCommit(solver_, contracts::payload::kStake, stake);

    proto::SubmitTaskTx submit;
    *submit.mutable_spec() = *solver::LedgerSpecFor(document_, data_, solver::TaskTerms{kPayment, 100, 100});
    submit.set_spec_uri(task_server_.AddDocument(document_));
    SendAndCommit(submitter_, contracts::payload::kSubmitTask, submit);
    const std::string task_id = TheTask().id();

    proto::ClaimTaskTx claim;
    claim.set_task_id(task_id);
    claim.set_secret_commitment(RawHash(contracts::SecretCommitment(secret_)));
    SendAndCommit(solver_, contracts::payload::kClaimTask, claim);
    ASSERT_TRUE(RunUntil([&] { return !TheTask().forced_seed().empty(); }, true));
  }

  // Commits the proof in `proof_dir` (served by task_server_) to the claimed task; returns once
  // its verifiers are drawn.
  void Commit(const std::string& proof_dir) {
    const std::string task_id = TheTask().id();
    Result<solver::ProofDir> proof = solver::OpenProofDir(proof_dir);
    ASSERT_TRUE(proof.ok()) << proof.status().ToString();
    proto::CommitProofTx commit;
    commit.set_task_id(task_id);
    commit.set_proof_root(RawHash(proof->manifest.merkle_root));
    commit.set_proof_uri(task_server_.AddProof(proof_dir));
    commit.set_initial_proof(MerkleProofOf(proof->manifest, 0));
    SendAndCommit(solver_, contracts::payload::kCommitProof, commit);
    ASSERT_TRUE(RunUntil([&] { return TheTask().status() != proto::TASK_COMMITTED; }, true));
    ASSERT_EQ(TheTask().status(), proto::TASK_VERIFYING);
  }

  // The solver serves `proof`'s manifest but no checkpoint: submits, claims and commits it, and
  // runs until the verifiers have answered.
  void CommitWithholdingCheckpoints(const testing::TinyProof& proof) {
    std::filesystem::remove_all(proof.dir->File("blobs"));
    std::filesystem::create_directories(proof.dir->File("blobs"));
    SubmitClaimAndCommit(proof.dir->path());
    if (::testing::Test::HasFatalFailure()) return;
    ASSERT_TRUE(RunUntil([&] { return TheTask().status() != proto::TASK_VERIFYING; }, false));
  }

  // The solver publishes `checkpoints` of task `task_id` on the ledger from its proof in `proof_dir`.
  void PublishCheckpoints(const std::string& proof_dir, const std::string& task_id,
                          const std::set<std::uint64_t>& checkpoints) {
    for (std::uint64_t checkpoint : checkpoints) {
      Result<std::vector<proto::PublishTx>> txs = PublishTxs(proof_dir, task_id, checkpoint);
      ASSERT_TRUE(txs.ok()) << txs.status().ToString();
      for (const proto::PublishTx& tx : *txs) SendAndCommit(solver_, contracts::payload::kPublish, tx);
    }
  }

  static std::string MerkleProofOf(const solver::ProofManifest& manifest, std::uint64_t checkpoint) {
    const consensus::MerkleTree tree(manifest.checkpoint_hashes);
    const std::vector<std::uint8_t> bytes = consensus::SerializeMerkleProof(*tree.Prove(checkpoint));
    return std::string(bytes.begin(), bytes.end());
  }

  // Makes the test's solver defend its proof in every game, as its daemon does: its answers come
  // from a replay with `tamper` (the cheat it trained with), through the node's DisputeDuty.
  void SolverDefends(std::optional<solver::TamperSpec> tamper) {
    solver_home_ = dir_.File("solver");
    std::filesystem::create_directories(solver_home_);
    solver_ctx_ = std::make_unique<RoleContext>("solver", solver_home_, solver_, *LedgerClient::FromUrl(LedgerUrl()),
                                                LoopbackFetchPolicy(), clock_);
    solver_backend_ = kernels::MakeReferenceBackend();
    DisputeParty party;
    party.document = document_;
    party.data = &data_;
    party.backend = solver_backend_.get();
    party.tamper = tamper;
    party.cache_dir = solver_home_ + "/cache";
    party.ledger = &solver_ctx_->ledger();
    solver_duty_ = std::make_unique<DisputeDuty>(std::move(party));
    each_round_.push_back([this] {
      Result<contracts::TaskPage> page = client_->Tasks(0, 1);
      ASSERT_TRUE(page.ok()) << page.status().ToString();
      if (page->tasks.empty() || page->tasks[0].status() != proto::TASK_DISPUTED) return;
      Result<int> sent = solver_duty_->Poll(*solver_ctx_, page->tasks[0]);
      EXPECT_TRUE(sent.ok()) << sent.status().ToString();
    });
  }

  // The solver disputes the reject verdict of each of `verifier`'s slots within the challenge window.
  void DisputeReject(const consensus::SecretKey& verifier) {
    const proto::Task task = TheTask();
    for (std::uint32_t slot : SlotsOf(task, RawPubKey(verifier))) {
      if (task.verifiers(static_cast<int>(slot)).verdict() != proto::VERDICT_REJECT) continue;
      proto::DisputeTx dispute;
      dispute.set_task_id(task.id());
      dispute.set_verifier(RawPubKey(verifier));
      dispute.set_slot(slot);
      SendAndCommit(solver_, contracts::payload::kDispute, dispute);
    }
  }

  // The settled task's one game, which the honest verifier (`verifier`'s daemon) opened on segment
  // 7 from the ledger's data and the solver forfeited: the proof unproven, the task rejected.
  proto::DisputeGame ExpectTheSolverForfeitedTheGameOnSegment7(const Daemon& verifier) {
    const proto::Task task = TheTask();
    Result<contracts::TaskGames> games = client_->Games(task.id());
    EXPECT_TRUE(games.ok());
    if (!games.ok() || games->games.size() != 1) {
      ADD_FAILURE() << "the task has no game or more than one";
      return {};
    }
    const proto::DisputeGame& game = games->games[0];
    EXPECT_EQ(game.segment(), 7u);
    EXPECT_TRUE(game.forfeit()) << game.ruling();
    EXPECT_EQ(game.winner(), RawPubKey(honest_)) << game.ruling();
    EXPECT_EQ(SlotOf(task, honest_)->game_result(), proto::GAME_DEFENDER_FORFEIT);
    EXPECT_EQ(task.standing(), proto::PROOF_UNPROVEN);
    EXPECT_EQ(task.outcome(), proto::OUTCOME_REJECTED);
    EXPECT_GE(verifier.ctx->metrics().Get("dispute_moves_total"), 1);
    return game;
  }

  void Reveal(const proto::RevealTx& reveal) { SendAndCommit(solver_, contracts::payload::kReveal, reveal); }

  // Once the task reaches its reveal round, reveals the plain proof and runs until the task
  // settles, rejected with its proof disproven (the caller stops on a fatal failure).
  void RevealAndSettleDisproven() {
    ASSERT_TRUE(RunUntil([&] { return TheTask().status() == proto::TASK_REVEALING; }, true));
    Reveal(PlainReveal());
    ASSERT_TRUE(RunUntil([&] { return TheTask().status() == proto::TASK_SETTLED; }, true));
    const proto::Task task = TheTask();
    EXPECT_EQ(task.outcome(), proto::OUTCOME_REJECTED);
    EXPECT_EQ(task.standing(), proto::PROOF_DISPROVEN);
  }

  proto::RevealTx PlainReveal() {
    proto::RevealTx reveal;
    reveal.set_task_id(TheTask().id());
    reveal.set_secret(secret_);
    reveal.set_result_root(TheTask().proof_root());
    return reveal;
  }

  std::uint64_t Locked(const consensus::SecretKey& key, proto::Role role) const {
    Result<proto::StakeRecord> stake = client_->Stake(RawPubKey(key), role);
    return stake.ok() ? stake->locked() : 0;
  }

  // Balance plus every stake: what an account owns.
  std::uint64_t Wealth(const consensus::SecretKey& key) const {
    return Balance(key) + Bonded(key, proto::ROLE_SOLVER) + Bonded(key, proto::ROLE_VERIFIER) +
           Bonded(key, proto::ROLE_WHISTLEBLOWER);
  }

  const solver::ImageDataset data_ = solver::testing::TinyDataset();
  const solver::TaskSpec document_ = solver::testing::TinyTask(data_);
  const consensus::SecretKey submitter_ = KeyFromByte(0x11);
  const consensus::SecretKey solver_ = KeyFromByte(0x12);
  const consensus::SecretKey honest_ = KeyFromByte(0x13);
  const consensus::SecretKey lazy_ = KeyFromByte(0x14);
  const consensus::SecretKey whistleblower_ = KeyFromByte(0x15);
  const std::string secret_ = std::string(32, 's');
  // The roles' time (RunUntil moves it); declared before anything that may hold it.
  ManualClock clock_;
  proto::Params params_;
  polnode::testing::TempDir dir_;
  testing::TaskServer task_server_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<LedgerApi> api_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<LedgerClient> client_;
  std::deque<Daemon> daemons_;  // stable addresses: tests hold references
  std::vector<std::function<void()>> each_round_;  // what RunUntil does besides polling the daemons
  std::string solver_home_;
  std::unique_ptr<RoleContext> solver_ctx_;
  std::unique_ptr<kernels::Backend> solver_backend_;
  std::unique_ptr<DisputeDuty> solver_duty_;
};

TEST_F(RolesTest, ASolverDoesNotClaimATaskNoVerifierCouldCheckUntilOneStakes) {
  // A task whose data the solver daemon can load from disk.
  std::filesystem::create_directories(dir_.File("data"));
  ASSERT_TRUE(polnode::testing::WriteIdxDataset(dir_.File("data"), data_).ok());
  solver::TaskSpec document = document_;
  document.data_location = dir_.File("data");
  Result<solver::ImageDataset> on_disk = solver::LoadTaskData(document);
  ASSERT_TRUE(on_disk.ok()) << on_disk.status().ToString();
  proto::SubmitTaskTx submit;
  *submit.mutable_spec() = *solver::LedgerSpecFor(document, *on_disk, solver::TaskTerms{kPayment, 1000, 1000});
  submit.set_spec_uri(task_server_.AddDocument(document));
  SendAndCommit(submitter_, contracts::payload::kSubmitTask, submit);

  SolverOptions options;
  options.backend = "reference";
  AddDaemon(std::make_unique<SolverRole>(std::move(options)), "solver", solver_, "solver");
  // No verifier is staked: the task would settle OUTCOME_NO_VERIFIERS with the solver unpaid.
  int rounds = 0;
  ASSERT_TRUE(RunUntil([&] { return ++rounds == 20; }, true));
  EXPECT_EQ(TheTask().status(), proto::TASK_OPEN);

  // A verifier stakes enough for the task's lock: the solver claims.
  AddVerifier(honest_, false, "honest");
  ASSERT_TRUE(RunUntil([&] { return TheTask().status() != proto::TASK_OPEN; }, true));
  EXPECT_EQ(TheTask().solver(), RawPubKey(solver_));
}

TEST_F(RolesTest, HonestVerdictIsPostedOnceWithItsReportAndARestartDoesNotPostAgain) {
  Daemon& verifier = AddVerifier(honest_, false, "honest");
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  SubmitClaimAndCommit(proof.dir->path());
  const std::string task_hex = consensus::ToHex(TheTask().id());
  const std::string report_path = verifier.home + "/reports/" + task_hex + "-" + SlotIndex(TheTask(), honest_) + ".json";

  // Poll without producing blocks until the verdict waits in the mempool.
  polnode::testing::Eventually(
      [&] {
        EXPECT_TRUE(verifier.role->Poll(*verifier.ctx).ok());
        return verifier.ctx->metrics().Get("verdicts_total", {"verdict", "VERDICT_ACCEPT"}) + verifier.ctx->metrics().Get("verdicts_total", {"verdict", "VERDICT_REJECT"}) != 0;
      },
      60s, 5ms);
  EXPECT_EQ(verifier.ctx->metrics().Get("verdicts_total", {"verdict", "VERDICT_ACCEPT"}), 1);
  EXPECT_EQ(verifier.ctx->metrics().Get("verifications_total"), 1);
  const std::string report = ReadFile(report_path);
  ASSERT_FALSE(report.empty());
  EXPECT_EQ(report.rfind(R"({"verdict":"accept")", 0), 0u) << report;

  // A restarted verifier (new role, new context, same home) finds its verdict journalled.
  Daemon restarted;
  restarted.role = std::make_unique<VerifierRole>(VerifierOptions{false, VerifierStake(), "reference", 1, TinyLoader()});
  restarted.ctx =
      std::make_unique<RoleContext>("verifier", verifier.home, honest_, *LedgerClient::FromUrl(LedgerUrl()),
                                    LoopbackFetchPolicy(), clock_);
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
  const proto::VerifierSlot* slot = SlotOf(task, honest_);
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(slot->verdict(), proto::VERDICT_ACCEPT);
  EXPECT_EQ(slot->report_hash(), RawHash(consensus::Sha256(report)));
  // An accept commits to no end state.
  EXPECT_EQ(slot->segment_digests_size(), 0);
  EXPECT_EQ(ReadFile(report_path), report);
  restarted.role->Stop();
}

// A cheat in the final segment (which every verifier replays): the honest verifier rejects it, the
// lazy one accepts, the whistleblower challenges the proof. The solver bluffs: it disputes the
// reject and defends its proof; the referee rules against it at the tampered operator. The proof is
// disproven, so the lazy verifier, which accepted the disproven segment, loses its lock to the
// honest one; the whistleblower's challenge is not needed and its lock comes back.
TEST_F(RolesTest, CheatIsDisprovenInTheGameTheSolverDemandedAndTheLazyAccepterPays) {
  AddVerifier(honest_, false, "honest");
  Daemon& lazy = AddVerifier(lazy_, true, "lazy");
  Daemon& whistleblower = AddWhistleblower(whistleblower_);
  const solver::TamperSpec cheat{37, 3, 0, 22};
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, cheat);
  SolverDefends(cheat);
  SubmitClaimAndCommit(proof.dir->path());
  const std::string task_hex = consensus::ToHex(TheTask().id());

  ASSERT_TRUE(RunUntil([&] { return TheTask().status() != proto::TASK_VERIFYING; }, false));
  proto::Task task = TheTask();
  ASSERT_EQ(task.status(), proto::TASK_CHALLENGE);
  ASSERT_EQ(task.verifiers_size(), 2);
  EXPECT_EQ(SlotOf(task, honest_)->verdict(), proto::VERDICT_REJECT);
  EXPECT_EQ(std::vector<std::uint64_t>(SlotOf(task, honest_)->failed_segments().begin(),
                                       SlotOf(task, honest_)->failed_segments().end()),
            std::vector<std::uint64_t>{7});
  EXPECT_EQ(SlotOf(task, lazy_)->verdict(), proto::VERDICT_ACCEPT);
  EXPECT_NE(ReadFile(lazy.home + "/reports/" + task_hex + "-" + SlotIndex(task, lazy_) + ".json").find("lazy"), std::string::npos);
  EXPECT_EQ(lazy.ctx->metrics().Get("verifications_total"), 0);
  const std::uint64_t lazy_before = Wealth(lazy_);
  const std::uint64_t honest_before = Wealth(honest_);
  const std::uint64_t lazy_lock = SlotOf(task, lazy_)->lock();

  // The whistleblower's own replay fails at segment 7: it challenges the proof; the solver
  // disputes the reject. Blocks come only to commit transactions, so the window stays open.
  ASSERT_TRUE(RunUntil([&] { return TheTask().challenges_size() == 1; }, false));
  EXPECT_EQ(TheTask().challenges(0).challenger(), RawPubKey(whistleblower_));
  EXPECT_EQ(whistleblower.ctx->metrics().Get("challenges_total"), 1);
  // Its holdings just before the challenge (balance plus stake, less only fees), kept on disk for
  // the settlement's report (challenge_watch.h).
  Result<std::optional<ChallengeWatch>> watch = LoadChallengeWatch(whistleblower.home + "/watch/" + task_hex);
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  ASSERT_TRUE(watch->has_value());
  EXPECT_GT((*watch)->holdings_before, kFunds / 2);
  EXPECT_LE((*watch)->holdings_before, kFunds);
  EXPECT_EQ(whistleblower.ctx->metrics().Get("checks_total"), 2);
  EXPECT_EQ(whistleblower.ctx->metrics().Get("disagreements_total"), 1);  // the lazy accept
  DisputeReject(honest_);
  RevealAndSettleDisproven();
  if (HasFatalFailure()) return;
  task = TheTask();
  EXPECT_EQ(task.disproven_segment(), 7u);
  EXPECT_EQ(task.disprover(), RawPubKey(honest_));
  EXPECT_EQ(SlotOf(task, honest_)->game_result(), proto::GAME_CHALLENGER_WON);
  EXPECT_EQ(task.challenges(0).game_result(), proto::GAME_NOT_PLAYED);
  Result<contracts::TaskGames> games = client_->Games(task.id());
  ASSERT_TRUE(games.ok());
  ASSERT_EQ(games->games.size(), 1u);
  EXPECT_FALSE(games->games[0].true_leaf().empty()) << "the referee ruled: " << games->games[0].ruling();
  EXPECT_FALSE(games->games[0].forfeit());

  // The lazy verifier lost its lock (to the disprover); the honest one gained at least that.
  EXPECT_LE(Wealth(lazy_) + lazy_lock, lazy_before);
  EXPECT_GE(Wealth(honest_), honest_before + lazy_lock);
  EXPECT_EQ(Locked(whistleblower_, proto::ROLE_WHISTLEBLOWER), 0u);
  ASSERT_TRUE(RunUntil([&] { return whistleblower.ctx->metrics().Get("settled_total") > 0; }, false));
  EXPECT_FALSE(std::filesystem::exists(whistleblower.home + "/watch/" + task_hex));
}

// Slots are drawn by stake with replacement: a verifier whose stake covers three locks, alone,
// holds all three slots of the task. It replays once (the union of the slots' segments and the
// final one) and posts one verdict per slot, each naming its slot, with its own report; the solver
// disputes every reject and one game (the key against the solver) decides all three slots.
TEST_F(RolesTest, AVerifierHoldingSeveralSlotsReplaysOnceAndAnswersEachSlot) {
  Daemon& verifier = AddVerifier(honest_, false, "honest", 3);
  const solver::TamperSpec cheat{37, 3, 0, 22};
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, cheat);
  SolverDefends(cheat);
  SubmitClaimAndCommit(proof.dir->path());
  proto::Task task = TheTask();
  ASSERT_EQ(task.verifiers_size(), 3);
  EXPECT_EQ(SlotsOf(task, RawPubKey(honest_)), (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(Locked(honest_, proto::ROLE_VERIFIER), 3 * contracts::TaskLock(params_, proto::ROLE_VERIFIER, kPayment));

  ASSERT_TRUE(RunUntil([&] { return TheTask().status() != proto::TASK_VERIFYING; }, false));
  task = TheTask();
  ASSERT_EQ(task.status(), proto::TASK_CHALLENGE);
  EXPECT_EQ(verifier.ctx->metrics().Get("verifications_total"), 1);
  EXPECT_EQ(verifier.ctx->metrics().Get("verdicts_total", {"verdict", "VERDICT_REJECT"}), 3);
  const std::string task_hex = consensus::ToHex(task.id());
  for (int i = 0; i < 3; ++i) {
    const proto::VerifierSlot& slot = task.verifiers(i);
    EXPECT_EQ(slot.verdict(), proto::VERDICT_REJECT) << i;
    // Its own segments and the final one, where the cheat is.
    EXPECT_EQ(std::vector<std::uint64_t>(slot.failed_segments().begin(), slot.failed_segments().end()),
              std::vector<std::uint64_t>{7})
        << i;
    const std::string report = ReadFile(verifier.home + "/reports/" + task_hex + "-" + std::to_string(i) + ".json");
    EXPECT_NE(report.find("\"slot\":" + std::to_string(i) + ","), std::string::npos) << report;
    EXPECT_EQ(slot.report_hash(), RawHash(consensus::Sha256(report))) << i;
  }
  const std::uint64_t before = Wealth(honest_);
  const double sent_before = verifier.ctx->metrics().Get("txs_sent_total");

  DisputeReject(honest_);
  task = TheTask();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(task.verifiers(i).disputed()) << i;
  RevealAndSettleDisproven();
  if (HasFatalFailure()) return;
  task = TheTask();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(task.verifiers(i).game_result(), proto::GAME_CHALLENGER_WON) << i;
  Result<contracts::TaskGames> games = client_->Games(task.id());
  ASSERT_TRUE(games.ok());
  ASSERT_EQ(games->games.size(), 1u);
  EXPECT_FALSE(games->games[0].true_leaf().empty()) << "the referee ruled: " << games->games[0].ruling();
  // Paid per slot: three verifier fees and three shares of the solver's lock, less the fees of the
  // game's moves it sent.
  const std::uint64_t escrow = kPayment - kPayment * params_.jackpot_cut_bps() / 10'000;
  const std::uint64_t fee = escrow * params_.verifier_fee_bps() / 10'000 / params_.verifiers_per_task();
  const std::uint64_t sent = static_cast<std::uint64_t>(verifier.ctx->metrics().Get("txs_sent_total") - sent_before);
  EXPECT_GT(sent, 0u);
  EXPECT_EQ(Wealth(honest_), before + 3 * fee + 3 * (task.solver_lock() / 3) - sent * params_.tx_fee());
  EXPECT_EQ(Locked(honest_, proto::ROLE_VERIFIER), 0u);
}

// Data availability is the solver's burden: a solver whose server stops handing out checkpoints
// gets unavailable verdicts and must publish what they need on the ledger; the verifiers then
// replay from the ledger's copy, and the honest proof is accepted.
TEST_F(RolesTest, WithheldCheckpointsArePublishedOnTheLedgerAndTheVerifiersReplayFromThere) {
  Daemon& verifier = AddVerifier(honest_, false, "honest");
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  ASSERT_NO_FATAL_FAILURE(CommitWithholdingCheckpoints(proof));
  proto::Task task = TheTask();
  ASSERT_EQ(task.status(), proto::TASK_PUBLISHING);
  EXPECT_EQ(SlotOf(task, honest_)->verdict(), proto::VERDICT_UNAVAILABLE);
  EXPECT_EQ(verifier.ctx->metrics().Get("verdicts_total", {"verdict", "VERDICT_UNAVAILABLE"}), 1);
  std::set<std::uint64_t> required(task.publish_required().begin(), task.publish_required().end());
  std::set<std::uint64_t> expected = {7, 8};
  for (std::uint64_t s : SlotOf(task, honest_)->segments()) expected.insert({s, s + 1});
  EXPECT_EQ(required, expected);

  // The solver publishes from its own copy of the proof (the one it stopped serving).
  const testing::TinyProof copy = testing::ProveTiny(document_, data_, solver_, std::nullopt);
  ASSERT_EQ(copy.manifest.merkle_root, proof.manifest.merkle_root);
  ASSERT_NO_FATAL_FAILURE(PublishCheckpoints(copy.dir->path(), task.id(), required));
  task = TheTask();
  ASSERT_EQ(task.status(), proto::TASK_VERIFYING);
  EXPECT_TRUE(SlotOf(task, honest_)->published());

  ASSERT_TRUE(RunUntil([&] { return TheTask().status() != proto::TASK_VERIFYING; }, false));
  task = TheTask();
  EXPECT_EQ(task.status(), proto::TASK_CHALLENGE);
  EXPECT_EQ(SlotOf(task, honest_)->verdict(), proto::VERDICT_ACCEPT);
  EXPECT_GE(verifier.ctx->metrics().Get("published_loaded_total"), static_cast<double>(required.size()));
  const std::string report =
      ReadFile(verifier.home + "/reports/" + consensus::ToHex(task.id()) + "-" + SlotIndex(task, honest_) + "-published.json");
  EXPECT_EQ(report.rfind(R"({"verdict":"accept")", 0), 0u) << report;
  ASSERT_TRUE(RunUntil([&] { return TheTask().status() == proto::TASK_REVEALING; }, true));
  Reveal(PlainReveal());
  EXPECT_EQ(TheTask().outcome(), proto::OUTCOME_ACCEPTED);
}

// Issue 14 finding 1, after publication: a cheating solver publishes what the unavailable verdict
// needs and then takes its proof server down for the game. The verifier replays from the ledger,
// rejects, and, the solver having disputed the reject, opens the game from the ledger's published
// state hashes and Merkle proofs alone. The solver, with no server and no defence, forfeits: its
// proof is unproven, it is not paid and loses its lock, the escrow goes back to the submitter, and
// the honest verifier gains.
TEST_F(RolesTest, AChallengerOpensTheGameFromPublishedDataWhenTheSolverStaysDown) {
  Daemon& verifier = AddVerifier(honest_, false, "honest");
  const solver::TamperSpec cheat{37, 3, 0, 22};
  const testing::TinyProof proof = testing::ProveTiny(document_, data_, solver_, cheat);
  ASSERT_NO_FATAL_FAILURE(CommitWithholdingCheckpoints(proof));
  proto::Task task = TheTask();
  ASSERT_EQ(task.status(), proto::TASK_PUBLISHING);
  const std::set<std::uint64_t> required(task.publish_required().begin(), task.publish_required().end());
  const testing::TinyProof copy = testing::ProveTiny(document_, data_, solver_, cheat);
  ASSERT_EQ(copy.manifest.merkle_root, proof.manifest.merkle_root);
  ASSERT_NO_FATAL_FAILURE(PublishCheckpoints(copy.dir->path(), task.id(), required));
  // The ledger kept each checkpoint's state hash and the proof it checked.
  for (std::uint64_t checkpoint : required) {
    Result<proto::PublishedCheckpoint> published = client_->Published(task.id(), checkpoint);
    ASSERT_TRUE(published.ok()) << published.status().ToString();
    const consensus::Hash256& hash = copy.manifest.checkpoint_hashes[checkpoint];
    EXPECT_EQ(published->state_hash(), std::string(hash.begin(), hash.end())) << checkpoint;
    EXPECT_EQ(published->proof(), MerkleProofOf(copy.manifest, checkpoint)) << checkpoint;
  }
  // Then its server is gone: neither manifest nor checkpoints are served again.
  for (const auto& entry : std::filesystem::directory_iterator(proof.dir->path())) {
    std::filesystem::remove_all(entry.path());
  }

  ASSERT_TRUE(RunUntil([&] { return TheTask().status() != proto::TASK_VERIFYING; }, false));
  task = TheTask();
  ASSERT_EQ(task.status(), proto::TASK_CHALLENGE);
  EXPECT_EQ(SlotOf(task, honest_)->verdict(), proto::VERDICT_REJECT);
  EXPECT_EQ(std::vector<std::uint64_t>(SlotOf(task, honest_)->failed_segments().begin(),
                                       SlotOf(task, honest_)->failed_segments().end()),
            std::vector<std::uint64_t>{7});
  const std::uint64_t honest_before = Wealth(honest_);
  const std::uint64_t submitter_before = Wealth(submitter_);
  const std::uint64_t solver_before = Wealth(solver_);
  const std::uint64_t solver_lock = task.solver_lock();
  DisputeReject(honest_);
  ASSERT_TRUE(RunUntil([&] { return TheTask().status() == proto::TASK_REVEALING; }, true));
  Reveal(PlainReveal());
  ASSERT_TRUE(RunUntil([&] { return TheTask().status() == proto::TASK_SETTLED; }, true));
  ASSERT_NO_FATAL_FAILURE(ExpectTheSolverForfeitedTheGameOnSegment7(verifier));
  // Not paid, its lock gone (the fees of its two transactions after the reading aside); the escrow
  // back to the submitter; the honest verifier at least even.
  EXPECT_LE(Wealth(solver_), solver_before - solver_lock);
  EXPECT_GT(Wealth(submitter_), submitter_before);
  EXPECT_GE(Wealth(honest_), honest_before);
}

// The covered segments of `segments` plus the final one (7) that end at a forced checkpoint.
std::vector<std::uint64_t> EndingForced(std::vector<std::uint64_t> segments, const std::vector<std::uint64_t>& forced) {
  segments.push_back(7);
  std::sort(segments.begin(), segments.end());
  segments.erase(std::unique(segments.begin(), segments.end()), segments.end());
  std::vector<std::uint64_t> out;
  for (std::uint64_t s : segments) {
    if (std::find(forced.begin(), forced.end(), s + 1) != forced.end()) out.push_back(s);
  }
  return out;
}

// A forced round, as the solver role plays it: the solver falsifies its forced checkpoints while
// training (from the secret and the drawn seed) and commits that proof. The honest verifier
// rejects exactly its covered segments that end at a forced checkpoint, committing to the honest
// ends (or accepts when none does); the lazy one accepts; the whistleblower challenges with its
// own covered segments. At the reveal the solver shows the checkpoints the ledger asks for: the
// honest verifier vouched, the whistleblower's challenge caught the error when it covered one,
// the lazy verifier keeps its lock only when none of its segments ended at a forced checkpoint,
// and the solver is paid for the result proof.
TEST_F(RolesTest, ForcedRoundIsCaughtByTheHonestVerifierAndTheWhistleblowerAndCostsTheLazyOne) {
  RestartLedger(1);
  AddVerifier(honest_, false, "honest");
  AddVerifier(lazy_, true, "lazy");
  Daemon& whistleblower = AddWhistleblower(whistleblower_);
  SolverDefends(std::nullopt);
  SubmitAndClaim();
  const proto::Task claimed = TheTask();
  ASSERT_TRUE(contracts::IsForcedError(secret_, claimed.forced_seed(), claimed.id(), params_.forced_error_rate()));
  solver::ForcedRound round;
  round.secret = secret_;
  round.forced_seed = claimed.forced_seed();
  round.task_id = claimed.id();
  round.checkpoints = contracts::ForcedCheckpoints(secret_, claimed.forced_seed(), claimed.id(), 8);
  ASSERT_FALSE(round.checkpoints.empty());
  const testing::ForcedTinyProof proof = testing::ProveTinyForced(document_, data_, solver_, round);
  task_server_.AddProof(proof.result.dir->path());  // the solver serves both
  Commit(proof.committed.dir->path());

  ASSERT_TRUE(RunUntil([&] { return TheTask().status() != proto::TASK_VERIFYING; }, false));
  proto::Task task = TheTask();
  ASSERT_EQ(task.status(), proto::TASK_CHALLENGE);
  const proto::VerifierSlot* honest = SlotOf(task, honest_);
  const std::vector<std::uint64_t> honest_failed =
      EndingForced({honest->segments().begin(), honest->segments().end()}, round.checkpoints);
  EXPECT_EQ(honest->verdict(), honest_failed.empty() ? proto::VERDICT_ACCEPT : proto::VERDICT_REJECT);
  EXPECT_EQ(std::vector<std::uint64_t>(honest->failed_segments().begin(), honest->failed_segments().end()), honest_failed);
  ASSERT_EQ(honest->segment_digests_size(), static_cast<int>(honest_failed.size()));
  for (std::size_t j = 0; j < honest_failed.size(); ++j) {
    const std::uint64_t s = honest_failed[j];
    EXPECT_EQ(honest->segment_digests(static_cast<int>(j)),
              RawHash(contracts::SegmentDigest(RawPubKey(honest_), s, RawHash(proof.result.manifest.checkpoint_hashes[s + 1]))));
  }
  EXPECT_EQ(SlotOf(task, lazy_)->verdict(), proto::VERDICT_ACCEPT);
  const std::vector<std::uint64_t> lazy_wrong =
      EndingForced({SlotOf(task, lazy_)->segments().begin(), SlotOf(task, lazy_)->segments().end()}, round.checkpoints);
  const std::uint64_t lazy_lock = SlotOf(task, lazy_)->lock();
  const std::uint64_t lazy_before = Wealth(lazy_);
  const std::vector<std::int64_t> covered = ChallengeSegmentsOf(task, RawPubKey(whistleblower_));
  const std::vector<std::uint64_t> challenge_failed =
      EndingForced(std::vector<std::uint64_t>(covered.begin(), covered.end()), round.checkpoints);
  if (!challenge_failed.empty()) {
    ASSERT_TRUE(RunUntil([&] { return TheTask().challenges_size() == 1; }, false));
    EXPECT_EQ(whistleblower.ctx->metrics().Get("challenges_total"), 1);
  }
  ASSERT_TRUE(RunUntil([&] { return TheTask().status() == proto::TASK_REVEALING; }, true));
  EXPECT_EQ(TheTask().challenges_size(), challenge_failed.empty() ? 0 : 1);

  Result<proto::RevealTx> reveal = ForcedRevealTx(TheTask(), secret_, proof.committed.dir->path(), proof.result.dir->path());
  ASSERT_TRUE(reveal.ok()) << reveal.status().ToString();
  EXPECT_EQ(reveal->result_root(), RawHash(proof.result.manifest.merkle_root));
  const std::vector<std::uint64_t> shown = contracts::RevealCheckpoints(TheTask());
  ASSERT_EQ(reveal->leaves_size(), static_cast<int>(shown.size()));
  for (int i = 0; i < reveal->leaves_size(); ++i) EXPECT_EQ(reveal->leaves(i).checkpoint(), shown[static_cast<std::size_t>(i)]);
  Reveal(*reveal);
  ASSERT_TRUE(RunUntil([&] { return TheTask().status() == proto::TASK_SETTLED; }, true));
  task = TheTask();
  EXPECT_EQ(task.outcome(), proto::OUTCOME_FORCED_ERROR);
  EXPECT_TRUE(task.forced_error());
  EXPECT_EQ(task.proof_root(), RawHash(proof.result.manifest.merkle_root));
  EXPECT_EQ(task.forced_root(), RawHash(proof.committed.manifest.merkle_root));
  EXPECT_TRUE(SlotOf(task, honest_)->vouched());
  EXPECT_EQ(SlotOf(task, lazy_)->vouched(), lazy_wrong.empty());
  if (!challenge_failed.empty()) {
    // The challenge named its covered segments that end at forced checkpoints, with their honest ends.
    const proto::Challenge& challenge = task.challenges(0);
    EXPECT_EQ(std::vector<std::int64_t>(challenge.segments().begin(), challenge.segments().end()), covered);
    EXPECT_EQ(std::vector<std::uint64_t>(challenge.failed_segments().begin(), challenge.failed_segments().end()),
              challenge_failed);
    ASSERT_EQ(challenge.segment_digests_size(), static_cast<int>(challenge_failed.size()));
    for (std::size_t j = 0; j < challenge_failed.size(); ++j) {
      const std::uint64_t s = challenge_failed[j];
      EXPECT_EQ(challenge.segment_digests(static_cast<int>(j)),
                RawHash(contracts::SegmentDigest(RawPubKey(whistleblower_), s,
                                                 RawHash(proof.result.manifest.checkpoint_hashes[s + 1]))));
    }
    EXPECT_TRUE(challenge.caught());
  }
  if (!lazy_wrong.empty()) {
    EXPECT_LE(Wealth(lazy_) + lazy_lock, lazy_before);
  }
  EXPECT_EQ(Locked(whistleblower_, proto::ROLE_WHISTLEBLOWER), 0u);
}

// A forced round whose solver also cheats in the final segment, withholds its checkpoints (the
// honest verifier says unavailable, the solver publishes what it needs), reveals and then takes its
// proof server down. The reject is not the exactly-right forced one, so a game opens over the
// result proof: its segments start at the committed proof and end at the result proof. The
// challenger opens it from the ledger alone: a published checkpoint for the start, the reveal's
// result hash and Merkle proof, which the ledger kept, for the end. The solver forfeits.
TEST_F(RolesTest, AfterAForcedRevealAChallengerOpensFromTheLedgerWhenTheSolverStaysDown) {
  RestartLedger(1);
  Daemon& verifier = AddVerifier(honest_, false, "honest");
  SubmitAndClaim();
  const proto::Task claimed = TheTask();
  solver::ForcedRound round;
  round.secret = secret_;
  round.forced_seed = claimed.forced_seed();
  round.task_id = claimed.id();
  round.checkpoints = contracts::ForcedCheckpoints(secret_, claimed.forced_seed(), claimed.id(), 8);
  const solver::TamperSpec cheat{37, 3, 0, 22};
  const testing::ForcedTinyProof proof = testing::ProveTinyForced(document_, data_, solver_, round, cheat);
  // The same proof again, which the solver keeps for itself: it publishes and reveals from it.
  const testing::ForcedTinyProof own = testing::ProveTinyForced(document_, data_, solver_, round, cheat);
  ASSERT_EQ(own.result.manifest.merkle_root, proof.result.manifest.merkle_root);
  std::filesystem::remove_all(proof.committed.dir->File("blobs"));
  std::filesystem::create_directories(proof.committed.dir->File("blobs"));
  task_server_.AddProof(proof.result.dir->path());
  Commit(proof.committed.dir->path());
  ASSERT_TRUE(RunUntil([&] { return TheTask().status() != proto::TASK_VERIFYING; }, false));
  proto::Task task = TheTask();
  ASSERT_EQ(task.status(), proto::TASK_PUBLISHING);
  const std::set<std::uint64_t> required(task.publish_required().begin(), task.publish_required().end());
  ASSERT_TRUE(required.contains(7));
  ASSERT_NO_FATAL_FAILURE(PublishCheckpoints(own.committed.dir->path(), task.id(), required));

  ASSERT_TRUE(RunUntil([&] { return TheTask().status() != proto::TASK_VERIFYING; }, false));
  task = TheTask();
  ASSERT_EQ(task.status(), proto::TASK_CHALLENGE);
  const proto::VerifierSlot* slot = SlotOf(task, honest_);
  ASSERT_EQ(slot->verdict(), proto::VERDICT_REJECT);
  EXPECT_TRUE(std::find(slot->failed_segments().begin(), slot->failed_segments().end(), 7u) !=
              slot->failed_segments().end());
  ASSERT_TRUE(RunUntil([&] { return TheTask().status() == proto::TASK_REVEALING; }, true));
  // The solver's server goes down before it reveals: nothing is served again.
  for (const std::string& dir : {proof.committed.dir->path(), proof.result.dir->path()}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) std::filesystem::remove_all(entry.path());
  }
  const std::uint64_t solver_before = Wealth(solver_);
  const std::uint64_t honest_before = Wealth(honest_);
  const std::uint64_t solver_lock = TheTask().solver_lock();
  Result<proto::RevealTx> reveal = ForcedRevealTx(TheTask(), secret_, own.committed.dir->path(), own.result.dir->path());
  ASSERT_TRUE(reveal.ok()) << reveal.status().ToString();
  Reveal(*reveal);
  // The ledger kept the reveal's result proofs.
  Result<proto::RevealedCheckpoints> revealed = client_->Revealed(task.id());
  ASSERT_TRUE(revealed.ok()) << revealed.status().ToString();
  ASSERT_EQ(revealed->leaves_size(), reveal->leaves_size());
  EXPECT_EQ(revealed->leaves(revealed->leaves_size() - 1).result_proof(), MerkleProofOf(own.result.manifest, 8));

  ASSERT_TRUE(RunUntil([&] { return TheTask().status() == proto::TASK_SETTLED; }, true));
  const proto::DisputeGame game = ExpectTheSolverForfeitedTheGameOnSegment7(verifier);
  EXPECT_EQ(game.start_root(), TheTask().forced_root());
  EXPECT_EQ(game.proof_root(), RawHash(own.result.manifest.merkle_root));
  // Not paid and its lock gone (the reveal's fee aside); the honest verifier at least even.
  EXPECT_LE(Wealth(solver_), solver_before - solver_lock);
  EXPECT_GE(Wealth(honest_), honest_before);
}

TEST(SelectedForCheckTest, IsDeterministicAndAuditsTheGivenShare) {
  const std::string task(32, 't');
  const std::string self(32, 'w');
  int chosen = 0;
  for (std::uint32_t slot = 0; slot < 1000; ++slot) {
    EXPECT_TRUE(SelectedForCheck(task, slot, self, 1.0));
    EXPECT_FALSE(SelectedForCheck(task, slot, self, 0.0));
    const bool half = SelectedForCheck(task, slot, self, 0.5);
    EXPECT_EQ(SelectedForCheck(task, slot, self, 0.5), half);
    chosen += half ? 1 : 0;
  }
  // 1000 fair coin flips: ~16 standard deviations of room each side.
  EXPECT_GT(chosen, 250);
  EXPECT_LT(chosen, 750);
  // Another whistleblower audits other verdicts.
  int same = 0;
  for (std::uint32_t slot = 0; slot < 200; ++slot) {
    same += SelectedForCheck(task, slot, self, 0.5) == SelectedForCheck(task, slot, std::string(32, 'x'), 0.5);
  }
  EXPECT_LT(same, 150);
}

}  // namespace
}  // namespace polnode::node
