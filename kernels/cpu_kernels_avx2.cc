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
  using Mask = __m256;  // all-ones or all-zeros per lane
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
  static Mask Lt(Reg a, Reg b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static Mask Le(Reg a, Reg b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
  static Mask Gt(Reg a, Reg b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static Mask IsNan(Reg a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static Reg Select(Mask m, Reg a, Reg b) { return _mm256_blendv_ps(b, a, m); }
  static Reg Abs(Reg a) { return _mm256_and_ps(a, Bits(0x7FFFFFFF)); }
  static Reg Neg(Reg a) { return _mm256_xor_ps(a, Bits(static_cast<int>(0x80000000u))); }
  static Reg SignBit(Reg a) { return _mm256_and_ps(a, Bits(static_cast<int>(0x80000000u))); }
  static Reg Or(Reg a, Reg b) { return _mm256_or_ps(a, b); }
  // (k + 127) << 23 as bits: exact for integral k in [-126, 127]; the conversion of anything
  // else gives 0x80000000, a defined garbage value the callers discard.
  static Reg Pow2(Reg k) {
    const __m256i biased = _mm256_cvttps_epi32(_mm256_add_ps(k, _mm256_set1_ps(127.0f)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(biased, 23));
  }

 private:
  static Reg Bits(int u) { return _mm256_castsi256_ps(_mm256_set1_epi32(u)); }
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
