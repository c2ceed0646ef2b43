// Executes a StepGraph on a Backend: whole training steps, forward passes, and single nodes (what
// the pinpoint referee runs, DESIGN.md section 6).
#ifndef POLNODE_SOLVER_STEP_RUNNER_H_
#define POLNODE_SOLVER_STEP_RUNNER_H_

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/tensor.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/train_state.h"

namespace polnode::solver {

/// Called after each node with the node and its outputs (for an optimizer node, the updated
/// state tensors). The tensors are valid only during the call: the runner reuses their storage
/// for later nodes, so an observer that needs them (hashes for the pinpoint Merkle tree) must
/// consume them there. A non-ok Status stops the step and is returned by it.
using NodeObserver =
    std::function<Status(const StepNode& node, std::span<const kernels::Tensor* const> outputs)>;

/// Owns the intermediate tensors of a graph. Memory is planned once: an output takes the storage
/// of an earlier output of the same shape whose last reader has already run, so the peak is the
/// largest set of simultaneously live values, and steady-state steps allocate nothing.
class StepRunner {
 public:
  /// Checks `graph` (every reference points at an existing state tensor or an earlier node's
  /// output, views keep the element count and apply to node outputs only, state writes are in
  /// range) and plans its memory. kInvalidArgument naming the node otherwise.
  static Result<StepRunner> Create(StepGraph graph);

  const StepGraph& graph() const { return graph_; }

  /// One training step: runs every node with AttrsForStep(node, state.step), replaces the state
  /// tensors the optimizer nodes write, increments state.step, and returns the mean loss of the
  /// batch. Requires a training graph. kInvalidArgument when the state's names or shapes differ
  /// from the graph's layout or the batch has the wrong shape (nothing is modified then); a
  /// backend or observer error mid-step leaves the state partly updated (discard it).
  Result<float> Step(TrainState& state, const kernels::Tensor& images,
                     const kernels::Tensor& labels, kernels::Backend& backend,
                     const NodeObserver* observer = nullptr);

  /// Runs a forward graph on `images` with the parameters of `state` (its first tensors, by the
  /// state order) and returns the logits. The reference stays valid until the next call.
  Result<const kernels::Tensor*> Forward(const TrainState& state, const kernels::Tensor& images,
                                         kernels::Backend& backend,
                                         const NodeObserver* observer = nullptr);

 private:
  friend class ResidentTraining;  // runs the same plan on a backend's buffers

  explicit StepRunner(StepGraph graph) : graph_(std::move(graph)) {}
  void PlanMemory();
  [[nodiscard]] Status CheckState(const TrainState& state, bool all) const;
  [[nodiscard]] Status Execute(std::span<const kernels::Tensor* const> state_in,
                               std::span<kernels::Tensor* const> state_out,
                               const kernels::Tensor& images, const kernels::Tensor* labels,
                               std::int64_t step, kernels::Backend& backend,
                               const NodeObserver* observer, float* loss);

  StepGraph graph_;
  std::vector<kernels::Tensor> slots_;
  std::vector<std::vector<int>> output_slot_;  // per node, per output: slot, or -1 (state write)
  // Per node, the fusion that runs it with the next node in resident training (graph_executor.h).
  std::vector<std::optional<kernels::Fusion>> fusions_;
};

/// Runs node `node` of a step that starts from `step` completed steps, alone, on `inputs` given in
/// node.inputs order, each in its source's own shape (views are applied here), as the referee
/// does. Returns the outputs. kInvalidArgument for a wrong input count or element count.
Result<std::vector<kernels::Tensor>> RunSingleNode(const StepNode& node, std::int64_t step,
                                                   std::span<const kernels::Tensor* const> inputs,
                                                   kernels::Backend& backend);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_STEP_RUNNER_H_
