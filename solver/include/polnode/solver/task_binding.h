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
#ifndef POLNODE_SOLVER_TASK_BINDING_H_
#define POLNODE_SOLVER_TASK_BINDING_H_

#include <cstdint>
#include <string>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/task_spec.h"

namespace polnode::solver {

/// What the submitter chooses beyond the document: the payment and the windows.
struct TaskTerms {
  std::uint64_t payment = 0;
  std::uint64_t claim_window = 20;
  std::uint64_t training_window = 40;
};

/// The ledger TaskSpec for `document` over `data` (which must be the document's data set:
/// kFailedPrecondition otherwise). Errors of the step graph's construction pass through.
[[nodiscard]] Result<proto::TaskSpec> LedgerSpecFor(const TaskSpec& document, const ImageDataset& data,
                                                    const TaskTerms& terms);

/// Ok when `on_ledger` is exactly LedgerSpecFor(document, data, its own terms); otherwise
/// kFailedPrecondition naming the first field that differs.
[[nodiscard]] Status CheckSpecBinding(const proto::TaskSpec& on_ledger, const TaskSpec& document,
                                      const ImageDataset& data);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_TASK_BINDING_H_
