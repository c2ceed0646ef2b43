#include "referee.h"

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "polnode/consensus/game_tree.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/op.h"
#include "keys.h"
#include "move_fields.h"
#include "records.h"

namespace polnode::contracts {
namespace {

using consensus::Hash256;

// The agreed subtree node that holds leaf j < game.leaf(), from the descent transcript.
Result<Hash256> AgreedNode(const proto::DisputeGame& game, std::uint64_t j) {
  const std::uint64_t d = game.leaf();
  if (j >= d) return Status::InvalidArgument("leaf " + std::to_string(j) + " is not before the disputed leaf");
  const std::uint32_t height = consensus::AgreedSubtreeHeight(j, d);
  const std::uint32_t round = game.depth() - 1 - height;
  if (height >= game.depth() || round >= static_cast<std::uint32_t>(game.graph_rounds_size()) ||
      game.graph_rounds(static_cast<int>(round)).went_left()) {
    return Status::Internal("the descent transcript lacks the agreed node over leaf " + std::to_string(j));
  }
  return HashField(game.graph_rounds(static_cast<int>(round)).challenger_left(), "agreed node");
}

// Checks that `value` is leaf j of both parties' trees: it climbs through `siblings` to the agreed
// subtree node that holds j.
Status CheckAgreedLeaf(const proto::DisputeGame& game, std::uint64_t j, const Hash256& value,
                       const google::protobuf::RepeatedPtrField<std::string>& siblings) {
  POLNODE_ASSIGN_OR_RETURN(Hash256 agreed, AgreedNode(game, j));
  const std::uint32_t height = consensus::AgreedSubtreeHeight(j, game.leaf());
  if (static_cast<std::uint32_t>(siblings.size()) != height) {
    return Status::InvalidArgument("leaf " + std::to_string(j) + " needs " + std::to_string(height) + " siblings");
  }
  POLNODE_ASSIGN_OR_RETURN(std::vector<Hash256> path, SiblingsField(siblings));
  if (consensus::ClimbGameTree(value, j, path) != agreed) {
    return Status::InvalidArgument("the value given for leaf " + std::to_string(j) + " is not the agreed one");
  }
  return Status::Ok();
}

// The descriptor in the evidence, proven against the task's graph root; `layout` says whether the
// state layout (the last descriptor) or an operator node is expected.
Result<proto::PinpointDescriptor> ProvenDescriptor(const proto::TaskSpec& spec, const proto::RefereeMove& evidence,
                                                   bool layout) {
  proto::PinpointDescriptor descriptor;
  if (!descriptor.ParseFromString(evidence.node_descriptor()) ||
      EncodeRecord(descriptor) != evidence.node_descriptor()) {
    return Status::InvalidArgument("node_descriptor is not a canonical PinpointDescriptor");
  }
  POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof proof, ProofField(evidence.node_descriptor_proof(), "node_descriptor_proof"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 root, HashField(spec.graph_root(), "graph_root"));
  if (!consensus::VerifyMerkleProof(root, consensus::Sha256(evidence.node_descriptor()), proof).ok()) {
    return Status::InvalidArgument("node_descriptor is not in the task's graph");
  }
  const bool is_last = proof.leaf_index + 1 == proof.leaf_count;
  if (layout && (!is_last || !descriptor.has_state())) {
    return Status::InvalidArgument("the state layout is the graph's last descriptor");
  }
  if (!layout && (is_last || !descriptor.has_node())) return Status::InvalidArgument("expected an operator node");
  return descriptor;
}

Result<std::vector<std::string>> LayoutNames(const proto::TaskSpec& spec, const proto::PinpointStateLayout& layout) {
  if (layout.names_size() != static_cast<int>(spec.state_tensor_count()) ||
      layout.value_leaves_size() != layout.names_size()) {
    return Status::InvalidArgument("the state layout does not match the task's state tensor count");
  }
  return std::vector<std::string>(layout.names().begin(), layout.names().end());
}

Result<kernels::Shape> ShapeOf(const proto::PinpointShape& shape) {
  if (shape.dims_size() < 1 || shape.dims_size() > 8) return Status::InvalidArgument("a shape needs rank 1..8");
  kernels::Shape dims;
  std::int64_t elements = 1;
  for (std::int64_t d : shape.dims()) {
    if (d < 1 || d > kMaxRefereeElements || elements > kMaxRefereeElements / d) {
      return Status::InvalidArgument("a shape is empty or too large for the referee");
    }
    elements *= d;
    dims.push_back(d);
  }
  return dims;
}

Result<Hash256> StateInputLeaf(const proto::TaskSpec& spec, const proto::DisputeGame& game,
                               const proto::RefereeMove& evidence) {
  POLNODE_ASSIGN_OR_RETURN(proto::PinpointDescriptor descriptor, ProvenDescriptor(spec, evidence, true));
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::string> names, LayoutNames(spec, descriptor.state()));
  if (evidence.state_tensor_hashes_size() != static_cast<int>(names.size())) {
    return Status::InvalidArgument("state_tensor_hashes must list every state tensor");
  }
  std::vector<Hash256> hashes;
  for (const std::string& h : evidence.state_tensor_hashes()) {
    POLNODE_ASSIGN_OR_RETURN(Hash256 hash, HashField(h, "state tensor hash"));
    hashes.push_back(hash);
  }
  const std::uint64_t step = game.first_step() + game.lo();
  if (ToBytes(consensus::StateHashFromTensorHashes(step, names, hashes)) != game.lo_hash()) {
    return Status::InvalidArgument("state_tensor_hashes do not give the agreed state hash");
  }
  return hashes[game.leaf()];
}

Result<Hash256> BatchInputLeaf(const proto::TaskSpec& spec, const proto::DisputeGame& game,
                               const proto::RefereeMove& evidence) {
  POLNODE_ASSIGN_OR_RETURN(Hash256 images, HashField(evidence.images_hash(), "images_hash"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 labels, HashField(evidence.labels_hash(), "labels_hash"));
  POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof proof, ProofField(evidence.batch_proof(), "batch_proof"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 root, HashField(spec.batch_root(), "batch_root"));
  const std::uint64_t step = game.first_step() + game.lo();
  if (proof.leaf_index != step || proof.leaf_count != spec.total_steps() ||
      !consensus::VerifyMerkleProof(root, consensus::BatchLeaf(images, labels), proof).ok()) {
    return Status::InvalidArgument("batch_proof does not prove this step's batch against the task's batch_root");
  }
  return game.leaf() == spec.state_tensor_count() ? images : labels;
}

Result<Hash256> StateAfterLeaf(const proto::TaskSpec& spec, const proto::DisputeGame& game,
                               const proto::RefereeMove& evidence) {
  POLNODE_ASSIGN_OR_RETURN(proto::PinpointDescriptor descriptor, ProvenDescriptor(spec, evidence, true));
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::string> names, LayoutNames(spec, descriptor.state()));
  if (evidence.inputs_size() != static_cast<int>(names.size())) {
    return Status::InvalidArgument("inputs must give every state tensor's hash");
  }
  std::vector<Hash256> hashes;
  for (int i = 0; i < evidence.inputs_size(); ++i) {
    const proto::RefereeInput& input = evidence.inputs(i);
    POLNODE_ASSIGN_OR_RETURN(Hash256 hash, HashField(input.hash(), "input hash"));
    POLNODE_RETURN_IF_ERROR(CheckAgreedLeaf(game, descriptor.state().value_leaves(i), hash, input.siblings()));
    hashes.push_back(hash);
  }
  return consensus::StateHashFromTensorHashes(game.first_step() + game.lo() + 1, names, hashes);
}

kernels::OpAttrs AttrsOf(const proto::PinpointNode& node, std::uint64_t step) {
  kernels::OpAttrs attrs;
  attrs.lr = node.lr();
  attrs.momentum = node.momentum();
  attrs.weight_decay = node.weight_decay();
  attrs.beta1 = node.beta1();
  attrs.beta2 = node.beta2();
  attrs.eps = node.eps();
  attrs.pool_input_h = node.pool_input_h();
  attrs.pool_input_w = node.pool_input_w();
  if (static_cast<kernels::Op>(node.op()) == kernels::Op::kAdamW) {
    // As solver::AttrsForStep: the step that starts after `step` completed steps is step + 1.
    attrs.bias_correction1 = kernels::AdamBiasCorrection(attrs.beta1, static_cast<std::int64_t>(step) + 1);
    attrs.bias_correction2 = kernels::AdamBiasCorrection(attrs.beta2, static_cast<std::int64_t>(step) + 1);
  }
  return attrs;
}

Result<Hash256> NodeOutputLeaf(const proto::TaskSpec& spec, const proto::DisputeGame& game,
                               const proto::RefereeMove& evidence) {
  POLNODE_ASSIGN_OR_RETURN(proto::PinpointDescriptor descriptor, ProvenDescriptor(spec, evidence, false));
  const proto::PinpointNode& node = descriptor.node();
  if (game.leaf() < node.first_output_leaf() ||
      game.leaf() - node.first_output_leaf() >= static_cast<std::uint64_t>(node.outputs_size())) {
    return Status::InvalidArgument("the descriptor's node does not write the disputed leaf");
  }
  if (node.op() >= static_cast<std::uint32_t>(kernels::kNumOps)) return Status::InvalidArgument("unknown operator");
  const kernels::Op op = static_cast<kernels::Op>(node.op());
  if (node.inputs_size() != kernels::NumInputs(op) || node.outputs_size() != kernels::NumOutputs(op) ||
      evidence.inputs_size() != node.inputs_size()) {
    return Status::InvalidArgument("the evidence must give each of the operator's inputs");
  }
  std::vector<kernels::Tensor> inputs;
  inputs.reserve(static_cast<std::size_t>(node.inputs_size()));
  for (int i = 0; i < node.inputs_size(); ++i) {
    const proto::PinpointInput& ref = node.inputs(i);
    const std::string& bytes = evidence.inputs(i).tensor();
    POLNODE_ASSIGN_OR_RETURN(kernels::Shape source_shape, ShapeOf(ref.source_shape()));
    POLNODE_ASSIGN_OR_RETURN(kernels::Shape read_shape, ShapeOf(ref.shape()));
    kernels::Tensor tensor(source_shape);
    if (bytes.size() != static_cast<std::size_t>(tensor.numel()) * sizeof(float)) {
      return Status::InvalidArgument("input " + std::to_string(i) + " has the wrong number of elements");
    }
    std::memcpy(tensor.data(), bytes.data(), bytes.size());
    const Hash256 hash = consensus::TensorHashOf(source_shape, tensor.values());
    POLNODE_RETURN_IF_ERROR(CheckAgreedLeaf(game, ref.leaf(), hash, evidence.inputs(i).siblings()));
    POLNODE_RETURN_IF_ERROR(tensor.Reshape(read_shape));
    inputs.push_back(std::move(tensor));
  }
  std::vector<const kernels::Tensor*> in;
  for (const kernels::Tensor& t : inputs) in.push_back(&t);
  std::vector<kernels::Tensor> outputs(static_cast<std::size_t>(node.outputs_size()));
  std::vector<kernels::Tensor*> out;
  for (kernels::Tensor& t : outputs) out.push_back(&t);
  const kernels::OpAttrs attrs = AttrsOf(node, game.first_step() + game.lo());
  // The descriptor is the task's, but the output size is checked before any work is done.
  POLNODE_ASSIGN_OR_RETURN(std::vector<kernels::Shape> shapes, kernels::InferOutputShapes(op, attrs, in));
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    POLNODE_ASSIGN_OR_RETURN(kernels::Shape want, ShapeOf(node.outputs(static_cast<int>(k))));
    if (shapes[k] != want) return Status::InvalidArgument("the inputs do not give the descriptor's output shapes");
  }
  std::unique_ptr<kernels::Backend> reference = kernels::MakeReferenceBackend();
  POLNODE_RETURN_IF_ERROR(reference->Run(op, attrs, in, out));
  const kernels::Tensor& result = outputs[game.leaf() - node.first_output_leaf()];
  return consensus::TensorHashOf(result.shape(), result.values());
}

}  // namespace

Result<Hash256> RefereeLeaf(const proto::TaskSpec& spec, const proto::DisputeGame& game,
                            const proto::RefereeMove& evidence) {
  const std::uint64_t d = game.leaf();
  const std::uint64_t s = spec.state_tensor_count();
  const std::uint64_t n = spec.step_leaf_count();
  if (d >= n) return Hash256{};
  if (d < s) return StateInputLeaf(spec, game, evidence);
  if (d == s || d == s + 1) return BatchInputLeaf(spec, game, evidence);
  if (d == n - 1) return StateAfterLeaf(spec, game, evidence);
  return NodeOutputLeaf(spec, game, evidence);
}

}  // namespace polnode::contracts
