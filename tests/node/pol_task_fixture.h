// Shared by the verifier and whistleblower suites: the tiny synthetic task proved for real with
// solver::Prove (honestly, or with a TamperingBackend as a cheating solver), and a loopback HTTP
// server that serves its document (as a submitter does) and its proofs (as a solver does),
// recording every request it answered.
#ifndef POLNODE_TESTS_NODE_POL_TASK_FIXTURE_H_
#define POLNODE_TESTS_NODE_POL_TASK_FIXTURE_H_

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "polnode/consensus/keys.h"
#include "polnode/kernels/backend.h"
#include "polnode/rpc/http_server.h"
#include "polnode/rpc/proof_http.h"
#include "polnode/solver/forced_round.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/tampering_backend.h"
#include "polnode/solver/task_steps.h"
#include "polnode/testing/fashion_mnist.h"
#include "polnode/testing/ledger_fixtures.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_task.h"

namespace polnode::node::testing {

using polnode::testing::KeyFromByte;
using polnode::testing::RawPubKey;

inline std::string RawHash(const consensus::Hash256& hash) { return std::string(hash.begin(), hash.end()); }

/// The fetch policy of a node whose peers all serve on loopback, as in these tests (the default
/// policy refuses loopback): what the devnet writes into every role home.
inline FetchPolicy LoopbackFetchPolicy() {
  return *FetchPolicy::Make("http", "loopback", FetchPolicy::kDefaultMaxBytes, FetchPolicy::kDefaultMaxRedirects);
}

/// A proof of the tiny task written by the real prover, signed by `solver`; with `tamper`, every
/// step runs through a TamperingBackend, so the proof is wrong from that step on.
struct TinyProof {
  std::unique_ptr<polnode::testing::TempDir> dir;
  solver::ProofManifest manifest;
};

/// The backend a tiny proof trains on: the reference backend, or with a tamper one that flips
/// the tamper's bit once (a cheat).
class ProvingBackend {
 public:
  ProvingBackend(const solver::TaskSpec& task, const solver::ImageDataset& data,
                 std::optional<solver::TamperSpec> tamper)
      : reference_(kernels::MakeReferenceBackend()) {
    if (!tamper) return;
    Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task, data);
    EXPECT_TRUE(stepper.ok());
    tampering_ = std::make_unique<solver::TamperingBackend>(*reference_, stepper->graph().nodes.size(), *tamper);
  }
  kernels::Backend& get() { return tampering_ ? *tampering_ : *reference_; }
  // After the proof: a tamper must have struck exactly once.
  void ExpectTampered() const {
    if (tampering_) {
      EXPECT_EQ(tampering_->tamper_count(), 1);
    }
  }

 private:
  std::unique_ptr<kernels::Backend> reference_;
  std::unique_ptr<solver::TamperingBackend> tampering_;
};

inline TinyProof ProveTiny(const solver::TaskSpec& task, const solver::ImageDataset& data,
                           const consensus::SecretKey& solver_key, std::optional<solver::TamperSpec> tamper) {
  TinyProof proof;
  proof.dir = std::make_unique<polnode::testing::TempDir>("role-proof");
  ProvingBackend backend(task, data, tamper);
  solver::ProveOptions options;
  options.out_dir = proof.dir->path();
  options.key = &solver_key;
  Result<solver::ProveResult> result = solver::Prove(task, data, backend.get(), options);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  backend.ExpectTampered();
  if (result.ok()) proof.manifest = result->manifest;
  return proof;
}

/// A forced round of the tiny task, as the solver role makes it: the committed proof, trained with
/// `round`'s forced checkpoints falsified (solver::ForcedCheckpointHook), and the result proof
/// beside it (solver::WriteResultProof), both signed by `solver`. A tolerant round without an
/// honest_dir keeps its honest values in `honest`, a directory of its own. With `tamper`, the
/// training is also a cheat from the tamper's step on (in both proofs).
struct ForcedTinyProof {
  TinyProof committed;
  TinyProof result;
  std::unique_ptr<polnode::testing::TempDir> honest;
};

inline ForcedTinyProof ProveTinyForced(const solver::TaskSpec& task, const solver::ImageDataset& data,
                                       const consensus::SecretKey& solver_key, solver::ForcedRound round,
                                       std::optional<solver::TamperSpec> tamper = std::nullopt) {
  ForcedTinyProof proof;
  proof.committed.dir = std::make_unique<polnode::testing::TempDir>("role-proof-committed");
  proof.result.dir = std::make_unique<polnode::testing::TempDir>("role-proof-result");
  proof.honest = std::make_unique<polnode::testing::TempDir>("role-proof-honest");
  if (round.honest_dir.empty()) round.honest_dir = proof.honest->path();
  ProvingBackend backend(task, data, tamper);
  solver::ProveOptions options;
  options.out_dir = proof.committed.dir->path();
  options.key = &solver_key;
  options.on_checkpoint = solver::ForcedCheckpointHook(round, task.checkpoint_interval);
  Result<solver::ProveResult> result = solver::Prove(task, data, backend.get(), options);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  backend.ExpectTampered();
  if (!result.ok()) return proof;
  proof.committed.manifest = result->manifest;
  Result<consensus::Hash256> root =
      solver::WriteResultProof(proof.committed.dir->path(), proof.result.dir->path(), round, solver_key);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  Result<solver::ProofDir> written = solver::OpenProofDir(proof.result.dir->path());
  EXPECT_TRUE(written.ok()) << written.status().ToString();
  if (written.ok()) proof.result.manifest = written->manifest;
  return proof;
}

/// Serves task documents at /v1/specs/{id hex} and proofs at /v1/proofs/... on 127.0.0.1, and
/// records the target of every request.
class TaskServer {
 public:
  TaskServer() {
    HttpServerOptions options;
    Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(
        options, [this](const HttpRequest& request) { return Handle(request); }, [](int) {});
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  /// Serves `document`; returns its spec URI.
  std::string AddDocument(const solver::TaskSpec& document) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string uri = TaskDocumentUri(url(), document);
    documents_[uri.substr(url().size())] = solver::EncodeTaskProto(document);
    return uri;
  }

  /// Serves the proof in `dir`; returns its proof URI.
  std::string AddProof(const std::string& dir) {
    Result<consensus::Hash256> root = proofs_.Add(dir);
    EXPECT_TRUE(root.ok()) << root.status().ToString();
    return ProofUri(url(), *root);
  }

  std::vector<std::string> Requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

  /// How many requests asked for a target containing `part`.
  int CountRequests(const std::string& part) const {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const std::string& target : requests_) n += target.find(part) != std::string::npos ? 1 : 0;
    return n;
  }

 private:
  HttpResponse Handle(const HttpRequest& request) {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request.target);
    if (auto it = documents_.find(request.target); it != documents_.end()) {
      HttpResponse r;
      r.content_type = "application/x-protobuf";
      r.body = it->second;
      return r;
    }
    if (std::optional<HttpResponse> r = proofs_.Handle(request)) return std::move(*r);
    return JsonErrorResponse(404, "no such resource");
  }

  ProofServer proofs_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> documents_;  // path -> encoded document
  std::vector<std::string> requests_;
  std::unique_ptr<HttpServer> server_;  // last: stopped before the rest goes
};

}  // namespace polnode::node::testing

#endif  // POLNODE_TESTS_NODE_POL_TASK_FIXTURE_H_
