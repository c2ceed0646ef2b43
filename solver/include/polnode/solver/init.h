// Initial weights as a pure function of the task seed (DESIGN.md section 4), so a verifier
// recomputes them instead of testing their distribution.
//
// Weights: uniform U[-bound, bound) with variance gain^2 / fan_in:
//   bound = sqrt(6 / fan_in)  for layers that end in a ReLU (He/Kaiming uniform, gain^2 = 2),
//   bound = sqrt(3 / fan_in)  for the final, logit layer (LeCun uniform, gain^2 = 1: no ReLU
//                             halves its output variance, and the smaller logits let the default
//                             learning rate train CNNs without an early blow-up);
//   (the quotient rounded once in float, then the correctly rounded float square root)
//   w[e] = (2 * u - 1) * bound, u = UniformFloat(RandomWord(seed, kInit, p, e))
// where p is the parameter's index in ModelSpec::params and e the element's row-major index.
// 2u - 1 is exact, so each weight carries a single rounding (the product). Biases start at +0.0f,
// and every optimizer buffer at +0.0f.
// GPT parameters (ParamSpec::init_std > 0) use bound = init_std * sqrt(3) instead (float sqrt,
// then one rounded product): standard deviation init_std, as nanoGPT's normal(0, 0.02) has.
// LayerNorm gains (ParamSpec::init_one) start at 1.0f, shifts at +0.0f.
#ifndef POLNODE_SOLVER_INIT_H_
#define POLNODE_SOLVER_INIT_H_

#include <cstdint>

#include "polnode/kernels/tensor.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/optimizer.h"
#include "polnode/solver/train_state.h"

namespace polnode::solver {

/// The initial value of parameter `param_index` of `model` under `seed`, per the rule above.
/// Precondition: param_index < model.params.size().
kernels::Tensor InitialParameter(const ModelSpec& model, std::size_t param_index,
                                 std::uint64_t seed);

/// The state at step 0: every parameter initialised, every optimizer buffer zero, in state order
/// (train_state.h).
TrainState InitialState(const ModelSpec& model, OptimizerKind optimizer, std::uint64_t seed);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_INIT_H_
