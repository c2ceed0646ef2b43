// End to end on a GPT (issue 12): the real polnode binary trains the tiny GPT on a text file
// written here (same state hash on 1 and 2 threads, train and validation loss printed), samples
// from the saved state deterministically, refuses bad specs and corpora without writing a state,
// proves and verifies a gpt: task from its TOML document, and runs GPT tasks through the devnet.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "polnode/consensus/hex.h"
#include "polnode/solver/dataset.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_gpt.h"

namespace polnode::testing {
namespace {

class GptCliTest : public ::testing::Test {
 protected:
  GptCliTest() { std::ofstream(dir_.File("corpus.txt")) << solver::testing::TinyCorpusText(); }

  ProcessResult Polnode(std::vector<std::string> args) {
    args.insert(args.begin(), PolnodeBinary());
    return RunProcess(args, dir_.path());
  }

  ProcessResult Train(const std::string& threads, const std::string& out) {
    return Polnode({"train", "--model", solver::testing::kTinyGptSpec, "--data", "corpus.txt",
                    "--steps", "30", "--batch", "4", "--optimizer", "adam", "--lr", "0.01",
                    "--weight-decay", "0.1", "--seed", "7", "--threads", threads,
                    "--eval-windows", "20", "--out", out, "--json"});
  }

  static std::string Field(const std::string& json, const std::string& key) {
    const std::size_t at = json.find("\"" + key + "\":");
    if (at == std::string::npos) return std::string();
    const std::size_t start = at + key.size() + 3;
    return json.substr(start, json.find_first_of(",}", start) - start);
  }

  TempDir dir_;
};

TEST_F(GptCliTest, TrainsTheSameOnOneAndTwoThreadsAndSamplesFromTheSavedState) {
  ProcessResult one = Train("1", "one.state");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ProcessResult two = Train("2", "two.state");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(Field(one.out, "state_hash").size(), 66u) << one.out;
  EXPECT_EQ(Field(one.out, "state_hash"), Field(two.out, "state_hash"));
  EXPECT_NE(Field(one.out, "val_loss"), "null") << one.out;
  EXPECT_NE(Field(one.out, "val_loss"), "") << one.out;
  EXPECT_TRUE(std::filesystem::exists(dir_.File("one.state")));

  const auto sample = [&](const std::string& seed) {
    return Polnode({"sample", "--model", solver::testing::kTinyGptSpec, "--data", "corpus.txt",
                    "--state", "one.state", "--prompt", "The ", "--length", "30", "--seed", seed});
  };
  ProcessResult a = sample("3");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_TRUE(a.out.starts_with("The ")) << a.out;
  EXPECT_EQ(a.out.size(), 4u + 30u + 1u) << a.out;
  EXPECT_EQ(sample("3").out, a.out);
  // A prompt symbol the corpus never has.
  ProcessResult bad = Polnode({"sample", "--model", solver::testing::kTinyGptSpec, "--data",
                               "corpus.txt", "--state", "one.state", "--prompt", "#"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("not in the corpus's vocabulary"), std::string::npos) << bad.err;
}

TEST_F(GptCliTest, RefusesBadSpecsAndCorporaAndWritesNothing) {
  std::ofstream(dir_.File("empty.txt")).flush();
  std::ofstream(dir_.File("one.txt")) << "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  std::ofstream(dir_.File("short.txt")) << "abcab";
  const struct {
    const char* model;
    const char* data;
    const char* why;
  } cases[] = {
      {"gpt:layers=1,heads=3,width=16,context=8", "corpus.txt", "must divide width"},
      {"gpt:layers=1,heads=2,width=0,context=8", "corpus.txt", "width must be an integer"},
      {"gpt:layers=1,heads=2,width=16,context=8", "empty.txt", "text corpus is empty"},
      {"gpt:layers=1,heads=2,width=16,context=8", "one.txt", "single distinct symbol"},
      {"gpt:layers=1,heads=2,width=16,context=8", "short.txt", "does not fit the training text"},
      {"gpt:layers=1,heads=2,width=16,context=8", "missing.txt", "not a readable file"},
  };
  for (const auto& c : cases) {
    ProcessResult r = Polnode({"train", "--model", c.model, "--data", c.data, "--steps", "2",
                               "--optimizer", "adam", "--out", "bad.state"});
    EXPECT_NE(r.exit_code, 0) << c.model << " " << c.data;
    EXPECT_NE(r.err.find(c.why), std::string::npos) << c.model << " " << c.data << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir_.File("bad.state"))) << c.model << " " << c.data;
  }
}

TEST_F(GptCliTest, ProvesAndVerifiesAGptTaskFromItsToml) {
  const solver::ImageDataset data = solver::testing::TinyTextDataset();
  std::ofstream(dir_.File("task.toml"))
      << "model = \"" << solver::testing::kTinyGptSpec << "\"\n"
      << "data = \"corpus.txt\"\n"
      << "dataset_hash = \"" << consensus::ToHex(solver::DatasetContentHash(data)) << "\"\n"
      << "optimizer = \"adam\"\nlr = 0.01\nweight_decay = 0.1\nbatch = 4\nsteps = 24\n"
      << "checkpoint_interval = 6\nseed = 7\nsegments = 2\n";
  ASSERT_EQ(Polnode({"keygen", "--out", "solver.key"}).exit_code, 0);
  ProcessResult prove =
      Polnode({"prove", "--task", "task.toml", "--out", "proof", "--key", "solver.key"});
  ASSERT_EQ(prove.exit_code, 0) << prove.err;
  ProcessResult verify =
      Polnode({"verify", "--proof", "proof", "--task", "task.toml", "--segments", "4", "--beacon",
               consensus::ToHex(consensus::Sha256(std::string("gpt")))});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  // The same document over another corpus is refused by its hash.
  std::ofstream(dir_.File("corpus.txt")) << solver::testing::TinyCorpusText(4100);
  ProcessResult other =
      Polnode({"verify", "--proof", "proof", "--task", "task.toml", "--segments", "4", "--beacon",
               consensus::ToHex(consensus::Sha256(std::string("gpt")))});
  EXPECT_EQ(other.exit_code, 2) << other.out << other.err;
  EXPECT_NE(other.err.find("is not the task's"), std::string::npos) << other.err;
}

TEST_F(GptCliTest, DevnetSettlesGptTasksAndPinpointsTheCheat) {
  // 24 steps, k = 6: devnet's default cheat is at step 24 - 6 / 2 - 1 = 20, in the final segment,
  // at the first optimizer update of a weight matrix (the token embedding's).
  ProcessResult run = Polnode({"devnet", "--home", dir_.File("devnet"), "--tasks", "2", "--model",
                               solver::testing::kTinyGptSpec, "--data", dir_.File("corpus.txt"),
                               "--steps", "24", "--checkpoint-interval", "6", "--batch", "4",
                               "--segments", "1", "--timeout-s", "600", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  for (const char* want : {"\"all_settled\":true", "\"audits_match\":true", "OUTCOME_ACCEPTED",
                           "OUTCOME_REJECTED", "\"node\":\"wte.adam\"", "\"step\":20",
                           "\"winner\":\"verifier-honest\""}) {
    EXPECT_NE(run.out.find(want), std::string::npos) << want << " in " << run.out;
  }
}

TEST_F(GptCliTest, DevnetRefereeRulesOnTamperedTransformerOperators) {
  // The ledger's referee re-executes one tile of the attention's P V product, the causal softmax
  // (with the scale its descriptor carries), the GELU, or the embedding gather (the table rows its
  // proven token ids name). The cheat flips a bit of element 0: P's row 0 is [1, 0, ...], and the
  // gathered row is a random initial weight, so both reach the proof.
  for (const std::string& node : {std::string("h0.attn.mix"), std::string("h0.attn.softmax"), std::string("h0.mlp.gelu"),
                                  std::string("wte.embedding")}) {
    ProcessResult run = Polnode({"devnet", "--home", dir_.File("devnet-" + node), "--tasks", "2",
                                 "--model", solver::testing::kTinyGptSpec, "--data",
                                 dir_.File("corpus.txt"), "--steps", "24", "--checkpoint-interval",
                                 "6", "--batch", "4", "--segments", "1", "--cheat",
                                 "step=20,node=" + node, "--timeout-s", "600", "--json"});
    ASSERT_EQ(run.exit_code, 0) << node << ": " << run.err << run.out;
    for (const std::string& want : {std::string("\"all_settled\":true"), std::string("\"audits_match\":true"),
                                   std::string("OUTCOME_REJECTED"), "\"node\":\"" + node + "\"",
                                   std::string("\"step\":20"), std::string("\"winner\":\"verifier-honest\"")}) {
      EXPECT_NE(run.out.find(want), std::string::npos) << want << " in " << run.out;
    }
  }
}

}  // namespace
}  // namespace polnode::testing
