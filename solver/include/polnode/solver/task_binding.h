// Binding a proof-of-learning task document (TaskSpec, what `polnode prove` trains) to the
// ledger's TaskSpec (contracts.proto, what the chain escrows and referees). The ledger keeps only
// hashes and counts; the document itself is served at the task's spec_uri. Both sides compute the
// same binding, so a solver or verifier can check, before working, that the document it fetched
// is the one the ledger's task names:
//   model_spec           = the document's model text
//   dataset_hash         = the document's dataset hash
//   hyperparameters_hash = TaskId(document): SHA-256 over every field of the document
//                          (so seed, optimizer, batch and mode are all bound)
//   total_steps, checkpoint_interval, segments_per_verification from the document
//   graph_root, step_leaf_count, state_tensor_count from the document's step graph
//   batch_root           = BatchRoot over the document's data order
//   tolerant             = the document's mode, and forced_delta (tolerant only) a term
#ifndef POLNODE_SOLVER_TASK_BINDING_H_
#define POLNODE_SOLVER_TASK_BINDING_H_

#include <cstdint>
#include <string>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/task_spec.h"

namespace polnode::solver {

/// The default forced_delta of a tolerant task, 2^-10: the size of a forced round's perturbation
/// of each perturbed element (consensus/forced_perturbation.h). A replay must see it and training
/// must hide it. It is far above the differences between CPU and GPU replays of a segment (float32
/// rounding: the ulp of a weight of order 1 is 2^-23), so a verifier's profiled tolerance stays
/// below half of it, and well below what a segment of training moves a weight, so the perturbed
/// elements do not stand out from their neighbouring checkpoints. A power of two, so that D / 2 is
/// exact.
inline constexpr float kDefaultForcedDelta = 0.0009765625f;

/// What the submitter chooses beyond the document: the payment, the windows and, for a tolerant
/// document, the forced rounds' perturbation size.
struct TaskTerms {
  std::uint64_t payment = 0;
  std::uint64_t claim_window = 20;
  std::uint64_t training_window = 40;
  /// TaskSpec.forced_delta of a tolerant document (finite and > 0); exact documents ignore it.
  float forced_delta = kDefaultForcedDelta;
};

/// The ledger TaskSpec for `document` over `data` (which must be the document's data set:
/// kFailedPrecondition otherwise), with the terms; forced_delta is terms.forced_delta for a
/// tolerant document and 0 for an exact one. kInvalidArgument for a tolerant document whose
/// terms.forced_delta is not finite and positive. Errors of the step graph's construction pass
/// through.
[[nodiscard]] Result<proto::TaskSpec> LedgerSpecFor(const TaskSpec& document, const ImageDataset& data,
                                                    const TaskTerms& terms);

/// Ok when `on_ledger` is exactly LedgerSpecFor(document, data, its own terms: payment, windows
/// and forced_delta), floats compared by their bits; otherwise kFailedPrecondition naming the first
/// field that differs (forced_delta when a tolerant document's is not finite and positive), or
/// kInternal for a TaskSpec field of a type the comparison does not know.
[[nodiscard]] Status CheckSpecBinding(const proto::TaskSpec& on_ledger, const TaskSpec& document,
                                      const ImageDataset& data);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_TASK_BINDING_H_
