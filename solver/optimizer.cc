#include "polnode/solver/optimizer.h"

#include <cmath>
#include <string>

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
  return Status::Ok();
}

std::vector<std::string> OptimizerBufferSuffixes(OptimizerKind kind) {
  if (kind == OptimizerKind::kSgd) return {"velocity"};
  return {"adam_m", "adam_v"};
}

}  // namespace polnode::solver
