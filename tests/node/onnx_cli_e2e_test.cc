// End to end: the real polnode binary proves a tiny task (MLP and CNN), `polnode export` writes
// the final state as ONNX, and onnxruntime (tests/onnx_run.py, Debian's python3) runs it on the
// test split: its logits match polnode's forward pass (max |ort - polnode| <= 1e-5 * max |polnode|)
// and its classes are the ones `polnode evaluate --predict` prints. `polnode import` reads the
// exported file back and names what it cannot map. Without onnxruntime the test fails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/kernels/backend.h"
#include "polnode/onnx.pb.h"
#include "polnode/solver/init.h"
#include "polnode/solver/onnx_model.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/proof_manifest.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/step_runner.h"
#include "polnode/solver/text_data.h"
#include "polnode/solver/trainer.h"
#include "polnode/solver/train_state.h"
#include "polnode/testing/data_files.h"
#include "polnode/testing/onnx_runtime.h"
#include "polnode/testing/status_matchers.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_gpt.h"
#include "polnode/testing/tiny_task.h"

namespace polnode::testing {
namespace {

class OnnxCliTest : public ::testing::TestWithParam<std::string> {
 protected:
  OnnxCliTest() {
    const solver::ImageDataset data = solver::testing::TinyDataset();
    std::filesystem::create_directory(dir_.File("data"));
    EXPECT_TRUE(IsOk(WriteIdxDataset(dir_.File("data"), data)));
    task_ = solver::testing::TinyTask(data);
    task_.model = GetParam();
    task_.data_location = dir_.File("data");
    std::ofstream(dir_.File("task.toml")) << solver::testing::TinyTaskToml(task_);
  }

  ProcessResult Polnode(std::vector<std::string> args) {
    args.insert(args.begin(), PolnodeBinary());
    return RunProcess(args, dir_.path());
  }

  TempDir dir_;
  solver::TaskSpec task_;
};

TEST_P(OnnxCliTest, ExportedModelRunsInOnnxRuntimeWithPolnodesOutputs) {
  ASSERT_EQ(Polnode({"keygen", "--out", "solver.key"}).exit_code, 0);
  ProcessResult prove = Polnode({"prove", "--task", "task.toml", "--out", "proof", "--key", "solver.key"});
  ASSERT_EQ(prove.exit_code, 0) << prove.err;
  const std::string wire = ReadFileText(dir_.File("proof/manifest.pb"));
  Result<solver::ProofManifest> manifest =
      solver::DecodeManifest({reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()});
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  const std::string final_state = "proof/blobs/" + consensus::ToHex(manifest->checkpoint_blobs.back());

  ProcessResult exported = Polnode({"export", "--task", "task.toml", "--model", final_state, "--out", "model.onnx"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.out.find("opset 17, input 'input'"), std::string::npos) << exported.out;

  // polnode's logits for the whole test split, from the same state and the data as polnode loads it.
  Result<solver::ImageDataset> data = solver::LoadTaskData(task_);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  Result<std::vector<std::uint8_t>> state_bytes = ReadWholeFile(dir_.File(final_state), 1 << 20);
  ASSERT_TRUE(state_bytes.ok());
  Result<solver::TrainState> state = solver::DecodeState(*state_bytes);
  ASSERT_TRUE(state.ok());
  Result<solver::ModelSpec> model = solver::ParseModelSpec(task_.model);
  ASSERT_TRUE(model.ok());
  const std::int64_t n = data->test.count;
  Result<solver::StepGraph> graph = solver::BuildForwardGraph(*model, n);
  ASSERT_TRUE(graph.ok());
  Result<solver::StepRunner> runner = solver::StepRunner::Create(*graph);
  ASSERT_TRUE(runner.ok());
  std::vector<std::uint32_t> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0u);
  kernels::Tensor images, labels;
  ASSERT_TRUE(solver::GatherBatch(data->test, all, graph->images_shape, images, labels).ok());
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  Result<const kernels::Tensor*> logits = runner->Forward(*state, images, **backend);
  ASSERT_TRUE(logits.ok());

  std::vector<float> ort;
  ASSERT_NO_FATAL_FAILURE(ExpectOnnxRuntimeMatches(dir_.path(), dir_.File("model.onnx"), images, **logits, &ort));

  // onnxruntime's classes are what `polnode evaluate` predicts.
  ProcessResult eval = Polnode({"evaluate", "--task", "task.toml", "--model", final_state, "--predict",
                                std::to_string(n), "--json"});
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  const std::int64_t classes = (*logits)->dim(1);
  std::string expected = "\"predictions\":[";
  for (std::int64_t b = 0; b < n; ++b) {
    const auto row = ort.begin() + b * classes;
    const std::int64_t predicted = std::max_element(row, row + classes) - row;
    expected += std::string(b ? "," : "") + "{\"predicted\":" + std::to_string(predicted) +
                ",\"label\":" + std::to_string(int{data->test.labels[static_cast<std::size_t>(b)]}) + "}";
  }
  EXPECT_NE(eval.out.find(expected + "]"), std::string::npos) << expected << "\n" << eval.out;

  // The exported file imports back to the task's model.
  ProcessResult imported = Polnode({"import", "model.onnx"});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_NE(imported.out.find("maps to        " + task_.model + "\n"), std::string::npos) << imported.out;
}

INSTANTIATE_TEST_SUITE_P(MlpAndCnn, OnnxCliTest, ::testing::Values("mlp:16-8-3", "cnn:i1x4x4-c4-p-f8-3"));

TEST(OnnxImportCliTest, UnsupportedOperatorsAndGarbageAreClearErrors) {
  TempDir dir("onnx-cli");
  Result<solver::ModelSpec> model = solver::ParseModelSpec("mlp:16-8-3");
  ASSERT_TRUE(model.ok());
  solver::TrainState state;
  for (const solver::ParamSpec& p : model->params) state.tensors.push_back({p.name, kernels::Tensor(p.shape)});
  Result<std::string> bytes = solver::ExportOnnx(*model, state);
  ASSERT_TRUE(bytes.ok());
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(*bytes));
  m.mutable_graph()->mutable_node(1)->set_op_type("Sigmoid");
  ASSERT_TRUE(WriteFileAtomically(dir.File("sigmoid.onnx"), m.SerializeAsString()).ok());
  ASSERT_TRUE(WriteFileAtomically(dir.File("garbage.onnx"), std::string("\xff\xff\xff not onnx")).ok());

  ProcessResult sigmoid = RunProcess({PolnodeBinary(), "import", dir.File("sigmoid.onnx")});
  EXPECT_NE(sigmoid.exit_code, 0);
  EXPECT_NE(sigmoid.err.find("node 'fc1.relu' (Sigmoid): unsupported operator Sigmoid"), std::string::npos)
      << sigmoid.err;
  ProcessResult garbage = RunProcess({PolnodeBinary(), "import", dir.File("garbage.onnx")});
  EXPECT_NE(garbage.exit_code, 0);
  EXPECT_NE(garbage.err.find("not an ONNX model"), std::string::npos) << garbage.err;
}

// A task whose model is an ONNX file by hash: proven on 1 and 2 threads to the same final state,
// verified, exported; a file whose hash differs is refused before any training.
TEST(OnnxTaskCliTest, AnOnnxTaskProvesVerifiesAndExportsAndAnotherFileIsRefused) {
  TempDir dir("onnx-task");
  const solver::ImageDataset data = solver::testing::TinyDataset();
  std::filesystem::create_directory(dir.File("data"));
  ASSERT_TRUE(IsOk(WriteIdxDataset(dir.File("data"), data)));
  Result<solver::ModelSpec> model = solver::ParseModelSpec("mlp:16-8-3");
  ASSERT_TRUE(model.ok());
  // The starting weights come from the file (seed 99), not from the task's seed.
  Result<std::string> start = solver::ExportOnnx(*model, solver::InitialState(*model, solver::OptimizerKind::kSgd, 99));
  ASSERT_TRUE(start.ok());
  ASSERT_TRUE(WriteFileAtomically(dir.File("start.onnx"), *start).ok());
  solver::TaskSpec task = solver::testing::TinyTask(data);
  task.model = "onnx:" + consensus::ToHex(consensus::Sha256(*start));
  task.data_location = dir.File("data");
  std::ofstream(dir.File("task.toml")) << solver::testing::TinyTaskToml(task) << "model_file = \"start.onnx\"\n";
  const auto polnode = [&](std::vector<std::string> args) {
    args.insert(args.begin(), PolnodeBinary());
    return RunProcess(args, dir.path());
  };
  ASSERT_EQ(polnode({"keygen", "--out", "solver.key"}).exit_code, 0);
  const auto final_state = [&](const std::string& proof) {
    const std::string wire = ReadFileText(dir.File(proof + "/manifest.pb"));
    Result<solver::ProofManifest> manifest =
        solver::DecodeManifest({reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()});
    EXPECT_TRUE(manifest.ok());
    return manifest.ok() ? consensus::ToHex(manifest->checkpoint_hashes.back()) : std::string();
  };
  for (const char* threads : {"1", "2"}) {
    ProcessResult prove = polnode({"prove", "--task", "task.toml", "--out", std::string("proof") + threads, "--key",
                                   "solver.key", "--threads", threads});
    ASSERT_EQ(prove.exit_code, 0) << prove.err;
  }
  EXPECT_EQ(final_state("proof1"), final_state("proof2"));
  ProcessResult verify = polnode({"verify", "--proof", "proof1", "--task", "task.toml", "--segments", "8", "--beacon",
                                  consensus::ToHex(consensus::Sha256(std::string("beacon")))});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;

  // The imported model trained: its first checkpoint holds the file's weights, and the export of
  // its last maps back to the same layers.
  const std::string wire = ReadFileText(dir.File("proof1/manifest.pb"));
  Result<solver::ProofManifest> manifest =
      solver::DecodeManifest({reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()});
  ASSERT_TRUE(manifest.ok());
  ASSERT_EQ(consensus::ToHex(manifest->checkpoint_hashes.front()),
            consensus::ToHex(solver::StateHash(solver::InitialState(*model, solver::OptimizerKind::kSgd, 99))));
  const std::string last = "proof1/blobs/" + consensus::ToHex(manifest->checkpoint_blobs.back());
  ProcessResult exported = polnode({"export", "--task", "task.toml", "--model", last, "--out", "trained.onnx"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  ProcessResult imported = polnode({"import", "trained.onnx"});
  EXPECT_NE(imported.out.find("maps to        mlp:16-8-3\n"), std::string::npos) << imported.out << imported.err;

  // Another file under the task's model_file: refused by hash, nothing trained or written.
  Result<std::string> other = solver::ExportOnnx(*model, solver::InitialState(*model, solver::OptimizerKind::kSgd, 100));
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(WriteFileAtomically(dir.File("start.onnx"), *other).ok());
  ProcessResult refused = polnode({"prove", "--task", "task.toml", "--out", "proof3", "--key", "solver.key"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("model file start.onnx has SHA-256"), std::string::npos) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(dir.File("proof3/manifest.pb")));
}

// A GPT task whose model is an ONNX file (polnode's export of a tiny GPT's seed-99 weights) and
// whose data is a text file: `polnode import` names the architecture, proving on 1 and 2 threads
// reaches the same final state, it verifies, and the delivered state exports to a file that
// onnxruntime runs with polnode's logits and that imports back to the same gpt: model.
TEST(OnnxGptCliTest, AnOnnxGptTaskProvesVerifiesExportsAndImportsBack) {
  TempDir dir("onnx-gpt-task");
  std::ofstream(dir.File("corpus.txt")) << solver::testing::TinyCorpusText();
  const solver::ImageDataset data = solver::testing::TinyTextDataset();
  Result<solver::ModelSpec> model = solver::ModelForData(solver::testing::kTinyGptSpec, data);
  ASSERT_TRUE(model.ok());
  const solver::TrainState start_state = solver::InitialState(*model, solver::OptimizerKind::kAdam, 99);
  Result<std::string> start = solver::ExportOnnx(*model, start_state);
  ASSERT_TRUE(start.ok()) << start.status().ToString();
  ASSERT_TRUE(WriteFileAtomically(dir.File("start.onnx"), *start).ok());
  const std::string spec = std::string(solver::testing::kTinyGptSpec) + ",vocab=" + std::to_string(model->gpt->vocab);
  std::ofstream(dir.File("task.toml"))
      << "model = \"onnx:" << consensus::ToHex(consensus::Sha256(*start)) << "\"\n"
      << "model_file = \"start.onnx\"\n"
      << "data = \"corpus.txt\"\n"
      << "dataset_hash = \"" << consensus::ToHex(solver::DatasetContentHash(data)) << "\"\n"
      << "optimizer = \"adam\"\nlr = 0.01\nweight_decay = 0.1\nbatch = 4\nsteps = 12\n"
      << "checkpoint_interval = 6\nseed = 7\nsegments = 2\n";
  const auto polnode = [&](std::vector<std::string> args) {
    args.insert(args.begin(), PolnodeBinary());
    return RunProcess(args, dir.path());
  };
  ProcessResult described = polnode({"import", "start.onnx"});
  ASSERT_EQ(described.exit_code, 0) << described.err;
  EXPECT_NE(described.out.find("maps to        " + spec + "\n"), std::string::npos) << described.out;
  EXPECT_NE(described.out.find("architecture   GPT: 1 blocks, 2 heads of 8, width 16, context 8"), std::string::npos)
      << described.out;
  EXPECT_NE(described.out.find("'input' int64 token ids [batch, 8]"), std::string::npos) << described.out;

  ASSERT_EQ(polnode({"keygen", "--out", "solver.key"}).exit_code, 0);
  for (const char* threads : {"1", "2"}) {
    ProcessResult prove = polnode({"prove", "--task", "task.toml", "--out", std::string("proof") + threads, "--key",
                                   "solver.key", "--threads", threads});
    ASSERT_EQ(prove.exit_code, 0) << prove.err;
  }
  const auto manifest_of = [&](const std::string& proof) {
    const std::string wire = ReadFileText(dir.File(proof + "/manifest.pb"));
    return solver::DecodeManifest({reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()});
  };
  Result<solver::ProofManifest> one = manifest_of("proof1");
  Result<solver::ProofManifest> two = manifest_of("proof2");
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_EQ(consensus::ToHex(one->checkpoint_hashes.back()), consensus::ToHex(two->checkpoint_hashes.back()));
  EXPECT_EQ(consensus::ToHex(one->checkpoint_hashes.front()), consensus::ToHex(solver::StateHash(start_state)));
  ProcessResult verify = polnode({"verify", "--proof", "proof1", "--task", "task.toml", "--segments", "4", "--beacon",
                                  consensus::ToHex(consensus::Sha256(std::string("gpt")))});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;

  const std::string last = "proof1/blobs/" + consensus::ToHex(one->checkpoint_blobs.back());
  ProcessResult exported = polnode({"export", "--task", "task.toml", "--model", last, "--out", "trained.onnx"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.out.find("input 'input' int64 token ids [batch, 8], output 'logits' float32 [batch, 8, "),
            std::string::npos)
      << exported.out;
  ProcessResult imported = polnode({"import", "trained.onnx"});
  EXPECT_NE(imported.out.find("maps to        " + spec + "\n"), std::string::npos) << imported.out << imported.err;

  // onnxruntime on the delivered file: polnode's logits for one batch of windows.
  Result<std::vector<std::uint8_t>> state_bytes = ReadWholeFile(dir.File(last), 1 << 24);
  ASSERT_TRUE(state_bytes.ok());
  Result<solver::TrainState> state = solver::DecodeState(*state_bytes);
  ASSERT_TRUE(state.ok());
  kernels::Tensor ids, targets;
  ASSERT_TRUE(solver::GatherTextBatch(*data.text, 3, 0, 4, 8, ids, targets).ok());
  Result<solver::StepGraph> graph = solver::BuildForwardGraph(*model, 4);
  ASSERT_TRUE(graph.ok());
  Result<solver::StepRunner> runner = solver::StepRunner::Create(*graph);
  ASSERT_TRUE(runner.ok());
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  Result<const kernels::Tensor*> logits = runner->Forward(*state, ids, **backend);
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  ExpectOnnxRuntimeMatches(dir.path(), dir.File("trained.onnx"), ids, **logits);
}

}  // namespace
}  // namespace polnode::testing
