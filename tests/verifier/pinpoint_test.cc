#include "polnode/verifier/pinpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "polnode/consensus/pinpoint.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/tile.h"
#include "polnode/solver/pinpoint_graph.h"
#include "polnode/testing/game_descent.h"
#include "polnode/testing/tiny_task.h"

namespace polnode::verifier {
namespace {

using consensus::Hash256;
using solver::TaskSpec;
using solver::TrainState;

Hash256 ToHash(const std::string& bytes) {
  Hash256 h{};
  EXPECT_EQ(bytes.size(), h.size());
  std::memcpy(h.data(), bytes.data(), std::min(bytes.size(), h.size()));
  return h;
}

std::vector<Hash256> ToHashes(const google::protobuf::RepeatedPtrField<std::string>& list) {
  std::vector<Hash256> out;
  for (const std::string& s : list) out.push_back(ToHash(s));
  return out;
}

kernels::Shape FromProto(const proto::PinpointShape& s) {
  return kernels::Shape(s.dims().begin(), s.dims().end());
}

std::vector<std::uint8_t> Bytes(const std::string& s) {
  return std::vector<std::uint8_t>(s.begin(), s.end());
}

// The tiny task with another model (the CNN reads 1 x 4 x 4 images: conv, pool to 2 x 2, then a
// flattening linear layer, so views are exercised) and Adam (bias corrections depend on the step).
TaskSpec TinyCnnTask(const solver::ImageDataset& data) {
  TaskSpec t = solver::testing::TinyTask(data);
  t.model = "cnn:i1x4x4-c2-p-f5-3";
  t.optimizer.kind = solver::OptimizerKind::kAdam;
  t.optimizer.lr = 0.01f;
  return t;
}

// The state after `steps` steps of the task, trained with the reference backend.
TrainState StateAfter(const TaskSpec& task, const solver::ImageDataset& data, std::int64_t steps) {
  Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task, data);
  EXPECT_TRUE(stepper.ok());
  auto backend = kernels::MakeReferenceBackend();
  TrainState s = stepper->Initial();
  while (s.step < steps) EXPECT_TRUE(stepper->Step(s, *backend).ok());
  return s;
}

// The descriptor of the node writing leaf d, from the responder's descriptors.
const proto::PinpointNode& NodeOf(const PinpointResponder& r, std::uint64_t d) {
  return r.descriptors()[static_cast<std::size_t>(r.layout().Describe(d).index)].node();
}

// The tile kernel of leaf d's output as the ledger builds it from the descriptor alone.
kernels::TileKernel KernelOf(const proto::PinpointNode& node, std::uint64_t d, std::int64_t step) {
  kernels::OpAttrs attrs;
  attrs.lr = node.lr();
  attrs.momentum = node.momentum();
  attrs.weight_decay = node.weight_decay();
  attrs.beta1 = node.beta1();
  attrs.beta2 = node.beta2();
  attrs.eps = node.eps();
  attrs.pool_input_h = node.pool_input_h();
  attrs.pool_input_w = node.pool_input_w();
  const kernels::Op op = static_cast<kernels::Op>(node.op());
  if (op == kernels::Op::kAdamW) {
    attrs.bias_correction1 = kernels::AdamBiasCorrection(attrs.beta1, step + 1);
    attrs.bias_correction2 = kernels::AdamBiasCorrection(attrs.beta2, step + 1);
  }
  std::vector<kernels::Shape> shapes;
  for (const proto::PinpointInput& in : node.inputs()) shapes.push_back(FromProto(in.shape()));
  Result<kernels::TileKernel> k =
      kernels::TileKernel::Create(op, attrs, shapes, static_cast<int>(d - node.first_output_leaf()));
  EXPECT_TRUE(k.ok()) << k.status().ToString();
  return std::move(*k);
}

// A source over the posted blocks of one input.
class PostedBlocks final : public kernels::TileSource {
 public:
  PostedBlocks(BlockGrid grid, std::vector<std::uint64_t> blocks, std::vector<std::vector<float>> values)
      : grid_(grid), blocks_(std::move(blocks)), values_(std::move(values)) {}
  float At(std::int64_t flat) const override {
    const auto it = std::lower_bound(blocks_.begin(), blocks_.end(), grid_.BlockOf(flat));
    if (it == blocks_.end() || *it != grid_.BlockOf(flat)) {
      ADD_FAILURE() << "read outside the posted blocks";
      return 0.0f;
    }
    return values_[static_cast<std::size_t>(it - blocks_.begin())][static_cast<std::size_t>(grid_.OffsetInBlock(flat))];
  }

 private:
  BlockGrid grid_;
  std::vector<std::uint64_t> blocks_;
  std::vector<std::vector<float>> values_;
};

// What the ledger checks for a tile ruling over units [lo, hi) of block `tile` of leaf d, done
// here with the evidence alone: each read input's block root, with the source dims, gives a leaf
// that climbs to the agreed subtree node of `agreed` (the honest step tree: equal there in both
// trees), its blocks are those the box reads and climb to the root, the posted state at lo (if
// any) hashes to `lo_hash`; then the tile kernel gives the value returned: the chain state hash
// after hi units, or the block leaf at the chain's end.
Hash256 RefereeTileBox(const proto::RefereeMove& move, const proto::PinpointNode& node, const consensus::GameTree& agreed,
                       std::uint64_t d, std::int64_t step, std::uint64_t tile, std::int64_t lo, std::int64_t hi,
                       const Hash256& lo_hash) {
  const kernels::TileKernel kernel = KernelOf(node, d, step);
  const GridRect rect = kernel.grid().BlockRect(tile);
  EXPECT_EQ(move.tile_inputs_size(), node.inputs_size());
  std::vector<PostedBlocks> sources;
  for (int j = 0; j < node.inputs_size() && j < move.tile_inputs_size(); ++j) {
    const proto::PinpointInput& in = node.inputs(j);
    const proto::TileInput& posted = move.tile_inputs(j);
    const kernels::Shape source = FromProto(in.source_shape());
    const BlockGrid grid = BlockGrid::Of(source);
    const std::vector<std::uint64_t> blocks = grid.BlocksOfRuns(kernel.Reads(rect, j, lo, hi));
    EXPECT_EQ(posted.blocks_size(), static_cast<int>(blocks.size())) << node.name() << " input " << j;
    std::vector<std::vector<float>> values;
    std::vector<std::pair<std::uint64_t, Hash256>> leaves;
    for (int b = 0; b < posted.blocks_size() && b < static_cast<int>(blocks.size()); ++b) {
      std::vector<float> v(posted.blocks(b).size() / sizeof(float));
      std::memcpy(v.data(), posted.blocks(b).data(), v.size() * sizeof(float));
      EXPECT_EQ(static_cast<std::int64_t>(v.size()), grid.BlockRect(blocks[static_cast<std::size_t>(b)]).elements());
      leaves.emplace_back(blocks[static_cast<std::size_t>(b)], consensus::BlockLeafHash(v));
      values.push_back(std::move(v));
    }
    if (!blocks.empty()) {
      const Hash256 root = ToHash(posted.block_root());
      const std::uint32_t height = consensus::AgreedSubtreeHeight(in.leaf(), d);
      EXPECT_EQ(consensus::ClimbGameTree(consensus::TensorHashFromBlockRoot(source, root), in.leaf(),
                                         ToHashes(posted.siblings())),
                *agreed.Node(height, in.leaf() >> height))
          << node.name() << " input " << j;
      Result<Hash256> climbed =
          consensus::ClimbGameTreeMany(leaves, consensus::GameTreeDepth(grid.block_count()), ToHashes(posted.proof()));
      EXPECT_TRUE(climbed.ok() && *climbed == root) << node.name() << " input " << j;
    } else {
      EXPECT_EQ(posted.ByteSizeLong(), 0u);
    }
    sources.emplace_back(grid, blocks, std::move(values));
  }
  std::vector<const kernels::TileSource*> in;
  for (const PostedBlocks& src : sources) in.push_back(&src);
  std::vector<float> state = kernel.Init(rect);
  if (lo > 0) {
    EXPECT_EQ(move.lo_state().size(), state.size() * sizeof(float));
    std::memcpy(state.data(), move.lo_state().data(), std::min(move.lo_state().size(), state.size() * sizeof(float)));
    EXPECT_EQ(consensus::ChainStateHash(static_cast<std::uint64_t>(lo), state), lo_hash);
  } else {
    EXPECT_TRUE(move.lo_state().empty());
  }
  EXPECT_TRUE(kernel.Advance(rect, in, lo, hi, state).ok());
  if (hi < kernel.units()) return consensus::ChainStateHash(static_cast<std::uint64_t>(hi), state);
  Result<std::vector<float>> values = kernel.Finish(rect, in, state);
  EXPECT_TRUE(values.ok());
  return values.ok() ? consensus::BlockLeafHash(*values) : Hash256{};
}

using polnode::testing::Descend;

class PinpointResponderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = solver::testing::TinyDataset();
    task_ = solver::testing::TinyTask(data_);
    reference_ = kernels::MakeReferenceBackend();
  }
  PinpointResponder Responder(const TaskSpec& task, std::int64_t first_step,
                              const ResponderOptions& options = {}) {
    Result<PinpointResponder> r =
        PinpointResponder::Create(task, data_, *reference_, StateAfter(task, data_, first_step), options);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return std::move(*r);
  }

  solver::ImageDataset data_;
  TaskSpec task_;
  std::unique_ptr<kernels::Backend> reference_;
};

TEST_F(PinpointResponderTest, StateHashesFollowTheTrainerForwardAndBack) {
  PinpointResponder r = Responder(task_, 5);
  EXPECT_EQ(r.first_step(), 5);
  for (std::int64_t s : {0, 3, 5, 1, 4}) {
    Result<Hash256> h = r.StateHashAt(s);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(*h, solver::StateHash(StateAfter(task_, data_, 5 + s))) << s;
  }
  EXPECT_EQ(r.StateHashAt(-1).status().code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(r.StateHashAt(35).ok());  // the task's last state
  EXPECT_EQ(r.StateHashAt(36).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(r.LeavesOfStep(35).status().code(), StatusCode::kOutOfRange);
}

TEST_F(PinpointResponderTest, LeavesOfStepNameTheStatesAndBatchOnEitherSide) {
  for (const TaskSpec& task : {task_, TinyCnnTask(data_)}) {
    PinpointResponder r = Responder(task, 5);
    Result<StepLeaves> leaves = r.LeavesOfStep(2);
    ASSERT_TRUE(leaves.ok()) << leaves.status().ToString();
    const solver::StepLeafLayout& layout = r.layout();
    ASSERT_EQ(leaves->leaves.size(), layout.leaf_count());
    EXPECT_EQ(leaves->tree.leaf_count(), layout.leaf_count());
    const TrainState before = StateAfter(task, data_, 7);
    const TrainState after = StateAfter(task, data_, 8);
    const std::vector<Hash256> before_hashes = solver::TensorHashes(before);
    for (std::size_t i = 0; i < before_hashes.size(); ++i) EXPECT_EQ(leaves->leaves[i], before_hashes[i]);
    // The last leaf is the trainer's state hash after the step, and its v2 form.
    std::vector<std::string> names;
    for (const solver::NamedTensor& nt : after.tensors) names.push_back(nt.name);
    EXPECT_EQ(leaves->leaves.back(), solver::StateHash(after));
    EXPECT_EQ(leaves->leaves.back(),
              consensus::StateHashFromTensorHashes(8, names, solver::TensorHashes(after)));
    Result<Hash256> level1 = r.StateHashAt(3);
    ASSERT_TRUE(level1.ok());
    EXPECT_EQ(leaves->leaves.back(), *level1);
    // The first graph round proves the last leaf to be the level-1 claim.
    Result<proto::GraphMove> first = AnswerGraphMove(leaves->tree, leaves->tree.depth(), 0, true);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(
        consensus::ClimbGameTree(*level1, layout.leaf_count() - 1, ToHashes(first->last_leaf_siblings())),
        leaves->tree.root());
    EXPECT_EQ(consensus::MerkleNodeHash(ToHash(first->left()), ToHash(first->right())), leaves->tree.root());
    // Batch leaves are the batch root's.
    Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task, data_);
    ASSERT_TRUE(stepper.ok());
    Result<solver::BatchTree> batches = solver::BatchTree::Build(*stepper);
    ASSERT_TRUE(batches.ok());
    Result<solver::BatchEvidence> batch = batches->Prove(7);
    ASSERT_TRUE(batch.ok());
    EXPECT_EQ(leaves->leaves[layout.images_leaf()], batch->images_hash);
    EXPECT_EQ(leaves->leaves[layout.labels_leaf()], batch->labels_hash);
    // Asking again (cached) and after moving elsewhere (replayed) gives the same tree.
    EXPECT_EQ(r.LeavesOfStep(2)->tree.root(), leaves->tree.root());
    ASSERT_TRUE(r.StateHashAt(6).ok());
    EXPECT_EQ(r.LeavesOfStep(2)->tree.root(), leaves->tree.root());
  }
}

TEST_F(PinpointResponderTest, TamperedPartyDivergesAtTheTamperedNode) {
  const int target = 3;  // fc2.matmul
  ResponderOptions cheat;
  cheat.tamper = solver::TamperSpec{5 + 2, target, 0, 22};
  PinpointResponder honest = Responder(task_, 5);
  PinpointResponder cheater = Responder(task_, 5, cheat);
  EXPECT_EQ(honest.graph_root(), cheater.graph_root());
  EXPECT_EQ(*honest.StateHashAt(2), *cheater.StateHashAt(2));
  EXPECT_NE(*honest.StateHashAt(3), *cheater.StateHashAt(3));
  EXPECT_NE(*honest.StateHashAt(5), *cheater.StateHashAt(5));
  Result<StepLeaves> h1 = honest.LeavesOfStep(1), c1 = cheater.LeavesOfStep(1);
  ASSERT_TRUE(h1.ok() && c1.ok());
  EXPECT_EQ(h1->leaves, c1->leaves);

  Result<StepLeaves> h = honest.LeavesOfStep(2), c = cheater.LeavesOfStep(2);
  ASSERT_TRUE(h.ok() && c.ok());
  const std::uint64_t d = honest.layout().first_output_leaf(target);
  for (std::uint64_t j = 0; j < d; ++j) EXPECT_EQ(h->leaves[j], c->leaves[j]) << j;
  EXPECT_NE(h->leaves[d], c->leaves[d]);
  EXPECT_NE(h->leaves.back(), c->leaves.back());
  EXPECT_EQ(Descend(h->tree, c->tree), d);

  // Inside the output: the block trees give the parties' leaves and first differ at block 0,
  // where the tamper is.
  Result<const consensus::TensorBlockTree*> hb = honest.OutputBlocks(2, d), cb = cheater.OutputBlocks(2, d);
  ASSERT_TRUE(hb.ok() && cb.ok());
  EXPECT_EQ((*hb)->tensor_hash(), h->leaves[d]);
  EXPECT_EQ((*cb)->tensor_hash(), c->leaves[d]);
  EXPECT_NE(*(*hb)->tree()->Node(0, 0), *(*cb)->tree()->Node(0, 0));
  // Level 3: both parties' evidence passes the checks and the tile kernel gives the honest block.
  const proto::PinpointNode& node = NodeOf(honest, d);
  const std::int64_t units = *honest.ChainUnits(2, d);
  Result<proto::RefereeMove> honest_move = honest.TileEvidence(2, d, 0, 0, units);
  Result<proto::RefereeMove> cheat_move = cheater.TileEvidence(2, d, 0, 0, units);
  ASSERT_TRUE(honest_move.ok() && cheat_move.ok());
  EXPECT_EQ(RefereeTileBox(*honest_move, node, h->tree, d, 7, 0, 0, units, {}), *(*hb)->tree()->Node(0, 0));
  EXPECT_EQ(RefereeTileBox(*cheat_move, node, c->tree, d, 7, 0, 0, units, {}), *(*hb)->tree()->Node(0, 0));
  // The cheater's partial sums are the honest ones: its story goes wrong only at the output.
  for (std::int64_t u = 0; u < units; ++u) EXPECT_EQ(*honest.ChainStateHashAt(2, d, 0, u), *cheater.ChainStateHashAt(2, d, 0, u));
  // The first tile move proves the descriptor and names the block root.
  Result<proto::TileMove> first = honest.AnswerTileMove(2, d, (*hb)->tree()->depth(), 0, true);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(ToHash(first->block_root()), (*hb)->root());
  Result<consensus::MerkleProof> proof = consensus::ParseMerkleProof(Bytes(first->node_descriptor_proof()));
  ASSERT_TRUE(proof.ok());
  EXPECT_TRUE(consensus::VerifyMerkleProof(honest.graph_root(), consensus::Sha256(first->node_descriptor()), *proof).ok());
  // A node output is never refereed as a whole.
  EXPECT_EQ(honest.RefereeEvidence(2, d).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(PinpointResponderTest, CheatingSolverAndItsResponderTellTheSameStory) {
  // A cheating solver trains from step 0 through a TamperingBackend (as it would under Prove);
  // the responder it defends its proof with, tampering the same value, must reproduce its
  // checkpoints, or it would lose the game on level 1 already instead of at the operator.
  const solver::TamperSpec spec{7, 3, 0, 22};
  Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task_, data_);
  ASSERT_TRUE(stepper.ok());
  solver::TamperingBackend tampering(*reference_, stepper->graph().nodes.size(), spec);
  TrainState forged = stepper->Initial();
  std::vector<Hash256> forged_hashes;
  while (forged.step < 10) {
    ASSERT_TRUE(stepper->Step(forged, tampering).ok());
    forged_hashes.push_back(solver::StateHash(forged));  // after forged.step steps
  }
  EXPECT_EQ(forged_hashes[6], solver::StateHash(StateAfter(task_, data_, 7)));
  EXPECT_NE(forged_hashes[7], solver::StateHash(StateAfter(task_, data_, 8)));
  ResponderOptions cheat;
  cheat.tamper = spec;
  PinpointResponder responder = Responder(task_, 5, cheat);
  for (std::int64_t s = 5; s >= 0; --s) EXPECT_EQ(*responder.StateHashAt(s), forged_hashes[4 + s]) << s;
}

// Every block of every node output, over its whole chain and split at the chain's midpoint (the
// first half naming the partial sums, the second starting from them), reproduces the block.
TEST_F(PinpointResponderTest, TileEvidenceForEveryBlockOfEveryNodeOutputReproducesIt) {
  const TaskSpec cnn = TinyCnnTask(data_);
  PinpointResponder r = Responder(cnn, 5);
  Result<StepLeaves> leaves = r.LeavesOfStep(1);
  ASSERT_TRUE(leaves.ok());
  const solver::StepLeafLayout& layout = r.layout();
  int boxes = 0;
  for (std::uint64_t d = layout.labels_leaf() + 1; d + 1 < layout.leaf_count(); ++d) {
    SCOPED_TRACE("leaf " + std::to_string(d));
    Result<const consensus::TensorBlockTree*> blocks = r.OutputBlocks(1, d);
    ASSERT_TRUE(blocks.ok()) << blocks.status().ToString();
    EXPECT_EQ((*blocks)->tensor_hash(), leaves->leaves[d]);
    const proto::PinpointNode& node = NodeOf(r, d);
    const std::int64_t units = *r.ChainUnits(1, d);
    for (std::uint64_t b = 0; b < (*blocks)->grid().block_count(); ++b) {
      const Hash256 block = *(*blocks)->tree()->Node(0, b);
      Result<proto::RefereeMove> whole = r.TileEvidence(1, d, b, 0, units);
      ASSERT_TRUE(whole.ok()) << whole.status().ToString();
      EXPECT_EQ(RefereeTileBox(*whole, node, leaves->tree, d, 6, b, 0, units, {}), block);
      ++boxes;
      if (units < 2) continue;
      const std::int64_t mid = units / 2;
      const Hash256 at_mid = *r.ChainStateHashAt(1, d, b, mid);
      Result<proto::RefereeMove> first = r.TileEvidence(1, d, b, 0, mid);
      Result<proto::RefereeMove> second = r.TileEvidence(1, d, b, mid, units);
      ASSERT_TRUE(first.ok() && second.ok());
      EXPECT_EQ(RefereeTileBox(*first, node, leaves->tree, d, 6, b, 0, mid, {}), at_mid);
      EXPECT_EQ(RefereeTileBox(*second, node, leaves->tree, d, 6, b, mid, units, at_mid), block);
      boxes += 2;
    }
    // Padding beyond the output's blocks needs no evidence.
    Result<proto::RefereeMove> pad = r.TileEvidence(1, d, (*blocks)->grid().block_count() + 1, 0, 0);
    ASSERT_TRUE(pad.ok());
    EXPECT_EQ(pad->ByteSizeLong(), 0u);
  }
  EXPECT_GT(boxes, 30);
}

TEST_F(PinpointResponderTest, RefereeEvidenceForStateBatchAndLastLeaves) {
  PinpointResponder r = Responder(task_, 5);
  Result<StepLeaves> leaves = r.LeavesOfStep(2);
  ASSERT_TRUE(leaves.ok());
  const solver::StepLeafLayout& layout = r.layout();
  const std::uint64_t s = layout.state_count();
  auto check_layout_descriptor = [&](const proto::RefereeMove& move) {
    Result<consensus::MerkleProof> proof = consensus::ParseMerkleProof(Bytes(move.node_descriptor_proof()));
    ASSERT_TRUE(proof.ok());
    EXPECT_EQ(proof->leaf_index, r.descriptors().size() - 1);
    EXPECT_TRUE(
        consensus::VerifyMerkleProof(r.graph_root(), consensus::Sha256(move.node_descriptor()), *proof).ok());
  };
  const std::vector<std::string> names = [&] {
    std::vector<std::string> n;
    for (const std::string& name : r.descriptors().back().state().names()) n.push_back(name);
    return n;
  }();

  // A state tensor: all tensor hashes give the agreed state hash.
  Result<proto::RefereeMove> state = r.RefereeEvidence(2, 1);
  ASSERT_TRUE(state.ok());
  check_layout_descriptor(*state);
  const std::vector<Hash256> hashes = ToHashes(state->state_tensor_hashes());
  ASSERT_EQ(hashes.size(), s);
  EXPECT_EQ(consensus::StateHashFromTensorHashes(7, names, hashes), *r.StateHashAt(2));
  EXPECT_EQ(hashes[1], leaves->leaves[1]);

  // The batch: proven against the task's batch root.
  const Result<Hash256> batch_root = solver::BatchRoot(task_, data_);
  ASSERT_TRUE(batch_root.ok());
  for (std::uint64_t d : {s, s + 1}) {
    Result<proto::RefereeMove> batch = r.RefereeEvidence(2, d);
    ASSERT_TRUE(batch.ok());
    Result<consensus::MerkleProof> proof = consensus::ParseMerkleProof(Bytes(batch->batch_proof()));
    ASSERT_TRUE(proof.ok());
    EXPECT_EQ(proof->leaf_index, 7u);
    EXPECT_TRUE(consensus::VerifyMerkleProof(
                    *batch_root,
                    consensus::BatchLeaf(ToHash(batch->images_hash()), ToHash(batch->labels_hash())), *proof)
                    .ok());
    EXPECT_EQ(ToHash(d == s ? batch->images_hash() : batch->labels_hash()), leaves->leaves[d]);
  }

  // The state after the step: value hashes climb to agreed subtrees and give the last leaf.
  const std::uint64_t last = layout.leaf_count() - 1;
  Result<proto::RefereeMove> after = r.RefereeEvidence(2, last);
  ASSERT_TRUE(after.ok());
  check_layout_descriptor(*after);
  ASSERT_EQ(after->inputs_size(), static_cast<int>(s));
  std::vector<Hash256> values;
  for (int i = 0; i < after->inputs_size(); ++i) {
    const std::uint64_t j = layout.value_leaves()[static_cast<std::size_t>(i)];
    const Hash256 v = ToHash(after->inputs(i).hash());
    const std::uint32_t height = consensus::AgreedSubtreeHeight(j, last);
    EXPECT_EQ(consensus::ClimbGameTree(v, j, ToHashes(after->inputs(i).siblings())),
              *leaves->tree.Node(height, j >> height));
    values.push_back(v);
  }
  EXPECT_EQ(consensus::StateHashFromTensorHashes(8, names, values), leaves->leaves[last]);

  // Padding needs nothing; beyond the tree is an error.
  const std::uint64_t padded = std::uint64_t{1} << leaves->tree.depth();
  if (last + 1 < padded) {
    Result<proto::RefereeMove> pad = r.RefereeEvidence(2, last + 1);
    ASSERT_TRUE(pad.ok());
    EXPECT_EQ(pad->ByteSizeLong(), 0u);
  }
  EXPECT_EQ(r.RefereeEvidence(2, padded).status().code(), StatusCode::kOutOfRange);
}

TEST_F(PinpointResponderTest, RejectsAStartStateOfAnotherLayout) {
  TrainState wrong = StateAfter(TinyCnnTask(data_), data_, 0);
  EXPECT_EQ(PinpointResponder::Create(task_, data_, *reference_, wrong).status().code(),
            StatusCode::kInvalidArgument);
  TrainState late = StateAfter(task_, data_, 0);
  late.step = 41;
  EXPECT_EQ(PinpointResponder::Create(task_, data_, *reference_, late).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace polnode::verifier
