// The training step as the pinpoint game sees it (DESIGN.md section 6): where every value of one
// step sits among the leaves of that step's game tree, the descriptors a task's graph_root commits
// to, and the task's batch root. The leaf layout and the descriptor messages are dispute.proto's;
// the hashes are consensus/pinpoint.h's. Everything here is a pure function of the task, so the
// submitter, both parties and an auditor derive the same roots.
//
// Leaves of one step, for S state tensors and O node outputs in all (N = S + 2 + O + 1):
//   [0, S)    the state tensors before the step     S, S + 1   the batch's images and labels
//   S + 2...  node outputs in canonical order       N - 1      the state hash after the step
#ifndef POLNODE_SOLVER_PINPOINT_GRAPH_H_
#define POLNODE_SOLVER_PINPOINT_GRAPH_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/sha256.h"
#include "polnode/dispute.pb.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/task_spec.h"
#include "polnode/solver/task_steps.h"

namespace polnode::solver {

/// What one leaf of a step's game tree holds.
enum class LeafKind : std::uint8_t {
  kStateTensor,  // state tensor `index` before the step
  kImages,
  kLabels,
  kNodeOutput,  // output `output` of node `index`
  kStateHash,   // the state hash after the step (leaf N - 1)
  kPadding,     // N and beyond, up to the tree's power of two: the all-zero hash
};

struct LeafInfo {
  LeafKind kind = LeafKind::kPadding;
  int index = 0;
  int output = 0;
};

/// Where each value of one training step sits among the leaves (the layout above).
class StepLeafLayout {
 public:
  /// Precondition: `graph` passes CheckPinpointGraph.
  explicit StepLeafLayout(const StepGraph& graph);

  /// S, and the leaves of the batch (S, S + 1), N and the state hash after the step (N - 1).
  std::uint64_t state_count() const { return state_count_; }
  std::uint64_t images_leaf() const { return state_count_; }
  std::uint64_t labels_leaf() const { return state_count_ + 1; }
  std::uint64_t leaf_count() const { return leaf_count_; }
  std::uint64_t state_hash_leaf() const { return leaf_count_ - 1; }
  /// The leaf of output 0 of node `node` (its output o is this + o).
  std::uint64_t first_output_leaf(int node) const {
    return first_output_leaf_[static_cast<std::size_t>(node)];
  }
  /// Per state tensor, the leaf holding its value after the step: the output of the last node
  /// that writes it (StepNode::state_writes), or its own leaf before the step if none does.
  const std::vector<std::uint64_t>& value_leaves() const { return value_leaves_; }

  /// The leaf holding the value `ref` reads (its source; the view does not change the leaf).
  std::uint64_t LeafOf(const TensorRef& ref) const;

  /// What leaf `leaf` holds; kPadding from leaf_count() on.
  LeafInfo Describe(std::uint64_t leaf) const;

 private:
  std::uint64_t state_count_ = 0;
  std::uint64_t leaf_count_ = 0;
  std::vector<std::uint64_t> first_output_leaf_;  // per node
  std::vector<std::uint64_t> value_leaves_;       // per state tensor
};

/// kInvalidArgument naming the node unless `graph` is a training graph whose nodes sit at their
/// indices, read only state tensors, the batch or earlier nodes' outputs, and write state tensors
/// in range: what the leaf layout needs (StepRunner::Create checks the same and more).
[[nodiscard]] Status CheckPinpointGraph(const StepGraph& graph);

/// N = S + 2 + (outputs of all nodes) + 1. Precondition: `graph` passes CheckPinpointGraph.
std::uint64_t StepLeafCount(const StepGraph& graph);

/// The descriptors graph_root commits to: one PinpointNode per node in canonical order (name,
/// op, the step-independent attributes, per input its leaf, the shape the operator reads and the
/// source's own shape, the output shapes, the first output leaf), then one PinpointStateLayout
/// (state names, value leaves). Errors: those of CheckPinpointGraph.
Result<std::vector<proto::PinpointDescriptor>> PinpointDescriptors(const StepGraph& graph);

/// The descriptor's canonical bytes: its deterministic protobuf serialization. These are the
/// bytes a RefereeMove posts, and what DescriptorHash hashes.
std::string DescriptorBytes(const proto::PinpointDescriptor& descriptor);

/// SHA-256 of DescriptorBytes(descriptor).
consensus::Hash256 DescriptorHash(const proto::PinpointDescriptor& descriptor);

/// The graph root: consensus::MerkleRoot over the descriptors' DescriptorHash, in order.
consensus::Hash256 GraphRoot(std::span<const proto::PinpointDescriptor> descriptors);

/// One step's batch as the referee checks it: both tensor hashes and the proof of
/// BatchLeaf(images_hash, labels_hash) at leaf `step` of the task's batch root.
struct BatchEvidence {
  consensus::Hash256 images_hash{};
  consensus::Hash256 labels_hash{};
  consensus::MerkleProof proof;
};

/// The batch leaves of every step of a task (leaf t: the batch of the step that starts from t
/// completed steps), for the batch root and its proofs. Memory: about 4 hashes per step.
class BatchTree {
 public:
  /// Gathers and hashes the batch of every step 0..task.steps - 1 in `stepper`'s data order (the
  /// order training uses, so the leaves name what the solver trained on).
  static Result<BatchTree> Build(TaskStepper& stepper);

  /// The batch root, and the number of steps (leaves) it covers.
  const consensus::Hash256& root() const { return tree_.root(); }
  std::int64_t steps() const { return static_cast<std::int64_t>(images_.size()); }

  /// The evidence for the batch of step `step`; kOutOfRange outside [0, steps()).
  Result<BatchEvidence> Prove(std::int64_t step) const;

 private:
  BatchTree(std::vector<consensus::Hash256> images, std::vector<consensus::Hash256> labels,
            consensus::MerkleTree tree)
      : images_(std::move(images)), labels_(std::move(labels)), tree_(std::move(tree)) {}
  std::vector<consensus::Hash256> images_, labels_;
  consensus::MerkleTree tree_;
};

/// The task's batch root: MerkleRoot over BatchLeaf(TensorHash(images_t), TensorHash(labels_t))
/// for t = 0..task.steps - 1. Errors: those of TaskStepper::Create (the data is not hashed; the
/// caller checks it with CheckTaskData).
Result<consensus::Hash256> BatchRoot(const TaskSpec& task, const ImageDataset& data);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_PINPOINT_GRAPH_H_
