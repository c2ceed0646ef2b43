// The loop that runs a step graph's nodes in order on one kind of tensor handle: host tensors
// (StepRunner, through Backend::Run) or a backend's buffers (ResidentTraining, through
// Backend::Enqueue). One loop for both, so a resident step reads exactly the operands a host step
// reads. Internal to the solver library.
#ifndef POLNODE_SOLVER_GRAPH_EXECUTOR_H_
#define POLNODE_SOLVER_GRAPH_EXECUTOR_H_

#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/tensor.h"
#include "polnode/solver/step_graph.h"

namespace polnode::solver::internal {

inline constexpr std::size_t kMaxInputs = 5;   // kLayerNormGrad: X, gamma, Mean, Rstd, dY
inline constexpr std::size_t kMaxOutputs = 3;  // kAdamW: W', M', V'; kLayerNorm(Grad)

/// Where each node's outputs live: per node, per output, a slot index, or -1 for a state write.
using OutputSlots = std::vector<std::vector<int>>;

/// Per node, the fusion that evaluates it together with the next node, if any (PlanFusions).
using FusionPlan = std::vector<std::optional<kernels::Fusion>>;

/// Nodes i and i + 1 that a backend may run as one kernels::Fusion: the pair of operators, with
/// node i + 1 reading node i's output 0 unviewed and nothing else.
FusionPlan PlanFusions(const StepGraph& graph);

/// Runs every node of `graph` in order. Handle is kernels::Tensor or kernels::Buffer (both have
/// shape() and Reshape). A node reads state tensors from `state_in`, the batch from `images` and
/// `labels`, and earlier outputs from `slots` (or, for state writes, from `state_out`), each viewed
/// as its reference asks for the duration of the node; it writes its slots or `state_out` (empty
/// for a forward pass, which must not reach a state write). `run(node, inputs, outputs)` executes
/// one node, whose errors come back with the node's index and name; then `observe(node, outputs)`,
/// whose errors come back as they are (NodeObserver's contract). Where `fusions` (empty: none)
/// names a fusion for node i, `run_fused(fusion, inputs, outputs)` executes nodes i and i + 1
/// instead (node i's inputs; node i's outputs, then node i + 1's), and both are observed after it
/// in order: an observer only reads, so it sees the outputs the two nodes run alone would give.
template <typename Handle, typename RunNode, typename RunFused, typename ObserveNode>
Status ExecuteGraph(const StepGraph& graph, const OutputSlots& output_slot, std::span<const std::optional<kernels::Fusion>> fusions,
                    std::span<Handle* const> slots, std::span<const Handle* const> state_in,
                    std::span<Handle* const> state_out, const Handle& images, const Handle* labels, RunNode&& run,
                    RunFused&& run_fused, ObserveNode&& observe) {
  std::array<const Handle*, kMaxInputs> in{};
  std::array<Handle*, 2 * kMaxOutputs> out{};  // a fused pair's outputs, node after node
  std::array<Handle*, kMaxInputs> viewed{};    // slot handles reshaped for this node
  std::array<kernels::Shape, kMaxInputs> restore{};
  // Binds the outputs of `node` to out[first, first + their count).
  const auto bind_outputs = [&](const StepNode& node, std::size_t first) -> Status {
    for (std::size_t k = 0; k < node.output_shapes.size(); ++k) {
      const int slot = output_slot[static_cast<std::size_t>(node.index)][k];
      if (slot >= 0) {
        out[first + k] = slots[static_cast<std::size_t>(slot)];
      } else if (state_out.empty()) {
        return Status::Internal("a forward pass reached a node that writes the state");
      } else {
        out[first + k] = state_out[static_cast<std::size_t>(node.state_writes[k])];
      }
    }
    return Status::Ok();
  };
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const StepNode& node = graph.nodes[i];
    const std::optional<kernels::Fusion> fusion = i < fusions.size() ? fusions[i] : std::nullopt;
    const StepNode* next = fusion ? &graph.nodes[i + 1] : nullptr;
    const std::size_t num_in = node.inputs.size();
    const std::size_t num_out = node.output_shapes.size();
    const std::size_t num_next_out = next != nullptr ? next->output_shapes.size() : 0;
    std::size_t num_viewed = 0;
    Status status;
    for (std::size_t j = 0; j < num_in && status.ok(); ++j) {
      const TensorRef& r = node.inputs[j];
      switch (r.source) {
        case SourceKind::kState:
          in[j] = state_in[static_cast<std::size_t>(r.index)];
          break;
        case SourceKind::kBatchImages:
          in[j] = &images;
          break;
        case SourceKind::kBatchLabels:
          in[j] = labels;
          break;
        case SourceKind::kNode: {
          const std::size_t src = static_cast<std::size_t>(r.index);
          const int slot = output_slot[src][static_cast<std::size_t>(r.output)];
          Handle* t = slot >= 0 ? slots[static_cast<std::size_t>(slot)]
                                : state_out[static_cast<std::size_t>(
                                      graph.nodes[src].state_writes[static_cast<std::size_t>(r.output)])];
          if (!r.view.empty()) {
            restore[num_viewed] = t->shape();
            status = t->Reshape(r.view);
            if (status.ok()) viewed[num_viewed++] = t;
          }
          in[j] = t;
          break;
        }
      }
      if (in[j] == nullptr) status = Status::Internal("a training graph needs batch labels");
    }
    if (status.ok()) status = bind_outputs(node, 0);
    if (status.ok() && next != nullptr) status = bind_outputs(*next, num_out);
    if (status.ok()) {
      const std::span<const Handle* const> inputs(in.data(), num_in);
      status = next != nullptr ? run_fused(*fusion, inputs, std::span<Handle* const>(out.data(), num_out + num_next_out))
                               : run(node, inputs, std::span<Handle* const>(out.data(), num_out));
    }
    for (std::size_t v = 0; v < num_viewed; ++v) {
      const Status restored = viewed[v]->Reshape(restore[v]);
      if (status.ok()) status = restored;
    }
    if (!status.ok()) {
      return status.WithContext(next != nullptr ? "nodes " + std::to_string(node.index) + " (" + node.name + ") and " +
                                                      std::to_string(next->index) + " (" + next->name + "), fused"
                                                : "node " + std::to_string(node.index) + " (" + node.name + ")");
    }
    POLNODE_RETURN_IF_ERROR(observe(node, std::span<Handle* const>(out.data(), num_out)));
    if (next != nullptr) {
      POLNODE_RETURN_IF_ERROR(observe(*next, std::span<Handle* const>(out.data() + num_out, num_next_out)));
      ++i;
    }
  }
  return Status::Ok();
}

}  // namespace polnode::solver::internal

#endif  // POLNODE_SOLVER_GRAPH_EXECUTOR_H_
