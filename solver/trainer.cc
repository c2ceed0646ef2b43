#include "polnode/consensus/hex.h"
#include "polnode/solver/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <string_view>

#include "polnode/solver/philox.h"
#include "polnode/solver/resident_training.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/step_runner.h"
#include "polnode/solver/task_steps.h"

namespace polnode::solver {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Index of the largest value, the first one on ties (NaN never wins).
std::int64_t ArgMax(const float* row, std::int64_t n) {
  std::int64_t best = 0;
  for (std::int64_t c = 1; c < n; ++c) {
    if (row[c] > row[best]) best = c;
  }
  return best;
}

// Classifies `count` samples starting at `first` in one forward pass: appends each one's predicted
// class to result.predictions and counts the correct ones in result.correct.
Status Classify(StepRunner& runner, const TrainState& state, const ImageSplit& split, std::int64_t first,
                std::int64_t count, kernels::Backend& backend, kernels::Tensor& images, kernels::Tensor& labels,
                EvalResult& result) {
  std::vector<std::uint32_t> indices(static_cast<std::size_t>(count));
  std::iota(indices.begin(), indices.end(), static_cast<std::uint32_t>(first));
  POLNODE_RETURN_IF_ERROR(GatherBatch(split, indices, runner.graph().images_shape, images, labels));
  POLNODE_ASSIGN_OR_RETURN(const kernels::Tensor* logits, runner.Forward(state, images, backend));
  const std::int64_t classes = logits->dim(1);
  for (std::int64_t b = 0; b < count; ++b) {
    const std::int64_t predicted = ArgMax(logits->data() + b * classes, classes);
    result.predictions.push_back(static_cast<std::int32_t>(predicted));
    if (predicted == static_cast<std::int64_t>(labels.data()[b])) ++result.correct;
  }
  return Status::Ok();
}

// Mean of the last min(window, steps) losses, in double, ascending step order (reporting only:
// nothing hashes it).
double MeanOfLast(const std::vector<float>& losses, std::int64_t window) {
  const auto total = static_cast<std::int64_t>(losses.size());
  window = std::min(window, total);
  double sum = 0.0;
  for (std::int64_t t = total - window; t < total; ++t) sum += losses[static_cast<std::size_t>(t)];
  return window > 0 ? sum / static_cast<double>(window) : 0.0;
}

// The steps a run trains: config.steps, else config.epochs whole epochs of `steps_per_epoch`.
Result<std::int64_t> TotalSteps(const TrainConfig& config, std::int64_t steps_per_epoch) {
  if (config.steps > 0) return config.steps;
  if (config.epochs < 1) return Status::InvalidArgument("give steps >= 1 or epochs >= 1");
  if (config.epochs > INT64_MAX / steps_per_epoch) {
    return Status::InvalidArgument("too many epochs: " + std::to_string(config.epochs));
  }
  return config.epochs * steps_per_epoch;
}

// Trains `total` steps of `config`'s run as a task through TaskStepper, the stepper proofs,
// verifiers and disputes use: one batch schedule and one step for `polnode train` and `prove`, so
// the golden hashes of a run hold for both. Fills every field of the summary but the evaluation
// (the caller's, by model family).
Result<TrainSummary> RunSteps(const TrainConfig& config, const ImageDataset& data, std::int64_t total,
                              std::int64_t steps_per_epoch, kernels::Backend& backend, ProgressSink* sink) {
  TaskSpec task;
  task.model = config.model;
  task.data_location = config.data;
  task.dataset_hash = DatasetContentHash(data);
  task.optimizer = config.optimizer;
  task.batch = config.batch;
  task.steps = total;
  task.checkpoint_interval = total;  // a run without proof: one segment
  task.seed = config.seed;
  POLNODE_ASSIGN_OR_RETURN(TaskStepper stepper, TaskStepper::Create(task, data));
  TrainSummary summary;
  summary.state = stepper.Initial();
  summary.steps_per_epoch = steps_per_epoch;
  summary.step_losses.reserve(static_cast<std::size_t>(std::min<std::int64_t>(total, 1 << 20)));
  const Clock::time_point start = Clock::now();
  // Device-resident, as `prove` trains: the state stays in the backend's buffers and comes to the
  // host once, at the end.
  POLNODE_ASSIGN_OR_RETURN(ResidentTraining run, stepper.StartResident(summary.state, backend));
  for (std::int64_t t = 0; t < total; ++t) {
    POLNODE_ASSIGN_OR_RETURN(float loss, stepper.Step(run));
    summary.step_losses.push_back(loss);
    if (sink != nullptr) sink->OnStep({t + 1, total, t / steps_per_epoch, loss, SecondsSince(start)});
  }
  POLNODE_RETURN_IF_ERROR(run.DownloadState(summary.state));
  summary.elapsed_seconds = SecondsSince(start);
  summary.steps = total;
  summary.steps_per_second =
      summary.elapsed_seconds > 0.0 ? static_cast<double>(total) / summary.elapsed_seconds : 0.0;
  summary.train_loss = MeanOfLast(summary.step_losses, config.loss_window);
  summary.state_hash = StateHash(summary.state);
  summary.state_hash_hex = consensus::ToHex(summary.state_hash);
  summary.dataset_hash_hex = consensus::ToHex(task.dataset_hash);
  summary.backend = backend.name();
  return summary;
}

// The GPT branch of TrainOnData; `model` is fitted to data.text.
Result<TrainSummary> TrainText(const TrainConfig& config, const ModelSpec& model,
                               const ImageDataset& data, kernels::Backend& backend,
                               ProgressSink* sink) {
  const TextCorpus& corpus = *data.text;
  const std::int64_t context = model.gpt->context;
  if (config.batch < 1) return Status::InvalidArgument("batch size must be >= 1");
  if (config.loss_window < 1) return Status::InvalidArgument("loss window must be >= 1");
  const std::int64_t steps_per_epoch = TextStepsPerEpoch(corpus, config.batch, context);
  POLNODE_ASSIGN_OR_RETURN(const std::int64_t total, TotalSteps(config, steps_per_epoch));
  if (total > INT64_MAX / config.batch - 1) {
    return Status::InvalidArgument("too many steps: " + std::to_string(total));
  }
  POLNODE_ASSIGN_OR_RETURN(TrainSummary summary, RunSteps(config, data, total, steps_per_epoch, backend, sink));
  if (config.evaluate) {
    const std::int64_t eval_batch = std::min<std::int64_t>(config.eval_batch, 64);
    POLNODE_ASSIGN_OR_RETURN(summary.eval_train_loss,
                             TextSplitLoss(model, summary.state, corpus, false, backend,
                                           config.eval_windows, eval_batch));
    Result<double> val =
        TextSplitLoss(model, summary.state, corpus, true, backend, config.eval_windows, eval_batch);
    if (val.ok()) {
      summary.val_loss = *val;
    } else if (val.status().code() != StatusCode::kFailedPrecondition) {
      return val.status();
    }
  }
  return summary;
}

Status CheckFittedGpt(const ModelSpec& model) {
  if (!model.gpt || model.params.empty()) {
    return Status::InvalidArgument("model " + model.text + " is not a GPT fitted to a corpus");
  }
  return Status::Ok();
}

// Cross-entropy of one row of logits against `target`, in double (log-sum-exp).
double RowLoss(const float* z, std::int64_t v, std::int64_t target) {
  double mx = z[0];
  for (std::int64_t c = 1; c < v; ++c) mx = std::max(mx, static_cast<double>(z[c]));
  double sum = 0.0;
  for (std::int64_t c = 0; c < v; ++c) sum += std::exp(static_cast<double>(z[c]) - mx);
  return mx + std::log(sum) - static_cast<double>(z[target]);
}

}  // namespace

Status CheckModelFitsData(const ModelSpec& model, const ImageSplit& split, int num_classes) {
  const bool is_image = model.input_shape.size() == 3;
  const kernels::Shape want = is_image ? kernels::Shape{1, split.rows, split.cols}
                                       : kernels::Shape{split.rows * split.cols};
  if (model.input_shape != want) {
    return Status::InvalidArgument(
        "model " + model.text + " takes inputs " + kernels::ShapeToString(model.input_shape) +
        " but the data has " + kernels::ShapeToString(want) + " per sample");
  }
  if (model.num_outputs() < num_classes) {
    return Status::InvalidArgument(
        "model " + model.text + " has " + std::to_string(model.num_outputs()) +
        " outputs but the data has " + std::to_string(num_classes) + " classes");
  }
  return Status::Ok();
}

Result<ModelSpec> ModelForData(std::string_view text, const ImageDataset& data) {
  POLNODE_ASSIGN_OR_RETURN(ModelSpec model, ParseModelSpec(text));
  if (model.gpt.has_value() != data.text.has_value()) {
    return Status::InvalidArgument("model " + model.text + (model.gpt ? " needs a text corpus"
                                                                       : " needs an image data set") +
                                   " but the data set is " + (data.text ? "a text corpus" : "images"));
  }
  if (!model.gpt) {
    POLNODE_RETURN_IF_ERROR(CheckModelFitsData(model, data.train, data.num_classes));
    return model;
  }
  POLNODE_ASSIGN_OR_RETURN(model, WithGptVocab(std::move(model), data.text->vocab_size()));
  POLNODE_RETURN_IF_ERROR(CheckContextFits(*data.text, model.gpt->context));
  return model;
}

Result<EvalResult> Evaluate(const ModelSpec& model, const TrainState& state,
                            const ImageSplit& split, kernels::Backend& backend,
                            std::int64_t batch) {
  if (batch < 1) return Status::InvalidArgument("evaluation batch must be >= 1");
  EvalResult result;
  // A text task's data set has no image splits: there is nothing to classify.
  if (split.count == 0) return result;
  batch = std::min(batch, split.count);
  result.total = split.count;
  result.predictions.reserve(static_cast<std::size_t>(split.count));
  kernels::Tensor images, labels;
  const std::int64_t full = split.count / batch;
  if (full > 0) {
    POLNODE_ASSIGN_OR_RETURN(StepGraph graph, BuildForwardGraph(model, batch));
    POLNODE_ASSIGN_OR_RETURN(StepRunner runner, StepRunner::Create(std::move(graph)));
    for (std::int64_t i = 0; i < full; ++i) {
      POLNODE_RETURN_IF_ERROR(Classify(runner, state, split, i * batch, batch, backend, images, labels, result));
    }
  }
  const std::int64_t rest = split.count - full * batch;
  if (rest > 0) {
    POLNODE_ASSIGN_OR_RETURN(StepGraph graph, BuildForwardGraph(model, rest));
    POLNODE_ASSIGN_OR_RETURN(StepRunner runner, StepRunner::Create(std::move(graph)));
    POLNODE_RETURN_IF_ERROR(Classify(runner, state, split, full * batch, rest, backend, images, labels, result));
  }
  return result;
}

Result<TrainSummary> Train(const TrainConfig& config, kernels::Backend& backend,
                           ProgressSink* sink) {
  POLNODE_ASSIGN_OR_RETURN(ImageDataset data, LoadDatasetFor(config.model, config.data));
  return TrainOnData(config, data, backend, sink);
}

Result<TrainSummary> TrainOnData(const TrainConfig& config, const ImageDataset& data,
                                 kernels::Backend& backend, ProgressSink* sink) {
  POLNODE_ASSIGN_OR_RETURN(ModelSpec model, ModelForData(config.model, data));
  if (model.gpt) return TrainText(config, model, data, backend, sink);
  const ImageSplit& train = data.train;
  if (config.batch < 1 || config.batch > train.count) {
    return Status::InvalidArgument("batch size " + std::to_string(config.batch) +
                                   " must be in 1.." + std::to_string(train.count) +
                                   " (the training samples)");
  }
  if (config.loss_window < 1) return Status::InvalidArgument("loss window must be >= 1");
  const std::int64_t steps_per_epoch = train.count / config.batch;
  POLNODE_ASSIGN_OR_RETURN(const std::int64_t total, TotalSteps(config, steps_per_epoch));
  if ((total - 1) / steps_per_epoch > UINT32_MAX) {
    return Status::InvalidArgument("run exceeds 2^32 epochs");
  }
  POLNODE_ASSIGN_OR_RETURN(TrainSummary summary, RunSteps(config, data, total, steps_per_epoch, backend, sink));
  if (config.evaluate) {
    POLNODE_ASSIGN_OR_RETURN(EvalResult test,
                             Evaluate(model, summary.state, data.test, backend, config.eval_batch));
    summary.test = test;
  }
  return summary;
}

Result<double> TextSplitLoss(const ModelSpec& model, const TrainState& state,
                             const TextCorpus& corpus, bool validation, kernels::Backend& backend,
                             std::int64_t max_windows, std::int64_t batch) {
  POLNODE_RETURN_IF_ERROR(CheckFittedGpt(model));
  if (max_windows < 1 || batch < 1) {
    return Status::InvalidArgument("window and batch counts must be >= 1");
  }
  const std::int64_t t = model.gpt->context;
  const std::int64_t v = model.gpt->vocab;
  const std::int64_t first = validation ? corpus.train_size : 0;
  const std::int64_t end = validation ? corpus.size() : corpus.train_size;
  const std::int64_t windows =
      std::min(max_windows, end - first >= t + 1 ? (end - first - 1) / t : 0);
  if (windows == 0) {
    return Status::FailedPrecondition(std::string(validation ? "validation" : "training") +
                                      " split is shorter than one window of " +
                                      std::to_string(t + 1) + " symbols");
  }
  double sum = 0.0;
  kernels::Tensor ids;
  for (std::int64_t w0 = 0; w0 < windows; w0 += batch) {
    const std::int64_t n = std::min(batch, windows - w0);
    POLNODE_ASSIGN_OR_RETURN(StepGraph graph, BuildForwardGraph(model, n));
    POLNODE_ASSIGN_OR_RETURN(StepRunner runner, StepRunner::Create(std::move(graph)));
    ids.Resize({n, t});
    for (std::int64_t b = 0; b < n; ++b) {
      const std::uint8_t* src = corpus.ids.data() + first + (w0 + b) * t;
      for (std::int64_t i = 0; i < t; ++i) ids.data()[b * t + i] = static_cast<float>(src[i]);
    }
    POLNODE_ASSIGN_OR_RETURN(const kernels::Tensor* logits, runner.Forward(state, ids, backend));
    for (std::int64_t b = 0; b < n; ++b) {
      const std::uint8_t* src = corpus.ids.data() + first + (w0 + b) * t;
      for (std::int64_t i = 0; i < t; ++i) {
        sum += RowLoss(logits->data() + (b * t + i) * v, v, src[i + 1]);
      }
    }
  }
  return sum / static_cast<double>(windows * t);
}

Result<std::string> SampleText(const ModelSpec& model, const TrainState& state,
                               const TextCorpus& corpus, std::string_view prompt,
                               std::int64_t length, double temperature, std::uint64_t seed,
                               kernels::Backend& backend) {
  POLNODE_RETURN_IF_ERROR(CheckFittedGpt(model));
  if (length < 0) return Status::InvalidArgument("length must be >= 0");
  if (!(temperature >= 0.0) || !std::isfinite(temperature)) {
    return Status::InvalidArgument("temperature must be finite and >= 0");
  }
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> tokens, EncodeText(corpus, prompt));
  if (tokens.empty()) {
    const auto nl = std::find(corpus.vocab.begin(), corpus.vocab.end(), std::uint8_t{'\n'});
    tokens.push_back(nl == corpus.vocab.end()
                         ? 0
                         : static_cast<std::uint8_t>(nl - corpus.vocab.begin()));
  }
  const std::int64_t t = model.gpt->context;
  const std::int64_t v = model.gpt->vocab;
  POLNODE_ASSIGN_OR_RETURN(StepGraph graph, BuildForwardGraph(model, 1));
  POLNODE_ASSIGN_OR_RETURN(StepRunner runner, StepRunner::Create(std::move(graph)));
  kernels::Tensor ids({1, t});
  std::vector<double> p(static_cast<std::size_t>(v));
  std::string out;
  for (std::int64_t i = 0; i < length; ++i) {
    const std::int64_t have = std::min<std::int64_t>(t, static_cast<std::int64_t>(tokens.size()));
    const std::uint8_t* window = tokens.data() + tokens.size() - static_cast<std::size_t>(have);
    std::fill(ids.data(), ids.data() + t, 0.0f);
    for (std::int64_t j = 0; j < have; ++j) ids.data()[j] = static_cast<float>(window[j]);
    POLNODE_ASSIGN_OR_RETURN(const kernels::Tensor* logits, runner.Forward(state, ids, backend));
    // Only the symbols the corpus has are drawn (a spec's larger vocab= leaves spare rows).
    const std::int64_t symbols = corpus.vocab_size();
    const float* z = logits->data() + (have - 1) * v;
    std::int64_t pick = ArgMax(z, symbols);
    if (temperature > 0.0) {
      double sum = 0.0;
      for (std::int64_t c = 0; c < symbols; ++c) {
        p[static_cast<std::size_t>(c)] =
            std::exp((static_cast<double>(z[c]) - static_cast<double>(z[pick])) / temperature);
        sum += p[static_cast<std::size_t>(c)];
      }
      const std::uint64_t r =
          RandomU64(seed, RandomPurpose::kSampling, 0, static_cast<std::uint64_t>(i));
      const double u = static_cast<double>(r >> 11) * 0x1.0p-53 * sum;
      double acc = 0.0;
      pick = symbols - 1;  // rounding may leave u just above the last cumulative sum
      for (std::int64_t c = 0; c < symbols; ++c) {
        acc += p[static_cast<std::size_t>(c)];
        if (acc > u) {
          pick = c;
          break;
        }
      }
    }
    tokens.push_back(static_cast<std::uint8_t>(pick));
    out.push_back(static_cast<char>(corpus.vocab[static_cast<std::size_t>(pick)]));
  }
  return out;
}

}  // namespace polnode::solver
