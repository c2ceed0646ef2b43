#include "polnode/solver/optimizer.h"

#include <cmath>
#include <string>
#include <utility>

namespace polnode::solver {

std::string_view OptimizerName(OptimizerKind kind) {
  return kind == OptimizerKind::kSgd ? "sgd" : "adam";
}

Result<OptimizerKind> ParseOptimizerKind(std::string_view name) {
  if (name == "sgd") return OptimizerKind::kSgd;
  if (name == "adam" || name == "adamw") return OptimizerKind::kAdam;
  return Status::InvalidArgument("unknown optimizer '" + std::string(name) +
                                 "' (expected sgd or adam)");
}

Status ValidateOptimizer(const OptimizerConfig& c) {
  const auto in_unit = [](float x) { return x >= 0.0f && x < 1.0f; };  // false for NaN
  if (!(std::isfinite(c.lr) && c.lr > 0.0f)) {
    return Status::InvalidArgument("learning rate must be finite and > 0, got " +
                                   std::to_string(c.lr));
  }
  if (!in_unit(c.momentum)) {
    return Status::InvalidArgument("momentum must be in [0, 1), got " + std::to_string(c.momentum));
  }
  if (!(std::isfinite(c.weight_decay) && c.weight_decay >= 0.0f)) {
    return Status::InvalidArgument("weight decay must be finite and >= 0, got " +
                                   std::to_string(c.weight_decay));
  }
  if (!in_unit(c.beta1) || !in_unit(c.beta2)) {
    return Status::InvalidArgument("Adam betas must be in [0, 1)");
  }
  if (!(std::isfinite(c.eps) && c.eps > 0.0f)) {
    return Status::InvalidArgument("Adam eps must be finite and > 0");
  }
  for (const auto& [name, steps] : {std::pair<const char*, std::int64_t>{"warmup_steps", c.warmup_steps},
                                    {"lr_decay_steps", c.decay_steps}}) {
    if (steps < 0 || steps > kMaxScheduleSteps) {
      return Status::InvalidArgument(std::string(name) + " must be in [0, 2^40], got " +
                                     std::to_string(steps));
    }
  }
  if (c.decay_steps != 0 && c.decay_steps <= c.warmup_steps) {
    return Status::InvalidArgument("lr_decay_steps (" + std::to_string(c.decay_steps) +
                                   ") must be 0 (no decay) or greater than warmup_steps (" +
                                   std::to_string(c.warmup_steps) + ")");
  }
  if (!(std::isfinite(c.min_lr) && c.min_lr >= 0.0f && c.min_lr <= c.lr)) {
    return Status::InvalidArgument("min_lr must be finite and in [0, lr], got " +
                                   std::to_string(c.min_lr));
  }
  if (c.min_lr != 0.0f && c.decay_steps == 0) {
    return Status::InvalidArgument("min_lr needs lr_decay_steps > 0 (the decay it ends)");
  }
  if (!(std::isfinite(c.grad_clip) && c.grad_clip >= 0.0f)) {
    return Status::InvalidArgument("grad_clip must be finite and >= 0 (0: no clipping), got " +
                                   std::to_string(c.grad_clip));
  }
  return Status::Ok();
}

bool HasLrSchedule(const OptimizerConfig& c) { return c.warmup_steps != 0 || c.decay_steps != 0; }

std::vector<std::string> OptimizerBufferSuffixes(OptimizerKind kind) {
  if (kind == OptimizerKind::kSgd) return {"velocity"};
  return {"adam_m", "adam_v"};
}

}  // namespace polnode::solver
