// Device-resident training (resident_training.h) on the CPU backends, where CI can run it: every
// step gives StepRunner::Step's bits (losses, state, every node's outputs) for an MLP, a CNN and a
// GPT, while only the batch goes up and the loss comes down.
#include "polnode/solver/resident_training.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "build_step_graph.h"
#include "polnode/consensus/sha256.h"
#include "polnode/solver/init.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/step_runner.h"

namespace polnode::solver {
namespace {

struct Case {
  const char* spec;
  OptimizerKind optimizer;
  std::int64_t batch;
  int fused_pairs;  // bias_add + relu and relu_grad + bias_grad pairs in a step
};

// Forwards every call to `inner` and counts the fused pairs enqueued.
class FusionCountingBackend final : public kernels::Backend {
 public:
  explicit FusionCountingBackend(kernels::Backend& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  Status Run(kernels::Op op, const kernels::OpAttrs& attrs, std::span<const kernels::Tensor* const> inputs,
             std::span<kernels::Tensor* const> outputs) override {
    return inner_.Run(op, attrs, inputs, outputs);
  }
  Result<std::unique_ptr<kernels::Buffer>> Allocate(const kernels::Shape& shape) override { return inner_.Allocate(shape); }
  Status Upload(std::span<const float> values, kernels::Buffer& to) override { return inner_.Upload(values, to); }
  Status Download(const kernels::Buffer& from, std::span<float> to) override { return inner_.Download(from, to); }
  Status Synchronize() override { return inner_.Synchronize(); }
  Status Enqueue(kernels::Op op, const kernels::OpAttrs& attrs, std::span<const kernels::Buffer* const> inputs,
                 std::span<kernels::Buffer* const> outputs) override {
    return inner_.Enqueue(op, attrs, inputs, outputs);
  }
  Status EnqueueFused(kernels::Fusion fusion, std::span<const kernels::Buffer* const> inputs,
                      std::span<kernels::Buffer* const> outputs) override {
    ++fused;
    return inner_.EnqueueFused(fusion, inputs, outputs);
  }
  int fused = 0;

 private:
  kernels::Backend& inner_;
};

// Batch `k` for `graph`: small integers, valid as pixels, class labels and token ids alike.
void FillBatch(const StepGraph& graph, int k, kernels::Tensor& images, kernels::Tensor& labels) {
  images = kernels::Tensor(graph.images_shape);
  labels = kernels::Tensor(graph.labels_shape);
  for (std::int64_t i = 0; i < images.numel(); ++i) images.data()[i] = static_cast<float>((i * 7 + k) % 10);
  for (std::int64_t i = 0; i < labels.numel(); ++i) labels.data()[i] = static_cast<float>((i * 3 + k) % 10);
}

class ResidentTrainingTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    Result<ModelSpec> model = ParseModelSpec(GetParam().spec);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    initial_ = InitialState(*model, GetParam().optimizer, 11);
    Result<StepRunner> runner = StepRunner::Create(BuildOrDie(GetParam().spec, GetParam().optimizer, GetParam().batch));
    ASSERT_TRUE(runner.ok());
    runner_ = std::make_unique<StepRunner>(std::move(*runner));
    backend_ = kernels::MakeCpuBackend(2);
  }

  TrainState initial_;
  std::unique_ptr<StepRunner> runner_;
  std::unique_ptr<kernels::Backend> backend_;
};

void ExpectSameState(const TrainState& a, const TrainState& b) {
  ASSERT_EQ(a.step, b.step);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_TRUE(a.tensors[i].tensor.BitwiseEqual(b.tensors[i].tensor)) << a.tensors[i].name;
  }
}

TEST_P(ResidentTrainingTest, EveryStepGivesTheHostStepsBits) {
  // Every node's outputs, hashed in order: the host run's and the resident run's must agree.
  std::vector<consensus::Hash256> host_nodes, resident_nodes;
  const auto recorder = [](std::vector<consensus::Hash256>& into) {
    return NodeObserver([&into](const StepNode&, std::span<const kernels::Tensor* const> out) {
      for (const kernels::Tensor* t : out) {
        into.push_back(consensus::Sha256(std::string_view(reinterpret_cast<const char*>(t->data()),
                                                          static_cast<std::size_t>(t->numel()) * sizeof(float))));
      }
      return Status::Ok();
    });
  };
  const NodeObserver host_observer = recorder(host_nodes), resident_observer = recorder(resident_nodes);

  TrainState host = initial_;
  Result<ResidentTraining> run = ResidentTraining::Start(*runner_, *backend_, initial_);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  kernels::Tensor images, labels;
  for (int k = 0; k < 3; ++k) {
    FillBatch(runner_->graph(), k, images, labels);
    // The last step with observers on both sides (the pinpoint game's path).
    const NodeObserver* ho = k == 2 ? &host_observer : nullptr;
    const NodeObserver* ro = k == 2 ? &resident_observer : nullptr;
    Result<float> want = runner_->Step(host, images, labels, *backend_, ho);
    Result<float> got = run->Step(images, labels, ro);
    ASSERT_TRUE(want.ok() && got.ok()) << want.status().ToString() << got.status().ToString();
    EXPECT_EQ(std::memcmp(&*want, &*got, sizeof(float)), 0) << "step " << k;
  }
  EXPECT_EQ(run->step(), 3);
  EXPECT_FALSE(host_nodes.empty());
  EXPECT_EQ(host_nodes, resident_nodes);
  TrainState resident;
  ASSERT_TRUE(run->DownloadState(resident).ok());
  ExpectSameState(resident, host);
}

// Every bias addition followed by its ReLU, and every ReLU gradient followed by its bias gradient,
// reaches the backend as one fused call (whose bits EveryStepGivesTheHostStepsBits checks).
TEST_P(ResidentTrainingTest, ABiasAndItsReluRunAsOneCall) {
  FusionCountingBackend counting(*backend_);
  Result<ResidentTraining> run = ResidentTraining::Start(*runner_, counting, initial_);
  ASSERT_TRUE(run.ok());
  kernels::Tensor images, labels;
  FillBatch(runner_->graph(), 0, images, labels);
  ASSERT_TRUE(run->Step(images, labels).ok());
  EXPECT_EQ(counting.fused, GetParam().fused_pairs);
}

TEST_P(ResidentTrainingTest, AStepMovesOnlyItsBatchUpAndItsLossDown) {
  Result<ResidentTraining> run = ResidentTraining::Start(*runner_, *backend_, initial_);
  ASSERT_TRUE(run.ok());
  const kernels::TransferCounts before = backend_->transfers();
  EXPECT_EQ(before.uploads, static_cast<std::int64_t>(initial_.tensors.size()));  // the state, once
  kernels::Tensor images, labels;
  FillBatch(runner_->graph(), 0, images, labels);
  ASSERT_TRUE(run->Step(images, labels).ok());
  const kernels::TransferCounts after = backend_->transfers();
  EXPECT_EQ(after.uploads - before.uploads, 2);
  EXPECT_EQ(after.upload_bytes - before.upload_bytes, (images.numel() + labels.numel()) * 4);
  EXPECT_EQ(after.downloads - before.downloads, 1);
  EXPECT_EQ(after.download_bytes - before.download_bytes, 4);
}

// The prover's checkpoint hook changes the state on the host (a forced round's falsification);
// training must go on from the state as changed.
TEST_P(ResidentTrainingTest, AnUploadedStateIsWhereTrainingGoesOn) {
  Result<ResidentTraining> run = ResidentTraining::Start(*runner_, *backend_, initial_);
  ASSERT_TRUE(run.ok());
  kernels::Tensor images, labels;
  FillBatch(runner_->graph(), 0, images, labels);
  ASSERT_TRUE(run->Step(images, labels).ok());
  TrainState state;
  ASSERT_TRUE(run->DownloadState(state).ok());
  EXPECT_EQ(state.step, 1);
  state.tensors[0].tensor.data()[0] += 0.5f;
  ASSERT_TRUE(run->UploadState(state).ok());
  TrainState host = state;
  FillBatch(runner_->graph(), 1, images, labels);
  ASSERT_TRUE(runner_->Step(host, images, labels, *backend_).ok());
  ASSERT_TRUE(run->Step(images, labels).ok());
  TrainState resident;
  ASSERT_TRUE(run->DownloadState(resident).ok());
  ExpectSameState(resident, host);
}

TEST_P(ResidentTrainingTest, ABadBatchIsRefusedBeforeAnythingMoves) {
  Result<ResidentTraining> run = ResidentTraining::Start(*runner_, *backend_, initial_);
  ASSERT_TRUE(run.ok());
  kernels::Tensor images, labels;
  FillBatch(runner_->graph(), 0, images, labels);
  labels.data()[0] = 1e6f;  // no class, no token has that index
  const kernels::TransferCounts before = backend_->transfers();
  const Result<float> bad = run->Step(images, labels);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("expected an integer in [0, "), std::string::npos) << bad.status().ToString();
  EXPECT_EQ(backend_->transfers().uploads, before.uploads);
  EXPECT_EQ(run->step(), 0);
  kernels::Tensor wrong({1, 2});
  EXPECT_EQ(run->Step(wrong, labels).status().code(), StatusCode::kInvalidArgument);
  TrainState state;
  ASSERT_TRUE(run->DownloadState(state).ok());
  ExpectSameState(state, initial_);
  TrainState misshapen = initial_;
  misshapen.tensors.pop_back();
  EXPECT_EQ(run->UploadState(misshapen).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ResidentTraining::Start(*runner_, *backend_, misshapen).status().code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Models, ResidentTrainingTest,
                         ::testing::Values(Case{"mlp:784-32-10", OptimizerKind::kSgd, 8, 2},
                                           Case{"cnn:c4-p-f16-10", OptimizerKind::kAdam, 2, 4},
                                           Case{"gpt:layers=1,heads=2,width=16,context=8,vocab=16", OptimizerKind::kAdam, 2, 0}),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           return std::string(param_info.param.spec).substr(0, 3);
                         });

}  // namespace
}  // namespace polnode::solver
