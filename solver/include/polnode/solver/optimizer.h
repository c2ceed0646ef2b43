// Optimizer hyperparameters a task fixes (DESIGN.md section 4), and the buffers each optimizer
// keeps in the training state.
#ifndef POLNODE_SOLVER_OPTIMIZER_H_
#define POLNODE_SOLVER_OPTIMIZER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"

namespace polnode::solver {

/// kSgd: PyTorch's SGD with momentum (dampening 0, no Nesterov), weight decay added to the
/// gradient (kernels::Op::kSgdMomentum). kAdam: AdamW with decoupled weight decay
/// (kernels::Op::kAdamW); with weight_decay 0 it is plain Adam.
enum class OptimizerKind : std::uint8_t { kSgd, kAdam };

/// The learning rate a run gets when it names none: 0.05 for kSgd, 0.001 for kAdam. The one
/// table of defaults: task files (ParseTaskToml), `polnode train` and OptimizerConfig all read it,
/// so one optimizer trains at one rate wherever it is asked for without a rate.
constexpr float DefaultLearningRate(OptimizerKind kind) { return kind == OptimizerKind::kAdam ? 0.001f : 0.05f; }

/// The learning rate follows nanoGPT's schedule (kernels::ScheduledLr): a linear warm-up over
/// warmup_steps, then a cosine decay to min_lr at step decay_steps (0: no decay), min_lr after
/// it. All three zero (the default): lr is constant. Weight decay applies to every parameter the
/// model does not exempt (ParamSpec::no_decay), as PyTorch does when given those parameters.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  float lr = DefaultLearningRate(OptimizerKind::kSgd);  // the peak learning rate under a schedule
  std::int64_t warmup_steps = 0;
  std::int64_t decay_steps = 0;
  float min_lr = 0.0f;
  /// Gradient-norm clipping: when > 0, every gradient is scaled by
  /// min(1, grad_clip / (global L2 norm + 1e-6)) before the update, as PyTorch's
  /// clip_grad_norm_ (step_graph.h says how). 0: no clipping.
  float grad_clip = 0.0f;
  float momentum = 0.9f;  // kSgd only
  float weight_decay = 0.0f;
  float beta1 = 0.9f;  // kAdam only
  float beta2 = 0.999f;
  float eps = 1e-8f;
};

/// "sgd" / "adam".
std::string_view OptimizerName(OptimizerKind kind);

/// Parses "sgd" or "adam" ("adamw" is accepted as a synonym of "adam").
Result<OptimizerKind> ParseOptimizerKind(std::string_view name);

/// Largest warmup_steps or decay_steps a schedule may name (keeps ScheduledLr's integers exact
/// in double).
inline constexpr std::int64_t kMaxScheduleSteps = std::int64_t{1} << 40;

/// kInvalidArgument unless: lr finite and > 0; momentum in [0, 1); weight_decay finite and >= 0;
/// beta1, beta2 in [0, 1); eps finite and > 0; warmup_steps and decay_steps in
/// [0, kMaxScheduleSteps]; decay_steps 0 or > warmup_steps; min_lr finite, in [0, lr], and 0
/// unless decay_steps > 0 (a floor without a decay would be ignored); grad_clip finite and >= 0.
[[nodiscard]] Status ValidateOptimizer(const OptimizerConfig& config);

/// True when the learning rate changes over the run (warmup_steps or decay_steps set).
bool HasLrSchedule(const OptimizerConfig& config);

/// Names of the per-parameter buffers, in state order: {"velocity"} for kSgd, {"adam_m",
/// "adam_v"} for kAdam. A parameter "fc1.w" gets buffers "fc1.w.velocity", ...
std::vector<std::string> OptimizerBufferSuffixes(OptimizerKind kind);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_OPTIMIZER_H_
