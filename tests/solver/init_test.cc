#include "polnode/solver/init.h"

#include <gtest/gtest.h>

#include <cmath>

#include "polnode/solver/philox.h"

namespace polnode::solver {
namespace {

ModelSpec Mlp() {
  Result<ModelSpec> m = ParseModelSpec("mlp:784-64-10");
  EXPECT_TRUE(m.ok());
  return *m;
}

TEST(InitTest, SameSeedGivesTheSameBits) {
  const ModelSpec m = Mlp();
  const TrainState a = InitialState(m, OptimizerKind::kSgd, 5);
  const TrainState b = InitialState(m, OptimizerKind::kSgd, 5);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_TRUE(a.tensors[i].tensor.BitwiseEqual(b.tensors[i].tensor)) << a.tensors[i].name;
  }
  EXPECT_EQ(StateHash(a), StateHash(b));
}

TEST(InitTest, DifferentSeedsOrParametersDiffer) {
  const ModelSpec m = Mlp();
  const kernels::Tensor w5 = InitialParameter(m, 0, 5);
  const kernels::Tensor w6 = InitialParameter(m, 0, 6);
  int equal = 0;
  for (std::int64_t i = 0; i < w5.numel(); ++i) equal += w5.data()[i] == w6.data()[i];
  EXPECT_LT(equal, 100);  // a few coincidences among 50176 values at most
  EXPECT_NE(StateHash(InitialState(m, OptimizerKind::kSgd, 5)),
            StateHash(InitialState(m, OptimizerKind::kSgd, 6)));
  // The second weight matrix does not repeat the first one's values.
  const kernels::Tensor w2 = InitialParameter(m, 2, 5);
  EXPECT_NE(w2.data()[0], w5.data()[0]);
}

TEST(InitTest, EachWeightIsThePublishedFunctionOfSeedParameterAndElement) {
  const ModelSpec m = Mlp();
  const kernels::Tensor w = InitialParameter(m, 2, 77);  // fc2.w [64, 10]: the logit layer
  const float bound = std::sqrt(3.0f / 64.0f);
  for (std::int64_t e : {std::int64_t{0}, std::int64_t{1}, std::int64_t{639}}) {
    const float u =
        UniformFloat(RandomWord(77, RandomPurpose::kInit, 2, static_cast<std::uint64_t>(e)));
    EXPECT_EQ(w.data()[e], (2.0f * u - 1.0f) * bound) << "element " << e;
  }
  for (float v : w.values()) {
    EXPECT_GE(v, -bound);
    EXPECT_LT(v, bound);
  }
  // A layer that ends in a ReLU uses the He bound.
  const kernels::Tensor w1 = InitialParameter(m, 0, 77);
  const float u = UniformFloat(RandomWord(77, RandomPurpose::kInit, 0, 5));
  EXPECT_EQ(w1.data()[5], (2.0f * u - 1.0f) * std::sqrt(6.0f / 784.0f));
}

TEST(InitTest, WeightsLookUniformAndBiasesAndBuffersAreZero) {
  const ModelSpec m = Mlp();
  const TrainState s = InitialState(m, OptimizerKind::kAdam, 1);
  const kernels::Tensor& w = s.tensors[0].tensor;
  const float bound = std::sqrt(6.0f / 784.0f);
  double sum = 0.0, sum_sq = 0.0;
  for (float v : w.values()) {
    sum += v;
    sum_sq += static_cast<double>(v) * v;
  }
  const double n = static_cast<double>(w.numel());
  EXPECT_NEAR(sum / n, 0.0, 0.01 * bound);
  EXPECT_NEAR(sum_sq / n, bound * bound / 3.0, 0.02 * bound * bound);  // variance of U[-b, b)
  for (const char* zero : {"fc1.b", "fc2.b", "fc1.w.adam_m", "fc1.w.adam_v", "fc2.b.adam_v"}) {
    const kernels::Tensor* t = s.Find(zero);
    ASSERT_NE(t, nullptr) << zero;
    for (float v : t->values()) ASSERT_EQ(v, 0.0f) << zero;
  }
}

TEST(InitTest, StateOrderIsParametersThenBuffersPerParameter) {
  const TrainState sgd = InitialState(Mlp(), OptimizerKind::kSgd, 1);
  std::vector<std::string> names;
  for (const NamedTensor& nt : sgd.tensors) names.push_back(nt.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"fc1.w", "fc1.b", "fc2.w", "fc2.b", "fc1.w.velocity",
                                      "fc1.b.velocity", "fc2.w.velocity", "fc2.b.velocity"}));
  const TrainState adam = InitialState(Mlp(), OptimizerKind::kAdam, 1);
  ASSERT_EQ(adam.tensors.size(), 12u);
  EXPECT_EQ(adam.tensors[4].name, "fc1.w.adam_m");
  EXPECT_EQ(adam.tensors[5].name, "fc1.w.adam_v");
  EXPECT_EQ(adam.tensors[6].name, "fc1.b.adam_m");
  EXPECT_EQ(adam.step, 0);
}

}  // namespace
}  // namespace polnode::solver
