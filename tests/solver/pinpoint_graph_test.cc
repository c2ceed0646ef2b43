#include "polnode/solver/pinpoint_graph.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "build_step_graph.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/tampering_backend.h"
#include "polnode/solver/train_state.h"
#include "polnode/testing/tiny_task.h"

namespace polnode::solver {
namespace {

std::int64_t Elements(const proto::PinpointShape& s) {
  std::int64_t n = 1;
  for (std::int64_t d : s.dims()) n *= d;
  return n;
}

kernels::Shape FromProto(const proto::PinpointShape& s) {
  return kernels::Shape(s.dims().begin(), s.dims().end());
}

// Every descriptor against the graph it came from: one per node in order plus the state layout,
// leaves consecutive and each input's leaf the one its source's value sits at.
void CheckDescriptors(const StepGraph& g) {
  Result<std::vector<proto::PinpointDescriptor>> ds = PinpointDescriptors(g);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ASSERT_EQ(ds->size(), g.nodes.size() + 1);
  const StepLeafLayout layout(g);
  const std::uint64_t s = g.state_names.size();
  std::uint64_t next_leaf = s + 2;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const StepNode& n = g.nodes[i];
    ASSERT_TRUE((*ds)[i].has_node()) << i;
    const proto::PinpointNode& p = (*ds)[i].node();
    EXPECT_EQ(p.name(), n.name);
    EXPECT_EQ(p.op(), static_cast<std::uint32_t>(n.op));
    EXPECT_EQ(p.lr(), n.attrs.lr);
    EXPECT_EQ(p.pool_input_h(), n.attrs.pool_input_h);
    EXPECT_EQ(p.first_output_leaf(), next_leaf) << n.name;
    ASSERT_EQ(p.outputs_size(), static_cast<int>(n.output_shapes.size()));
    for (std::size_t k = 0; k < n.output_shapes.size(); ++k) {
      EXPECT_EQ(FromProto(p.outputs(static_cast<int>(k))), n.output_shapes[k]);
      const LeafInfo info = layout.Describe(next_leaf + k);
      EXPECT_EQ(info.kind, LeafKind::kNodeOutput);
      EXPECT_EQ(info.index, n.index);
      EXPECT_EQ(info.output, static_cast<int>(k));
    }
    ASSERT_EQ(p.inputs_size(), static_cast<int>(n.inputs.size()));
    for (std::size_t j = 0; j < n.inputs.size(); ++j) {
      const proto::PinpointInput& in = p.inputs(static_cast<int>(j));
      const TensorRef& r = n.inputs[j];
      EXPECT_LT(in.leaf(), p.first_output_leaf()) << n.name << " reads a later leaf";
      EXPECT_EQ(in.leaf(), layout.LeafOf(r));
      EXPECT_EQ(FromProto(in.shape()), RefShape(g, r)) << n.name;
      EXPECT_EQ(Elements(in.shape()), Elements(in.source_shape())) << n.name;
      if (r.source == SourceKind::kState) {
        EXPECT_EQ(in.leaf(), static_cast<std::uint64_t>(r.index));
        EXPECT_EQ(FromProto(in.source_shape()), g.state_shapes[static_cast<std::size_t>(r.index)]);
      } else if (r.source == SourceKind::kBatchImages) {
        EXPECT_EQ(in.leaf(), s);
      } else if (r.source == SourceKind::kBatchLabels) {
        EXPECT_EQ(in.leaf(), s + 1);
      } else {
        const proto::PinpointNode& src = (*ds)[static_cast<std::size_t>(r.index)].node();
        EXPECT_EQ(in.leaf(), src.first_output_leaf() + static_cast<std::uint64_t>(r.output));
        EXPECT_EQ(FromProto(in.source_shape()), FromProto(src.outputs(r.output)));
      }
    }
    next_leaf += n.output_shapes.size();
  }
  EXPECT_EQ(next_leaf + 1, StepLeafCount(g));
  EXPECT_EQ(layout.leaf_count(), StepLeafCount(g));
  ASSERT_TRUE(ds->back().has_state());
  const proto::PinpointStateLayout& st = ds->back().state();
  ASSERT_EQ(st.names_size(), static_cast<int>(s));
  ASSERT_EQ(st.value_leaves_size(), static_cast<int>(s));
  for (std::size_t i = 0; i < s; ++i) {
    EXPECT_EQ(st.names(static_cast<int>(i)), g.state_names[i]);
    // In a training step every state tensor is written by its parameter's optimizer node.
    const LeafInfo info = layout.Describe(st.value_leaves(static_cast<int>(i)));
    ASSERT_EQ(info.kind, LeafKind::kNodeOutput) << g.state_names[i];
    const StepNode& writer = g.nodes[static_cast<std::size_t>(info.index)];
    EXPECT_EQ(writer.state_writes[static_cast<std::size_t>(info.output)], static_cast<int>(i));
  }
  EXPECT_EQ(layout.Describe(0).kind, LeafKind::kStateTensor);
  EXPECT_EQ(layout.Describe(s).kind, LeafKind::kImages);
  EXPECT_EQ(layout.Describe(s + 1).kind, LeafKind::kLabels);
  EXPECT_EQ(layout.Describe(layout.leaf_count() - 1).kind, LeafKind::kStateHash);
  EXPECT_EQ(layout.Describe(layout.leaf_count()).kind, LeafKind::kPadding);
}

TEST(PinpointGraphTest, FashionMlpDescriptorsAndLeafCount) {
  const StepGraph g = BuildOrDie("mlp:784-64-10", OptimizerKind::kSgd, 64);
  CheckDescriptors(g);
  // 8 state tensors (2 layers x w, b, each with a velocity), 17 nodes with 22 outputs.
  EXPECT_EQ(g.nodes.size(), 17u);
  EXPECT_EQ(StepLeafCount(g), 8u + 2 + 22 + 1);
  // fc1.w.sgd (node 13) writes fc1.w and fc1.w.velocity.
  const StepLeafLayout layout(g);
  EXPECT_EQ(layout.value_leaves()[0], layout.first_output_leaf(13));
  EXPECT_EQ(layout.value_leaves()[4], layout.first_output_leaf(13) + 1);
}

TEST(PinpointGraphTest, CnnAdamDescriptorsAndLeafCount) {
  const StepGraph g = BuildOrDie("cnn:c4-p-c8-p-f32-10", OptimizerKind::kAdam, 16);
  CheckDescriptors(g);
  // 8 parameters with two Adam buffers each.
  EXPECT_EQ(g.state_names.size(), 24u);
  std::uint64_t outputs = 0;
  for (const StepNode& n : g.nodes) outputs += n.output_shapes.size();
  EXPECT_EQ(StepLeafCount(g), 24 + 2 + outputs + 1);
  // The flattening linear layer reads the pool's output under a view: the descriptor carries
  // both the shape the operator reads and the one the leaf's hash names.
  Result<std::vector<proto::PinpointDescriptor>> ds = PinpointDescriptors(g);
  ASSERT_TRUE(ds.ok());
  bool saw_view = false;
  for (const proto::PinpointDescriptor& d : *ds) {
    if (!d.has_node() || d.node().name() != "fc1.matmul") continue;
    EXPECT_EQ(FromProto(d.node().inputs(0).shape()), (kernels::Shape{16, 8 * 7 * 7}));
    EXPECT_EQ(FromProto(d.node().inputs(0).source_shape()), (kernels::Shape{16, 8, 7, 7}));
    saw_view = true;
  }
  EXPECT_TRUE(saw_view);
}

TEST(PinpointGraphTest, GraphRootCommitsToEveryAttribute) {
  const StepGraph g = BuildOrDie("mlp:16-8-3", OptimizerKind::kSgd, 4);
  Result<std::vector<proto::PinpointDescriptor>> ds = PinpointDescriptors(g);
  ASSERT_TRUE(ds.ok());
  const consensus::Hash256 root = GraphRoot(*ds);
  std::vector<consensus::Hash256> hashes;
  for (const proto::PinpointDescriptor& d : *ds) {
    EXPECT_EQ(DescriptorHash(d), consensus::Sha256(DescriptorBytes(d)));
    hashes.push_back(DescriptorHash(d));
  }
  EXPECT_EQ(root, consensus::MerkleRoot(hashes));
  EXPECT_EQ(std::set<consensus::Hash256>(hashes.begin(), hashes.end()).size(), hashes.size());
  // Same graph, same root; another learning rate, another root.
  EXPECT_EQ(GraphRoot(*PinpointDescriptors(g)), root);
  StepGraph other = g;
  other.nodes.back().attrs.lr = 0.5f;
  EXPECT_NE(GraphRoot(*PinpointDescriptors(other)), root);
}

TEST(PinpointGraphTest, RejectsGraphsWithoutTheLayout) {
  StepGraph g = BuildOrDie("mlp:6-2", OptimizerKind::kSgd, 2);
  StepGraph forward_ref = g;
  forward_ref.nodes[0].inputs[0] = {SourceKind::kNode, 3, 0, {}};
  EXPECT_EQ(PinpointDescriptors(forward_ref).status().code(), StatusCode::kInvalidArgument);
  StepGraph bad_write = g;
  bad_write.nodes.back().state_writes[0] = 99;
  EXPECT_EQ(PinpointDescriptors(bad_write).status().code(), StatusCode::kInvalidArgument);
  Result<StepGraph> fwd = BuildForwardGraph(g.model, 2);
  ASSERT_TRUE(fwd.ok());
  EXPECT_EQ(PinpointDescriptors(*fwd).status().code(), StatusCode::kInvalidArgument);
}

TEST(BatchTreeTest, LeavesAreTheBatchesTrainingUses) {
  const ImageDataset data = testing::TinyDataset();
  TaskSpec task = testing::TinyTask(data);
  task.steps = 20;  // 64 samples / batch 8: 8 steps per epoch, so steps 16.. are in epoch 2
  Result<TaskStepper> stepper = TaskStepper::Create(task, data);
  ASSERT_TRUE(stepper.ok());
  Result<BatchTree> tree = BatchTree::Build(*stepper);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  EXPECT_EQ(tree->steps(), 20);
  Result<consensus::Hash256> root = BatchRoot(task, data);
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(tree->root(), *root);

  auto backend = kernels::MakeReferenceBackend();
  Result<StepRunner> runner = StepRunner::Create(stepper->graph());
  ASSERT_TRUE(runner.ok());
  TrainState via_stepper = stepper->Initial();
  TrainState via_leaves = via_stepper;
  std::set<consensus::Hash256> distinct;
  for (std::int64_t t = 0; t < task.steps; ++t) {
    Result<BatchEvidence> ev = tree->Prove(t);
    ASSERT_TRUE(ev.ok());
    EXPECT_TRUE(consensus::VerifyMerkleProof(
                    tree->root(), consensus::BatchLeaf(ev->images_hash, ev->labels_hash), ev->proof)
                    .ok());
    EXPECT_EQ(ev->proof.leaf_index, static_cast<std::uint64_t>(t));
    distinct.insert(ev->images_hash);
    // Training from the proven batch reaches the state the task's own step reaches.
    kernels::Tensor images, labels;
    ASSERT_TRUE(stepper->Batch(t, images, labels).ok());
    EXPECT_EQ(TensorHash(images), ev->images_hash);
    EXPECT_EQ(TensorHash(labels), ev->labels_hash);
    ASSERT_TRUE(stepper->Step(via_stepper, *backend).ok());
    ASSERT_TRUE(runner->Step(via_leaves, images, labels, *backend).ok());
    EXPECT_EQ(StateHash(via_leaves), StateHash(via_stepper)) << "step " << t;
  }
  EXPECT_EQ(distinct.size(), 20u);
  EXPECT_EQ(tree->Prove(20).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(tree->Prove(-1).status().code(), StatusCode::kOutOfRange);
}

TEST(TamperingBackendTest, CorruptsExactlyOneNodeOfOneStep) {
  const ImageDataset data = testing::TinyDataset();
  const TaskSpec task = testing::TinyTask(data);
  Result<TaskStepper> honest = TaskStepper::Create(task, data);
  Result<TaskStepper> cheat = TaskStepper::Create(task, data);
  ASSERT_TRUE(honest.ok() && cheat.ok());
  auto reference = kernels::MakeReferenceBackend();
  const std::size_t nodes = honest->graph().nodes.size();
  const int target = 3;  // fc2.matmul
  TamperingBackend tampering(*reference, nodes, TamperSpec{2, target, 0, 22});
  EXPECT_EQ(tampering.name(), reference->name());

  TrainState a = honest->Initial(), b = cheat->Initial();
  for (std::int64_t t = 0; t < 4; ++t) {
    std::vector<consensus::Hash256> ha, hb;
    NodeObserver record_a = [&](const StepNode&, std::span<const kernels::Tensor* const> outs) -> Status {
      for (const kernels::Tensor* o : outs) ha.push_back(TensorHash(*o));
      return Status::Ok();
    };
    NodeObserver record_b = [&](const StepNode&, std::span<const kernels::Tensor* const> outs) -> Status {
      for (const kernels::Tensor* o : outs) hb.push_back(TensorHash(*o));
      return Status::Ok();
    };
    ASSERT_TRUE(honest->Step(a, *reference, &record_a).ok());
    ASSERT_TRUE(cheat->Step(b, tampering, &record_b).ok());
    ASSERT_EQ(ha.size(), hb.size());
    if (t < 2) {
      EXPECT_EQ(ha, hb) << "step " << t;
      EXPECT_EQ(StateHash(a), StateHash(b));
    } else if (t == 2) {
      // Outputs before fc2.matmul agree (fc1's three nodes: one output each), then it differs.
      const StepLeafLayout layout(honest->graph());
      const std::size_t first = layout.first_output_leaf(target) - layout.first_output_leaf(0);
      for (std::size_t i = 0; i < first; ++i) EXPECT_EQ(ha[i], hb[i]) << i;
      EXPECT_NE(ha[first], hb[first]);
      EXPECT_NE(StateHash(a), StateHash(b));
    }
  }
  EXPECT_EQ(tampering.tamper_count(), 1);
  // Seek re-positions: replaying step 2 from the honest state corrupts it again.
  tampering.Seek(5);
  TrainState c = honest->Initial();
  for (int t = 0; t < 2; ++t) ASSERT_TRUE(honest->Step(c, *reference).ok());
  tampering.Seek(2);
  TrainState d = c;
  ASSERT_TRUE(honest->Step(c, *reference).ok());
  ASSERT_TRUE(honest->Step(d, tampering).ok());
  EXPECT_NE(StateHash(c), StateHash(d));
  EXPECT_EQ(tampering.tamper_count(), 2);
}

}  // namespace
}  // namespace polnode::solver
