// The task a submitter posts (DESIGN.md section 4): model, data set, every hyperparameter, seed,
// checkpoint interval and verification settings. Initial weights and data order are pure
// functions of it, so the solver chooses nothing that changes the result.
//
// Three forms: the struct below; a TOML file for people (a `key = value` subset: one pair per
// line, "double-quoted strings" without escapes, decimal integers and floats, `#` comments); and
// the protobuf message polnode.pol.TaskSpec for storage. The task id is SHA-256 over the canonical
// encoding (consensus/encoding.h):
//   String "polnode/pol-task/v1", String model, Fixed dataset_hash, String optimizer,
//   F32 lr, momentum, weight_decay, beta1, beta2, eps, I64 batch, steps, checkpoint_interval,
//   U64 seed, String mode, I64 segments_per_check,
// and, only when the learning rate has a schedule (HasLrSchedule), String "lr-schedule/v1",
// I64 warmup_steps, lr_decay_steps, F32 min_lr, and, only with gradient clipping (grad_clip > 0),
// String "grad-clip/v1", F32 grad_clip (a task with neither has the id it always had).
// The data location is not part of the id: where bytes come from does not matter, their hash does.
#ifndef POLNODE_SOLVER_TASK_SPEC_H_
#define POLNODE_SOLVER_TASK_SPEC_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/solver/optimizer.h"

namespace polnode::solver {

/// kExact: replays must reproduce checkpoint hashes bit for bit. kTolerant: replays are compared
/// by distance against profiled thresholds.
enum class ReproMode : std::uint8_t { kExact, kTolerant };

struct TaskSpec {
  std::string model;                  // ModelSpec text, or "onnx:<sha256>" (solver/onnx_model.h)
  std::string model_location;         // an onnx: model's file (not part of the task id, as data)
  std::string data_location;          // directory for LoadImageDataset
  consensus::Hash256 dataset_hash{};  // DatasetContentHash the data must have
  OptimizerConfig optimizer;
  std::int64_t batch = 0;
  std::int64_t steps = 0;
  std::int64_t checkpoint_interval = 0;  // k; steps must be a multiple of it
  std::uint64_t seed = 0;
  ReproMode mode = ReproMode::kExact;
  std::int64_t segments_per_check = 1;  // Q

  /// Checkpoints in a proof: steps / k + 1 (step 0 included).
  std::int64_t checkpoint_count() const { return steps / checkpoint_interval + 1; }
};

/// Largest encoded task accepted from outside (protobuf or TOML).
inline constexpr std::size_t kMaxTaskBytes = 64 * 1024;
/// Most checkpoints a task may ask for, which bounds every manifest.
inline constexpr std::int64_t kMaxCheckpoints = 1 << 20;

/// kInvalidArgument naming the field unless: the model parses (a built-in spec, or "onnx:" and 64
/// lowercase hex digits), the optimizer is valid, batch,
/// steps and k are >= 1, steps is a multiple of k, steps / k < kMaxCheckpoints, and
/// 1 <= segments_per_check <= steps / k.
[[nodiscard]] Status ValidateTask(const TaskSpec& task);

/// Parses the TOML form. Keys: model, model_file (an onnx: model's file), data, dataset_hash (64 hex), optimizer, lr, momentum,
/// weight_decay, beta1, beta2, eps, warmup_steps, lr_decay_steps, min_lr, grad_clip, batch, steps,
/// checkpoint_interval, seed, mode ("exact" or "tolerant"), segments. Required: model, dataset_hash, batch, steps, checkpoint_interval, seed;
/// the others default as OptimizerConfig does, lr by the optimizer (DefaultLearningRate), data
/// "fashion-mnist", mode exact, segments 1.
/// kInvalidArgument with the line number for a syntax error, an unknown or repeated key, a value
/// of the wrong type, or a task ValidateTask refuses; kResourceExhausted above kMaxTaskBytes.
Result<TaskSpec> ParseTaskToml(std::string_view text);

/// The protobuf wire form (deterministic serialization).
std::string EncodeTaskProto(const TaskSpec& task);
/// Decodes the wire form from untrusted bytes: kResourceExhausted above kMaxTaskBytes,
/// kCorruption for bytes that are not a TaskSpec message or carry a malformed field,
/// kInvalidArgument for a task ValidateTask refuses.
Result<TaskSpec> DecodeTaskProto(std::span<const std::uint8_t> bytes);

/// SHA-256 of the canonical encoding above.
consensus::Hash256 TaskId(const TaskSpec& task);

std::string_view ReproModeName(ReproMode mode);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_TASK_SPEC_H_
