// Issue 3's accuracy target, checked on the default configuration of `polnode train`: the MLP
// 784-256-128-10, SGD momentum 0.9, lr 0.05, batch 128, 3 epochs of Fashion-MNIST. It runs under the
// sanitizers too (about 50 s of the debug build on 2 threads).
#include <gtest/gtest.h>

#include "polnode/kernels/backend.h"
#include "polnode/solver/trainer.h"
#include "polnode/testing/fashion_mnist.h"

namespace polnode::solver {
namespace {

TEST(AccuracyTest, DefaultRunReachesEightyFivePercentInThreeEpochs) {
  POLNODE_REQUIRE_FASHION_MNIST(data);
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend("cpu", 2);
  ASSERT_TRUE(backend.ok());
  const TrainConfig defaults;
  Result<TrainSummary> s = TrainOnData(defaults, *data, **backend, nullptr);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->steps, 3 * 468);
  ASSERT_TRUE(s->test.has_value());
  EXPECT_GE(s->test->accuracy(), 0.85) << s->test->correct << "/" << s->test->total;
}

}  // namespace
}  // namespace polnode::solver
