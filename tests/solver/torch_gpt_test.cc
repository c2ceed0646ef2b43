// Agreement with PyTorch (Debian's python3-torch, installed by scripts/install-deps.sh) for the
// whole GPT: the tiny model, started from polnode's initial weights, trained 50 AdamW steps on the
// same text windows by polnode and by an equivalent PyTorch module (tests/solver/torch_gpt_steps.py),
// with a constant learning rate and with nanoGPT's warm-up and cosine decay.
//
// The two sides sum in different orders, and Adam divides by the square root of each gradient's
// running square, so differences grow slowly over the steps; the test bounds them:
//   every step's loss: within 5e-5 relative to PyTorch's (3.4e-6 seen);
//   every final parameter: within 5e-4 of the tensor's largest magnitude (4.8e-5 seen).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "polnode/kernels/backend.h"
#include "polnode/solver/init.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/step_runner.h"
#include "polnode/solver/trainer.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/torch_files.h"
#include "polnode/testing/tiny_gpt.h"

namespace polnode::solver {
namespace {

// Trains the tiny GPT 50 steps with `opt` here and in PyTorch and checks the bounds above.
void ExpectFiftyStepsMatchPyTorch(const OptimizerConfig& opt) {
  ASSERT_TRUE(polnode::testing::TorchAvailable())
      << polnode::testing::kTorchPython << " cannot import torch and numpy (scripts/install-deps.sh installs python3-torch)";
  polnode::testing::TempDir dir("torch-gpt");
  const ImageDataset data = testing::TinyTextDataset();
  Result<ModelSpec> model = ModelForData(testing::kTinyGptSpec, data);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const GptConfig& g = *model->gpt;
  const std::int64_t batch = 4;
  const int steps = 50;
  Result<StepGraph> graph = BuildTrainStepGraph(*model, opt, batch);
  ASSERT_TRUE(graph.ok());
  Result<StepRunner> runner = StepRunner::Create(*graph);
  ASSERT_TRUE(runner.ok());
  auto backend = kernels::MakeCpuBackend(2);

  TrainState state = InitialState(*model, opt.kind, 7);
  std::ofstream manifest(dir.File("manifest.txt"));
  manifest << "config " << g.layers << " " << g.heads << " " << g.width << " " << g.context << " "
           << g.vocab << "\n";
  char hyper[256];
  std::snprintf(hyper, sizeof hyper, "lr %.9g\nbeta1 %.9g\nbeta2 %.9g\neps %.9g\nweight_decay %.9g\n",
                static_cast<double>(opt.lr), static_cast<double>(opt.beta1),
                static_cast<double>(opt.beta2), static_cast<double>(opt.eps),
                static_cast<double>(opt.weight_decay));
  manifest << hyper;
  std::snprintf(hyper, sizeof hyper,
                "warmup_steps %lld\nlr_decay_steps %lld\nmin_lr %.9g\ngrad_clip %.9g\n",
                static_cast<long long>(opt.warmup_steps), static_cast<long long>(opt.decay_steps),
                static_cast<double>(opt.min_lr), static_cast<double>(opt.grad_clip));
  manifest << hyper;
  for (const ParamSpec& p : model->params) {
    polnode::testing::WriteRawFloats(dir.File(p.name + ".bin"), *state.Find(p.name));
    manifest << "param " << p.name << " " << (p.no_decay ? 0 : 1);
    for (std::int64_t d : p.shape) manifest << " " << d;
    manifest << "\n";
  }
  std::vector<float> our_losses;
  for (int step = 0; step < steps; ++step) {
    kernels::Tensor ids, targets;
    ASSERT_TRUE(GatherTextBatch(*data.text, 7, step, batch, g.context, ids, targets).ok());
    polnode::testing::WriteRawFloats(dir.File("x" + std::to_string(step) + ".bin"), ids);
    polnode::testing::WriteRawFloats(dir.File("y" + std::to_string(step) + ".bin"), targets);
    manifest << "batch " << step << " " << batch << "\n";
    Result<float> loss = runner->Step(state, ids, targets, *backend);
    ASSERT_TRUE(loss.ok()) << loss.status().ToString();
    our_losses.push_back(*loss);
  }
  manifest.close();

  const std::string script = std::string(POLNODE_SOURCE_DIR) + "/tests/solver/torch_gpt_steps.py";
  const std::string command = std::string(polnode::testing::kTorchPython) + " " + script + " " + dir.path();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  const std::vector<float> torch_losses = polnode::testing::ReadRawFloats(dir.File("losses.out.bin"));
  ASSERT_EQ(torch_losses.size(), static_cast<std::size_t>(steps));
  double worst_loss = 0.0;
  for (std::size_t i = 0; i < torch_losses.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(our_losses[i]) - torch_losses[i]);
    worst_loss = std::max(worst_loss, diff / torch_losses[i]);
    EXPECT_LE(diff, 5e-5 * torch_losses[i]) << "step " << i;
  }
  EXPECT_LT(our_losses.back(), our_losses.front() - 0.5);  // it learned something
  double worst_param = 0.0;
  for (const ParamSpec& p : model->params) {
    const kernels::Tensor& ours = *state.Find(p.name);
    const std::vector<float> theirs = polnode::testing::ReadRawFloats(dir.File(p.name + ".out.bin"));
    ASSERT_EQ(static_cast<std::int64_t>(theirs.size()), ours.numel()) << p.name;
    float scale = 0.0f;
    for (float x : theirs) scale = std::max(scale, std::fabs(x));
    for (std::size_t i = 0; i < theirs.size(); ++i) {
      const double diff = std::fabs(static_cast<double>(ours.data()[i]) - theirs[i]);
      worst_param = std::max(worst_param, diff / scale);
      ASSERT_LE(diff, 5e-4 * scale) << p.name << "[" << i << "]";
    }
  }
  std::printf("GPT vs PyTorch over %d steps: worst loss difference %.2e (relative), worst "
              "parameter difference %.2e (of the tensor's max); loss %.4f -> %.4f\n",
              steps, worst_loss, worst_param, static_cast<double>(our_losses.front()),
              static_cast<double>(our_losses.back()));
}

OptimizerConfig TinyAdamW() {
  OptimizerConfig opt;
  opt.kind = OptimizerKind::kAdam;
  opt.lr = 1e-2f;
  opt.weight_decay = 0.1f;
  return opt;
}

TEST(TorchGptTest, FiftyAdamWStepsOfTheTinyGptMatchPyTorch) {
  ExpectFiftyStepsMatchPyTorch(TinyAdamW());
}

// nanoGPT's schedule (PyTorch's side sets each step's lr from its get_lr formula in Python) and
// its beta2: warm-up over 10 steps, cosine decay to a tenth at step 40, the floor after it; and
// gradient-norm clipping (clip_grad_norm_ on PyTorch's side) at a norm the tiny model's
// gradients exceed, so it scales every step.
TEST(TorchGptTest, FiftyStepsWithNanoGptsScheduleAndClippingMatchPyTorch) {
  OptimizerConfig opt = TinyAdamW();
  opt.beta2 = 0.99f;
  opt.warmup_steps = 10;
  opt.decay_steps = 40;
  opt.min_lr = opt.lr / 10.0f;
  opt.grad_clip = 0.05f;
  ExpectFiftyStepsMatchPyTorch(opt);
}

}  // namespace
}  // namespace polnode::solver
