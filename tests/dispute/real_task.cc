#include "real_task.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "polnode/consensus/sha256.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/pinpoint_graph.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/task_steps.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_task.h"
#include "polnode/verifier/replay.h"

namespace polnode::dispute_testing {
namespace {

std::string Raw(const consensus::Hash256& h) { return std::string(h.begin(), h.end()); }

consensus::SecretKey SolverKey() {
  std::array<std::uint8_t, 32> bytes{};
  bytes.fill(0x44);
  return *consensus::SecretKey::FromBytes(bytes);
}

}  // namespace

solver::TaskSpec MlpTask(const solver::ImageDataset& data) { return solver::testing::TinyTask(data); }

solver::TaskSpec CnnTask(const solver::ImageDataset& data) {
  solver::TaskSpec t = solver::testing::TinyTask(data);
  t.model = "cnn:i1x4x4-c2-p-f5-3";
  t.optimizer.kind = solver::OptimizerKind::kAdam;
  t.optimizer.lr = 0.01f;
  return t;
}

solver::TaskSpec ScheduledCnnTask(const solver::ImageDataset& data) {
  solver::TaskSpec t = CnnTask(data);
  t.optimizer.warmup_steps = 5;
  t.optimizer.decay_steps = 35;
  t.optimizer.min_lr = 0.001f;
  t.optimizer.grad_clip = 0.05f;
  return t;
}

solver::StepGraph GraphOf(const solver::TaskSpec& task, const solver::ImageDataset& data) {
  Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task, data);
  EXPECT_TRUE(stepper.ok()) << stepper.status().ToString();
  return stepper.ok() ? stepper->graph() : solver::StepGraph{};
}

int NodeIndex(const solver::StepGraph& graph, std::string_view name) {
  for (const solver::StepNode& node : graph.nodes) {
    if (node.name == name) return node.index;
  }
  ADD_FAILURE() << "no node " << name << " in\n" << solver::DescribeGraph(graph);
  return -1;
}

proto::TaskSpec LedgerSpec(const solver::TaskSpec& task, const solver::ImageDataset& data) {
  const solver::StepGraph graph = GraphOf(task, data);
  Result<std::vector<proto::PinpointDescriptor>> descriptors = solver::PinpointDescriptors(graph);
  EXPECT_TRUE(descriptors.ok()) << descriptors.status().ToString();
  Result<consensus::Hash256> batch_root = solver::BatchRoot(task, data);
  EXPECT_TRUE(batch_root.ok()) << batch_root.status().ToString();
  proto::TaskSpec spec;
  spec.set_model_spec(task.model);
  spec.set_dataset_hash(Raw(task.dataset_hash));
  spec.set_hyperparameters_hash(Raw(solver::TaskId(task)));
  spec.set_total_steps(static_cast<std::uint64_t>(task.steps));
  spec.set_checkpoint_interval(static_cast<std::uint64_t>(task.checkpoint_interval));
  spec.set_segments_per_verification(static_cast<std::uint32_t>(task.segments_per_check));
  spec.set_claim_window(10);
  spec.set_training_window(20);
  if (descriptors.ok()) spec.set_graph_root(Raw(solver::GraphRoot(*descriptors)));
  if (batch_root.ok()) spec.set_batch_root(Raw(*batch_root));
  spec.set_step_leaf_count(solver::StepLeafCount(graph));
  spec.set_state_tensor_count(static_cast<std::uint32_t>(graph.state_names.size()));
  Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task, data);
  EXPECT_TRUE(stepper.ok()) << stepper.status().ToString();
  if (stepper.ok()) spec.set_initial_state_hash(Raw(solver::StateHash(stepper->Initial())));
  return spec;
}

std::string Proof::Root() const { return Raw(manifest.merkle_root); }

verifier::CheckpointLoader Proof::Loader() const {
  const solver::BlobStore* blobs = store.get();
  const std::vector<consensus::Hash256> names = manifest.checkpoint_blobs;
  return [blobs, names](std::uint64_t checkpoint) -> Result<solver::TrainState> {
    if (checkpoint >= names.size()) return Status::NotFound("no checkpoint " + std::to_string(checkpoint));
    POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, blobs->Get(names[checkpoint]));
    return solver::DecodeState(bytes);
  };
}

Proof ProveTask(const solver::TaskSpec& task, const solver::ImageDataset& data,
                const std::optional<solver::TamperSpec>& tamper, kernels::Backend* backend) {
  Proof proof;
  proof.dir = std::make_unique<polnode::testing::TempDir>("dispute-proof");
  std::unique_ptr<kernels::Backend> owned;
  if (backend == nullptr) owned = kernels::MakeReferenceBackend();
  kernels::Backend* reference = backend != nullptr ? backend : owned.get();
  std::unique_ptr<solver::TamperingBackend> tampering;
  if (tamper) {
    tampering = std::make_unique<solver::TamperingBackend>(*reference, GraphOf(task, data).nodes.size(), *tamper);
  }
  const consensus::SecretKey key = SolverKey();
  solver::ProveOptions options;
  options.out_dir = proof.dir->path();
  options.key = &key;
  Result<solver::ProveResult> result =
      solver::Prove(task, data, tampering ? *tampering : *reference, options);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (tampering) {
    EXPECT_EQ(tampering->tamper_count(), 1) << "the cheat must hit its target once";
  }
  if (result.ok()) proof.manifest = std::move(result->manifest);
  Result<solver::BlobStore> store = solver::BlobStore::Open(proof.dir->File(std::string(solver::kBlobDir)));
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (store.ok()) proof.store = std::make_unique<solver::BlobStore>(std::move(*store));
  return proof;
}

std::vector<std::uint64_t> FailedSegments(const solver::TaskSpec& task, const solver::ImageDataset& data,
                                          const Proof& proof, kernels::Backend* backend) {
  std::unique_ptr<kernels::Backend> owned;
  if (backend == nullptr) owned = kernels::MakeReferenceBackend();
  kernels::Backend* reference = backend != nullptr ? backend : owned.get();
  verifier::VerifyOptions options;
  options.beacon = consensus::Sha256("dispute-suite");
  options.segments = task.steps / task.checkpoint_interval;
  Result<verifier::Verdict> verdict = verifier::VerifyProof(task, data, proof.manifest, *proof.store, *reference, options);
  EXPECT_TRUE(verdict.ok()) << verdict.status().ToString();
  std::vector<std::uint64_t> failed;
  if (!verdict.ok()) return failed;
  for (const verifier::SegmentEvidence& e : verdict->segments) {
    if (!e.ok) failed.push_back(static_cast<std::uint64_t>(e.segment));
  }
  std::sort(failed.begin(), failed.end());
  EXPECT_EQ(verdict->accept, failed.empty()) << verdict->reason;
  return failed;
}

}  // namespace polnode::dispute_testing
