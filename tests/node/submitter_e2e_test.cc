// End to end: a real `polnode ledger` and a real `polnode submitter` with a tiny task (an mlp on a
// 4 x 4 pixel IDX data set written here). The submitter posts the task with the binding a solver
// will check, serves its document at the spec URI, is stopped and restarted without posting it
// again, `polnode status` lists it, and nobody claims it: the claim window expires, the escrow
// comes back, and the submitter exits 0 with report.json saying so, refund and all.
#include <gtest/gtest.h>

#include <google/protobuf/util/message_differencer.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "polnode/consensus/hex.h"
#include "polnode/rpc/http_client.h"
#include "polnode/rpc/ledger_client.h"
#include "polnode/rpc/proof_http.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/task_binding.h"
#include "polnode/testing/data_files.h"
#include "polnode/testing/eventually.h"
#include "polnode/testing/ledger_process.h"
#include "polnode/testing/status_matchers.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_task.h"

namespace polnode::node {
namespace {

using polnode::testing::DaemonProcess;
using polnode::testing::LedgerProcess;
using polnode::testing::PolnodeBinary;
using polnode::testing::ReadFileText;
using polnode::testing::RunProcess;
using polnode::testing::TempDir;
using namespace std::chrono_literals;

constexpr std::uint64_t kFunds = 1'000'000;
constexpr std::uint64_t kPayment = 5'000;
// The ledger makes blocks only when the test asks (--manual-blocks): the task stays open, however
// long the test looks at it, until the test makes these blocks.
constexpr std::uint64_t kClaimWindow = 50;

// The value of "key":"..." in compact JSON text, "" when absent.
std::string JsonString(const std::string& json, const std::string& key) {
  const std::string open = "\"" + key + "\":\"";
  const std::size_t at = json.find(open);
  if (at == std::string::npos) return "";
  const std::size_t end = json.find('"', at + open.size());
  return end == std::string::npos ? "" : json.substr(at + open.size(), end - at - open.size());
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class SubmitterE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    const solver::ImageDataset data = solver::testing::TinyDataset();
    std::filesystem::create_directory(dir_.File("data"));
    ASSERT_TRUE(polnode::testing::IsOk(polnode::testing::WriteIdxDataset(dir_.File("data"), data)));
    solver::TaskSpec task = solver::testing::TinyTask(data);
    task.data_location = dir_.File("data");
    task.steps = 20;
    task.segments_per_check = 1;
    task_file_ = dir_.File("task.toml");
    std::ofstream(task_file_) << solver::testing::TinyTaskToml(task);
  }

  // A submitter home whose key is funded at genesis, and the ledger.
  void StartLedger() {
    home_ = dir_.File("submitter");
    std::filesystem::create_directory(home_);
    auto keygen = RunProcess({PolnodeBinary(), "keygen", "--out", home_ + "/role.key", "--json"});
    ASSERT_EQ(keygen.exit_code, 0) << keygen.err;
    pubkey_ = JsonString(keygen.out, "pubkey");
    ASSERT_EQ(pubkey_.size(), 64u) << keygen.out;
    auto init = RunProcess({PolnodeBinary(), "init", "--home", dir_.File("ledger"), "--chain-id", "submitter-chain",
                            "--block-interval-ms", "100", "--accounts", pubkey_ + "=" + std::to_string(kFunds), "--json"});
    ASSERT_EQ(init.exit_code, 0) << init.err;
    ledger_ = std::make_unique<LedgerProcess>(dir_.File("ledger"), /*manual_blocks=*/true);
    ASSERT_TRUE(ledger_->Start());
    Result<LedgerClient> client = LedgerClient::FromUrl(ledger_->url());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::make_unique<LedgerClient>(*client);
  }

  ::testing::AssertionResult StartSubmitter(DaemonProcess& process, const std::string& out,
                                            std::uint64_t payment = kPayment) {
    return process.Start({PolnodeBinary(), "submitter", "--home", home_, "--ledger", ledger_->url(), "--task",
                          task_file_, "--payment", std::to_string(payment), "--claim-window",
                          std::to_string(kClaimWindow), "--poll-ms", "50", "--json"},
                         dir_.File(out), dir_.File("submitter.err"));
  }

  // Waits (up to 60 s) until `done` holds, making a block whenever a transaction waits in the
  // mempool: the daemons' transactions commit in the next block, and no deadline moves otherwise.
  bool Committing(const std::function<bool()>& done) const {
    return polnode::testing::Eventually([&] {
      if (ledger_->MempoolSize() > 0) {
        EXPECT_TRUE(ledger_->ProduceBlocks(1));
      }
      return done();
    });
  }

  std::string Out(const std::string& name) const { return ReadFileText(dir_.File(name)); }
  std::string Err() const { return ReadFileText(dir_.File("submitter.err")); }

  // This submitter's tasks on the ledger.
  std::vector<proto::Task> OwnTasks() const {
    std::vector<proto::Task> own;
    Result<contracts::TaskPage> page = client_->Tasks(0, 100);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    if (!page.ok()) return own;
    for (proto::Task& t : page->tasks) {
      if (consensus::ToHex(t.submitter()) == pubkey_) own.push_back(std::move(t));
    }
    return own;
  }

  TempDir dir_;
  std::string task_file_;
  std::string home_;
  std::string pubkey_;
  std::unique_ptr<LedgerProcess> ledger_;
  std::unique_ptr<LedgerClient> client_;
};

TEST_F(SubmitterE2ETest, UnclaimedTaskIsServedFollowedAcrossARestartAndRefunded) {
  ASSERT_NO_FATAL_FAILURE(StartLedger());
  Result<solver::TaskSpec> document = solver::ReadTaskFile(task_file_);
  ASSERT_TRUE(document.ok()) << document.status().ToString();
  Result<solver::ImageDataset> data = solver::LoadTaskData(*document);
  ASSERT_TRUE(data.ok()) << data.status().ToString();

  // First run: it posts the task and finds it on the ledger.
  DaemonProcess first;
  ASSERT_TRUE(StartSubmitter(first, "first.out"));
  ASSERT_TRUE(Committing([&] { return Has(Out("first.out"), " task_found "); })) << Out("first.out") << Err();
  const std::string url = JsonString(Out("first.out"), "url");
  ASSERT_FALSE(url.empty()) << Out("first.out");
  std::vector<proto::Task> own = OwnTasks();
  ASSERT_EQ(own.size(), 1u);
  const proto::Task task = own[0];
  const std::string task_hex = consensus::ToHex(task.id());

  // The binding a solver checks: the ledger's spec is solver::LedgerSpecFor of the document with these
  // terms, and the document served at the spec URI is the one in the task file.
  Result<proto::TaskSpec> expected = solver::LedgerSpecFor(*document, *data, solver::TaskTerms{kPayment, kClaimWindow, 40});
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(task.spec(), *expected))
      << task.spec().DebugString() << "\nvs\n" << expected->DebugString();
  EXPECT_TRUE(solver::CheckSpecBinding(task.spec(), *document, *data).ok());
  EXPECT_EQ(task.spec_uri(), TaskDocumentUri(url, *document));
  // A solver on this machine (the default policy refuses loopback) fetches the document it names.
  const FetchPolicy loopback =
      *FetchPolicy::Make("http", "loopback", FetchPolicy::kDefaultMaxBytes, FetchPolicy::kDefaultMaxRedirects);
  EXPECT_EQ(FetchTaskDocument(FetchPolicy(), task.spec_uri()).status().code(), StatusCode::kPermissionDenied);
  Result<solver::TaskSpec> served = FetchTaskDocument(loopback, task.spec_uri());
  ASSERT_TRUE(served.ok()) << served.status().ToString();
  EXPECT_EQ(solver::EncodeTaskProto(*served), solver::EncodeTaskProto(*document));
  Result<HttpEndpoint> endpoint = ParseHttpUrl(url);
  ASSERT_TRUE(endpoint.ok());
  auto unknown = HttpCall(*endpoint, "GET", "/v1/specs/" + std::string(64, '0'));
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->status, 404);
  auto post = HttpCall(*endpoint, "POST", task.spec_uri().substr(url.size()), "x", "text/plain");
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->status, 405);
  auto metrics = HttpCall(*endpoint, "GET", "/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_TRUE(Has(metrics->body, "polnode_submitter_tasks_submitted_total 1\n")) << metrics->body;

  // `polnode status` lists it in flight, in JSON and as a table.
  auto status = RunProcess({PolnodeBinary(), "status", "--ledger", ledger_->url(), "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_TRUE(Has(status.out, "\"task_id\":\"" + task_hex + "\",\"status\":\"TASK_OPEN\"")) << status.out;
  EXPECT_TRUE(Has(status.out, "\"total_tasks\":1")) << status.out;
  auto table = RunProcess({PolnodeBinary(), "status", "--ledger", ledger_->url()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(Has(table.out, task_hex.substr(0, 16) + "  TASK_OPEN")) << table.out;

  ASSERT_EQ(first.Terminate(), 0) << Err();
  EXPECT_TRUE(Has(Out("first.out"), " task_submitted ")) << Out("first.out");
  const std::string interim = ReadFileText(home_ + "/report.json");
  EXPECT_TRUE(Has(interim, "\"task_id\":\"" + task_hex + "\",\"status\":\"TASK_OPEN\"")) << interim;
  EXPECT_TRUE(Has(interim, "\"done\":false")) << interim;

  // Second run with the same home: it finds the task, serves it at the same address, posts nothing.
  DaemonProcess second;
  ASSERT_TRUE(StartSubmitter(second, "second.out"));
  ASSERT_TRUE(Committing([&] { return Has(Out("second.out"), " task_found "); })) << Out("second.out") << Err();
  EXPECT_EQ(JsonString(Out("second.out"), "url"), url) << "the spec URI on the ledger must stay valid";
  EXPECT_TRUE(FetchTaskDocument(loopback, task.spec_uri()).ok());
  // The first run's report is kept beside the new one, not overwritten.
  EXPECT_EQ(ReadFileText(home_ + "/report-1.json"), interim);

  // Nobody claims it: the claim window closes it and the submitter, with nothing left to wait for,
  // exits 0 and prints its report.
  EXPECT_EQ(OwnTasks()[0].status(), proto::TASK_OPEN);
  // The refund is the balance's change across the block that closes the task, so the restarted
  // submitter must have read its balance once with the task found before that block comes. A pass
  // finds tasks before it reads the balance and writes its report last: a report that holds the
  // task id and the balance was written after such a reading (no block is made meanwhile). Without
  // this wait a loaded machine let the blocks come first, and the refund was reported unknown.
  Result<proto::Params> chain_params = client_->Params();
  ASSERT_TRUE(chain_params.ok()) << chain_params.status().ToString();
  const std::string balance_before = "\"balance\":" + std::to_string(kFunds - kPayment - chain_params->tx_fee());
  ASSERT_TRUE(polnode::testing::Eventually([&] {
    const std::string report = ReadFileText(home_ + "/report.json");
    return Has(report, "\"task_id\":\"" + task_hex + "\"") && Has(report, balance_before);
  })) << ReadFileText(home_ + "/report.json");
  ASSERT_TRUE(ledger_->ProduceBlocks(static_cast<int>(kClaimWindow)));
  std::optional<int> exit = second.Wait(60s);
  ASSERT_TRUE(exit.has_value()) << "the submitter did not finish: " << Out("second.out") << Err();
  EXPECT_EQ(*exit, 0) << Err();
  const std::string out = Out("second.out");
  EXPECT_FALSE(Has(out, " tx_sent ")) << out;
  EXPECT_FALSE(Has(out, " task_submitted ")) << out;
  EXPECT_TRUE(Has(out, " task_settled task_id=" + task_hex + " status=TASK_CANCELLED outcome=OUTCOME_UNCLAIMED")) << out;

  own = OwnTasks();
  ASSERT_EQ(own.size(), 1u) << "the restarted submitter posted the task again";
  EXPECT_EQ(own[0].status(), proto::TASK_CANCELLED);
  EXPECT_EQ(own[0].outcome(), proto::OUTCOME_UNCLAIMED);
  Result<proto::Params> params = client_->Params();
  ASSERT_TRUE(params.ok());
  // The jackpot cut leaves the escrow only once verification starts: a task nobody trained is
  // refunded in full, so the submitter is out one transaction fee.
  const std::uint64_t escrow = kPayment;
  const std::uint64_t cost = kPayment + params->tx_fee();
  Result<proto::Account> account = client_->Account(RawFromHex(pubkey_, "key").value());
  ASSERT_TRUE(account.ok());
  EXPECT_EQ(account->nonce(), 1u) << "one transaction in all";
  EXPECT_EQ(account->balance(), kFunds - cost + escrow);

  const std::string report = ReadFileText(home_ + "/report.json");
  for (const std::string& part : std::vector<std::string>{
           "\"done\":true", "\"task_id\":\"" + task_hex + "\"", "\"status\":\"TASK_CANCELLED\"",
        "\"outcome\":\"OUTCOME_UNCLAIMED\"", "\"cost\":" + std::to_string(cost),
        "\"refund\":" + std::to_string(escrow),
        "\"balance_change\":-" + std::to_string(cost - escrow),
        "\"balance\":" + std::to_string(account->balance()), "\"accuracy\":null,\"model\":null", "\"error\":\"\""}) {
    EXPECT_TRUE(Has(report, part)) << part << " not in " << report;
  }
  EXPECT_FALSE(Has(report, "\"seconds_to_settle\":null")) << report;
  // The summary on stdout is the report.
  EXPECT_TRUE(Has(out, report.substr(0, report.size() - 1))) << out;

  // Closed tasks are not in flight; --all lists them.
  status = RunProcess({PolnodeBinary(), "status", "--ledger", ledger_->url(), "--json"});
  EXPECT_FALSE(Has(status.out, task_hex)) << status.out;
  status = RunProcess({PolnodeBinary(), "status", "--ledger", ledger_->url(), "--json", "--all"});
  EXPECT_TRUE(Has(status.out, "\"status\":\"TASK_CANCELLED\",\"outcome\":\"OUTCOME_UNCLAIMED\"")) << status.out;
  EXPECT_EQ(ledger_->Terminate(), 0) << ledger_->Log();
}

TEST_F(SubmitterE2ETest, ASubmissionThatFailedOnTheLedgerSaysWhyAndCanBeRetriedWithOtherTerms) {
  ASSERT_NO_FATAL_FAILURE(StartLedger());
  // More than the balance: the ledger takes the fee and fails the transaction.
  DaemonProcess broke;
  ASSERT_TRUE(StartSubmitter(broke, "broke.out", 2 * kFunds));
  ASSERT_TRUE(Committing([&] { return !broke.Running(); }));
  std::optional<int> exit = broke.exit_code();
  ASSERT_TRUE(exit.has_value()) << "a submitter whose only task failed must finish: " << Out("broke.out") << Err();
  const std::string failed = Out("broke.out");
  EXPECT_TRUE(Has(failed, " task_failed ")) << failed;
  EXPECT_TRUE(Has(failed, "the submission failed on the ledger: ")) << failed;
  EXPECT_TRUE(Has(failed, "balance")) << "the ledger's reason is in the failure itself: " << failed;
  EXPECT_TRUE(OwnTasks().empty());

  // The same home, a payment the balance covers: a new submission, posted and found.
  DaemonProcess retry;
  ASSERT_TRUE(StartSubmitter(retry, "retry.out"));
  ASSERT_TRUE(Committing([&] { return Has(Out("retry.out"), " task_found "); })) << Out("retry.out") << Err();
  EXPECT_FALSE(Has(Out("retry.out"), " task_failed ")) << Out("retry.out");
  const std::vector<proto::Task> own = OwnTasks();
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(own[0].spec().payment(), kPayment);
  // The submitter's account lists the task it posted, from the role's home.
  auto account = RunProcess({PolnodeBinary(), "account", "--home", home_, "--ledger", ledger_->url(), "--json"});
  ASSERT_EQ(account.exit_code, 0) << account.err;
  EXPECT_TRUE(Has(account.out, "{\"task_id\":\"" + consensus::ToHex(own[0].id()) +
                                   "\",\"role\":\"submitter\",\"status\":\"TASK_OPEN\""))
      << account.out;
  EXPECT_EQ(retry.Terminate(), 0) << Err();
  EXPECT_EQ(ledger_->Terminate(), 0) << ledger_->Log();
}

TEST_F(SubmitterE2ETest, TxSubmitTaskRefusesASpecUriNoSolverCouldUseBeforeAnythingIsPaid) {
  ASSERT_NO_FATAL_FAILURE(StartLedger());
  const auto submit = [&](const std::string& spec_uri) {
    return ledger_->RunCommitting({PolnodeBinary(), "tx", "submit-task", "--key", home_ + "/role.key", "--ledger",
                                   ledger_->url(), "--task", task_file_, "--payment", std::to_string(kPayment),
                                   "--spec-uri", spec_uri, "--wait"});
  };
  const auto nonce = [&] {
    Result<proto::Account> account = client_->Account(RawFromHex(pubkey_, "key").value());
    return account.ok() ? account->nonce() : ~std::uint64_t{0};
  };
  for (const std::string& uri : {std::string("file://") + task_file_, std::string("http://127.0.0.1:1/v1/specs/x")}) {
    auto refused = submit(uri);
    EXPECT_NE(refused.exit_code, 0) << uri;
    EXPECT_TRUE(Has(refused.err, "a solver would refuse this task")) << refused.err;
    EXPECT_TRUE(Has(refused.err, "polnode submitter --task FILE")) << refused.err;
  }
  EXPECT_EQ(nonce(), 0u) << "a refused submission sent nothing";

  // A submitter daemon serving another document: a URI serving a document that is not this
  // task's is refused too.
  DaemonProcess daemon;
  ASSERT_TRUE(StartSubmitter(daemon, "daemon.out"));
  ASSERT_TRUE(Committing([&] { return Has(Out("daemon.out"), " task_found "); })) << Out("daemon.out") << Err();
  const std::vector<proto::Task> own = OwnTasks();
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(daemon.Terminate(), 0) << Err();
  solver::TaskSpec other = *solver::ReadTaskFile(task_file_);
  other.seed += 1;
  const std::string other_file = dir_.File("other.toml");
  std::ofstream(other_file) << solver::testing::TinyTaskToml(other);
  auto mismatch = ledger_->RunCommitting({PolnodeBinary(), "tx", "submit-task", "--key", home_ + "/role.key", "--ledger",
                              ledger_->url(), "--task", other_file, "--payment", std::to_string(kPayment), "--spec-uri",
                              own[0].spec_uri(), "--wait"});
  EXPECT_NE(mismatch.exit_code, 0);
  EXPECT_TRUE(Has(mismatch.err, "a solver would refuse this task")) << mismatch.err;
  const std::uint64_t after_daemon = nonce();

  // --unchecked-spec-uri posts anyway (the other document: this one's task is still open).
  auto unchecked = ledger_->RunCommitting({PolnodeBinary(), "tx", "submit-task", "--key", home_ + "/role.key", "--ledger",
                               ledger_->url(), "--task", other_file, "--payment", std::to_string(kPayment),
                               "--spec-uri", "file://" + other_file, "--unchecked-spec-uri", "--wait"});
  EXPECT_EQ(unchecked.exit_code, 0) << unchecked.err;
  EXPECT_EQ(nonce(), after_daemon + 1);
  EXPECT_EQ(ledger_->Terminate(), 0) << ledger_->Log();
}

TEST_F(SubmitterE2ETest, TheSameDocumentTwiceIsRefused) {
  std::filesystem::copy_file(task_file_, dir_.File("copy.toml"));
  auto r = RunProcess({PolnodeBinary(), "submitter", "--home", dir_.File("home"), "--ledger", "http://127.0.0.1:1",
                       "--task", task_file_ + "," + dir_.File("copy.toml"), "--payment", "10"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "same task document")) << r.err;
  EXPECT_TRUE(Has(r.err, "different seeds")) << r.err;
}

}  // namespace
}  // namespace polnode::node
