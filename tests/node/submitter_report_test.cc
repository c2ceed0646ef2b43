// The submitter's report.json shape (what `polnode devnet` reads), the facts a restarted
// submitter reads back (a versioned local archive; the text form before it still read, an
// unreadable file refused by name and kept), and the URI of the proof a model is fetched from.
#include "polnode/roles/submitter_report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "polnode/base/file_util.h"
#include "polnode/roles/submitter_model.h"
#include "polnode/testing/fuzz_seeds.h"
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
                std::string(64, '9') + "\",\"test_correct\":3,\"test_total\":4,\"onnx\":null,\"onnx_error\":\"\"},\"error\":\"\"},"
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
  EXPECT_EQ(back->model->onnx_path, "") << "no ONNX file was written";
  // The ONNX export beside the state is found again by its path.
  std::filesystem::create_directories(home.path() + "/models");
  ASSERT_TRUE(WriteFileAtomically(OnnxPath(home.path(), id), std::string_view("onnx")).ok());
  Result<TaskFacts> with_onnx = LoadTaskFacts(home.path(), id);
  ASSERT_TRUE(with_onnx.ok()) << with_onnx.status().ToString();
  ASSERT_TRUE(with_onnx->model.has_value());
  EXPECT_EQ(with_onnx->model->onnx_path, home.path() + "/models/" + id + ".onnx");

  ASSERT_TRUE(WriteFileAtomically(home.path() + "/tasks/" + id, std::string_view("refund lots\n")).ok());
  EXPECT_EQ(LoadTaskFacts(home.path(), id).status().code(), StatusCode::kCorruption);
}

// Offset of the envelope's version: cereal's endianness byte, then the 16-byte kind.
constexpr std::size_t kVersionAt = 1 + kLocalKindBytes;

// A model the exporter refused keeps its refusal across a restart, so the restarted submitter's
// report still says why there is no ONNX file; a refusal past the bound keeps its first part.
TEST(SubmitterReportTest, TheOnnxRefusalSurvivesARestart) {
  TempDir home;
  const std::string id(64, 'c');
  TaskFacts facts;
  facts.refund = 4900;
  facts.model = DeliveredModel{ModelPath(home.path(), id), std::string(64, '1'), 7, 8};
  facts.model->onnx_error = "Unimplemented: ONNX cannot express the family 'rnn'";
  ASSERT_TRUE(SaveTaskFacts(home.path(), id, facts).ok());
  Result<TaskFacts> back = LoadTaskFacts(home.path(), id);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, facts);

  facts.model->onnx_error = std::string(kMaxOnnxErrorBytes + 100, 'x');
  ASSERT_TRUE(SaveTaskFacts(home.path(), id, facts).ok());
  Result<TaskFacts> cut = LoadTaskFacts(home.path(), id);
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  ASSERT_TRUE(cut->model.has_value());
  EXPECT_EQ(cut->model->onnx_error, std::string(kMaxOnnxErrorBytes, 'x'));
}

// A version-1 archive (no onnx_error after the counts) is still read, its model's onnx_error empty.
TEST(SubmitterReportTest, FactsOfVersionOneAreStillRead) {
  const TaskFacts facts{4900, DeliveredModel{"", std::string(64, 'a'), 7, 8}};
  std::vector<std::uint8_t> v1 = EncodeTaskFacts(facts);
  // Version 2 ends with the empty onnx_error's 8-byte size tag; version 1 ends before it.
  ASSERT_GT(v1.size(), 8u);
  v1.resize(v1.size() - 8);
  v1[kVersionAt] = 1;
  Result<TaskFacts> decoded = DecodeTaskFacts(v1, "f");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, facts);
  // Version 2 with the size tag cut off is truncated, not version 1.
  std::vector<std::uint8_t> cut = EncodeTaskFacts(facts);
  cut.resize(cut.size() - 8);
  EXPECT_EQ(DecodeTaskFacts(cut, "f").status().code(), StatusCode::kCorruption);
}

std::vector<std::uint8_t> Bytes(std::string_view text) { return {text.begin(), text.end()}; }

TEST(SubmitterReportTest, FactsRoundTripWithOrWithoutEachPart) {
  const DeliveredModel model{"", std::string(64, 'a'), 3, 4};
  for (const TaskFacts& facts : {TaskFacts{}, TaskFacts{12, std::nullopt}, TaskFacts{std::nullopt, model},
                                 TaskFacts{std::numeric_limits<std::uint64_t>::max(), model}}) {
    const std::vector<std::uint8_t> bytes = EncodeTaskFacts(facts);
    EXPECT_LE(bytes.size(), kMaxTaskFactsBytes);
    Result<TaskFacts> decoded = DecodeTaskFacts(bytes, "f");
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, facts);
  }
}

TEST(SubmitterReportTest, FactsOfTheTextFormBeforeTheArchiveAreStillRead) {
  TempDir home;
  const std::string id(64, 'c');
  // A facts file as the submitter wrote it before the archive.
  std::filesystem::create_directories(home.path() + "/tasks");
  ASSERT_TRUE(WriteFileAtomically(home.path() + "/tasks/" + id,
                                  "refund 4900\nmodel " + std::string(64, '1') + " 7 8\n")
                  .ok());
  Result<TaskFacts> old = LoadTaskFacts(home.path(), id);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(*old, (TaskFacts{4900, DeliveredModel{ModelPath(home.path(), id), std::string(64, '1'), 7, 8}}));

  Result<TaskFacts> refund_only = DecodeTaskFacts(Bytes("refund 5\n"), "f");
  ASSERT_TRUE(refund_only.ok()) << refund_only.status().ToString();
  EXPECT_EQ(*refund_only, (TaskFacts{5, std::nullopt}));
  for (const char* damaged : {"refund lots\n", "model zz 1 2\n", "model aa 3 2\n", "model aa 1 99999999999999999999\n",
                              "model aa 1\n", "stake 5\n"}) {
    Result<TaskFacts> decoded = DecodeTaskFacts(Bytes(damaged), "/h/tasks/t");
    EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption) << damaged;
    EXPECT_NE(decoded.status().message().find("/h/tasks/t"), std::string::npos) << decoded.status().ToString();
  }
}

TEST(SubmitterReportTest, NewerTruncatedAndDamagedFactsAreRefusedByNameAndKept) {
  const std::vector<std::uint8_t> bytes = EncodeTaskFacts({9, DeliveredModel{"", std::string(64, 'b'), 1, 2}});
  for (std::size_t n = 1; n < bytes.size(); ++n) {
    Result<TaskFacts> decoded = DecodeTaskFacts(std::span(bytes.data(), n), "/h/tasks/t");
    ASSERT_FALSE(decoded.ok()) << n << " bytes";
    EXPECT_NE(decoded.status().message().find("/h/tasks/t"), std::string::npos) << decoded.status().ToString();
  }
  // The refund flag, then the model flag after the 8-byte refund.
  std::vector<std::uint8_t> bad_flag = bytes;
  bad_flag[kVersionAt + 4] = 2;
  EXPECT_EQ(DecodeTaskFacts(bad_flag, "f").status().code(), StatusCode::kCorruption);
  // The first byte of the state hash, after the model flag and the hash's 8-byte size tag.
  std::vector<std::uint8_t> bad_hash = bytes;
  bad_hash[kVersionAt + 4 + 1 + 8 + 1 + 8] = 'Z';
  EXPECT_EQ(DecodeTaskFacts(bad_hash, "f").status().code(), StatusCode::kCorruption);

  TempDir home;
  const std::string id(64, 'c');
  const std::string file = home.path() + "/tasks/" + id;
  std::vector<std::uint8_t> newer = bytes;
  newer[kVersionAt] = static_cast<std::uint8_t>(kTaskFactsFormat.version + 1);
  std::filesystem::create_directories(home.path() + "/tasks");
  ASSERT_TRUE(WriteFileAtomically(file, newer).ok());
  Result<TaskFacts> refused = LoadTaskFacts(home.path(), id);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find(file), std::string::npos) << refused.status().ToString();
  EXPECT_EQ(*ReadWholeFile(file, kMaxTaskFactsBytes), newer);
}

// The committed seeds of the task_facts fuzz target still mean what their names say (when the
// format changes, regenerate them: polnode_fuzz --write-seeds=fuzz/corpus).
TEST(SubmitterReportTest, TheFactsFuzzSeedsMeanWhatTheirNamesSay) {
  const auto decode = [](const std::string& name) {
    return DecodeTaskFacts(Bytes(polnode::testing::FuzzSeed("task_facts", name)), name);
  };
  for (const char* name : {"refund-and-model", "none", "text"}) EXPECT_TRUE(decode(name).ok()) << name;
  EXPECT_EQ(decode("truncated").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(decode("text-bad-counts").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(decode("newer-version").status().code(), StatusCode::kFailedPrecondition);
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
