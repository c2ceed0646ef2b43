// The task-terms flags (cli/flag_groups.h DeclareTaskTermsFlags), as `polnode tx submit-task` and
// `polnode submitter` take them: --forced-delta, a tolerant task's forced perturbation size,
// defaults to solver::kDefaultForcedDelta to the bit and refuses what the ledger would refuse (not
// a finite float32 > 0) as a usage error, before anything is sent.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "polnode/cli/cli.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/key_file.h"
#include "polnode/solver/task_binding.h"
#include "polnode/testing/ledger_fixtures.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

struct CliRun {
  int code = 0;
  std::string out, err;
};

CliRun Polnode(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  Io io{out, err};
  CliRun run;
  run.code = RunCli(args, io);
  run.out = out.str();
  run.err = err.str();
  return run;
}

TEST(TaskTermsFlagsTest, ForcedDeltaDefaultsToTheTolerantDefaultAndIsListed) {
  ASSERT_EQ(solver::TaskTerms{}.forced_delta, 0.0009765625f);
  for (const std::vector<std::string>& command : {std::vector<std::string>{"submitter", "--help"},
                                                  std::vector<std::string>{"tx", "submit-task", "--help"}}) {
    const CliRun help = Polnode(command);
    ASSERT_EQ(help.code, kExitOk) << command[0] << ": " << help.err;
    // The shortest text that reads back as the default's float32: 2^-10 exactly.
    EXPECT_NE(help.out.find("--forced-delta D"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("0.0009765625"), std::string::npos) << help.out;
  }
}

TEST(TaskTermsFlagsTest, AForcedDeltaTheLedgerWouldRefuseIsAUsageError) {
  polnode::testing::TempDir dir("terms-flags");
  const std::string key = dir.File("submitter.key");
  ASSERT_TRUE(consensus::WriteKeyFile(key, polnode::testing::KeyFromByte(0x31)).ok());
  // Nothing listens at the ledger's address: every case below must fail before sending.
  const std::vector<std::string> base = {"tx",        "submit-task", "--key",      key,
                                         "--ledger",  "http://127.0.0.1:1", "--payment", "5",
                                         "--spec-uri", "http://127.0.0.1:1/v1/specs/x", "--unchecked-spec-uri"};
  // 1e39 is beyond float32's range and 1e-50 rounds to 0 there, though both are fine doubles.
  for (const char* bad : {"0", "-0", "-0.5", "nan", "inf", "1e39", "1e-50", "half"}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--forced-delta", bad});
    const CliRun run = Polnode(args);
    EXPECT_EQ(run.code, kExitUsage) << bad << ": " << run.err;
    EXPECT_NE(run.err.find("--forced-delta"), std::string::npos) << bad << ": " << run.err;
  }
  // A valid one gets past the terms to the next missing piece (this spec is built from flags).
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--forced-delta", "0.5"});
  const CliRun run = Polnode(args);
  EXPECT_EQ(run.code, kExitUsage) << run.err;
  EXPECT_EQ(run.err.find("--forced-delta"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("--model-spec is required"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace polnode::node
