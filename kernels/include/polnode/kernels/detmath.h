// detmath.h: the project's own exp and log (DESIGN.md section 3), shared by CPU and GPU code.
//
// libm and the CUDA/HIP math libraries may differ in the last bit between versions, vendors and
// devices, so every transcendental that feeds a hash is computed here from IEEE-754 operations
// that are correctly rounded everywhere: + - * /, fma, and exact bit manipulation. Each step is
// written out (every fma explicit), so the bits depend only on the IEEE rules, provided the
// compiler does not contract a*b+c on its own: C++ builds use -ffp-contract=off, nvcc --fmad=false,
// hipcc -ffp-contract=off (DESIGN.md section 3). Round-to-nearest-even and gradual underflow (no
// flush-to-zero) are assumed, as everywhere in polnode.
//
// Accuracy (checked against long double in tests/kernels/detmath_test.cc): at most 2 ulp, measured
// below 1 ulp, for Exp on [-88, 88] and Log on every positive finite float, subnormals included.
#ifndef POLNODE_KERNELS_DETMATH_H_
#define POLNODE_KERNELS_DETMATH_H_

#include <cstdint>

#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#include <cmath>
#include <cstring>
#endif

#ifndef POLNODE_HOST_DEVICE
#if defined(__CUDACC__) || defined(__HIPCC__)
#define POLNODE_HOST_DEVICE __host__ __device__
#else
#define POLNODE_HOST_DEVICE
#endif
#endif

namespace polnode::kernels::det {

/// fma(a, b, c) with a single rounding, on host and device alike.
POLNODE_HOST_DEVICE inline float Fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

/// The IEEE-754 bits of `x`.
POLNODE_HOST_DEVICE inline std::uint32_t FloatBits(float x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

/// The float whose IEEE-754 bits are `u`.
POLNODE_HOST_DEVICE inline float BitsFloat(std::uint32_t u) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

/// 2^k as a float, for a normal exponent: -126 <= k <= 127.
POLNODE_HOST_DEVICE inline float Pow2(int k) {
  return BitsFloat(static_cast<std::uint32_t>(k + 127) << 23);
}

namespace detail {
// Adding then subtracting 1.5 * 2^23 rounds a float of magnitude < 2^22 to the nearest integer
// (ties to even), and the integer can be read from the low bits of the sum.
inline constexpr float kRoundShifter = 12582912.0f;  // 0x1.8p23
inline constexpr std::uint32_t kRoundShifterBits = 0x4B400000u;
inline constexpr float kLog2e = 1.44269502f;  // float(1 / ln 2)
// Cody-Waite split of ln 2: kLn2Hi = float(ln 2), kLn2Lo = float(ln 2 - kLn2Hi). With an fma,
// x - k * kLn2Hi is exact for every k this code produces (|x - k ln 2| < 0.35 and both terms are
// multiples of 2^-25 or coarser), so the reduced argument carries only the rounding of the
// kLn2Lo step.
inline constexpr float kLn2Hi = 0.693147182f;    // 0x3F317218
inline constexpr float kLn2Lo = -1.90465421e-9f;  // 0xB102E308
// Taylor coefficients 1/n! of e^r; on |r| <= 0.3466 the first omitted term, r^8/8!, is below
// 6e-9 relative (0.1 ulp), so no minimax fit is needed.
inline constexpr float kExpC2 = 0.5f;
inline constexpr float kExpC3 = 0.166666672f;      // 1/6
inline constexpr float kExpC4 = 0.0416666679f;     // 1/24
inline constexpr float kExpC5 = 0.00833333377f;    // 1/120
inline constexpr float kExpC6 = 0.00138888892f;    // 1/720
inline constexpr float kExpC7 = 0.000198412701f;   // 1/5040
// Beyond these, exp(x) is +inf or rounds to +0 in float; clamping keeps 2^k in range below.
inline constexpr float kExpOverflowAt = 89.0f;
inline constexpr float kExpUnderflowAt = -104.0f;
// Coefficients 2/(2i+1) of log(1+f) = 2s + 2s^3/3 + 2s^5/5 + ..., s = f / (2 + f). With
// |s| <= 0.1716 the first omitted term, 2 s^11 / 11, is below 3e-9 relative.
inline constexpr float kLogC1 = 0.666666687f;  // 2/3
inline constexpr float kLogC2 = 0.400000006f;  // 2/5
inline constexpr float kLogC3 = 0.285714298f;  // 2/7
inline constexpr float kLogC4 = 0.222222224f;  // 2/9
inline constexpr std::uint32_t kSqrtHalfBits = 0x3F3504F3u;  // float(sqrt(1/2))
inline constexpr float kTwoPow25 = 33554432.0f;
}  // namespace detail

/// e^x. Exact special cases: Exp(NaN) is NaN, Exp(+inf) = +inf, Exp(-inf) = +0; results too
/// large for a float are +inf and results that round below the smallest subnormal are +0.
/// Subnormal results are rounded once.
POLNODE_HOST_DEVICE inline float Exp(float x) {
  using namespace detail;
  if (x != x) return x + x;  // NaN in, quiet NaN out
  if (x > kExpOverflowAt) return BitsFloat(0x7F800000u);
  if (x < kExpUnderflowAt) return 0.0f;
  // x = k ln2 + r, k = round(x / ln2), |r| <= ln2/2 (plus a hair from rounding x * kLog2e).
  const float shifted = Fma(x, kLog2e, kRoundShifter);
  const int k = static_cast<int>(FloatBits(shifted)) - static_cast<int>(kRoundShifterBits);
  const float kf = shifted - kRoundShifter;
  float r = Fma(-kf, kLn2Hi, x);
  r = Fma(-kf, kLn2Lo, r);
  float p = Fma(kExpC7, r, kExpC6);
  p = Fma(p, r, kExpC5);
  p = Fma(p, r, kExpC4);
  p = Fma(p, r, kExpC3);
  p = Fma(p, r, kExpC2);
  p = Fma(p, r, 1.0f);
  p = Fma(p, r, 1.0f);
  // p * 2^k in two exact-or-once-rounded steps, so that 2^k itself never leaves the normal range:
  // the first multiply is exact (result normal), the second rounds once (to inf or a subnormal).
  if (k > 127) return (p * Pow2(k - 1)) * 2.0f;
  if (k < -126) return (p * Pow2(k + 64)) * Pow2(-64);
  return p * Pow2(k);
}

/// Natural logarithm. Exact special cases: Log(+0) = Log(-0) = -inf, Log(x < 0) = NaN,
/// Log(NaN) = NaN, Log(+inf) = +inf, Log(1) = +0. Subnormal inputs are handled exactly
/// (scaled by 2^25 first).
POLNODE_HOST_DEVICE inline float Log(float x) {
  using namespace detail;
  if (x != x) return x + x;
  std::uint32_t bits = FloatBits(x);
  if ((bits & 0x7FFFFFFFu) == 0) return BitsFloat(0xFF800000u);  // -inf
  if (bits >> 31) return BitsFloat(0x7FC00000u);                  // log of a negative: NaN
  if (bits == 0x7F800000u) return x;                              // +inf
  int k = 0;
  if (bits < 0x00800000u) {  // subnormal: scale into the normal range (exact)
    bits = FloatBits(x * kTwoPow25);
    k = -25;
  }
  // x = 2^k * m with m in [sqrt(1/2), sqrt(2)), so that f = m - 1 is small on both sides.
  k += static_cast<int>(bits >> 23) - 127;
  std::uint32_t mantissa_bits = (bits & 0x007FFFFFu) | 0x3F800000u;  // m in [1, 2)
  if (mantissa_bits > (kSqrtHalfBits + 0x00800000u)) {             // m >= sqrt(2): halve it
    mantissa_bits -= 0x00800000u;
    k += 1;
  }
  const float f = BitsFloat(mantissa_bits) - 1.0f;  // exact (Sterbenz)
  // log(1+f) = f - hfsq + s*(hfsq + R), with hfsq = f^2/2 and R = s^2 (2/3 + 2/5 s^2 + ...);
  // the identity holds because 2s = f - s f. Keeping f separate until the end keeps the large
  // term exact.
  const float s = f / (2.0f + f);
  const float z = s * s;
  float poly = Fma(kLogC4, z, kLogC3);
  poly = Fma(poly, z, kLogC2);
  poly = Fma(poly, z, kLogC1);
  const float big_r = poly * z;
  const float hfsq = (0.5f * f) * f;
  const float kf = static_cast<float>(k);
  // The small terms, then f, then k*ln2: the final fma adds the exact k*kLn2Hi with one rounding.
  const float tail = Fma(s, hfsq + big_r, Fma(kf, kLn2Lo, -hfsq));
  return Fma(kf, kLn2Hi, f + tail);
}

}  // namespace polnode::kernels::det

#endif  // POLNODE_KERNELS_DETMATH_H_
