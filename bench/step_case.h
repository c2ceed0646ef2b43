// What the step benchmarks (transfer_bench, step_profile) train: a model, an optimizer, a batch,
// and a fixed synthetic batch for it; the model families the training and proof benchmarks
// (train_bench, proof_bench) measure, each with the optimizer it trains with; and the median both
// judge their goals by.
#ifndef POLNODE_BENCH_STEP_CASE_H_
#define POLNODE_BENCH_STEP_CASE_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "polnode/kernels/tensor.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/optimizer.h"
#include "polnode/solver/step_graph.h"

namespace polnode::bench {

struct StepCase {
  const char* spec;
  solver::OptimizerKind optimizer;
  std::int64_t batch;
};

/// A batch of `graph`'s shapes: the values 0..9 over and over, which are valid labels and, for a
/// GPT, valid token ids.
inline void FillBatch(const solver::StepGraph& graph, kernels::Tensor& images, kernels::Tensor& labels) {
  images = kernels::Tensor(graph.images_shape);
  labels = kernels::Tensor(graph.labels_shape);
  for (std::int64_t i = 0; i < images.numel(); ++i) images.data()[i] = static_cast<float>(i % 10);
  for (std::int64_t i = 0; i < labels.numel(); ++i) labels.data()[i] = static_cast<float>(i % 10);
}

/// One model family of issue 18: its spec and batch, and train_bench's goal for its steps/s over
/// PyTorch's (1.5x, 1.2x for the 1024-wide MLP).
struct ModelCase {
  const char* spec;
  std::int64_t batch;
  double speed_target;
};

/// The two MLPs and the devnet's CNN at batch 128, and nanoGPT's shakespeare_char CPU GPT (4
/// layers, width 128, context 64, its vocabulary of 65) at batch 12.
inline constexpr ModelCase kModelCases[] = {{"mlp:784-256-128-10", 128, 1.5},
                                            {"mlp:784-1024-1024-10", 128, 1.2},
                                            {"cnn:c8-p-c16-p-f64-10", 128, 1.5},
                                            {"gpt:layers=4,heads=4,width=128,context=64,vocab=65", 12, 1.5}};

/// What a model of kModelCases trains with: SGD with lr 0.05 and momentum 0.9 (the defaults); a
/// GPT AdamW with lr 1e-3 and weight decay 0.1, as nanoGPT trains it.
inline solver::OptimizerConfig CaseOptimizer(const solver::ModelSpec& model) {
  solver::OptimizerConfig opt;
  if (model.gpt) {
    opt.kind = solver::OptimizerKind::kAdam;
    opt.lr = 1e-3f;
    opt.weight_decay = 0.1f;
  }
  return opt;
}

/// The median of `values` (the mean of the middle two for an even count); `values` not empty.
inline double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace polnode::bench

#endif  // POLNODE_BENCH_STEP_CASE_H_
