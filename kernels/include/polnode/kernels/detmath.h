// detmath.h: the project's own exp, log, tanh and cos(pi x) (DESIGN.md section 3), and the GELU formulas built
// on tanh, shared by CPU and GPU code.
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
// below 1 ulp, for Exp on [-88, 88] and Log on every positive finite float, subnormals included;
// at most 1 ulp (measured 0.980 over every float in [2^-13, 11]) for Tanh on every float.
//
// The constants are in detmath_constants.h (the fast CPU backend's vector versions of these
// functions read them too, see there).
#ifndef POLNODE_KERNELS_DETMATH_H_
#define POLNODE_KERNELS_DETMATH_H_

#include <cstdint>

#include "polnode/kernels/detmath_constants.h"

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

/// Hyperbolic tangent. Exact special cases: Tanh(NaN) is NaN, Tanh(+-inf) = +-1, Tanh(+-0) = +-0;
/// |x| < 2^-12 (subnormals included) returns x and |x| >= 10 returns +-1, which is tanh(x) rounded.
/// Odd: Tanh(-x) = -Tanh(x) bit for bit (computed on |x|, then x's sign bit is put back).
POLNODE_HOST_DEVICE inline float Tanh(float x) {
  using namespace detail;
  if (x != x) return x + x;
  const std::uint32_t sign = FloatBits(x) & kSignBit;
  const float a = BitsFloat(FloatBits(x) & kAbsMask);
  if (a < kTanhTinyBelow) return x;
  float y;
  if (a >= kTanhOneFrom) {
    y = 1.0f;
  } else if (a < kTanhSplit) {
    // a + a * (z * P(z)): the correction is at most a quarter of a, so its rounding errors shrink
    // before the final fma adds it to the exact a.
    const float z = a * a;
    float p = Fma(kTanhP7, z, kTanhP6);
    p = Fma(p, z, kTanhP5);
    p = Fma(p, z, kTanhP4);
    p = Fma(p, z, kTanhP3);
    p = Fma(p, z, kTanhP2);
    p = Fma(p, z, kTanhP1);
    p = Fma(p, z, kTanhP0);
    y = Fma(a, z * p, a);
  } else {
    y = 1.0f - 2.0f / (Exp(2.0f * a) + 1.0f);
  }
  return BitsFloat(FloatBits(y) | sign);
}

/// GELU, tanh form, in op.h's order (kGelu):
///   inner = kGeluBeta * fma(kGeluKappa, (x * x) * x, x);  y = (0.5 * x) * (1 + Tanh(inner)).
POLNODE_HOST_DEVICE inline float GeluTanh(float x) {
  const float inner = kGeluBeta * Fma(kGeluKappa, (x * x) * x, x);
  return (0.5f * x) * (1.0f + Tanh(inner));
}

/// dY * GELU'(x), tanh form, in op.h's order (kGeluGrad):
///   u = x * x;  th = Tanh(kGeluBeta * fma(kGeluKappa, u * x, x))   (th as in GeluTanh)
///   left = 0.5 * (1 + th);  sech2 = fma(-th, th, 1)
///   right = ((0.5 * x) * sech2) * (kGeluBeta * fma(kGeluKappa3, u, 1))
///   dX = dY * (left + right)
POLNODE_HOST_DEVICE inline float GeluTanhGrad(float x, float dy) {
  const float u = x * x;
  const float th = Tanh(kGeluBeta * Fma(kGeluKappa, u * x, x));
  const float left = 0.5f * (1.0f + th);
  const float sech2 = Fma(-th, th, 1.0f);
  const float right = ((0.5f * x) * sech2) * (kGeluBeta * Fma(kGeluKappa3, u, 1.0f));
  return dy * (left + right);
}

/// PyTorch's clip_grad_norm_ coefficient for a sum of squares s, clamped to 1:
/// q = max_norm / (sqrt(s) + 1e-6f), then q > 1 ? 1 : q (so a NaN stays NaN). sqrt, + and / are
/// each correctly rounded (nvcc --prec-sqrt=true --prec-div=true, hipcc
/// -fhip-fp32-correctly-rounded-divide-sqrt).
POLNODE_HOST_DEVICE inline float ClipCoefficient(float sum_squares, float max_norm) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  const float norm = sqrtf(sum_squares);
#else
  const float norm = std::sqrt(sum_squares);
#endif
  const float q = max_norm / (norm + 1e-6f);
  return q > 1.0f ? 1.0f : q;
}

/// cos(pi * x) in double for 0 <= x <= 1 (the learning-rate schedule's cosine decay, op.h
/// ScheduledLr); other x are outside the contract. Only + - * on doubles and constants that the
/// compiler rounds once, so the bits are the same on every IEEE-754 platform. Symmetries bring the
/// argument to y = pi * x' with |y| <= pi/4 exactly (1 - x and 1/2 - x are exact by Sterbenz's
/// lemma), where the Taylor series of cos through y^16 and of sin through y^17 leave a truncation
/// below 2e-18; rounding adds a few double ulp. Measured in tests/kernels/detmath_test.cc against
/// long double on 2^20 + 1 evenly spaced points of [0, 1]: 1.75e-16 absolute error at most (the
/// test holds it to 2.3e-16).
POLNODE_HOST_DEVICE inline double CosPi(double x) {
  constexpr double kPi = 3.141592653589793;  // pi rounded to double
  const bool negate = x > 0.5;               // cos(pi x) = -cos(pi (1 - x))
  if (negate) x = 1.0 - x;
  double r;
  if (x <= 0.25) {
    const double y = kPi * x;
    const double z = y * y;
    double p = 1.0 / 20922789888000.0;  // 1/16!
    p = p * z - 1.0 / 87178291200.0;
    p = p * z + 1.0 / 479001600.0;
    p = p * z - 1.0 / 3628800.0;
    p = p * z + 1.0 / 40320.0;
    p = p * z - 1.0 / 720.0;
    p = p * z + 1.0 / 24.0;
    p = p * z - 0.5;
    r = p * z + 1.0;
  } else {  // cos(pi x) = sin(pi (1/2 - x))
    const double y = kPi * (0.5 - x);
    const double z = y * y;
    double p = 1.0 / 355687428096000.0;  // 1/17!
    p = p * z - 1.0 / 1307674368000.0;
    p = p * z + 1.0 / 6227020800.0;
    p = p * z - 1.0 / 39916800.0;
    p = p * z + 1.0 / 362880.0;
    p = p * z - 1.0 / 5040.0;
    p = p * z + 1.0 / 120.0;
    p = p * z - 1.0 / 6.0;
    r = (p * z) * y + y;
  }
  return negate ? -r : r;
}

}  // namespace polnode::kernels::det

#endif  // POLNODE_KERNELS_DETMATH_H_
