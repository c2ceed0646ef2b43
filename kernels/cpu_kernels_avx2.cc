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
  static Reg LoadBytes(const std::uint8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
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
  static Mask Eq(Reg a, Reg b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
  static Mask IsNan(Reg a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static Reg Select(Mask m, Reg a, Reg b) { return _mm256_blendv_ps(b, a, m); }
  static Reg Abs(Reg a) { return _mm256_and_ps(a, Bits(0x7FFFFFFF)); }
  static Reg Neg(Reg a) { return _mm256_xor_ps(a, Bits(static_cast<int>(0x80000000u))); }
  static Reg SignBit(Reg a) { return _mm256_and_ps(a, Bits(static_cast<int>(0x80000000u))); }
  static Reg Or(Reg a, Reg b) { return _mm256_or_ps(a, b); }
  // The first n < kWidth floats only, through masked loads and stores (the lanes past n are
  // neither read, so no fault, nor written; loaded ones are 0).
  static Reg LoadPartial(const float* p, int n) { return _mm256_maskload_ps(p, FirstLanes(n)); }
  static void StorePartial(float* p, Reg v, int n) { _mm256_maskstore_ps(p, FirstLanes(n), v); }
  // The even and the odd floats of the 16 in lo, hi (in-lane shuffles take the even or odd
  // floats of each 128-bit half, then the 64-bit quarters are put in order); and back.
  static void SplitPairs(Reg lo, Reg hi, Reg& even, Reg& odd) {
    even = InOrder(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)));
    odd = InOrder(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
  }
  static void JoinPairs(Reg even, Reg odd, Reg& first, Reg& second) {
    const Reg low = _mm256_unpacklo_ps(even, odd), high = _mm256_unpackhi_ps(even, odd);
    first = _mm256_permute2f128_ps(low, high, 0x20);
    second = _mm256_permute2f128_ps(low, high, 0x31);
  }
  // r[i][j] becomes r[j][i]: an 8 x 8 transpose (pairs unpacked, then quads shuffled, then the
  // 128-bit halves exchanged).
  static void Transpose(Reg r[kWidth]) {
    Reg t[8], q[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);      // per half: a0 b0 a1 b1
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);  // per half: a2 b2 a3 b3
    }
    for (int g = 0; g < 8; g += 4) {
      q[g] = _mm256_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(1, 0, 1, 0));      // column 0 of four rows
      q[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(3, 2, 3, 2));  // column 1
      q[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(1, 0, 1, 0));
      q[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int j = 0; j < 4; ++j) {
      r[j] = _mm256_permute2f128_ps(q[j], q[j + 4], 0x20);
      r[j + 4] = _mm256_permute2f128_ps(q[j], q[j + 4], 0x31);
    }
  }
  // (k + 127) << 23 as bits: exact for integral k in [-126, 127]; the conversion of anything
  // else gives 0x80000000, a defined garbage value the callers discard.
  static Reg Pow2(Reg k) {
    const __m256i biased = _mm256_cvttps_epi32(_mm256_add_ps(k, _mm256_set1_ps(127.0f)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(biased, 23));
  }

 private:
  static Reg Bits(int u) { return _mm256_castsi256_ps(_mm256_set1_epi32(u)); }
  // Lane i's sign bit set where i < n (any n; below 0 none, from 8 on all).
  static __m256i FirstLanes(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // 64-bit quarters 0, 2, 1, 3: [a0 a2 b0 b2 | a4 a6 b4 b6] -> [a0 a2 a4 a6 b0 b2 b4 b6].
  static Reg InOrder(Reg v) {
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
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
