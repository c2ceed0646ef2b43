#include "polnode/solver/task_binding.h"

#include "polnode/solver/pinpoint_graph.h"
#include "polnode/solver/task_steps.h"
#include "polnode/solver/train_state.h"

namespace polnode::solver {
namespace {

std::string Raw(const consensus::Hash256& hash) { return std::string(hash.begin(), hash.end()); }

}  // namespace

Result<proto::TaskSpec> LedgerSpecFor(const TaskSpec& document, const ImageDataset& data,
                                      const TaskTerms& terms) {
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
  spec.set_tolerant(document.mode == solver::ReproMode::kTolerant);
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
  POLNODE_ASSIGN_OR_RETURN(proto::TaskSpec expected, LedgerSpecFor(document, data, terms));
  const auto* descriptor = expected.GetDescriptor();
  const auto* reflection = expected.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const auto* field = descriptor->field(i);
    std::string a, b;
    if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_STRING) {
      a = reflection->GetString(expected, field);
      b = reflection->GetString(on_ledger, field);
    } else if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT32) {
      a = std::to_string(reflection->GetUInt32(expected, field));
      b = std::to_string(reflection->GetUInt32(on_ledger, field));
    } else if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_BOOL) {
      a = reflection->GetBool(expected, field) ? "true" : "false";
      b = reflection->GetBool(on_ledger, field) ? "true" : "false";
    } else {
      a = std::to_string(reflection->GetUInt64(expected, field));
      b = std::to_string(reflection->GetUInt64(on_ledger, field));
    }
    if (a != b) {
      return Status::FailedPrecondition("the task document does not match the ledger's task: field " + field->name() +
                                        " differs");
    }
  }
  return Status::Ok();
}

}  // namespace polnode::solver
