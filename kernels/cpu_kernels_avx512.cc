// The fast CPU kernels for AVX-512 (F, BW, VL) with FMA: 16 floats per register. Compiled with
// -mavx512f -mavx512bw -mavx512vl -mfma (kernels/CMakeLists.txt); only called after a run-time
// check (cpu_isa.cc).
#if defined(__x86_64__)

#include <immintrin.h>

#define POLNODE_CPU_ISA_NS avx512
#define POLNODE_CPU_ISA CpuIsa::kAvx512

#include "cpu_kernels.h"
#include "cpu_one_lane.h"

namespace polnode::kernels::avx512 {

struct Lanes {
  using Reg = __m512;
  using Mask = __mmask16;
  static constexpr int kWidth = 16;
  static Reg Load(const float* p) { return _mm512_loadu_ps(p); }
  // Zero-masking forms with every lane selected, as Sqrt's (GCC 12's warning on the plain ones).
  static Reg LoadBytes(const std::uint8_t* p) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m512i words = _mm512_maskz_cvtepu8_epi32(static_cast<__mmask16>(0xFFFF), bytes);
    return _mm512_maskz_cvtepi32_ps(static_cast<__mmask16>(0xFFFF), words);
  }
  static void Store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static Reg Set1(float x) { return _mm512_set1_ps(x); }
  static Reg Zero() { return _mm512_setzero_ps(); }
  static Reg Add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg Sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static Reg Mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg Div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
  // All lanes selected: the zero-masking form avoids GCC 12's false "may be used uninitialized"
  // on _mm512_sqrt_ps's undefined pass-through operand.
  static Reg Sqrt(Reg a) { return _mm512_maskz_sqrt_ps(static_cast<__mmask16>(0xFFFF), a); }
  static Reg Fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg PositiveSelect(Reg x, Reg v) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ), v);
  }
  static Mask Lt(Reg a, Reg b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static Mask Le(Reg a, Reg b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
  static Mask Gt(Reg a, Reg b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static Mask Eq(Reg a, Reg b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  static Mask IsNan(Reg a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static Reg Select(Mask m, Reg a, Reg b) { return _mm512_mask_blend_ps(m, b, a); }
  // Bitwise float operations go through the integer forms (the float ones need AVX512DQ).
  static Reg Abs(Reg a) { return BitAnd(a, 0x7FFFFFFF); }
  static Reg Neg(Reg a) {
    return _mm512_castsi512_ps(
        _mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
  }
  static Reg SignBit(Reg a) { return BitAnd(a, static_cast<int>(0x80000000u)); }
  static Reg Or(Reg a, Reg b) {
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)));
  }
  // The first n < kWidth floats only, through masked loads and stores (the lanes past n are
  // neither read, so no fault, nor written; loaded ones are 0).
  static Reg LoadPartial(const float* p, int n) { return _mm512_maskz_loadu_ps(FirstLanes(n), p); }
  static void StorePartial(float* p, Reg v, int n) { _mm512_mask_storeu_ps(p, FirstLanes(n), v); }
  // The even and the odd floats of the 32 in lo, hi; and back.
  static void SplitPairs(Reg lo, Reg hi, Reg& even, Reg& odd) {
    even = _mm512_permutex2var_ps(lo, _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), hi);
    odd = _mm512_permutex2var_ps(lo, _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31), hi);
  }
  static void JoinPairs(Reg even, Reg odd, Reg& first, Reg& second) {
    first = _mm512_permutex2var_ps(even, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23), odd);
    second =
        _mm512_permutex2var_ps(even, _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), odd);
  }
  // r[i][j] becomes r[j][i]: a 16 x 16 transpose. Pairs are unpacked and quads shuffled within
  // each 128-bit lane (q[4g + j], lane k: rows 4g..4g+3 at column 4k + j), then for each j the
  // 4 x 4 grid of 128-bit lanes of q[j], q[j + 4], q[j + 8], q[j + 12] is transposed. Zero-masking
  // forms with every lane selected, as for Sqrt.
  static void Transpose(Reg r[kWidth]) {
    constexpr auto kAll = static_cast<__mmask16>(0xFFFF);
    Reg t[16], q[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_maskz_unpacklo_ps(kAll, r[i], r[i + 1]);
      t[i + 1] = _mm512_maskz_unpackhi_ps(kAll, r[i], r[i + 1]);
    }
    for (int g = 0; g < 16; g += 4) {
      q[g] = _mm512_maskz_shuffle_ps(kAll, t[g], t[g + 2], _MM_SHUFFLE(1, 0, 1, 0));
      q[g + 1] = _mm512_maskz_shuffle_ps(kAll, t[g], t[g + 2], _MM_SHUFFLE(3, 2, 3, 2));
      q[g + 2] = _mm512_maskz_shuffle_ps(kAll, t[g + 1], t[g + 3], _MM_SHUFFLE(1, 0, 1, 0));
      q[g + 3] = _mm512_maskz_shuffle_ps(kAll, t[g + 1], t[g + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int j = 0; j < 4; ++j) {
      const Reg u0 = _mm512_maskz_shuffle_f32x4(kAll, q[j], q[j + 4], _MM_SHUFFLE(1, 0, 1, 0));
      const Reg u1 = _mm512_maskz_shuffle_f32x4(kAll, q[j], q[j + 4], _MM_SHUFFLE(3, 2, 3, 2));
      const Reg u2 = _mm512_maskz_shuffle_f32x4(kAll, q[j + 8], q[j + 12], _MM_SHUFFLE(1, 0, 1, 0));
      const Reg u3 = _mm512_maskz_shuffle_f32x4(kAll, q[j + 8], q[j + 12], _MM_SHUFFLE(3, 2, 3, 2));
      r[j] = _mm512_maskz_shuffle_f32x4(kAll, u0, u2, _MM_SHUFFLE(2, 0, 2, 0));
      r[4 + j] = _mm512_maskz_shuffle_f32x4(kAll, u0, u2, _MM_SHUFFLE(3, 1, 3, 1));
      r[8 + j] = _mm512_maskz_shuffle_f32x4(kAll, u1, u3, _MM_SHUFFLE(2, 0, 2, 0));
      r[12 + j] = _mm512_maskz_shuffle_f32x4(kAll, u1, u3, _MM_SHUFFLE(3, 1, 3, 1));
    }
  }
  // (k + 127) << 23 as bits, exact for integral k in [-126, 127] (anything else converts to
  // 0x80000000, a defined garbage value the callers discard). Zero-masking forms, as for Sqrt.
  static Reg Pow2(Reg k) {
    constexpr auto kAll = static_cast<__mmask16>(0xFFFF);
    const __m512i biased =
        _mm512_maskz_cvttps_epi32(kAll, _mm512_add_ps(k, _mm512_set1_ps(127.0f)));
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, biased, 23));
  }

 private:
  // Lanes i < n (any n: none below 1, all from kWidth on).
  static __mmask16 FirstLanes(int n) {
    return n <= 0 ? 0 : n >= kWidth ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
  }
  static Reg BitAnd(Reg a, int mask) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(mask)));
  }
};

// 12 x 32 tile: 24 accumulators + 2 B vectors + 1 broadcast of the 32 zmm registers.
constexpr int kMicroRows = 12;
constexpr int kMicroVectors = 2;

}  // namespace polnode::kernels::avx512

#include "cpu_kernels_impl.h"

namespace polnode::kernels::avx512 {
const CpuKernels& Kernels() { return kKernels; }
}  // namespace polnode::kernels::avx512

#endif  // __x86_64__
