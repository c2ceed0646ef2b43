// The invariant of DESIGN.md section 3 at the level of whole training runs on Fashion-MNIST: the
// same state hash for every thread count and every backend, and the same hash as last time
// (golden values committed in tests/solver/data/golden_state_hashes.txt).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "polnode/consensus/hex.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/trainer.h"
#include "polnode/testing/fashion_mnist.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::solver {
namespace {

std::string TrainHash(const TrainConfig& c, const ImageDataset& data,
                      const std::string& backend_name, int threads) {
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend(backend_name, threads);
  EXPECT_TRUE(backend.ok()) << backend.status().ToString();
  if (!backend.ok()) return "";
  Result<TrainSummary> s = TrainOnData(c, data, **backend, nullptr);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? s->state_hash_hex : "";
}

TrainConfig RunConfig(const std::string& model, OptimizerKind kind, std::int64_t steps,
                      std::int64_t batch) {
  TrainConfig c;
  c.model = model;
  c.steps = steps;
  c.batch = batch;
  c.seed = 2024;
  c.evaluate = false;
  c.optimizer.kind = kind;
  if (kind == OptimizerKind::kAdam) {
    c.optimizer.lr = 1e-3f;
    c.optimizer.weight_decay = 0.01f;
  } else {
    c.optimizer.lr = 0.05f;
    c.optimizer.momentum = 0.9f;
    c.optimizer.weight_decay = 1e-4f;
  }
  return c;
}

TEST(DeterminismTest, MlpTwoHundredStepsSameHashOnOneTwoAndThreeThreads) {
  POLNODE_REQUIRE_FASHION_MNIST(data);
  const TrainConfig c = RunConfig("mlp:784-128-64-10", OptimizerKind::kSgd, 200, 32);
  const std::string one = TrainHash(c, *data, "cpu", 1);
  EXPECT_EQ(one, TrainHash(c, *data, "cpu", 2));
  EXPECT_EQ(one, TrainHash(c, *data, "cpu", 3));
}

TEST(DeterminismTest, CnnTwoHundredStepsSameHashOnOneAndTwoThreads) {
  POLNODE_REQUIRE_FASHION_MNIST(data);
  const TrainConfig c = RunConfig("cnn:c4-p-c8-p-f32-10", OptimizerKind::kAdam, 200, 16);
  EXPECT_EQ(TrainHash(c, *data, "cpu", 1), TrainHash(c, *data, "cpu", 2));
}

// name -> the run whose final state hash is recorded under that name.
const std::map<std::string, TrainConfig>& GoldenRuns() {
  static const std::map<std::string, TrainConfig> runs = {
      {"mlp-sgd", RunConfig("mlp:784-64-10", OptimizerKind::kSgd, 20, 32)},
      {"mlp-adam", RunConfig("mlp:784-64-10", OptimizerKind::kAdam, 20, 32)},
      {"cnn-sgd", RunConfig("cnn:c4-p-c8-p-10", OptimizerKind::kSgd, 10, 16)},
  };
  return runs;
}

std::map<std::string, std::string> ReadGoldenFile() {
  std::map<std::string, std::string> golden;
  std::ifstream f(std::string(POLNODE_SOURCE_DIR) + "/tests/solver/data/golden_state_hashes.txt");
  EXPECT_TRUE(f.good()) << "tests/solver/data/golden_state_hashes.txt is missing";
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string name, hash;
    words >> name >> hash;
    golden[name] = hash;
  }
  return golden;
}

TEST(DeterminismTest, FashionMnistContentHashIsGolden) {
  POLNODE_REQUIRE_FASHION_MNIST(data);
  const std::string actual = consensus::ToHex(DatasetContentHash(*data));
  EXPECT_EQ(ReadGoldenFile()["fashion-mnist"], actual) << "expected line: fashion-mnist " << actual;
}

TEST(DeterminismTest, ReferenceAndCpuBackendsReproduceTheGoldenHashes) {
  POLNODE_REQUIRE_FASHION_MNIST(data);
  const std::map<std::string, std::string> golden = ReadGoldenFile();
  for (const auto& [name, config] : GoldenRuns()) {
    const std::string reference = TrainHash(config, *data, "reference", 1);
    EXPECT_EQ(reference, TrainHash(config, *data, "cpu", 2)) << name;
    const auto it = golden.find(name);
    EXPECT_TRUE(it != golden.end() && it->second == reference)
        << "the evaluation order changed, or the golden file lacks it; expected line: " << name
        << " " << reference;
  }
}

// The golden hashes hold for the path proofs take too: each golden run, posed as a task, proves to
// a final checkpoint with the golden state hash.
TEST(DeterminismTest, TheProverCommitsToTheGoldenHashes) {
  POLNODE_REQUIRE_FASHION_MNIST(data);
  const std::map<std::string, std::string> golden = ReadGoldenFile();
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("cpu", 2);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  for (const auto& [name, config] : GoldenRuns()) {
    TaskSpec task;
    task.model = config.model;
    task.dataset_hash = DatasetContentHash(*data);
    task.optimizer = config.optimizer;
    task.batch = config.batch;
    task.steps = config.steps;
    task.checkpoint_interval = config.steps / 2;
    task.seed = config.seed;
    polnode::testing::TempDir dir("golden-prove");
    ProveOptions options;
    options.out_dir = dir.path();
    Result<ProveResult> proved = Prove(task, *data, **backend, options);
    ASSERT_TRUE(proved.ok()) << name << ": " << proved.status().ToString();
    ASSERT_EQ(proved->manifest.checkpoint_hashes.size(), 3u);
    EXPECT_EQ(consensus::ToHex(proved->manifest.checkpoint_hashes.back()), golden.at(name)) << name;
  }
}

}  // namespace
}  // namespace polnode::solver
