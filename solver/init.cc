#include "polnode/solver/init.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "polnode/solver/philox.h"

namespace polnode::solver {

kernels::Tensor InitialParameter(const ModelSpec& model, std::size_t param_index,
                                 std::uint64_t seed) {
  const ParamSpec& p = model.params[param_index];
  kernels::Tensor t(p.shape);
  if (p.is_bias) return t;
  if (p.init_one) {
    std::fill(t.data(), t.data() + t.numel(), 1.0f);
    return t;
  }
  const float bound =
      p.init_std > 0.0f ? p.init_std * std::sqrt(3.0f)
                        : std::sqrt((p.feeds_relu ? 6.0f : 3.0f) / static_cast<float>(p.fan_in));
  float* w = t.data();
  for (std::int64_t e = 0; e < t.numel(); ++e) {
    const float u =
        UniformFloat(RandomWord(seed, RandomPurpose::kInit, static_cast<std::uint32_t>(param_index),
                                static_cast<std::uint64_t>(e)));
    w[e] = (2.0f * u - 1.0f) * bound;
  }
  return t;
}

TrainState InitialState(const ModelSpec& model, OptimizerKind optimizer, std::uint64_t seed) {
  TrainState state;
  for (std::size_t i = 0; i < model.params.size(); ++i) {
    state.tensors.push_back({model.params[i].name, InitialParameter(model, i, seed)});
  }
  const std::vector<std::string> suffixes = OptimizerBufferSuffixes(optimizer);
  for (const ParamSpec& p : model.params) {
    for (const std::string& suffix : suffixes) {
      state.tensors.push_back({p.name + "." + suffix, kernels::Tensor(p.shape)});
    }
  }
  return state;
}

}  // namespace polnode::solver
