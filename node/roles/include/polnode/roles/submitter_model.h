// The submitter's last step: taking delivery of the trained model of a settled task. The model is
// the final checkpoint of the proof the ledger names as the task's result (result_root: the
// committed proof, or the solver's honest one after a forced-error round), fetched from the
// solver and checked against that root before anything is trusted.
#ifndef POLNODE_ROLES_SUBMITTER_MODEL_H_
#define POLNODE_ROLES_SUBMITTER_MODEL_H_

#include <string>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/kernels/backend.h"
#include "polnode/roles/submitter_report.h"
#include "polnode/rpc/fetch_policy.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/task_spec.h"

namespace polnode::node {

/// The URI of the proof with root `result_root` (raw 32 bytes) from the solver that served
/// `proof_uri` ("{base}/v1/proofs/{root hex}"): its last path component replaced.
/// kInvalidArgument when proof_uri has no path or result_root is not 32 bytes.
[[nodiscard]] Result<std::string> ResultProofUri(const std::string& proof_uri, const std::string& result_root);

/// Fetches the model of `task` (closed with a result_root), under `policy`: the manifest of the result proof
/// (FetchManifest: self-consistent, root = result_root), which must be for `document`
/// (task id, steps and checkpoint interval); the final checkpoint blob (into the blob store
/// DIR/blobs, checked against its content hash), decoded and checked against the manifest's last
/// state hash and the document's step count. Then evaluates it on `data`'s test split with
/// `backend` and writes its bytes to ModelPath(home, task id hex), and the model as ONNX
/// (solver::ExportOnnx, as `polnode export` writes it) to OnnxPath(home, task id hex); a model the
/// exporter refuses is still delivered, with the refusal in onnx_error and no onnx_path.
/// kUnavailable when the solver cannot be reached or does not serve the proof (worth retrying);
/// kCorruption for anything that does not check out; kFailedPrecondition for a task without a
/// result_root; IO errors pass through.
[[nodiscard]] Result<DeliveredModel> FetchTrainedModel(const FetchPolicy& policy, const std::string& home,
                                                       const proto::Task& task,
                                                       const solver::TaskSpec& document,
                                                       const solver::ImageDataset& data, kernels::Backend& backend);

}  // namespace polnode::node

#endif  // POLNODE_ROLES_SUBMITTER_MODEL_H_
