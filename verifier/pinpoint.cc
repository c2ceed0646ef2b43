#include "polnode/verifier/pinpoint.h"

#include <bit>
#include <string>
#include <utility>

#include "polnode/consensus/pinpoint.h"

namespace polnode::verifier {
namespace {

static_assert(std::endian::native == std::endian::little,
              "referee inputs post float storage directly as little-endian IEEE-754 bytes");

std::string HashBytes(const consensus::Hash256& h) { return std::string(h.begin(), h.end()); }

std::string TensorBytes(const kernels::Tensor& t) {
  return std::string(reinterpret_cast<const char*>(t.data()),
                     static_cast<std::size_t>(t.numel()) * sizeof(float));
}

std::string ProofBytes(const consensus::MerkleProof& proof) {
  const std::vector<std::uint8_t> bytes = consensus::SerializeMerkleProof(proof);
  return std::string(bytes.begin(), bytes.end());
}

// The path from leaf j to the subtree both parties agree on once the descent stands at leaf d.
Status AddSiblings(const consensus::GameTree& tree, std::uint64_t j, std::uint64_t d,
                   proto::RefereeInput& input) {
  POLNODE_ASSIGN_OR_RETURN(std::vector<consensus::Hash256> siblings,
                           tree.Siblings(j, consensus::AgreedSubtreeHeight(j, d)));
  for (const consensus::Hash256& s : siblings) input.add_siblings(HashBytes(s));
  return Status::Ok();
}

}  // namespace

PinpointResponder::PinpointResponder(solver::TaskStepper stepper, kernels::Backend& backend,
                                     solver::TrainState start,
                                     std::vector<proto::PinpointDescriptor> descriptors,
                                     consensus::MerkleTree graph_tree,
                                     std::unique_ptr<solver::TamperingBackend> tamper)
    : stepper_(std::move(stepper)),
      backend_(tamper ? tamper.get() : &backend),
      tamper_(std::move(tamper)),
      start_(std::move(start)),
      working_(start_),
      layout_(stepper_.graph()),
      descriptors_(std::move(descriptors)),
      graph_tree_(std::move(graph_tree)) {}

Result<PinpointResponder> PinpointResponder::Create(const solver::TaskSpec& task,
                                                    const solver::ImageDataset& data,
                                                    kernels::Backend& backend, solver::TrainState start,
                                                    const ResponderOptions& options) {
  POLNODE_ASSIGN_OR_RETURN(solver::TaskStepper stepper, solver::TaskStepper::Create(task, data));
  const solver::StepGraph& graph = stepper.graph();
  if (start.step < 0 || start.step > task.steps) {
    return Status::InvalidArgument("start state at step " + std::to_string(start.step) +
                                   " is outside the task's " + std::to_string(task.steps) + " steps");
  }
  if (start.tensors.size() != graph.state_names.size()) {
    return Status::InvalidArgument("start state has " + std::to_string(start.tensors.size()) +
                                   " tensors, the task's state " + std::to_string(graph.state_names.size()));
  }
  for (std::size_t i = 0; i < start.tensors.size(); ++i) {
    if (start.tensors[i].name != graph.state_names[i] ||
        start.tensors[i].tensor.shape() != graph.state_shapes[i]) {
      return Status::InvalidArgument("start state tensor " + std::to_string(i) + " (" +
                                     start.tensors[i].name + ") differs from the task's " +
                                     graph.state_names[i]);
    }
  }
  POLNODE_ASSIGN_OR_RETURN(std::vector<proto::PinpointDescriptor> descriptors,
                           solver::PinpointDescriptors(graph));
  std::vector<consensus::Hash256> hashes;
  for (const proto::PinpointDescriptor& d : descriptors) hashes.push_back(solver::DescriptorHash(d));
  consensus::MerkleTree graph_tree(hashes);
  std::unique_ptr<solver::TamperingBackend> tamper;
  if (options.tamper) {
    tamper = std::make_unique<solver::TamperingBackend>(backend, graph.nodes.size(), *options.tamper);
  }
  return PinpointResponder(std::move(stepper), backend, std::move(start), std::move(descriptors),
                           std::move(graph_tree), std::move(tamper));
}

Status PinpointResponder::CheckStep(std::int64_t steps, bool need_step_after) const {
  const std::int64_t last = stepper_.task().steps - (need_step_after ? 1 : 0);
  if (steps < 0 || steps > last - start_.step) {
    return Status::OutOfRange("step " + std::to_string(steps) + " of a segment from step " +
                              std::to_string(start_.step) + " is outside the task's " +
                              std::to_string(stepper_.task().steps) + " steps");
  }
  return Status::Ok();
}

Status PinpointResponder::Advance(std::int64_t steps) {
  const std::int64_t target = start_.step + steps;
  if (working_.step > target) working_ = start_;
  while (working_.step < target) {
    if (tamper_) tamper_->Seek(working_.step);
    Result<float> loss = stepper_.Step(working_, *backend_);
    if (!loss.ok()) {
      // A failed step leaves the state half-updated; the next call starts over from the start.
      working_ = start_;
      return loss.status();
    }
  }
  return Status::Ok();
}

Result<consensus::Hash256> PinpointResponder::StateHashAt(std::int64_t steps) {
  POLNODE_RETURN_IF_ERROR(CheckStep(steps, false));
  POLNODE_RETURN_IF_ERROR(Advance(steps));
  return solver::StateHash(working_);
}

Result<StepLeaves> PinpointResponder::RunObservedStep(int capture_node,
                                                      std::vector<kernels::Tensor>* captured) {
  const solver::StepGraph& graph = stepper_.graph();
  const std::int64_t step = working_.step;
  if (capture_node < 0 && last_leaves_ && last_leaves_step_ == step) return *last_leaves_;
  std::vector<consensus::Hash256> leaves(layout_.leaf_count());
  for (std::size_t i = 0; i < working_.tensors.size(); ++i)
    leaves[i] = solver::TensorHash(working_.tensors[i].tensor);
  POLNODE_RETURN_IF_ERROR(stepper_.Batch(step, images_, labels_));
  leaves[layout_.images_leaf()] = solver::TensorHash(images_);
  leaves[layout_.labels_leaf()] = solver::TensorHash(labels_);

  const solver::StepNode* target =
      capture_node >= 0 ? &graph.nodes[static_cast<std::size_t>(capture_node)] : nullptr;
  if (target != nullptr) {
    // State and batch inputs are copied before the step, since the optimizer overwrites the state.
    captured->assign(target->inputs.size(), kernels::Tensor());
    for (std::size_t j = 0; j < target->inputs.size(); ++j) {
      const solver::TensorRef& r = target->inputs[j];
      if (r.source == solver::SourceKind::kState) {
        (*captured)[j] = working_.tensors[static_cast<std::size_t>(r.index)].tensor;
      } else if (r.source == solver::SourceKind::kBatchImages) {
        (*captured)[j] = images_;
      } else if (r.source == solver::SourceKind::kBatchLabels) {
        (*captured)[j] = labels_;
      }
    }
  }
  solver::NodeObserver observer = [&](const solver::StepNode& node,
                                      std::span<const kernels::Tensor* const> outs) -> Status {
    const std::uint64_t first = layout_.first_output_leaf(node.index);
    for (std::size_t k = 0; k < outs.size(); ++k) {
      leaves[first + k] = solver::TensorHash(*outs[k]);
      if (target == nullptr || node.index >= target->index) continue;
      // The runner reuses this storage later, so the target's inputs are copied now.
      for (std::size_t j = 0; j < target->inputs.size(); ++j) {
        const solver::TensorRef& r = target->inputs[j];
        if (r.source == solver::SourceKind::kNode && r.index == node.index &&
            r.output == static_cast<int>(k)) {
          (*captured)[j] = *outs[k];
        }
      }
    }
    return Status::Ok();
  };
  // The step runs on a copy, so that working_ stays before it: a game asks about one step many
  // times (every descent round, then the referee), and none of those should replay the segment.
  scratch_ = working_;
  if (tamper_) tamper_->Seek(step);
  POLNODE_RETURN_IF_ERROR(stepper_.Step(scratch_, *backend_, &observer).status());
  // The state after the step is assembled from the value leaves, exactly as the referee rules on
  // leaf N - 1; equal to StateHash(scratch_) without hashing the state a second time.
  std::vector<consensus::Hash256> after;
  after.reserve(layout_.value_leaves().size());
  for (std::uint64_t leaf : layout_.value_leaves()) after.push_back(leaves[leaf]);
  leaves[layout_.state_hash_leaf()] =
      consensus::StateHashFromTensorHashes(static_cast<std::uint64_t>(step + 1), graph.state_names, after);
  consensus::GameTree tree(leaves);
  last_leaves_.emplace(StepLeaves{std::move(leaves), std::move(tree)});
  last_leaves_step_ = step;
  return *last_leaves_;
}

Result<StepLeaves> PinpointResponder::LeavesOfStep(std::int64_t steps) {
  POLNODE_RETURN_IF_ERROR(CheckStep(steps, true));
  POLNODE_RETURN_IF_ERROR(Advance(steps));
  return RunObservedStep(-1, nullptr);
}

void PinpointResponder::SetDescriptor(std::size_t index, proto::RefereeMove& move) const {
  move.set_node_descriptor(solver::DescriptorBytes(descriptors_[index]));
  // Every index is a leaf of the graph tree, so Prove cannot fail.
  move.set_node_descriptor_proof(ProofBytes(graph_tree_.Prove(index).value()));
}

Result<proto::RefereeMove> PinpointResponder::RefereeEvidence(std::int64_t steps, std::uint64_t leaf) {
  POLNODE_RETURN_IF_ERROR(CheckStep(steps, true));
  const std::uint32_t depth = consensus::GameTreeDepth(layout_.leaf_count());
  if (leaf >= (std::uint64_t{1} << depth)) {
    return Status::OutOfRange("leaf " + std::to_string(leaf) + " is outside a game tree of depth " +
                              std::to_string(depth));
  }
  const solver::LeafInfo info = layout_.Describe(leaf);
  const std::size_t layout_descriptor = descriptors_.size() - 1;
  proto::RefereeMove move;
  switch (info.kind) {
    case solver::LeafKind::kPadding:
      return move;
    case solver::LeafKind::kStateTensor: {
      POLNODE_RETURN_IF_ERROR(Advance(steps));
      SetDescriptor(layout_descriptor, move);
      for (const solver::NamedTensor& nt : working_.tensors)
        move.add_state_tensor_hashes(HashBytes(solver::TensorHash(nt.tensor)));
      return move;
    }
    case solver::LeafKind::kImages:
    case solver::LeafKind::kLabels: {
      if (!batches_) {
        POLNODE_ASSIGN_OR_RETURN(solver::BatchTree batches, solver::BatchTree::Build(stepper_));
        batches_.emplace(std::move(batches));
      }
      POLNODE_ASSIGN_OR_RETURN(solver::BatchEvidence batch, batches_->Prove(start_.step + steps));
      move.set_images_hash(HashBytes(batch.images_hash));
      move.set_labels_hash(HashBytes(batch.labels_hash));
      move.set_batch_proof(ProofBytes(batch.proof));
      return move;
    }
    case solver::LeafKind::kStateHash: {
      POLNODE_RETURN_IF_ERROR(Advance(steps));
      POLNODE_ASSIGN_OR_RETURN(StepLeaves step, RunObservedStep(-1, nullptr));
      SetDescriptor(layout_descriptor, move);
      for (std::uint64_t j : layout_.value_leaves()) {
        proto::RefereeInput& in = *move.add_inputs();
        in.set_hash(HashBytes(step.leaves[j]));
        POLNODE_RETURN_IF_ERROR(AddSiblings(step.tree, j, leaf, in));
      }
      return move;
    }
    case solver::LeafKind::kNodeOutput: {
      POLNODE_RETURN_IF_ERROR(Advance(steps));
      std::vector<kernels::Tensor> inputs;
      POLNODE_ASSIGN_OR_RETURN(StepLeaves step, RunObservedStep(info.index, &inputs));
      SetDescriptor(static_cast<std::size_t>(info.index), move);
      const solver::StepNode& node = stepper_.graph().nodes[static_cast<std::size_t>(info.index)];
      for (std::size_t j = 0; j < node.inputs.size(); ++j) {
        proto::RefereeInput& in = *move.add_inputs();
        in.set_tensor(TensorBytes(inputs[j]));
        POLNODE_RETURN_IF_ERROR(AddSiblings(step.tree, layout_.LeafOf(node.inputs[j]), leaf, in));
      }
      return move;
    }
  }
  return Status::Internal("unknown leaf kind");
}

Result<proto::GraphMove> AnswerGraphMove(const consensus::GameTree& tree, std::uint32_t level,
                                         std::uint64_t index, bool first_round) {
  if (level == 0) return Status::OutOfRange("a leaf has no children to reveal");
  POLNODE_RETURN_IF_ERROR(tree.Node(level, index).status());
  POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 left, tree.Node(level - 1, 2 * index));
  POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 right, tree.Node(level - 1, 2 * index + 1));
  proto::GraphMove move;
  move.set_left(HashBytes(left));
  move.set_right(HashBytes(right));
  if (first_round) {
    POLNODE_ASSIGN_OR_RETURN(std::vector<consensus::Hash256> path,
                             tree.Siblings(tree.leaf_count() - 1, tree.depth()));
    for (const consensus::Hash256& s : path) move.add_last_leaf_siblings(HashBytes(s));
  }
  return move;
}

}  // namespace polnode::verifier
