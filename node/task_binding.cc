#include "task_binding.h"

#include "http_client.h"
#include "polnode/consensus/hex.h"
#include "polnode/solver/pinpoint_graph.h"
#include "polnode/solver/task_steps.h"

namespace polnode::node {
namespace {

std::string Raw(const consensus::Hash256& hash) { return std::string(hash.begin(), hash.end()); }

}  // namespace

Result<proto::TaskSpec> LedgerSpecFor(const solver::TaskSpec& document, const solver::ImageDataset& data,
                                      const TaskTerms& terms) {
  POLNODE_RETURN_IF_ERROR(solver::CheckTaskData(document, data));
  POLNODE_ASSIGN_OR_RETURN(solver::TaskStepper stepper, solver::TaskStepper::Create(document, data));
  POLNODE_ASSIGN_OR_RETURN(std::vector<proto::PinpointDescriptor> descriptors,
                           solver::PinpointDescriptors(stepper.graph()));
  const solver::StepLeafLayout layout(stepper.graph());
  POLNODE_ASSIGN_OR_RETURN(solver::BatchTree batches, solver::BatchTree::Build(stepper));

  proto::TaskSpec spec;
  spec.set_model_spec(document.model);
  spec.set_dataset_hash(Raw(document.dataset_hash));
  spec.set_hyperparameters_hash(Raw(solver::TaskId(document)));
  spec.set_total_steps(static_cast<std::uint64_t>(document.steps));
  spec.set_checkpoint_interval(static_cast<std::uint64_t>(document.checkpoint_interval));
  spec.set_segments_per_verification(static_cast<std::uint32_t>(document.segments_per_check));
  spec.set_payment(terms.payment);
  spec.set_claim_window(terms.claim_window);
  spec.set_training_window(terms.training_window);
  spec.set_graph_root(Raw(solver::GraphRoot(descriptors)));
  spec.set_batch_root(Raw(batches.root()));
  spec.set_step_leaf_count(layout.leaf_count());
  spec.set_state_tensor_count(static_cast<std::uint32_t>(layout.state_count()));
  return spec;
}

Status CheckSpecBinding(const proto::TaskSpec& on_ledger, const solver::TaskSpec& document,
                        const solver::ImageDataset& data) {
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

Result<solver::TaskSpec> FetchTaskDocument(const std::string& spec_uri) {
  const std::string_view scheme = "http://";
  if (spec_uri.rfind(scheme, 0) != 0) return Status::InvalidArgument("spec URI must start with http://: '" + spec_uri + "'");
  const std::size_t slash = spec_uri.find('/', scheme.size());
  if (slash == std::string::npos) return Status::InvalidArgument("spec URI has no path: '" + spec_uri + "'");
  POLNODE_ASSIGN_OR_RETURN(HttpEndpoint endpoint, ParseHttpUrl(spec_uri.substr(0, slash)));
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(endpoint, "GET", spec_uri.substr(slash)));
  if (r.status != 200) return Status::Unavailable("GET " + spec_uri + " answered " + std::to_string(r.status));
  if (r.body.size() > solver::kMaxTaskBytes) return Status::ResourceExhausted("task document at " + spec_uri + " is too large");
  return solver::DecodeTaskProto(std::span(reinterpret_cast<const std::uint8_t*>(r.body.data()), r.body.size()));
}

std::string TaskDocumentUri(const std::string& base_url, const solver::TaskSpec& document) {
  return base_url + "/v1/specs/" + consensus::ToHex(solver::TaskId(document));
}

}  // namespace polnode::node
