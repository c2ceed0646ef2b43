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
  /// GPT models: windows of the validation split (and of the training split) whose mean loss is
  /// reported (TextSplitLoss).
  std::int64_t eval_windows = 200;
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
  std::optional<EvalResult> test;  // set when TrainConfig::evaluate (image models)
  /// GPT models, when TrainConfig::evaluate: TextSplitLoss over the training and validation
  /// splits (val_loss is unset when the validation split is shorter than one window).
  std::optional<double> eval_train_loss;
  std::optional<double> val_loss;
  double elapsed_seconds = 0.0;    // the training loop alone (no data loading, no evaluation)
  double steps_per_second = 0.0;
  TrainState state;  // the final state
};

/// Loads config.data (LoadDatasetFor: a text corpus for a gpt: model) and trains on it
/// (TrainOnData).
Result<TrainSummary> Train(const TrainConfig& config, kernels::Backend& backend,
                           ProgressSink* sink);

/// Trains from InitialState(model, optimizer, seed). A gpt: model trains on data.text: step t
/// takes the windows GatherTextBatch(seed, t), `steps` steps or `epochs` * TextStepsPerEpoch.
/// Otherwise step t takes the samples at positions
/// [first, first + batch) of EpochPermutation(seed, epoch) (PositionOfStep), so every batch is a
/// pure function of (seed, t). kInvalidArgument when the model does not fit the data (input size,
/// fewer outputs than classes), the batch exceeds the training split, or a count is < 1;
/// kFailedPrecondition if the loss stops being finite (training diverged: lower the learning rate).
Result<TrainSummary> TrainOnData(const TrainConfig& config, const ImageDataset& data,
                                 kernels::Backend& backend, ProgressSink* sink);

/// Classifies every sample of `split` with the parameters of `state`: each sample's prediction is
/// its largest logit (the first one on ties), and the samples whose prediction is the label count
/// as correct. Deterministic: forward passes of `batch`
/// samples in order, then one pass over the remainder. An empty split (a text data set's) gives
/// an empty result (total 0); a GPT's quality is TextSplitLoss.
Result<EvalResult> Evaluate(const ModelSpec& model, const TrainState& state,
                            const ImageSplit& split, kernels::Backend& backend, std::int64_t batch);

/// The mean cross-entropy (natural log, in double) of `model` with the parameters of `state` over
/// up to `max_windows` consecutive, non-overlapping windows of context + 1 symbols from the start of
/// the training split (validation = false) or of the validation split, in forward passes of up to
/// `batch` windows. For reports: the softmax is computed on the host. kFailedPrecondition when the
/// split holds no window; kInvalidArgument for a model that is not a fitted GPT or counts < 1.
Result<double> TextSplitLoss(const ModelSpec& model, const TrainState& state,
                             const TextCorpus& corpus, bool validation,
                             kernels::Backend& backend, std::int64_t max_windows,
                             std::int64_t batch);

/// Generates `length` symbols after `prompt` with a fitted GPT: each symbol is drawn from the
/// softmax of the last position's logits divided by `temperature` (computed on the host in
/// double) with u = the top 53 bits of RandomU64(seed, kSampling, 0, i) / 2^53 for the i-th symbol,
/// the first symbol whose cumulative probability exceeds u; temperature 0 takes the largest logit
/// (the first on ties). The model sees the last `context` symbols (fewer at the start: causal
/// attention lets the unused tail positions hold anything). An empty prompt starts from "\n" when
/// the vocabulary has it, else from its first symbol (not part of the result). Returns the
/// generated symbols. kInvalidArgument for a prompt symbol outside the vocabulary, a negative
/// length or temperature, or a state that is not the model's.
Result<std::string> SampleText(const ModelSpec& model, const TrainState& state,
                               const TextCorpus& corpus, std::string_view prompt,
                               std::int64_t length, double temperature, std::uint64_t seed,
                               kernels::Backend& backend);

/// The model `text` names, fitted to `data`: a gpt: model gets the corpus's vocabulary
/// (WithGptVocab) and needs a text data set whose training split holds a window of context + 1
/// symbols (CheckContextFits); any other model needs an image data set it fits
/// (CheckModelFitsData). kInvalidArgument otherwise, or the parser's error.
Result<ModelSpec> ModelForData(std::string_view text, const ImageDataset& data);

/// kInvalidArgument unless `model` takes images of `split`'s size and has >= num_classes outputs.
[[nodiscard]] Status CheckModelFitsData(const ModelSpec& model, const ImageSplit& split,
                                        int num_classes);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_TRAINER_H_
