// Proofs of learning and task documents over HTTP (DESIGN.md sections 4 and 5): the solver serves
// every proof it holds under its Merkle root, the submitter serves its task documents by task id,
// and whoever fetches one checks it against what the ledger names.
//
//   GET {base}/v1/proofs/{root hex}/manifest        the manifest.pb bytes
//   GET {base}/v1/proofs/{root hex}/blobs/{hash hex} a checkpoint blob (content-addressed)
//   GET {base}/v1/specs/{task id hex}               a task document (protobuf form)
//
// A proof's URI, as committed on the ledger, is "{base}/v1/proofs/{root hex}".
#ifndef POLNODE_RPC_PROOF_HTTP_H_
#define POLNODE_RPC_PROOF_HTTP_H_

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/rpc/fetch_policy.h"
#include "polnode/rpc/http_types.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/proof_manifest.h"
#include "polnode/solver/task_spec.h"

namespace polnode::node {

/// The solver's side: serves the proof directories registered with it. Thread-safe.
class ProofServer {
 public:
  /// Serves `dir` (written by solver::Prove; its manifest must decode) under its Merkle root, and
  /// returns that root.
  [[nodiscard]] Result<consensus::Hash256> Add(const std::string& dir);
  /// Answers the routes above (405 with Allow for methods other than GET and HEAD); nullopt for any
  /// other path.
  std::optional<HttpResponse> Handle(const HttpRequest& request) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> dirs_;  // root hex -> proof directory
};

/// The URI of the proof with `root` served at `base_url` ("http://host:port").
std::string ProofUri(const std::string& base_url, const consensus::Hash256& root);

// The fetches below take URIs from the ledger and go through FetchGet under `policy`
// (http_client.h): kPermissionDenied when the policy refuses the URI, kResourceExhausted for an
// answer over the policy's or the document kind's size limit, kInvalidArgument for a malformed URI.

/// Fetches the manifest of the proof at `proof_uri` and checks that it is self-consistent and
/// that its Merkle root is `expected_root` (kCorruption otherwise); kUnavailable when the server
/// cannot be reached or does not answer 200.
[[nodiscard]] Result<solver::ProofManifest> FetchManifest(const FetchPolicy& policy, const std::string& proof_uri,
                                                          const consensus::Hash256& expected_root);

/// Makes sure `store` holds blob `hash` of the proof at `proof_uri`, downloading it if needed;
/// bytes that solver::BlobHasName refuses for `hash` are refused (kCorruption) and not stored.
[[nodiscard]] Status FetchBlob(const FetchPolicy& policy, const std::string& proof_uri, const consensus::Hash256& hash,
                               solver::BlobStore& store);

/// The spec URI a submitter serving at `base_url` gives `document`.
std::string TaskDocumentUri(const std::string& base_url, const solver::TaskSpec& document);

/// Downloads the task document served at `spec_uri` (the protobuf form, as the submitter serves it)
/// and decodes it; kUnavailable when it cannot be fetched, DecodeTaskProto's errors for bad bytes.
/// The caller then checks it with solver::CheckSpecBinding against the ledger's task before
/// trusting it.
[[nodiscard]] Result<solver::TaskSpec> FetchTaskDocument(const FetchPolicy& policy, const std::string& spec_uri);

}  // namespace polnode::node

#endif  // POLNODE_RPC_PROOF_HTTP_H_
