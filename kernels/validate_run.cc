#include "polnode/kernels/validate_run.h"

#include <cstddef>
#include <string>

namespace polnode::kernels {

bool OutputMayAliasInput(Op op, int out, int in) {
  switch (op) {
    case Op::kSgdMomentum:  // in W, G, V; out W', V'
      return (out == 0 && in == 0) || (out == 1 && in == 2);
    case Op::kAdamW:  // in W, G, M, V; out W', M', V'
      return (out == 0 && in == 0) || (out == 1 && in == 2) || (out == 2 && in == 3);
    case Op::kAdd:  // in A, B; out C, element-wise
      return out == 0;
    default:
      return false;
  }
}

Result<std::vector<Shape>> ValidateRun(Op op, const OpAttrs& attrs,
                                       std::span<const Tensor* const> inputs,
                                       std::span<Tensor* const> outputs) {
  POLNODE_RETURN_IF_ERROR(CheckRunOutputs<Tensor>(op, inputs, outputs));
  return InferOutputShapes(op, attrs, inputs);
}

Status ValidateAndResizeOutputs(Op op, const OpAttrs& attrs,
                                std::span<const Tensor* const> inputs,
                                std::span<Tensor* const> outputs) {
  POLNODE_ASSIGN_OR_RETURN(const std::vector<Shape> shapes,
                           ValidateRun(op, attrs, inputs, outputs));
  for (std::size_t o = 0; o < outputs.size(); ++o) outputs[o]->Resize(shapes[o]);
  return Status::Ok();
}

}  // namespace polnode::kernels
