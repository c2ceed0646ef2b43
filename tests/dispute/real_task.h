// Real tasks for dispute games: tiny models on the synthetic data set of the solver tests, the
// ledger's TaskSpec computed from the model (graph root, batch root, leaf and tensor counts), and
// proofs written by solver::Prove, honest or through a TamperingBackend (a cheating solver).
#ifndef POLNODE_TESTS_DISPUTE_REAL_TASK_H_
#define POLNODE_TESTS_DISPUTE_REAL_TASK_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/contracts.pb.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/proof_manifest.h"
#include "polnode/solver/step_graph.h"
#include "polnode/solver/tampering_backend.h"
#include "polnode/solver/task_spec.h"
#include "polnode/testing/fashion_mnist.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/verifier/dispute_player.h"

namespace polnode::dispute_testing {

/// mlp:16-8-3 with SGD (the solver tests' TinyTask): 40 steps, k = 5, so 8 segments.
solver::TaskSpec MlpTask(const solver::ImageDataset& data);
/// cnn:i1x4x4-c2-p-f5-3 with Adam (bias corrections depend on the step), same schedule.
solver::TaskSpec CnnTask(const solver::ImageDataset& data);

/// CnnTask with nanoGPT's learning-rate schedule (warm-up over 5 steps, cosine decay to a tenth
/// at step 35, so every step's lr differs from the peak but step 5's) and gradient-norm clipping
/// at 0.05.
solver::TaskSpec ScheduledCnnTask(const solver::ImageDataset& data);

/// The task's training step graph.
solver::StepGraph GraphOf(const solver::TaskSpec& task, const solver::ImageDataset& data);

/// The index of the node called `name` in `graph`; fails the test and returns -1 if none.
int NodeIndex(const solver::StepGraph& graph, std::string_view name);

/// The TaskSpec the ledger holds for `task`: the binding solver/task_binding.h defines (model text,
/// data set hash, TaskId as hyperparameters hash, the step graph's root and counts, the batch root).
proto::TaskSpec LedgerSpec(const solver::TaskSpec& task, const solver::ImageDataset& data);

/// A proof on disk, as solver::Prove wrote it.
struct Proof {
  std::unique_ptr<polnode::testing::TempDir> dir;
  std::unique_ptr<solver::BlobStore> store;
  solver::ProofManifest manifest;

  /// The proof root as the ledger holds it (raw bytes).
  std::string Root() const;
  /// Loads checkpoints from the blob store, as a party fetching the solver's blobs would.
  verifier::CheckpointLoader Loader() const;
};

/// Proves `task` on `backend` (the reference backend when null); a cheating solver's proof goes
/// through a TamperingBackend corrupting `tamper`. Signed with a fixed test key.
Proof ProveTask(const solver::TaskSpec& task, const solver::ImageDataset& data,
                const std::optional<solver::TamperSpec>& tamper, kernels::Backend* backend = nullptr);

/// An honest check of every segment of `proof` (verifier::VerifyProof with Q = all segments) on
/// `backend` (the reference backend when null): the segments whose replay failed, in order.
/// Empty: the verdict is accept.
std::vector<std::uint64_t> FailedSegments(const solver::TaskSpec& task, const solver::ImageDataset& data,
                                          const Proof& proof, kernels::Backend* backend = nullptr);

}  // namespace polnode::dispute_testing

#endif  // POLNODE_TESTS_DISPUTE_REAL_TASK_H_
