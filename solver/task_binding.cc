#include "polnode/solver/task_binding.h"

#include <cmath>
#include <cstring>

#include "polnode/solver/pinpoint_graph.h"
#include "polnode/solver/task_steps.h"
#include "polnode/solver/train_state.h"

namespace polnode::solver {
namespace {

std::string Raw(const consensus::Hash256& hash) { return std::string(hash.begin(), hash.end()); }

bool ValidForcedDelta(float delta) { return std::isfinite(delta) && delta > 0.0f; }

std::uint32_t Bits(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

}  // namespace

Result<proto::TaskSpec> LedgerSpecFor(const TaskSpec& document, const ImageDataset& data,
                                      const TaskTerms& terms) {
  const bool tolerant = document.mode == solver::ReproMode::kTolerant;
  if (tolerant && !ValidForcedDelta(terms.forced_delta)) {
    return Status::InvalidArgument("a tolerant task's forced_delta must be finite and positive, not " +
                                   std::to_string(terms.forced_delta));
  }
  POLNODE_RETURN_IF_ERROR(CheckTaskData(document, data));
  POLNODE_ASSIGN_OR_RETURN(TaskStepper stepper, TaskStepper::Create(document, data));
  POLNODE_ASSIGN_OR_RETURN(std::vector<proto::PinpointDescriptor> descriptors,
                           PinpointDescriptors(stepper.graph()));
  const StepLeafLayout layout(stepper.graph());
  POLNODE_ASSIGN_OR_RETURN(BatchTree batches, BatchTree::Build(stepper));

  proto::TaskSpec spec;
  spec.set_model_spec(document.model);
  spec.set_dataset_hash(Raw(document.dataset_hash));
  spec.set_hyperparameters_hash(Raw(TaskId(document)));
  spec.set_total_steps(static_cast<std::uint64_t>(document.steps));
  spec.set_checkpoint_interval(static_cast<std::uint64_t>(document.checkpoint_interval));
  spec.set_segments_per_verification(static_cast<std::uint32_t>(document.segments_per_check));
  spec.set_payment(terms.payment);
  spec.set_claim_window(terms.claim_window);
  spec.set_training_window(terms.training_window);
  spec.set_graph_root(Raw(GraphRoot(descriptors)));
  spec.set_batch_root(Raw(batches.root()));
  spec.set_step_leaf_count(layout.leaf_count());
  spec.set_state_tensor_count(static_cast<std::uint32_t>(layout.state_count()));
  spec.set_tolerant(tolerant);
  // Exact forced rounds flip a bit and have no perturbation size (the ledger requires 0).
  spec.set_forced_delta(tolerant ? terms.forced_delta : 0.0f);
  // The ledger holds a proof's checkpoint 0 to this (CommitProofTx.initial_proof).
  spec.set_initial_state_hash(Raw(solver::StateHash(stepper.Initial())));
  return spec;
}

Status CheckSpecBinding(const proto::TaskSpec& on_ledger, const TaskSpec& document,
                        const ImageDataset& data) {
  TaskTerms terms;
  terms.payment = on_ledger.payment();
  terms.claim_window = on_ledger.claim_window();
  terms.training_window = on_ledger.training_window();
  terms.forced_delta = on_ledger.forced_delta();
  if (document.mode == solver::ReproMode::kTolerant && !ValidForcedDelta(terms.forced_delta)) {
    return Status::FailedPrecondition(
        "the task document does not match the ledger's task: field forced_delta must be finite and positive");
  }
  POLNODE_ASSIGN_OR_RETURN(proto::TaskSpec expected, LedgerSpecFor(document, data, terms));
  const auto* descriptor = expected.GetDescriptor();
  const auto* reflection = expected.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const auto* field = descriptor->field(i);
    std::string a, b;
    using google::protobuf::FieldDescriptor;
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      a = reflection->GetString(expected, field);
      b = reflection->GetString(on_ledger, field);
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_UINT32) {
      a = std::to_string(reflection->GetUInt32(expected, field));
      b = std::to_string(reflection->GetUInt32(on_ledger, field));
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_BOOL) {
      a = reflection->GetBool(expected, field) ? "true" : "false";
      b = reflection->GetBool(on_ledger, field) ? "true" : "false";
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
      // By the bits: the ledger's arithmetic on the value is bitwise, and -0 or another NaN
      // payload is another task.
      a = std::to_string(Bits(reflection->GetFloat(expected, field)));
      b = std::to_string(Bits(reflection->GetFloat(on_ledger, field)));
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_UINT64) {
      a = std::to_string(reflection->GetUInt64(expected, field));
      b = std::to_string(reflection->GetUInt64(on_ledger, field));
    } else {
      // A field added to TaskSpec with a new type must be bound here before any task is checked.
      return Status::Internal("the task binding cannot compare TaskSpec field " + field->name());
    }
    if (a != b) {
      return Status::FailedPrecondition("the task document does not match the ledger's task: field " + field->name() +
                                        " differs");
    }
  }
  return Status::Ok();
}

}  // namespace polnode::solver
