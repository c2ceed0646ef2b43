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

std::string ProofBytes(const consensus::MerkleProof& proof) {
  const std::vector<std::uint8_t> bytes = consensus::SerializeMerkleProof(proof);
  return std::string(bytes.begin(), bytes.end());
}

// The path from leaf j to the subtree both parties agree on once the descent stands at leaf d.
Status AddSiblings(const consensus::GameTree& tree, std::uint64_t j, std::uint64_t d,
                   google::protobuf::RepeatedPtrField<std::string>& out) {
  POLNODE_ASSIGN_OR_RETURN(std::vector<consensus::Hash256> siblings,
                           tree.Siblings(j, consensus::AgreedSubtreeHeight(j, d)));
  for (const consensus::Hash256& s : siblings) out.Add(HashBytes(s));
  return Status::Ok();
}

std::string FloatBytes(std::span<const float> values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size_bytes());
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

Result<StepLeaves> PinpointResponder::RunObservedStep(int capture_node, std::vector<kernels::Tensor>* captured,
                                                      std::vector<kernels::Tensor>* outputs) {
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
    if (target != nullptr && outputs != nullptr && node.index == target->index) {
      outputs->clear();
      for (const kernels::Tensor* o : outs) outputs->push_back(*o);
    }
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
        POLNODE_RETURN_IF_ERROR(AddSiblings(step.tree, j, leaf, *in.mutable_siblings()));
      }
      return move;
    }
    case solver::LeafKind::kNodeOutput:
      return Status::FailedPrecondition("leaf " + std::to_string(leaf) +
                                        " is an operator's output, refereed tile by tile (TileEvidence)");
  }
  return Status::Internal("unknown leaf kind");
}

Result<PinpointResponder::CapturedNode*> PinpointResponder::Capture(std::int64_t steps, std::uint64_t leaf) {
  POLNODE_RETURN_IF_ERROR(CheckStep(steps, true));
  const solver::LeafInfo info = layout_.Describe(leaf);
  if (info.kind != solver::LeafKind::kNodeOutput) {
    return Status::InvalidArgument("leaf " + std::to_string(leaf) + " is not an operator's output");
  }
  const std::int64_t step = start_.step + steps;
  if (captured_ && captured_->step == step && captured_->node == info.index) return captured_.get();
  captured_.reset();
  POLNODE_RETURN_IF_ERROR(Advance(steps));
  auto captured = std::make_unique<CapturedNode>();
  captured->step = step;
  captured->node = info.index;
  POLNODE_RETURN_IF_ERROR(RunObservedStep(info.index, &captured->inputs, &captured->outputs).status());
  captured->input_trees.resize(captured->inputs.size());
  captured->output_trees.resize(captured->outputs.size());
  captured_ = std::move(captured);
  return captured_.get();
}

Result<kernels::TileKernel> PinpointResponder::KernelOf(const CapturedNode& captured, std::uint64_t leaf) const {
  const solver::StepGraph& graph = stepper_.graph();
  const solver::StepNode& node = graph.nodes[static_cast<std::size_t>(captured.node)];
  std::vector<kernels::Shape> shapes;
  for (const solver::TensorRef& r : node.inputs) shapes.push_back(solver::RefShape(graph, r));
  const int output = static_cast<int>(leaf - layout_.first_output_leaf(captured.node));
  return kernels::TileKernel::Create(node.op, solver::AttrsForStep(node, captured.step), std::move(shapes), output);
}

Result<const consensus::TensorBlockTree*> PinpointResponder::OutputBlocks(std::int64_t steps, std::uint64_t leaf) {
  POLNODE_ASSIGN_OR_RETURN(CapturedNode * captured, Capture(steps, leaf));
  const std::size_t o = static_cast<std::size_t>(leaf - layout_.first_output_leaf(captured->node));
  if (!captured->output_trees[o]) {
    const kernels::Tensor& t = captured->outputs[o];
    captured->output_trees[o].emplace(t.shape(), t.values());
  }
  return &*captured->output_trees[o];
}

Result<proto::TileMove> PinpointResponder::AnswerTileMove(std::int64_t steps, std::uint64_t leaf, std::uint32_t level,
                                                          std::uint64_t index, bool first_round) {
  POLNODE_ASSIGN_OR_RETURN(const consensus::TensorBlockTree* blocks, OutputBlocks(steps, leaf));
  const consensus::GameTree& tree = *blocks->tree();  // operator outputs have elements
  proto::TileMove move;
  if (first_round) {
    const std::size_t node = static_cast<std::size_t>(layout_.Describe(leaf).index);
    move.set_node_descriptor(solver::DescriptorBytes(descriptors_[node]));
    move.set_node_descriptor_proof(ProofBytes(graph_tree_.Prove(node).value()));
    move.set_block_root(HashBytes(blocks->root()));
    if (level != tree.depth() || index != 0) return Status::InvalidArgument("the first tile round is at the root");
    if (tree.depth() == 0) return move;
  }
  if (level == 0 || level > tree.depth()) return Status::OutOfRange("no children below block-tree level " + std::to_string(level));
  POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 left, tree.Node(level - 1, 2 * index));
  POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 right, tree.Node(level - 1, 2 * index + 1));
  move.set_left(HashBytes(left));
  move.set_right(HashBytes(right));
  return move;
}

Result<std::int64_t> PinpointResponder::ChainUnits(std::int64_t steps, std::uint64_t leaf) {
  POLNODE_ASSIGN_OR_RETURN(CapturedNode * captured, Capture(steps, leaf));
  POLNODE_ASSIGN_OR_RETURN(kernels::TileKernel kernel, KernelOf(*captured, leaf));
  return kernel.units();
}

Result<consensus::Hash256> PinpointResponder::ChainStateHashAt(std::int64_t steps, std::uint64_t leaf,
                                                               std::uint64_t tile, std::int64_t units) {
  POLNODE_ASSIGN_OR_RETURN(CapturedNode * captured, Capture(steps, leaf));
  POLNODE_ASSIGN_OR_RETURN(kernels::TileKernel kernel, KernelOf(*captured, leaf));
  if (tile >= kernel.grid().block_count()) return Status::OutOfRange("the output has no block " + std::to_string(tile));
  const GridRect rect = kernel.grid().BlockRect(tile);
  std::vector<kernels::TensorSource> sources;
  for (const kernels::Tensor& t : captured->inputs) sources.emplace_back(t);
  std::vector<const kernels::TileSource*> in;
  for (const kernels::TensorSource& src : sources) in.push_back(&src);
  std::vector<float> state = kernel.Init(rect);
  POLNODE_RETURN_IF_ERROR(kernel.Advance(rect, in, 0, units, state));
  return consensus::ChainStateHash(static_cast<std::uint64_t>(units), state);
}

Result<proto::RefereeMove> PinpointResponder::TileEvidence(std::int64_t steps, std::uint64_t leaf, std::uint64_t tile,
                                                           std::int64_t lo, std::int64_t hi) {
  POLNODE_ASSIGN_OR_RETURN(StepLeaves step, LeavesOfStep(steps));
  POLNODE_ASSIGN_OR_RETURN(CapturedNode * captured, Capture(steps, leaf));
  POLNODE_ASSIGN_OR_RETURN(kernels::TileKernel kernel, KernelOf(*captured, leaf));
  proto::RefereeMove move;
  if (tile >= kernel.grid().block_count()) return move;  // padding: nothing to prove
  if (lo < 0 || hi < lo || hi > kernel.units()) return Status::OutOfRange("the unit range lies outside the chain");
  const GridRect rect = kernel.grid().BlockRect(tile);
  const solver::StepNode& node = stepper_.graph().nodes[static_cast<std::size_t>(captured->node)];
  for (std::size_t i = 0; i < captured->inputs.size(); ++i) {
    proto::TileInput& input = *move.add_tile_inputs();
    const kernels::Tensor& t = captured->inputs[i];
    const BlockGrid grid = BlockGrid::Of(t.shape());
    // Exactly the blocks the referee asks for: for an input read where token ids point, those
    // the ids name (contracts/ruling.h ExactBoxBlocks).
    const int index = kernel.IndexInputOf(static_cast<int>(i));
    std::vector<FlatRun> runs = kernel.Reads(rect, static_cast<int>(i), lo, hi);
    if (index >= 0) {
      const kernels::TensorSource ids(captured->inputs[static_cast<std::size_t>(index)]);
      POLNODE_ASSIGN_OR_RETURN(runs, kernel.ReadsGiven(rect, static_cast<int>(i), lo, hi, ids));
    }
    const std::vector<std::uint64_t> blocks = grid.BlocksOfRuns(runs);
    if (blocks.empty()) continue;
    if (!captured->input_trees[i]) captured->input_trees[i].emplace(t.shape(), t.values());
    const consensus::TensorBlockTree& tree = *captured->input_trees[i];
    input.set_block_root(HashBytes(tree.root()));
    POLNODE_RETURN_IF_ERROR(AddSiblings(step.tree, layout_.LeafOf(node.inputs[i]), leaf, *input.mutable_siblings()));
    for (std::uint64_t b : blocks) input.add_blocks(FloatBytes(consensus::BlockValues(t.shape(), t.values(), b)));
    POLNODE_ASSIGN_OR_RETURN(std::vector<consensus::Hash256> proof, tree.tree()->MultiSiblings(blocks));
    for (const consensus::Hash256& h : proof) input.add_proof(HashBytes(h));
  }
  if (lo > 0) {
    std::vector<kernels::TensorSource> sources;
    for (const kernels::Tensor& t : captured->inputs) sources.emplace_back(t);
    std::vector<const kernels::TileSource*> in;
    for (const kernels::TensorSource& src : sources) in.push_back(&src);
    std::vector<float> state = kernel.Init(rect);
    POLNODE_RETURN_IF_ERROR(kernel.Advance(rect, in, 0, lo, state));
    move.set_lo_state(FloatBytes(state));
  }
  return move;
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
