#include "polnode/solver/step_runner.h"

#include <algorithm>
#include <array>
#include <climits>
#include <map>
#include <string>

#include "graph_executor.h"

namespace polnode::solver {
namespace {

using kernels::Shape;
using kernels::Tensor;

using internal::kMaxInputs;
using internal::kMaxOutputs;

Status BadNode(const StepNode& n, const std::string& why) {
  return Status::InvalidArgument("step graph node " + std::to_string(n.index) + " (" + n.name +
                                 "): " + why);
}

Status CheckNode(const StepGraph& g, const StepNode& n, int position) {
  if (n.index != position)
    return BadNode(n, "index does not match its position " + std::to_string(position));
  if (static_cast<int>(n.inputs.size()) != kernels::NumInputs(n.op) ||
      n.inputs.size() > kMaxInputs) {
    return BadNode(n, "has " + std::to_string(n.inputs.size()) + " inputs, the operator takes " +
                          std::to_string(kernels::NumInputs(n.op)));
  }
  if (static_cast<int>(n.output_shapes.size()) != kernels::NumOutputs(n.op) ||
      n.output_shapes.size() > kMaxOutputs || n.state_writes.size() != n.output_shapes.size()) {
    return BadNode(n, "output count does not match the operator");
  }
  const int num_state = static_cast<int>(g.state_names.size());
  for (const TensorRef& r : n.inputs) {
    switch (r.source) {
      case SourceKind::kState:
        if (r.index < 0 || r.index >= num_state)
          return BadNode(n, "reads a state tensor out of range");
        break;
      case SourceKind::kBatchImages:
      case SourceKind::kBatchLabels:
        break;
      case SourceKind::kNode:
        if (r.index < 0 || r.index >= position || r.output < 0 ||
            r.output >=
                static_cast<int>(g.nodes[static_cast<std::size_t>(r.index)].output_shapes.size())) {
          return BadNode(n, "reads an output that is not produced before it");
        }
        break;
    }
    if (!r.view.empty()) {
      if (r.source != SourceKind::kNode)
        return BadNode(n, "views a tensor that is not a node output");
      const TensorRef plain = {r.source, r.index, r.output, {}};
      if (kernels::NumElements(r.view) != kernels::NumElements(RefShape(g, plain))) {
        return BadNode(n, "view " + kernels::ShapeToString(r.view) + " changes the element count");
      }
      for (const TensorRef& other : n.inputs) {
        if (&other != &r && other.source == r.source && other.index == r.index &&
            other.output == r.output) {
          return BadNode(n, "reads a viewed tensor twice");
        }
      }
    }
  }
  for (std::size_t k = 0; k < n.state_writes.size(); ++k) {
    const int w = n.state_writes[k];
    if (w < -1 || w >= num_state) return BadNode(n, "writes a state tensor out of range");
    if (w >= 0 && n.output_shapes[k] != g.state_shapes[static_cast<std::size_t>(w)]) {
      return BadNode(
          n, "writes " + g.state_names[static_cast<std::size_t>(w)] + " with the wrong shape");
    }
  }
  return Status::Ok();
}

}  // namespace

namespace internal {

FusionPlan PlanFusions(const StepGraph& graph) {
  FusionPlan plan(graph.nodes.size());
  for (std::size_t i = 0; i + 1 < graph.nodes.size(); ++i) {
    const StepNode& next = graph.nodes[i + 1];
    const bool reads_only_previous = next.inputs.size() == 1 && next.inputs[0].source == SourceKind::kNode &&
                                     next.inputs[0].index == static_cast<int>(i) && next.inputs[0].output == 0 &&
                                     next.inputs[0].view.empty();
    if (!reads_only_previous) continue;
    for (const kernels::Fusion fusion : {kernels::Fusion::kBiasAddRelu, kernels::Fusion::kReluGradBiasGrad}) {
      const std::array<kernels::Op, 2> ops = kernels::FusedOps(fusion);
      if (graph.nodes[i].op == ops[0] && next.op == ops[1]) {
        plan[i] = fusion;
        ++i;  // node i + 1 is taken: it cannot start a pair of its own
        break;
      }
    }
  }
  return plan;
}

}  // namespace internal

Result<StepRunner> StepRunner::Create(StepGraph graph) {
  if (graph.state_names.size() != graph.state_shapes.size()) {
    return Status::InvalidArgument("step graph: state names and shapes differ in count");
  }
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    POLNODE_RETURN_IF_ERROR(CheckNode(graph, graph.nodes[i], static_cast<int>(i)));
  }
  const int num_nodes = static_cast<int>(graph.nodes.size());
  if (graph.logits_node < 0 || graph.logits_node >= num_nodes || graph.loss_node >= num_nodes) {
    return Status::InvalidArgument("step graph: logits or loss node out of range");
  }
  StepRunner runner(std::move(graph));
  runner.PlanMemory();
  runner.fusions_ = internal::PlanFusions(runner.graph_);
  return runner;
}

void StepRunner::PlanMemory() {
  const std::size_t n = graph_.nodes.size();
  // last_use[i][k]: the last node reading output k of node i (the node itself if none does).
  std::vector<std::vector<int>> last_use(n);
  for (std::size_t i = 0; i < n; ++i) {
    last_use[i].assign(graph_.nodes[i].output_shapes.size(), static_cast<int>(i));
  }
  for (const StepNode& node : graph_.nodes) {
    for (const TensorRef& r : node.inputs) {
      if (r.source != SourceKind::kNode) continue;
      int& last = last_use[static_cast<std::size_t>(r.index)][static_cast<std::size_t>(r.output)];
      last = std::max(last, node.index);
    }
  }
  // Results read after the graph has run are never recycled.
  last_use[static_cast<std::size_t>(graph_.logits_node)][0] = INT_MAX;
  if (graph_.loss_node >= 0) last_use[static_cast<std::size_t>(graph_.loss_node)][0] = INT_MAX;

  std::vector<std::vector<int>> dies_after(n);  // node -> slots free once it has run
  std::map<Shape, std::vector<int>> free_slots;
  output_slot_.assign(n, {});
  for (std::size_t i = 0; i < n; ++i) {
    const StepNode& node = graph_.nodes[i];
    // Outputs take their storage before this node's inputs are released, so an output never
    // shares storage with an input of the same node.
    for (std::size_t k = 0; k < node.output_shapes.size(); ++k) {
      if (node.state_writes[k] >= 0) {
        output_slot_[i].push_back(-1);
        continue;
      }
      std::vector<int>& candidates = free_slots[node.output_shapes[k]];
      int slot;
      if (!candidates.empty()) {
        slot = candidates.back();
        candidates.pop_back();
      } else {
        slot = static_cast<int>(slots_.size());
        slots_.emplace_back(node.output_shapes[k]);
      }
      output_slot_[i].push_back(slot);
      const int last = last_use[i][k];
      if (last != INT_MAX) dies_after[static_cast<std::size_t>(last)].push_back(slot);
    }
    for (int slot : dies_after[i]) {
      free_slots[slots_[static_cast<std::size_t>(slot)].shape()].push_back(slot);
    }
  }
}

Status StepRunner::CheckState(const TrainState& state, bool all) const {
  const std::size_t need = graph_.state_names.size();
  if (all ? state.tensors.size() != need : state.tensors.size() < need) {
    return Status::InvalidArgument("state has " + std::to_string(state.tensors.size()) +
                                   " tensors, the graph expects " + std::to_string(need));
  }
  for (std::size_t i = 0; i < need; ++i) {
    const NamedTensor& nt = state.tensors[i];
    if (nt.name != graph_.state_names[i] || nt.tensor.shape() != graph_.state_shapes[i]) {
      return Status::InvalidArgument("state tensor " + std::to_string(i) + " is " + nt.name + " " +
                                     kernels::ShapeToString(nt.tensor.shape()) +
                                     ", the graph expects " + graph_.state_names[i] + " " +
                                     kernels::ShapeToString(graph_.state_shapes[i]));
    }
  }
  return Status::Ok();
}

Status StepRunner::Execute(std::span<const Tensor* const> state_in,
                           std::span<Tensor* const> state_out, const Tensor& images,
                           const Tensor* labels, std::int64_t step, kernels::Backend& backend,
                           const NodeObserver* observer, float* loss) {
  std::vector<Tensor*> slots;
  slots.reserve(slots_.size());
  for (Tensor& t : slots_) slots.push_back(&t);
  // Host tensors run one operator per Backend::Run: no fusion here (it is resident training's).
  const Status executed = internal::ExecuteGraph<Tensor>(
      graph_, output_slot_, {}, std::span<Tensor* const>(slots), state_in, state_out, images, labels,
      [&](const StepNode& node, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
        return backend.Run(node.op, AttrsForStep(node, step), in, out);
      },
      [](kernels::Fusion, std::span<const Tensor* const>, std::span<Tensor* const>) {
        return Status::Internal("host execution fuses no operators");
      },
      [&](const StepNode& node, std::span<Tensor* const> out) {
        if (observer == nullptr || !*observer) return Status::Ok();
        return (*observer)(node, std::span<const Tensor* const>(out.data(), out.size()));
      });
  POLNODE_RETURN_IF_ERROR(executed);
  if (loss != nullptr) *loss = slots_[static_cast<std::size_t>(output_slot_[static_cast<std::size_t>(graph_.loss_node)][0])].data()[0];
  return Status::Ok();
}

Result<float> StepRunner::Step(TrainState& state, const Tensor& images, const Tensor& labels,
                               kernels::Backend& backend, const NodeObserver* observer) {
  if (graph_.loss_node < 0)
    return Status::InvalidArgument("Step needs a training graph, not a forward graph");
  POLNODE_RETURN_IF_ERROR(CheckState(state, true));
  if (images.shape() != graph_.images_shape || labels.shape() != graph_.labels_shape) {
    return Status::InvalidArgument("batch is " + kernels::ShapeToString(images.shape()) + " / " +
                                   kernels::ShapeToString(labels.shape()) + ", the graph expects " +
                                   kernels::ShapeToString(graph_.images_shape) + " / " +
                                   kernels::ShapeToString(graph_.labels_shape));
  }
  std::vector<const Tensor*> state_in;
  std::vector<Tensor*> state_out;
  for (NamedTensor& nt : state.tensors) {
    state_in.push_back(&nt.tensor);
    state_out.push_back(&nt.tensor);
  }
  float loss = 0.0f;
  POLNODE_RETURN_IF_ERROR(
      Execute(state_in, state_out, images, &labels, state.step, backend, observer, &loss));
  ++state.step;
  return loss;
}

Result<const Tensor*> StepRunner::Forward(const TrainState& state, const Tensor& images,
                                          kernels::Backend& backend, const NodeObserver* observer) {
  POLNODE_RETURN_IF_ERROR(CheckState(state, false));
  if (images.shape() != graph_.images_shape) {
    return Status::InvalidArgument("images are " + kernels::ShapeToString(images.shape()) +
                                   ", the graph expects " +
                                   kernels::ShapeToString(graph_.images_shape));
  }
  std::vector<const Tensor*> state_in;
  for (std::size_t i = 0; i < graph_.state_names.size(); ++i)
    state_in.push_back(&state.tensors[i].tensor);
  POLNODE_RETURN_IF_ERROR(
      Execute(state_in, {}, images, nullptr, state.step, backend, observer, nullptr));
  const int slot = output_slot_[static_cast<std::size_t>(graph_.logits_node)][0];
  return &slots_[static_cast<std::size_t>(slot)];
}

Result<std::vector<Tensor>> RunSingleNode(const StepNode& node, std::int64_t step,
                                          std::span<const Tensor* const> inputs,
                                          kernels::Backend& backend) {
  if (inputs.size() != node.inputs.size() || inputs.size() > kMaxInputs ||
      node.output_shapes.size() > kMaxOutputs) {
    return BadNode(node, "given " + std::to_string(inputs.size()) + " inputs, needs " +
                             std::to_string(node.inputs.size()));
  }
  std::vector<Tensor> viewed_copies(inputs.size());
  std::array<const Tensor*, kMaxInputs> in{};
  for (std::size_t j = 0; j < inputs.size(); ++j) {
    in[j] = inputs[j];
    if (!node.inputs[j].view.empty()) {
      viewed_copies[j] = *inputs[j];
      POLNODE_RETURN_IF_ERROR(viewed_copies[j].Reshape(node.inputs[j].view).WithContext(node.name));
      in[j] = &viewed_copies[j];
    }
  }
  std::vector<Tensor> outputs(node.output_shapes.size());
  std::array<Tensor*, kMaxOutputs> out{};
  for (std::size_t k = 0; k < outputs.size(); ++k) out[k] = &outputs[k];
  POLNODE_RETURN_IF_ERROR(backend.Run(node.op, AttrsForStep(node, step),
                                      std::span(in.data(), inputs.size()),
                                      std::span(out.data(), outputs.size())));
  return outputs;
}

}  // namespace polnode::solver
