// validate_run.h: the checks every Backend::Run performs before touching an output, shared by all
// backends so that a bad call fails the same way (same code, same message) everywhere.
#ifndef POLNODE_KERNELS_VALIDATE_RUN_H_
#define POLNODE_KERNELS_VALIDATE_RUN_H_

#include <span>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/tensor.h"

namespace polnode::kernels {

/// True when op.h allows output `out` of `op` to be the same tensor as input `in` (the optimizer
/// updates in place: W' = W, V' = V, M' = M; kAdd's sum over either addend).
bool OutputMayAliasInput(Op op, int out, int in);

/// The operand checks of a Run or Enqueue call on any handle type (tensors, buffers): output
/// count, no null output, no output that is another output or an input (unless
/// OutputMayAliasInput). The messages name tensors either way.
template <typename Handle>
Status CheckRunOutputs(Op op, std::span<const Handle* const> inputs, std::span<Handle* const> outputs) {
  const std::string name(OpName(op));
  if (static_cast<int>(outputs.size()) != NumOutputs(op)) {
    return Status::InvalidArgument(name + " has " + std::to_string(NumOutputs(op)) + " outputs, got " +
                                   std::to_string(outputs.size()));
  }
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    if (outputs[o] == nullptr) return Status::InvalidArgument(name + ": output " + std::to_string(o) + " is null");
    for (std::size_t p = 0; p < o; ++p) {
      if (outputs[p] == outputs[o]) {
        return Status::InvalidArgument(name + ": outputs " + std::to_string(p) + " and " + std::to_string(o) +
                                       " are the same tensor");
      }
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] == outputs[o] && !OutputMayAliasInput(op, static_cast<int>(o), static_cast<int>(i))) {
        return Status::InvalidArgument(name + ": output " + std::to_string(o) + " is the same tensor as input " +
                                       std::to_string(i) + ", which this operator does not allow");
      }
    }
  }
  return Status::Ok();
}

/// Checks a Run call: CheckRunOutputs, then InferOutputShapes. Returns the output shapes; on error
/// nothing has been modified.
Result<std::vector<Shape>> ValidateRun(Op op, const OpAttrs& attrs,
                                       std::span<const Tensor* const> inputs,
                                       std::span<Tensor* const> outputs);

/// ValidateRun, then resizes every output to its shape. The usual first line of Backend::Run.
[[nodiscard]] Status ValidateAndResizeOutputs(Op op, const OpAttrs& attrs,
                                              std::span<const Tensor* const> inputs,
                                              std::span<Tensor* const> outputs);

}  // namespace polnode::kernels

#endif  // POLNODE_KERNELS_VALIDATE_RUN_H_
