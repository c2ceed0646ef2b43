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

/// The learning rate is constant over the run (the only schedule: it needs no transcendental
/// and leaves nothing to interpretation). Weight decay applies to every parameter, biases
/// included, as PyTorch does when given all parameters.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  float lr = DefaultLearningRate(OptimizerKind::kSgd);
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

/// kInvalidArgument unless: lr finite and > 0; momentum in [0, 1); weight_decay finite and >= 0;
/// beta1, beta2 in [0, 1); eps finite and > 0.
[[nodiscard]] Status ValidateOptimizer(const OptimizerConfig& config);

/// Names of the per-parameter buffers, in state order: {"velocity"} for kSgd, {"adam_m",
/// "adam_v"} for kAdam. A parameter "fc1.w" gets buffers "fc1.w.velocity", ...
std::vector<std::string> OptimizerBufferSuffixes(OptimizerKind kind);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_OPTIMIZER_H_
