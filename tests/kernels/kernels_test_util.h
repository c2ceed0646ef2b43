// Helpers shared by the kernels tests: seeded random tensors and a one-call operator runner.
#ifndef POLNODE_TESTS_KERNELS_KERNELS_TEST_UTIL_H_
#define POLNODE_TESTS_KERNELS_KERNELS_TEST_UTIL_H_

#include <cstdint>
#include <random>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/tensor.h"

namespace polnode::kernels::testing {

/// A tensor of `shape` with values uniform in [lo, hi), reproducible from `seed`.
inline Tensor RandomTensor(const Shape& shape, std::uint32_t seed, float lo = -1.0f,
                           float hi = 1.0f) {
  Tensor t(shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float& v : t.values()) v = dist(gen);
  return t;
}

/// Labels [rows] (class indices stored as floats) uniform in [0, classes), from `seed`.
inline Tensor RandomLabels(std::int64_t rows, std::int64_t classes, std::uint32_t seed) {
  Tensor t({rows});
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::int64_t> dist(0, classes - 1);
  for (float& v : t.values()) v = static_cast<float>(dist(gen));
  return t;
}

/// Runs `op` on `backend` with fresh output tensors and returns them.
inline Result<std::vector<Tensor>> RunOp(Backend& backend, Op op, const OpAttrs& attrs,
                                         const std::vector<const Tensor*>& inputs) {
  std::vector<Tensor> outputs(static_cast<std::size_t>(NumOutputs(op)));
  std::vector<Tensor*> out_ptrs;
  for (Tensor& t : outputs) out_ptrs.push_back(&t);
  POLNODE_RETURN_IF_ERROR(backend.Run(op, attrs, inputs, out_ptrs));
  return outputs;
}

/// The values of `t` widened to double.
inline std::vector<double> ToDouble(const Tensor& t) {
  return std::vector<double>(t.values().begin(), t.values().end());
}

}  // namespace polnode::kernels::testing

#endif  // POLNODE_TESTS_KERNELS_KERNELS_TEST_UTIL_H_
