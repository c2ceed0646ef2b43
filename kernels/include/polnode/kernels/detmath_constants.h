// detmath_constants.h: the constants of the project's own exp, log and tanh (detmath.h) and of the
// GELU formulas built on them, with no functions.
//
// The fast CPU backend's per-instruction-set files (cpu_kernels_*.cc) evaluate the same formulas
// lane by lane; they are compiled with AVX2/AVX-512 flags and must not include a header that
// defines inline functions (an out-of-line copy built with those flags could be picked by the
// linker for code running on a machine without them, see cpu_isa.h), so the constants live here,
// apart from detmath.h's functions, and both read them from this one place.
#ifndef POLNODE_KERNELS_DETMATH_CONSTANTS_H_
#define POLNODE_KERNELS_DETMATH_CONSTANTS_H_

#include <cstdint>

namespace polnode::kernels::det {

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
// Below 2^-12, tanh(x) = x - x^3/3 + ... rounds to x (x^2/3 < 2^-25, under half an ulp).
inline constexpr float kTanhTinyBelow = 0.000244140625f;  // 2^-12
// From 10 on (9.02 would do), tanh(x) rounds to 1: 1 - tanh(x) < 2 e^-20 is far below 2^-25.
inline constexpr float kTanhOneFrom = 10.0f;
// Below 1, tanh(a) = a + a * z * P(z) with z = a^2 and P of degree 7 (near-minimax for the
// relative error of tanh on [0, 1], fitted in double, coefficients rounded to float): the
// polynomial alone is within 4e-10 of tanh, so rounding in the evaluation is all that remains.
// From 1 on, tanh(a) = 1 - 2 / (e^(2a) + 1); there 2/(e^(2a)+1) <= 0.24, so det::Exp's error is
// scaled down before it reaches the result.
inline constexpr float kTanhSplit = 1.0f;
inline constexpr float kTanhP0 = -0.333333284f;     // 0xBEAAAAA9
inline constexpr float kTanhP1 = 0.133331999f;      // 0x3E08882F
inline constexpr float kTanhP2 = -0.0539530963f;    // 0xBD5CFDEC
inline constexpr float kTanhP3 = 0.0217847303f;     // 0x3CB275E4
inline constexpr float kTanhP4 = -0.00859511178f;   // 0xBC0CD283
inline constexpr float kTanhP5 = 0.00307859038f;    // 0x3B49C22D
inline constexpr float kTanhP6 = -0.000841134868f;  // 0xBA5C7F9B
inline constexpr float kTanhP7 = 0.000121470141f;   // 0x38FEBDC9
inline constexpr std::uint32_t kSignBit = 0x80000000u;
inline constexpr std::uint32_t kAbsMask = 0x7FFFFFFFu;
inline constexpr std::uint32_t kPlusInfBits = 0x7F800000u;
}  // namespace detail

// GELU, tanh form (PyTorch's gelu(approximate='tanh')): 0.5 x (1 + tanh(kGeluBeta (x + kGeluKappa
// x^3))). kGeluBeta is float(sqrt(2/pi)) and kGeluKappa3 = 3 * kGeluKappa rounded once, the float
// constants PyTorch's float kernels use.
inline constexpr float kGeluBeta = 0.797884583f;  // float(sqrt(2 / pi))
inline constexpr float kGeluKappa = 0.044715f;
inline constexpr float kGeluKappa3 = 3.0f * kGeluKappa;

}  // namespace polnode::kernels::det

#endif  // POLNODE_KERNELS_DETMATH_CONSTANTS_H_
