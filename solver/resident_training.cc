#include "polnode/solver/resident_training.h"

#include <string>

#include "graph_executor.h"

namespace polnode::solver {

using kernels::Buffer;
using kernels::Tensor;

Result<ResidentTraining> ResidentTraining::Start(const StepRunner& runner, kernels::Backend& backend,
                                                 const TrainState& state) {
  const StepGraph& graph = runner.graph_;
  if (graph.loss_node < 0) return Status::InvalidArgument("resident training needs a training graph, not a forward graph");
  POLNODE_RETURN_IF_ERROR(runner.CheckState(state, true));
  ResidentTraining run(runner, backend);
  for (const kernels::Shape& shape : graph.state_shapes) {
    POLNODE_ASSIGN_OR_RETURN(run.state_.emplace_back(), backend.Allocate(shape));
  }
  for (const Tensor& slot : runner.slots_) {
    POLNODE_ASSIGN_OR_RETURN(run.slots_.emplace_back(), backend.Allocate(slot.shape()));
  }
  POLNODE_ASSIGN_OR_RETURN(run.images_, backend.Allocate(graph.images_shape));
  POLNODE_ASSIGN_OR_RETURN(run.labels_, backend.Allocate(graph.labels_shape));
  // Which batch inputs operators read as indices: a device backend cannot check them once they are
  // uploaded (backend.h Enqueue), so every step checks them here.
  for (const StepNode& node : graph.nodes) {
    std::vector<kernels::Shape> shapes;
    for (const TensorRef& r : node.inputs) shapes.push_back(RefShape(graph, r));
    std::vector<const kernels::Shape*> pointers;
    for (const kernels::Shape& shape : shapes) pointers.push_back(&shape);
    std::vector<kernels::IndexInput> indices;
    POLNODE_RETURN_IF_ERROR(
        kernels::InferOutputShapesOf(node.op, AttrsForStep(node, 0), pointers, &indices).status().WithContext(node.name));
    for (const kernels::IndexInput& index : indices) {
      const SourceKind source = node.inputs[static_cast<std::size_t>(index.input)].source;
      if (source == SourceKind::kBatchImages || source == SourceKind::kBatchLabels) {
        run.batch_indices_.push_back({source, node.op, index});
      }
    }
  }
  POLNODE_RETURN_IF_ERROR(run.UploadState(state));
  return run;
}

Result<float> ResidentTraining::Step(const Tensor& images, const Tensor& labels, const NodeObserver* observer) {
  const StepGraph& graph = runner_->graph_;
  if (images.shape() != graph.images_shape || labels.shape() != graph.labels_shape) {
    return Status::InvalidArgument("batch is " + kernels::ShapeToString(images.shape()) + " / " +
                                   kernels::ShapeToString(labels.shape()) + ", the graph expects " +
                                   kernels::ShapeToString(graph.images_shape) + " / " +
                                   kernels::ShapeToString(graph.labels_shape));
  }
  for (const BatchIndexInput& b : batch_indices_) {
    const Tensor& values = b.source == SourceKind::kBatchImages ? images : labels;
    POLNODE_RETURN_IF_ERROR(kernels::CheckIndexValues(b.op, b.index, values.values()));
  }
  POLNODE_RETURN_IF_ERROR(backend_->Upload(images.values(), *images_));
  POLNODE_RETURN_IF_ERROR(backend_->Upload(labels.values(), *labels_));

  std::vector<Buffer*> slots;
  for (const auto& b : slots_) slots.push_back(b.get());
  std::vector<Buffer*> state;
  for (const auto& b : state_) state.push_back(b.get());
  const std::vector<const Buffer*> state_in(state.begin(), state.end());
  std::vector<Tensor> observed;  // host copies of a node's outputs, for the observer
  const std::int64_t step = step_;
  const Status executed = internal::ExecuteGraph<Buffer>(
      graph, runner_->output_slot_, runner_->fusions_, std::span<Buffer* const>(slots),
      std::span<const Buffer* const>(state_in), std::span<Buffer* const>(state), *images_, labels_.get(),
      [&](const StepNode& node, std::span<const Buffer* const> in, std::span<Buffer* const> out) {
        return backend_->Enqueue(node.op, AttrsForStep(node, step), in, out);
      },
      [&](kernels::Fusion fusion, std::span<const Buffer* const> in, std::span<Buffer* const> out) {
        return backend_->EnqueueFused(fusion, in, out);
      },
      [&](const StepNode& node, std::span<Buffer* const> out) -> Status {
        if (observer == nullptr || !*observer) return Status::Ok();
        observed.resize(out.size());
        std::vector<const Tensor*> views;
        for (std::size_t k = 0; k < out.size(); ++k) {
          observed[k].Resize(out[k]->shape());
          POLNODE_RETURN_IF_ERROR(backend_->Download(*out[k], observed[k].values()));
          views.push_back(&observed[k]);
        }
        return (*observer)(node, views);
      });
  POLNODE_RETURN_IF_ERROR(executed);
  const int loss_slot = runner_->output_slot_[static_cast<std::size_t>(graph.loss_node)][0];
  float loss = 0.0f;
  POLNODE_RETURN_IF_ERROR(backend_->Download(*slots_[static_cast<std::size_t>(loss_slot)], std::span<float>(&loss, 1)));
  ++step_;
  return loss;
}

Status ResidentTraining::DownloadState(TrainState& state) const {
  const StepGraph& graph = runner_->graph_;
  state.step = step_;
  state.tensors.resize(graph.state_names.size());
  for (std::size_t i = 0; i < state_.size(); ++i) {
    NamedTensor& t = state.tensors[i];
    t.name = graph.state_names[i];
    t.tensor.Resize(graph.state_shapes[i]);
    POLNODE_RETURN_IF_ERROR(backend_->Download(*state_[i], t.tensor.values()));
  }
  return Status::Ok();
}

Status ResidentTraining::UploadState(const TrainState& state) {
  POLNODE_RETURN_IF_ERROR(runner_->CheckState(state, true));
  for (std::size_t i = 0; i < state_.size(); ++i) {
    POLNODE_RETURN_IF_ERROR(backend_->Upload(state.tensors[i].tensor.values(), *state_[i]));
  }
  step_ = state.step;
  return Status::Ok();
}

}  // namespace polnode::solver
