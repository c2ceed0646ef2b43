#include "polnode/solver/tampering_backend.h"

#include <cstring>

namespace polnode::solver {

TamperingBackend::TamperingBackend(kernels::Backend& inner, std::size_t nodes_per_step, TamperSpec target,
                                   std::int64_t next_step)
    : inner_(inner), nodes_per_step_(nodes_per_step), target_(target), step_(next_step) {}

void TamperingBackend::Seek(std::int64_t step) {
  step_ = step;
  next_node_ = 0;
}

Status TamperingBackend::Run(kernels::Op op, const kernels::OpAttrs& attrs,
                             std::span<const kernels::Tensor* const> inputs,
                             std::span<kernels::Tensor* const> outputs) {
  const std::int64_t step = step_;
  const std::size_t node = next_node_;
  // Advance first, so a failed call still counts as the node it was: StepRunner stops the step
  // on a failure, and the caller re-positions before the next one.
  if (++next_node_ == nodes_per_step_) {
    next_node_ = 0;
    ++step_;
  }
  POLNODE_RETURN_IF_ERROR(inner_.Run(op, attrs, inputs, outputs));
  if (step != target_.step) return Status::Ok();
  auto flip = [&](std::size_t k, std::int64_t element) -> Status {
    if (k >= outputs.size() || element < 0 || element >= outputs[k]->numel()) {
      return Status::Internal("tamper target element " + std::to_string(element) + " of output " + std::to_string(k) +
                              " does not exist");
    }
    float& x = outputs[k]->data()[element];
    std::uint32_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    bits ^= std::uint32_t{1} << target_.bit;
    std::memcpy(&x, &bits, sizeof bits);
    return Status::Ok();
  };
  if (node == static_cast<std::size_t>(target_.node)) {
    POLNODE_RETURN_IF_ERROR(flip(static_cast<std::size_t>(target_.output), target_.element));
    ++tamper_count_;
  }
  if (target_.also_node >= 0 && node == static_cast<std::size_t>(target_.also_node)) {
    POLNODE_RETURN_IF_ERROR(flip(0, 0));
  }
  return Status::Ok();
}

}  // namespace polnode::solver
