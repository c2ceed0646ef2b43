// The submitter's report.json shape (what `polnode devnet` reads), the facts a restarted
// submitter reads back, and the URI of the proof a model is fetched from.
#include "polnode/roles/submitter_report.h"

#include <gtest/gtest.h>

#include "polnode/base/file_util.h"
#include "polnode/roles/submitter_model.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

using polnode::testing::TempDir;

TaskReport SettledTask() {
  TaskReport t;
  t.file = "a.toml";
  t.document_hash = std::string(64, 'd');
  t.spec_uri = "http://127.0.0.1:9/v1/specs/" + t.document_hash;
  t.task_id = std::string(64, 'e');
  t.status = "TASK_SETTLED";
  t.outcome = "OUTCOME_ACCEPTED";
  t.payment = 1000;
  t.cost = 1001;
  t.refund = 10;
  t.submit_height = 3;
  t.settle_height = 40;
  t.seconds_to_settle = 3.5;
  t.solver = std::string(64, '5');
  t.result_root = std::string(64, '7');
  t.model = DeliveredModel{"/h/models/" + t.task_id + ".state", std::string(64, '9'), 3, 4};
  return t;
}

TEST(SubmitterReportTest, JsonHasTheDocumentedShape) {
  SubmitterReport report;
  report.submitter = std::string(64, 'a');
  report.ledger = "http://127.0.0.1:1";
  report.balance = 99;
  report.done = true;
  report.tasks.push_back(SettledTask());
  TaskReport open;
  open.file = "b.toml";
  open.document_hash = std::string(64, 'f');
  open.payment = 5;
  open.cost = 6;
  report.tasks.push_back(open);

  const std::string e(64, 'e');
  EXPECT_EQ(SubmitterReportJson(report),
            "{\"submitter\":\"" + std::string(64, 'a') +
                "\",\"ledger\":\"http://127.0.0.1:1\",\"balance\":99,\"done\":true,\"tasks\":["
                "{\"file\":\"a.toml\",\"document_hash\":\"" + std::string(64, 'd') + "\",\"spec_uri\":\"http://127.0.0.1:9/v1/specs/" +
                std::string(64, 'd') + "\",\"task_id\":\"" + e +
                "\",\"status\":\"TASK_SETTLED\",\"outcome\":\"OUTCOME_ACCEPTED\",\"payment\":1000,\"cost\":1001,"
                "\"refund\":10,\"balance_change\":-991,\"submit_height\":3,\"settle_height\":40,\"seconds_to_settle\":3.5,"
                "\"solver\":\"" + std::string(64, '5') + "\",\"result_root\":\"" + std::string(64, '7') +
                "\",\"accuracy\":0.75,\"model\":{\"path\":\"/h/models/" + e + ".state\",\"state_hash\":\"" +
                std::string(64, '9') + "\",\"test_correct\":3,\"test_total\":4},\"error\":\"\"},"
                "{\"file\":\"b.toml\",\"document_hash\":\"" + std::string(64, 'f') +
                "\",\"spec_uri\":\"\",\"task_id\":\"\",\"status\":\"submitting\",\"outcome\":\"\",\"payment\":5,"
                "\"cost\":6,\"refund\":null,\"balance_change\":null,\"submit_height\":0,\"settle_height\":0,"
                "\"seconds_to_settle\":null,\"solver\":\"\",\"result_root\":\"\",\"accuracy\":null,\"model\":null,\"error\":\"\"}]}");

  const std::string text = SubmitterReportText(report);
  EXPECT_NE(text.find("a.toml: task eeeeeeeeeeeeeeee TASK_SETTLED OUTCOME_ACCEPTED"), std::string::npos) << text;
  EXPECT_NE(text.find("test accuracy 75.00% (3/4)"), std::string::npos) << text;
  EXPECT_NE(text.find("b.toml: task (not on the ledger) submitting"), std::string::npos) << text;
}

TEST(SubmitterReportTest, FactsSurviveARestart) {
  TempDir home;
  const std::string id(64, 'c');
  Result<TaskFacts> none = LoadTaskFacts(home.path(), id);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->refund.has_value());
  EXPECT_FALSE(none->model.has_value());

  TaskFacts facts;
  facts.refund = 4900;
  facts.model = DeliveredModel{ModelPath(home.path(), id), std::string(64, '1'), 7, 8};
  ASSERT_TRUE(SaveTaskFacts(home.path(), id, facts).ok());
  Result<TaskFacts> back = LoadTaskFacts(home.path(), id);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->refund, 4900u);
  ASSERT_TRUE(back->model.has_value());
  EXPECT_EQ(back->model->path, home.path() + "/models/" + id + ".state");
  EXPECT_EQ(back->model->state_hash, std::string(64, '1'));
  EXPECT_EQ(back->model->test_correct, 7);
  EXPECT_EQ(back->model->test_total, 8);

  ASSERT_TRUE(WriteFileAtomically(home.path() + "/tasks/" + id, std::string_view("refund lots\n")).ok());
  EXPECT_EQ(LoadTaskFacts(home.path(), id).status().code(), StatusCode::kCorruption);
}

TEST(SubmitterReportTest, ResultProofUriNamesTheResultRoot) {
  const std::string root(32, '\x11');
  Result<std::string> uri = ResultProofUri("http://10.0.0.2:7000/v1/proofs/" + std::string(64, 'a'), root);
  ASSERT_TRUE(uri.ok()) << uri.status().ToString();
  EXPECT_EQ(*uri, "http://10.0.0.2:7000/v1/proofs/" + std::string(64, '1'));
  EXPECT_FALSE(ResultProofUri("http://host:1", root).ok());
  EXPECT_FALSE(ResultProofUri("http://host:1/v1/proofs/ab", "short").ok());
}

}  // namespace
}  // namespace polnode::node
