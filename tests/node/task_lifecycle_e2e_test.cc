// End to end: whole task life cycles on a real `polnode ledger` process, driven as a user would
// drive them: keys from `polnode keygen`, a home from `polnode init` whose genesis.json is edited
// for short windows, every transaction sent with `polnode tx <kind> --wait`, and every state read
// back over HTTP (GET /v1/tasks, /v1/accounts/{pk}, /v1/accounts/{pk}/stakes, /v1/jackpot,
// /v1/supply). Each case checks the final task record and that every balance moved exactly as
// contracts/settlement.h (and tasks.h, verification.h) say, fees included.
//
// Nothing here depends on timing beyond polling with generous deadlines: the windows a party must
// act in are hundreds of blocks long, the windows the test waits through are a few blocks long.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "polnode/consensus/hex.h"
#include "polnode/consensus/merkle.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/forced.h"
#include "polnode/rpc/ledger_json.h"
#include "polnode/rpc/http_client.h"
#include "polnode/testing/ledger_process.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using polnode::testing::LedgerProcess;
using polnode::testing::PolnodeBinary;
using polnode::testing::ReadFileText;
using polnode::testing::RunProcess;
using polnode::testing::TempDir;
using namespace std::chrono_literals;

// The ledger makes a block only when the test asks (--manual-blocks): a wait for the chain to get
// somewhere makes one block per look, up to this many. Every transaction is the test's own, so
// each step lands at the same height however fast the machine is.
constexpr int kMaxBlocksPerWait = 2000;

rapidjson::Document Json(const std::string& body) {
  rapidjson::Document d;
  d.Parse(body.c_str());
  return d;
}

std::uint64_t U64(const rapidjson::Value& v, const char* name) {
  return v.IsObject() && v.HasMember(name) && v[name].IsUint64() ? v[name].GetUint64() : UINT64_MAX;
}

std::string Str(const rapidjson::Value& v, const char* name) {
  return v.IsObject() && v.HasMember(name) && v[name].IsString() ? v[name].GetString() : "";
}

bool Bool(const rapidjson::Value& v, const char* name) {
  return v.IsObject() && v.HasMember(name) && v[name].IsBool() && v[name].GetBool();
}

// floor(amount * bps / 10000), as contracts/checked_math.h BpsOf computes it.
std::uint64_t BpsOf(std::uint64_t amount, std::uint64_t bps) {
  return amount / 10'000 * bps + amount % 10'000 * bps / 10'000;
}

std::string Hex32(char nibble) { return std::string(64, nibble); }

// The state hash the tasks here fix for checkpoint 0 (TaskSpec.initial_state_hash).
const std::string kInitialState = Hex32('9');
constexpr std::uint64_t kSegments = 4;  // 8 steps, 2 per checkpoint: segment 3 is the final one

// A proof's checkpoint hashes as a solver would commit them (no training behind them: the ledger
// sees only hashes unless a dispute is played): checkpoint 0 is the task's initial state, the others
// are named by `tag`.
struct FakeProof {
  std::vector<consensus::Hash256> hashes;
  std::string root;           // 64 hex
  std::string initial_proof;  // hex of the serialized Merkle proof of checkpoint 0

  explicit FakeProof(std::vector<consensus::Hash256> checkpoint_hashes) : hashes(std::move(checkpoint_hashes)) {
    const consensus::MerkleTree tree(hashes);
    root = consensus::ToHex(tree.root());
    initial_proof = ProofHex(0);
  }
  FakeProof(char tag, std::optional<consensus::Hash256> final_hash = std::nullopt) {
    consensus::Hash256 initial{};
    EXPECT_TRUE(consensus::HexToFixed(kInitialState, initial).ok());
    hashes.push_back(initial);
    for (std::uint64_t i = 1; i <= kSegments; ++i) hashes.push_back(consensus::Sha256(std::string(1, tag) + std::to_string(i)));
    if (final_hash) hashes.back() = *final_hash;
    const consensus::MerkleTree tree(hashes);
    root = consensus::ToHex(tree.root());
    initial_proof = ProofHex(0);
  }
  std::string ProofHex(std::uint64_t checkpoint) const {
    const consensus::MerkleTree tree(hashes);
    return consensus::ToHex(consensus::SerializeMerkleProof(*tree.Prove(checkpoint)));
  }
  std::string FinalHex() const { return consensus::ToHex(hashes.back()); }
};

// A key made by `polnode keygen`.
struct Actor {
  std::string name;
  std::string key_file;
  std::string pubkey;  // 64 hex
};

// What a task's money comes to, from the params and the payment (settlement.h).
struct TaskMoney {
  std::uint64_t payment = 0;
  std::uint64_t cut = 0;           // to the jackpot once verification starts, never refunded then
  std::uint64_t escrow = 0;        // E = payment - cut
  std::uint64_t fee_budget = 0;    // F = E * verifier_fee_bps / 10000
  std::uint64_t per_verifier = 0;  // F / assigned verifiers
  std::uint64_t solver_pay = 0;    // E - F
};

// Balances and the jackpot pool at one moment.
struct Snapshot {
  std::map<std::string, std::uint64_t> balance;  // by pubkey hex
  std::uint64_t jackpot = 0;
  std::uint64_t txs_sent = 0;  // transactions this test had committed by then
};

class TaskLifecycleE2ETest : public ::testing::Test {
 protected:
  static constexpr char kChain[] = "lifecycle-chain";
  // Odd, and at the genesis fee and cut rates neither the cut, the fee budget F nor its three shares
  // come out even, so every rounding remainder shows.
  static constexpr std::uint64_t kPayment = 1'000'037;
  static constexpr std::uint64_t kSolverStake = 2'000;
  static constexpr std::uint64_t kVerifierStake = 600;

  // Keys, a home whose genesis has short windows plus `overrides`, the ledger, and a funded and
  // staked solver and three verifiers (verifiers_per_task is 3, so all three are assigned).
  void StartChain(const std::map<std::string, std::uint64_t>& overrides = {}) {
    submitter_ = Keygen("submitter");
    solver_ = Keygen("solver");
    for (const char* name : {"verifier-a", "verifier-b", "verifier-c"}) verifiers_.push_back(Keygen(name));
    ASSERT_FALSE(HasFailure());

    home_ = dir_.File("home");
    auto init = RunProcess({PolnodeBinary(), "init", "--home", home_, "--chain-id", kChain, "--block-interval-ms",
                            "100", "--accounts", submitter_.pubkey + "=1000000000", "--json"});
    ASSERT_EQ(init.exit_code, 0) << init.err;
    producer_ = Str(Json(init.out), "pubkey");
    ASSERT_EQ(producer_.size(), 64u) << init.out;

    // Short waits, long acting windows, no random forced errors, a solver lock that splits
    // unevenly between two rejecters (locks at the minimum stakes, not scaled by the payment).
    std::map<std::string, std::uint64_t> params = {
        {"beacon_delay", 1},          {"verify_window", 600},   {"challenge_window", 3},
        {"reveal_window", 600},       {"forced_error_rate", 0}, {"min_stake_solver", 1'001},
        {"min_stake_verifier", 500},  {"verifiers_per_task", 3}, {"solver_lock_bps", 0},
        {"verifier_lock_bps", 0},     {"whistleblower_lock_bps", 0}};
    for (const auto& [name, value] : overrides) params[name] = value;
    const std::string genesis_path = home_ + "/genesis.json";
    rapidjson::Document genesis = Json(ReadFileText(genesis_path));
    ASSERT_TRUE(genesis.IsObject() && genesis.HasMember("params") && genesis["params"].IsObject());
    for (const auto& [name, value] : params) {
      ASSERT_TRUE(genesis["params"].HasMember(name.c_str())) << "genesis.json has no params." << name;
      genesis["params"][name.c_str()].SetUint64(value);
    }
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
    genesis.Accept(writer);
    std::ofstream(genesis_path, std::ios::binary | std::ios::trunc) << buffer.GetString() << "\n";

    ledger_ = std::make_unique<LedgerProcess>(home_, /*manual_blocks=*/true);
    ASSERT_TRUE(ledger_->Start());
    ready_ = true;
    const rapidjson::Document status = Json(Get("/v1/status"));
    ASSERT_EQ(Str(status, "chain_id"), kChain);
    ASSERT_EQ(Str(status, "producer"), producer_) << "the node key produces the blocks and earns the fees";
    params_ = Json(Get("/v1/params"));
    for (const auto& [name, value] : params) ASSERT_EQ(U64(params_, name.c_str()), value) << name;

    // Fund everyone from the submitter (no waiting: the CLI picks the pending nonce), then stake.
    std::vector<std::string> pending;
    for (const Actor* a : Participants()) {
      std::string id;
      ASSERT_TRUE(SendTx(submitter_, "transfer", {"--to", a->pubkey, "--amount", "10000"}, &id, /*wait=*/false));
      pending.push_back(id);
    }
    for (const std::string& id : pending) ASSERT_TRUE(AwaitTxOk(id));
    pending.clear();
    std::string id;
    ASSERT_TRUE(SendTx(solver_, "stake", {"--role", "solver", "--amount", std::to_string(kSolverStake)}, &id, false));
    pending.push_back(id);
    for (const Actor& v : verifiers_) {
      ASSERT_TRUE(SendTx(v, "stake", {"--role", "verifier", "--amount", std::to_string(kVerifierStake)}, &id, false));
      pending.push_back(id);
    }
    for (const std::string& tx : pending) ASSERT_TRUE(AwaitTxOk(tx));

    EXPECT_EQ(StakeField(solver_, "solver", "bonded"), kSolverStake);
    const rapidjson::Document set = Json(Get("/v1/verifiers"));
    ASSERT_TRUE(set.HasMember("verifiers") && set["verifiers"].IsArray()) << Get("/v1/verifiers");
    EXPECT_EQ(set["verifiers"].Size(), verifiers_.size());
    for (const Actor& v : verifiers_) {
      EXPECT_EQ(StakeField(v, "verifier", "bonded"), kVerifierStake);
      EXPECT_EQ(Balance(v), 10'000 - kVerifierStake - TxFee()) << v.name;
    }
  }

  void TearDown() override {
    if (!ready_) return;
    // The books balance however the task ended, and the node stops cleanly.
    const rapidjson::Document supply = Json(Get("/v1/supply"));
    EXPECT_TRUE(Bool(supply, "balanced")) << Get("/v1/supply");
    EXPECT_EQ(ledger_->Terminate(), 0) << ledger_->Log();
  }

  Actor Keygen(const std::string& name) {
    Actor a{name, keys_.File(name + ".key"), ""};
    auto r = RunProcess({PolnodeBinary(), "keygen", "--out", a.key_file, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    a.pubkey = Str(Json(r.out), "pubkey");
    EXPECT_EQ(a.pubkey.size(), 64u) << r.out;
    return a;
  }

  std::vector<const Actor*> Participants() const {
    std::vector<const Actor*> all = {&solver_};
    for (const Actor& v : verifiers_) all.push_back(&v);
    return all;
  }

  std::string Get(const std::string& target, int* status = nullptr) const {
    auto r = HttpCall(ledger_->endpoint(), "GET", target);
    EXPECT_TRUE(r.ok()) << target << ": " << r.status().ToString();
    if (status != nullptr) *status = r.ok() ? r->status : 0;
    return r.ok() ? r->body : "";
  }

  std::uint64_t TxFee() const { return U64(params_, "tx_fee"); }
  std::uint64_t Param(const char* name) const { return U64(params_, name); }

  std::uint64_t BalanceOf(const std::string& pubkey) const {
    return U64(Json(Get("/v1/accounts/" + pubkey)), "balance");
  }
  std::uint64_t Balance(const Actor& a) const { return BalanceOf(a.pubkey); }
  std::uint64_t Jackpot() const { return U64(Json(Get("/v1/jackpot")), "pool"); }

  std::uint64_t StakeField(const Actor& a, const char* role, const char* field) const {
    const rapidjson::Document d = Json(Get("/v1/accounts/" + a.pubkey + "/stakes"));
    return d.IsObject() && d.HasMember(role) ? U64(d[role], field) : UINT64_MAX;
  }

  Snapshot Take() const {
    Snapshot s;
    for (const std::string& pk : {submitter_.pubkey, solver_.pubkey, producer_}) s.balance[pk] = BalanceOf(pk);
    for (const Actor& v : verifiers_) s.balance[v.pubkey] = Balance(v);
    s.jackpot = Jackpot();
    s.txs_sent = txs_sent_;
    return s;
  }

  // Runs `polnode tx KIND ARGS --key ... --ledger ... --json [--wait]` and returns its tx id; with
  // wait, also checks the committed transaction took effect (a committed tx may have failed).
  ::testing::AssertionResult SendTx(const Actor& who, const std::string& kind, std::vector<std::string> args,
                                    std::string* tx_id = nullptr, bool wait = true) {
    std::vector<std::string> argv = {PolnodeBinary(), "tx", kind, "--key", who.key_file, "--ledger", ledger_->url(),
                                     "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    if (wait) argv.insert(argv.end(), {"--wait", "--wait-timeout-ms", "60000"});
    auto r = ledger_->RunCommitting(argv);
    if (r.exit_code != 0) {
      return ::testing::AssertionFailure() << who.name << " `polnode tx " << kind << "` exited " << r.exit_code << ": "
                                           << r.err << r.out;
    }
    const rapidjson::Document out = Json(r.out);
    const std::string id = Str(out, "tx_id");
    if (id.size() != 64) return ::testing::AssertionFailure() << "no tx_id in: " << r.out;
    if (Str(out, "signer") != who.pubkey) return ::testing::AssertionFailure() << "wrong signer in: " << r.out;
    if (wait && Str(out, "status") != "committed") return ::testing::AssertionFailure() << "not committed: " << r.out;
    ++txs_sent_;
    if (tx_id != nullptr) *tx_id = id;
    if (wait) return AwaitTxOk(id);
    return ::testing::AssertionSuccess();
  }

  // Polls GET /v1/txs/{id} until committed; success only if the payload took effect.
  ::testing::AssertionResult AwaitTxOk(const std::string& id) const {
    std::string body;
    for (int blocks = 0; blocks < kMaxBlocksPerWait; ++blocks) {
      int status = 0;
      body = Get("/v1/txs/" + id, &status);
      const rapidjson::Document d = Json(body);
      if (status == 200 && Str(d, "status") == "committed") {
        if (Str(d, "result") == "ok") return ::testing::AssertionSuccess();
        return ::testing::AssertionFailure() << "tx " << id << " committed but did not take effect: " << body;
      }
      if (status != 200) return ::testing::AssertionFailure() << "GET /v1/txs/" << id << " answered " << status << ": " << body;
      if (!ledger_->ProduceBlocks(1)) break;
    }
    return ::testing::AssertionFailure() << "tx " << id << " not committed in time: " << body;
  }

  // Polls GET /v1/tasks/{id} until `done` holds for the task JSON; returns the last body seen.
  std::string WaitTask(const std::string& id, const std::function<bool(const rapidjson::Value&)>& done,
                       const std::string& what) const {
    std::string body;
    for (int blocks = 0; blocks < kMaxBlocksPerWait; ++blocks) {
      body = Get("/v1/tasks/" + id);
      if (done(Json(body))) return body;
      if (!ledger_->ProduceBlocks(1)) break;
    }
    ADD_FAILURE() << "task " << id << " never reached: " << what << "\nlast: " << body << "\nstatus: " << Get("/v1/status");
    return body;
  }

  std::string WaitStatus(const std::string& id, const std::string& status) const {
    return WaitTask(id, [&](const rapidjson::Value& t) { return Str(t, "status") == status; }, status);
  }

  // submit-task through the CLI; returns the new task's id, found in GET /v1/tasks and checked
  // against the id anyone can compute offline (beacon.h TaskIdFor over the spec).
  std::string SubmitTask(std::uint64_t claim_window, std::uint64_t training_window) {
    proto::TaskSpec spec;
    spec.set_model_spec("mlp-2x16/seed-7");
    spec.set_dataset_hash(std::string(32, '\x11'));
    spec.set_hyperparameters_hash(std::string(32, '\x22'));
    spec.set_total_steps(8);
    spec.set_checkpoint_interval(2);
    spec.set_segments_per_verification(1);
    spec.set_payment(kPayment);
    spec.set_claim_window(claim_window);
    spec.set_training_window(training_window);
    spec.set_graph_root(std::string(32, '\x33'));
    spec.set_batch_root(std::string(32, '\x44'));
    spec.set_step_leaf_count(8);
    spec.set_state_tensor_count(2);
    spec.set_initial_state_hash(std::string(32, '\x99'));

    const std::uint64_t nonce = U64(Json(Get("/v1/accounts/" + submitter_.pubkey)), "nonce");
    const std::uint64_t count_before = U64(Json(Get("/v1/tasks")), "total");
    std::string tx_id;
    EXPECT_TRUE(SendTx(submitter_, "submit-task",
                       {"--model-spec", spec.model_spec(), "--dataset-hash", Hex32('1'), "--hyperparameters-hash",
                        Hex32('2'), "--total-steps", "8", "--checkpoint-interval", "2", "--segments", "1", "--payment",
                        std::to_string(kPayment), "--claim-window", std::to_string(claim_window), "--training-window",
                        std::to_string(training_window), "--spec-uri", "https://tasks.example/t.json", "--unchecked-spec-uri", "--graph-root",
                        Hex32('3'), "--batch-root", Hex32('4'), "--step-leaf-count", "8", "--state-tensor-count", "2",
                        "--initial-state-hash", kInitialState},
                       &tx_id));
    const std::array<std::uint8_t, 32> submitter_key = Unhex(submitter_.pubkey);
    const std::string expected_id = consensus::ToHex(contracts::TaskIdFor(
        contracts::TaskSpecHash(spec), std::string_view(reinterpret_cast<const char*>(submitter_key.data()), 32), nonce));

    const rapidjson::Document list = Json(Get("/v1/tasks?start=" + std::to_string(count_before)));
    EXPECT_EQ(U64(list, "total"), count_before + 1) << Get("/v1/tasks");
    if (!list.HasMember("tasks") || !list["tasks"].IsArray() || list["tasks"].Size() != 1) {
      ADD_FAILURE() << "the new task is not listed: " << Get("/v1/tasks");
      return expected_id;
    }
    const rapidjson::Value& task = list["tasks"][0];
    EXPECT_EQ(Str(task, "id"), expected_id);
    EXPECT_EQ(Str(task, "submitter"), submitter_.pubkey);
    EXPECT_EQ(Str(task, "status"), "TASK_OPEN");
    EXPECT_EQ(Str(task, "spec_hash"), consensus::ToHex(contracts::TaskSpecHash(spec)));
    EXPECT_EQ(U64(task, "escrow"), kPayment) << "the jackpot cut leaves the escrow only when verification starts";
    return Str(task, "id");
  }

  static std::array<std::uint8_t, 32> Unhex(const std::string& hex) {
    std::array<std::uint8_t, 32> out{};
    EXPECT_TRUE(consensus::HexToFixed(hex, out).ok()) << hex;
    return out;
  }

  TaskMoney Money(std::uint64_t assigned_verifiers) const {
    TaskMoney m;
    m.payment = kPayment;
    m.cut = BpsOf(kPayment, Param("jackpot_cut_bps"));
    m.escrow = kPayment - m.cut;
    m.fee_budget = BpsOf(m.escrow, Param("verifier_fee_bps"));
    m.per_verifier = assigned_verifiers == 0 ? 0 : m.fee_budget / assigned_verifiers;
    m.solver_pay = m.escrow - m.fee_budget;
    return m;
  }

  // Claim with `secret`, wait for the forced-error seed, commit `proof`, wait for the beacon and
  // the assignment of all three verifiers.
  void ClaimCommitAndAwaitAssignment(const std::string& task, const std::string& secret, const FakeProof& proof) {
    ClaimAndAwaitSeed(task, secret);
    if (HasFatalFailure()) return;
    CommitAndAwaitAssignment(task, proof);
  }

  void ClaimAndAwaitSeed(const std::string& task, const std::string& secret) {
    ASSERT_TRUE(SendTx(solver_, "claim-task", {"--task", task, "--secret", secret}));
    std::string t = Get("/v1/tasks/" + task);
    EXPECT_EQ(Str(Json(t), "solver"), solver_.pubkey) << t;
    EXPECT_EQ(StakeField(solver_, "solver", "locked"), Param("min_stake_solver"));
    // The proof may only be committed once the seed exists (tasks.h ExecuteCommitProof).
    t = WaitTask(task, [](const rapidjson::Value& v) { return Bool(v, "forced_seed_drawn"); }, "forced seed drawn");
    ASSERT_EQ(Str(Json(t), "status"), "TASK_CLAIMED") << t;
  }

  void CommitAndAwaitAssignment(const std::string& task, const FakeProof& proof) {
    const std::string& proof_root = proof.root;
    std::string t;
    // A commitment whose checkpoint 0 is not the task's initial state is refused.
    const FakeProof elsewhere('x', std::nullopt);
    FakeProof wrong_start = elsewhere;
    wrong_start.hashes[0] = consensus::Sha256("another start");
    const consensus::MerkleTree wrong_tree(wrong_start.hashes);
    std::string refused;
    ASSERT_TRUE(SendTx(solver_, "commit-proof",
                       {"--task", task, "--proof-root", consensus::ToHex(wrong_tree.root()), "--proof-uri",
                        "https://solver.example/proof", "--initial-proof", wrong_start.ProofHex(0)},
                       &refused, /*wait=*/false));
    EXPECT_FALSE(AwaitTxOk(refused));
    ASSERT_TRUE(SendTx(solver_, "commit-proof",
                       {"--task", task, "--proof-root", proof_root, "--proof-uri", "https://solver.example/proof",
                        "--initial-proof", proof.initial_proof}));
    t = Get("/v1/tasks/" + task);
    const std::string after_commit = Str(Json(t), "status");
    EXPECT_TRUE(after_commit == "TASK_COMMITTED" || after_commit == "TASK_VERIFYING") << t;
    EXPECT_EQ(Str(Json(t), "proof_root"), proof_root) << t;

    t = WaitStatus(task, "TASK_VERIFYING");
    const rapidjson::Document d = Json(t);
    EXPECT_NE(Str(d, "segment_beacon"), Hex32('0')) << t;
    ASSERT_TRUE(d.HasMember("verifiers") && d["verifiers"].IsArray()) << t;
    ASSERT_EQ(d["verifiers"].Size(), verifiers_.size()) << t;
    for (const Actor& v : verifiers_) {
      bool assigned = false;
      for (rapidjson::SizeType i = 0; i < d["verifiers"].Size(); ++i) {
        const rapidjson::Value& slot = d["verifiers"][i];
        if (Str(slot, "verifier") == v.pubkey) {
          assigned = true;
          EXPECT_EQ(Str(slot, "verdict"), "VERDICT_NONE") << t;
        }
      }
      EXPECT_TRUE(assigned) << v.name << " not assigned: " << t;
      EXPECT_EQ(StakeField(v, "verifier", "locked"), Param("min_stake_verifier")) << v.name;
    }
  }

  // The index of `verifier`'s slot of `task` (each test verifier stakes one lock: at most one slot).
  std::string SlotIndex(const std::string& task, const Actor& verifier) const {
    const std::string body = Get("/v1/tasks/" + task);
    const rapidjson::Document d = Json(body);
    EXPECT_TRUE(d.HasMember("verifiers") && d["verifiers"].IsArray()) << body;
    if (!d.HasMember("verifiers") || !d["verifiers"].IsArray()) return "";
    for (rapidjson::SizeType i = 0; i < d["verifiers"].Size(); ++i) {
      if (Str(d["verifiers"][i], "verifier") == verifier.pubkey) return std::to_string(i);
    }
    ADD_FAILURE() << verifier.name << " holds no slot: " << body;
    return "";
  }

  // One verdict per verifier (accept[i] for verifiers_[i]; a reject names the final segment with
  // the digest of an end its replay reached); then the challenge window passes undisputed.
  void VerdictsThenAwaitReveal(const std::string& task, const std::vector<bool>& accept) {
    std::vector<std::vector<std::uint64_t>> failed;
    for (bool a : accept) failed.push_back(a ? std::vector<std::uint64_t>{} : std::vector<std::uint64_t>{kSegments - 1});
    VerdictsThenAwaitReveal(task, failed, FakeProof('r').hashes);
  }

  // One verdict per verifier: failed[i] empty is verifiers_[i]'s accept, else its reject naming
  // those segments, each with SegmentDigest(its key, segment, ends[segment + 1]): the ends its
  // replay reached. Then the challenge window passes undisputed.
  void VerdictsThenAwaitReveal(const std::string& task, const std::vector<std::vector<std::uint64_t>>& failed,
                               const std::vector<consensus::Hash256>& ends) {
    ASSERT_EQ(failed.size(), verifiers_.size());
    std::vector<bool> accept;
    for (std::size_t i = 0; i < verifiers_.size(); ++i) {
      accept.push_back(failed[i].empty());
      std::vector<std::string> args = {"--task",        task, "--slot", SlotIndex(task, verifiers_[i]), "--verdict",
                                       accept[i] ? "accept" : "reject", "--report-hash",
                                       Hex32('a' + static_cast<char>(i))};
      if (!accept[i]) {
        const std::array<std::uint8_t, 32> key = Unhex(verifiers_[i].pubkey);
        std::string segments, digests;
        for (std::uint64_t s : failed[i]) {
          segments += (segments.empty() ? "" : ",") + std::to_string(s);
          const consensus::Hash256& end = ends[s + 1];
          digests += (digests.empty() ? "" : ",") +
                     consensus::ToHex(contracts::SegmentDigest(std::string_view(reinterpret_cast<const char*>(key.data()), 32), s,
                                                               std::string_view(reinterpret_cast<const char*>(end.data()), 32)));
        }
        args.insert(args.end(), {"--failed-segments", segments, "--segment-digests", digests});
      }
      ASSERT_TRUE(SendTx(verifiers_[i], "verdict", args));
    }
    // The last verdict opens the challenge window at once; nobody disputes; it closes by itself.
    const std::string t = WaitStatus(task, "TASK_REVEALING");
    const rapidjson::Document d = Json(t);
    ASSERT_TRUE(d.HasMember("verifiers") && d["verifiers"].IsArray()) << t;
    for (rapidjson::SizeType i = 0; i < d["verifiers"].Size(); ++i) {
      const rapidjson::Value& slot = d["verifiers"][i];
      for (std::size_t k = 0; k < verifiers_.size(); ++k) {
        if (Str(slot, "verifier") != verifiers_[k].pubkey) continue;
        EXPECT_EQ(Str(slot, "verdict"), accept[k] ? "VERDICT_ACCEPT" : "VERDICT_REJECT") << t;
        EXPECT_EQ(Str(slot, "report_hash"), Hex32('a' + static_cast<char>(k))) << t;
        EXPECT_FALSE(Bool(slot, "disputed")) << t;
      }
    }
  }

  void ExpectClosed(const std::string& body, const char* status, const char* outcome) const {
    const rapidjson::Document d = Json(body);
    EXPECT_EQ(Str(d, "status"), status) << body;
    EXPECT_EQ(Str(d, "outcome"), outcome) << body;
    EXPECT_EQ(U64(d, "escrow"), 0u) << "a closed task holds no escrow: " << body;
    EXPECT_EQ(U64(d, "deadline"), 0u) << body;
    EXPECT_NE(U64(d, "settle_height"), 0u) << body;
  }

  // Fees: every committed tx since `before` paid tx_fee to the producer.
  void ExpectProducerFees(const Snapshot& before) const {
    EXPECT_EQ(BalanceOf(producer_), before.balance.at(producer_) + (txs_sent_ - before.txs_sent) * TxFee());
  }

  TempDir dir_;
  TempDir keys_;
  std::string home_;
  std::string producer_;
  Actor submitter_;
  Actor solver_;
  std::vector<Actor> verifiers_;
  std::unique_ptr<LedgerProcess> ledger_;
  bool ready_ = false;
  rapidjson::Document params_;
  std::uint64_t txs_sent_ = 0;
};

const std::string kSecret = Hex32('5');  // the solver's 32-byte claim secret

TEST_F(TaskLifecycleE2ETest, AcceptedTaskPaysSolverAndVerifiersAndRefundsDust) {
  ASSERT_NO_FATAL_FAILURE(StartChain());
  const Snapshot before = Take();
  const std::string task = SubmitTask(/*claim_window=*/600, /*training_window=*/600);
  ASSERT_FALSE(HasFailure());
  const FakeProof proof('p');
  ASSERT_NO_FATAL_FAILURE(ClaimCommitAndAwaitAssignment(task, kSecret, proof));
  ASSERT_NO_FATAL_FAILURE(VerdictsThenAwaitReveal(task, {true, true, true}));

  // The reveal must match the commitment: a wrong secret is refused and changes nothing.
  std::string bad_id;
  ASSERT_TRUE(SendTx(solver_, "reveal", {"--task", task, "--secret", Hex32('6'), "--result-root", proof.root}, &bad_id,
                     /*wait=*/false));
  EXPECT_FALSE(AwaitTxOk(bad_id));
  EXPECT_NE(Get("/v1/txs/" + bad_id).find("commitment"), std::string::npos) << Get("/v1/txs/" + bad_id);
  EXPECT_EQ(Str(Json(Get("/v1/tasks/" + task)), "status"), "TASK_REVEALING");

  ASSERT_TRUE(SendTx(solver_, "reveal", {"--task", task, "--secret", kSecret, "--result-root", proof.root}));
  const std::string t = Get("/v1/tasks/" + task);
  ExpectClosed(t, "TASK_SETTLED", "OUTCOME_ACCEPTED");
  const rapidjson::Document d = Json(t);
  EXPECT_FALSE(Bool(d, "forced_error")) << t;
  EXPECT_EQ(Str(d, "result_root"), proof.root) << t;
  EXPECT_EQ(Str(d, "standing"), "PROOF_UPHELD") << t;

  const TaskMoney m = Money(3);
  const std::uint64_t fee = TxFee();
  const std::uint64_t dust = m.fee_budget - 3 * m.per_verifier;
  EXPECT_GT(dust, 0u) << "the payment was chosen so that F does not split evenly";
  // Submitter: paid the payment and one fee; gets the unpaid rounding dust of F back.
  EXPECT_EQ(Balance(submitter_), before.balance.at(submitter_.pubkey) - kPayment - fee + dust);
  // Solver: E - F, less its claim, refused commit, commit, failed reveal and reveal fees; its lock
  // is released.
  EXPECT_EQ(Balance(solver_), before.balance.at(solver_.pubkey) + m.solver_pay - 5 * fee);
  EXPECT_EQ(StakeField(solver_, "solver", "bonded"), kSolverStake);
  EXPECT_EQ(StakeField(solver_, "solver", "locked"), 0u);
  for (const Actor& v : verifiers_) {
    EXPECT_EQ(Balance(v), before.balance.at(v.pubkey) + m.per_verifier - fee) << v.name;
    EXPECT_EQ(StakeField(v, "verifier", "bonded"), kVerifierStake) << v.name;
    EXPECT_EQ(StakeField(v, "verifier", "locked"), 0u) << v.name;
  }
  EXPECT_EQ(Jackpot(), before.jackpot + m.cut) << "the jackpot cut is kept once verification started";
  ExpectProducerFees(before);
}

// A reject the solver does not dispute stands: the proof is unproven, the solver is not paid and
// its lock goes to the rejecters; the accepter is neither paid nor slashed (nothing was disproven).
TEST_F(TaskLifecycleE2ETest, UndisputedRejectStandsAndSlashesTheSolverToTheRejecters) {
  ASSERT_NO_FATAL_FAILURE(StartChain());
  const Snapshot before = Take();
  const std::string task = SubmitTask(600, 600);
  ASSERT_FALSE(HasFailure());
  const FakeProof proof('p');
  ASSERT_NO_FATAL_FAILURE(ClaimCommitAndAwaitAssignment(task, kSecret, proof));
  // verifier-a and verifier-b reject, verifier-c accepts.
  ASSERT_NO_FATAL_FAILURE(VerdictsThenAwaitReveal(task, {false, false, true}));
  ASSERT_TRUE(SendTx(solver_, "reveal", {"--task", task, "--secret", kSecret, "--result-root", proof.root}));

  const std::string t = Get("/v1/tasks/" + task);
  ExpectClosed(t, "TASK_SETTLED", "OUTCOME_REJECTED");
  EXPECT_FALSE(Bool(Json(t), "forced_error")) << t;
  EXPECT_EQ(Str(Json(t), "standing"), "PROOF_UNPROVEN") << t;

  const TaskMoney m = Money(3);
  const std::uint64_t fee = TxFee();
  const std::uint64_t lock = Param("min_stake_solver");
  const std::uint64_t slash_share = lock / 2;
  const std::uint64_t slash_dust = lock - 2 * slash_share;
  EXPECT_EQ(slash_dust, 1u) << "min_stake_solver 1001 splits unevenly between two rejecters";
  // The solver is not paid: the submitter gets E back less the two rejecters' fees.
  EXPECT_EQ(Balance(submitter_), before.balance.at(submitter_.pubkey) - kPayment - fee + m.escrow - 2 * m.per_verifier);
  // The solver loses its lock (out of its bonded stake) and pays claim, two commit and reveal fees.
  EXPECT_EQ(Balance(solver_), before.balance.at(solver_.pubkey) - 4 * fee);
  EXPECT_EQ(StakeField(solver_, "solver", "bonded"), kSolverStake - lock);
  EXPECT_EQ(StakeField(solver_, "solver", "locked"), 0u);
  // Rejecters: their fee share plus half the solver's lock each; the accepter: released unpaid.
  EXPECT_EQ(Balance(verifiers_[0]), before.balance.at(verifiers_[0].pubkey) + m.per_verifier + slash_share - fee);
  EXPECT_EQ(Balance(verifiers_[1]), before.balance.at(verifiers_[1].pubkey) + m.per_verifier + slash_share - fee);
  EXPECT_EQ(Balance(verifiers_[2]), before.balance.at(verifiers_[2].pubkey) - fee);
  for (const Actor& v : verifiers_) {
    EXPECT_EQ(StakeField(v, "verifier", "bonded"), kVerifierStake) << v.name;
    EXPECT_EQ(StakeField(v, "verifier", "locked"), 0u) << v.name;
  }
  // The cut, and the slash's remainder that does not split.
  EXPECT_EQ(Jackpot(), before.jackpot + m.cut + slash_dust);
  ExpectProducerFees(before);
}

TEST_F(TaskLifecycleE2ETest, UnclaimedTaskTimesOutAndRefundsThePaymentInFull) {
  ASSERT_NO_FATAL_FAILURE(StartChain());
  const Snapshot before = Take();
  const std::string task = SubmitTask(/*claim_window=*/3, /*training_window=*/600);
  ASSERT_FALSE(HasFailure());
  const std::string t = WaitStatus(task, "TASK_CANCELLED");
  ExpectClosed(t, "TASK_CANCELLED", "OUTCOME_UNCLAIMED");
  EXPECT_EQ(Str(Json(t), "solver"), "") << t;

  // A late claim is refused and locks nothing.
  std::string late;
  ASSERT_TRUE(SendTx(solver_, "claim-task", {"--task", task, "--secret", kSecret}, &late, /*wait=*/false));
  EXPECT_FALSE(AwaitTxOk(late));
  EXPECT_EQ(StakeField(solver_, "solver", "locked"), 0u);

  EXPECT_EQ(Balance(submitter_), before.balance.at(submitter_.pubkey) - TxFee())
      << "nobody trained: the whole payment comes back, the jackpot cut included";
  EXPECT_EQ(Balance(solver_), before.balance.at(solver_.pubkey) - TxFee());
  EXPECT_EQ(Jackpot(), before.jackpot);
  ExpectProducerFees(before);
}

TEST_F(TaskLifecycleE2ETest, SolverThatNeverCommitsIsSlashedToTheJackpot) {
  ASSERT_NO_FATAL_FAILURE(StartChain());
  const Snapshot before = Take();
  const std::string task = SubmitTask(/*claim_window=*/600, /*training_window=*/3);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(SendTx(solver_, "claim-task", {"--task", task, "--secret", kSecret}));
  const std::string t = WaitStatus(task, "TASK_CANCELLED");
  ExpectClosed(t, "TASK_CANCELLED", "OUTCOME_NO_COMMIT");
  EXPECT_EQ(Str(Json(t), "solver"), solver_.pubkey) << t;

  const std::uint64_t lock = Param("min_stake_solver");
  // The submitter gets its payment back but not the lock (it could be the solver under a second key).
  EXPECT_EQ(Balance(submitter_), before.balance.at(submitter_.pubkey) - TxFee());
  EXPECT_EQ(Balance(solver_), before.balance.at(solver_.pubkey) - TxFee());
  EXPECT_EQ(StakeField(solver_, "solver", "bonded"), kSolverStake - lock);
  EXPECT_EQ(StakeField(solver_, "solver", "locked"), 0u);
  EXPECT_EQ(Jackpot(), before.jackpot + lock);
  ExpectProducerFees(before);
}

TEST_F(TaskLifecycleE2ETest, SolverThatNeverRevealsLeavesItsProofUnprovenAndPaysTheJackpot) {
  ASSERT_NO_FATAL_FAILURE(StartChain({{"reveal_window", 3}}));
  const Snapshot before = Take();
  const std::string task = SubmitTask(600, 600);
  ASSERT_FALSE(HasFailure());
  const FakeProof proof('p');
  ASSERT_NO_FATAL_FAILURE(ClaimCommitAndAwaitAssignment(task, kSecret, proof));
  // The reveal window (3 blocks) may pass before this test sees TASK_REVEALING, so wait for the end.
  for (std::size_t i = 0; i < verifiers_.size(); ++i) {
    ASSERT_TRUE(SendTx(verifiers_[i], "verdict",
                       {"--task", task, "--slot", SlotIndex(task, verifiers_[i]), "--verdict", "accept", "--report-hash",
                        Hex32('a')}));
  }
  const std::string t = WaitStatus(task, "TASK_SETTLED");
  ExpectClosed(t, "TASK_SETTLED", "OUTCOME_NO_REVEAL");

  const TaskMoney m = Money(3);
  const std::uint64_t fee = TxFee();
  const std::uint64_t lock = Param("min_stake_solver");
  // An unproven proof pays nobody: the escrow comes back, the accepters are released unpaid, and
  // with no claim against the proof the solver's lock goes to the jackpot.
  EXPECT_EQ(Balance(submitter_), before.balance.at(submitter_.pubkey) - kPayment - fee + m.escrow);
  EXPECT_EQ(Balance(solver_), before.balance.at(solver_.pubkey) - 3 * fee);
  EXPECT_EQ(StakeField(solver_, "solver", "bonded"), kSolverStake - lock);
  EXPECT_EQ(StakeField(solver_, "solver", "locked"), 0u);
  for (const Actor& v : verifiers_) {
    EXPECT_EQ(Balance(v), before.balance.at(v.pubkey) - fee) << v.name;
    EXPECT_EQ(StakeField(v, "verifier", "locked"), 0u) << v.name;
  }
  EXPECT_EQ(Jackpot(), before.jackpot + m.cut + lock);
  ExpectProducerFees(before);
}

// forced_error_rate 1 makes every round forced (beacon.h IsForcedError: x % 1 == 0), so the
// forced-round settlement runs deterministically. Once the seed is drawn the solver knows its
// forced checkpoints (beacon.h ForcedCheckpoints) and commits a proof falsified exactly there; the
// result proof has the honest hashes. The first two verifiers replay: each rejects exactly its
// covered segments (its drawn one and the final one) that end at a forced checkpoint, committing
// to the result proof's hash there (or accepts when none does); the third accepts without
// replaying. At the reveal the solver shows exactly the checkpoints the ledger needs
// (contracts/forced.h RevealCheckpoints) in both proofs.
TEST_F(TaskLifecycleE2ETest, ForcedRoundPaysTheVerifiersThatWereRightAndSlashesAWrongAccepter) {
  ASSERT_NO_FATAL_FAILURE(StartChain({{"forced_error_rate", 1}}));
  const Snapshot before = Take();
  const std::string task = SubmitTask(600, 600);
  ASSERT_FALSE(HasFailure());
  ASSERT_NO_FATAL_FAILURE(ClaimAndAwaitSeed(task, kSecret));
  Result<proto::Task> claimed = DecodeTask(Get("/v1/tasks/" + task));
  ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
  const std::array<std::uint8_t, 32> secret_raw = Unhex(kSecret);
  const std::string secret(reinterpret_cast<const char*>(secret_raw.data()), 32);
  const std::vector<std::uint64_t> forced =
      contracts::ForcedCheckpoints(secret, claimed->forced_seed(), claimed->id(), kSegments);
  ASSERT_FALSE(forced.empty());
  const FakeProof result('h');
  FakeProof committed('h');
  for (std::uint64_t k : forced) committed.hashes[k] = consensus::Sha256("falsified " + std::to_string(k));
  committed = FakeProof(committed.hashes);
  ASSERT_NO_FATAL_FAILURE(CommitAndAwaitAssignment(task, committed));

  // Covered segments ending at a forced checkpoint, per verifier.
  Result<proto::Task> assigned = DecodeTask(Get("/v1/tasks/" + task));
  ASSERT_TRUE(assigned.ok());
  const auto wrong_at = [&](const Actor& v) {
    std::vector<std::uint64_t> covered;
    for (const proto::VerifierSlot& slot : assigned->verifiers()) {
      if (consensus::ToHex(slot.verifier()) == v.pubkey) covered.assign(slot.segments().begin(), slot.segments().end());
    }
    if (std::find(covered.begin(), covered.end(), kSegments - 1) == covered.end()) covered.push_back(kSegments - 1);
    std::sort(covered.begin(), covered.end());
    std::vector<std::uint64_t> out;
    for (std::uint64_t s : covered) {
      if (std::find(forced.begin(), forced.end(), s + 1) != forced.end()) out.push_back(s);
    }
    return out;
  };
  const std::vector<std::vector<std::uint64_t>> failed = {wrong_at(verifiers_[0]), wrong_at(verifiers_[1]), {}};
  const bool lazy_right = wrong_at(verifiers_[2]).empty();
  ASSERT_NO_FATAL_FAILURE(VerdictsThenAwaitReveal(task, failed, result.hashes));

  // A forced round's reveal must name the result proof, not the committed one.
  std::string wrong;
  ASSERT_TRUE(SendTx(solver_, "reveal", {"--task", task, "--secret", kSecret, "--result-root", committed.root}, &wrong,
                     /*wait=*/false));
  EXPECT_FALSE(AwaitTxOk(wrong));
  Result<proto::Task> revealing = DecodeTask(Get("/v1/tasks/" + task));
  ASSERT_TRUE(revealing.ok());
  const std::vector<std::uint64_t> shown = contracts::RevealCheckpoints(*revealing);
  ASSERT_FALSE(shown.empty());
  EXPECT_EQ(shown.back(), kSegments);
  const auto leaves = [&](const FakeProof& ends) {
    std::string out;
    for (std::uint64_t k : shown) {
      out += (out.empty() ? "" : ",") + std::to_string(k) + ":" + consensus::ToHex(committed.hashes[k]) + ":" +
             committed.ProofHex(k) + ":" + consensus::ToHex(ends.hashes[k]) + ":" + ends.ProofHex(k);
    }
    return out;
  };
  // Nor a result proof that differs from the committed one elsewhere than at the forced checkpoints,
  // or agrees with it at one: here at the first checkpoint shown.
  std::vector<consensus::Hash256> other_hashes = result.hashes;
  const std::uint64_t first = shown.front();
  const bool first_forced = std::find(forced.begin(), forced.end(), first) != forced.end();
  other_hashes[first] = first_forced ? committed.hashes[first] : consensus::Sha256("another result");
  const FakeProof other(other_hashes);
  ASSERT_TRUE(SendTx(solver_, "reveal",
                     {"--task", task, "--secret", kSecret, "--result-root", other.root, "--leaves", leaves(other)}, &wrong,
                     /*wait=*/false));
  EXPECT_FALSE(AwaitTxOk(wrong));
  ASSERT_TRUE(SendTx(solver_, "reveal", {"--task", task, "--secret", kSecret, "--result-root", result.root, "--leaves", leaves(result)}));

  const std::string t = Get("/v1/tasks/" + task);
  ExpectClosed(t, "TASK_SETTLED", "OUTCOME_FORCED_ERROR");
  const rapidjson::Document d = Json(t);
  EXPECT_TRUE(Bool(d, "forced_error")) << t;
  EXPECT_EQ(Str(d, "result_root"), result.root) << t;
  EXPECT_EQ(Str(d, "forced_root"), committed.root) << t;
  ASSERT_TRUE(d.HasMember("forced_checkpoints") && d["forced_checkpoints"].IsArray()) << t;
  ASSERT_TRUE(d.HasMember("honest_hashes") && d["honest_hashes"].IsArray()) << t;
  EXPECT_EQ(d["forced_checkpoints"].Size(), d["honest_hashes"].Size()) << t;
  for (rapidjson::SizeType i = 0; i < d["forced_checkpoints"].Size(); ++i) {
    const std::uint64_t k = d["forced_checkpoints"][i].GetUint64();
    EXPECT_NE(std::find(forced.begin(), forced.end(), k), forced.end()) << t;
    EXPECT_EQ(std::string(d["honest_hashes"][i].GetString()), consensus::ToHex(result.hashes[k])) << t;
  }
  for (rapidjson::SizeType i = 0; i < d["verifiers"].Size(); ++i) {
    const rapidjson::Value& slot = d["verifiers"][i];
    for (std::size_t k = 0; k < 2; ++k) {
      if (Str(slot, "verifier") == verifiers_[k].pubkey) {
        EXPECT_TRUE(Bool(slot, "vouched")) << t;
      }
    }
    if (Str(slot, "verifier") == verifiers_[2].pubkey) {
      EXPECT_EQ(Bool(slot, "vouched"), lazy_right) << t;
    }
  }

  const TaskMoney m = Money(3);
  const std::uint64_t fee = TxFee();
  const std::uint64_t verifier_lock = Param("min_stake_verifier");
  // A wrong accepter's lock goes to the pool first; then the catchers (right rejects) split the payout.
  std::size_t catchers = 0;
  for (const auto& f : failed) catchers += f.empty() ? 0 : 1;
  const std::uint64_t pool = before.jackpot + m.cut + (lazy_right ? 0 : verifier_lock);
  const std::uint64_t payout =
      catchers == 0 ? 0 : std::min(BpsOf(pool, Param("jackpot_payout_bps")), BpsOf(kPayment, Param("jackpot_payout_cap_bps")));
  const std::uint64_t catcher_share = catchers == 0 ? 0 : payout / catchers;
  EXPECT_EQ(Jackpot(), pool - catchers * catcher_share);
  // The solver followed the rules: paid E - F, lock released (claim, 2 commits, 3 reveals in fees).
  EXPECT_EQ(Balance(solver_), before.balance.at(solver_.pubkey) + m.solver_pay - 6 * fee);
  EXPECT_EQ(StakeField(solver_, "solver", "bonded"), kSolverStake);
  EXPECT_EQ(StakeField(solver_, "solver", "locked"), 0u);
  // Right verdicts: the fee share, a catcher also a jackpot share; a wrong accept: its lock slashed.
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(Balance(verifiers_[i]), before.balance.at(verifiers_[i].pubkey) + m.per_verifier +
                                          (failed[i].empty() ? 0 : catcher_share) - fee);
    EXPECT_EQ(StakeField(verifiers_[i], "verifier", "bonded"), kVerifierStake);
  }
  EXPECT_EQ(Balance(verifiers_[2]), before.balance.at(verifiers_[2].pubkey) + (lazy_right ? m.per_verifier : 0) - fee);
  EXPECT_EQ(StakeField(verifiers_[2], "verifier", "bonded"), kVerifierStake - (lazy_right ? 0 : verifier_lock));
  for (const Actor& v : verifiers_) EXPECT_EQ(StakeField(v, "verifier", "locked"), 0u) << v.name;
  // The submitter gets back the unpaid shares and the dust.
  EXPECT_EQ(Balance(submitter_), before.balance.at(submitter_.pubkey) - kPayment - fee + m.escrow - m.solver_pay -
                                     (lazy_right ? 3 : 2) * m.per_verifier);
  ExpectProducerFees(before);
}

}  // namespace
}  // namespace polnode::node
