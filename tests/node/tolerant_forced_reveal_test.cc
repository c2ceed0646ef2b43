// The reveal of a tolerant forced round (solver_role.h ForcedRevealTx) under the ledger's rules
// (contracts/settlement.cc, perturbation.cc CheckPerturbationProof): a real tolerant task, trained
// with its forced checkpoints perturbed by the solver's hook (solver/forced_round.h), committed on
// a test chain whose every round is forced, and revealed with one PerturbationProof per shown
// forced checkpoint. The ledger takes the reveal and records the perturbed indices a right reject
// commits to; it refuses a reveal whose blocks or paths were changed, and ForcedRevealTx refuses
// proofs that differ anywhere but in the drawn block.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>

#include "pol_task_fixture.h"
#include "polnode/base/block_grid.h"
#include "polnode/base/file_util.h"
#include "polnode/consensus/forced_perturbation.h"
#include "polnode/consensus/game_tree.h"
#include "polnode/consensus/merkle.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/forced.h"
#include "polnode/contracts/payloads.h"
#include "polnode/roles/solver_role.h"
#include "polnode/solver/task_binding.h"
#include "polnode/testing/task_flow.h"

namespace polnode::node {
namespace {

using contracts::testing::TaskFlow;

// The tiny task in tolerant mode with a first tensor (fc1.w, 16 x 160) of three 64 x 64 blocks, so
// a perturbation proof climbs a block tree of depth 2 (one padded leaf).
solver::TaskSpec TolerantDocument(const solver::ImageDataset& data) {
  solver::TaskSpec document = solver::testing::TinyTask(data);
  document.model = "mlp:16-160-3";
  document.mode = solver::ReproMode::kTolerant;
  return document;
}

class TolerantForcedRevealTest : public ::testing::Test {
 protected:
  // Runs forced rounds of the tolerant document (secrets 1, 2, ...: the secret decides the forced
  // checkpoints) until the reveal shows one: submitted, claimed, trained and committed with the
  // forced checkpoints perturbed, every verdict an accept, and the task awaiting the reveal.
  void RunToRevealing() {
    const solver::TaskSpec document = TolerantDocument(data_);
    Result<proto::TaskSpec> spec = solver::LedgerSpecFor(document, data_, solver::TaskTerms{10'000, 10, 20});
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    ASSERT_EQ(spec->forced_delta(), solver::kDefaultForcedDelta);
    proto::Params params = contracts::testing::TestParams();
    params.set_forced_error_rate(1);
    for (std::uint8_t n = 1; n < 32; ++n) {
      flow_ = std::make_unique<TaskFlow>(params);
      flow_->spec = *spec;
      flow_->secret = contracts::testing::Bytes32(n);
      flow_->Submit(10'000);
      flow_->Claim();
      flow_->chain.AdvanceTo(flow_->task().claim_height() + params.beacon_delay());
      const proto::Task claimed = flow_->task();
      ASSERT_FALSE(claimed.forced_seed().empty());
      solver::ForcedRound round;
      round.secret = flow_->secret;
      round.forced_seed = claimed.forced_seed();
      round.task_id = claimed.id();
      round.mode = solver::ReproMode::kTolerant;
      round.checkpoints = flow_->ForcedCheckpoints();
      round.forced_delta = claimed.spec().forced_delta();
      ASSERT_FALSE(round.checkpoints.empty());
      proof_ = testing::ProveTinyForced(document, data_, solver_key_, round);
      ASSERT_EQ(proof_.committed.manifest.checkpoint_hashes.size(), 9u);
      flow_->SetCheckpoints(proof_.committed.manifest.checkpoint_hashes);
      flow_->Commit();
      flow_->AwaitAssignment();
      ASSERT_EQ(flow_->task().status(), proto::TASK_VERIFYING);
      for (int slot = 0; slot < flow_->task().verifiers_size(); ++slot) {
        const contracts::TxResult r = flow_->SlotVerdict(static_cast<std::uint32_t>(slot), proto::VERDICT_ACCEPT);
        ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
      }
      for (int i = 0; i < 4 && flow_->task().status() != proto::TASK_REVEALING; ++i) flow_->AdvancePastDeadline();
      ASSERT_EQ(flow_->task().status(), proto::TASK_REVEALING);
      shown_forced_.clear();
      for (std::uint64_t k : contracts::RevealCheckpoints(flow_->task())) {
        if (std::binary_search(round.checkpoints.begin(), round.checkpoints.end(), k)) shown_forced_.push_back(k);
      }
      if (!shown_forced_.empty()) return;
    }
    FAIL() << "no secret gives a reveal that shows a forced checkpoint";
  }

  Result<proto::RevealTx> Reveal() const {
    return ForcedRevealTx(flow_->task(), flow_->secret, proof_.committed.dir->path(), proof_.result.dir->path());
  }

  // The drawn perturbation of forced checkpoint `k` over the first tensor's dims.
  consensus::Perturbation Drawn(std::uint64_t k) const {
    const proto::Task task = flow_->task();
    return consensus::DrawPerturbation(flow_->secret, task.forced_seed(), task.id(), k, kFirstDims);
  }

  const std::vector<std::int64_t> kFirstDims = {16, 160};
  const solver::ImageDataset data_ = solver::testing::TinyDataset();
  const consensus::SecretKey solver_key_ = testing::KeyFromByte(0x42);
  std::unique_ptr<TaskFlow> flow_;
  testing::ForcedTinyProof proof_;
  std::vector<std::uint64_t> shown_forced_;  // the forced checkpoints the reveal shows, ascending
};

TEST_F(TolerantForcedRevealTest, TheLedgerTakesThePerturbationProofsAndRecordsThePerturbedIndices) {
  ASSERT_NO_FATAL_FAILURE(RunToRevealing());
  Result<proto::RevealTx> reveal = Reveal();
  ASSERT_TRUE(reveal.ok()) << reveal.status().ToString();
  ASSERT_EQ(reveal->perturbations_size(), static_cast<int>(shown_forced_.size()));
  const BlockGrid grid = BlockGrid::Of(kFirstDims);
  ASSERT_EQ(grid.block_count(), 3u);
  for (std::size_t i = 0; i < shown_forced_.size(); ++i) {
    const proto::PerturbationProof& p = reveal->perturbations(static_cast<int>(i));
    const std::uint64_t k = shown_forced_[i];
    EXPECT_EQ(p.checkpoint(), k);
    EXPECT_EQ(std::vector<std::int64_t>(p.dims().begin(), p.dims().end()), kFirstDims);
    EXPECT_EQ(p.names_size(), static_cast<int>(flow_->task().spec().state_tensor_count()));
    EXPECT_EQ(p.tensor_hashes_size() + 1, p.names_size());
    EXPECT_EQ(p.block_siblings_size(), 2);
    const std::size_t block_bytes = static_cast<std::size_t>(grid.BlockRect(Drawn(k).block).elements()) * sizeof(float);
    EXPECT_EQ(p.committed_block().size(), block_bytes);
    EXPECT_EQ(p.honest_block().size(), block_bytes);
    EXPECT_NE(p.committed_block(), p.honest_block());
  }

  // Changed in one place, the same reveal is refused: a value of the committed block that is not
  // drawn, a sibling on the block's path, a missing proof. All in the block that then takes the
  // reveal as it is (the reveal window is short), which shows that none of them was taken.
  std::vector<proto::RevealTx> txs(3, *reveal);
  const consensus::Perturbation drawn = Drawn(shown_forced_[0]);
  const std::int64_t offset = drawn.elements[0].offset == 0 ? 1 : 0;  // not drawn: offsets are distinct
  ASSERT_TRUE(std::none_of(drawn.elements.begin(), drawn.elements.end(),
                           [&](const consensus::PerturbedElement& e) { return e.offset == offset; }));
  (*txs[0].mutable_perturbations(0)->mutable_committed_block())[static_cast<std::size_t>(offset) * sizeof(float)] ^= 1;
  (*txs[1].mutable_perturbations(0)->mutable_block_siblings(0))[0] ^= 1;
  txs[2].mutable_perturbations()->RemoveLast();
  txs.push_back(*reveal);
  std::vector<contracts::VerifiedTx> block;
  for (const proto::RevealTx& tx : txs) block.push_back(flow_->chain.Tx(flow_->solver, contracts::payload::kReveal, tx));
  const contracts::BlockResult results = flow_->chain.Block(block);
  ASSERT_EQ(results.tx_results.size(), 4u);
  const std::array<const char*, 3> why = {"is not drawn but differs", "does not climb to the committed checkpoint's hash",
                                          "needs its perturbation proof"};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(results.tx_results[i].code, StatusCode::kInvalidArgument) << results.tx_results[i].log;
    EXPECT_NE(results.tx_results[i].log.find(why[i]), std::string::npos) << results.tx_results[i].log;
  }
  ASSERT_EQ(results.tx_results[3].code, StatusCode::kOk) << results.tx_results[3].log;
  const proto::Task task = flow_->task();
  EXPECT_TRUE(task.forced_error());
  EXPECT_EQ(task.proof_root(), testing::RawHash(proof_.result.manifest.merkle_root));
  ASSERT_EQ(std::vector<std::uint64_t>(task.forced_checkpoints().begin(), task.forced_checkpoints().end()), shown_forced_);
  ASSERT_EQ(task.perturbed_index_hashes_size(), static_cast<int>(shown_forced_.size()));
  for (std::size_t i = 0; i < shown_forced_.size(); ++i) {
    const std::uint64_t k = shown_forced_[i];
    EXPECT_EQ(task.honest_hashes(static_cast<int>(i)), testing::RawHash(proof_.result.manifest.checkpoint_hashes[k]));
    // What a verifier's replay finds beyond forced_delta / 2: exactly the drawn elements.
    EXPECT_EQ(task.perturbed_index_hashes(static_cast<int>(i)),
              testing::RawHash(consensus::PerturbedIndicesHash(consensus::PerturbedIndices(Drawn(k)))));
  }
}

// Replaces the state of checkpoint `k` of the proof in `dir` with `state`, re-rooted and re-signed
// as a solver's own (wrong) result proof would be.
void ReplaceCheckpoint(const std::string& dir, std::uint64_t k, const solver::TrainState& state,
                       const consensus::SecretKey& key) {
  Result<solver::ProofDir> proof = solver::OpenProofDir(dir);
  ASSERT_TRUE(proof.ok()) << proof.status().ToString();
  solver::ProofManifest manifest = proof->manifest;
  Result<consensus::Hash256> blob = proof->store.Put(solver::EncodeState(state));
  ASSERT_TRUE(blob.ok());
  manifest.checkpoint_blobs[k] = *blob;
  manifest.checkpoint_hashes[k] = solver::StateHash(state);
  manifest.merkle_root = consensus::MerkleRoot(manifest.checkpoint_hashes);
  ASSERT_TRUE(solver::SignManifest(manifest, key).ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/" + std::string(solver::kManifestFile), solver::EncodeManifest(manifest)).ok());
}

TEST_F(TolerantForcedRevealTest, ProofsThatDifferOutsideTheDrawnBlockAreRefusedAsCorrupt) {
  ASSERT_NO_FATAL_FAILURE(RunToRevealing());
  const std::uint64_t k = shown_forced_[0];
  Result<solver::ProofDir> result = solver::OpenProofDir(proof_.result.dir->path());
  ASSERT_TRUE(result.ok());
  Result<std::vector<std::uint8_t>> bytes = result->store.Get(result->manifest.checkpoint_blobs[k]);
  ASSERT_TRUE(bytes.ok());
  Result<solver::TrainState> honest = solver::DecodeState(*bytes);
  ASSERT_TRUE(honest.ok());

  // Another block of the first tensor: the two block paths differ.
  const BlockGrid grid = BlockGrid::Of(kFirstDims);
  const GridRect other = grid.BlockRect((Drawn(k).block + 1) % grid.block_count());
  solver::TrainState wrong = *honest;
  wrong.tensors[0].tensor.data()[other.row_begin * grid.cols() + other.col_begin] += 1.0f;
  ASSERT_NO_FATAL_FAILURE(ReplaceCheckpoint(proof_.result.dir->path(), k, wrong, solver_key_));
  Result<proto::RevealTx> reveal = Reveal();
  EXPECT_EQ(reveal.status().code(), StatusCode::kCorruption) << reveal.status().ToString();
  EXPECT_NE(reveal.status().message().find("outside the drawn block"), std::string::npos) << reveal.status().ToString();

  // Another tensor: its hash differs between the proofs.
  wrong = *honest;
  wrong.tensors[1].tensor.data()[0] += 1.0f;
  ASSERT_NO_FATAL_FAILURE(ReplaceCheckpoint(proof_.result.dir->path(), k, wrong, solver_key_));
  reveal = Reveal();
  EXPECT_EQ(reveal.status().code(), StatusCode::kCorruption) << reveal.status().ToString();
  EXPECT_NE(reveal.status().message().find(wrong.tensors[1].name), std::string::npos) << reveal.status().ToString();

  // Put back, the honest state proves the perturbation again.
  ASSERT_NO_FATAL_FAILURE(ReplaceCheckpoint(proof_.result.dir->path(), k, *honest, solver_key_));
  reveal = Reveal();
  ASSERT_TRUE(reveal.ok()) << reveal.status().ToString();
  const contracts::TxResult r = flow_->chain.Run(flow_->solver, contracts::payload::kReveal, *reveal);
  EXPECT_EQ(r.code, StatusCode::kOk) << r.log;
}

}  // namespace
}  // namespace polnode::node
