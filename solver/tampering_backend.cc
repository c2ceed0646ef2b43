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
  if (step != target_.step || node != static_cast<std::size_t>(target_.node)) return Status::Ok();
  const std::size_t k = static_cast<std::size_t>(target_.output);
  if (k >= outputs.size() || outputs[k]->numel() == 0) {
    return Status::Internal("tamper target output " + std::to_string(target_.output) + " does not exist");
  }
  float& x = outputs[k]->data()[0];
  std::uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  bits ^= std::uint32_t{1} << target_.bit;
  std::memcpy(&x, &bits, sizeof bits);
  ++tamper_count_;
  return Status::Ok();
}

}  // namespace polnode::solver
