// nanoGPT's shakespeare_char CPU run (issue 12 item 7): a 4-layer, 4-head, width-128 GPT with
// context 64 trained 2,000 steps of batch 12 with AdamW (lr 1e-3, weight decay 0.1, beta2 0.99)
// under nanoGPT's learning-rate schedule (warm-up 100 steps, cosine decay to 1e-4 at step 2,000)
// and its gradient-norm clipping at 1.0, dropout 0. nanoGPT's README gives a validation loss of about 1.88 for it; this prints ours and the
// curve. Too slow for CI (minutes), so it is a benchmark, not a test.
//
// Usage: gpt_quality_bench FILE [THREADS] [STEPS] [GRAD_CLIP]
//   FILE     the corpus, e.g. tiny Shakespeare (bench/data/tinyshakespeare.txt.gz; any text
//            file works, gzipped or not)
//   THREADS  CPU backend threads (default 2)
//   STEPS    training steps (default 2000; the schedule decays over them)
//   GRAD_CLIP  the global gradient norm clipped to (default 1.0, nanoGPT's; 0: no clipping)
// Every 250 steps (and at the start) it prints the last step's learning rate, the mean of the
// step losses since the previous line, and the mean loss over the first 500 windows of the training and validation
// splits (solver::TextSplitLoss, the figure `polnode train` reports).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "polnode/consensus/hex.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/init.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/step_runner.h"
#include "polnode/solver/text_data.h"
#include "polnode/solver/train_state.h"
#include "polnode/solver/trainer.h"

namespace {

namespace solver = polnode::solver;
namespace kernels = polnode::kernels;

constexpr const char* kModel = "gpt:layers=4,heads=4,width=128,context=64";
constexpr std::int64_t kBatch = 12;
constexpr std::uint64_t kSeed = 1;
constexpr std::int64_t kEvalEvery = 250;
constexpr std::int64_t kEvalWindows = 500;
constexpr double kNanoGptValLoss = 1.88;

int Fail(const polnode::Status& s) {
  std::fprintf(stderr, "gpt_quality_bench: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 5) {
    std::fprintf(stderr, "usage: %s FILE [THREADS] [STEPS] [GRAD_CLIP]\n", argv[0]);
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const std::int64_t steps = argc > 3 ? std::atoll(argv[3]) : 2000;
  const double grad_clip = argc > 4 ? std::atof(argv[4]) : 1.0;
  if (threads < 1 || steps < 1 || !(grad_clip >= 0.0)) {
    std::fprintf(stderr, "THREADS and STEPS must be >= 1, GRAD_CLIP >= 0\n");
    return 2;
  }
  polnode::Result<solver::ImageDataset> data = solver::LoadDatasetFor(kModel, argv[1]);
  if (!data.ok()) return Fail(data.status());
  polnode::Result<solver::ModelSpec> model = solver::ModelForData(kModel, *data);
  if (!model.ok()) return Fail(model.status());
  const solver::TextCorpus& corpus = *data->text;

  solver::OptimizerConfig opt;
  opt.kind = solver::OptimizerKind::kAdam;
  opt.lr = 1e-3f;
  opt.weight_decay = 0.1f;
  opt.beta2 = 0.99f;
  opt.warmup_steps = 100;
  opt.decay_steps = steps;
  opt.min_lr = opt.lr / 10.0f;
  opt.grad_clip = static_cast<float>(grad_clip);
  polnode::Result<solver::StepGraph> graph = solver::BuildTrainStepGraph(*model, opt, kBatch);
  if (!graph.ok()) return Fail(graph.status());
  polnode::Result<solver::StepRunner> runner = solver::StepRunner::Create(std::move(*graph));
  if (!runner.ok()) return Fail(runner.status());
  const std::unique_ptr<kernels::Backend> backend = kernels::MakeCpuBackend(threads);
  solver::TrainState state = solver::InitialState(*model, opt.kind, kSeed);
  // The node whose attributes carry the schedule, to print each step's lr as the step runs it.
  const solver::StepNode& update = runner->graph().nodes.back();

  std::printf("%s on %s: vocabulary %lld, batch %lld, %lld steps, AdamW lr %g -> %g (warm-up %lld), "
              "weight decay %g, beta2 %g, grad clip %g, backend %s (%d threads)\n",
              kModel, argv[1], static_cast<long long>(model->gpt->vocab),
              static_cast<long long>(kBatch), static_cast<long long>(steps),
              static_cast<double>(opt.lr), static_cast<double>(opt.min_lr),
              static_cast<long long>(opt.warmup_steps), static_cast<double>(opt.weight_decay),
              static_cast<double>(opt.beta2), static_cast<double>(opt.grad_clip),
              backend->name().c_str(), threads);
  std::printf("%6s %10s %10s %10s %10s %8s\n", "step", "lr", "step loss", "train", "val", "seconds");
  const auto start = std::chrono::steady_clock::now();
  double recent = 0.0;  // sum of the step losses since the last report
  std::int64_t recent_steps = 0;
  double val = 0.0;
  kernels::Tensor ids, targets;
  for (std::int64_t t = 0; t <= steps; ++t) {
    if (t % kEvalEvery == 0 || t == steps) {
      polnode::Result<double> train_loss = solver::TextSplitLoss(
          *model, state, corpus, false, *backend, kEvalWindows, 64);
      polnode::Result<double> val_loss = solver::TextSplitLoss(
          *model, state, corpus, true, *backend, kEvalWindows, 64);
      if (!train_loss.ok()) return Fail(train_loss.status());
      if (!val_loss.ok()) return Fail(val_loss.status());
      val = *val_loss;
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      // The lr of the last step run (the first step's at the start).
      const float lr = kernels::ScheduledLr(update.attrs, t > 0 ? t - 1 : 0);
      std::printf("%6lld %10.3g %10.4f %10.4f %10.4f %8.0f\n", static_cast<long long>(t),
                  static_cast<double>(lr),
                  recent_steps > 0 ? recent / static_cast<double>(recent_steps) : 0.0,
                  *train_loss, val, seconds);
      std::fflush(stdout);
      recent = 0.0;
      recent_steps = 0;
    }
    if (t == steps) break;
    if (polnode::Status s =
            solver::GatherTextBatch(corpus, kSeed, t, kBatch, model->gpt->context, ids, targets);
        !s.ok()) {
      return Fail(s);
    }
    polnode::Result<float> loss = runner->Step(state, ids, targets, *backend);
    if (!loss.ok()) return Fail(loss.status());
    recent += *loss;
    ++recent_steps;
  }
  std::printf("validation loss after %lld steps: %.4f (nanoGPT: about %.2f); state hash %s\n",
              static_cast<long long>(steps), val, kNanoGptValLoss,
              polnode::consensus::ToHex(solver::StateHash(state)).c_str());
  return 0;
}
