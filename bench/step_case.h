// What the step benchmarks (transfer_bench, step_profile) train: a model, an optimizer, a batch,
// and a fixed synthetic batch for it.
#ifndef POLNODE_BENCH_STEP_CASE_H_
#define POLNODE_BENCH_STEP_CASE_H_

#include <cstdint>

#include "polnode/kernels/tensor.h"
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

}  // namespace polnode::bench

#endif  // POLNODE_BENCH_STEP_CASE_H_
