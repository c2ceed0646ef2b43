#include "polnode/rpc/proof_http.h"

#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/rpc/http_client.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/prover.h"

namespace polnode::node {
namespace {

constexpr std::string_view kPrefix = "/v1/proofs/";

// A proof's manifest and blobs may be large and come from a busy solver: a minute per exchange.
constexpr std::chrono::seconds kProofTimeout(60);
constexpr std::chrono::seconds kDocumentTimeout(10);

HttpResponse Bytes(std::vector<std::uint8_t> bytes) {
  HttpResponse r;
  r.content_type = "application/octet-stream";
  r.body.assign(bytes.begin(), bytes.end());
  return r;
}

}  // namespace

std::string ProofUri(const std::string& base_url, const consensus::Hash256& root) {
  return base_url + std::string(kPrefix) + consensus::ToHex(root);
}

Result<consensus::Hash256> ProofServer::Add(const std::string& dir) {
  POLNODE_ASSIGN_OR_RETURN(solver::ProofDir proof, solver::OpenProofDir(dir));
  std::lock_guard<std::mutex> lock(mu_);
  dirs_[consensus::ToHex(proof.manifest.merkle_root)] = dir;
  return proof.manifest.merkle_root;
}

std::optional<HttpResponse> ProofServer::Handle(const HttpRequest& request) const {
  const std::string_view target = request.target;
  if (target.rfind(kPrefix, 0) != 0) return std::nullopt;
  if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse r = JsonErrorResponse(405, "proofs are read-only");
    r.allow = "GET, HEAD";  // a 405 must say what is allowed (RFC 9110 15.5.6)
    return r;
  }
  const std::string_view rest = target.substr(kPrefix.size());
  const std::string root = std::string(rest.substr(0, rest.find('/')));
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = dirs_.find(root);
    if (it == dirs_.end()) return JsonErrorResponse(404, "no proof with root " + root);
    dir = it->second;
  }
  const std::string_view what = rest.size() > root.size() ? rest.substr(root.size() + 1) : std::string_view();
  if (what == "manifest") {
    Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(dir + "/" + std::string(solver::kManifestFile), solver::kMaxManifestBytes);
    if (!bytes.ok()) return JsonErrorResponse(500, bytes.status().ToString());
    return Bytes(std::move(*bytes));
  }
  if (what.rfind("blobs/", 0) == 0) {
    consensus::Hash256 hash{};
    if (!consensus::HexToFixed(what.substr(6), hash).ok()) return JsonErrorResponse(400, "blob name must be 64 hex");
    Result<solver::BlobStore> store = solver::BlobStore::Open(dir + "/" + std::string(solver::kBlobDir));
    if (!store.ok()) return JsonErrorResponse(500, store.status().ToString());
    Result<std::vector<std::uint8_t>> bytes = store->Get(hash);
    if (!bytes.ok()) {
      return JsonErrorResponse(bytes.status().code() == StatusCode::kNotFound ? 404 : 500, bytes.status().ToString());
    }
    return Bytes(std::move(*bytes));
  }
  return JsonErrorResponse(404, "no such proof resource: " + std::string(target));
}

Result<solver::ProofManifest> FetchManifest(const FetchPolicy& policy, const std::string& proof_uri,
                                            const consensus::Hash256& expected_root) {
  POLNODE_ASSIGN_OR_RETURN(std::string body, FetchGet(policy, proof_uri + "/manifest", solver::kMaxManifestBytes, kProofTimeout));
  POLNODE_ASSIGN_OR_RETURN(solver::ProofManifest manifest,
                           solver::DecodeManifest(std::span(reinterpret_cast<const std::uint8_t*>(body.data()), body.size())));
  POLNODE_RETURN_IF_ERROR(solver::CheckManifestIntegrity(manifest));
  if (manifest.merkle_root != expected_root) {
    return Status::Corruption("the manifest served at " + proof_uri + " has root " + consensus::ToHex(manifest.merkle_root) +
                              ", not the committed " + consensus::ToHex(expected_root));
  }
  return manifest;
}

Status FetchBlob(const FetchPolicy& policy, const std::string& proof_uri, const consensus::Hash256& hash,
                 solver::BlobStore& store) {
  if (store.Contains(hash) && store.Get(hash).ok()) return Status::Ok();
  POLNODE_ASSIGN_OR_RETURN(std::string body,
                           FetchGet(policy, proof_uri + "/blobs/" + consensus::ToHex(hash), solver::kMaxBlobBytes, kProofTimeout));
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(body.data()), body.size());
  if (!solver::BlobHasName(hash, bytes)) {
    return Status::Corruption("blob " + consensus::ToHex(hash) + " served at " + proof_uri + " does not have its name's hash");
  }
  return store.PutNamed(hash, bytes);
}

Result<solver::TaskSpec> FetchTaskDocument(const FetchPolicy& policy, const std::string& spec_uri) {
  POLNODE_ASSIGN_OR_RETURN(std::string body, FetchGet(policy, spec_uri, solver::kMaxTaskBytes, kDocumentTimeout));
  return solver::DecodeTaskProto(std::span(reinterpret_cast<const std::uint8_t*>(body.data()), body.size()));
}

std::string TaskDocumentUri(const std::string& base_url, const solver::TaskSpec& document) {
  return base_url + "/v1/specs/" + consensus::ToHex(solver::TaskId(document));
}

}  // namespace polnode::node
