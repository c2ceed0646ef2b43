// The trainer: runs a task's training steps on a data set and reports what a solver publishes
// (state hash, losses) and what a user wants to know (test accuracy, speed).
#ifndef POLNODE_SOLVER_TRAINER_H_
#define POLNODE_SOLVER_TRAINER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/optimizer.h"
#include "polnode/solver/train_state.h"

namespace polnode::solver {

struct TrainConfig {
  std::string model = "mlp:784-256-128-10";
  std::string data = "fashion-mnist";  // a directory for LoadImageDataset
  /// Steps to run when > 0; otherwise `epochs` full epochs (epochs * steps_per_epoch steps).
  std::int64_t steps = 0;
  std::int64_t epochs = 3;
  std::int64_t batch = 128;
  OptimizerConfig optimizer;
  std::uint64_t seed = 1;
  /// The reported train loss is the mean of the last min(loss_window, steps) step losses.
  std::int64_t loss_window = 100;
  /// Evaluate test accuracy after training (forward passes of eval_batch samples, the remainder
  /// in one smaller batch).
  bool evaluate = true;
  std::int64_t eval_batch = 1000;
};

/// Progress of a run, reported after every step.
struct StepProgress {
  std::int64_t step = 0;   // steps completed, 1..total
  std::int64_t total = 0;  // steps in the run
  std::int64_t epoch = 0;  // epoch of the step just run (0-based)
  float loss = 0.0f;       // that step's mean batch loss
  double elapsed_seconds = 0.0;
};

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  /// Called on the training thread after each step; keep it cheap.
  virtual void OnStep(const StepProgress& progress) = 0;
};

struct EvalResult {
  std::int64_t correct = 0;
  std::int64_t total = 0;
  std::vector<std::int32_t> predictions;  // each sample's predicted class, in split order
  double accuracy() const {
    return total > 0 ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
  }
};

struct TrainSummary {
  consensus::Hash256 state_hash{};  // StateHash of the final state
  std::string state_hash_hex;
  std::string dataset_hash_hex;  // DatasetContentHash of the data trained on
  std::string backend;           // Backend::name()
  std::int64_t steps = 0;
  std::int64_t steps_per_epoch = 0;
  double train_loss = 0.0;         // see TrainConfig::loss_window
  std::vector<float> step_losses;  // every step's loss, in order (the proof manifest's losses)
  std::optional<EvalResult> test;  // set when TrainConfig::evaluate
  double elapsed_seconds = 0.0;    // the training loop alone (no data loading, no evaluation)
  double steps_per_second = 0.0;
  TrainState state;  // the final state
};

/// Loads config.data and trains on it (TrainOnData).
Result<TrainSummary> Train(const TrainConfig& config, kernels::Backend& backend,
                           ProgressSink* sink);

/// Trains from InitialState(model, optimizer, seed). Step t takes the samples at positions
/// [first, first + batch) of EpochPermutation(seed, epoch) (PositionOfStep), so every batch is a
/// pure function of (seed, t). kInvalidArgument when the model does not fit the data (input size,
/// fewer outputs than classes), the batch exceeds the training split, or a count is < 1;
/// kFailedPrecondition if the loss stops being finite (training diverged: lower the learning rate).
Result<TrainSummary> TrainOnData(const TrainConfig& config, const ImageDataset& data,
                                 kernels::Backend& backend, ProgressSink* sink);

/// Classifies every sample of `split` with the parameters of `state`: each sample's prediction is
/// its largest logit (the first one on ties), and the samples whose prediction is the label count
/// as correct. Deterministic: forward passes of `batch`
/// samples in order, then one pass over the remainder.
Result<EvalResult> Evaluate(const ModelSpec& model, const TrainState& state,
                            const ImageSplit& split, kernels::Backend& backend, std::int64_t batch);

/// kInvalidArgument unless `model` takes images of `split`'s size and has >= num_classes outputs.
[[nodiscard]] Status CheckModelFitsData(const ModelSpec& model, const ImageSplit& split,
                                        int num_classes);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_TRAINER_H_
