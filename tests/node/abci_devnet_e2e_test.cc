// End-to-end: `polnode devnet --validators 4 --kill-validator` runs the whole protocol (an honest
// and a cheating solver, an honest and a lazy verifier, a whistleblower, a submitter) on four real
// CometBFT validators, each with its own `polnode abci --http` application, the roles spread over
// their HTTP APIs. Once a task is claimed the last validator is killed with SIGKILL (CometBFT node
// and application), the other three go on, and it restarts and catches up. The honest task is
// accepted, the cheat rejected through a dispute game; every validator ends with the same state
// root (app hash) at a common height and the same outcomes; `polnode dispute replay` over the
// killed validator's own store re-executes the game as the chain ruled.
//
// Wall time: 112 s on the 2-core development machine (shared with parallel builds),
// mostly the challenge window (60 blocks at CometBFT's ~1 block/s there). The test fails, not
// skips, without CometBFT: scripts/install-deps.sh builds it; POLNODE_COMETBFT names another binary.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::testing {
namespace {

std::string CometbftBinary() {
  if (const char* env = std::getenv("POLNODE_COMETBFT"); env != nullptr && *env != '\0') return env;
  return "/opt/polnode-cometbft/v0.38.26/bin/cometbft";
}

TEST(AbciDevnetE2eTest, FourValidatorsSettleTheProtocolThroughAKilledValidatorAndAgree) {
  ASSERT_TRUE(std::filesystem::exists(CometbftBinary()))
      << "no CometBFT at " << CometbftBinary() << ": scripts/install-deps.sh builds it (or set POLNODE_COMETBFT)";
  TempDir dir;
  const std::string home = dir.File("devnet");
  // The tiny task of devnet_e2e_test.cc: 40 steps of a 784-16-10 MLP, k = 10; the default cheat
  // (the first weight update at step 34, in the final segment every verifier replays).
  const ProcessResult run = RunProcess({PolnodeBinary(), "devnet", "--home", home, "--tasks", "2", "--model", "mlp:784-16-10",
                                        "--steps", "40", "--checkpoint-interval", "10", "--batch", "32", "--segments", "1",
                                        "--timeout-s", "600", "--validators", "4", "--kill-validator", "--cometbft",
                                        CometbftBinary(), "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  rapidjson::Document report;
  report.Parse(run.out.c_str());
  ASSERT_FALSE(report.HasParseError()) << run.out;
  EXPECT_TRUE(report["all_settled"].GetBool());
  EXPECT_TRUE(report["audits_match"].GetBool());

  std::string cheat_task;
  for (const rapidjson::Value& t : report["tasks"].GetArray()) {
    const std::string solver = t["solver"].GetString();
    EXPECT_STREQ(t["outcome"].GetString(), solver == "solver-honest" ? "OUTCOME_ACCEPTED" : "OUTCOME_REJECTED") << solver;
    if (solver == "solver-cheat") cheat_task = t["task_id"].GetString();
  }
  ASSERT_FALSE(cheat_task.empty()) << run.out;

  // The validators replace the embedded ledger, whose node key genesis therefore does not fund.
  for (const rapidjson::Value& a : report["accounts"].GetArray()) EXPECT_STRNE(a["name"].GetString(), "ledger");
  EXPECT_EQ(report["accounts"].Size(), 6u) << run.out;

  const rapidjson::Value& v = report["validators"];
  ASSERT_EQ(v["apis"].Size(), 4u);
  // Roles are spread: the devnet's report names four distinct APIs, one per validator.
  EXPECT_STRNE(v["apis"][0].GetString(), v["apis"][3].GetString());
  EXPECT_TRUE(v["agree"].GetBool()) << v["difference"].GetString();
  EXPECT_EQ(std::string(v["agreed_state_root"].GetString()).size(), 64u);
  EXPECT_GT(v["agreed_height"].GetUint64(), v["killed_at_height"].GetUint64());
  EXPECT_GT(v["killed_at_height"].GetUint64(), 0u);
  EXPECT_GE(v["missed_blocks"].GetUint64(), 20u);
  EXPECT_NE(run.err.find("killed validator 3 (SIGKILL"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("validator 3 restarted and caught up"), std::string::npos) << run.err;

  // The auditor's path over the killed validator's own store: the cheat's game re-executes as ruled.
  const ProcessResult replay =
      RunProcess({PolnodeBinary(), "dispute", "replay", cheat_task, "--home", v["homes"][3].GetString(), "--json"});
  ASSERT_EQ(replay.exit_code, 0) << replay.err << replay.out;
  rapidjson::Document audit;
  audit.Parse(replay.out.c_str());
  ASSERT_FALSE(audit.HasParseError()) << replay.out;
  EXPECT_TRUE(audit["matches_ledger"].GetBool()) << replay.out;
  EXPECT_GE(audit["games"].Size(), 1u) << replay.out;
}

}  // namespace
}  // namespace polnode::testing
