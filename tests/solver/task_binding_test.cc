// The binding between a task document and the ledger's TaskSpec (solver/task_binding.h): what the
// submitter posts and what solvers and verifiers check before working on a task.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "polnode/consensus/sha256.h"
#include "polnode/solver/pinpoint_graph.h"
#include "polnode/solver/task_binding.h"
#include "polnode/testing/fashion_mnist.h"
#include "polnode/testing/tiny_task.h"

namespace polnode::solver {
namespace {

TaskSpec SmallTask(const ImageDataset& data) {
  TaskSpec t;
  t.model = "mlp:784-8-10";
  t.data_location = "fashion-mnist";
  t.dataset_hash = DatasetContentHash(data);
  t.optimizer.kind = OptimizerKind::kSgd;
  t.optimizer.lr = 0.05f;
  t.batch = 16;
  t.steps = 12;
  t.checkpoint_interval = 4;
  t.seed = 3;
  t.segments_per_check = 2;
  return t;
}

TEST(TaskBindingTest, LedgerSpecNamesEveryPartOfTheDocument) {
  POLNODE_REQUIRE_FASHION_MNIST(data);
  const TaskSpec doc = SmallTask(*data);
  TaskTerms terms{.payment = 5000, .claim_window = 7, .training_window = 9};
  Result<proto::TaskSpec> spec = LedgerSpecFor(doc, *data, terms);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->model_spec(), doc.model);
  const consensus::Hash256 id = TaskId(doc);
  EXPECT_EQ(spec->hyperparameters_hash(), std::string(id.begin(), id.end()));
  EXPECT_EQ(spec->total_steps(), 12u);
  EXPECT_EQ(spec->checkpoint_interval(), 4u);
  EXPECT_EQ(spec->segments_per_verification(), 2u);
  EXPECT_EQ(spec->payment(), 5000u);
  EXPECT_EQ(spec->claim_window(), 7u);
  EXPECT_EQ(spec->training_window(), 9u);
  Result<consensus::Hash256> batch_root = BatchRoot(doc, *data);
  ASSERT_TRUE(batch_root.ok());
  EXPECT_EQ(spec->batch_root(), std::string(batch_root->begin(), batch_root->end()));
  EXPECT_EQ(spec->graph_root().size(), 32u);
  // mlp:784-8-10 with SGD momentum: 4 parameters + 4 momentum buffers.
  EXPECT_EQ(spec->state_tensor_count(), 8u);
  EXPECT_GT(spec->step_leaf_count(), spec->state_tensor_count() + 3);

  EXPECT_TRUE(CheckSpecBinding(*spec, doc, *data).ok());
}

TEST(TaskBindingTest, AnyDifferenceIsRefusedNamingTheField) {
  POLNODE_REQUIRE_FASHION_MNIST(data);
  const TaskSpec doc = SmallTask(*data);
  Result<proto::TaskSpec> spec = LedgerSpecFor(doc, *data, TaskTerms{.payment = 1});
  ASSERT_TRUE(spec.ok());

  proto::TaskSpec wrong_root = *spec;
  wrong_root.mutable_graph_root()->front() ^= 1;
  Status s = CheckSpecBinding(wrong_root, doc, *data);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("graph_root"), std::string::npos) << s.ToString();

  // A document with another seed is another task, though every ledger count stays the same.
  TaskSpec other_seed = doc;
  other_seed.seed = 4;
  s = CheckSpecBinding(*spec, other_seed, *data);
  EXPECT_NE(s.message().find("hyperparameters_hash"), std::string::npos) << s.ToString();

  proto::TaskSpec wrong_leaves = *spec;
  wrong_leaves.set_step_leaf_count(spec->step_leaf_count() + 1);
  EXPECT_NE(CheckSpecBinding(wrong_leaves, doc, *data).message().find("step_leaf_count"), std::string::npos);
}

std::uint32_t Bits(float v) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

TEST(TaskBindingTest, ATolerantTaskBindsItsForcedDeltaAndAnExactOneHasNone) {
  const ImageDataset data = testing::TinyDataset();
  TaskSpec exact = testing::TinyTask(data);
  TaskSpec tolerant = exact;
  tolerant.mode = ReproMode::kTolerant;
  // The default is 2^-10 (task_binding.h says why).
  EXPECT_EQ(Bits(TaskTerms{}.forced_delta), Bits(std::ldexp(1.0f, -10)));
  EXPECT_EQ(Bits(kDefaultForcedDelta), Bits(std::ldexp(1.0f, -10)));

  Result<proto::TaskSpec> tolerant_spec = LedgerSpecFor(tolerant, data, TaskTerms{.payment = 1});
  ASSERT_TRUE(tolerant_spec.ok()) << tolerant_spec.status().ToString();
  EXPECT_TRUE(tolerant_spec->tolerant());
  EXPECT_EQ(Bits(tolerant_spec->forced_delta()), Bits(kDefaultForcedDelta));
  EXPECT_TRUE(CheckSpecBinding(*tolerant_spec, tolerant, data).ok());
  // Any finite positive delta is the submitter's term, like the payment.
  Result<proto::TaskSpec> coarse = LedgerSpecFor(tolerant, data, TaskTerms{.payment = 1, .forced_delta = 0.25f});
  ASSERT_TRUE(coarse.ok());
  EXPECT_EQ(Bits(coarse->forced_delta()), Bits(0.25f));
  EXPECT_TRUE(CheckSpecBinding(*coarse, tolerant, data).ok());
  // ... but not one without a visible perturbation, on either side.
  for (float bad : {0.0f, -0.0f, -0.25f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(LedgerSpecFor(tolerant, data, TaskTerms{.payment = 1, .forced_delta = bad}).status().code(),
              StatusCode::kInvalidArgument)
        << bad;
    proto::TaskSpec on_ledger = *tolerant_spec;
    on_ledger.set_forced_delta(bad);
    const Status s = CheckSpecBinding(on_ledger, tolerant, data);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << bad;
    EXPECT_NE(s.message().find("forced_delta"), std::string::npos) << s.ToString();
  }

  // An exact document has none, whatever the terms say, and binds a ledger spec with none only:
  // compared by the bits, so not even -0.
  Result<proto::TaskSpec> exact_spec = LedgerSpecFor(exact, data, TaskTerms{.payment = 1, .forced_delta = 0.25f});
  ASSERT_TRUE(exact_spec.ok());
  EXPECT_FALSE(exact_spec->tolerant());
  EXPECT_EQ(Bits(exact_spec->forced_delta()), 0u);
  EXPECT_TRUE(CheckSpecBinding(*exact_spec, exact, data).ok());
  for (float other : {kDefaultForcedDelta, -0.0f}) {
    proto::TaskSpec on_ledger = *exact_spec;
    on_ledger.set_forced_delta(other);
    const Status s = CheckSpecBinding(on_ledger, exact, data);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << other;
    EXPECT_NE(s.message().find("field forced_delta differs"), std::string::npos) << s.ToString();
  }
  // The mode itself is bound: the tolerant spec does not bind the exact document.
  EXPECT_EQ(CheckSpecBinding(*tolerant_spec, exact, data).code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace polnode::solver
