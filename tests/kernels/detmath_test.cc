// det::Exp and det::Log against long double expl/logl: ulp error over strided sweeps of every
// float in the range the operators use, plus the exact special cases.
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

}  // namespace
}  // namespace polnode::kernels
