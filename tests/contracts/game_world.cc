#include "game_world.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstring>

#include "polnode/testing/chain_harness.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/contracts/ruling.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/tile.h"

namespace polnode::contracts::testing {
namespace {

using consensus::Hash256;

void SetShape(proto::PinpointShape* shape, std::initializer_list<std::int64_t> dims) {
  for (std::int64_t d : dims) shape->add_dims(d);
}

Hash256 TensorHash(const kernels::Tensor& t) { return consensus::TensorHashOf(t.shape(), t.values()); }

kernels::Tensor Images(std::uint64_t step) {
  kernels::Tensor t({1});
  t.data()[0] = static_cast<float>(step);
  return t;
}

kernels::Tensor Labels() { return kernels::Tensor({1}); }

std::string Serialized(const google::protobuf::MessageLite& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

std::string FloatBytes(std::span<const float> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size_bytes());
}

kernels::OpAttrs SgdAttrs() {
  kernels::OpAttrs attrs;
  attrs.lr = 0.01f;
  attrs.momentum = 0.9f;
  return attrs;
}

// Every value of one step: the state before it and the five node outputs (leaves 5..9).
struct StepValues {
  WorldState before;
  std::vector<kernels::Tensor> outputs;  // add, relu, sum, b', v'

  // The tensor at leaf j < 10 (0 w, 1 b, 2 v, 5.. outputs); leaves 3, 4 (batch) are not inputs.
  const kernels::Tensor& Leaf(std::uint64_t j) const {
    if (j == 0) return before.w;
    if (j == 1) return before.b;
    if (j == 2) return before.v;
    return outputs[j - 5];
  }
};

void Run(kernels::Op op, const kernels::OpAttrs& attrs, std::vector<const kernels::Tensor*> in,
         std::vector<kernels::Tensor*> out) {
  std::unique_ptr<kernels::Backend> ref = kernels::MakeReferenceBackend();
  if (!ref->Run(op, attrs, in, out).ok()) std::abort();
}

StepValues RunStep(const WorldState& before, std::uint64_t step, const std::optional<Tamper>& tamper) {
  StepValues v{before, std::vector<kernels::Tensor>(5)};
  auto hit = [&](int node, int output) {
    if (!tamper || tamper->step != step || tamper->node != node || tamper->output != output) return;
    kernels::Tensor& t = v.outputs[static_cast<std::size_t>(node == 3 ? 3 + output : node)];
    t.data()[tamper->element % t.numel()] += 1000.0f;
  };
  Run(kernels::Op::kBiasAdd, {}, {&before.w, &before.b}, {&v.outputs[0]});
  hit(0, 0);
  Run(kernels::Op::kRelu, {}, {&v.outputs[0]}, {&v.outputs[1]});
  hit(1, 0);
  Run(kernels::Op::kBiasGrad, {}, {&v.outputs[1]}, {&v.outputs[2]});
  hit(2, 0);
  Run(kernels::Op::kSgdMomentum, SgdAttrs(), {&before.b, &v.outputs[2], &before.v}, {&v.outputs[3], &v.outputs[4]});
  hit(3, 0);
  hit(3, 1);
  return v;
}

}  // namespace

GameWorld::GameWorld(std::uint64_t checkpoint_interval, std::uint64_t segments)
    : k_(checkpoint_interval), segments_(segments) {
  auto node = [&](const char* name, kernels::Op op, std::uint64_t first_output_leaf) {
    proto::PinpointDescriptor d;
    proto::PinpointNode* n = d.mutable_node();
    n->set_name(name);
    n->set_op(static_cast<std::uint32_t>(op));
    n->set_first_output_leaf(first_output_leaf);
    return d;
  };
  auto input = [](proto::PinpointNode* n, std::uint64_t leaf, std::initializer_list<std::int64_t> dims) {
    proto::PinpointInput* in = n->add_inputs();
    in->set_leaf(leaf);
    SetShape(in->mutable_shape(), dims);
    SetShape(in->mutable_source_shape(), dims);
  };
  proto::PinpointDescriptor add = node("add", kernels::Op::kBiasAdd, 5);
  input(add.mutable_node(), 0, {kRows, kCols});
  input(add.mutable_node(), 1, {kCols});
  SetShape(add.mutable_node()->add_outputs(), {kRows, kCols});
  proto::PinpointDescriptor relu = node("relu", kernels::Op::kRelu, 6);
  input(relu.mutable_node(), 5, {kRows, kCols});
  SetShape(relu.mutable_node()->add_outputs(), {kRows, kCols});
  proto::PinpointDescriptor sum = node("sum", kernels::Op::kBiasGrad, 7);
  input(sum.mutable_node(), 6, {kRows, kCols});
  SetShape(sum.mutable_node()->add_outputs(), {kCols});
  proto::PinpointDescriptor sgd = node("sgd", kernels::Op::kSgdMomentum, 8);
  sgd.mutable_node()->set_lr(SgdAttrs().lr);
  sgd.mutable_node()->set_momentum(SgdAttrs().momentum);
  input(sgd.mutable_node(), 1, {kCols});
  input(sgd.mutable_node(), 7, {kCols});
  input(sgd.mutable_node(), 2, {kCols});
  SetShape(sgd.mutable_node()->add_outputs(), {kCols});
  SetShape(sgd.mutable_node()->add_outputs(), {kCols});
  proto::PinpointDescriptor layout;
  for (const char* name : {"w", "b", "v"}) layout.mutable_state()->add_names(name);
  for (std::uint64_t leaf : {6, 8, 9}) layout.mutable_state()->add_value_leaves(leaf);
  descriptors_ = {add, relu, sum, sgd, layout};
  for (const auto& d : descriptors_) descriptor_bytes_.push_back(Serialized(d));
}

proto::Params GameWorld::Params() {
  proto::Params params = TestParams();
  params.set_max_payload_bytes(48 << 10);
  return params;
}

proto::TaskSpec GameWorld::Spec() const {
  std::vector<Hash256> descriptor_hashes;
  for (const std::string& bytes : descriptor_bytes_) descriptor_hashes.push_back(consensus::Sha256(bytes));
  std::vector<Hash256> batch_leaves;
  for (std::uint64_t t = 0; t < total_steps(); ++t) {
    batch_leaves.push_back(consensus::BatchLeaf(TensorHash(Images(t)), TensorHash(Labels())));
  }
  proto::TaskSpec spec;
  spec.set_model_spec("game-world");
  spec.set_dataset_hash(std::string(32, '\xD1'));
  spec.set_hyperparameters_hash(std::string(32, '\xD2'));
  spec.set_total_steps(total_steps());
  spec.set_checkpoint_interval(k_);
  spec.set_segments_per_verification(1);
  spec.set_claim_window(10);
  spec.set_training_window(20);
  spec.set_graph_root(HashBytes(consensus::MerkleRoot(descriptor_hashes)));
  spec.set_batch_root(HashBytes(consensus::MerkleRoot(batch_leaves)));
  spec.set_step_leaf_count(kLeaves);
  spec.set_state_tensor_count(kStateTensors);
  spec.set_initial_state_hash(HashBytes(StateHash(Trajectory(std::nullopt)[0], 0)));
  return spec;
}

std::vector<WorldState> GameWorld::Trajectory(const std::optional<Tamper>& tamper) const {
  WorldState s{kernels::Tensor({kRows, kCols}), kernels::Tensor({kCols}), kernels::Tensor({kCols})};
  for (std::int64_t i = 0; i < s.w.numel(); ++i) s.w.data()[i] = static_cast<float>((i * 37) % 101 - 50) / 25.0f;
  for (std::int64_t i = 0; i < kCols; ++i) s.b.data()[i] = static_cast<float>((i * 13) % 11 - 5) / 10.0f;
  std::vector<WorldState> states = {s};
  for (std::uint64_t t = 0; t < total_steps(); ++t) {
    StepValues v = RunStep(s, t, tamper);
    s = WorldState{std::move(v.outputs[1]), std::move(v.outputs[3]), std::move(v.outputs[4])};
    states.push_back(s);
  }
  return states;
}

Hash256 GameWorld::StateHash(const WorldState& state, std::uint64_t step) const {
  const std::vector<std::string> names = {"w", "b", "v"};
  const std::vector<Hash256> hashes = {TensorHash(state.w), TensorHash(state.b), TensorHash(state.v)};
  return consensus::StateHashFromTensorHashes(step, names, hashes);
}

Hash256 GameWorld::Checkpoint(const std::vector<WorldState>& trajectory, std::uint64_t i) const {
  return StateHash(trajectory[i * k_], i * k_);
}

Hash256 GameWorld::ProofRoot(const std::vector<WorldState>& trajectory) const {
  std::vector<Hash256> checkpoints;
  for (std::uint64_t i = 0; i <= segments_; ++i) checkpoints.push_back(Checkpoint(trajectory, i));
  return consensus::MerkleRoot(checkpoints);
}

std::string GameWorld::CheckpointProof(const std::vector<WorldState>& trajectory, std::uint64_t i) const {
  std::vector<Hash256> checkpoints;
  for (std::uint64_t j = 0; j <= segments_; ++j) checkpoints.push_back(Checkpoint(trajectory, j));
  const std::vector<std::uint8_t> bytes =
      consensus::SerializeMerkleProof(*consensus::MerkleTree(checkpoints).Prove(i));
  return std::string(bytes.begin(), bytes.end());
}

std::vector<Hash256> GameWorld::Leaves(const WorldState& before, std::uint64_t step,
                                       const std::optional<Tamper>& tamper) const {
  const StepValues v = RunStep(before, step, tamper);
  const WorldState after{v.outputs[1], v.outputs[3], v.outputs[4]};
  std::vector<Hash256> leaves = {TensorHash(before.w), TensorHash(before.b), TensorHash(before.v),
                                 TensorHash(Images(step)), TensorHash(Labels())};
  for (const kernels::Tensor& t : v.outputs) leaves.push_back(TensorHash(t));
  leaves.push_back(StateHash(after, step + 1));
  return leaves;
}

int GameWorld::NodeOfLeaf(std::uint64_t leaf) { return leaf >= 8 ? 3 : static_cast<int>(leaf) - 5; }
int GameWorld::OutputOfLeaf(std::uint64_t leaf) { return leaf == 9 ? 1 : 0; }

proto::RefereeMove GameWorld::Evidence(const WorldState& before, std::uint64_t step, std::uint64_t leaf,
                                       const consensus::GameTree& tree, const std::optional<Tamper>& tamper) const {
  proto::RefereeMove move;
  auto descriptor_proof = [&](std::uint64_t index) {
    std::vector<Hash256> hashes;
    for (const std::string& bytes : descriptor_bytes_) hashes.push_back(consensus::Sha256(bytes));
    const std::vector<std::uint8_t> proof = consensus::SerializeMerkleProof(*consensus::MerkleTree(hashes).Prove(index));
    move.set_node_descriptor(descriptor_bytes_[index]);
    move.set_node_descriptor_proof(std::string(proof.begin(), proof.end()));
  };
  if (leaf < kStateTensors) {
    descriptor_proof(4);
    for (const kernels::Tensor* t : {&before.w, &before.b, &before.v}) move.add_state_tensor_hashes(HashBytes(TensorHash(*t)));
  } else if (leaf < kStateTensors + 2) {
    std::vector<Hash256> batch_leaves;
    for (std::uint64_t t = 0; t < total_steps(); ++t) {
      batch_leaves.push_back(consensus::BatchLeaf(TensorHash(Images(t)), TensorHash(Labels())));
    }
    move.set_images_hash(HashBytes(TensorHash(Images(step))));
    move.set_labels_hash(HashBytes(TensorHash(Labels())));
    const std::vector<std::uint8_t> proof = consensus::SerializeMerkleProof(*consensus::MerkleTree(batch_leaves).Prove(step));
    move.set_batch_proof(std::string(proof.begin(), proof.end()));
  } else if (leaf == kLeaves - 1) {
    descriptor_proof(4);
    for (std::uint64_t j : {6, 8, 9}) {
      proto::RefereeInput* input = move.add_inputs();
      input->set_hash(HashBytes(*tree.Node(0, j)));
      const std::vector<Hash256> siblings = *tree.Siblings(j, consensus::AgreedSubtreeHeight(j, leaf));
      for (const Hash256& h : siblings) input->add_siblings(HashBytes(h));
    }
  }
  (void)tamper;
  return move;
}

std::uint32_t GameWorld::TileDepth(std::uint64_t leaf) const {
  const proto::PinpointNode& n = Node(NodeOfLeaf(leaf));
  const proto::PinpointShape& shape = n.outputs(OutputOfLeaf(leaf));
  const std::vector<std::int64_t> dims(shape.dims().begin(), shape.dims().end());
  return consensus::GameTreeDepth(BlockGrid::Of(dims).block_count());
}

GameWorld::HiddenInPadding GameWorld::HideInPadding(const WorldState& before, std::uint64_t step) const {
  const StepValues v = RunStep(before, step, std::nullopt);
  const kernels::Tensor& relu = v.outputs[1];
  std::vector<Hash256> leaves = consensus::TensorBlockLeaves(relu.shape(), relu.values());
  leaves.resize(std::uint64_t{1} << consensus::GameTreeDepth(leaves.size()), Hash256{});
  leaves.back()[0] = 0x5A;  // a value nobody computes, where the honest tree has the all-zero hash
  consensus::GameTree tree(leaves);
  const Hash256 tensor = consensus::TensorHashFromBlockRoot(relu.shape(), tree.root());
  const std::vector<std::string> names = {"w", "b", "v"};
  const std::vector<Hash256> hashes = {tensor, TensorHash(v.outputs[3]), TensorHash(v.outputs[4])};
  return {std::move(tree), tensor, consensus::StateHashFromTensorHashes(step + 1, names, hashes)};
}

proto::TileMove GameWorld::TileMoveFromTree(const consensus::GameTree& tree, std::uint64_t leaf, std::uint32_t level,
                                            std::uint64_t index, bool first_round) const {
  proto::TileMove move;
  if (first_round) {
    const int node = NodeOfLeaf(leaf);
    std::vector<Hash256> hashes;
    for (const std::string& bytes : descriptor_bytes_) hashes.push_back(consensus::Sha256(bytes));
    const std::vector<std::uint8_t> proof =
        consensus::SerializeMerkleProof(*consensus::MerkleTree(hashes).Prove(static_cast<std::uint64_t>(node)));
    move.set_node_descriptor(descriptor_bytes_[static_cast<std::size_t>(node)]);
    move.set_node_descriptor_proof(std::string(proof.begin(), proof.end()));
    move.set_block_root(HashBytes(tree.root()));
    if (tree.depth() == 0) return move;
  }
  move.set_left(HashBytes(*tree.Node(level - 1, 2 * index)));
  move.set_right(HashBytes(*tree.Node(level - 1, 2 * index + 1)));
  return move;
}

proto::TileMove GameWorld::TileMoveFor(const WorldState& before, std::uint64_t step, std::uint64_t leaf,
                                       std::uint32_t level, std::uint64_t index, bool first_round,
                                       const std::optional<Tamper>& tamper) const {
  const StepValues v = RunStep(before, step, tamper);
  const kernels::Tensor& out = v.Leaf(leaf);
  const consensus::TensorBlockTree blocks(out.shape(), out.values());
  return TileMoveFromTree(*blocks.tree(), leaf, level, index, first_round);
}

Hash256 GameWorld::ChainHash(const WorldState& before, std::uint64_t step, std::uint64_t leaf, std::uint64_t tile,
                             std::uint64_t units, const std::optional<Tamper>& tamper) const {
  const StepValues v = RunStep(before, step, tamper);
  const proto::PinpointNode& node = Node(NodeOfLeaf(leaf));
  Result<kernels::TileKernel> kernel = TileKernelOf(node, static_cast<std::uint32_t>(OutputOfLeaf(leaf)), step);
  if (!kernel.ok()) std::abort();
  std::vector<kernels::TensorSource> sources;
  for (const proto::PinpointInput& in : node.inputs()) sources.emplace_back(v.Leaf(in.leaf()));
  std::vector<const kernels::TileSource*> src;
  for (const kernels::TensorSource& s : sources) src.push_back(&s);
  const GridRect rect = kernel->grid().BlockRect(tile);
  std::vector<float> state = kernel->Init(rect);
  if (!kernel->Advance(rect, src, 0, static_cast<std::int64_t>(units), state).ok()) std::abort();
  return consensus::ChainStateHash(units, state);
}

proto::RefereeMove GameWorld::TileEvidence(const WorldState& before, std::uint64_t step, std::uint64_t leaf,
                                           std::uint64_t tile, std::uint64_t lo, std::uint64_t hi,
                                           const consensus::GameTree& tree, const std::optional<Tamper>& tamper) const {
  const StepValues v = RunStep(before, step, tamper);
  const proto::PinpointNode& node = Node(NodeOfLeaf(leaf));
  Result<kernels::TileKernel> kernel = TileKernelOf(node, static_cast<std::uint32_t>(OutputOfLeaf(leaf)), step);
  if (!kernel.ok()) std::abort();
  proto::RefereeMove move;
  if (tile >= kernel->grid().block_count()) return move;
  const std::vector<std::vector<std::uint64_t>> blocks = BoxBlocks(*kernel, node, {tile, lo, hi});
  for (int i = 0; i < node.inputs_size(); ++i) {
    proto::TileInput* input = move.add_tile_inputs();
    const std::vector<std::uint64_t>& need = blocks[static_cast<std::size_t>(i)];
    if (need.empty()) continue;
    const std::uint64_t j = node.inputs(i).leaf();
    const kernels::Tensor& t = v.Leaf(j);
    const consensus::TensorBlockTree block_tree(t.shape(), t.values());
    input->set_block_root(HashBytes(block_tree.root()));
    const std::vector<Hash256> siblings = *tree.Siblings(j, consensus::AgreedSubtreeHeight(j, leaf));
    for (const Hash256& h : siblings) input->add_siblings(HashBytes(h));
    for (std::uint64_t b : need) input->add_blocks(FloatBytes(consensus::BlockValues(t.shape(), t.values(), b)));
    const std::vector<Hash256> proof = *block_tree.tree()->MultiSiblings(need);
    for (const Hash256& h : proof) input->add_proof(HashBytes(h));
  }
  if (lo > 0) {
    std::vector<kernels::TensorSource> sources;
    for (const proto::PinpointInput& in : node.inputs()) sources.emplace_back(v.Leaf(in.leaf()));
    std::vector<const kernels::TileSource*> src;
    for (const kernels::TensorSource& s : sources) src.push_back(&s);
    const GridRect rect = kernel->grid().BlockRect(tile);
    std::vector<float> state = kernel->Init(rect);
    if (!kernel->Advance(rect, src, 0, static_cast<std::int64_t>(lo), state).ok()) std::abort();
    move.set_lo_state(FloatBytes(state));
  }
  return move;
}

}  // namespace polnode::contracts::testing
