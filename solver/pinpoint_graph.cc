#include "polnode/solver/pinpoint_graph.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>

#include "polnode/consensus/pinpoint.h"
#include "polnode/solver/train_state.h"

namespace polnode::solver {
namespace {

Status BadNode(const StepNode& n, const std::string& why) {
  return Status::InvalidArgument("pinpoint graph node " + std::to_string(n.index) + " (" + n.name +
                                 "): " + why);
}

proto::PinpointShape ToProto(const kernels::Shape& shape) {
  proto::PinpointShape p;
  for (std::int64_t d : shape) p.add_dims(d);
  return p;
}

}  // namespace

Status CheckPinpointGraph(const StepGraph& graph) {
  if (graph.loss_node < 0) return Status::InvalidArgument("pinpoint graph: not a training graph");
  const int num_state = static_cast<int>(graph.state_names.size());
  if (graph.state_shapes.size() != graph.state_names.size()) {
    return Status::InvalidArgument("pinpoint graph: state names and shapes differ in count");
  }
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const StepNode& n = graph.nodes[i];
    if (n.index != static_cast<int>(i)) return BadNode(n, "index does not match its position");
    if (n.state_writes.size() != n.output_shapes.size()) {
      return BadNode(n, "state writes and outputs differ in count");
    }
    for (const TensorRef& r : n.inputs) {
      bool ok = true;
      if (r.source == SourceKind::kState) {
        ok = r.index >= 0 && r.index < num_state;
      } else if (r.source == SourceKind::kNode) {
        ok = r.index >= 0 && r.index < n.index && r.output >= 0 &&
             r.output < static_cast<int>(graph.nodes[static_cast<std::size_t>(r.index)].output_shapes.size());
      }
      if (!ok) return BadNode(n, "reads a value that is not produced before it");
    }
    for (int w : n.state_writes) {
      if (w < -1 || w >= num_state) return BadNode(n, "writes a state tensor out of range");
    }
  }
  return Status::Ok();
}

StepLeafLayout::StepLeafLayout(const StepGraph& graph) : state_count_(graph.state_names.size()) {
  std::uint64_t next = state_count_ + 2;
  for (const StepNode& n : graph.nodes) {
    first_output_leaf_.push_back(next);
    next += n.output_shapes.size();
  }
  leaf_count_ = next + 1;
  value_leaves_.resize(state_count_);
  for (std::uint64_t i = 0; i < state_count_; ++i) value_leaves_[i] = i;
  // Nodes run in order, so a tensor written twice holds the later write after the step.
  for (const StepNode& n : graph.nodes) {
    for (std::size_t k = 0; k < n.state_writes.size(); ++k) {
      if (n.state_writes[k] >= 0) {
        value_leaves_[static_cast<std::size_t>(n.state_writes[k])] = first_output_leaf(n.index) + k;
      }
    }
  }
}

std::uint64_t StepLeafLayout::LeafOf(const TensorRef& ref) const {
  switch (ref.source) {
    case SourceKind::kState:
      return static_cast<std::uint64_t>(ref.index);
    case SourceKind::kBatchImages:
      return images_leaf();
    case SourceKind::kBatchLabels:
      return labels_leaf();
    case SourceKind::kNode:
      return first_output_leaf(ref.index) + static_cast<std::uint64_t>(ref.output);
  }
  return 0;
}

LeafInfo StepLeafLayout::Describe(std::uint64_t leaf) const {
  if (leaf < state_count_) return {LeafKind::kStateTensor, static_cast<int>(leaf), 0};
  if (leaf == images_leaf()) return {LeafKind::kImages, 0, 0};
  if (leaf == labels_leaf()) return {LeafKind::kLabels, 0, 0};
  if (leaf == state_hash_leaf()) return {LeafKind::kStateHash, 0, 0};
  if (leaf > state_hash_leaf()) return {LeafKind::kPadding, 0, 0};
  // The node whose outputs start at or before `leaf`: the last first_output_leaf <= leaf.
  const auto it = std::upper_bound(first_output_leaf_.begin(), first_output_leaf_.end(), leaf) - 1;
  return {LeafKind::kNodeOutput, static_cast<int>(it - first_output_leaf_.begin()),
          static_cast<int>(leaf - *it)};
}

std::uint64_t StepLeafCount(const StepGraph& graph) { return StepLeafLayout(graph).leaf_count(); }

Result<std::vector<proto::PinpointDescriptor>> PinpointDescriptors(const StepGraph& graph) {
  POLNODE_RETURN_IF_ERROR(CheckPinpointGraph(graph));
  const StepLeafLayout layout(graph);
  std::vector<proto::PinpointDescriptor> out;
  out.reserve(graph.nodes.size() + 1);
  for (const StepNode& n : graph.nodes) {
    proto::PinpointNode& p = *out.emplace_back().mutable_node();
    p.set_name(n.name);
    p.set_op(static_cast<std::uint32_t>(n.op));
    // Only the step-independent attributes: the referee derives the scheduled lr and kAdamW's
    // bias corrections from the disputed step, so one descriptor serves every step.
    p.set_lr(n.attrs.lr);
    p.set_momentum(n.attrs.momentum);
    p.set_weight_decay(n.attrs.weight_decay);
    p.set_beta1(n.attrs.beta1);
    p.set_beta2(n.attrs.beta2);
    p.set_eps(n.attrs.eps);
    p.set_pool_input_h(n.attrs.pool_input_h);
    p.set_pool_input_w(n.attrs.pool_input_w);
    p.set_lr_warmup_steps(n.attrs.lr_warmup_steps);
    p.set_lr_decay_steps(n.attrs.lr_decay_steps);
    p.set_min_lr(n.attrs.min_lr);
    p.set_max_norm(n.attrs.max_norm);
    for (const TensorRef& r : n.inputs) {
      proto::PinpointInput& in = *p.add_inputs();
      in.set_leaf(layout.LeafOf(r));
      *in.mutable_shape() = ToProto(RefShape(graph, r));
      // The leaf's tensor hash names the source's own shape; a viewed input is read under another.
      TensorRef plain = r;
      plain.view.clear();
      *in.mutable_source_shape() = ToProto(RefShape(graph, plain));
    }
    for (const kernels::Shape& s : n.output_shapes) *p.add_outputs() = ToProto(s);
    p.set_first_output_leaf(layout.first_output_leaf(n.index));
    // The scale only on the nodes that read it, so no other descriptor's bytes change.
    if (n.op == kernels::Op::kCausalSoftmax || n.op == kernels::Op::kCausalSoftmaxGrad) p.set_scale(n.attrs.scale);
    p.set_num_embeddings(n.attrs.num_embeddings);
  }
  proto::PinpointStateLayout& state = *out.emplace_back().mutable_state();
  for (const std::string& name : graph.state_names) state.add_names(name);
  for (std::uint64_t leaf : layout.value_leaves()) state.add_value_leaves(leaf);
  return out;
}

std::string DescriptorBytes(const proto::PinpointDescriptor& descriptor) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    // Serializing a message of scalars, bytes and sub-messages into a string cannot fail.
    static_cast<void>(descriptor.SerializeToCodedStream(&coded));
  }
  return out;
}

consensus::Hash256 DescriptorHash(const proto::PinpointDescriptor& descriptor) {
  return consensus::Sha256(DescriptorBytes(descriptor));
}

consensus::Hash256 GraphRoot(std::span<const proto::PinpointDescriptor> descriptors) {
  std::vector<consensus::Hash256> hashes;
  hashes.reserve(descriptors.size());
  for (const proto::PinpointDescriptor& d : descriptors) hashes.push_back(DescriptorHash(d));
  return consensus::MerkleRoot(hashes);
}

Result<BatchTree> BatchTree::Build(TaskStepper& stepper) {
  const std::int64_t steps = stepper.task().steps;
  std::vector<consensus::Hash256> images_hashes, labels_hashes, leaves;
  images_hashes.reserve(static_cast<std::size_t>(steps));
  labels_hashes.reserve(static_cast<std::size_t>(steps));
  leaves.reserve(static_cast<std::size_t>(steps));
  kernels::Tensor images, labels;
  for (std::int64_t t = 0; t < steps; ++t) {
    POLNODE_RETURN_IF_ERROR(stepper.Batch(t, images, labels));
    images_hashes.push_back(TensorHash(images));
    labels_hashes.push_back(TensorHash(labels));
    leaves.push_back(consensus::BatchLeaf(images_hashes.back(), labels_hashes.back()));
  }
  consensus::MerkleTree tree(leaves);
  return BatchTree(std::move(images_hashes), std::move(labels_hashes), std::move(tree));
}

Result<BatchEvidence> BatchTree::Prove(std::int64_t step) const {
  if (step < 0 || step >= steps()) {
    return Status::OutOfRange("no batch for step " + std::to_string(step) + " of " + std::to_string(steps()));
  }
  const std::size_t t = static_cast<std::size_t>(step);
  POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof proof, tree_.Prove(t));
  return BatchEvidence{images_[t], labels_[t], std::move(proof)};
}

Result<consensus::Hash256> BatchRoot(const TaskSpec& task, const ImageDataset& data) {
  POLNODE_ASSIGN_OR_RETURN(TaskStepper stepper, TaskStepper::Create(task, data));
  POLNODE_ASSIGN_OR_RETURN(BatchTree tree, BatchTree::Build(stepper));
  return tree.root();
}

}  // namespace polnode::solver
