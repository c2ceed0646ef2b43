// det::Exp, det::Log and det::Tanh against long double expl/logl/tanhl: ulp error over strided
// and dense sweeps of every float in the range the operators use, plus the exact special cases;
// and det::GeluTanh / det::GeluTanhGrad against the same formulas in long double; det::CosPi (double)
// against long double cosl.
#include "polnode/kernels/detmath.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>

namespace polnode::kernels {
namespace {

using det::BitsFloat;
using det::FloatBits;

// |got - exact| in units of the last place of `exact` rounded to float (the subnormal spacing
// below FLT_MIN). Infinite or NaN `got` against a finite exact value counts as infinitely wrong.
double UlpError(float got, long double exact) {
  if (!std::isfinite(got)) return std::numeric_limits<double>::infinity();
  int exponent = 0;
  std::frexp(exact, &exponent);  // exact = m * 2^exponent, m in [0.5, 1)
  const int ulp_exponent = std::max(exponent - 24, -149);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - exact) /
                             std::ldexp(1.0L, ulp_exponent));
}

struct SweepResult {
  double max_ulp = 0.0;
  float worst_input = 0.0f;
  std::int64_t points = 0;
};

// Visits the floats whose bit patterns are first, first + stride, ... <= last.
template <typename Fn>
SweepResult Sweep(std::uint32_t first, std::uint32_t last, std::uint32_t stride, Fn error_at) {
  SweepResult r;
  for (std::uint64_t bits = first; bits <= last; bits += stride) {
    const float x = BitsFloat(static_cast<std::uint32_t>(bits));
    const double err = error_at(x);
    ++r.points;
    if (err > r.max_ulp) {
      r.max_ulp = err;
      r.worst_input = x;
    }
  }
  return r;
}

double ExpError(float x) { return UlpError(det::Exp(x), std::exp(static_cast<long double>(x))); }
double LogError(float x) { return UlpError(det::Log(x), std::log(static_cast<long double>(x))); }
double TanhError(float x) { return UlpError(det::Tanh(x), std::tanh(static_cast<long double>(x))); }

constexpr double kMaxUlp = 2.0;

TEST(DetMathTest, ExpWithinTwoUlpOnMinus88To88) {
  const std::uint32_t bits88 = FloatBits(88.0f);
  const SweepResult pos = Sweep(0, bits88, 263, ExpError);
  const SweepResult neg = Sweep(0x80000000u, 0x80000000u | bits88, 263, ExpError);
  // Densely on [0.25, 0.5], and every float near the end where results become subnormal and the
  // scaling path changes.
  const SweepResult small = Sweep(FloatBits(0.25f), FloatBits(0.5f), 5, ExpError);
  const SweepResult tiny = Sweep(FloatBits(-88.0f) - 300000, FloatBits(-88.0f), 1, ExpError);
  for (const SweepResult& r : {pos, neg, small, tiny}) {
    EXPECT_LE(r.max_ulp, kMaxUlp) << "worst input " << r.worst_input;
  }
  std::printf("det::Exp max ulp error: %.3f (positive), %.3f (negative), %.3f, %.3f over %lld points\n",
              pos.max_ulp, neg.max_ulp, small.max_ulp, tiny.max_ulp,
              static_cast<long long>(pos.points + neg.points + small.points + tiny.points));
}

TEST(DetMathTest, LogWithinTwoUlpOnPositiveNormalsAndSubnormals) {
  const SweepResult all = Sweep(1, 0x7F7FFFFFu, 509, LogError);
  const SweepResult subnormal = Sweep(1, 0x007FFFFFu, 97, LogError);
  // Around 1 (where log is near 0 and relative error is hardest) and around sqrt(1/2), where the
  // reduction switches between m and m/2: every float.
  const SweepResult near_one = Sweep(FloatBits(0.9f), FloatBits(1.1f), 3, LogError);
  const SweepResult near_sqrt_half = Sweep(FloatBits(0.70f), FloatBits(0.72f), 1, LogError);
  for (const SweepResult& r : {all, subnormal, near_one, near_sqrt_half}) {
    EXPECT_LE(r.max_ulp, kMaxUlp) << "worst input " << r.worst_input;
  }
  std::printf("det::Log max ulp error: %.3f (all), %.3f (subnormal), %.3f (near 1), %.3f over %lld points\n",
              all.max_ulp, subnormal.max_ulp, near_one.max_ulp, near_sqrt_half.max_ulp,
              static_cast<long long>(all.points + subnormal.points + near_one.points +
                                     near_sqrt_half.points));
}

TEST(DetMathTest, ExpSpecialCases) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatBits(det::Exp(0.0f)), FloatBits(1.0f));
  EXPECT_EQ(FloatBits(det::Exp(-0.0f)), FloatBits(1.0f));
  EXPECT_EQ(det::Exp(inf), inf);
  EXPECT_EQ(FloatBits(det::Exp(-inf)), FloatBits(0.0f));
  EXPECT_TRUE(std::isnan(det::Exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(det::Exp(88.8f), inf);                         // above ln(FLT_MAX)
  EXPECT_EQ(det::Exp(BitsFloat(0x42B17218u)), inf);        // first float above ln(FLT_MAX)
  EXPECT_TRUE(std::isfinite(det::Exp(BitsFloat(0x42B17217u))));  // last float below it
  EXPECT_EQ(FloatBits(det::Exp(-104.0f)), FloatBits(0.0f));
  EXPECT_GT(det::Exp(-103.0f), 0.0f);                      // a subnormal, not flushed
  EXPECT_LT(det::Exp(-103.0f), std::numeric_limits<float>::min());
}

TEST(DetMathTest, LogSpecialCases) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(det::Log(0.0f), -inf);
  EXPECT_EQ(det::Log(-0.0f), -inf);
  EXPECT_TRUE(std::isnan(det::Log(-1.0f)));
  EXPECT_TRUE(std::isnan(det::Log(-inf)));
  EXPECT_TRUE(std::isnan(det::Log(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(det::Log(inf), inf);
  EXPECT_EQ(FloatBits(det::Log(1.0f)), FloatBits(0.0f));
  EXPECT_LE(LogError(std::numeric_limits<float>::denorm_min()), kMaxUlp);
  EXPECT_LE(LogError(std::numeric_limits<float>::max()), kMaxUlp);
}

// Measured over every float in [2^-13, 11] (130 M points): 0.980 ulp, at 0.9958 (the polynomial
// side of the split at 1); the exponential side peaks at 0.959 ulp. The sweeps below are that
// measurement thinned where tanh is smooth and dense where the formula changes.
constexpr double kTanhMaxUlp = 1.0;

TEST(DetMathTest, TanhWithinOneUlp) {
  // Every positive float below 11 (tanh rounds to 1 from 9.02 on), strided; the stride is odd so
  // every mantissa pattern class is visited.
  const SweepResult all = Sweep(1, FloatBits(11.0f), 61, TanhError);
  // Dense: every float around the polynomial/exponential split at 1 and around the tiny cut-off
  // 2^-12, and every 3rd float on [0.25, 4], where both formulas are at their worst.
  const SweepResult split = Sweep(FloatBits(0.95f), FloatBits(1.05f), 1, TanhError);
  const SweepResult tiny = Sweep(FloatBits(det::detail::kTanhTinyBelow) - 200000,
                                 FloatBits(det::detail::kTanhTinyBelow) + 200000, 1, TanhError);
  const SweepResult middle = Sweep(FloatBits(0.25f), FloatBits(4.0f), 3, TanhError);
  // Where the result becomes 1.
  const SweepResult saturation = Sweep(FloatBits(8.5f), FloatBits(10.5f), 1, TanhError);
  for (const SweepResult& r : {all, split, tiny, middle, saturation}) {
    EXPECT_LE(r.max_ulp, kTanhMaxUlp) << "worst input " << r.worst_input;
  }
  std::printf(
      "det::Tanh max ulp error: %.3f (all), %.3f (split), %.3f (tiny), %.3f ([0.25, 4]), %.3f "
      "(saturation) "
      "over %lld points\n",
      all.max_ulp, split.max_ulp, tiny.max_ulp, middle.max_ulp, saturation.max_ulp,
      static_cast<long long>(all.points + split.points + tiny.points + middle.points +
                             saturation.points));
}

TEST(DetMathTest, TanhIsOddBitForBit) {
  for (std::uint32_t bits = 0; bits < 0x7F800000u; bits += 4099) {
    const float x = BitsFloat(bits);
    ASSERT_EQ(FloatBits(det::Tanh(-x)), FloatBits(det::Tanh(x)) ^ 0x80000000u) << x;
  }
}

TEST(DetMathTest, TanhSpecialCases) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatBits(det::Tanh(0.0f)), FloatBits(0.0f));
  EXPECT_EQ(FloatBits(det::Tanh(-0.0f)), FloatBits(-0.0f));
  EXPECT_EQ(det::Tanh(inf), 1.0f);
  EXPECT_EQ(det::Tanh(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(det::Tanh(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(det::Tanh(std::numeric_limits<float>::max()), 1.0f);
  EXPECT_EQ(det::Tanh(10.0f), 1.0f);
  EXPECT_EQ(det::Tanh(9.0f), static_cast<float>(std::tanh(9.0L)));  // still below 1
  const float denorm = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(FloatBits(det::Tanh(denorm)), FloatBits(denorm));  // no flush to zero
  EXPECT_EQ(FloatBits(det::Tanh(-1e-40f)), FloatBits(-1e-40f));
}

// GELU in long double with the exact tanh, and its derivative.
long double GeluExact(long double x) {
  const long double beta = std::sqrt(2.0L / 3.14159265358979323846264338327950288L);
  return 0.5L * x * (1.0L + std::tanh(beta * (x + 0.044715L * x * x * x)));
}
long double GeluGradExact(long double x) {
  const long double beta = std::sqrt(2.0L / 3.14159265358979323846264338327950288L);
  const long double th = std::tanh(beta * (x + 0.044715L * x * x * x));
  return 0.5L * (1.0L + th) +
         0.5L * x * (1.0L - th * th) * beta * (1.0L + 3.0L * 0.044715L * x * x);
}

// The float formulas lose only what float rounding of their steps allows: measured against the
// exact function, relative to max(|value|, 1). The floor matters for negative x, where 1 + tanh
// and 1 - tanh^2 cancel: tanh's half-ulp rounding near -1 (3e-8) becomes a large relative error
// of a tiny GELU value or slope, in this formula as in PyTorch's, but stays tiny in absolute terms.
TEST(DetMathTest, GeluTanhAndGradientFollowTheExactFunction) {
  double worst_y = 0.0, worst_dy = 0.0;
  for (float x = -12.0f; x <= 12.0f; x += 0.0009765625f) {  // 2^-10 steps: 24577 points
    const long double y = GeluExact(x), dy = GeluGradExact(x);
    worst_y = std::max(worst_y, static_cast<double>(std::fabs(det::GeluTanh(x) - y) /
                                                    std::max(std::fabs(y), 1.0L)));
    worst_dy = std::max(worst_dy, static_cast<double>(std::fabs(det::GeluTanhGrad(x, 1.0f) - dy) /
                                                      std::max(std::fabs(dy), 1.0L)));
  }
  EXPECT_LE(worst_y, 1e-6);
  EXPECT_LE(worst_dy, 1e-6);
  std::printf("GeluTanh worst relative error %.2e, GeluTanhGrad %.2e\n", worst_y, worst_dy);
}

TEST(DetMathTest, GeluTanhSpecialCases) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatBits(det::GeluTanh(0.0f)), FloatBits(0.0f));
  EXPECT_EQ(FloatBits(det::GeluTanh(-0.0f)), FloatBits(-0.0f));  // (0.5 * -0) * 1
  EXPECT_EQ(det::GeluTanh(inf), inf);
  EXPECT_TRUE(std::isnan(det::GeluTanh(-inf)));  // (-inf) * (1 + -1), as in PyTorch's formula
  EXPECT_TRUE(std::isnan(det::GeluTanh(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(FloatBits(det::GeluTanh(-20.0f)), FloatBits(-0.0f));  // tanh rounds to -1
  EXPECT_EQ(det::GeluTanh(1e30f), 1e30f);                         // x^3 overflows: tanh(inf) = 1
  EXPECT_EQ(det::GeluTanhGrad(0.0f, 3.0f), 1.5f);                 // slope 1/2 at 0
  EXPECT_EQ(det::GeluTanhGrad(20.0f, 3.0f), 3.0f);                // slope 1 far right
  // Far left the slope is 0: left = 0.5 * (1 + -1) = +0 and right = (-10 * +0) * ... = -0.
  EXPECT_EQ(FloatBits(det::GeluTanhGrad(-20.0f, 3.0f)), FloatBits(0.0f));
  EXPECT_TRUE(std::isnan(det::GeluTanhGrad(inf, 1.0f)));    // inf * 0 in the right term
  EXPECT_TRUE(std::isnan(det::GeluTanhGrad(1e20f, 1.0f)));  // x * x overflows: 0 * inf
}

TEST(DetMathTest, CosPiWithinTheDocumentedBoundOnZeroToOne) {
  const long double pi = std::acos(-1.0L);
  constexpr int kPoints = 1 << 20;
  double worst = 0.0, worst_x = 0.0;
  for (int i = 0; i <= kPoints; ++i) {
    const double x = static_cast<double>(i) / kPoints;
    const long double exact = std::cos(pi * static_cast<long double>(x));
    const double err =
        static_cast<double>(std::fabs(static_cast<long double>(det::CosPi(x)) - exact));
    if (err > worst) {
      worst = err;
      worst_x = x;
    }
  }
  std::printf("det::CosPi: max absolute error %.3g at x = %.17g over %d points\n", worst, worst_x,
              kPoints + 1);
  EXPECT_LE(worst, 2.3e-16);
}

TEST(DetMathTest, CosPiExactPoints) {
  EXPECT_EQ(det::CosPi(0.0), 1.0);
  EXPECT_EQ(det::CosPi(1.0), -1.0);
  EXPECT_EQ(det::CosPi(0.5), 0.0);
  // Odd about 1/2 where 1 - x is exact: the reduction negates the same evaluation.
  for (double x : {0.0625, 0.1875, 0.3125, 0.4375}) EXPECT_EQ(det::CosPi(1.0 - x), -det::CosPi(x)) << x;
}

}  // namespace
}  // namespace polnode::kernels
