// validate_run.h: the checks every Backend::Run performs before touching an output, shared by all
// backends so that a bad call fails the same way (same code, same message) everywhere.
#ifndef POLNODE_KERNELS_VALIDATE_RUN_H_
#define POLNODE_KERNELS_VALIDATE_RUN_H_

#include <span>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/tensor.h"

namespace polnode::kernels {

/// True when op.h allows output `out` of `op` to be the same tensor as input `in` (the optimizer
/// updates in place: W' = W, V' = V, M' = M; kAdd's sum over either addend).
bool OutputMayAliasInput(Op op, int out, int in);

/// Checks a Run call: output count, no null output, no output that is another output or an input
/// (unless OutputMayAliasInput), then InferOutputShapes. Returns the output shapes; on error
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
