// End-to-end: `polnode devnet` runs the whole protocol as real processes (ledger, submitter, an
// honest and a cheating solver, an honest and a lazy verifier, a whistleblower) on a tiny model,
// and the auditor command replays the disputes from the stored chain afterwards.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <string>

#include "subprocess.h"

namespace polnode::testing {
namespace {

// A tiny task: 40 steps of a 784-16-10 MLP, k = 10 (4 segments); the cheat is in the final segment,
// which every verifier replays, at the logits (fc2.matmul: element 0 always reaches the loss).
constexpr std::int64_t kSteps = 40;
constexpr std::int64_t kCheatStep = 34;

std::vector<std::string> DevnetArgs(const std::string& home, bool restart) {
  std::vector<std::string> args = {PolnodeBinary(), "devnet",  "--home", home,   "--tasks", "2",  "--model",
                                   "mlp:784-16-10", "--steps", std::to_string(kSteps), "--checkpoint-interval", "10",
                                   "--batch", "32", "--segments", "1", "--cheat",
                                   "step=" + std::to_string(kCheatStep) + ",node=fc2.matmul", "--timeout-s", "600", "--json"};
  if (restart) args.push_back("--restart-roles");
  return args;
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
  const ProcessResult run = RunProcess(DevnetArgs(home, false));
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  rapidjson::Document report;
  report.Parse(run.out.c_str());
  ASSERT_FALSE(report.HasParseError()) << run.out;
  EXPECT_TRUE(report["all_settled"].GetBool());
  EXPECT_TRUE(report["audits_match"].GetBool());

  std::string cheat_task;
  bool referee_game = false, timeout_game = false;
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
    cheat_task = t["id"].GetString();
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
        EXPECT_STREQ(g["node"].GetString(), "fc2.matmul") << "the referee ran the tampered operator";
      } else if (challenger == "whistleblower" && defender == "verifier-lazy") {
        // The lazy verifier accepted the cheat without replaying and cannot defend it.
        timeout_game = true;
        EXPECT_STREQ(g["winner"].GetString(), "whistleblower");
      } else {
        ADD_FAILURE() << "unexpected game " << challenger << " vs " << defender;
      }
    }
  }
  EXPECT_TRUE(referee_game) << run.out;
  EXPECT_TRUE(timeout_game) << run.out;

  // Who gained and who lost (stake included, fees included).
  EXPECT_LT(Change(report, "solver-cheat"), -900) << "slashed";
  // Both verifiers earn their fee on the honest task; the lazy one loses its fee on the cheat's
  // task and its lock (500) to the whistleblower, the honest one gains the cheater's lock (1000).
  EXPECT_LT(Change(report, "verifier-lazy"), Change(report, "verifier-honest") - 1500);
  EXPECT_GT(Change(report, "solver-honest"), 0) << "paid";
  EXPECT_GT(Change(report, "verifier-honest"), 0);
  EXPECT_GT(Change(report, "whistleblower"), 0);
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
}

TEST(DevnetE2eTest, SolverAndVerifierKilledMidTaskResumeAndTheTasksStillSettle) {
  TempDir dir;
  const std::string home = dir.File("devnet");
  const ProcessResult run = RunProcess(DevnetArgs(home, true));
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  rapidjson::Document report;
  report.Parse(run.out.c_str());
  ASSERT_FALSE(report.HasParseError()) << run.out;
  EXPECT_TRUE(report["all_settled"].GetBool());
  for (const rapidjson::Value& t : report["tasks"].GetArray()) {
    if (std::string(t["solver"].GetString()) == "solver-honest") {
      EXPECT_STREQ(t["outcome"].GetString(), "OUTCOME_ACCEPTED");
    }
  }
  EXPECT_NE(run.err.find("killed solver-honest mid-task"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("killed verifier-honest mid-task"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace polnode::testing
