// The multi-buffer SHA-256 on AVX-512 (F, BW): 16 messages per register. Compiled with
// -mavx512f -mavx512bw (consensus/CMakeLists.txt); called only after sha256_lanes.cc's CPU check.
// Rotates are one vprord each and every three-input function one vpternlogd.
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstdint>

#include "sha256_lane_kernels.h"
#include "sha256_lanes_impl.h"

namespace polnode::consensus::avx512 {
namespace {

struct V {
  using T = __m512i;
  static constexpr int kLanes = 16;
  static constexpr __mmask16 kAll = 0xFFFF;  // every 32-bit lane
  static constexpr __mmask8 kAll8 = 0xFF;    // every 64-bit lane
  static T Load(const std::uint32_t* p) { return _mm512_load_si512(p); }
  static void Store(std::uint32_t* p, T v) { _mm512_store_si512(p, v); }
  static T Set1(std::uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
  static T Add(T a, T b) { return _mm512_add_epi32(a, b); }
  // Here and below the zero-masking forms with every lane selected: GCC 12 reports the plain
  // forms' undefined pass-through operand as "used uninitialized"; they are the same instructions.
  template <int n>
  static T Shr(T a) {
    return _mm512_maskz_srli_epi32(kAll, a, n);
  }
  template <int n>
  static T Ror(T a) {
    return _mm512_maskz_ror_epi32(kAll, a, n);
  }
  // vpternlogd's immediate is the truth table over (a, b, c) = (0xF0, 0xCC, 0xAA).
  static T Xor3(T a, T b, T c) { return _mm512_ternarylogic_epi32(a, b, c, 0x96); }
  static T Ch(T e, T f, T g) { return _mm512_ternarylogic_epi32(e, f, g, 0xCA); }
  static T Maj(T a, T b, T c) { return _mm512_ternarylogic_epi32(a, b, c, 0xE8); }
  // The masked form with a zero source, for the same reason as Ror's.
  static T Gather(const float* base, T starts, std::int32_t offset) {
    return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), kAll,
                                       _mm512_add_epi32(starts, _mm512_set1_epi32(offset)), base, 4);
  }
  static T LoadFloats(const float* p) { return _mm512_castps_si512(_mm512_loadu_ps(p)); }
  // valignd: lane 0 from x, lanes 1.. from v's lanes 0 ...
  static T ShiftIn(T v, std::uint32_t x) { return _mm512_maskz_alignr_epi32(kAll, v, Set1(x), 15); }
  // Four stages: 32-bit and 64-bit interleaves within 128-bit lanes, then two 128-bit shuffles
  // across registers (0x88 takes 128-bit lanes 0 and 2 of each source, 0xDD lanes 1 and 3).
  static void Transpose(T m[16]) {
    T t[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_maskz_unpacklo_epi32(kAll, m[i], m[i + 1]);
      t[i + 1] = _mm512_maskz_unpackhi_epi32(kAll, m[i], m[i + 1]);
    }
    // m[4 g + c] = rows 4 g .. 4 g + 3 of column 4 q + c in 128-bit lane q.
    for (int g = 0; g < 16; g += 4) {
      m[g] = _mm512_maskz_unpacklo_epi64(kAll8, t[g], t[g + 2]);
      m[g + 1] = _mm512_maskz_unpackhi_epi64(kAll8, t[g], t[g + 2]);
      m[g + 2] = _mm512_maskz_unpacklo_epi64(kAll8, t[g + 1], t[g + 3]);
      m[g + 3] = _mm512_maskz_unpackhi_epi64(kAll8, t[g + 1], t[g + 3]);
    }
    for (int c = 0; c < 4; ++c) {
      t[c] = _mm512_maskz_shuffle_i32x4(kAll, m[c], m[4 + c], 0x88);       // 128-bit lanes 0, 2 of rows 0-7
      t[4 + c] = _mm512_maskz_shuffle_i32x4(kAll, m[c], m[4 + c], 0xDD);   // lanes 1, 3 of rows 0-7
      t[8 + c] = _mm512_maskz_shuffle_i32x4(kAll, m[8 + c], m[12 + c], 0x88);
      t[12 + c] = _mm512_maskz_shuffle_i32x4(kAll, m[8 + c], m[12 + c], 0xDD);
    }
    for (int c = 0; c < 4; ++c) {
      m[c] = _mm512_maskz_shuffle_i32x4(kAll, t[c], t[8 + c], 0x88);
      m[8 + c] = _mm512_maskz_shuffle_i32x4(kAll, t[c], t[8 + c], 0xDD);
      m[4 + c] = _mm512_maskz_shuffle_i32x4(kAll, t[4 + c], t[12 + c], 0x88);
      m[12 + c] = _mm512_maskz_shuffle_i32x4(kAll, t[4 + c], t[12 + c], 0xDD);
    }
  }
  static T CanonicalNan(T bits) {
    const __m512 x = _mm512_castsi512_ps(bits);
    return _mm512_mask_mov_epi32(bits, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), Set1(kCanonicalNanBits));
  }
  // (previous & 0xFF000000) | bytes 0, 1, 2 of current in reverse order, in the low three bytes:
  // one vpshufb (the 0x80 indices give zero bytes) and one vpternlogd ((a & b) | c = 0xEA).
  static T LeafWord(T previous, T current) {
    const T reverse_low3 = _mm512_set4_epi32(static_cast<int>(0x80'0C'0D'0Eu), static_cast<int>(0x80'08'09'0Au),
                                             static_cast<int>(0x80'04'05'06u), static_cast<int>(0x80'00'01'02u));
    return _mm512_ternarylogic_epi32(previous, Set1(0xFF000000u), _mm512_shuffle_epi8(current, reverse_low3), 0xEA);
  }
};

}  // namespace

const Sha256LaneKernels& LaneKernels() {
  static const Sha256LaneKernels kernels{V::kLanes, &HashMessages<V, 2>, &HashBlockLeaves<V, 1>,
                                         &HashBlockLeaves<V, 2>};
  return kernels;
}

}  // namespace polnode::consensus::avx512

#endif  // defined(__x86_64__)
