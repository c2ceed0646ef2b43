// The fast CPU kernels for AVX2 with FMA: 8 floats per register. Compiled with -mavx2 -mfma
// (kernels/CMakeLists.txt); only called after a run-time check (cpu_isa.cc).
#if defined(__x86_64__)

#include <immintrin.h>

#define POLNODE_CPU_ISA_NS avx2
#define POLNODE_CPU_ISA CpuIsa::kAvx2

#include "cpu_kernels.h"
#include "cpu_one_lane.h"

namespace polnode::kernels::avx2 {

struct Lanes {
  using Reg = __m256;
  static constexpr int kWidth = 8;
  static Reg Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static Reg Set1(float x) { return _mm256_set1_ps(x); }
  static Reg Zero() { return _mm256_setzero_ps(); }
  static Reg Add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg Sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
  static Reg Mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg Div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
  static Reg Sqrt(Reg a) { return _mm256_sqrt_ps(a); }
  static Reg Fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  // The compare yields all-ones or all-zeros per lane; and-ing keeps v or gives +0.0f.
  static Reg PositiveSelect(Reg x, Reg v) {
    return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ), v);
  }
};

// 6 x 16 tile: 12 accumulators + 2 B vectors + 1 broadcast of the 16 ymm registers.
constexpr int kMicroRows = 6;
constexpr int kMicroVectors = 2;

}  // namespace polnode::kernels::avx2

#include "cpu_kernels_impl.h"

namespace polnode::kernels::avx2 {
const CpuKernels& Kernels() { return kKernels; }
}  // namespace polnode::kernels::avx2

#endif  // __x86_64__
