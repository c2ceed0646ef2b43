// A dishonest party for tests of the pinpoint game and of verification: a Backend decorator that
// corrupts one operator output of one training step and is otherwise the backend it wraps. Every
// later node reads the corrupted value, so a proof or a game's answers built on it are consistently
// wrong from that operator on, as a cheating solver's would be.
//
// It identifies nodes by counting calls: StepRunner runs every node of a step as exactly one
// Backend::Run call, in canonical order, and TaskStepper calls the backend for nothing else. So
// call c after positioning at step s is node c mod nodes_per_step of step s + c / nodes_per_step.
// Callers that also run forward passes, or jump between states, re-position with Seek.
#ifndef POLNODE_SOLVER_TAMPERING_BACKEND_H_
#define POLNODE_SOLVER_TAMPERING_BACKEND_H_

#include <cstdint>
#include <span>
#include <string>

#include "polnode/base/status.h"
#include "polnode/kernels/backend.h"

namespace polnode::solver {

/// Which value to corrupt: bit `bit` of element `element` of output `output` of node `node` in
/// the step that starts from `step` completed steps. The default bit, the top mantissa bit, changes
/// a normal number by up to half its magnitude. Where that value might not reach the state after
/// the step (the loss, or a gradient element a ReLU masks), `also_node` >= 0 corrupts the same bit
/// of element 0 of output 0 of that later node of the step too, so the proof is wrong while the
/// first wrong value is still the target.
struct TamperSpec {
  std::int64_t step = 0;
  int node = 0;
  int output = 0;
  int bit = 22;
  std::int64_t element = 0;
  int also_node = -1;
};

class TamperingBackend final : public kernels::Backend {
 public:
  /// Wraps `inner` (which must outlive this) for a step graph of `nodes_per_step` nodes; the next
  /// call is node 0 of step `next_step`. Precondition: nodes_per_step >= 1, 0 <= bit < 32.
  TamperingBackend(kernels::Backend& inner, std::size_t nodes_per_step, TamperSpec target,
                   std::int64_t next_step = 0);

  /// Positions the count: the next call is node 0 of step `step`.
  void Seek(std::int64_t step);

  /// How many times the target has been corrupted (once per run through the target step).
  int tamper_count() const { return tamper_count_; }

  /// The wrapped backend's name: a cheating party claims the honest backend.
  std::string name() const override { return inner_.name(); }

  /// The wrapped backend's host threads, for work between steps.
  int host_threads() const override { return inner_.host_threads(); }
  void RunHostTasks(std::int64_t tasks, const std::function<void(std::int64_t)>& task) override {
    inner_.RunHostTasks(tasks, task);
  }

  /// Runs the call on the wrapped backend, then corrupts the output when this call is the target.
  [[nodiscard]] Status Run(kernels::Op op, const kernels::OpAttrs& attrs,
                           std::span<const kernels::Tensor* const> inputs,
                           std::span<kernels::Tensor* const> outputs) override;

 private:
  kernels::Backend& inner_;
  std::size_t nodes_per_step_;
  TamperSpec target_;
  std::int64_t step_ = 0;      // the step the next call belongs to
  std::size_t next_node_ = 0;  // the node the next call runs
  int tamper_count_ = 0;
};

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_TAMPERING_BACKEND_H_
