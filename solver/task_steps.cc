#include "polnode/consensus/hex.h"
#include "polnode/solver/task_steps.h"

#include <cmath>

#include "polnode/solver/init.h"
#include "polnode/solver/onnx_model.h"
#include "polnode/solver/philox.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/trainer.h"

namespace polnode::solver {

Status CheckTaskData(const TaskSpec& task, const ImageDataset& data) {
  const consensus::Hash256 actual = DatasetContentHash(data);
  if (actual != task.dataset_hash) {
    return Status::FailedPrecondition("data set hash " + consensus::ToHex(actual) +
                                      " is not the task's " + consensus::ToHex(task.dataset_hash));
  }
  return Status::Ok();
}

Result<TaskStepper> TaskStepper::Create(const TaskSpec& task, const ImageDataset& data) {
  POLNODE_RETURN_IF_ERROR(ValidateTask(task));
  ModelSpec model;
  std::vector<NamedTensor> initial;
  if (IsOnnxModel(task.model)) {
    POLNODE_ASSIGN_OR_RETURN(OnnxImport imported, LoadOnnxTaskModel(task));
    if (imported.model.gpt.has_value() != data.text.has_value()) {
      return Status::InvalidArgument(std::string("the onnx: model is ") +
                                     (imported.model.gpt ? "a GPT, which trains on a text corpus"
                                                         : "an image model, which trains on an image data set") +
                                     ", but the data set is " + (data.text ? "text" : "images"));
    }
    if (imported.model.gpt) {
      // The file fixes the vocabulary: it must cover the corpus's symbols, as a gpt: spec's vocab must.
      POLNODE_ASSIGN_OR_RETURN(imported.model, WithGptVocab(std::move(imported.model), data.text->vocab_size()));
      POLNODE_RETURN_IF_ERROR(CheckContextFits(*data.text, imported.model.gpt->context));
    } else {
      POLNODE_RETURN_IF_ERROR(CheckModelFitsData(imported.model, data.train, data.num_classes));
    }
    model = std::move(imported.model);
    initial = std::move(imported.params);
  } else {
    POLNODE_ASSIGN_OR_RETURN(model, ModelForData(task.model, data));
  }
  if (!data.text && task.batch > data.train.count) {
    return Status::InvalidArgument("task batch " + std::to_string(task.batch) + " exceeds the " +
                                   std::to_string(data.train.count) + " training samples");
  }
  POLNODE_ASSIGN_OR_RETURN(StepGraph graph, BuildTrainStepGraph(model, task.optimizer, task.batch));
  POLNODE_ASSIGN_OR_RETURN(StepRunner runner, StepRunner::Create(std::move(graph)));
  return TaskStepper(task, &data, std::move(model), std::move(initial), std::move(runner));
}

TrainState TaskStepper::Initial() const {
  if (!initial_.empty()) return ImportedInitialState(model_, initial_, task_.optimizer.kind);
  return InitialState(model_, task_.optimizer.kind, task_.seed);
}

namespace {

// The loss of the step that ended at `steps_done`, or kFailedPrecondition when it is not finite.
Result<float> CheckedLoss(float loss, std::int64_t steps_done) {
  if (!std::isfinite(loss)) {
    return Status::FailedPrecondition("training diverged at step " + std::to_string(steps_done) + " (loss " +
                                      std::to_string(loss) + "); lower the learning rate");
  }
  return loss;
}

}  // namespace

Status TaskStepper::Batch(std::int64_t step, kernels::Tensor& images, kernels::Tensor& labels) {
  if (step < 0 || step >= task_.steps) {
    return Status::FailedPrecondition("step " + std::to_string(step) + " is outside the task's " +
                                      std::to_string(task_.steps) + " steps");
  }
  if (data_->text) {
    return GatherTextBatch(*data_->text, task_.seed, step, task_.batch, model_.gpt->context, images,
                           labels);
  }
  const ImageSplit& train = data_->train;
  const std::int64_t steps_per_epoch = train.count / task_.batch;
  const BatchPosition pos = PositionOfStep(step, steps_per_epoch, task_.batch);
  // Steps run in order, so the permutation is drawn once per epoch, not once per step.
  if (pos.epoch != order_epoch_) {
    order_ = EpochPermutation(task_.seed, static_cast<std::uint32_t>(pos.epoch),
                              static_cast<std::uint32_t>(train.count));
    order_epoch_ = pos.epoch;
  }
  const std::span<const std::uint32_t> indices(order_.data() + pos.first, static_cast<std::size_t>(task_.batch));
  return GatherBatch(train, indices, runner_.graph().images_shape, images, labels);
}

Result<ResidentTraining> TaskStepper::StartResident(const TrainState& state, kernels::Backend& backend) const {
  return ResidentTraining::Start(runner_, backend, state);
}

Result<float> TaskStepper::Step(ResidentTraining& run, const NodeObserver* observer) {
  const std::int64_t step = run.step();
  if (step < 0 || step >= task_.steps) {
    return Status::FailedPrecondition("state at step " + std::to_string(step) + " is outside the task's " +
                                      std::to_string(task_.steps) + " steps");
  }
  POLNODE_RETURN_IF_ERROR(Batch(step, images_, labels_));
  POLNODE_ASSIGN_OR_RETURN(float loss, run.Step(images_, labels_, observer));
  return CheckedLoss(loss, step + 1);
}

Result<float> TaskStepper::Step(TrainState& state, kernels::Backend& backend, const NodeObserver* observer) {
  if (state.step < 0 || state.step >= task_.steps) {
    return Status::FailedPrecondition("state at step " + std::to_string(state.step) +
                                      " is outside the task's " + std::to_string(task_.steps) + " steps");
  }
  POLNODE_RETURN_IF_ERROR(Batch(state.step, images_, labels_));
  POLNODE_ASSIGN_OR_RETURN(float loss, runner_.Step(state, images_, labels_, backend, observer));
  return CheckedLoss(loss, state.step);
}

}  // namespace polnode::solver
