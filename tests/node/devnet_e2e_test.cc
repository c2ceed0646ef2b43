// End-to-end: `polnode devnet` runs the whole protocol as real processes (ledger, submitter, an
// honest and a cheating solver, an honest and a lazy verifier, a whistleblower) on a tiny model,
// and the auditor command replays the disputes from the stored chain afterwards.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>

#include "polnode/base/file_util.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/onnx_model.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/step_runner.h"
#include "polnode/solver/train_state.h"
#include "polnode/solver/trainer.h"
#include "polnode/testing/ledger_process.h"
#include "polnode/testing/onnx_runtime.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::testing {
namespace {

// A tiny task: 40 steps of a 784-16-10 MLP, k = 10 (4 segments). The cheat is devnet's default: in
// the middle of the final segment, which every verifier replays, at the first weight update.
constexpr std::int64_t kSteps = 40;
constexpr std::int64_t kCheatStep = 34;
constexpr char kCheatNode[] = "fc1.w.sgd";

// `polnode devnet` on two tasks of `steps` steps, k = `interval`, reporting in JSON.
std::vector<std::string> DevnetArgs(const std::string& home, std::int64_t steps = kSteps, std::int64_t interval = 10) {
  return {PolnodeBinary(), "devnet",  "--home", home,   "--tasks", "2",  "--model",
          "mlp:784-16-10", "--steps", std::to_string(steps), "--checkpoint-interval", std::to_string(interval),
          "--batch", "32", "--segments", "1", "--timeout-s", "600", "--json"};
}

// Runs the devnet `args` describe into `run` and parses its report into `report`: the run exits 0,
// the report parses, every task settled and the auditor's replay agreed with the ledger.
void RunDevnet(const std::vector<std::string>& args, ProcessResult& run, rapidjson::Document& report) {
  run = RunProcess(args);
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  report.Parse(run.out.c_str());
  ASSERT_FALSE(report.HasParseError()) << run.out;
  EXPECT_TRUE(report["all_settled"].GetBool());
  EXPECT_TRUE(report["audits_match"].GetBool());
}

const rapidjson::Value* FindAccount(const rapidjson::Document& report, const std::string& name) {
  for (const rapidjson::Value& a : report["accounts"].GetArray()) {
    if (name == a["name"].GetString()) return &a;
  }
  return nullptr;
}

std::int64_t Change(const rapidjson::Document& report, const std::string& name) {
  const rapidjson::Value* a = FindAccount(report, name);
  EXPECT_NE(a, nullptr) << name;
  return a == nullptr ? 0 : a->operator[]("change").GetInt64();
}

TEST(DevnetE2eTest, CheatingSolverAndLazyVerifierAreCaughtAndTheAuditorAgrees) {
  TempDir dir;
  const std::string home = dir.File("devnet");
  ProcessResult run;
  rapidjson::Document report;
  ASSERT_NO_FATAL_FAILURE(RunDevnet(DevnetArgs(home), run, report));
  // Its parties serve on loopback, which the default fetch policy refuses: every role home
  // allows loopback, and nothing else.
  for (const char* role : {"solver-honest", "verifier-honest", "whistleblower", "submitter"}) {
    const std::string config = ReadFileText(home + "/" + role + "/role.toml");
    EXPECT_NE(config.find("\nallow = \"loopback\"\n"), std::string::npos) << role << ":\n" << config;
  }

  std::string cheat_task;
  bool referee_game = false;
  ASSERT_EQ(report["tasks"].Size(), 2u);
  for (const rapidjson::Value& t : report["tasks"].GetArray()) {
    const std::string solver = t["solver"].GetString();
    if (solver == "solver-honest") {
      EXPECT_STREQ(t["outcome"].GetString(), "OUTCOME_ACCEPTED");
      ASSERT_TRUE(t["accuracy"].IsNumber()) << "the submitter fetched and evaluated the model";
      EXPECT_GT(t["accuracy"].GetDouble(), 0.3);
      EXPECT_EQ(t["games"].Size(), 0u) << "nobody disputes an honest proof that both verifiers accepted";
      continue;
    }
    ASSERT_EQ(solver, "solver-cheat");
    cheat_task = t["task_id"].GetString();
    EXPECT_STREQ(t["outcome"].GetString(), "OUTCOME_REJECTED");
    EXPECT_TRUE(t["accuracy"].IsNull()) << "no model is delivered from a rejected proof";
    for (const rapidjson::Value& g : t["games"].GetArray()) {
      EXPECT_TRUE(g["audit_matches"].GetBool());
      const std::string challenger = g["challenger"].GetString(), defender = g["defender"].GetString();
      if (challenger == "verifier-honest" && defender == "solver-cheat") {
        // The cheater disputed the honest reject and lost at the referee, pinpointed exactly.
        referee_game = true;
        EXPECT_TRUE(g["by_referee"].GetBool());
        EXPECT_STREQ(g["winner"].GetString(), "verifier-honest");
        EXPECT_EQ(g["step"].GetInt64(), kCheatStep);
        EXPECT_STREQ(g["node"].GetString(), kCheatNode) << "the referee ran the tampered operator";
      } else if (challenger == "whistleblower" && defender == "solver-cheat") {
        // The whistleblower's own replay failed too, so it challenged the proof; the first game
        // already disproved it, so this one was not needed.
        EXPECT_STREQ(g["result"].GetString(), "undecided") << "a game not played keeps no result";
      } else {
        ADD_FAILURE() << "unexpected game " << challenger << " vs " << defender;
      }
    }
  }
  EXPECT_TRUE(referee_game) << run.out;

  // Who gained and who lost (stake included, fees included).
  EXPECT_LT(Change(report, "solver-cheat"), -900) << "slashed";
  // Both verifiers earn their fee on the honest task; on the cheat's task the lazy one accepted the
  // segment the referee disproved and loses its lock to the honest one, which also gets the
  // cheater's lock.
  EXPECT_LT(Change(report, "verifier-lazy"), 0);
  EXPECT_LT(Change(report, "verifier-lazy"), Change(report, "verifier-honest") - 1500);
  EXPECT_GT(Change(report, "solver-honest"), 0) << "paid";
  EXPECT_GT(Change(report, "verifier-honest"), 0);
  // The whistleblower's challenge was not needed: its lock came back, it paid only fees.
  EXPECT_GT(Change(report, "whistleblower"), -20);
  EXPECT_LT(Change(report, "submitter"), 0) << "paid for the accepted task";

  // The auditor replays the cheater's disputes from the stored chain and agrees with the ledger.
  ASSERT_FALSE(cheat_task.empty());
  const ProcessResult audit =
      RunProcess({PolnodeBinary(), "dispute", "replay", cheat_task, "--home", home + "/ledger", "--json"});
  EXPECT_EQ(audit.exit_code, 0) << audit.err << audit.out;
  rapidjson::Document replay;
  replay.Parse(audit.out.c_str());
  ASSERT_FALSE(replay.HasParseError()) << audit.out;
  EXPECT_TRUE(replay["matches_ledger"].GetBool());
  // The 16-hex prefix the report and `status` print names the task as well; too short a prefix,
  // or one no task has, is refused by name.
  const ProcessResult by_prefix =
      RunProcess({PolnodeBinary(), "dispute", "replay", cheat_task.substr(0, 16), "--home", home + "/ledger"});
  EXPECT_EQ(by_prefix.exit_code, 0) << by_prefix.err;
  EXPECT_NE(by_prefix.out.find("task " + cheat_task + ": "), std::string::npos) << by_prefix.out;
  const ProcessResult too_short =
      RunProcess({PolnodeBinary(), "dispute", "replay", cheat_task.substr(0, 4), "--home", home + "/ledger"});
  EXPECT_NE(too_short.err.find("first 8 or more hex characters"), std::string::npos) << too_short.err;
  const std::string absent = std::string(cheat_task[0] == 'f' ? "0" : "f") + cheat_task.substr(1, 15);
  const ProcessResult unknown =
      RunProcess({PolnodeBinary(), "dispute", "replay", absent, "--home", home + "/ledger"});
  EXPECT_NE(unknown.err.find("no task id on the ledger starts with " + absent), std::string::npos) << unknown.err;
}

// The delivered ONNX file `onnx` of the task in `task_file`, run in onnxruntime (tests/onnx_run.py)
// on the first test samples of the task's data, against polnode's forward pass of the delivered
// state `state_file`: max |ort - polnode| / max |polnode| <= 1e-5.
void ExpectOnnxMatchesPolnode(const std::string& task_file, const std::string& state_file, const std::string& onnx) {
  constexpr std::int64_t kSamples = 64;
  Result<solver::TaskSpec> task = solver::ReadTaskFile(task_file);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  Result<solver::ModelSpec> model = solver::TaskModelSpec(*task);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Result<solver::ImageDataset> data = solver::LoadTaskData(*task);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(state_file, 1 << 26);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Result<solver::TrainState> state = solver::DecodeState(*bytes);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  const std::int64_t n = std::min(kSamples, data->test.count);
  Result<solver::StepGraph> graph = solver::BuildForwardGraph(*model, n);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  Result<solver::StepRunner> runner = solver::StepRunner::Create(*graph);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  std::vector<std::uint32_t> first(static_cast<std::size_t>(n));
  std::iota(first.begin(), first.end(), 0u);
  kernels::Tensor images, labels;
  ASSERT_TRUE(solver::GatherBatch(data->test, first, graph->images_shape, images, labels).ok());
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  Result<const kernels::Tensor*> logits = runner->Forward(*state, images, **backend);
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();

  TempDir io;
  ExpectOnnxRuntimeMatches(io.path(), onnx, images, **logits);
}

// Bring your own model and data (issue 13): the tasks name an ONNX file by hash and a data set
// directory of the submitter's own, and the submitter serves both; solvers and verifiers fetch
// them over HTTP into their file stores (once for both tasks), and the protocol runs as with
// built-in models: the honest task is accepted, the cheat rejected at the referee. The submitter
// receives the accepted model as ONNX too, which onnxruntime runs with polnode's outputs.
TEST(DevnetE2eTest, AnOnnxModelAndDataServedByTheSubmitterSettleWithTheCheatRejected) {
  TempDir dir;
  const std::string home = dir.File("devnet");
  std::vector<std::string> args = DevnetArgs(home);
  args.push_back("--own-model-and-data");
  ProcessResult run;
  rapidjson::Document report;
  ASSERT_NO_FATAL_FAILURE(RunDevnet(args, run, report));
  const std::string task = ReadFileText(home + "/tasks/task-0.toml");
  EXPECT_NE(task.find("model = \"onnx:"), std::string::npos) << task;
  EXPECT_NE(task.find("data = \"" + home + "/submitter/own-data\""), std::string::npos) << task;

  ASSERT_EQ(report["tasks"].Size(), 2u);
  bool referee_game = false;
  std::string cheat_task;
  // The pinpointed operator, named by the ONNX file's own initializer and node as well.
  const std::string cheat_origin = "update of ONNX initializer 'fc1.w' (read by node 'fc1.matmul', Gemm)";
  for (const rapidjson::Value& t : report["tasks"].GetArray()) {
    if (std::string(t["solver"].GetString()) == "solver-honest") {
      EXPECT_STREQ(t["outcome"].GetString(), "OUTCOME_ACCEPTED");
      ASSERT_TRUE(t["accuracy"].IsNumber());
      EXPECT_GT(t["accuracy"].GetDouble(), 0.3);
      continue;
    }
    EXPECT_STREQ(t["outcome"].GetString(), "OUTCOME_REJECTED");
    cheat_task = t["task_id"].GetString();
    for (const rapidjson::Value& g : t["games"].GetArray()) {
      EXPECT_TRUE(g["audit_matches"].GetBool());
      if (std::string(g["challenger"].GetString()) != "verifier-honest") continue;
      referee_game = true;
      EXPECT_STREQ(g["winner"].GetString(), "verifier-honest");
      EXPECT_STREQ(g["node"].GetString(), kCheatNode);
      EXPECT_EQ(std::string(g["onnx_origin"].GetString()), cheat_origin);
    }
  }
  EXPECT_TRUE(referee_game) << run.out;

  // The auditor names the file's node given the task's ONNX file; another file is refused by hash.
  const std::string model = home + "/submitter/own-model.onnx";
  const ProcessResult audit = RunProcess(
      {PolnodeBinary(), "dispute", "replay", cheat_task, "--home", home + "/ledger", "--model", model, "--json"});
  ASSERT_EQ(audit.exit_code, 0) << audit.err << audit.out;
  rapidjson::Document replay;
  replay.Parse(audit.out.c_str());
  ASSERT_FALSE(replay.HasParseError()) << audit.out;
  bool named = false;
  for (const rapidjson::Value& g : replay["games"].GetArray()) {
    if (!g.HasMember("onnx")) continue;
    named = named || (std::string(g["onnx"]["initializer"].GetString()) == "fc1.w" &&
                      std::string(g["onnx"]["node"].GetString()) == "fc1.matmul");
  }
  EXPECT_TRUE(named) << audit.out;
  const ProcessResult text =
      RunProcess({PolnodeBinary(), "dispute", "replay", cheat_task, "--home", home + "/ledger", "--model", model});
  EXPECT_NE(text.out.find("  onnx       " + cheat_origin + "\n"), std::string::npos) << text.out;
  const ProcessResult hint = RunProcess({PolnodeBinary(), "dispute", "replay", cheat_task, "--home", home + "/ledger"});
  EXPECT_NE(hint.out.find("give --model FILE"), std::string::npos) << hint.out;
  const ProcessResult wrong = RunProcess({PolnodeBinary(), "dispute", "replay", cheat_task, "--home", home + "/ledger",
                                          "--model", home + "/tasks/task-0.toml"});
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(wrong.err.find("the task names"), std::string::npos) << wrong.err;

  // What the honest parties fetched: the four IDX files, the model and the two manifests, each
  // stored once under its hash although both tasks name them; nothing left half written.
  for (const char* role : {"solver-honest", "verifier-honest"}) {
    const std::string files = home + "/" + role + "/files";
    std::size_t objects = 0;
    for (const auto& e : std::filesystem::directory_iterator(files + "/objects")) objects += e.is_regular_file() ? 1 : 0;
    EXPECT_EQ(objects, 7u) << role;
    EXPECT_TRUE(std::filesystem::is_empty(files + "/tmp")) << role;
  }

  // The submitter's report names the delivered model's state and its ONNX export.
  rapidjson::Document submitted;
  submitted.Parse(ReadFileText(home + "/submitter/report.json").c_str());
  ASSERT_FALSE(submitted.HasParseError());
  std::size_t delivered = 0;
  for (const rapidjson::Value& t : submitted["tasks"].GetArray()) {
    if (!t["model"].IsObject()) continue;
    ++delivered;
    const rapidjson::Value& m = t["model"];
    ASSERT_TRUE(m["onnx"].IsString()) << m["onnx_error"].GetString();
    EXPECT_EQ(std::string(m["onnx"].GetString()), home + "/submitter/models/" + t["task_id"].GetString() + ".onnx");
    ASSERT_NO_FATAL_FAILURE(ExpectOnnxMatchesPolnode(t["file"].GetString(), m["path"].GetString(), m["onnx"].GetString()));
  }
  EXPECT_EQ(delivered, 1u) << "the honest task's model";
}

// Every round forced (--forced-error-rate 1): each solver falsifies its forced checkpoints while it
// trains, commits that proof, and at the reveal shows the checkpoints the verdicts and challenges
// covered in both proofs. The honest solver's task settles as a forced error with the model of the
// result proof delivered (the submitter fetches the result proof it serves beside the committed
// one); the cheat, wrong in the result proof as well, is still disproven in a game whose segment
// starts from the committed proof; the honest verifier, right in both rounds, gains.
TEST(DevnetE2eTest, ForcedRoundsSettleOverTheResultProofAndTheHonestVerifierIsRight) {
  TempDir dir;
  const std::string home = dir.File("devnet");
  std::vector<std::string> args = DevnetArgs(home);
  args.insert(args.end(), {"--forced-error-rate", "1"});
  ProcessResult run;
  rapidjson::Document report;
  ASSERT_NO_FATAL_FAILURE(RunDevnet(args, run, report));
  ASSERT_EQ(report["tasks"].Size(), 2u);
  for (const rapidjson::Value& t : report["tasks"].GetArray()) {
    const std::string solver = t["solver"].GetString();
    if (solver == "solver-honest") {
      EXPECT_STREQ(t["outcome"].GetString(), "OUTCOME_FORCED_ERROR") << run.out;
      ASSERT_TRUE(t["accuracy"].IsNumber()) << "the submitter fetched and evaluated the result proof's model";
      EXPECT_GT(t["accuracy"].GetDouble(), 0.3);
      continue;
    }
    EXPECT_STREQ(t["outcome"].GetString(), "OUTCOME_REJECTED") << run.out;
    // The honest verifier's reject (and the whistleblower's challenge) names the cheat's segment
    // with the digest of the honest end, which the cheater's result proof does not have: no catch,
    // so the game over the result proof (from the committed start) is played and the referee
    // pinpoints the cheat.
    bool pinpointed = false;
    for (const rapidjson::Value& g : t["games"].GetArray()) {
      EXPECT_TRUE(g["audit_matches"].GetBool());
      if (!g["by_referee"].GetBool()) continue;
      pinpointed = true;
      EXPECT_STREQ(g["winner"].GetString(), g["challenger"].GetString());
      EXPECT_EQ(g["step"].GetInt64(), kCheatStep);
      EXPECT_STREQ(g["node"].GetString(), kCheatNode);
    }
    EXPECT_TRUE(pinpointed) << run.out;
  }
  EXPECT_LT(Change(report, "solver-cheat"), -900) << "slashed";
  EXPECT_GT(Change(report, "solver-honest"), 0) << "paid for the result proof";
  EXPECT_GT(Change(report, "verifier-honest"), 0);
}

// A cheat the solver could never apply is refused before any process starts, instead of leaving
// a task unsettled until the timeout.
TEST(DevnetE2eTest, ACheatTheSolverCannotApplyIsAUsageError) {
  TempDir dir;
  for (const char* cheat : {"step=999,node=nope", "step=100000,node=0", "step=1"}) {
    const ProcessResult run = RunProcess({PolnodeBinary(), "devnet", "--home", dir.File("devnet"), "--cheat", cheat});
    EXPECT_EQ(run.exit_code, 2) << cheat << ": " << run.err;
    EXPECT_NE(run.err.find("--cheat"), std::string::npos) << run.err;
    EXPECT_FALSE(std::filesystem::exists(dir.File("devnet") + "/ledger")) << "no ledger was started for " << cheat;
  }
}

// The solver, the verifier and the ledger die mid-protocol: the honest solver (SIGKILL) once it
// has saved the checkpoint at step 100 of 2,000, so the restarted solver must resume training
// there; the honest verifier as it starts verifying; the ledger, crashed for 3 s while tasks are
// being verified and started again on its address. Every role rides it out and the outcomes are
// those of an undisturbed run (the cheat, at step 1,949, rejected).
TEST(DevnetE2eTest, RolesKilledMidTaskAndALedgerOutageAreRiddenOut) {
  constexpr std::int64_t kLongSteps = 2000;
  constexpr std::int64_t kInterval = 100;
  TempDir dir;
  const std::string home = dir.File("devnet");
  std::vector<std::string> args = DevnetArgs(home, kLongSteps, kInterval);
  args.insert(args.end(), {"--restart-roles", "--ledger-outage-s", "3"});
  ProcessResult run;
  rapidjson::Document report;
  ASSERT_NO_FATAL_FAILURE(RunDevnet(args, run, report));
  for (const rapidjson::Value& t : report["tasks"].GetArray()) {
    const std::string solver = t["solver"].GetString();
    EXPECT_STREQ(t["outcome"].GetString(), solver == "solver-honest" ? "OUTCOME_ACCEPTED" : "OUTCOME_REJECTED") << solver;
  }
  EXPECT_GE(report["ledger_down_seconds"].GetDouble(), 3.0);

  // The solver was killed after a checkpoint past the initial state and resumed from it.
  EXPECT_NE(run.err.find("killed solver-honest after its checkpoint at step"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("killed verifier-honest mid-task"), std::string::npos) << run.err;
  const std::string solver_log = ReadFileText(report["logs"]["solver-honest"].GetString());
  const std::size_t trained = solver_log.find(" trained ");
  ASSERT_NE(trained, std::string::npos) << solver_log;
  const std::size_t resumed = solver_log.find(" resumed_from=", trained);
  ASSERT_NE(resumed, std::string::npos) << solver_log;
  const std::int64_t resumed_from = std::strtoll(solver_log.c_str() + resumed + 14, nullptr, 10);
  EXPECT_GE(resumed_from, kInterval) << "the restarted solver trained from scratch:\n" << solver_log;
  EXPECT_LT(resumed_from, kLongSteps) << "the solver was killed only after training had finished:\n" << solver_log;
  EXPECT_EQ(resumed_from % kInterval, 0);

  // Every role saw the ledger go away and, unless it was itself killed and restarted meanwhile (a
  // new startup line), saw it come back; the outcomes above show they all carried on.
  for (const char* name : {"solver-honest", "solver-cheat", "verifier-honest", "verifier-lazy", "whistleblower", "submitter"}) {
    const std::string log = ReadFileText(report["logs"][name].GetString());
    const std::size_t lost = log.find(" ledger_unreachable ");
    ASSERT_NE(lost, std::string::npos) << name << ":\n" << log;
    const bool back = log.find(" ledger_reachable", lost) != std::string::npos;
    const bool restarted = log.find("\n{\"role\":", lost) != std::string::npos;
    EXPECT_TRUE(back || restarted) << name << ":\n" << log;
  }
}

}  // namespace
}  // namespace polnode::testing
