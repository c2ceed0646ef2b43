#include "polnode/devnet/devnet.h"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <sstream>
#include <thread>

#include "polnode/devnet/child_process.h"
#include "polnode/devnet/validator_network.h"
#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/key_file.h"
#include "polnode/contracts/dispute_audit.h"
#include "polnode/contracts/locks.h"
#include "polnode/kernels/op.h"
#include "polnode/roles/role_runtime.h"
#include "polnode/roles/solver_role.h"
#include "polnode/rpc/genesis_json.h"
#include "polnode/rpc/http_client.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/ledger_client.h"
#include "polnode/rpc/node_home.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/init.h"
#include "polnode/solver/onnx_model.h"
#include "polnode/solver/onnx_origin.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/task_steps.h"

namespace polnode::node {
namespace {

constexpr std::int64_t kGenesisBalance = 10'000'000;
// Verifier slots of each task (see Devnet's params).
constexpr std::uint32_t kSlotsPerTask = 9;

// One process of the devnet.
struct Member {
  std::string name;       // also its home's and log's name
  std::string role;       // the polnode subcommand
  std::vector<std::string> extra_flags;
  std::string pubkey;     // raw
  std::string url;        // its HTTP server, once started
  std::optional<ChildProcess> process;
};

std::string FieldOf(const std::string& json_line, const char* field) {
  Result<rapidjson::Document> doc = ParseJson(json_line);
  if (!doc.ok() || !doc->IsObject() || !doc->HasMember(field) || !(*doc)[field].IsString()) return "";
  return (*doc)[field].GetString();
}

// The value of `metric` in a Prometheus text body, 0 when absent.
double MetricValue(const std::string& body, const std::string& metric) {
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(metric + " ", 0) == 0) return std::strtod(line.c_str() + metric.size() + 1, nullptr);
  }
  return 0;
}

// The /metrics body of the role serving at `url`; kUnavailable when it does not answer.
Result<std::string> Scrape(const std::string& url) {
  POLNODE_ASSIGN_OR_RETURN(HttpEndpoint endpoint, ParseHttpUrl(url));
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(endpoint, "GET", "/metrics"));
  if (r.status != 200) return Status::Unavailable(url + "/metrics answered " + std::to_string(r.status));
  return std::move(r.body);
}

double ScrapeMetric(const std::string& url, const std::string& metric) {
  Result<std::string> body = Scrape(url);
  return body.ok() ? MetricValue(*body, metric) : 0;
}

// Role passes (role_runtime.cc passes_total) that must end after a block before the next one is
// made: the first may have begun before the block; the second began after it, saw it and sent
// what it made due, and set the gauges the third reports.
constexpr double kPassesPerBlock = 3;

// --own-model-and-data's files, in the submitter's home: its data set and its ONNX model.
struct OwnFiles {
  std::string data_dir;
  std::string model;       // "onnx:<sha256>"
  std::string model_file;
};

// Copies the data set's files into DIR/submitter/own-data and exports the image model's initial
// state (the task seed's) as DIR/submitter/own-model.onnx.
Result<OwnFiles> WriteOwnModelAndData(const DevnetOptions& o) {
  if (solver::IsGptSpec(o.model)) return Status::InvalidArgument("--own-model-and-data takes an mlp: or cnn: --model");
  OwnFiles own;
  own.data_dir = o.home + "/submitter/own-data";
  std::error_code ec;
  std::filesystem::create_directories(own.data_dir, ec);
  if (ec) return Status::IOError("cannot create " + own.data_dir + ": " + ec.message());
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::string> files, solver::DatasetFiles(o.model, o.data));
  for (const std::string& f : files) {
    std::filesystem::copy_file(f, own.data_dir + "/" + std::filesystem::path(f).filename().string(),
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) return Status::IOError("cannot copy " + f + ": " + ec.message());
  }
  POLNODE_ASSIGN_OR_RETURN(solver::ModelSpec model, solver::ParseModelSpec(o.model));
  POLNODE_ASSIGN_OR_RETURN(std::string onnx,
                           solver::ExportOnnx(model, solver::InitialState(model, solver::OptimizerKind::kSgd, 1000)));
  own.model_file = o.home + "/submitter/own-model.onnx";
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(own.model_file, onnx));
  own.model = "onnx:" + consensus::ToHex(consensus::Sha256(onnx));
  return own;
}

std::string TaskToml(const DevnetOptions& o, const std::string& dataset_hash, int index, const OwnFiles* own) {
  std::ostringstream t;
  t << "# devnet task " << index << "\n"
    << "model = \"" << (own ? own->model : o.model) << "\"\n"
    << (own ? "model_file = \"" + own->model_file + "\"\n" : "")
    << "data = \"" << (own ? own->data_dir : o.data) << "\"\n"
    << "dataset_hash = \"" << dataset_hash << "\"\n"
    // A GPT trains with AdamW (nanoGPT's learning rate and weight decay); the image models with
    // SGD and momentum.
    << (solver::IsGptSpec(o.model) ? "optimizer = \"adam\"\nlr = 0.001\nweight_decay = 0.1\n"
                                   : "optimizer = \"sgd\"\nlr = 0.05\nmomentum = 0.9\nweight_decay = 0\n")
    << "batch = " << o.batch << "\n"
    << "steps = " << o.steps << "\n"
    << "checkpoint_interval = " << o.checkpoint_interval << "\n"
    << "seed = " << 1000 + index << "\n"
    << "mode = \"exact\"\n"
    << "segments = " << o.segments << "\n";
  return t.str();
}

// The devnet's default cheat: the first optimizer update of a weight matrix. Its output is the
// state itself, so a flipped mantissa bit of element 0 (a random initial weight, never 0) lives on
// in every later checkpoint. A tamper in the forward pass can vanish: a logit of a class that a
// trained model rules out for the sample moves that class's probability by less than one rounding
// of the gradient sums (at step 1,949 of a 2,000-step MLP run, the logits' bias add and matmul
// both left the proof bit for bit honest).
Result<std::string> WeightUpdateNode(const solver::TaskSpec& task, const solver::ImageDataset& data) {
  POLNODE_ASSIGN_OR_RETURN(solver::TaskStepper stepper, solver::TaskStepper::Create(task, data));
  for (const solver::StepNode& node : stepper.graph().nodes) {
    if (!node.state_writes.empty() && node.state_writes[0] >= 0 && node.output_shapes[0].size() >= 2) return node.name;
  }
  return Status::InvalidArgument("model " + task.model + " has no weight matrix to cheat at");
}

// How a game ended, in contracts.proto's words (GameResult), read from the game record.
std::string ResultName(const proto::DisputeGame& game) {
  if (game.phase() != proto::GAME_RESOLVED) return "undecided";
  if (game.both_forfeited()) return proto::GameResult_Name(proto::GAME_BOTH_FORFEIT);
  if (game.forfeit()) {
    return proto::GameResult_Name(game.challenger_won() ? proto::GAME_DEFENDER_FORFEIT : proto::GAME_CHALLENGER_FORFEIT);
  }
  return proto::GameResult_Name(game.challenger_won() ? proto::GAME_CHALLENGER_WON : proto::GAME_DEFENDER_WON);
}

class Devnet {
 public:
  Devnet(const DevnetOptions& options, std::ostream& progress, Clock& clock)
      : o_(options), progress_(progress), clock_(clock) {}
  ~Devnet() { StopAll(); }

  Result<DevnetReport> Run();

 private:
  Status SetUp();
  Result<std::string> StartLedger(const std::string& listen);
  Status Start(Member& m);
  Status WaitForStakes();
  Status Monitor();
  Status PaceBlocks();
  Status RestartMidTask();
  Status LedgerOutage();
  Status StartValidators(const GenesisFile& genesis);
  Status KillValidatorMidTask();
  Status CheckValidators();
  const std::string& LedgerUrlFor(const Member& m) const;
  Status CollectReport();
  void StopAll();
  std::string NameOf(std::string_view pubkey) const;
  std::string Log(const std::string& name) const { return o_.home + "/logs/" + name + ".log"; }

  DevnetOptions o_;
  std::ostream& progress_;
  Clock& clock_;
  std::string self_;
  std::string dataset_hash_;
  std::vector<std::string> task_files_;
  // --own-model-and-data's ONNX model, imported: the report names the file's node of a pinpoint.
  std::optional<solver::OnnxImport> own_model_;
  std::optional<ChildProcess> ledger_process_;
  std::string ledger_listen_;  // HOST:PORT, kept across a restart: every role was given this address
  std::string ledger_pubkey_;
  std::optional<LedgerClient> ledger_;
  std::vector<Member> members_;
  DevnetReport report_;
  std::map<std::string, std::map<std::string, double>> status_seconds_;  // task hex -> status -> s
  Clock::TimePoint started_;
  // PaceBlocks: when the last block was made, and each role's pass count then.
  Clock::TimePoint last_block_;
  std::map<std::string, double> passes_at_block_;
  // Guards members_' processes and URLs, which RestartMidTask replaces while Monitor reads them.
  std::mutex members_mu_;
  std::unique_ptr<ValidatorNetwork> validators_;  // with o_.validators > 0, instead of the ledger process
};

std::string Devnet::NameOf(std::string_view pubkey) const {
  if (pubkey.empty()) return "";
  if (pubkey == ledger_pubkey_) return "ledger";
  for (const Member& m : members_) {
    if (m.pubkey == pubkey) return m.name;
  }
  return consensus::ToHex(pubkey).substr(0, 16);
}

Status Devnet::SetUp() {
  std::error_code ec;
  if (std::filesystem::exists(o_.home + "/ledger", ec)) {
    return Status::AlreadyExists(o_.home + " already holds a devnet; give a new --home");
  }
  for (const char* sub : {"logs", "tasks"}) {
    std::filesystem::create_directories(o_.home + "/" + sub, ec);
    if (ec) return Status::IOError("cannot create " + o_.home + "/" + sub + ": " + ec.message());
  }
  POLNODE_ASSIGN_OR_RETURN(self_, SelfExecutable());

  progress_ << "devnet: loading " << o_.data << " to name it by its content hash" << std::endl;
  POLNODE_ASSIGN_OR_RETURN(solver::ImageDataset data, solver::LoadDatasetFor(o_.model, o_.data));
  dataset_hash_ = consensus::ToHex(solver::DatasetContentHash(data));
  std::optional<OwnFiles> own;
  if (o_.own_model_and_data) {
    POLNODE_ASSIGN_OR_RETURN(own, WriteOwnModelAndData(o_));
    POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadWholeFile(own->model_file, solver::kMaxOnnxBytes));
    POLNODE_ASSIGN_OR_RETURN(own_model_, solver::ImportOnnx(bytes));
  }
  for (int i = 0; i < o_.tasks; ++i) {
    const std::string path = o_.home + "/tasks/task-" + std::to_string(i) + ".toml";
    POLNODE_RETURN_IF_ERROR(WriteFileAtomically(path, TaskToml(o_, dataset_hash_, i, own ? &*own : nullptr)));
    task_files_.push_back(path);
  }

  std::string cheat = o_.cheat;
  if (cheat.empty()) {
    POLNODE_ASSIGN_OR_RETURN(solver::TaskSpec task, solver::ReadTaskFile(task_files_[0]));
    POLNODE_ASSIGN_OR_RETURN(std::string node, WeightUpdateNode(task, data));
    cheat = "step=" + std::to_string(o_.steps - o_.checkpoint_interval / 2 - 1) + ",node=" + node;
  }
  {
    // A cheat the solver could never apply (a step past the task, a node the model lacks) is a
    // usage error now, not an unsettled devnet when the timeout runs out.
    POLNODE_ASSIGN_OR_RETURN(CheatSpec parsed, ParseCheatSpec(cheat));
    POLNODE_ASSIGN_OR_RETURN(solver::TaskSpec task, solver::ReadTaskFile(task_files_[0]));
    POLNODE_RETURN_IF_ERROR(ResolveCheat(parsed, task, data).status());
  }
  std::string task_list;
  for (const std::string& f : task_files_) task_list += (task_list.empty() ? "" : ",") + f;
  const std::vector<std::pair<std::string, std::string>> names = {
      {"solver-honest", "solver"}, {"solver-cheat", "solver"},      {"verifier-honest", "verifier"},
      {"verifier-lazy", "verifier"}, {"whistleblower", "whistleblower"}, {"submitter", "submitter"}};
  for (const auto& [name, role] : names) {
    Member m;
    m.name = name;
    m.role = role;
    members_.push_back(std::move(m));
    report_.logs[name] = Log(name);
  }
  report_.logs["ledger"] = Log("ledger");
  members_[0].extra_flags = {"--max-tasks", "1"};
  members_[1].extra_flags = {"--max-tasks", "1", "--cheat", cheat};
  if (o_.restart_roles) {
    // The devnet's training takes well under the default commit interval, whose batch would make
    // every checkpoint durable only at the end: each on its own, so the kill lands mid-training.
    for (const std::size_t solver : {0u, 1u}) {
      std::vector<std::string>& flags = members_[solver].extra_flags;
      flags.insert(flags.end(), {"--commit-interval-ms", "0"});
    }
  }
  // The checkers replay on one thread each: seven processes share the machine, and the solvers
  // train on every thread of it.
  members_[2].extra_flags = {"--threads", "1"};
  members_[3].extra_flags = {"--lazy", "--threads", "1"};
  members_[4].extra_flags = {"--threads", "1"};
  members_[5].extra_flags = {"--task", task_list, "--payment", std::to_string(o_.payment), "--claim-window",
                             o_.validators > 0 ? std::to_string(kValidatorClaimWindow) : "300", "--training-window",
                             o_.validators > 0 ? std::to_string(kValidatorTrainingWindow) : "1200"};
  if (own) members_[5].extra_flags.push_back("--serve-files");
  if (o_.base_port != 0) {
    for (std::size_t i = 0; i < members_.size(); ++i) {
      members_[i].extra_flags.push_back("--listen");
      members_[i].extra_flags.push_back("127.0.0.1:" + std::to_string(o_.base_port + 1 + i));
    }
  }

  NodeHomeSpec ledger_home;
  ledger_home.chain_id = "polnode-devnet";
  // Every party of the devnet serves on loopback, which the default fetch policy refuses: each
  // role home gets a role.toml that allows loopback (and nothing else).
  POLNODE_ASSIGN_OR_RETURN(FetchPolicy loopback, FetchPolicy::Make("http", "loopback", FetchPolicy::kDefaultMaxBytes,
                                                                   FetchPolicy::kDefaultMaxRedirects));
  for (Member& m : members_) {
    std::filesystem::create_directories(o_.home + "/" + m.name, ec);
    POLNODE_RETURN_IF_ERROR(WriteFileAtomically(o_.home + "/" + m.name + "/" + kRoleConfigFile, loopback.ConfigText()));
    POLNODE_ASSIGN_OR_RETURN(consensus::SecretKey key, LoadOrCreateRoleKey(o_.home + "/" + m.name));
    const auto& pub = key.PublicKey().bytes();
    m.pubkey.assign(reinterpret_cast<const char*>(pub.data()), pub.size());
    proto::Allocation& a = ledger_home.accounts.emplace_back();
    a.set_pubkey(m.pubkey);
    a.set_amount(kGenesisBalance);
  }
  // Windows in blocks. PaceBlocks makes none while a role trains or replays, so a window need only
  // cover the roles' passes, not their work; they stay wide, and only the challenge window, which
  // always runs to its end, is kept short.
  proto::Params& p = ledger_home.params;
  // Slots are drawn by stake with replacement (contracts/verification.h), so a verifier holds a
  // slot of a task for sure only when the task has more slots than any one verifier has locks:
  // both verifiers keep 8 locks free and each task has 9 slots (below).
  p.set_verifiers_per_task(kSlotsPerTask);
  p.set_forced_error_rate(o_.forced_error_rate);
  p.set_verify_window(600);
  p.set_challenge_window(50);
  p.set_reveal_window(300);
  p.set_dispute_move_window(50);
  p.set_max_training_window(100'000);
  p.set_publish_window(600);
  p.set_seed_reveal_window(300);
  if (o_.validators > 0) ValidatorWindows(p);
  // Locks grow with the payment (contracts/locks.h). Each verifier keeps kSlotsPerTask - 1 locks
  // free, so both hold slots of every task; a second task drawn before they top up the first's
  // locks again (the tasks run side by side) still finds both unless the first took all 8 locks
  // of one of them (2 x 8 / C(16, 9) = 0.14%).
  const std::uint64_t verifier_stake = (kSlotsPerTask - 1) * contracts::TaskLock(p, proto::ROLE_VERIFIER, o_.payment);
  for (Member& m : members_) {
    if (m.role != "verifier") continue;
    m.extra_flags.insert(m.extra_flags.end(), {"--stake", std::to_string(verifier_stake)});
  }
  // Under --validators the embedded ledger never runs, so its node key would only be a funded
  // account no one spends from (a "ledger" balance row with change 0).
  if (o_.validators > 0) ledger_home.node_balance = 0;
  ledger_home.config.listen = "127.0.0.1:0";
  ledger_home.config.block_interval_ms = o_.block_interval_ms;
  POLNODE_ASSIGN_OR_RETURN(NewNodeHome created, CreateNodeHome(o_.home + "/ledger", ledger_home));
  const GenesisFile& genesis = created.home.genesis;
  for (const proto::Allocation& a : genesis.spec.allocations()) {
    DevnetAccount account;
    account.pubkey_hex = consensus::ToHex(a.pubkey());
    account.genesis = static_cast<std::int64_t>(a.amount());
    report_.accounts.push_back(account);
  }
  ledger_pubkey_ = created.node_pubkey;
  if (o_.validators > 0) POLNODE_RETURN_IF_ERROR(StartValidators(genesis));
  return Status::Ok();
}

// The validators take the embedded ledger's place: the genesis SetUp made is their app_state.
Status Devnet::StartValidators(const GenesisFile& genesis) {
  ValidatorNetworkOptions options;
  options.dir = o_.home + "/validators";
  options.log_dir = o_.home + "/logs";
  options.polnode = self_;
  options.cometbft = o_.cometbft;
  options.validators = o_.validators;
  options.chain_id = genesis.spec.chain_id();
  options.genesis_json = FormatGenesisJson(genesis);
  options.node_home = o_.home + "/ledger";
  POLNODE_ASSIGN_OR_RETURN(validators_, ValidatorNetwork::Create(options, clock_));
  progress_ << "devnet: starting " << o_.validators << " CometBFT validators" << std::endl;
  POLNODE_RETURN_IF_ERROR(validators_->Start());
  for (int i = 0; i < validators_->size(); ++i) {
    report_.validator_urls.push_back(validators_->api_url(i));
    report_.validator_homes.push_back(validators_->app_home(i));
    report_.logs["validator" + std::to_string(i) + "-app"] = o_.home + "/logs/validator" + std::to_string(i) + "-app.log";
    report_.logs["validator" + std::to_string(i) + "-cometbft"] =
        o_.home + "/logs/validator" + std::to_string(i) + "-cometbft.log";
  }
  report_.logs.erase("ledger");
  return Status::Ok();
}

// Role i talks to validator i mod N; without validators every role talks to the ledger.
const std::string& Devnet::LedgerUrlFor(const Member& m) const {
  if (report_.validator_urls.empty()) return report_.ledger_url;
  const std::size_t index = static_cast<std::size_t>(&m - members_.data());
  return report_.validator_urls[index % report_.validator_urls.size()];
}

// Blocks the other validators make while the killed one is down.
constexpr std::uint64_t kKilledValidatorBlocks = 20;

Status Devnet::KillValidatorMidTask() {
  // Once a task is claimed (training, proofs, verdicts and games still to come), the last
  // validator dies with SIGKILL, CometBFT node and application both; the others go on, and the
  // roles that used its API ride the outage out.
  const Clock::TimePoint deadline = clock_.Now() + std::chrono::seconds(300);
  while (true) {
    Result<contracts::TaskPage> page = ledger_->Tasks(0, 100);
    bool in_flight = false;
    if (page.ok()) {
      for (const proto::Task& task : page->tasks) {
        in_flight = in_flight || (task.status() != proto::TASK_OPEN && task.status() != proto::TASK_SETTLED &&
                                  task.status() != proto::TASK_CANCELLED);
      }
    }
    if (in_flight) break;
    if (clock_.Now() > deadline) return Status::Unavailable("no task was claimed within 300 s");
    clock_.SleepFor(std::chrono::milliseconds(20));
  }
  const int victim = validators_->size() - 1;
  POLNODE_ASSIGN_OR_RETURN(report_.validator_killed_at, validators_->Height(0));
  validators_->Kill(victim);
  progress_ << "devnet: killed validator " << victim << " (SIGKILL, CometBFT and application) at height "
            << report_.validator_killed_at << std::endl;
  while (true) {
    Result<std::uint64_t> height = validators_->Height(0);
    if (height.ok() && *height >= report_.validator_killed_at + kKilledValidatorBlocks) break;
    if (clock_.Now() > deadline + std::chrono::seconds(300)) {
      return Status::Unavailable("the remaining validators made no " + std::to_string(kKilledValidatorBlocks) + " blocks");
    }
    clock_.SleepFor(std::chrono::milliseconds(20));
  }
  POLNODE_RETURN_IF_ERROR(validators_->Restart(victim));
  const Clock::TimePoint restarted = clock_.Now();
  POLNODE_ASSIGN_OR_RETURN(const std::uint64_t target, validators_->Height(0));
  report_.validator_missed_blocks = target - report_.validator_killed_at;
  while (true) {
    Result<std::uint64_t> height = validators_->Height(victim);
    if (height.ok() && *height >= target) break;
    if (clock_.Now() > restarted + std::chrono::seconds(300)) {
      return Status::Unavailable("validator " + std::to_string(victim) + " did not catch up to height " + std::to_string(target));
    }
    clock_.SleepFor(std::chrono::milliseconds(20));
  }
  report_.validator_catch_up_seconds = std::chrono::duration<double>(clock_.Now() - restarted).count();
  progress_ << "devnet: validator " << victim << " restarted and caught up " << report_.validator_missed_blocks
            << " blocks in " << report_.validator_catch_up_seconds << " s" << std::endl;
  return Status::Ok();
}

// Every validator has the same state root at a common height and the same task outcomes.
Status Devnet::CheckValidators() {
  POLNODE_ASSIGN_OR_RETURN(ValidatorAgreement agreement, validators_->Agreement(std::chrono::seconds(120)));
  report_.validators_agree = agreement.agree;
  report_.agreed_height = agreement.height;
  report_.agreed_state_root = agreement.state_root_hex;
  report_.validators_difference = agreement.difference;
  return Status::Ok();
}

// Starts the ledger process on `listen` and returns the HOST:PORT it serves on.
Result<std::string> Devnet::StartLedger(const std::string& listen) {
  const std::string log = Log("ledger");
  const std::uintmax_t from = LogSize(log);
  POLNODE_ASSIGN_OR_RETURN(ChildProcess p, ChildProcess::Spawn({self_, "ledger", "--home", o_.home + "/ledger", "--listen",
                                                                listen, "--manual-blocks", "--json"},
                                                               log));
  ledger_process_.emplace(std::move(p));
  Result<std::string> line = WaitForLogLine(*ledger_process_, from, "{", std::chrono::seconds(60), clock_);
  if (!line.ok()) return line.status().WithContext("the ledger");
  std::string serving = FieldOf(*line, "listen");
  if (serving.empty()) return Status::Corruption("the ledger's startup line has no listen address: " + *line);
  return serving;
}

Status Devnet::Start(Member& m) {
  std::vector<std::string> argv = {self_, m.role, "--home", o_.home + "/" + m.name, "--ledger", LedgerUrlFor(m),
                                   "--poll-ms", "100", "--json"};
  argv.insert(argv.end(), m.extra_flags.begin(), m.extra_flags.end());
  const std::string log = Log(m.name);
  const std::uintmax_t from = LogSize(log);
  POLNODE_ASSIGN_OR_RETURN(ChildProcess p, ChildProcess::Spawn(argv, log));
  m.process.emplace(std::move(p));
  Result<std::string> line = WaitForLogLine(*m.process, from, "{", std::chrono::seconds(60), clock_);
  if (!line.ok()) return line.status().WithContext(m.name);
  m.url = FieldOf(*line, "url");
  if (m.url.empty()) return Status::Corruption(m.name + "'s startup line has no url: " + *line);
  return Status::Ok();
}

// Verifiers must be bonded before the first segment beacon, or the task finds nobody to assign.
Status Devnet::WaitForStakes() {
  POLNODE_ASSIGN_OR_RETURN(proto::Params params, ledger_->Params());
  const Clock::TimePoint deadline = clock_.Now() + std::chrono::seconds(120);
  while (true) {
    POLNODE_RETURN_IF_ERROR(PaceBlocks());
    bool all = true;
    for (const Member& m : members_) {
      proto::Role role = m.role == "solver" ? proto::ROLE_SOLVER
                         : m.role == "verifier" ? proto::ROLE_VERIFIER
                         : m.role == "whistleblower" ? proto::ROLE_WHISTLEBLOWER
                                                     : proto::ROLE_UNSPECIFIED;
      if (role == proto::ROLE_UNSPECIFIED) continue;
      const std::uint64_t need = role == proto::ROLE_SOLVER     ? params.min_stake_solver()
                                 : role == proto::ROLE_VERIFIER ? params.min_stake_verifier()
                                                                : params.min_stake_whistleblower();
      POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, ledger_->Stake(m.pubkey, role));
      all = all && stake.bonded() >= need;
    }
    if (all) return Status::Ok();
    if (clock_.Now() > deadline) return Status::Unavailable("the roles did not stake in time; see " + o_.home + "/logs");
    clock_.SleepFor(std::chrono::milliseconds(20));
  }
}

// The value of key=VALUE in an event line (role_runtime.h EventLog), "" when absent.
std::string EventField(const std::string& line, const std::string& key) {
  const std::size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  const std::size_t begin = at + key.size() + 2;
  return line.substr(begin, line.find(' ', begin) - begin);
}

// Waits up to 300 s of `clock`'s time for a line of `log` for which `marks` holds; returns it.
Result<std::string> WaitForEvent(Clock& clock, const std::string& log,
                                 const std::function<bool(const std::string&)>& marks, const std::string& what) {
  const Clock::TimePoint deadline = clock.Now() + std::chrono::seconds(300);
  while (true) {
    std::ifstream in(log);
    std::string line;
    while (std::getline(in, line)) {
      if (marks(line)) return line;
    }
    if (clock.Now() > deadline) return Status::Unavailable("never saw " + what + " in " + log);
    clock.SleepFor(std::chrono::milliseconds(20));
  }
}

Status Devnet::RestartMidTask() {
  // The honest solver dies once it has saved its first checkpoint after the initial state (so a
  // restart must resume training from there), the honest verifier once it starts verifying. Both
  // are started again.
  const std::vector<std::pair<std::string, std::function<bool(const std::string&)>>> kills = {
      {"solver-honest",
       [](const std::string& line) {
         return line.find(" checkpoint_saved ") != std::string::npos && EventField(line, "step") != "0";
       }},
      {"verifier-honest", [](const std::string& line) { return line.find(" verifying ") != std::string::npos; }},
  };
  for (const auto& [name, marks] : kills) {
    Member* m = nullptr;
    for (Member& candidate : members_) {
      if (candidate.name == name) m = &candidate;
    }
    POLNODE_ASSIGN_OR_RETURN(std::string line, WaitForEvent(clock_, Log(name), marks, "the point to kill " + name));
    // Held until the member serves again: PaceBlocks makes no block while a role is down.
    std::lock_guard<std::mutex> lock(members_mu_);
    m->process->Signal(SIGKILL);
    m->process->Wait(std::chrono::seconds(10), clock_);
    const std::string step = EventField(line, "step");
    progress_ << "devnet: killed " << name << (step.empty() ? " mid-task" : " after its checkpoint at step " + step)
              << " (SIGKILL); restarting it" << std::endl;
    POLNODE_RETURN_IF_ERROR(Start(*m));
  }
  return Status::Ok();
}

Status Devnet::LedgerOutage() {
  // Once verifiers are at work (verdicts and reveals are about to be posted), the ledger crashes
  // and comes back on the same address: the roles must ride it out and re-send what it lost.
  const Clock::TimePoint deadline = clock_.Now() + std::chrono::seconds(300);
  while (true) {
    Result<contracts::TaskPage> page = ledger_->Tasks(0, 100);
    bool verifying = false;
    if (page.ok()) {
      for (const proto::Task& task : page->tasks) verifying = verifying || task.status() == proto::TASK_VERIFYING;
    }
    if (verifying) break;
    if (clock_.Now() > deadline) return Status::Unavailable("no task reached TASK_VERIFYING");
    clock_.SleepFor(std::chrono::milliseconds(20));
  }
  const Clock::TimePoint down = clock_.Now();
  ledger_process_->Signal(SIGKILL);
  ledger_process_->Wait(std::chrono::seconds(10), clock_);
  progress_ << "devnet: ledger killed (SIGKILL) while tasks verify; down for " << o_.ledger_outage.count() << " s"
            << std::endl;
  clock_.SleepFor(o_.ledger_outage);
  POLNODE_ASSIGN_OR_RETURN(std::string serving, StartLedger(ledger_listen_));
  if (serving != ledger_listen_) return Status::Internal("the restarted ledger serves on " + serving + ", not " + ledger_listen_);
  report_.ledger_down_seconds = std::chrono::duration<double>(clock_.Now() - down).count();
  return Status::Ok();
}

// Deadlines on the chain count blocks. A ledger making them on a timer raced the roles: under
// load an honest verifier's replay could outlast its verify window while the lazy verifier's
// accept made it in, and then the whistleblower's replay outlast the challenge window, so the
// cheat was accepted (issue 16 item 8). The devnet therefore makes the blocks itself (its ledger
// runs with --manual-blocks): the next one a block interval of its clock after the last, and only
// once every running role has ended kPassesPerBlock passes since that block with no replay running
// or waiting for its retry (gauge "checking") and no training under way ("training_threads"). A
// busy or restarting role holds the chain back, so the machine's speed decides how long the devnet
// takes, never which transaction makes its window. Transactions waiting in the mempool are
// committed without that wait: the roles wait for them (a claim, a proof commitment), and their
// number, not the time they take, bounds how far such blocks move the deadlines. No block while
// the ledger is down (an outage).
Status Devnet::PaceBlocks() {
  if (validators_) return Status::Ok();  // CometBFT makes the blocks
  if (clock_.Now() < last_block_ + std::chrono::milliseconds(o_.block_interval_ms)) return Status::Ok();
  Result<std::string> status = ledger_->GetJson("/v1/status");
  if (!status.ok()) return Status::Ok();  // the ledger is down
  Result<rapidjson::Document> doc = ParseJson(*status);
  const bool pending = doc.ok() && doc->IsObject() && doc->HasMember("mempool_size") &&
                       (*doc)["mempool_size"].IsUint64() && (*doc)["mempool_size"].GetUint64() > 0;
  std::map<std::string, double> passes;  // of the roles that answered
  bool caught_up = true;
  {
    std::lock_guard<std::mutex> lock(members_mu_);
    for (Member& m : members_) {
      // Not started yet, or (the submitter) done.
      if (!m.process || m.url.empty() || m.process->Exited()) continue;
      Result<std::string> metrics = Scrape(m.url);
      if (!metrics.ok()) {
        caught_up = false;  // restarting
        continue;
      }
      const std::string prefix = "polnode_" + m.role + "_";
      const double done = MetricValue(*metrics, prefix + "passes_total");
      double& at_block = passes_at_block_[m.name];
      if (done < at_block) at_block = done;  // restarted: its passes count from 0 again
      caught_up = caught_up && done >= at_block + kPassesPerBlock && MetricValue(*metrics, prefix + "checking") == 0 &&
                  MetricValue(*metrics, prefix + "training_threads") == 0;
      passes[m.name] = done;
    }
  }
  if (!pending && !caught_up) return Status::Ok();
  Result<HttpResponse> made = HttpCall(ledger_->endpoint(), "POST", "/v1/test/produce-block");
  if (!made.ok()) return Status::Ok();  // the ledger is down
  if (made->status != 200) return Status::Internal("the ledger made no block: " + made->body);
  last_block_ = clock_.Now();
  for (const auto& [name, done] : passes) passes_at_block_[name] = done;
  return Status::Ok();
}

Status Devnet::Monitor() {
  const auto deadline = started_ + o_.timeout;
  Clock::TimePoint last = clock_.Now();
  std::map<std::string, std::string> last_status;
  std::optional<std::thread> restarter, outage, validator_killer;
  Status restart_status, outage_status, validator_kill_status;
  if (o_.restart_roles) restarter.emplace([&] { restart_status = RestartMidTask(); });
  if (validators_ && o_.kill_validator) validator_killer.emplace([&] { validator_kill_status = KillValidatorMidTask(); });
  if (o_.ledger_outage.count() > 0) outage.emplace([&] { outage_status = LedgerOutage(); });
  Status result;
  while (true) {
    if (Status paced = PaceBlocks(); !paced.ok()) {
      result = paced;
      break;
    }
    Result<contracts::TaskPage> page = ledger_->Tasks(0, 100);
    const Clock::TimePoint now = clock_.Now();
    const double dt = std::chrono::duration<double>(now - last).count();
    last = now;
    if (page.ok()) {
      bool settled = page->tasks.size() >= static_cast<std::size_t>(o_.tasks);
      for (const proto::Task& task : page->tasks) {
        const std::string id = consensus::ToHex(task.id());
        const std::string status = proto::TaskStatus_Name(task.status());
        status_seconds_[id][last_status.contains(id) ? last_status[id] : status] += dt;
        if (last_status[id] != status) progress_ << "devnet: task " << id.substr(0, 16) << " " << status << std::endl;
        last_status[id] = status;
        settled = settled && (task.status() == proto::TASK_SETTLED || task.status() == proto::TASK_CANCELLED);
      }
      std::lock_guard<std::mutex> lock(members_mu_);
      Member& submitter = members_.back();
      if (settled && submitter.process->Exited()) break;
      if (submitter.process->Exited() && !settled) {
        result = Status::FailedPrecondition("the submitter exited before its tasks settled; see " + submitter.process->log_path());
        break;
      }
    }
    if (now > deadline) {
      result = Status::Unavailable("the devnet did not settle within " + std::to_string(o_.timeout.count()) + " s; logs in " +
                                   o_.home + "/logs");
      break;
    }
    clock_.SleepFor(std::chrono::milliseconds(20));
  }
  if (restarter) restarter->join();
  if (outage) outage->join();
  if (validator_killer) validator_killer->join();
  POLNODE_RETURN_IF_ERROR(result);
  POLNODE_RETURN_IF_ERROR(outage_status);
  POLNODE_RETURN_IF_ERROR(validator_kill_status);
  return restart_status;
}

Status Devnet::CollectReport() {
  report_.home = o_.home;
  report_.wall_seconds = std::chrono::duration<double>(clock_.Now() - started_).count();
  for (const Member& m : members_) {
    if (m.role == "solver") report_.training_seconds += ScrapeMetric(m.url, "polnode_solver_training_seconds_total");
    if (m.role == "verifier") report_.verifying_seconds += ScrapeMetric(m.url, "polnode_verifier_verify_seconds_total");
    if (m.role == "whistleblower") {
      report_.verifying_seconds += ScrapeMetric(m.url, "polnode_whistleblower_verify_seconds_total");
    }
  }
  // Accuracy of delivered models: the submitter's report.json (submitter_role.h).
  std::map<std::string, double> accuracy;
  if (Result<std::vector<std::uint8_t>> text = ReadWholeFile(o_.home + "/submitter/report.json", 1 << 20); text.ok()) {
    Result<rapidjson::Document> doc =
        ParseJson(std::string_view(reinterpret_cast<const char*>(text->data()), text->size()));
    if (doc.ok() && doc->IsObject() && doc->HasMember("tasks") && (*doc)["tasks"].IsArray()) {
      for (const rapidjson::Value& t : (*doc)["tasks"].GetArray()) {
        if (t.IsObject() && t.HasMember("task_id") && t["task_id"].IsString() && t.HasMember("accuracy") && t["accuracy"].IsNumber()) {
          accuracy[t["task_id"].GetString()] = t["accuracy"].GetDouble();
        }
      }
    }
  }

  POLNODE_ASSIGN_OR_RETURN(contracts::TaskPage page, ledger_->Tasks(0, 100));
  report_.all_settled = true;
  report_.audits_match = true;
  for (const proto::Task& task : page.tasks) {
    DevnetTask t;
    t.id_hex = consensus::ToHex(task.id());
    t.solver = NameOf(task.solver());
    t.status = proto::TaskStatus_Name(task.status());
    t.outcome = proto::TaskOutcome_Name(task.outcome());
    // A GPT has no test accuracy (the submitter's report holds 0 of 0 samples for it).
    if (auto it = accuracy.find(t.id_hex); it != accuracy.end() && !solver::IsGptSpec(o_.model)) {
      t.accuracy = it->second;
    }
    t.seconds_in_status = status_seconds_[t.id_hex];
    report_.disputing_seconds += t.seconds_in_status["TASK_DISPUTED"];
    report_.all_settled = report_.all_settled && task.status() == proto::TASK_SETTLED;
    POLNODE_ASSIGN_OR_RETURN(contracts::TaskGames games, ledger_->Games(task.id()));
    for (const proto::DisputeGame& game : games.games) {
      DevnetGame g;
      g.challenger = NameOf(game.challenger().key());
      g.challenger_kind = game.challenger_is_verifier() ? "verifier" : "whistleblower";
      g.result = ResultName(game);
      g.defender = NameOf(game.defender().key());
      g.winner = NameOf(game.winner());
      g.phase = proto::GamePhase_Name(game.phase());
      g.ruling = game.ruling();
      g.moves = static_cast<std::uint64_t>(game.moves_size());
      g.segment = game.segment();
      g.step = game.first_step() + game.lo();
      g.leaf = game.leaf();
      g.by_referee = !game.true_leaf().empty();
      POLNODE_ASSIGN_OR_RETURN(contracts::GameAudit audit, contracts::AuditGame(games.params, games.task, game));
      g.audit_matches = audit.differences.empty();
      report_.audits_match = report_.audits_match && g.audit_matches;
      if (audit.node) {
        g.node_name = audit.node->name();
        g.node_op = std::string(kernels::OpName(static_cast<kernels::Op>(audit.node->op())));
        if (own_model_) g.onnx_origin = solver::DescribeOnnxOrigin(solver::OnnxOriginOf(*own_model_, g.node_name));
      }
      t.games.push_back(std::move(g));
    }
    report_.tasks.push_back(std::move(t));
  }
  for (DevnetAccount& a : report_.accounts) {
    POLNODE_ASSIGN_OR_RETURN(std::string raw, RawFromHex(a.pubkey_hex, "account"));
    a.name = NameOf(raw);
    POLNODE_ASSIGN_OR_RETURN(proto::Account account, ledger_->Account(raw));
    a.balance = static_cast<std::int64_t>(account.balance());
    for (proto::Role role : {proto::ROLE_SOLVER, proto::ROLE_VERIFIER, proto::ROLE_WHISTLEBLOWER}) {
      POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, ledger_->Stake(raw, role));
      a.staked += static_cast<std::int64_t>(stake.bonded() + stake.unbonding());
    }
  }
  return Status::Ok();
}

void Devnet::StopAll() {
  for (auto it = members_.rbegin(); it != members_.rend(); ++it) {
    if (it->process) it->process->Stop(std::chrono::seconds(5));
  }
  if (ledger_process_) ledger_process_->Stop(std::chrono::seconds(10));
  if (validators_) validators_->StopAll();
}

Result<DevnetReport> Devnet::Run() {
  started_ = clock_.Now();
  POLNODE_RETURN_IF_ERROR(SetUp());
  if (validators_) {
    report_.ledger_url = report_.validator_urls.front();
  } else {
    POLNODE_ASSIGN_OR_RETURN(ledger_listen_, StartLedger("127.0.0.1:" + std::to_string(o_.base_port)));
    report_.ledger_url = "http://" + ledger_listen_;
  }
  POLNODE_ASSIGN_OR_RETURN(LedgerClient client, LedgerClient::FromUrl(report_.ledger_url));
  ledger_.emplace(std::move(client));
  progress_ << "devnet: ledger at " << report_.ledger_url << std::endl;
  for (Member& m : members_) {
    if (m.role != "submitter") POLNODE_RETURN_IF_ERROR(Start(m));
  }
  POLNODE_RETURN_IF_ERROR(WaitForStakes());
  progress_ << "devnet: solvers, verifiers and whistleblower staked; submitting " << o_.tasks << " task(s)" << std::endl;
  POLNODE_RETURN_IF_ERROR(Start(members_.back()));
  POLNODE_RETURN_IF_ERROR(Monitor());
  POLNODE_RETURN_IF_ERROR(CollectReport());
  if (validators_) POLNODE_RETURN_IF_ERROR(CheckValidators());
  StopAll();
  return report_;
}

}  // namespace

Result<DevnetReport> RunDevnet(const DevnetOptions& options, std::ostream& progress, Clock& clock) {
  Devnet devnet(options, progress, clock);
  return devnet.Run();
}

}  // namespace polnode::node
