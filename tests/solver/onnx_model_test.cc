// ONNX import and export (solver/onnx_model.h) against the real tools: PyTorch writes the files
// (torch.onnx.export through Debian's python3-torch) and onnxruntime runs what polnode exports.
// Neither is mocked; without them the tests fail, naming scripts/install-deps.sh.
//
// Agreement bound: max |polnode - peer| <= 1e-5 * max |peer| over the batch's logits (the two
// sides sum in different orders, so bits differ).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/kernels/backend.h"
#include "polnode/onnx.pb.h"
#include "polnode/solver/init.h"
#include "polnode/solver/onnx_model.h"
#include "polnode/solver/onnx_origin.h"
#include "polnode/solver/philox.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/step_runner.h"
#include "polnode/solver/task_steps.h"
#include "polnode/solver/text_data.h"
#include "polnode/solver/trainer.h"
#include "polnode/testing/data_files.h"
#include "polnode/testing/fashion_mnist.h"
#include "polnode/testing/onnx_runtime.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_gpt.h"
#include "polnode/testing/torch_files.h"

namespace polnode::solver {
namespace {

using polnode::testing::kTorchPython;

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// Runs tests/solver/onnx_torch_export.py KIND DIR [EXTRA]; true on success.
bool TorchExport(const std::string& kind, const std::string& dir, const std::string& extra = "") {
  const std::string cmd = std::string(kTorchPython) + " " + POLNODE_SOURCE_DIR "/tests/solver/onnx_torch_export.py " +
                          kind + " " + Quote(dir) + " " + extra + " >" + Quote(dir + "/export.log") + " 2>&1";
  return std::system(cmd.c_str()) == 0;
}

std::vector<std::uint8_t> ReadBytes(const std::string& path) {
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(path, kMaxOnnxBytes);
  return bytes.ok() ? *bytes : std::vector<std::uint8_t>{};
}

// max |a - b| / max |b|.
double RelativeError(std::span<const float> a, std::span<const float> b) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

// polnode's logits for `inputs` (any shape with the model's per-sample element count).
std::vector<float> PolnodeLogits(const ModelSpec& model, const TrainState& state, const std::vector<float>& inputs,
                                 std::int64_t batch) {
  Result<StepGraph> graph = BuildForwardGraph(model, batch);
  EXPECT_TRUE(graph.ok());
  Result<StepRunner> runner = StepRunner::Create(*graph);
  EXPECT_TRUE(runner.ok());
  Result<kernels::Tensor> images = kernels::Tensor::FromValues(graph->images_shape, inputs);
  EXPECT_TRUE(images.ok()) << images.status().ToString();
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("cpu", 1);
  EXPECT_TRUE(backend.ok());
  Result<const kernels::Tensor*> logits = runner->Forward(state, *images, **backend);
  EXPECT_TRUE(logits.ok()) << logits.status().ToString();
  return std::vector<float>((*logits)->values().begin(), (*logits)->values().end());
}

// onnxruntime's output for `model` on `inputs` of `shape` (tests/onnx_run.py).
std::vector<float> OnnxRuntimeLogits(const std::string& dir, const std::string& model,
                                     const std::vector<float>& inputs, const kernels::Shape& shape) {
  Result<kernels::Tensor> x = kernels::Tensor::FromValues(shape, inputs);
  EXPECT_TRUE(x.ok());
  if (!x.ok()) return {};
  Result<std::vector<float>> y = polnode::testing::OnnxRuntimeOutput(dir, model, *x);
  EXPECT_TRUE(y.ok()) << y.status().ToString();
  return y.ok() ? *y : std::vector<float>{};
}

// Trains `steps` SGD-momentum steps of batch 32 on Fashion-MNIST from `state` with `threads`.
TrainState TrainSteps(const ModelSpec& model, TrainState state, const ImageDataset& data, int threads, int steps) {
  OptimizerConfig opt;
  opt.lr = 0.05f;
  const std::int64_t batch = 32;
  Result<StepGraph> graph = BuildTrainStepGraph(model, opt, batch);
  EXPECT_TRUE(graph.ok());
  Result<StepRunner> runner = StepRunner::Create(*graph);
  EXPECT_TRUE(runner.ok());
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("cpu", threads);
  EXPECT_TRUE(backend.ok());
  const std::vector<std::uint32_t> order = EpochPermutation(5, 0, static_cast<std::uint32_t>(data.train.count));
  for (int s = 0; s < steps; ++s) {
    kernels::Tensor images, labels;
    EXPECT_TRUE(GatherBatch(data.train, std::span(order).subspan(static_cast<std::size_t>(s * batch), batch),
                            graph->images_shape, images, labels)
                    .ok());
    Result<float> loss = runner->Step(state, images, labels, **backend);
    EXPECT_TRUE(loss.ok()) << loss.status().ToString();
  }
  return state;
}

// Runs `task` from its initial state, which must hold the imported parameters, on `threads`.
TrainState TrainTask(const TaskSpec& task, const ImageDataset& data, const std::vector<NamedTensor>& imported,
                     int threads) {
  Result<TaskStepper> stepper = TaskStepper::Create(task, data);
  EXPECT_TRUE(stepper.ok()) << stepper.status().ToString();
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("cpu", threads);
  EXPECT_TRUE(backend.ok());
  TrainState state = stepper->Initial();
  for (std::size_t i = 0; i < imported.size(); ++i) {
    EXPECT_TRUE(state.tensors[i].tensor.BitwiseEqual(imported[i].tensor)) << imported[i].name;
  }
  while (state.step < task.steps) EXPECT_TRUE(stepper->Step(state, **backend).ok());
  return state;
}

class OnnxTorchTest : public ::testing::TestWithParam<std::string> {};

// The whole path for a PyTorch export: import, forward equal to PyTorch's, a few training steps
// with the same state hash on 1 and 2 threads, export, and onnxruntime equal to polnode's forward.
TEST_P(OnnxTorchTest, ImportsTrainsAndExportsATorchModel) {
  POLNODE_REQUIRE_FASHION_MNIST(data);
  ASSERT_TRUE(polnode::testing::TorchAvailable()) << kTorchPython << " cannot import torch (scripts/install-deps.sh)";
  polnode::testing::TempDir dir("onnx");
  ASSERT_TRUE(TorchExport(GetParam(), dir.path())) << "torch.onnx.export failed, see " << dir.File("export.log");
  const std::vector<std::uint8_t> file = ReadBytes(dir.File("model.onnx"));
  Result<OnnxImport> imported = ImportOnnx(file);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  EXPECT_EQ(imported->spec, GetParam() == "mlp" ? "mlp:784-32-10" : "cnn:i1x28x28-c4-p-c8-p-f16-10");
  EXPECT_EQ(imported->opset, 17);
  EXPECT_EQ(imported->input_name, "input");
  EXPECT_EQ(imported->output_name, "logits");
  EXPECT_EQ(imported->input_shape, (kernels::Shape{1, 28, 28}));
  EXPECT_EQ(imported->parameter_count, GetParam() == "mlp" ? 784 * 32 + 32 + 32 * 10 + 10
                                                             : 4 * 9 + 4 + 8 * 4 * 9 + 8 + 392 * 16 + 16 + 16 * 10 + 10);

  const std::vector<float> x = polnode::testing::ReadRawFloats(dir.File("x.bin"));
  const std::vector<float> torch_y = polnode::testing::ReadRawFloats(dir.File("y.bin"));
  ASSERT_EQ(x.size(), 8u * 784u);
  ASSERT_EQ(torch_y.size(), 80u);
  const TrainState initial = ImportedInitialState(imported->model, imported->params, OptimizerKind::kSgd);
  const std::vector<float> ours = PolnodeLogits(imported->model, initial, x, 8);
  EXPECT_LE(RelativeError(ours, torch_y), 1e-5);
  RecordProperty("torch_relative_error", ::testing::PrintToString(RelativeError(ours, torch_y)));

  const TrainState one = TrainSteps(imported->model, initial, *data, 1, 3);
  const TrainState two = TrainSteps(imported->model, initial, *data, 2, 3);
  EXPECT_EQ(one.step, 3);
  EXPECT_EQ(consensus::ToHex(StateHash(one)), consensus::ToHex(StateHash(two)));
  EXPECT_NE(consensus::ToHex(StateHash(one)), consensus::ToHex(StateHash(initial)));

  Result<std::string> exported = ExportOnnx(imported->model, one);
  ASSERT_TRUE(exported.ok()) << exported.status().ToString();
  ASSERT_TRUE(WriteFileAtomically(dir.File("trained.onnx"), *exported).ok());
  const std::vector<float> trained = PolnodeLogits(imported->model, one, x, 8);
  const kernels::Shape shape = GetParam() == "mlp" ? kernels::Shape{8, 784} : kernels::Shape{8, 1, 28, 28};
  const std::vector<float> ort = OnnxRuntimeLogits(dir.path(), dir.File("trained.onnx"), x, shape);
  ASSERT_EQ(ort.size(), trained.size());
  EXPECT_LE(RelativeError(ort, trained), 1e-5);
  RecordProperty("onnxruntime_relative_error", ::testing::PrintToString(RelativeError(ort, trained)));
}

INSTANTIATE_TEST_SUITE_P(MlpAndCnn, OnnxTorchTest, ::testing::Values("mlp", "cnn"));

// polnode's own export imports back to the same spec and the same parameter bits.
TEST(OnnxModelTest, ExportThenImportKeepsSpecAndBits) {
  for (const char* text : {"mlp:16-8-3", "cnn:i2x6x6-c3-p-f5-4", "cnn:i1x4x4-p-c2-3"}) {
    Result<ModelSpec> model = ParseModelSpec(text);
    ASSERT_TRUE(model.ok());
    const TrainState state = InitialState(*model, OptimizerKind::kAdam, 3);
    Result<std::string> bytes = ExportOnnx(*model, state);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    Result<std::string> again = ExportOnnx(*model, state);
    EXPECT_EQ(*bytes, *again) << "export is deterministic";
    Result<OnnxImport> back = ImportOnnx(std::span(reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size()));
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().ToString();
    EXPECT_EQ(back->spec, std::string(text).starts_with("cnn:i1x4x4") ? "cnn:i1x4x4-p-c2-3" : text);
    ASSERT_EQ(back->params.size(), model->params.size());
    for (std::size_t i = 0; i < model->params.size(); ++i) {
      EXPECT_EQ(back->params[i].name, model->params[i].name);
      EXPECT_TRUE(back->params[i].tensor.BitwiseEqual(state.tensors[i].tensor)) << model->params[i].name;
    }
    const TrainState restarted = ImportedInitialState(back->model, back->params, OptimizerKind::kAdam);
    ASSERT_EQ(restarted.tensors.size(), state.tensors.size());
    for (std::size_t i = 0; i < state.tensors.size(); ++i) EXPECT_EQ(restarted.tensors[i].name, state.tensors[i].name);
  }
}

Result<OnnxImport> ImportProto(const onnx::ModelProto& m) {
  const std::string bytes = m.SerializeAsString();
  return ImportOnnx(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

// The GPT of the brief, trained a few AdamW steps on the tiny corpus, and its windows.
struct TrainedGpt {
  ModelSpec model;
  TrainState initial, trained;
  kernels::Tensor ids, targets;  // one batch of 4 windows
};

TrainedGpt TrainGpt(const std::string& spec, int threads, int steps) {
  TrainedGpt out;
  const ImageDataset data = testing::TinyTextDataset();
  Result<ModelSpec> model = ModelForData(spec, data);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  out.model = *model;
  OptimizerConfig opt;
  opt.kind = OptimizerKind::kAdam;
  opt.lr = 1e-2f;
  const std::int64_t batch = 4;
  Result<StepGraph> graph = BuildTrainStepGraph(out.model, opt, batch);
  EXPECT_TRUE(graph.ok());
  Result<StepRunner> runner = StepRunner::Create(*graph);
  EXPECT_TRUE(runner.ok());
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("cpu", threads);
  EXPECT_TRUE(backend.ok());
  out.initial = InitialState(out.model, opt.kind, 11);
  out.trained = out.initial;
  for (int s = 0; s < steps; ++s) {
    EXPECT_TRUE(GatherTextBatch(*data.text, 11, s, batch, out.model.gpt->context, out.ids, out.targets).ok());
    Result<float> loss = runner->Step(out.trained, out.ids, out.targets, **backend);
    EXPECT_TRUE(loss.ok()) << loss.status().ToString();
  }
  return out;
}

// A trained gpt: state exported as ONNX runs in onnxruntime with polnode's logits on the same
// windows, and the export is deterministic.
TEST(OnnxGptTest, ExportedGptRunsInOnnxRuntimeWithPolnodesLogits) {
  const std::string spec = "gpt:layers=2,heads=4,width=64,context=32";
  const TrainedGpt gpt = TrainGpt(spec, 2, 3);
  ASSERT_FALSE(HasFailure());
  Result<std::string> bytes = ExportOnnx(gpt.model, gpt.trained);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, *ExportOnnx(gpt.model, gpt.trained)) << "export is deterministic";
  polnode::testing::TempDir dir("onnx-gpt");
  ASSERT_TRUE(WriteFileAtomically(dir.File("gpt.onnx"), *bytes).ok());
  const std::vector<float> ids(gpt.ids.values().begin(), gpt.ids.values().end());
  const std::vector<float> ours = PolnodeLogits(gpt.model, gpt.trained, ids, 4);
  const std::vector<float> ort = OnnxRuntimeLogits(dir.path(), dir.File("gpt.onnx"), ids, {4, 32});
  ASSERT_EQ(ort.size(), ours.size());
  ASSERT_EQ(ours.size(), static_cast<std::size_t>(4 * 32 * gpt.model.gpt->vocab));
  EXPECT_LE(RelativeError(ours, ort), 1e-5);
  RecordProperty("onnxruntime_relative_error", ::testing::PrintToString(RelativeError(ours, ort)));
}

// polnode's own GPT export imports back to the same spec and the same parameter bits.
TEST(OnnxGptTest, ExportedGptImportsBackBitForBit) {
  const TrainedGpt gpt = TrainGpt("gpt:layers=2,heads=4,width=64,context=32", 1, 2);
  ASSERT_FALSE(HasFailure());
  Result<std::string> bytes = ExportOnnx(gpt.model, gpt.trained);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Result<OnnxImport> back = ImportOnnx(std::span(reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->spec, "gpt:layers=2,heads=4,width=64,context=32,vocab=" + std::to_string(gpt.model.gpt->vocab));
  EXPECT_EQ(back->input_name, "input");
  EXPECT_EQ(back->output_name, "logits");
  EXPECT_EQ(back->input_shape, (kernels::Shape{32}));
  EXPECT_EQ(back->opset, 17);
  ASSERT_EQ(back->params.size(), gpt.model.params.size());
  std::int64_t count = 0;
  for (std::size_t i = 0; i < back->params.size(); ++i) {
    EXPECT_EQ(back->params[i].name, gpt.model.params[i].name);
    EXPECT_TRUE(back->params[i].tensor.BitwiseEqual(gpt.trained.tensors[i].tensor)) << gpt.model.params[i].name;
    count += gpt.model.params[i].shape.empty() ? 0 : kernels::NumElements(gpt.model.params[i].shape);
  }
  EXPECT_EQ(back->parameter_count, count);
}

// A GPT written by torch.onnx.export (the architecture of the PyTorch agreement test) imports as
// a gpt: model whose forward is PyTorch's, and trains as an onnx: task on the text corpus with the
// same state hash on 1 and 2 threads; the trained state exports back and runs in onnxruntime.
TEST(OnnxGptTest, ATorchGptImportsMatchesPyTorchAndTrainsReproducibly) {
  ASSERT_TRUE(polnode::testing::TorchAvailable()) << kTorchPython << " cannot import torch (scripts/install-deps.sh)";
  const ImageDataset data = testing::TinyTextDataset();
  const std::int64_t vocab = data.text->vocab_size() + 3;  // a file may have more symbols than the corpus
  polnode::testing::TempDir dir("onnx-gpt");
  ASSERT_TRUE(TorchExport("gpt", dir.path(), std::to_string(vocab)))
      << polnode::testing::ReadFileText(dir.File("export.log"));
  const std::vector<std::uint8_t> file = ReadBytes(dir.File("model.onnx"));
  Result<OnnxImport> imported = ImportOnnx(file);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  EXPECT_EQ(imported->spec, "gpt:layers=2,heads=4,width=64,context=32,vocab=" + std::to_string(vocab));
  EXPECT_EQ(imported->parameter_count,
            vocab * 64 + 32 * 64 + 2 * (4 * 64 + 4 * 64 * 64 + 2 * 64 * 256) + 2 * 64 + 64 * vocab);
  const std::vector<float> x = polnode::testing::ReadRawFloats(dir.File("x.bin"));
  const std::vector<float> torch_y = polnode::testing::ReadRawFloats(dir.File("y.bin"));
  ASSERT_EQ(x.size(), 4u * 32u);
  ASSERT_EQ(torch_y.size(), static_cast<std::size_t>(4 * 32 * vocab));
  const TrainState initial = ImportedInitialState(imported->model, imported->params, OptimizerKind::kAdam);
  const std::vector<float> ours = PolnodeLogits(imported->model, initial, x, 4);
  EXPECT_LE(RelativeError(ours, torch_y), 1e-5);
  RecordProperty("torch_relative_error", ::testing::PrintToString(RelativeError(ours, torch_y)));

  TaskSpec task;
  task.model = "onnx:" + consensus::ToHex(consensus::Sha256(file));
  task.model_location = dir.File("model.onnx");
  task.dataset_hash = DatasetContentHash(data);
  task.batch = 4;
  task.steps = 4;
  task.checkpoint_interval = 2;
  task.seed = 5;
  task.optimizer.kind = OptimizerKind::kAdam;
  task.optimizer.lr = 1e-3f;
  ASSERT_TRUE(ValidateTask(task).ok());
  const TrainState one = TrainTask(task, data, imported->params, 1);
  const TrainState two = TrainTask(task, data, imported->params, 2);
  EXPECT_EQ(consensus::ToHex(StateHash(one)), consensus::ToHex(StateHash(two)));
  EXPECT_NE(consensus::ToHex(StateHash(one)), consensus::ToHex(StateHash(initial)));

  Result<std::string> exported = ExportOnnx(imported->model, one);
  ASSERT_TRUE(exported.ok()) << exported.status().ToString();
  ASSERT_TRUE(WriteFileAtomically(dir.File("trained.onnx"), *exported).ok());
  const std::vector<float> trained = PolnodeLogits(imported->model, one, x, 4);
  const std::vector<float> ort = OnnxRuntimeLogits(dir.path(), dir.File("trained.onnx"), x, {4, 32});
  ASSERT_EQ(ort.size(), trained.size());
  EXPECT_LE(RelativeError(trained, ort), 1e-5);

  // The model is a GPT: an image data set does not fit it.
  POLNODE_REQUIRE_FASHION_MNIST(images);
  Result<TaskStepper> refused = TaskStepper::Create(task, *images);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("a GPT, which trains on a text corpus"), std::string::npos)
      << refused.status().ToString();
}

TEST(OnnxGptTest, AnErfGeluIsRefusedNamingTheNode) {
  ASSERT_TRUE(polnode::testing::TorchAvailable()) << kTorchPython << " cannot import torch (scripts/install-deps.sh)";
  polnode::testing::TempDir dir("onnx-gpt");
  ASSERT_TRUE(TorchExport("gpt_erf", dir.path(), "20")) << polnode::testing::ReadFileText(dir.File("export.log"));
  Result<OnnxImport> r = ImportOnnx(ReadBytes(dir.File("model.onnx")));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("node '/Div' (Div): divides by sqrt(2), as GELU by Erf does; polnode's GELU is the tanh form"),
            std::string::npos)
      << r.status().ToString();
}

std::string ExportedGpt() {
  Result<ModelSpec> model = ParseModelSpec("gpt:layers=2,heads=2,width=8,context=4,vocab=5");
  return *ExportOnnx(*model, InitialState(*model, OptimizerKind::kSgd, 1));
}

onnx::NodeProto* FindNode(onnx::ModelProto& m, const std::string& name) {
  for (onnx::NodeProto& n : *m.mutable_graph()->mutable_node()) {
    if (n.name() == name) return &n;
  }
  return nullptr;
}

// Graphs that are not polnode's GPT are refused with the node and the reason.
TEST(OnnxGptTest, GraphsOffThePatternAreRefusedNamingTheNode) {
  onnx::ModelProto base;
  ASSERT_TRUE(base.ParseFromString(ExportedGpt()));
  ASSERT_TRUE(ImportProto(base).ok()) << ImportProto(base).status().ToString();
  const auto refused = [&](onnx::ModelProto m, const std::string& want) {
    Result<OnnxImport> r = ImportProto(m);
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().ToString();
  };
  {  // another activation in place of tanh
    onnx::ModelProto m = base;
    FindNode(m, "h1.mlp.gelu.tanh")->set_op_type("Sigmoid");
    refused(m, "node 'h1.mlp.gelu.tanh' (Sigmoid): unsupported operator Sigmoid");
  }
  {  // attention that may see the future: the mask's last row unmasked
    onnx::ModelProto m = base;
    onnx::NodeProto* mask = FindNode(m, "gpt.causal_mask");
    mask->mutable_attribute(0)->mutable_t()->set_int32_data(1, 0);
    refused(m, "node 'h0.attn.mask' (Where): is not the causal mask");
  }
  {  // a scale that is not 1/sqrt(D)
    onnx::ModelProto m = base;
    FindNode(m, "gpt.scale")->mutable_attribute(0)->mutable_t()->set_float_data(0, 0.25f);
    refused(m, "node 'h0.attn.scale' (Mul): scales the attention scores by 0.250000; polnode's attention scales them "
               "by 1/sqrt(4)");
  }
  {  // a LayerNorm epsilon polnode does not use
    onnx::ModelProto m = base;
    FindNode(m, "h0.ln2")->mutable_attribute(1)->set_f(1e-6f);
    refused(m, "node 'h0.ln2' (LayerNormalization): epsilon");
  }
  {  // the residual skipped: the MLP output is the stream
    onnx::ModelProto m = base;
    FindNode(m, "h1.mlp.residual")->set_input(0, "h1.mlp.proj");
    refused(m, "node 'h1.mlp.residual' (Add)");
  }
  {  // one weight used twice (tied q and k)
    onnx::ModelProto m = base;
    FindNode(m, "h0.attn.k")->set_input(1, "h0.attn.wq");
    refused(m, "initializer 'h0.attn.wq' is both h0.attn.wq and h0.attn.wk");
  }
  {  // a fixed batch size
    onnx::ModelProto m = base;
    m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(4);
    refused(m, "with a free batch");
  }
  {  // a value written twice
    onnx::ModelProto m = base;
    FindNode(m, "h0.attn.q")->set_output(0, "h0.ln1");
    refused(m, "node 'h0.attn.q' (MatMul): writes 'h0.ln1', which is already defined");
  }
}

// A Constant node named `name` holding `t`, placed first in the graph so any node may read it.
void PrependConstant(onnx::ModelProto& m, const std::string& name, onnx::TensorProto t) {
  onnx::GraphProto* g = m.mutable_graph();
  onnx::NodeProto* n = g->add_node();
  n->set_name(name);
  n->set_op_type("Constant");
  n->add_output(name);
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = std::move(t);
  for (int i = g->node_size() - 1; i > 0; --i) g->mutable_node()->SwapElements(i, i - 1);
}

onnx::TensorProto Int64Tensor(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& values) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  for (std::int64_t d : dims) t.add_dims(d);
  for (std::int64_t v : values) t.add_int64_data(v);
  return t;
}

onnx::TensorProto FloatTensor(const std::vector<std::int64_t>& dims, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (std::int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

// The first attention's Where mask replaced by Add of an additive mask of `dims` (0 on and below
// the diagonal, -inf above, row-major over T x T = 4 x 4).
onnx::ModelProto WithAdditiveMask(const onnx::ModelProto& base, const std::vector<std::int64_t>& dims) {
  onnx::ModelProto m = base;
  std::vector<float> mask;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) mask.push_back(j > i ? -std::numeric_limits<float>::infinity() : 0.0f);
  }
  PrependConstant(m, "test.additive_mask", FloatTensor(dims, mask));
  onnx::NodeProto* n = FindNode(m, "h0.attn.mask");
  const std::string scaled = n->input(2);
  n->set_op_type("Add");
  n->clear_input();
  n->add_input(scaled);
  n->add_input("test.additive_mask");
  return m;
}

// Hostile constants and shapes: refused with the node and the reason, without overflow (the
// debug preset's UBSan checks) or a large allocation first.
TEST(OnnxGptTest, HostileShapesAndConstantsAreRefusedNamingTheNode) {
  onnx::ModelProto base;
  ASSERT_TRUE(base.ParseFromString(ExportedGpt()));
  ASSERT_TRUE(ImportProto(base).ok()) << ImportProto(base).status().ToString();
  const auto refused = [&](const onnx::ModelProto& m, const std::string& want) {
    Result<OnnxImport> r = ImportProto(m);
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().ToString();
  };
  {  // a Reshape target whose element count passes int64
    onnx::ModelProto m = base;
    *FindNode(m, "gpt.heads_shape")->mutable_attribute(0)->mutable_t() =
        Int64Tensor({3}, {16777216, 16777216, 16777216});
    refused(m, "node 'h0.attn.q.split' (Reshape): the shape [16777216x16777216x16777216] has more elements than int64 counts");
  }
  {  // the additive mask is accepted as [T, T] and [1, 1, T, T]
    ASSERT_TRUE(ImportProto(WithAdditiveMask(base, {4, 4})).ok()) << ImportProto(WithAdditiveMask(base, {4, 4})).status().ToString();
    ASSERT_TRUE(ImportProto(WithAdditiveMask(base, {1, 1, 4, 4})).ok());
  }
  {  // an additive mask of T * T values in other shapes
    refused(WithAdditiveMask(base, {16}), "node 'h0.attn.mask' (Add): adds a mask of shape [16]");
    refused(WithAdditiveMask(base, {4, 1, 4}), "node 'h0.attn.mask' (Add): adds a mask of shape [4x1x4]");
  }
  {  // a Where mask [T, 1, T] (broadcasts over the heads when H == T) or [T * T]
    for (const std::vector<std::int64_t>& dims : {std::vector<std::int64_t>{4, 1, 4}, std::vector<std::int64_t>{16}}) {
      onnx::ModelProto m = base;
      onnx::TensorProto* t = FindNode(m, "gpt.causal_mask")->mutable_attribute(0)->mutable_t();
      t->clear_dims();
      for (std::int64_t d : dims) t->add_dims(d);
      refused(m, "node 'h0.attn.mask' (Where): is not the causal mask");
    }
  }
  {  // a constant whose dims ask for 2^24 values with no data
    onnx::ModelProto m = base;
    onnx::TensorProto* t = FindNode(m, "gpt.causal_mask")->mutable_attribute(0)->mutable_t();
    t->clear_dims();
    t->add_dims(4096);
    t->add_dims(4096);
    refused(m, "node 'gpt.causal_mask' (Constant) value holds the wrong amount of data for its dims");
  }
  {  // allowzero=1 on a view of wpe: the 0 is a zero dimension, not a copy of T
    onnx::ModelProto m = base;
    PrependConstant(m, "test.wpe_shape", Int64Tensor({2}, {0, 8}));
    onnx::NodeProto* view = m.mutable_graph()->add_node();
    view->set_name("test.wpe_view");
    view->set_op_type("Reshape");
    view->add_input("wpe");
    view->add_input("test.wpe_shape");
    view->add_output("test.wpe_view");
    for (int i = m.graph().node_size() - 1; i > 1; --i) m.mutable_graph()->mutable_node()->SwapElements(i, i - 1);
    FindNode(m, "wpe.bias_add")->set_input(1, "test.wpe_view");
    ASSERT_TRUE(ImportProto(m).ok()) << ImportProto(m).status().ToString();
    onnx::AttributeProto* a = FindNode(m, "test.wpe_view")->add_attribute();
    a->set_name("allowzero");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(1);
    refused(m, "node 'test.wpe_view' (Reshape): target dimension 0 is not supported");
  }
  {  // a float constant holding the batch marker, directly or through Cast to int64
    const float marker = -1099511627776.0f;  // -2^40
    onnx::ModelProto m = base;
    *FindNode(m, "gpt.merge_shape")->mutable_attribute(0)->mutable_t() = FloatTensor({3}, {marker, 4, 8});
    refused(m, "node 'gpt.merge_shape' (Constant) value holds -2^40, which polnode's GPT import reserves for the batch");
    onnx::ModelProto c = base;
    FindNode(c, "gpt.merge_shape")->mutable_attribute(0)->set_name("value_floats");
    FindNode(c, "gpt.merge_shape")->mutable_attribute(0)->set_type(onnx::AttributeProto::FLOATS);
    FindNode(c, "gpt.merge_shape")->mutable_attribute(0)->clear_t();
    for (float v : {marker, 4.0f, 8.0f}) FindNode(c, "gpt.merge_shape")->mutable_attribute(0)->add_floats(v);
    refused(c, "node 'gpt.merge_shape' (Constant) holds -2^40");
    onnx::ModelProto i = base;  // an int64 -2^40 is clamped, then Cast to float rounds back to -2^40
    *FindNode(i, "gpt.merge_shape")->mutable_attribute(0)->mutable_t() =
        Int64Tensor({3}, {-(std::int64_t{1} << 40), 4, 8});
    onnx::NodeProto* cast = FindNode(i, "gpt.merge_shape");
    cast->set_output(0, "test.merge_int");
    onnx::NodeProto* to_float = i.mutable_graph()->add_node();
    to_float->set_name("test.to_float");
    to_float->set_op_type("Cast");
    to_float->add_input("test.merge_int");
    to_float->add_output("gpt.merge_shape");
    onnx::AttributeProto* to = to_float->add_attribute();
    to->set_name("to");
    to->set_type(onnx::AttributeProto::INT);
    to->set_i(onnx::TensorProto::FLOAT);
    int at = 0;
    while (i.graph().node(at).name() != "gpt.merge_shape") ++at;
    for (int k = i.graph().node_size() - 1; k > at + 1; --k) i.mutable_graph()->mutable_node()->SwapElements(k, k - 1);
    refused(i, "node 'test.to_float' (Cast) holds -2^40");
  }
}

TEST(OnnxGptTest, TruncatedGptFilesAreErrorsNotCrashes) {
  const std::string good = ExportedGpt();
  const auto* p = reinterpret_cast<const std::uint8_t*>(good.data());
  for (std::size_t len = 0; len < good.size(); len += 13) {
    EXPECT_FALSE(ImportOnnx(std::span(p, len)).ok()) << "prefix of " << len << " bytes";
  }
}

// Byte-level mutations of GPT files (polnode's export and the committed torch.onnx.export seed of
// the fuzz target) give an error of the documented kinds or a consistent import, never a crash;
// the sanitizer build checks the memory accesses on the way.
TEST(OnnxGptTest, MutatedGptFilesAreErrorsOrConsistentImports) {
  const std::string ours = ExportedGpt();
  const std::vector<std::uint8_t> torch = ReadBytes(POLNODE_SOURCE_DIR "/fuzz/corpus/onnx_model/torch-gpt");
  ASSERT_FALSE(torch.empty());
  ASSERT_TRUE(ImportOnnx(torch).ok()) << ImportOnnx(torch).status().ToString();
  std::uint32_t x = 2463534242u;
  const auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
  };
  int accepted = 0;
  for (const std::vector<std::uint8_t>& original : {std::vector<std::uint8_t>(ours.begin(), ours.end()), torch}) {
    for (int round = 0; round < 1500; ++round) {
      std::vector<std::uint8_t> bytes = original;
      for (std::uint32_t k = 0, flips = 1 + next() % 4; k < flips; ++k) {
        bytes[next() % bytes.size()] = static_cast<std::uint8_t>(next());
      }
      Result<OnnxImport> r = ImportOnnx(bytes);
      if (!r.ok()) {
        const StatusCode code = r.status().code();
        EXPECT_TRUE(code == StatusCode::kCorruption || code == StatusCode::kInvalidArgument ||
                    code == StatusCode::kResourceExhausted)
            << r.status().ToString();
        continue;
      }
      ++accepted;
      ASSERT_EQ(r->params.size(), r->model.params.size());
      for (std::size_t i = 0; i < r->params.size(); ++i) EXPECT_EQ(r->params[i].tensor.shape(), r->model.params[i].shape);
    }
  }
  // Most flips land in the weights' bytes, which any values may fill.
  EXPECT_GT(accepted, 0);
}

TEST(OnnxModelTest, ExportRefusesAGptWithoutVocabularyAndForeignStates) {
  Result<ModelSpec> gpt = ParseModelSpec("gpt:layers=1,heads=1,width=4,context=4");
  ASSERT_TRUE(gpt.ok());
  EXPECT_FALSE(ExportOnnx(*gpt, TrainState{}).ok());
  Result<ModelSpec> a = ParseModelSpec("mlp:16-8-3");
  Result<ModelSpec> b = ParseModelSpec("mlp:16-9-3");
  ASSERT_TRUE(a.ok() && b.ok());
  Result<std::string> wrong = ExportOnnx(*a, InitialState(*b, OptimizerKind::kSgd, 1));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("fc1.w"), std::string::npos) << wrong.status().ToString();
}

std::string ExportedMlp() {
  Result<ModelSpec> model = ParseModelSpec("mlp:16-8-3");
  return *ExportOnnx(*model, InitialState(*model, OptimizerKind::kSgd, 1));
}


TEST(OnnxModelTest, TorchOperatorsPolnodeCannotMapAreNamed) {
  ASSERT_TRUE(polnode::testing::TorchAvailable()) << kTorchPython << " cannot import torch (scripts/install-deps.sh)";
  polnode::testing::TempDir dir("onnx");
  ASSERT_TRUE(TorchExport("softmax", dir.path()));
  Result<OnnxImport> softmax = ImportOnnx(ReadBytes(dir.File("model.onnx")));
  ASSERT_FALSE(softmax.ok());
  EXPECT_EQ(softmax.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(softmax.status().message().find("unsupported operator Softmax"), std::string::npos)
      << softmax.status().ToString();
  EXPECT_NE(softmax.status().message().find("node '/4/Softmax'"), std::string::npos) << softmax.status().ToString();

  ASSERT_TRUE(TorchExport("stride2", dir.path()));
  Result<OnnxImport> stride = ImportOnnx(ReadBytes(dir.File("model.onnx")));
  ASSERT_FALSE(stride.ok());
  EXPECT_NE(stride.status().message().find("node '/0/Conv' (Conv): attribute strides is [2,2]"), std::string::npos)
      << stride.status().ToString();
}

TEST(OnnxModelTest, NewerOpsetAndOtherDomainsAreRefused) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(ExportedMlp()));
  m.mutable_opset_import(0)->set_version(18);
  Result<OnnxImport> newer = ImportProto(m);
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.status().message().find("opset 18"), std::string::npos) << newer.status().ToString();

  m.mutable_opset_import(0)->set_version(17);
  m.mutable_graph()->mutable_node(1)->set_domain("com.microsoft");
  Result<OnnxImport> domain = ImportProto(m);
  ASSERT_FALSE(domain.ok());
  EXPECT_NE(domain.status().message().find("node 'fc1.relu' (Relu): unsupported operator domain"), std::string::npos)
      << domain.status().ToString();
}

TEST(OnnxModelTest, BrokenGraphsAreRefusedWithTheReason) {
  onnx::ModelProto base;
  ASSERT_TRUE(base.ParseFromString(ExportedMlp()));
  {  // an initializer whose raw data is one element short
    onnx::ModelProto m = base;
    std::string* raw = m.mutable_graph()->mutable_initializer(0)->mutable_raw_data();
    raw->resize(raw->size() - 4);
    Result<OnnxImport> r = ImportProto(m);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
  }
  {  // a weight whose shape does not fit the layer
    onnx::ModelProto m = base;
    m.mutable_graph()->mutable_initializer(0)->set_dims(0, 15);
    m.mutable_graph()->mutable_initializer(0)->mutable_raw_data()->resize(15 * 8 * 4);
    Result<OnnxImport> r = ImportProto(m);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("'fc1.w' is [15x8]; the layer needs [16x8]"), std::string::npos)
        << r.status().ToString();
  }
  {  // the graph output is not the last layer's
    onnx::ModelProto m = base;
    m.mutable_graph()->mutable_output(0)->set_name("elsewhere");
    EXPECT_FALSE(ImportProto(m).ok());
  }
  {  // a hidden layer without its Relu
    onnx::ModelProto m = base;
    m.mutable_graph()->mutable_node()->DeleteSubrange(1, 1);
    m.mutable_graph()->mutable_node(1)->set_input(0, "fc1.matmul");
    Result<OnnxImport> r = ImportProto(m);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("without a Relu"), std::string::npos) << r.status().ToString();
  }
  {  // no graph
    onnx::ModelProto m = base;
    m.clear_graph();
    EXPECT_EQ(ImportProto(m).status().code(), StatusCode::kCorruption);
  }
}

TEST(OnnxModelTest, TruncatedAndHostileBytesAreErrorsNotCrashes) {
  const std::string good = ExportedMlp();
  const auto* p = reinterpret_cast<const std::uint8_t*>(good.data());
  for (std::size_t len = 0; len < good.size(); len += 97) {
    EXPECT_FALSE(ImportOnnx(std::span(p, len)).ok()) << "prefix of " << len << " bytes";
  }
  std::vector<std::uint8_t> noise(4096);
  std::uint32_t s = 1;
  for (std::uint8_t& b : noise) {
    s = s * 1664525u + 1013904223u;
    b = static_cast<std::uint8_t>(s >> 24);
  }
  EXPECT_FALSE(ImportOnnx(noise).ok());
  EXPECT_TRUE(ImportOnnx(std::span(p, good.size())).ok());
}

// A task whose model is "onnx:<sha256>" of a PyTorch export trains from the file's weights, with
// the same state hash on 1 and 2 threads; a file with another hash is refused before training.
TEST(OnnxTaskTest, AnOnnxTaskTrainsFromTheFilesWeightsOnEveryThreadCount) {
  POLNODE_REQUIRE_FASHION_MNIST(data);
  ASSERT_TRUE(polnode::testing::TorchAvailable()) << kTorchPython << " cannot import torch (scripts/install-deps.sh)";
  polnode::testing::TempDir dir("onnx");
  ASSERT_TRUE(TorchExport("cnn", dir.path()));
  const std::vector<std::uint8_t> file = ReadBytes(dir.File("model.onnx"));
  Result<OnnxImport> imported = ImportOnnx(file);
  ASSERT_TRUE(imported.ok());
  TaskSpec task;
  task.model = "onnx:" + consensus::ToHex(consensus::Sha256(file));
  task.model_location = dir.File("model.onnx");
  task.dataset_hash = DatasetContentHash(*data);
  task.batch = 16;
  task.steps = 4;
  task.checkpoint_interval = 2;
  task.seed = 5;
  ASSERT_TRUE(ValidateTask(task).ok());
  EXPECT_EQ(consensus::ToHex(StateHash(TrainTask(task, *data, imported->params, 1))),
            consensus::ToHex(StateHash(TrainTask(task, *data, imported->params, 2))));

  // The file is part of the task only through its hash: another file under the same name is refused.
  TaskSpec other = task;
  other.model = "onnx:" + std::string(64, '0');
  Result<TaskStepper> refused = TaskStepper::Create(other, *data);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("not the task's 0000"), std::string::npos) << refused.status().ToString();
  // A model the data does not fit is refused too (a CNN for 28 x 28 images on 4 x 4 ones).
  ImageDataset small;
  small.train.count = 32;
  small.train.rows = 4;
  small.train.cols = 4;
  small.train.pixels.resize(32 * 16);
  small.train.labels.resize(32);
  small.num_classes = 3;
  EXPECT_FALSE(TaskStepper::Create(task, small).ok());
}

TEST(OnnxTaskTest, TheModelFileTravelsWithTheTaskButIsNotPartOfItsId) {
  const std::string hash(64, 'a');
  Result<TaskSpec> task = ParseTaskToml("model = \"onnx:" + hash + "\"\nmodel_file = \"m.onnx\"\n"
                                        "dataset_hash = \"" + hash + "\"\nbatch = 4\nsteps = 4\n"
                                        "checkpoint_interval = 2\nseed = 1\n");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->model_location, "m.onnx");
  const std::string wire = EncodeTaskProto(*task);
  Result<TaskSpec> back = DecodeTaskProto(std::span(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->model_location, "m.onnx");
  TaskSpec moved = *task;
  moved.model_location = "elsewhere.onnx";
  EXPECT_EQ(TaskId(moved), TaskId(*task));
  for (const char* bad : {"onnx:", "onnx:abc", "onnx:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}) {
    TaskSpec t = *task;
    t.model = bad;
    EXPECT_FALSE(ValidateTask(t).ok()) << bad;
  }
  TaskSpec missing = *task;
  missing.model_location.clear();
  EXPECT_EQ(LoadOnnxTaskModel(missing).status().code(), StatusCode::kInvalidArgument);
}

// Every node of the imported model's training step (with gradient clipping) has an origin in the
// file, except the loss (and its gradient) and the clip coefficient, which the task adds.
void ExpectEveryStepNodeHasAnOrigin(const OnnxImport& imported, OptimizerKind optimizer) {
  OptimizerConfig config;
  config.kind = optimizer;
  config.grad_clip = 1.0f;
  Result<StepGraph> graph = BuildTrainStepGraph(imported.model, config, 2);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  int task_own_nodes = 0;
  for (const StepNode& node : graph->nodes) {
    const OnnxOrigin origin = OnnxOriginOf(imported, node.name);
    const bool task_own = node.name.starts_with("loss.") || node.name == "grad_norm.clip";
    EXPECT_EQ(origin.relation == OnnxRelation::kNotInFile, task_own) << node.name << ": " << DescribeOnnxOrigin(origin);
    EXPECT_EQ(origin.node == nullptr, task_own) << node.name;
    task_own_nodes += task_own;
  }
  EXPECT_EQ(task_own_nodes, 3) << "the loss, its gradient and the clip coefficient";
  EXPECT_EQ(imported.param_initializers.size(), imported.params.size());
}

TEST(OnnxOriginTest, ATorchMlpsStepNodesNameTheFilesNodesAndInitializers) {
  ASSERT_TRUE(polnode::testing::TorchAvailable()) << kTorchPython << " cannot import torch (scripts/install-deps.sh)";
  polnode::testing::TempDir dir("onnx-origin");
  ASSERT_TRUE(TorchExport("mlp", dir.path())) << polnode::testing::ReadFileText(dir.File("export.log"));
  Result<OnnxImport> imported = ImportOnnx(ReadBytes(dir.File("model.onnx")));
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  // nn.Sequential(Flatten, Linear, ReLU, Linear): torch names nodes "/1/Gemm" and initializers "1.weight".
  EXPECT_EQ(imported->param_initializers, (std::vector<std::string>{"1.weight", "1.bias", "3.weight", "3.bias"}));
  EXPECT_EQ(DescribeOnnxOrigin(OnnxOriginOf(*imported, "fc1.matmul")), "ONNX node '/1/Gemm' (Gemm: linear 784->32)");
  EXPECT_EQ(DescribeOnnxOrigin(OnnxOriginOf(*imported, "fc1.relu")), "ONNX node '/2/Relu' (Relu: relu of the layer above)");
  EXPECT_EQ(DescribeOnnxOrigin(OnnxOriginOf(*imported, "fc2.bias_add.grad")),
            "backward of ONNX node '/3/Gemm' (Gemm: linear 32->10)");
  EXPECT_EQ(DescribeOnnxOrigin(OnnxOriginOf(*imported, "fc1.w.sgd")),
            "update of ONNX initializer '1.weight' (read by node '/1/Gemm', Gemm)");
  EXPECT_EQ(DescribeOnnxOrigin(OnnxOriginOf(*imported, "fc2.b.grad.clipped")),
            "gradient clipping of ONNX initializer '3.bias' (read by node '/3/Gemm', Gemm)");
  EXPECT_EQ(OnnxOriginOf(*imported, "loss.softmax_xent").relation, OnnxRelation::kNotInFile);
  EXPECT_EQ(OnnxOriginOf(*imported, "fc9.matmul").relation, OnnxRelation::kNotInFile);
  EXPECT_EQ(OnnxOriginOf(*imported, "").relation, OnnxRelation::kNotInFile);
  ExpectEveryStepNodeHasAnOrigin(*imported, OptimizerKind::kSgd);
}

TEST(OnnxOriginTest, ATorchCnnsPoolsAndConvolutionsAreTheFilesNodes) {
  ASSERT_TRUE(polnode::testing::TorchAvailable()) << kTorchPython << " cannot import torch (scripts/install-deps.sh)";
  polnode::testing::TempDir dir("onnx-origin");
  ASSERT_TRUE(TorchExport("cnn", dir.path())) << polnode::testing::ReadFileText(dir.File("export.log"));
  Result<OnnxImport> imported = ImportOnnx(ReadBytes(dir.File("model.onnx")));
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const OnnxOrigin conv2 = OnnxOriginOf(*imported, "conv2.conv.grad_weight");
  ASSERT_NE(conv2.node, nullptr);
  EXPECT_EQ(conv2.relation, OnnxRelation::kBackward);
  EXPECT_EQ(conv2.node->op_type, "Conv");
  EXPECT_EQ(conv2.node->target, "conv 3x3 to 8 channels");
  const OnnxOrigin pool1 = OnnxOriginOf(*imported, "pool1.maxpool"), pool2 = OnnxOriginOf(*imported, "pool2.maxpool");
  ASSERT_NE(pool1.node, nullptr);
  ASSERT_NE(pool2.node, nullptr);
  EXPECT_EQ(pool1.node->op_type, "MaxPool");
  EXPECT_EQ(pool2.node->op_type, "MaxPool");
  EXPECT_NE(pool1.node, pool2.node);
  EXPECT_EQ(OnnxOriginOf(*imported, "pool3.maxpool").node, nullptr);
  ExpectEveryStepNodeHasAnOrigin(*imported, OptimizerKind::kAdam);
}

TEST(OnnxOriginTest, ATorchGptsOperatorsAreTheFilesNodesBlockByBlock) {
  ASSERT_TRUE(polnode::testing::TorchAvailable()) << kTorchPython << " cannot import torch (scripts/install-deps.sh)";
  polnode::testing::TempDir dir("onnx-origin-gpt");
  ASSERT_TRUE(TorchExport("gpt", dir.path(), "20")) << polnode::testing::ReadFileText(dir.File("export.log"));
  Result<OnnxImport> imported = ImportOnnx(ReadBytes(dir.File("model.onnx")));
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const auto op_of = [&](const std::string& step_node) {
    const OnnxOrigin origin = OnnxOriginOf(*imported, step_node);
    return origin.node == nullptr ? std::string("(none)") : origin.node->op_type;
  };
  EXPECT_EQ(op_of("wte.embedding"), "Gather");
  EXPECT_EQ(op_of("wpe.bias_add"), "Add");
  EXPECT_EQ(op_of("h0.ln1"), "LayerNormalization");
  EXPECT_EQ(op_of("h1.attn.k"), "MatMul");
  EXPECT_EQ(op_of("h1.attn.k.heads"), "Transpose");
  EXPECT_EQ(op_of("h0.attn.scores"), "MatMul");
  EXPECT_EQ(op_of("h0.attn.softmax"), "Softmax");
  EXPECT_EQ(op_of("h1.attn.mix.grad_b"), "MatMul");
  EXPECT_EQ(op_of("h0.attn.residual"), "Add");
  EXPECT_EQ(op_of("h1.mlp.gelu.grad"), "Tanh");
  EXPECT_EQ(op_of("h1.mlp.residual"), "Add");
  EXPECT_EQ(op_of("lnf.grad"), "LayerNormalization");
  EXPECT_EQ(op_of("head.matmul"), "MatMul");
  // Each block's operator is its own node of the file.
  for (const char* what : {"attn.q", "attn.scores", "attn.softmax", "attn.mix", "attn.merge", "attn.proj",
                           "attn.residual", "ln2", "mlp.fc", "mlp.gelu", "mlp.proj", "mlp.residual"}) {
    const OnnxOrigin h0 = OnnxOriginOf(*imported, std::string("h0.") + what);
    const OnnxOrigin h1 = OnnxOriginOf(*imported, std::string("h1.") + what);
    ASSERT_NE(h0.node, nullptr) << what;
    ASSERT_NE(h1.node, nullptr) << what;
    EXPECT_LT(h0.node, h1.node) << what << ": block 0's node comes first in the file";
    EXPECT_EQ(h0.node->op_type, h1.node->op_type) << what;
  }
  const OnnxOrigin update = OnnxOriginOf(*imported, "h1.mlp.w2.adam");
  EXPECT_EQ(update.relation, OnnxRelation::kUpdate);
  EXPECT_EQ(update.initializer, imported->param_initializers[2 + 10 + 9]);
  ExpectEveryStepNodeHasAnOrigin(*imported, OptimizerKind::kAdam);
}

}  // namespace
}  // namespace polnode::solver
