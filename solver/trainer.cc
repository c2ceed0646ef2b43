#include "polnode/consensus/hex.h"
#include "polnode/solver/trainer.h"

#include <chrono>
#include <cmath>
#include <numeric>

#include "polnode/solver/init.h"
#include "polnode/solver/philox.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/step_runner.h"

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

Result<EvalResult> Evaluate(const ModelSpec& model, const TrainState& state,
                            const ImageSplit& split, kernels::Backend& backend,
                            std::int64_t batch) {
  if (batch < 1) return Status::InvalidArgument("evaluation batch must be >= 1");
  batch = std::min(batch, split.count);
  EvalResult result;
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
  POLNODE_ASSIGN_OR_RETURN(ImageDataset data, LoadImageDataset(config.data));
  return TrainOnData(config, data, backend, sink);
}

Result<TrainSummary> TrainOnData(const TrainConfig& config, const ImageDataset& data,
                                 kernels::Backend& backend, ProgressSink* sink) {
  POLNODE_ASSIGN_OR_RETURN(ModelSpec model, ParseModelSpec(config.model));
  POLNODE_RETURN_IF_ERROR(CheckModelFitsData(model, data.train, data.num_classes));
  const ImageSplit& train = data.train;
  if (config.batch < 1 || config.batch > train.count) {
    return Status::InvalidArgument("batch size " + std::to_string(config.batch) +
                                   " must be in 1.." + std::to_string(train.count) +
                                   " (the training samples)");
  }
  if (config.loss_window < 1) return Status::InvalidArgument("loss window must be >= 1");
  const std::int64_t steps_per_epoch = train.count / config.batch;
  std::int64_t total = config.steps;
  if (total <= 0) {
    if (config.epochs < 1) return Status::InvalidArgument("give steps >= 1 or epochs >= 1");
    if (config.epochs > INT64_MAX / steps_per_epoch) {
      return Status::InvalidArgument("too many epochs: " + std::to_string(config.epochs));
    }
    total = config.epochs * steps_per_epoch;
  }
  if ((total - 1) / steps_per_epoch > UINT32_MAX) {
    return Status::InvalidArgument("run exceeds 2^32 epochs");
  }

  POLNODE_ASSIGN_OR_RETURN(StepGraph graph,
                           BuildTrainStepGraph(model, config.optimizer, config.batch));
  POLNODE_ASSIGN_OR_RETURN(StepRunner runner, StepRunner::Create(std::move(graph)));
  TrainSummary summary;
  summary.state = InitialState(model, config.optimizer.kind, config.seed);
  summary.steps_per_epoch = steps_per_epoch;
  summary.step_losses.reserve(static_cast<std::size_t>(std::min<std::int64_t>(total, 1 << 20)));
  kernels::Tensor images, labels;
  std::vector<std::uint32_t> order;
  std::int64_t order_epoch = -1;

  const Clock::time_point start = Clock::now();
  for (std::int64_t t = 0; t < total; ++t) {
    const BatchPosition pos = PositionOfStep(t, steps_per_epoch, config.batch);
    if (pos.epoch != order_epoch) {
      order = EpochPermutation(config.seed, static_cast<std::uint32_t>(pos.epoch),
                               static_cast<std::uint32_t>(train.count));
      order_epoch = pos.epoch;
    }
    const std::span<const std::uint32_t> indices(order.data() + pos.first,
                                                 static_cast<std::size_t>(config.batch));
    POLNODE_RETURN_IF_ERROR(
        GatherBatch(train, indices, runner.graph().images_shape, images, labels));
    POLNODE_ASSIGN_OR_RETURN(float loss, runner.Step(summary.state, images, labels, backend));
    if (!std::isfinite(loss)) {
      return Status::FailedPrecondition("training diverged at step " + std::to_string(t + 1) +
                                        " (loss " + std::to_string(loss) +
                                        "); lower the learning rate");
    }
    summary.step_losses.push_back(loss);
    if (sink != nullptr) sink->OnStep({t + 1, total, pos.epoch, loss, SecondsSince(start)});
  }
  summary.elapsed_seconds = SecondsSince(start);
  summary.steps = total;
  summary.steps_per_second =
      summary.elapsed_seconds > 0.0 ? static_cast<double>(total) / summary.elapsed_seconds : 0.0;

  // Reporting only (nothing hashes it): summed in double, ascending step order.
  const std::int64_t window = std::min(config.loss_window, total);
  double sum = 0.0;
  for (std::int64_t t = total - window; t < total; ++t)
    sum += summary.step_losses[static_cast<std::size_t>(t)];
  summary.train_loss = sum / static_cast<double>(window);

  summary.state_hash = StateHash(summary.state);
  summary.state_hash_hex = consensus::ToHex(summary.state_hash);
  summary.dataset_hash_hex = consensus::ToHex(DatasetContentHash(data));
  summary.backend = backend.name();
  if (config.evaluate) {
    POLNODE_ASSIGN_OR_RETURN(EvalResult test,
                             Evaluate(model, summary.state, data.test, backend, config.eval_batch));
    summary.test = test;
  }
  return summary;
}

}  // namespace polnode::solver
