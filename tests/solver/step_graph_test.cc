#include "polnode/solver/step_graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "build_step_graph.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/init.h"
#include "polnode/solver/philox.h"
#include "polnode/solver/step_runner.h"

namespace polnode::solver {
namespace {

using kernels::Shape;
using kernels::Tensor;

// A reproducible synthetic batch for `graph`.
void SyntheticBatch(const StepGraph& graph, std::uint32_t stream, Tensor& images, Tensor& labels) {
  images = Tensor(graph.images_shape);
  for (std::int64_t i = 0; i < images.numel(); ++i) {
    images.data()[i] = UniformFloat(
        RandomWord(1, RandomPurpose::kSynthetic, stream, static_cast<std::uint64_t>(i)));
  }
  labels = Tensor(graph.labels_shape);
  const std::int64_t classes = graph.model.num_outputs();
  for (std::int64_t b = 0; b < labels.numel(); ++b) {
    labels.data()[b] = static_cast<float>(UniformIndex(
        RandomU64(1, RandomPurpose::kSynthetic, stream + 1000, static_cast<std::uint64_t>(b)),
        static_cast<std::uint64_t>(classes)));
  }
}

std::vector<std::string> NodeNames(const StepGraph& g) {
  std::vector<std::string> names;
  for (const StepNode& n : g.nodes) names.push_back(n.name);
  return names;
}

TEST(StepGraphTest, MlpSgdStepHasTheCanonicalNodeOrder) {
  const StepGraph g = BuildOrDie("mlp:784-32-10", OptimizerKind::kSgd, 8);
  EXPECT_EQ(NodeNames(g),
            (std::vector<std::string>{"fc1.matmul", "fc1.bias_add", "fc1.relu", "fc2.matmul",
                                      "fc2.bias_add", "loss.softmax_xent", "loss.softmax_xent.grad",
                                      "fc2.bias_add.grad", "fc2.matmul.grad_b", "fc2.matmul.grad_a",
                                      "fc1.relu.grad", "fc1.bias_add.grad", "fc1.matmul.grad_b",
                                      "fc1.w.sgd", "fc1.b.sgd", "fc2.w.sgd", "fc2.b.sgd"}));
  EXPECT_EQ(g.nodes[static_cast<std::size_t>(g.loss_node)].name, "loss.softmax_xent");
  EXPECT_EQ(g.nodes[static_cast<std::size_t>(g.logits_node)].name, "fc2.bias_add");
  // fc1.w.sgd reads fc1.w, its gradient, fc1.w.velocity and writes both state tensors back.
  const StepNode& upd = g.nodes[13];
  EXPECT_EQ(upd.op, kernels::Op::kSgdMomentum);
  EXPECT_EQ(upd.state_writes, (std::vector<int>{0, 4}));
  EXPECT_EQ(upd.inputs[1].source, SourceKind::kNode);
  EXPECT_EQ(upd.inputs[1].index, 12);
  EXPECT_EQ(upd.attrs.lr, 0.05f);
  EXPECT_EQ(upd.attrs.momentum, 0.9f);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) EXPECT_EQ(g.nodes[i].index, static_cast<int>(i));
}

TEST(StepGraphTest, CnnGraphFlattensThroughViews) {
  const StepGraph g = BuildOrDie("cnn:c4-p-f16-10", OptimizerKind::kAdam, 2);
  const std::string dump = DescribeGraph(g);
  EXPECT_NE(dump.find("fc1.matmul matmul (n3.0 as [2, 784], fc1.w) -> [2, 16]"), std::string::npos)
      << dump;
  EXPECT_NE(dump.find("18 pool1.maxpool.grad max_pool_2x2_grad (n3.1, n17.0 as [2, 4, 14, 14]) -> "
                      "[2, 4, 28, 28]"),
            std::string::npos)
      << dump;
  EXPECT_EQ(dump.find("conv1.conv.grad_input"), std::string::npos)
      << "the first layer needs no input gradient";
  EXPECT_NE(dump.find("conv1.w.adam adamw (conv1.w, n21.0, conv1.w.adam_m, conv1.w.adam_v)"),
            std::string::npos)
      << dump;
  for (const StepNode& n : g.nodes) {
    if (n.op == kernels::Op::kMaxPool2x2Grad) {
      EXPECT_EQ(n.attrs.pool_input_h, 28);
      EXPECT_EQ(n.attrs.pool_input_w, 28);
    }
  }
}

TEST(StepGraphTest, AdamBiasCorrectionFollowsTheStep) {
  const StepGraph g = BuildOrDie("mlp:4-2", OptimizerKind::kAdam, 1);
  const StepNode& adam = g.nodes.back();
  ASSERT_EQ(adam.op, kernels::Op::kAdamW);
  const kernels::OpAttrs first = AttrsForStep(adam, 0);
  EXPECT_EQ(first.bias_correction1, kernels::AdamBiasCorrection(0.9f, 1));
  EXPECT_EQ(first.bias_correction2, kernels::AdamBiasCorrection(0.999f, 1));
  EXPECT_EQ(AttrsForStep(adam, 9).bias_correction1, kernels::AdamBiasCorrection(0.9f, 10));
  const StepNode& matmul = g.nodes.front();
  EXPECT_EQ(AttrsForStep(matmul, 9).bias_correction1, 1.0f);
}

TEST(StepGraphTest, OptimizerNodesRunTheScheduledLearningRateOfTheirStep) {
  Result<ModelSpec> m = ParseModelSpec("mlp:4-2");
  ASSERT_TRUE(m.ok());
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam}) {
    OptimizerConfig o;
    o.kind = kind;
    o.lr = 1e-3f;
    o.warmup_steps = 10;
    o.decay_steps = 100;
    o.min_lr = 1e-4f;
    Result<StepGraph> g = BuildTrainStepGraph(*m, o, 1);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    const StepNode& update = g->nodes.back();
    ASSERT_EQ(update.op, kind == OptimizerKind::kSgd ? kernels::Op::kSgdMomentum : kernels::Op::kAdamW);
    EXPECT_EQ(update.attrs.lr, 1e-3f);  // the graph keeps the peak
    EXPECT_EQ(AttrsForStep(update, 0).lr, static_cast<float>(static_cast<double>(1e-3f) / 11.0));
    EXPECT_EQ(AttrsForStep(update, 10).lr, 1e-3f);
    EXPECT_EQ(AttrsForStep(update, 55).lr, kernels::ScheduledLr(update.attrs, 55));
    EXPECT_LT(AttrsForStep(update, 55).lr, 1e-3f);
    EXPECT_EQ(AttrsForStep(update, 100).lr, 1e-4f);
    EXPECT_EQ(AttrsForStep(update, 5000).lr, 1e-4f);
    // Operators without a learning rate are untouched.
    EXPECT_EQ(AttrsForStep(g->nodes.front(), 0).lr, g->nodes.front().attrs.lr);
  }
}

TEST(StepGraphTest, RefusesABadScheduleWithTheReason) {
  Result<ModelSpec> m = ParseModelSpec("mlp:4-2");
  ASSERT_TRUE(m.ok());
  const auto refusal = [&](OptimizerConfig o) {
    o.kind = OptimizerKind::kAdam;
    o.lr = 1e-3f;
    const Result<StepGraph> g = BuildTrainStepGraph(*m, o, 1);
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    return g.status().message();
  };
  OptimizerConfig o;
  o.warmup_steps = 100;
  o.decay_steps = 100;
  EXPECT_NE(refusal(o).find("lr_decay_steps (100) must be 0 (no decay) or greater than warmup_steps (100)"),
            std::string::npos);
  o = {};
  o.warmup_steps = -1;
  EXPECT_NE(refusal(o).find("warmup_steps must be in [0, 2^40]"), std::string::npos);
  o = {};
  o.decay_steps = 50;
  o.min_lr = 2e-3f;  // above the peak
  EXPECT_NE(refusal(o).find("min_lr must be finite and in [0, lr]"), std::string::npos);
  o = {};
  o.min_lr = 1e-4f;  // a floor without a decay
  EXPECT_NE(refusal(o).find("min_lr needs lr_decay_steps > 0"), std::string::npos);
}

TEST(StepGraphTest, RejectsBadBatchAndOptimizer) {
  Result<ModelSpec> m = ParseModelSpec("mlp:4-2");
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(BuildTrainStepGraph(*m, {}, 0).ok());
  OptimizerConfig bad;
  bad.lr = -1.0f;
  EXPECT_FALSE(BuildTrainStepGraph(*m, bad, 4).ok());
  EXPECT_FALSE(BuildForwardGraph(*m, 0).ok());
}

// Runs one step with an observer and checks, for every node: it is seen once and in order, its
// outputs have the shapes the graph declares, and re-executing the node alone on the recorded
// inputs (as the pinpoint referee does) reproduces its outputs bit for bit.
void CheckObservedStepAgainstSingleNodeReplay(const std::string& spec, OptimizerKind kind) {
  StepGraph graph = BuildOrDie(spec, kind, 3);
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("cpu", 2);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  Tensor images, labels;
  SyntheticBatch(graph, 1, images, labels);
  TrainState state = InitialState(graph.model, kind, 11);
  const TrainState before = state;

  Result<StepRunner> runner = StepRunner::Create(graph);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  std::map<std::pair<int, int>, Tensor> produced;  // every node output, copied
  int expected_index = 0;
  NodeObserver observer = [&](const StepNode& node, std::span<const Tensor* const> outs) -> Status {
    EXPECT_EQ(node.index, expected_index++);
    EXPECT_EQ(outs.size(), node.output_shapes.size());
    for (std::size_t k = 0; k < outs.size(); ++k) {
      EXPECT_EQ(outs[k]->shape(), node.output_shapes[k]) << node.name << " output " << k;
      produced[{node.index, static_cast<int>(k)}] = *outs[k];
    }
    return Status::Ok();
  };
  Result<float> loss = runner->Step(state, images, labels, **backend, &observer);
  ASSERT_TRUE(loss.ok()) << loss.status().ToString();
  EXPECT_EQ(expected_index, static_cast<int>(graph.nodes.size()));
  EXPECT_EQ(state.step, 1);

  for (const StepNode& node : graph.nodes) {
    std::vector<const Tensor*> inputs;
    for (const TensorRef& r : node.inputs) {
      switch (r.source) {
        case SourceKind::kState:
          inputs.push_back(&before.tensors[static_cast<std::size_t>(r.index)].tensor);
          break;
        case SourceKind::kBatchImages:
          inputs.push_back(&images);
          break;
        case SourceKind::kBatchLabels:
          inputs.push_back(&labels);
          break;
        case SourceKind::kNode:
          inputs.push_back(&produced.at({r.index, r.output}));
          break;
      }
    }
    Result<std::vector<Tensor>> outs = RunSingleNode(node, 0, inputs, **backend);
    ASSERT_TRUE(outs.ok()) << node.name << ": " << outs.status().ToString();
    for (std::size_t k = 0; k < outs->size(); ++k) {
      EXPECT_EQ(TensorHash((*outs)[k]), TensorHash(produced.at({node.index, static_cast<int>(k)})))
          << node.name << " output " << k;
    }
  }
}

TEST(StepRunnerTest, ObservedMlpStepReplaysNodeByNode) {
  CheckObservedStepAgainstSingleNodeReplay("mlp:20-7-3", OptimizerKind::kSgd);
}

TEST(StepRunnerTest, ObservedCnnAdamStepReplaysNodeByNode) {
  CheckObservedStepAgainstSingleNodeReplay("cnn:i1x8x8-c3-p-c2-p-f5-4", OptimizerKind::kAdam);
}

float FloatOfBits(std::uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// A training state whose hidden unit 0 has NaN weights (a unit that diverged; its pre-activation is
// NaN, ReLU makes it +0, so the loss stays finite and training goes on) steps to one state hash and
// one hash per node output, whether its NaNs carry x86's payload on the reference or NVIDIA's on
// the CPU backend: what lets a GPU solver and the CPU referee agree on a state with NaN in it,
// although the raw bits differ.
TEST(StepRunnerTest, NanWeightsGiveTheSameHashesWhateverTheirPayload) {
  StepGraph graph = BuildOrDie("mlp:20-7-3", OptimizerKind::kSgd, 3);
  Tensor images, labels;
  SyntheticBatch(graph, 4, images, labels);
  Result<StepRunner> runner = StepRunner::Create(graph);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();

  struct Run {
    TrainState state;
    std::vector<consensus::Hash256> output_hashes;
    float loss = 0.0f;
  };
  const auto step_with = [&](std::uint32_t nan_bits, const std::string& backend_name) {
    Run run;
    run.state = InitialState(graph.model, OptimizerKind::kSgd, 11);
    kernels::Tensor* w = nullptr;
    for (NamedTensor& t : run.state.tensors) {
      if (t.name == "fc1.w") w = &t.tensor;
    }
    EXPECT_NE(w, nullptr);
    if (w == nullptr) return run;
    EXPECT_EQ(w->shape(), (Shape{20, 7}));
    for (std::int64_t i = 0; i < 20; ++i) w->data()[i * 7] = FloatOfBits(nan_bits);  // unit 0's column
    Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend(backend_name, 2);
    EXPECT_TRUE(backend.ok()) << backend.status().ToString();
    NodeObserver observer = [&](const StepNode&, std::span<const Tensor* const> outs) -> Status {
      for (const Tensor* t : outs) run.output_hashes.push_back(TensorHash(*t));
      return Status::Ok();
    };
    Result<float> loss = runner->Step(run.state, images, labels, **backend, &observer);
    EXPECT_TRUE(loss.ok()) << loss.status().ToString();
    run.loss = loss.ok() ? *loss : 0.0f;
    return run;
  };
  const Run x86 = step_with(0xFFC00000u, "reference");
  const Run nvidia = step_with(0x7FFFFFFFu, "cpu");
  ASSERT_FALSE(x86.output_hashes.empty());
  EXPECT_TRUE(std::isfinite(x86.loss));
  EXPECT_EQ(std::memcmp(&x86.loss, &nvidia.loss, sizeof(float)), 0);
  EXPECT_EQ(x86.output_hashes, nvidia.output_hashes);
  EXPECT_EQ(StateHash(x86.state), StateHash(nvidia.state));
  // Not vacuous: the NaNs survived the step, with their own payloads.
  const Tensor& w_x86 = x86.state.tensors[0].tensor;
  EXPECT_TRUE(std::isnan(w_x86.data()[0]));
  EXPECT_FALSE(w_x86.BitwiseEqual(nvidia.state.tensors[0].tensor));
}

TEST(StepRunnerTest, ObserverErrorStopsTheStep) {
  const StepGraph graph = BuildOrDie("mlp:6-2", OptimizerKind::kSgd, 2);
  Result<StepRunner> runner = StepRunner::Create(graph);
  ASSERT_TRUE(runner.ok());
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("reference", 1);
  ASSERT_TRUE(backend.ok());
  Tensor images, labels;
  SyntheticBatch(graph, 2, images, labels);
  TrainState state = InitialState(graph.model, OptimizerKind::kSgd, 1);
  int calls = 0;
  NodeObserver stop = [&](const StepNode&, std::span<const Tensor* const>) -> Status {
    return ++calls == 2 ? Status::Internal("enough") : Status::Ok();
  };
  Result<float> loss = runner->Step(state, images, labels, **backend, &stop);
  ASSERT_FALSE(loss.ok());
  EXPECT_EQ(loss.status().message(), "enough");
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(state.step, 0);
}

TEST(StepRunnerTest, RejectsMismatchedStateAndBatch) {
  const StepGraph graph = BuildOrDie("mlp:6-2", OptimizerKind::kSgd, 2);
  Result<StepRunner> runner = StepRunner::Create(graph);
  ASSERT_TRUE(runner.ok());
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("reference", 1);
  ASSERT_TRUE(backend.ok());
  Tensor images, labels;
  SyntheticBatch(graph, 3, images, labels);
  TrainState adam_state = InitialState(graph.model, OptimizerKind::kAdam, 1);
  EXPECT_EQ(runner->Step(adam_state, images, labels, **backend).status().code(),
            StatusCode::kInvalidArgument);
  TrainState state = InitialState(graph.model, OptimizerKind::kSgd, 1);
  const Tensor wrong(Shape{3, 6});
  EXPECT_EQ(runner->Step(state, wrong, labels, **backend).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(state.step, 0);
}

TEST(StepRunnerTest, CreateRejectsForwardReferences) {
  StepGraph graph = BuildOrDie("mlp:6-2", OptimizerKind::kSgd, 2);
  graph.nodes[0].inputs[0] = {SourceKind::kNode, 3, 0, {}};
  Result<StepRunner> runner = StepRunner::Create(graph);
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.status().message().find("fc1.matmul"), std::string::npos);
  StepGraph viewed = BuildOrDie("mlp:6-2", OptimizerKind::kSgd, 2);
  viewed.nodes[1].inputs[0].view = {5};
  EXPECT_FALSE(StepRunner::Create(viewed).ok());
}

TEST(StepRunnerTest, ForwardGivesTheTrainingGraphsLogits) {
  const StepGraph train = BuildOrDie("cnn:i1x8x8-c2-p-3", OptimizerKind::kSgd, 4);
  Result<StepGraph> fwd = BuildForwardGraph(train.model, 4);
  ASSERT_TRUE(fwd.ok());
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  Tensor images, labels;
  SyntheticBatch(train, 4, images, labels);
  TrainState state = InitialState(train.model, OptimizerKind::kSgd, 2);
  Result<StepRunner> fwd_runner = StepRunner::Create(*fwd);
  ASSERT_TRUE(fwd_runner.ok());
  Result<const Tensor*> logits = fwd_runner->Forward(state, images, **backend);
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  Tensor seen;
  NodeObserver grab = [&](const StepNode& n, std::span<const Tensor* const> outs) -> Status {
    if (n.index == train.logits_node) seen = *outs[0];
    return Status::Ok();
  };
  Result<StepRunner> train_runner = StepRunner::Create(train);
  ASSERT_TRUE(train_runner.ok());
  ASSERT_TRUE(train_runner->Step(state, images, labels, **backend, &grab).ok());
  EXPECT_TRUE((*logits)->BitwiseEqual(seen));
}

}  // namespace
}  // namespace polnode::solver
