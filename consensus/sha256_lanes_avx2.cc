// The multi-buffer SHA-256 on AVX2: 8 messages per register, for x86-64 CPUs without AVX-512.
// Compiled with -mavx2 (consensus/CMakeLists.txt); called only after sha256_lanes.cc's CPU check.
// AVX2 has neither rotates nor three-input logic, so each costs two or three instructions.
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstdint>

#include "sha256_lane_kernels.h"
#include "sha256_lanes_impl.h"

namespace polnode::consensus::avx2 {
namespace {

struct V {
  using T = __m256i;
  static constexpr int kLanes = 8;
  static T Load(const std::uint32_t* p) { return _mm256_load_si256(reinterpret_cast<const T*>(p)); }
  static void Store(std::uint32_t* p, T v) { _mm256_store_si256(reinterpret_cast<T*>(p), v); }
  static T Set1(std::uint32_t x) { return _mm256_set1_epi32(static_cast<int>(x)); }
  static T Add(T a, T b) { return _mm256_add_epi32(a, b); }
  template <int n>
  static T Shr(T a) {
    return _mm256_srli_epi32(a, n);
  }
  template <int n>
  static T Ror(T a) {
    return _mm256_or_si256(_mm256_srli_epi32(a, n), _mm256_slli_epi32(a, 32 - n));
  }
  static T Xor3(T a, T b, T c) { return _mm256_xor_si256(_mm256_xor_si256(a, b), c); }
  static T Ch(T e, T f, T g) { return _mm256_xor_si256(g, _mm256_and_si256(e, _mm256_xor_si256(f, g))); }
  static T Maj(T a, T b, T c) {
    return _mm256_or_si256(_mm256_and_si256(a, b), _mm256_and_si256(c, _mm256_or_si256(a, b)));
  }
  // The masked form with a zero source, for the reason sha256_lanes_avx512.cc gives.
  static T Gather(const float* base, T starts, std::int32_t offset) {
    return _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), reinterpret_cast<const int*>(base),
                                       _mm256_add_epi32(starts, _mm256_set1_epi32(offset)), _mm256_set1_epi32(-1), 4);
  }
  static T LoadFloats(const float* p) { return _mm256_castps_si256(_mm256_loadu_ps(p)); }
  static T ShiftIn(T v, std::uint32_t x) {
    const T rotated = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6));
    return _mm256_blend_epi32(rotated, Set1(x), 0x01);
  }
  // 32-bit and 64-bit interleaves within 128-bit lanes, then one 128-bit exchange.
  static void Transpose(T m[8]) {
    T t[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_epi32(m[i], m[i + 1]);
      t[i + 1] = _mm256_unpackhi_epi32(m[i], m[i + 1]);
    }
    // m[4 g + c] = rows 4 g .. 4 g + 3 of column 4 q + c in 128-bit lane q.
    for (int g = 0; g < 8; g += 4) {
      m[g] = _mm256_unpacklo_epi64(t[g], t[g + 2]);
      m[g + 1] = _mm256_unpackhi_epi64(t[g], t[g + 2]);
      m[g + 2] = _mm256_unpacklo_epi64(t[g + 1], t[g + 3]);
      m[g + 3] = _mm256_unpackhi_epi64(t[g + 1], t[g + 3]);
    }
    for (int c = 0; c < 4; ++c) {
      t[c] = _mm256_permute2x128_si256(m[c], m[4 + c], 0x20);
      t[4 + c] = _mm256_permute2x128_si256(m[c], m[4 + c], 0x31);
    }
    for (int i = 0; i < 8; ++i) m[i] = t[i];
  }
  static T CanonicalNan(T bits) {
    const __m256 x = _mm256_castsi256_ps(bits);
    return _mm256_castps_si256(_mm256_blendv_ps(x, _mm256_castsi256_ps(Set1(kCanonicalNanBits)),
                                                _mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
  }
  // (previous & 0xFF000000) | bytes 0, 1, 2 of current in reverse order, in the low three bytes
  // (vpshufb's 0x80 indices give zero bytes).
  static T LeafWord(T previous, T current) {
    const T reverse_low3 = _mm256_set_epi32(
        static_cast<int>(0x80'0C'0D'0Eu), static_cast<int>(0x80'08'09'0Au), static_cast<int>(0x80'04'05'06u),
        static_cast<int>(0x80'00'01'02u), static_cast<int>(0x80'0C'0D'0Eu), static_cast<int>(0x80'08'09'0Au),
        static_cast<int>(0x80'04'05'06u), static_cast<int>(0x80'00'01'02u));
    return _mm256_or_si256(_mm256_and_si256(previous, Set1(0xFF000000u)), _mm256_shuffle_epi8(current, reverse_low3));
  }
};

}  // namespace

const Sha256LaneKernels& LaneKernels() {
  static const Sha256LaneKernels kernels{V::kLanes, &HashMessages<V, 2>, &HashBlockLeaves<V, 1>,
                                         &HashBlockLeaves<V, 2>};
  return kernels;
}

}  // namespace polnode::consensus::avx2

#endif  // defined(__x86_64__)
