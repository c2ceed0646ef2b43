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
  const std::string name(OpName(op));
  if (static_cast<int>(outputs.size()) != NumOutputs(op)) {
    return Status::InvalidArgument(name + " has " + std::to_string(NumOutputs(op)) +
                                   " outputs, got " + std::to_string(outputs.size()));
  }
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    if (outputs[o] == nullptr) {
      return Status::InvalidArgument(name + ": output " + std::to_string(o) + " is null");
    }
    for (std::size_t p = 0; p < o; ++p) {
      if (outputs[p] == outputs[o]) {
        return Status::InvalidArgument(name + ": outputs " + std::to_string(p) + " and " +
                                       std::to_string(o) + " are the same tensor");
      }
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] == outputs[o] &&
          !OutputMayAliasInput(op, static_cast<int>(o), static_cast<int>(i))) {
        return Status::InvalidArgument(name + ": output " + std::to_string(o) +
                                       " is the same tensor as input " + std::to_string(i) +
                                       ", which this operator does not allow");
      }
    }
  }
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
