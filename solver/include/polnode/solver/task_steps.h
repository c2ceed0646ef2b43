// Runs the training steps a task defines, one at a time, from any state: what the prover runs
// from step 0 and what a verifier runs from a checkpoint. Step t always takes the batch at
// PositionOfStep(t) of EpochPermutation(task seed, epoch), so replaying from a checkpoint sees
// exactly the data the solver saw. A gpt: task's step t takes the windows GatherTextBatch(task
// seed, t) of its text corpus instead.
#ifndef POLNODE_SOLVER_TASK_STEPS_H_
#define POLNODE_SOLVER_TASK_STEPS_H_

#include <cstdint>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/resident_training.h"
#include "polnode/solver/step_runner.h"
#include "polnode/solver/task_spec.h"
#include "polnode/solver/train_state.h"

namespace polnode::solver {

/// kFailedPrecondition unless DatasetContentHash(data) is the task's dataset_hash.
[[nodiscard]] Status CheckTaskData(const TaskSpec& task, const ImageDataset& data);

class TaskStepper {
 public:
  /// Builds the task's step graph. `data` must outlive the stepper. kInvalidArgument when the
  /// task is invalid, the model does not fit the data or the batch exceeds the training split.
  /// Does not hash the data (CheckTaskData does). An onnx: model is read from task.model_location
  /// and checked against its hash (LoadOnnxTaskModel, whose errors it returns).
  static Result<TaskStepper> Create(const TaskSpec& task, const ImageDataset& data);

  /// InitialState of the task: a pure function of model, optimizer and seed; for an onnx: model,
  /// the file's parameters and zero optimizer buffers (ImportedInitialState).
  TrainState Initial() const;
  /// Runs step state.step (one batch) and returns its loss. kFailedPrecondition when the state is
  /// already at the task's last step or the loss is not finite. `observer`, when given, sees every
  /// node's outputs (the pinpoint game hashes them); see StepRunner::Step.
  Result<float> Step(TrainState& state, kernels::Backend& backend,
                     const NodeObserver* observer = nullptr);

  /// Starts device-resident training from `state` on `backend` (ResidentTraining::Start on the
  /// task's step runner): the stepper and the backend must outlive the run and stay where they are.
  Result<ResidentTraining> StartResident(const TrainState& state, kernels::Backend& backend) const;
  /// Step, on a resident run: the batch of step run.step(), the same checks (the task's last step,
  /// a finite loss) and the same bits.
  Result<float> Step(ResidentTraining& run, const NodeObserver* observer = nullptr);

  /// Fills `images` and `labels` with the batch that step `step` (the step that starts from `step`
  /// completed steps) trains on: the same data order Step uses, for the pinpoint game's batch
  /// leaves. kFailedPrecondition outside [0, task.steps).
  [[nodiscard]] Status Batch(std::int64_t step, kernels::Tensor& images, kernels::Tensor& labels);

  const ModelSpec& model() const { return model_; }
  const TaskSpec& task() const { return task_; }
  /// The task's training step graph (what the pinpoint game's descriptors describe).
  const StepGraph& graph() const { return runner_.graph(); }

 private:
  TaskStepper(TaskSpec task, const ImageDataset* data, ModelSpec model, std::vector<NamedTensor> initial,
              StepRunner runner)
      : task_(std::move(task)), data_(data), model_(std::move(model)), initial_(std::move(initial)),
        runner_(std::move(runner)) {}
  TaskSpec task_;
  const ImageDataset* data_;
  ModelSpec model_;
  std::vector<NamedTensor> initial_;  // an onnx: model's parameters at step 0; empty otherwise
  StepRunner runner_;
  std::int64_t order_epoch_ = -1;  // epoch whose permutation `order_` holds
  std::vector<std::uint32_t> order_;
  kernels::Tensor images_, labels_;
};

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_TASK_STEPS_H_
