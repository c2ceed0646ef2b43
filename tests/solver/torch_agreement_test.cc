// Agreement with PyTorch (Debian's python3-torch through /usr/bin/python3): two SGD-momentum steps
// of the default MLP from the same initial weights and the same Fashion-MNIST batches.
//
// The two sides sum in different orders, so bits differ; the test bounds the difference:
//   parameters: |ours - torch| <= 1e-5 * |torch| + 1e-7 * max|torch| (1e-5 relative, with a floor
//               for the rare elements that sit near zero);
//   momentum buffers (the accumulated gradients) and losses, which carry all the reordering error
//   and no initial weights to hide it: 1e-4 relative to the tensor's largest magnitude.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "polnode/kernels/backend.h"
#include "polnode/solver/init.h"
#include "polnode/solver/philox.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/step_runner.h"
#include "polnode/testing/fashion_mnist.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/torch_files.h"

namespace polnode::solver {
namespace {

float MaxAbs(std::span<const float> v) {
  float m = 0.0f;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

TEST(TorchAgreementTest, TwoSgdMomentumStepsOfTheMlpMatchPyTorch) {
  POLNODE_REQUIRE_FASHION_MNIST(data);
  ASSERT_TRUE(polnode::testing::TorchAvailable())
      << polnode::testing::kTorchPython << " cannot import torch and numpy (scripts/install-deps.sh installs python3-torch)";
  polnode::testing::TempDir dir("torch");
  Result<ModelSpec> model = ParseModelSpec("mlp:784-256-128-10");
  ASSERT_TRUE(model.ok());
  OptimizerConfig opt;
  opt.lr = 0.05f;
  opt.momentum = 0.9f;
  opt.weight_decay = 1e-4f;
  const std::int64_t batch = 128;
  Result<StepGraph> graph = BuildTrainStepGraph(*model, opt, batch);
  ASSERT_TRUE(graph.ok());
  Result<StepRunner> runner = StepRunner::Create(*graph);
  ASSERT_TRUE(runner.ok());
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("cpu", 2);
  ASSERT_TRUE(backend.ok());

  TrainState state = InitialState(*model, OptimizerKind::kSgd, 99);
  std::ofstream manifest(dir.File("manifest.txt"));
  manifest << "lr " << opt.lr << "\nmomentum " << opt.momentum << "\nweight_decay "
           << opt.weight_decay << "\n";
  for (const ParamSpec& p : model->params) {
    polnode::testing::WriteRawFloats(dir.File(p.name + ".bin"), *state.Find(p.name));
    manifest << "param " << p.name;
    for (std::int64_t d : p.shape) manifest << " " << d;
    manifest << "\n";
  }
  const std::vector<std::uint32_t> order =
      EpochPermutation(99, 0, static_cast<std::uint32_t>(data->train.count));
  std::vector<float> our_losses;
  for (int step = 0; step < 2; ++step) {
    kernels::Tensor images, labels;
    ASSERT_TRUE(GatherBatch(data->train,
                            std::span(order).subspan(static_cast<std::size_t>(step * batch), batch),
                            graph->images_shape, images, labels)
                    .ok());
    polnode::testing::WriteRawFloats(dir.File("x" + std::to_string(step) + ".bin"), images);
    polnode::testing::WriteRawFloats(dir.File("y" + std::to_string(step) + ".bin"), labels);
    manifest << "batch " << step << " " << batch << " 784\n";
    Result<float> loss = runner->Step(state, images, labels, **backend);
    ASSERT_TRUE(loss.ok()) << loss.status().ToString();
    our_losses.push_back(*loss);
  }
  manifest.close();

  const std::string script = std::string(POLNODE_SOURCE_DIR) + "/tests/solver/torch_sgd_step.py";
  const std::string command = std::string(polnode::testing::kTorchPython) + " " + script + " " + dir.path();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  const std::vector<float> torch_losses = polnode::testing::ReadRawFloats(dir.File("losses.out.bin"));
  ASSERT_EQ(torch_losses.size(), 2u);
  for (int i = 0; i < 2; ++i)
    EXPECT_NEAR(our_losses[static_cast<std::size_t>(i)], torch_losses[static_cast<std::size_t>(i)],
                1e-4 * torch_losses[static_cast<std::size_t>(i)]);

  for (const ParamSpec& p : model->params) {
    const kernels::Tensor& ours = *state.Find(p.name);
    const std::vector<float> theirs = polnode::testing::ReadRawFloats(dir.File(p.name + ".out.bin"));
    ASSERT_EQ(static_cast<std::int64_t>(theirs.size()), ours.numel()) << p.name;
    // A parameter moves by lr x its velocity each step, so an element that sits near zero (a bias)
    // carries the velocity's summation-order error (bounded below at 1e-5 of its largest element)
    // times lr, which no tolerance relative to the element itself covers.
    const std::vector<float> their_v = polnode::testing::ReadRawFloats(dir.File(p.name + ".velocity.out.bin"));
    const float v_scale = MaxAbs(their_v);
    const float floor = 1e-7f * MaxAbs(theirs) + opt.lr * 1e-5f * v_scale;
    double worst = 0.0;
    for (std::size_t i = 0; i < theirs.size(); ++i) {
      const double diff = std::fabs(static_cast<double>(ours.data()[i]) - theirs[i]);
      worst = std::max(worst, diff / (std::fabs(theirs[i]) + floor));
      ASSERT_LE(diff, 1e-5 * std::fabs(theirs[i]) + floor) << p.name << "[" << i << "]";
    }
    const kernels::Tensor& our_v = *state.Find(p.name + ".velocity");
    ASSERT_EQ(static_cast<std::int64_t>(their_v.size()), our_v.numel());
    double worst_v = 0.0;
    for (std::size_t i = 0; i < their_v.size(); ++i) {
      const double diff = std::fabs(static_cast<double>(our_v.data()[i]) - their_v[i]);
      worst_v = std::max(worst_v, diff / v_scale);
      ASSERT_LE(diff, 1e-4 * v_scale) << p.name << ".velocity[" << i << "]";
    }
    std::printf("%-6s worst relative difference: parameter %.2e, velocity %.2e (of max)\n",
                p.name.c_str(), worst, worst_v);
  }
}

}  // namespace
}  // namespace polnode::solver
