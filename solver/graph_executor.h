// The loop that runs a step graph's nodes in order on one kind of tensor handle: host tensors
// (StepRunner, through Backend::Run) or a backend's buffers (ResidentTraining, through
// Backend::Enqueue). One loop for both, so a resident step reads exactly the operands a host step
// reads. Internal to the solver library.
#ifndef POLNODE_SOLVER_GRAPH_EXECUTOR_H_
#define POLNODE_SOLVER_GRAPH_EXECUTOR_H_

#include <array>
#include <span>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/tensor.h"
#include "polnode/solver/step_graph.h"

namespace polnode::solver::internal {

inline constexpr std::size_t kMaxInputs = 5;   // kLayerNormGrad: X, gamma, Mean, Rstd, dY
inline constexpr std::size_t kMaxOutputs = 3;  // kAdamW: W', M', V'; kLayerNorm(Grad)

/// Where each node's outputs live: per node, per output, a slot index, or -1 for a state write.
using OutputSlots = std::vector<std::vector<int>>;

/// Runs every node of `graph` in order. Handle is kernels::Tensor or kernels::Buffer (both have
/// shape() and Reshape). A node reads state tensors from `state_in`, the batch from `images` and
/// `labels`, and earlier outputs from `slots` (or, for state writes, from `state_out`), each viewed
/// as its reference asks for the duration of the node; it writes its slots or `state_out` (empty
/// for a forward pass, which must not reach a state write). `run(node, inputs, outputs)` executes
/// one node, whose errors come back with the node's index and name; then `observe(node, outputs)`,
/// whose errors come back as they are (NodeObserver's contract).
template <typename Handle, typename RunNode, typename ObserveNode>
Status ExecuteGraph(const StepGraph& graph, const OutputSlots& output_slot, std::span<Handle* const> slots,
                    std::span<const Handle* const> state_in, std::span<Handle* const> state_out,
                    const Handle& images, const Handle* labels, RunNode&& run, ObserveNode&& observe) {
  std::array<const Handle*, kMaxInputs> in{};
  std::array<Handle*, kMaxOutputs> out{};
  std::array<Handle*, kMaxInputs> viewed{};  // slot handles reshaped for this node
  std::array<kernels::Shape, kMaxInputs> restore{};
  for (const StepNode& node : graph.nodes) {
    const std::size_t i = static_cast<std::size_t>(node.index);
    const std::size_t num_in = node.inputs.size();
    const std::size_t num_out = node.output_shapes.size();
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
    for (std::size_t k = 0; k < num_out && status.ok(); ++k) {
      const int slot = output_slot[i][k];
      if (slot >= 0) {
        out[k] = slots[static_cast<std::size_t>(slot)];
      } else if (state_out.empty()) {
        status = Status::Internal("a forward pass reached a node that writes the state");
      } else {
        out[k] = state_out[static_cast<std::size_t>(node.state_writes[k])];
      }
    }
    if (status.ok()) {
      status = run(node, std::span<const Handle* const>(in.data(), num_in), std::span<Handle* const>(out.data(), num_out));
    }
    for (std::size_t v = 0; v < num_viewed; ++v) {
      const Status restored = viewed[v]->Reshape(restore[v]);
      if (status.ok()) status = restored;
    }
    if (!status.ok()) return status.WithContext("node " + std::to_string(node.index) + " (" + node.name + ")");
    POLNODE_RETURN_IF_ERROR(observe(node, std::span<Handle* const>(out.data(), num_out)));
  }
  return Status::Ok();
}

}  // namespace polnode::solver::internal

#endif  // POLNODE_SOLVER_GRAPH_EXECUTOR_H_
