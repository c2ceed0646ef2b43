// Device-resident training (issue 19): the training state and every intermediate value of a step
// live in a backend's buffers between steps. Each step uploads its batch and downloads its loss;
// the state crosses to the host only when the caller asks (checkpoints). On the CPU backends a
// buffer is host memory, so a resident step is the host step plus those two small copies; on a GPU
// it replaces Backend::Run's copy of every operand of every operator (for the MLP 784-256-128-10
// at batch 128: 86 copies and 10.2 MB per step down to 2 uploads and 1 download, 0.4 MB).
#ifndef POLNODE_SOLVER_RESIDENT_TRAINING_H_
#define POLNODE_SOLVER_RESIDENT_TRAINING_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/tensor.h"
#include "polnode/solver/step_runner.h"
#include "polnode/solver/train_state.h"

namespace polnode::solver {

class ResidentTraining {
 public:
  /// Allocates the state, the runner's planned intermediate values and the batch in `backend`'s
  /// buffers and uploads `state`. `runner` and `backend` must outlive the run. kInvalidArgument for
  /// a forward graph or a state whose names or shapes differ from the graph's layout; the
  /// backend's allocation and upload errors.
  static Result<ResidentTraining> Start(const StepRunner& runner, kernels::Backend& backend, const TrainState& state);

  ResidentTraining(ResidentTraining&&) = default;
  ResidentTraining& operator=(ResidentTraining&&) = default;

  /// The completed steps of the resident state.
  std::int64_t step() const { return step_; }

  /// One training step, exactly StepRunner::Step's (the same operators on the same operands, so
  /// the same bits): checks the batch's shapes and, on the host, the values of every batch input
  /// an operator reads as indices (labels, token ids), uploads the batch, enqueues every node,
  /// downloads the mean loss and returns it. With an observer, each node's outputs are downloaded
  /// for it after the node runs (what the pinpoint game needs: slow, and only for disputes).
  /// kInvalidArgument (nothing changed) for a batch of the wrong shape or with a bad index; a
  /// backend or observer error mid-step leaves the resident state partly updated (discard the run).
  Result<float> Step(const kernels::Tensor& images, const kernels::Tensor& labels,
                     const NodeObserver* observer = nullptr);

  /// Writes the resident state into `state`: the graph's names and shapes, step(). Waits for the
  /// backend; its errors.
  [[nodiscard]] Status DownloadState(TrainState& state) const;

  /// Replaces the resident state by `state`, which must have the graph's layout
  /// (kInvalidArgument otherwise); step() becomes state.step. For a caller that changed the state
  /// on the host between steps (a forced round's falsified checkpoint).
  [[nodiscard]] Status UploadState(const TrainState& state);

 private:
  // A batch input that an operator reads as indices, and the bound its values must stay below.
  struct BatchIndexInput {
    SourceKind source;
    kernels::Op op;
    kernels::IndexInput index;
  };

  ResidentTraining(const StepRunner& runner, kernels::Backend& backend) : runner_(&runner), backend_(&backend) {}

  const StepRunner* runner_;
  kernels::Backend* backend_;
  std::vector<std::unique_ptr<kernels::Buffer>> state_;
  std::vector<std::unique_ptr<kernels::Buffer>> slots_;
  std::unique_ptr<kernels::Buffer> images_;
  std::unique_ptr<kernels::Buffer> labels_;
  std::vector<BatchIndexInput> batch_indices_;
  std::int64_t step_ = 0;
};

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_RESIDENT_TRAINING_H_
