// StateDistance: equal states are at distance exactly 0 by every metric (a zero threshold admits an
// identical replay), unequal ones are not, NaN admits nothing, and mismatched layouts are errors.
// DifferingIndices: the flat state indices (over every tensor, state order) beyond a limit, which
// a tolerant reject commits to in a forced round.
#include "polnode/verifier/distance.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

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

// Two tensors: "w" (2 x 3, flat 0..5) then "b" (2, flat 6..7).
solver::TrainState TwoTensors(const std::array<float, 6>& w, const std::array<float, 2>& b) {
  solver::TrainState state;
  kernels::Tensor tw({2, 3});
  std::copy(w.begin(), w.end(), tw.data());
  kernels::Tensor tb({2});
  std::copy(b.begin(), b.end(), tb.data());
  state.tensors.push_back({"w", std::move(tw)});
  state.tensors.push_back({"b", std::move(tb)});
  return state;
}

TEST(DifferingIndicesTest, IndicesRunOverEveryTensorInStateOrderAscending) {
  const solver::TrainState a = TwoTensors({0, 1, 2, 3, 4, 5}, {6, 7});
  const solver::TrainState b = TwoTensors({0, 1.5f, 2, 3, 4, 5 - 0.75f}, {6, 7 + 2});
  Result<std::vector<std::uint64_t>> indices = DifferingIndices(a, b, 0.5);
  ASSERT_TRUE(indices.ok()) << indices.status().ToString();
  EXPECT_EQ(*indices, (std::vector<std::uint64_t>{5, 7}));
  EXPECT_EQ(*DifferingIndices(b, a, 0.5), *indices) << "symmetric";
  EXPECT_EQ(*DifferingIndices(a, b, 0.0), (std::vector<std::uint64_t>{1, 5, 7}));
  EXPECT_TRUE(DifferingIndices(a, b, 2.0)->empty());
  EXPECT_TRUE(DifferingIndices(a, a, 0.0)->empty()) << "an identical state differs nowhere, even at limit 0";
}

TEST(DifferingIndicesTest, ADifferenceOfExactlyTheLimitIsNotBeyondIt) {
  // 2^-10 apart, and the limit 2^-10 (forced_delta / 2 for forced_delta 2^-9): not beyond.
  const float d = 0x1p-10f;
  const solver::TrainState a = TwoTensors({1, 1, 1, 1, 1, 1}, {0, 0});
  const solver::TrainState b = TwoTensors({1 + d, 1 - d, 1, 1, 1, 1}, {d, -2 * d});
  EXPECT_EQ(*DifferingIndices(a, b, static_cast<double>(d)), std::vector<std::uint64_t>{7});
  EXPECT_EQ(*DifferingIndices(a, b, std::nextafter(static_cast<double>(d), 0.0)), (std::vector<std::uint64_t>{0, 1, 6, 7}));
}

TEST(DifferingIndicesTest, NanDifferencesCountAtAnyLimit) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const solver::TrainState a = TwoTensors({nan, 1, inf, inf, nan, 0}, {-inf, 0});
  const solver::TrainState b = TwoTensors({0, 1, inf, 0, nan, 0}, {-inf, 0});
  // NaN against a number, NaN against NaN and an infinity against itself (inf - inf is NaN) all
  // count; an infinity against a finite value is an infinite difference.
  EXPECT_EQ(*DifferingIndices(a, b, HUGE_VAL), (std::vector<std::uint64_t>{0, 2, 4, 6}));
  EXPECT_EQ(*DifferingIndices(a, b, 1.0), (std::vector<std::uint64_t>{0, 2, 3, 4, 6}));
}

TEST(DifferingIndicesTest, DifferentLayoutsAreAnError) {
  const solver::TrainState two = TwoTensors({0, 1, 2, 3, 4, 5}, {6, 7});
  EXPECT_EQ(DifferingIndices(StateOf({1.0f}), StateOf({1.0f, 2.0f}), 0.0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DifferingIndices(StateOf({1.0f}, "w"), StateOf({1.0f}, "b"), 0.0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DifferingIndices(two, StateOf({0, 1, 2, 3, 4, 5}), 0.0).status().code(), StatusCode::kInvalidArgument);
  solver::TrainState reshaped = two;
  reshaped.tensors[0].tensor = kernels::Tensor({3, 2});
  EXPECT_EQ(DifferingIndices(two, reshaped, 0.0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace polnode::verifier
