// End-to-end: the four user journeys of the README, walked through the real binary with only the
// commands and outputs the README and `--help` document. One devnet (the README's first contact)
// produces a chain with an accepted and a rejected task; its ledger is then started again on the
// same home and each journey asks it what a user would:
//   - submitter: the task's TOML file -> report.json -> `polnode evaluate` on the delivered model;
//   - miner: `polnode account` by the solver's home and by the key prefix the devnet report prints;
//   - validator: a verifier daemon with `--log-format json` (ISO-8601 event lines, the funding hint),
//     its Prometheus `/metrics`, and a stake below the minimum refused before it is sent;
//   - auditor: `polnode dispute replay` against the running ledger by the task prefix the report
//     prints, and the same prefix taken by `tx`, with clear errors for unknown or short prefixes.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/rpc/http_client.h"
#include "polnode/testing/data_files.h"
#include "polnode/testing/eventually.h"
#include "polnode/testing/ledger_process.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::testing {
namespace {

using namespace std::chrono_literals;

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The value of the first "key":"..." at or after `from` in a JSON text ("" when absent).
std::string StringAfter(const std::string& json, const std::string& key, std::size_t from = 0) {
  const std::string needle = "\"" + key + "\":\"";
  std::size_t start = json.find(needle, from);
  if (start == std::string::npos) return "";
  start += needle.size();
  return json.substr(start, json.find('"', start) - start);
}

// The value of the first "key":<number> at or after `from` ("" when absent).
std::string NumberAfter(const std::string& json, const std::string& key, std::size_t from = 0) {
  const std::string needle = "\"" + key + "\":";
  std::size_t start = json.find(needle, from);
  if (start == std::string::npos) return "";
  start += needle.size();
  return json.substr(start, json.find_first_of(",}", start) - start);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// Whether `line` is {"time":"YYYY-MM-DDTHH:MM:SS.mmmZ","role":"verifier","event":"<a-z_>+"...}.
// Checked by hand: std::regex trips GCC 12's -Wmaybe-uninitialized under the sanitizers' -O1.
bool IsVerifierJsonEvent(std::string_view line) {
  constexpr std::string_view kTime = "{\"time\":\"";
  constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd.dddZ";
  constexpr std::string_view kRoleEvent = "\",\"role\":\"verifier\",\"event\":\"";
  if (line.substr(0, kTime.size()) != kTime || line.size() < kTime.size() + kShape.size() + kRoleEvent.size() + 3 ||
      line.back() != '}') {
    return false;
  }
  std::string_view rest = line.substr(kTime.size());
  for (std::size_t i = 0; i < kShape.size(); ++i) {
    const bool digit = rest[i] >= '0' && rest[i] <= '9';
    if (kShape[i] == 'd' ? !digit : rest[i] != kShape[i]) return false;
  }
  rest.remove_prefix(kShape.size());
  if (rest.substr(0, kRoleEvent.size()) != kRoleEvent) return false;
  rest.remove_prefix(kRoleEvent.size());
  std::size_t name = 0;
  while (name < rest.size() && ((rest[name] >= 'a' && rest[name] <= 'z') || rest[name] == '_')) ++name;
  return name > 0 && name < rest.size() && rest[name] == '"';
}

TEST(JourneysE2eTest, SubmitterMinerValidatorAndAuditorFromTheReadmeAlone) {
  TempDir dir;
  const std::string devnet = dir.File("devnet");
  // The README's first contact, as text (what a user reads), on a tiny model.
  const ProcessResult run =
      RunProcess({PolnodeBinary(), "devnet", "--home", devnet, "--tasks", "2", "--model", "mlp:784-16-10", "--steps",
                  "40", "--checkpoint-interval", "10", "--batch", "32", "--segments", "1", "--timeout-s", "600"});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  // Ids print as 16-hex prefixes: the tasks, and each account's key.
  std::string cheat_task;
  for (const std::string& line : Lines(run.out)) {
    if (line.rfind("task ", 0) == 0 && Has(line, "solver solver-cheat")) cheat_task = line.substr(5, 16);
  }
  std::string honest_key_prefix;
  {
    std::istringstream words(run.out.substr(run.out.find("\n  solver-honest ") + 1));
    std::string name, change;
    words >> name >> change >> honest_key_prefix;
  }
  ASSERT_EQ(cheat_task.size(), 16u) << run.out;
  ASSERT_EQ(honest_key_prefix.size(), 16u) << run.out;
  EXPECT_TRUE(Has(run.out, "audit a task: polnode dispute replay ")) << run.out;

  // ---- submitter: from the TOML file to a usable model ----------------------------------------
  const std::string report = ReadFileText(devnet + "/submitter/report.json");
  const std::size_t accepted = report.find("\"outcome\":\"OUTCOME_ACCEPTED\"");
  ASSERT_NE(accepted, std::string::npos) << report;
  const std::size_t entry = report.rfind("{\"file\":", accepted);
  ASSERT_NE(entry, std::string::npos) << report;
  const std::string toml = StringAfter(report, "file", entry);
  const std::string model = StringAfter(report, "path", accepted);
  const std::string accepted_task = StringAfter(report, "task_id", entry);
  ASSERT_EQ(accepted_task.size(), 64u) << report;
  EXPECT_EQ(StringAfter(report, "document_hash", entry).size(), 64u) << report;
  const ProcessResult evaluated =
      RunProcess({PolnodeBinary(), "evaluate", "--task", toml, "--model", model, "--predict", "3", "--json"});
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.err;
  EXPECT_EQ(StringAfter(evaluated.out, "state_hash"), StringAfter(report, "state_hash", accepted)) << evaluated.out;
  EXPECT_EQ(NumberAfter(evaluated.out, "test_correct"), NumberAfter(report, "test_correct", accepted)) << evaluated.out;
  EXPECT_TRUE(Has(evaluated.out, "\"predictions\":[{\"predicted\":")) << evaluated.out;

  // The chain stays: its ledger starts again on the same home (manual blocks: nothing moves).
  LedgerProcess ledger(devnet + "/ledger", /*manual_blocks=*/true);
  ASSERT_TRUE(ledger.Start());

  // ---- miner: what did the honest solver earn, and on which tasks -----------------------------
  const ProcessResult by_home =
      RunProcess({PolnodeBinary(), "account", "--home", devnet + "/solver-honest", "--ledger", ledger.url(), "--json"});
  ASSERT_EQ(by_home.exit_code, 0) << by_home.err;
  const std::string solver_key = StringAfter(by_home.out, "pubkey");
  EXPECT_EQ(solver_key.substr(0, 16), honest_key_prefix);
  EXPECT_TRUE(Has(by_home.out, "{\"task_id\":\"" + accepted_task +
                                   "\",\"role\":\"solver\",\"status\":\"TASK_SETTLED\",\"outcome\":\"OUTCOME_ACCEPTED\""))
      << by_home.out;
  // The prefix the devnet report printed names the same account.
  const ProcessResult by_prefix = RunProcess({PolnodeBinary(), "account", honest_key_prefix, "--ledger", ledger.url()});
  ASSERT_EQ(by_prefix.exit_code, 0) << by_prefix.err;
  EXPECT_TRUE(Has(by_prefix.out, "account " + solver_key + " on chain ")) << by_prefix.out;
  const ProcessResult no_key = RunProcess({PolnodeBinary(), "account", "00000000", "--ledger", ledger.url()});
  EXPECT_NE(no_key.exit_code, 0);
  EXPECT_TRUE(Has(no_key.err, "PUBKEY: no public key on the ledger starts with 00000000")) << no_key.err;

  // ---- validator: a daemon's JSON log, its metrics, and a stake the chain would never use -----
  const ProcessResult verifier_account =
      RunProcess({PolnodeBinary(), "account", "--home", devnet + "/verifier-honest", "--ledger", ledger.url(), "--json"});
  ASSERT_EQ(verifier_account.exit_code, 0) << verifier_account.err;
  EXPECT_TRUE(Has(verifier_account.out, "\"role\":\"verifier\"")) << verifier_account.out;
  EXPECT_TRUE(Has(verifier_account.out, "\"verdict\":\"VERDICT_ACCEPT\"")) << verifier_account.out;

  DaemonProcess verifier;
  const std::string out = dir.File("verifier.out");
  ASSERT_TRUE(verifier.Start({PolnodeBinary(), "verifier", "--home", dir.File("verifier"), "--ledger", ledger.url(),
                              "--log-format", "json", "--threads", "1"},
                             out, dir.File("verifier.err")));
  // Unfunded, it says what to fund instead of failing pass after pass.
  ASSERT_TRUE(Eventually([&] { return Has(ReadFileText(out), "\"event\":\"needs_funds\""); }))
      << ReadFileText(out) << ReadFileText(dir.File("verifier.err"));
  const std::string url = StringAfter(ReadFileText(out), "url");
  Result<node::HttpEndpoint> endpoint = node::ParseHttpUrl(url);
  ASSERT_TRUE(endpoint.ok()) << url;
  ASSERT_TRUE(node::HttpCall(*endpoint, "GET", "/no-such-route").ok());
  std::string metrics;
  ASSERT_TRUE(Eventually([&] {
    Result<node::HttpResponse> r = node::HttpCall(*endpoint, "GET", "/metrics");
    metrics = r.ok() ? r->body : "";
    return Has(metrics, "polnode_verifier_http_responses_total{code=\"404\"} 1\n");
  })) << metrics;
  EXPECT_TRUE(Has(metrics, "# HELP polnode_verifier_http_responses_total HTTP responses")) << metrics;
  EXPECT_TRUE(Has(metrics, "# TYPE polnode_verifier_http_responses_total counter\n")) << metrics;
  EXPECT_TRUE(Has(metrics, "# TYPE polnode_verifier_passes_total counter\n")) << metrics;
  EXPECT_TRUE(Has(metrics, "# TYPE polnode_verifier_staked gauge\npolnode_verifier_staked 0\n")) << metrics;
  EXPECT_EQ(verifier.Terminate(), 0);
  // Every line, the startup line included, is one JSON object with an ISO-8601 UTC time.
  const std::vector<std::string> lines = Lines(ReadFileText(out));
  ASSERT_GE(lines.size(), 3u);
  for (const std::string& line : lines) EXPECT_TRUE(IsVerifierJsonEvent(line)) << line;
  EXPECT_TRUE(Has(lines.front(), "\"event\":\"started\"")) << lines.front();
  EXPECT_TRUE(Has(lines.back(), "\"event\":\"stopping\"")) << lines.back();

  // The ledger's key holds fees it collected: a stake below the verifier minimum is refused
  // before anything is sent.
  const ProcessResult small_stake = RunProcess({PolnodeBinary(), "tx", "stake", "--home", devnet + "/ledger", "--ledger",
                                                ledger.url(), "--role", "verifier", "--amount", "10"});
  EXPECT_NE(small_stake.exit_code, 0);
  EXPECT_TRUE(Has(small_stake.err, "below min_stake_verifier = 500")) << small_stake.err;
  EXPECT_EQ(ledger.MempoolSize(), 0u) << "nothing was sent";

  // ---- auditor: the disputes of the rejected task, by the prefix the report printed -----------
  const ProcessResult stored =
      RunProcess({PolnodeBinary(), "dispute", "replay", cheat_task, "--ledger", ledger.url(), "--json"});
  ASSERT_EQ(stored.exit_code, 0) << stored.err << stored.out;
  const std::string full_task = StringAfter(stored.out, "task_id");
  EXPECT_EQ(full_task.substr(0, 16), cheat_task);
  EXPECT_TRUE(Has(stored.out, "\"matches_ledger\":true}")) << stored.out;
  // One challenger's games, named by a prefix of its key.
  const std::string challenger = StringAfter(stored.out, "challenger");
  ASSERT_EQ(challenger.size(), 64u) << stored.out;
  const ProcessResult one_game = RunProcess({PolnodeBinary(), "dispute", "replay", cheat_task, "--ledger", ledger.url(),
                                             "--challenger", challenger.substr(0, 12)});
  EXPECT_EQ(one_game.exit_code, 0) << one_game.err;
  EXPECT_TRUE(Has(one_game.out, "game of challenger " + challenger + "\n")) << one_game.out;
  const std::string absent = std::string(challenger[0] == '0' ? "1" : "0") + challenger.substr(1, 11);
  const ProcessResult no_game = RunProcess({PolnodeBinary(), "dispute", "replay", cheat_task, "--ledger", ledger.url(),
                                            "--challenger", absent});
  EXPECT_NE(no_game.exit_code, 0);
  EXPECT_TRUE(Has(no_game.err, "has a challenger starting with " + absent)) << no_game.err;
  // `tx` takes the same prefix: cancelling a settled task reaches the ledger and fails there
  // (the full id went into the payload), while an unknown prefix never leaves the command line.
  const ProcessResult unknown = RunProcess({PolnodeBinary(), "tx", "cancel-task", "--home", devnet + "/ledger",
                                            "--ledger", ledger.url(), "--task", "0123456789abcdef0"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_TRUE(Has(unknown.err, "--task: no task id on the ledger starts with 0123456789abcdef0")) << unknown.err;
  const ProcessResult short_prefix = RunProcess({PolnodeBinary(), "tx", "cancel-task", "--home", devnet + "/ledger",
                                                 "--ledger", ledger.url(), "--task", "abc"});
  EXPECT_EQ(short_prefix.exit_code, 2);
  EXPECT_TRUE(Has(short_prefix.err, "--task must be a task id (64 hex) or its first 8 or more hex characters"))
      << short_prefix.err;
  const ProcessResult cancel =
      ledger.RunCommitting({PolnodeBinary(), "tx", "cancel-task", "--home", devnet + "/ledger", "--ledger", ledger.url(),
                            "--task", cheat_task, "--wait", "--json"});
  EXPECT_EQ(cancel.exit_code, 1) << cancel.out << cancel.err;
  // The ledger found the task (an unknown id fails as "no such task") and refused the cancel.
  EXPECT_TRUE(Has(cancel.err, "was committed but failed: only the submitter may cancel a task")) << cancel.err;
  EXPECT_EQ(ledger.Terminate(), 0) << ledger.Log();
  // `dispute --help` is an answer, not an error.
  EXPECT_EQ(RunProcess({PolnodeBinary(), "dispute", "--help"}).exit_code, 0);
}

// A GPU backend the machine cannot run is refused when the daemon starts, naming the flag, never
// found later as a pass error repeated forever. On a machine that has the device the solver
// starts instead (its startup line), so either way it does not sit in a retry loop.
TEST(JourneysE2eTest, AGpuBackendWithoutItsDeviceIsRefusedAtStart) {
  TempDir dir;
  for (const std::string backend : {"cuda", "hip"}) {
    DaemonProcess solver;
    const std::string out = dir.File(backend + ".out"), err = dir.File(backend + ".err");
    ASSERT_TRUE(solver.Start({PolnodeBinary(), "solver", "--home", dir.File(backend), "--ledger", "http://127.0.0.1:1",
                              "--backend", backend},
                             out, err));
    ASSERT_TRUE(Eventually([&] { return !solver.Running() || Has(ReadFileText(out), "polnode solver: key "); }))
        << ReadFileText(err);
    if (!solver.Running()) {
      EXPECT_EQ(solver.exit_code(), 2) << ReadFileText(err);
      EXPECT_TRUE(Has(ReadFileText(err), "polnode solver: error: --backend")) << ReadFileText(err);
    } else {
      EXPECT_EQ(solver.Terminate(), 0);
    }
  }
}

// Pinned devnet ports are checked before anything starts: the last role would serve past 65535.
TEST(JourneysE2eTest, ADevnetBasePortTooHighIsAUsageError) {
  TempDir dir;
  const ProcessResult run = RunProcess({PolnodeBinary(), "devnet", "--home", dir.File("devnet"), "--base-port", "65530"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_TRUE(Has(run.err, "--base-port must be an integer in [0, 65529]")) << run.err;
}

}  // namespace
}  // namespace polnode::testing
