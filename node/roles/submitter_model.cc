#include "polnode/roles/submitter_model.h"

#include <filesystem>

#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/rpc/ledger_client.h"
#include "polnode/rpc/proof_http.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/onnx_model.h"
#include "polnode/solver/train_state.h"
#include "polnode/solver/trainer.h"

namespace polnode::node {
namespace {

// Test accuracy is computed in forward passes of this many samples (as `polnode train` does).
constexpr std::int64_t kEvalBatch = 1000;

consensus::Hash256 HashOf(const std::string& raw) {
  consensus::Hash256 hash{};
  std::copy(raw.begin(), raw.end(), hash.begin());
  return hash;
}

}  // namespace

Result<std::string> ResultProofUri(const std::string& proof_uri, const std::string& result_root) {
  if (result_root.size() != 32) return Status::InvalidArgument("a result root is 32 bytes");
  const std::size_t scheme = proof_uri.find("://");
  const std::size_t slash = proof_uri.rfind('/');
  if (scheme == std::string::npos || slash == std::string::npos || slash < scheme + 3) {
    return Status::InvalidArgument("proof URI '" + proof_uri + "' has no path");
  }
  return proof_uri.substr(0, slash + 1) + consensus::ToHex(result_root);
}

Result<DeliveredModel> FetchTrainedModel(const FetchPolicy& policy, const std::string& home, const proto::Task& task,
                                         const solver::TaskSpec& document, const solver::ImageDataset& data,
                                         kernels::Backend& backend) {
  if (task.result_root().empty()) return Status::FailedPrecondition("the task has no result root");
  POLNODE_ASSIGN_OR_RETURN(std::string uri, ResultProofUri(task.proof_uri(), task.result_root()));
  POLNODE_ASSIGN_OR_RETURN(solver::ProofManifest manifest, FetchManifest(policy, uri, HashOf(task.result_root())));
  if (manifest.task_id != solver::TaskId(document) || manifest.steps != document.steps ||
      manifest.checkpoint_interval != document.checkpoint_interval || manifest.checkpoint_blobs.empty()) {
    return Status::Corruption("the proof at " + uri + " is not a proof of this task's document");
  }
  POLNODE_ASSIGN_OR_RETURN(solver::BlobStore store, solver::BlobStore::Open(home + "/blobs"));
  const consensus::Hash256& blob = manifest.checkpoint_blobs.back();
  POLNODE_RETURN_IF_ERROR(FetchBlob(policy, uri, blob, store));
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, store.Get(blob));
  POLNODE_ASSIGN_OR_RETURN(solver::TrainState state, solver::DecodeState(bytes));
  const consensus::Hash256 state_hash = solver::StateHash(state);
  if (state_hash != manifest.checkpoint_hashes.back() || state.step != document.steps) {
    return Status::Corruption("the final checkpoint of the proof at " + uri + " is not the state its manifest names");
  }

  POLNODE_ASSIGN_OR_RETURN(solver::ModelSpec model, solver::TaskModelSpec(document));
  POLNODE_ASSIGN_OR_RETURN(solver::EvalResult eval, solver::Evaluate(model, state, data.test, backend, kEvalBatch));
  DeliveredModel delivered;
  delivered.path = ModelPath(home, consensus::ToHex(task.id()));
  delivered.state_hash = consensus::ToHex(state_hash);
  delivered.test_correct = eval.correct;
  delivered.test_total = eval.total;
  std::error_code ec;
  std::filesystem::create_directories(home + "/models", ec);
  if (ec) return Status::IOError("cannot create " + home + "/models: " + ec.message());
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(delivered.path, bytes));
  // The same export as `polnode export`, so the submitter holds a file onnxruntime or PyTorch runs.
  // A model the exporter cannot express is still delivered as its state; the report says why.
  Result<std::string> onnx = solver::ExportOnnx(model, state);
  if (!onnx.ok()) {
    delivered.onnx_error = onnx.status().ToString();
    return delivered;
  }
  const std::string onnx_path = OnnxPath(home, consensus::ToHex(task.id()));
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(onnx_path, *onnx));
  delivered.onnx_path = onnx_path;
  return delivered;
}

}  // namespace polnode::node
