// The blocked, packed, threaded SGEMM driver of the fast CPU backend. It keeps op.h's matrix
// product order: every C element is one fma chain over k ascending, started from +0.0f (or from
// C's current value, to continue a chain across calls). The k dimension is blocked for the
// caches, but each block continues the chain from the value the previous block stored in C;
// threads split only the output.
#ifndef POLNODE_KERNELS_GEMM_H_
#define POLNODE_KERNELS_GEMM_H_

#include <cstdint>

#include "cpu_kernels.h"
#include "thread_pool.h"

namespace polnode::kernels {

/// A read-only matrix seen through strides: element (r, c) is data[r * row_stride + c * col_stride].
/// Transposes are views with the strides swapped; nothing is copied until packing.
struct MatrixView {
  const float* data;
  std::int64_t row_stride;
  std::int64_t col_stride;
};

/// C[m x n] (row-major, leading dimension ldc) from A[m x k] and B[k x n]:
///   C[i][j] = fma chain over p = 0..k-1 of A(i,p) * B(p,j), starting from C[i][j] when
///   `accumulate`, else from +0.0f (so k = 0 gives +0.0f, or leaves C as it is).
struct GemmProblem {
  std::int64_t m, n, k;
  MatrixView a;
  MatrixView b;
  float* c;
  std::int64_t ldc;
  bool accumulate;
};

/// Computes `problem` with `kernels`, on `pool` when it is not null (the output is split among
/// its threads), else on the calling thread. C must not overlap A or B.
void Gemm(const CpuKernels& kernels, const GemmProblem& problem, ThreadPool* pool);

}  // namespace polnode::kernels

#endif  // POLNODE_KERNELS_GEMM_H_
