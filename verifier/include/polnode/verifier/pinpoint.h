// One party's side of the pinpoint game (DESIGN.md section 6): answers the ledger's moves about a
// segment that starts from an agreed state, recomputing what each move needs instead of keeping
// the segment's states or a step's tensors. Level 1 posts state hashes (StateHashAt), level 2
// descends the disputed step's game tree (LeavesOfStep, AnswerGraphMove) and, when the disputed
// leaf is an operator's output, the output's block tree (AnswerTileMove) and the disputed tile's
// chain (ChainStateHashAt); level 3 posts the referee's evidence for the first disputed leaf
// (RefereeEvidence) or for the disputed tile's box (TileEvidence). The leaf layout and messages
// are dispute.proto's; what the ledger checks is contracts/referee.h and contracts/ruling.h.
//
// Memory: three states (the start state; a working state, so that moves walking forward do not
// replay from the start; a scratch copy the observed step runs on, so that the working state
// stays before the disputed step), the leaf hashes and tree of the last observed step, and while
// descending an operator's output, that node's input and output tensors with their block trees.
#ifndef POLNODE_VERIFIER_PINPOINT_H_
#define POLNODE_VERIFIER_PINPOINT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/game_tree.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/sha256.h"
#include "polnode/dispute.pb.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/tile.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/pinpoint_graph.h"
#include "polnode/solver/tampering_backend.h"
#include "polnode/solver/task_spec.h"
#include "polnode/solver/task_steps.h"
#include "polnode/solver/train_state.h"

namespace polnode::verifier {

/// The leaves of one step's game tree (dispute.proto's layout) and the tree over them.
struct StepLeaves {
  std::vector<consensus::Hash256> leaves;
  consensus::GameTree tree;
};

struct ResponderOptions {
  /// Tests only: answer as a cheating party whose replay corrupts this value (see
  /// solver::TamperingBackend); its answers are then consistently wrong from that node on.
  std::optional<solver::TamperSpec> tamper;
};

class PinpointResponder {
 public:
  /// A responder for the segment starting at `start` (the agreed state, start.step completed
  /// steps) of `task`, replaying on `backend`. `data` and `backend` must outlive it; the data set
  /// is not hashed here (CheckTaskData). Errors: those of TaskStepper::Create and
  /// PinpointDescriptors; kInvalidArgument when `start` does not have the task's state layout or
  /// its step lies outside [0, task.steps].
  static Result<PinpointResponder> Create(const solver::TaskSpec& task, const solver::ImageDataset& data,
                                          kernels::Backend& backend, solver::TrainState start,
                                          const ResponderOptions& options = {});

  /// The task's descriptors (graph_root commits to them), their root, and the leaf layout.
  const std::vector<proto::PinpointDescriptor>& descriptors() const { return descriptors_; }
  const consensus::Hash256& graph_root() const { return graph_tree_.root(); }
  const solver::StepLeafLayout& layout() const { return layout_; }
  /// The completed steps of the start state (the game's first_step).
  std::int64_t first_step() const { return start_.step; }

  /// Level 1: the state hash after `steps` steps of the segment (steps = 0: the start state).
  /// kOutOfRange for steps < 0 or beyond the task's last step.
  Result<consensus::Hash256> StateHashAt(std::int64_t steps);

  /// Level 2: the leaves of the step that starts after `steps` steps of the segment, and the game
  /// tree over them. kOutOfRange for steps < 0 or a step at or beyond the task's last.
  Result<StepLeaves> LeavesOfStep(std::int64_t steps);

  /// Level 3: the evidence for leaf `leaf` of the step that starts after `steps` steps, as
  /// contracts/referee.h checks it (every proof and every sibling path is this party's; for
  /// padding leaves, an empty move). kOutOfRange for a step as LeavesOfStep or a leaf outside the
  /// tree's 2^depth leaves.
  Result<proto::RefereeMove> RefereeEvidence(std::int64_t steps, std::uint64_t leaf);

  /// Level 2 inside an operator's output: the move for block-tree node (level, index) of leaf
  /// `leaf` (an operator output) of the step that starts after `steps` steps; `first_round` adds
  /// the node's descriptor and its proof and the block root (a one-block output reveals no
  /// children). kOutOfRange / kInvalidArgument for a step, leaf or node that is not one.
  Result<proto::TileMove> AnswerTileMove(std::int64_t steps, std::uint64_t leaf, std::uint32_t level,
                                         std::uint64_t index, bool first_round);

  /// The block tree of operator-output leaf `leaf` of the step after `steps` steps, as this party
  /// computes it: its root gives the leaf with the dims, its leaves are the output's blocks.
  Result<const consensus::TensorBlockTree*> OutputBlocks(std::int64_t steps, std::uint64_t leaf);

  /// The chain of block `tile` of leaf `leaf`: its units (kernels::TileKernel::units), and the hash
  /// of its state after `units` units (consensus::ChainStateHash), from this party's inputs.
  Result<std::int64_t> ChainUnits(std::int64_t steps, std::uint64_t leaf);
  Result<consensus::Hash256> ChainStateHashAt(std::int64_t steps, std::uint64_t leaf, std::uint64_t tile,
                                              std::int64_t units);

  /// Level 3 for an operator output: the evidence for units [lo, hi) of block `tile` of leaf
  /// `leaf` (contracts/referee.h RefereeTile): per operator input its block root, the blocks the
  /// box reads with their multiproof and the path to the agreed subtree, and the chain state after
  /// `lo` units when lo > 0. An empty move for a padding block.
  Result<proto::RefereeMove> TileEvidence(std::int64_t steps, std::uint64_t leaf, std::uint64_t tile, std::int64_t lo,
                                          std::int64_t hi);

 private:
  // The operator whose output a tile game descends, captured from one observed step.
  struct CapturedNode {
    std::int64_t step = -1;
    int node = -1;
    std::vector<kernels::Tensor> inputs;   // each in its source's shape
    std::vector<kernels::Tensor> outputs;
    std::vector<std::optional<consensus::TensorBlockTree>> input_trees;   // built when first proven
    std::vector<std::optional<consensus::TensorBlockTree>> output_trees;  // built when first descended
  };
  // The node writing operator-output leaf `leaf` of the step after `steps` steps, captured.
  Result<CapturedNode*> Capture(std::int64_t steps, std::uint64_t leaf);
  // The tile kernel of leaf `leaf`'s output as this party runs it.
  Result<kernels::TileKernel> KernelOf(const CapturedNode& captured, std::uint64_t leaf) const;

  PinpointResponder(solver::TaskStepper stepper, kernels::Backend& backend, solver::TrainState start,
                    std::vector<proto::PinpointDescriptor> descriptors, consensus::MerkleTree graph_tree,
                    std::unique_ptr<solver::TamperingBackend> tamper);
  // Brings working_ to start + `steps` steps, replaying from the start when it is already past.
  [[nodiscard]] Status Advance(std::int64_t steps);
  // Runs the step that starts from working_ on scratch_ (working_ stays), hashing every leaf; when
  // `capture_node` >= 0, copies that node's inputs (each in its source's shape) into *captured
  // and, when `outputs` is set, its outputs into *outputs. Without a capture, the last step's
  // leaves are reused.
  Result<StepLeaves> RunObservedStep(int capture_node, std::vector<kernels::Tensor>* captured,
                                     std::vector<kernels::Tensor>* outputs = nullptr);
  [[nodiscard]] Status CheckStep(std::int64_t steps, bool need_step_after) const;
  void SetDescriptor(std::size_t index, proto::RefereeMove& move) const;

  solver::TaskStepper stepper_;
  kernels::Backend* backend_;                         // the given one, or tamper_
  std::unique_ptr<solver::TamperingBackend> tamper_;  // heap, so backend_ survives moves
  solver::TrainState start_;
  solver::TrainState working_;
  solver::TrainState scratch_;
  solver::StepLeafLayout layout_;
  std::vector<proto::PinpointDescriptor> descriptors_;
  consensus::MerkleTree graph_tree_;
  std::optional<solver::BatchTree> batches_;  // built on the first batch leaf asked for
  kernels::Tensor images_, labels_;           // the batch of the step being observed
  std::optional<StepLeaves> last_leaves_;     // of the step from last_leaves_step_ steps
  std::int64_t last_leaves_step_ = -1;
  std::unique_ptr<CapturedNode> captured_;    // heap: large, and kept across moves of the responder
};

/// Level 2, one round: the children of node (level, index) of `tree` (level >= 1, the current
/// node's level), and, in the first round (`first_round`), the siblings of the last leaf (the state
/// hash after the step) up to the root. kOutOfRange for a node outside the tree or level 0.
Result<proto::GraphMove> AnswerGraphMove(const consensus::GameTree& tree, std::uint32_t level,
                                         std::uint64_t index, bool first_round);

}  // namespace polnode::verifier

#endif  // POLNODE_VERIFIER_PINPOINT_H_
