#include "polnode/roles/forced_error_proof.h"

#include <cstring>
#include <filesystem>

#include "polnode/base/file_util.h"
#include "polnode/consensus/merkle.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/train_state.h"

namespace polnode::node {

Result<consensus::Hash256> MakeForcedErrorProof(const std::string& honest_dir, const std::string& out_dir,
                                                const consensus::SecretKey& key) {
  POLNODE_ASSIGN_OR_RETURN(solver::ProofDir honest, solver::OpenProofDir(honest_dir));
  solver::ProofManifest manifest = honest.manifest;
  if (manifest.checkpoint_blobs.empty()) return Status::Corruption("the honest proof in " + honest_dir + " has no checkpoints");
  POLNODE_ASSIGN_OR_RETURN(solver::BlobStore out_store, solver::BlobStore::Open(out_dir + "/" + std::string(solver::kBlobDir)));
  for (const consensus::Hash256& blob : manifest.checkpoint_blobs) {
    POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, honest.store.Get(blob));
    POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 stored, out_store.Put(bytes));
    (void)stored;
  }

  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> final_bytes, honest.store.Get(manifest.checkpoint_blobs.back()));
  POLNODE_ASSIGN_OR_RETURN(solver::TrainState final_state, solver::DecodeState(final_bytes));
  if (final_state.tensors.empty() || final_state.tensors[0].tensor.numel() == 0) {
    return Status::Corruption("the honest proof's final state has no weights to alter");
  }
  const std::string task_file = std::string(solver::kTaskFile);
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> task_bytes, ReadWholeFile(honest_dir + "/" + task_file, solver::kMaxTaskBytes));
  POLNODE_ASSIGN_OR_RETURN(solver::TaskSpec task, solver::DecodeTaskProto(task_bytes));
  kernels::Tensor& weights = final_state.tensors[0].tensor;
  if (task.mode == solver::ReproMode::kExact) {
    // Exact mode compares hashes: the smallest change (one weight's lowest mantissa bit) is enough.
    float& weight = weights.data()[0];
    std::uint32_t bits = 0;
    std::memcpy(&bits, &weight, sizeof bits);
    bits ^= 1u;
    std::memcpy(&weight, &bits, sizeof bits);
  } else {
    // Tolerant mode judges by distances within profiled thresholds, which a one-bit change passes:
    // every weight of the first tensor moves by 1, far outside what any backend variation does.
    for (std::int64_t i = 0; i < weights.numel(); ++i) weights.data()[i] += 1.0f;
  }
  POLNODE_ASSIGN_OR_RETURN(manifest.checkpoint_blobs.back(), out_store.Put(solver::EncodeState(final_state)));
  manifest.checkpoint_hashes.back() = solver::StateHash(final_state);
  manifest.merkle_root = consensus::MerkleRoot(manifest.checkpoint_hashes);
  POLNODE_RETURN_IF_ERROR(solver::SignManifest(manifest, key));

  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/" + task_file, task_bytes));
  const std::string encoded = solver::EncodeManifest(manifest);
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/" + std::string(solver::kManifestFile), encoded));
  return manifest.merkle_root;
}

}  // namespace polnode::node
