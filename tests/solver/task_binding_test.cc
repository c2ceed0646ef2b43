// The binding between a task document and the ledger's TaskSpec (solver/task_binding.h): what the
// submitter posts and what solvers and verifiers check before working on a task.

#include <gtest/gtest.h>

#include "polnode/consensus/sha256.h"
#include "polnode/solver/pinpoint_graph.h"
#include "polnode/solver/task_binding.h"
#include "polnode/testing/fashion_mnist.h"

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

}  // namespace
}  // namespace polnode::solver
