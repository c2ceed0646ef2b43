// Shared by the verifier suites: honest checkpoint chains of the tiny task, and a writer for
// proofs built from arbitrary (possibly forged) checkpoint states.
#ifndef POLNODE_TESTS_VERIFIER_POL_FIXTURE_H_
#define POLNODE_TESTS_VERIFIER_POL_FIXTURE_H_

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <memory>
#include <set>

#include "polnode/consensus/merkle.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/task_steps.h"
#include "polnode/testing/fashion_mnist.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_task.h"
#include "polnode/verifier/replay.h"

namespace polnode::verifier::testing {

/// The states at every checkpoint of a run and every step's loss bits.
struct Chain {
  std::vector<solver::TrainState> checkpoints;
  std::vector<std::uint32_t> loss_bits;
};

/// Runs `task`'s steps from `start` (which must be at step 0) on `data` with the reference
/// backend, keeping a copy of the state every k steps.
inline Chain RunChain(const solver::TaskSpec& task, const solver::ImageDataset& data, solver::TrainState start) {
  Chain chain;
  auto backend = kernels::MakeBackend("reference", 1);
  EXPECT_TRUE(backend.ok());
  Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task, data);
  EXPECT_TRUE(stepper.ok()) << stepper.status().ToString();
  chain.checkpoints.push_back(start);
  while (start.step < task.steps) {
    Result<float> loss = stepper->Step(start, **backend);
    EXPECT_TRUE(loss.ok());
    std::uint32_t bits = 0;
    std::memcpy(&bits, &*loss, sizeof bits);
    chain.loss_bits.push_back(bits);
    if (start.step % task.checkpoint_interval == 0) chain.checkpoints.push_back(start);
  }
  return chain;
}

inline Chain HonestChain(const solver::TaskSpec& task, const solver::ImageDataset& data) {
  Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task, data);
  EXPECT_TRUE(stepper.ok());
  return RunChain(task, data, stepper->Initial());
}

inline consensus::SecretKey ForgerKey() {
  std::array<std::uint8_t, 32> bytes{};
  bytes.fill(0x33);
  return *consensus::SecretKey::FromBytes(bytes);
}

/// A proof on disk: blobs in a scratch directory and the (signed) manifest naming them.
struct WrittenProof {
  std::unique_ptr<polnode::testing::TempDir> dir;
  std::unique_ptr<solver::BlobStore> store;
  solver::ProofManifest manifest;
};

/// Stores each checkpoint's EncodeState as a blob and builds a manifest for `task` that is
/// internally consistent (each checkpoint's state hash and blob hash, root over the state hashes,
/// valid signature), as a forger would.
inline WrittenProof WriteProof(const solver::TaskSpec& task, const std::vector<solver::TrainState>& checkpoints,
                               const std::vector<std::uint32_t>& loss_bits) {
  WrittenProof p;
  p.dir = std::make_unique<polnode::testing::TempDir>("pol-proof");
  Result<solver::BlobStore> store = solver::BlobStore::Open(p.dir->File("blobs"));
  EXPECT_TRUE(store.ok());
  p.store = std::make_unique<solver::BlobStore>(std::move(*store));
  p.manifest.task_id = solver::TaskId(task);
  p.manifest.checkpoint_interval = task.checkpoint_interval;
  p.manifest.steps = task.steps;
  for (const solver::TrainState& s : checkpoints) {
    Result<consensus::Hash256> h = p.store->Put(solver::EncodeState(s));
    EXPECT_TRUE(h.ok());
    p.manifest.checkpoint_blobs.push_back(*h);
    p.manifest.checkpoint_hashes.push_back(solver::StateHash(s));
  }
  p.manifest.merkle_root = consensus::MerkleRoot(p.manifest.checkpoint_hashes);
  p.manifest.loss_bits = loss_bits;
  p.manifest.backend = "reference";
  EXPECT_TRUE(solver::SignManifest(p.manifest, ForgerKey()).ok());
  return p;
}

/// Beacon number i: SHA-256 of its decimal text.
inline consensus::Hash256 Beacon(int i) { return consensus::Sha256(std::to_string(i)); }

}  // namespace polnode::verifier::testing

#endif  // POLNODE_TESTS_VERIFIER_POL_FIXTURE_H_
