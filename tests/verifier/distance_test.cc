// StateDistance: equal states are at distance exactly 0 by every metric (a zero threshold admits an
// identical replay), unequal ones are not, NaN admits nothing, and mismatched layouts are errors.
#include "polnode/verifier/distance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace polnode::verifier {
namespace {

solver::TrainState StateOf(std::vector<float> values, std::string name = "w") {
  solver::TrainState state;
  kernels::Tensor t({static_cast<std::int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i) t.data()[i] = values[i];
  state.tensors.push_back({std::move(name), std::move(t)});
  return state;
}

TEST(DistanceTest, EqualStatesAreAtZeroByEveryMetricExactly) {
  // |a|^2 = 2, and sqrt(2) * sqrt(2) rounds to a hair over 2: the cosine ratio of a with itself
  // would come out just under 1.
  const solver::TrainState a = StateOf({1.0f, 1.0f});
  Result<Distances> d = StateDistance(a, a);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->l1, 0.0);
  EXPECT_EQ(d->l2, 0.0);
  EXPECT_EQ(d->linf, 0.0);
  EXPECT_EQ(d->cosine, 0.0);
  EXPECT_TRUE(WithinThresholds(*d, Thresholds{}));
}

TEST(DistanceTest, UnequalStatesAreApartByEveryMetric) {
  Result<Distances> d = StateDistance(StateOf({1.0f, 2.0f}), StateOf({1.0f, -2.0f}));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->l1, 4.0);
  EXPECT_EQ(d->l2, 4.0);
  EXPECT_EQ(d->linf, 4.0);
  EXPECT_NEAR(d->cosine, 1.0 - (1.0 - 4.0) / 5.0, 1e-12);
  EXPECT_FALSE(WithinThresholds(*d, Thresholds{4.0, 4.0, 4.0, 1.0}));
  EXPECT_TRUE(WithinThresholds(*d, Thresholds{4.0, 4.0, 4.0, 2.0}));

  d = StateDistance(StateOf({0.0f, 0.0f}), StateOf({0.0f, 3.0f}));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cosine, 1.0) << "exactly one all-zero state";
}

TEST(DistanceTest, NanIsWithinNoThreshold) {
  Result<Distances> d = StateDistance(StateOf({std::numeric_limits<float>::quiet_NaN(), 1.0f}), StateOf({0.0f, 1.0f}));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(std::isnan(d->l1));
  const double inf = HUGE_VAL;
  EXPECT_FALSE(WithinThresholds(*d, Thresholds{inf, inf, inf, inf}));
}

TEST(DistanceTest, DifferentLayoutsAreAnError) {
  EXPECT_EQ(StateDistance(StateOf({1.0f}), StateOf({1.0f, 2.0f})).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(StateDistance(StateOf({1.0f}, "w"), StateOf({1.0f}, "b")).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace polnode::verifier
