#include "game_world.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstring>

#include "polnode/testing/chain_harness.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/op.h"

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

// Runs the two nodes; returns {add, relu} outputs.
std::pair<kernels::Tensor, kernels::Tensor> RunStep(const WorldState& before, std::uint64_t step,
                                                    const std::optional<Tamper>& tamper) {
  std::unique_ptr<kernels::Backend> ref = kernels::MakeReferenceBackend();
  kernels::Tensor add, relu;
  const kernels::Tensor* in_add[] = {&before.w, &before.b};
  kernels::Tensor* out_add[] = {&add};
  if (!ref->Run(kernels::Op::kBiasAdd, {}, in_add, out_add).ok()) std::abort();
  if (tamper && tamper->step == step && tamper->node == 0) add.data()[0] += 1.0f;
  const kernels::Tensor* in_relu[] = {&add};
  kernels::Tensor* out_relu[] = {&relu};
  if (!ref->Run(kernels::Op::kRelu, {}, in_relu, out_relu).ok()) std::abort();
  if (tamper && tamper->step == step && tamper->node == 1) relu.data()[0] += 1.0f;
  return {std::move(add), std::move(relu)};
}

}  // namespace


GameWorld::GameWorld(std::uint64_t checkpoint_interval, std::uint64_t segments)
    : k_(checkpoint_interval), segments_(segments) {
  proto::PinpointDescriptor add;
  proto::PinpointNode* n0 = add.mutable_node();
  n0->set_name("add");
  n0->set_op(static_cast<std::uint32_t>(kernels::Op::kBiasAdd));
  proto::PinpointInput* w = n0->add_inputs();
  w->set_leaf(0);
  SetShape(w->mutable_shape(), {2, 2});
  SetShape(w->mutable_source_shape(), {2, 2});
  proto::PinpointInput* b = n0->add_inputs();
  b->set_leaf(1);
  SetShape(b->mutable_shape(), {2});
  SetShape(b->mutable_source_shape(), {2});
  SetShape(n0->add_outputs(), {2, 2});
  n0->set_first_output_leaf(4);
  proto::PinpointDescriptor relu;
  proto::PinpointNode* n1 = relu.mutable_node();
  n1->set_name("relu");
  n1->set_op(static_cast<std::uint32_t>(kernels::Op::kRelu));
  proto::PinpointInput* x = n1->add_inputs();
  x->set_leaf(4);
  SetShape(x->mutable_shape(), {2, 2});
  SetShape(x->mutable_source_shape(), {2, 2});
  SetShape(n1->add_outputs(), {2, 2});
  n1->set_first_output_leaf(5);
  proto::PinpointDescriptor layout;
  layout.mutable_state()->add_names("w");
  layout.mutable_state()->add_names("b");
  layout.mutable_state()->add_value_leaves(5);
  layout.mutable_state()->add_value_leaves(1);
  descriptors_ = {add, relu, layout};
  for (const auto& d : descriptors_) descriptor_bytes_.push_back(Serialized(d));
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
  WorldState s{*kernels::Tensor::FromValues({2, 2}, {0.5f, -1.0f, 2.0f, -3.0f}),
               *kernels::Tensor::FromValues({2}, {0.25f, 0.75f})};
  std::vector<WorldState> states = {s};
  for (std::uint64_t t = 0; t < total_steps(); ++t) {
    auto [add, relu] = RunStep(s, t, tamper);
    (void)add;
    s.w = std::move(relu);
    states.push_back(s);
  }
  return states;
}

Hash256 GameWorld::StateHash(const WorldState& state, std::uint64_t step) const {
  const std::vector<std::string> names = {"w", "b"};
  const std::vector<Hash256> hashes = {TensorHash(state.w), TensorHash(state.b)};
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
  auto [add, relu] = RunStep(before, step, tamper);
  const WorldState after{relu, before.b};
  return {TensorHash(before.w), TensorHash(before.b), TensorHash(Images(step)), TensorHash(Labels()),
          TensorHash(add),      TensorHash(relu),     StateHash(after, step + 1)};
}

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
  auto add_input = [&](std::uint64_t input_leaf, const kernels::Tensor* tensor) {
    proto::RefereeInput* input = move.add_inputs();
    if (tensor != nullptr) {
      input->set_tensor(std::string(reinterpret_cast<const char*>(tensor->data()),
                                    static_cast<std::size_t>(tensor->numel()) * sizeof(float)));
    } else {
      input->set_hash(HashBytes(*tree.Node(0, input_leaf)));
    }
    const std::vector<Hash256> siblings = *tree.Siblings(input_leaf, consensus::AgreedSubtreeHeight(input_leaf, leaf));
    for (const Hash256& s : siblings) input->add_siblings(HashBytes(s));
  };
  auto [add, relu] = RunStep(before, step, tamper);
  if (leaf < kStateTensors) {
    descriptor_proof(2);
    move.add_state_tensor_hashes(HashBytes(TensorHash(before.w)));
    move.add_state_tensor_hashes(HashBytes(TensorHash(before.b)));
  } else if (leaf < kStateTensors + 2) {
    std::vector<Hash256> batch_leaves;
    for (std::uint64_t t = 0; t < total_steps(); ++t) {
      batch_leaves.push_back(consensus::BatchLeaf(TensorHash(Images(t)), TensorHash(Labels())));
    }
    move.set_images_hash(HashBytes(TensorHash(Images(step))));
    move.set_labels_hash(HashBytes(TensorHash(Labels())));
    const std::vector<std::uint8_t> proof = consensus::SerializeMerkleProof(*consensus::MerkleTree(batch_leaves).Prove(step));
    move.set_batch_proof(std::string(proof.begin(), proof.end()));
  } else if (leaf == 4) {
    descriptor_proof(0);
    add_input(0, &before.w);
    add_input(1, &before.b);
  } else if (leaf == 5) {
    descriptor_proof(1);
    add_input(4, &add);
  } else if (leaf == 6) {
    descriptor_proof(2);
    add_input(5, nullptr);
    add_input(1, nullptr);
  }
  return move;
}

}  // namespace polnode::contracts::testing
