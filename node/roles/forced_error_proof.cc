#include "polnode/roles/forced_error_proof.h"

#include <cstring>
#include <filesystem>

#include "polnode/base/file_util.h"
#include "polnode/consensus/merkle.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/train_state.h"

namespace polnode::node {

namespace {

// Alters `state` so that a replay check fails: exact mode compares hashes, so the smallest change
// (one weight's lowest mantissa bit) is enough; tolerant mode judges by distances within profiled
// thresholds, which a one-bit change passes, so every weight of the first tensor moves by 1, far
// outside what any backend variation does.
void Falsify(solver::TrainState& state, solver::ReproMode mode) {
  kernels::Tensor& weights = state.tensors[0].tensor;
  if (mode == solver::ReproMode::kExact) {
    float& weight = weights.data()[0];
    std::uint32_t bits = 0;
    std::memcpy(&bits, &weight, sizeof bits);
    bits ^= 1u;
    std::memcpy(&weight, &bits, sizeof bits);
  } else {
    for (std::int64_t i = 0; i < weights.numel(); ++i) weights.data()[i] += 1.0f;
  }
}

std::string Raw(const consensus::Hash256& h) { return {reinterpret_cast<const char*>(h.data()), h.size()}; }

std::string PathOf(const std::vector<consensus::Hash256>& leaves, std::uint64_t leaf) {
  const std::vector<std::uint8_t> bytes = consensus::SerializeMerkleProof(*consensus::MerkleTree(leaves).Prove(leaf));
  return {bytes.begin(), bytes.end()};
}

}  // namespace

Result<consensus::Hash256> MakeForcedErrorProof(const std::string& honest_dir, const std::string& out_dir,
                                                const std::vector<std::uint64_t>& hidden,
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
  const std::string task_file = std::string(solver::kTaskFile);
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> task_bytes, ReadWholeFile(honest_dir + "/" + task_file, solver::kMaxTaskBytes));
  POLNODE_ASSIGN_OR_RETURN(solver::TaskSpec task, solver::DecodeTaskProto(task_bytes));
  std::vector<std::uint64_t> altered = hidden;
  altered.push_back(manifest.checkpoint_blobs.size() - 1);  // the final checkpoint
  for (std::uint64_t checkpoint : altered) {
    if (checkpoint == 0 || checkpoint >= manifest.checkpoint_blobs.size()) {
      return Status::InvalidArgument("the proof has no checkpoint " + std::to_string(checkpoint) + " to alter");
    }
    POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, honest.store.Get(manifest.checkpoint_blobs[checkpoint]));
    POLNODE_ASSIGN_OR_RETURN(solver::TrainState state, solver::DecodeState(bytes));
    if (state.tensors.empty() || state.tensors[0].tensor.numel() == 0) {
      return Status::Corruption("checkpoint " + std::to_string(checkpoint) + " has no weights to alter");
    }
    Falsify(state, task.mode);
    POLNODE_ASSIGN_OR_RETURN(manifest.checkpoint_blobs[checkpoint], out_store.Put(solver::EncodeState(state)));
    manifest.checkpoint_hashes[checkpoint] = solver::StateHash(state);
  }
  manifest.merkle_root = consensus::MerkleRoot(manifest.checkpoint_hashes);
  POLNODE_RETURN_IF_ERROR(solver::SignManifest(manifest, key));

  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/" + task_file, task_bytes));
  const std::string encoded = solver::EncodeManifest(manifest);
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/" + std::string(solver::kManifestFile), encoded));
  return manifest.merkle_root;
}

Status FillForcedReveal(const std::string& honest_dir, const std::string& forced_dir,
                        const std::vector<std::uint64_t>& hidden, proto::RevealTx& reveal) {
  POLNODE_ASSIGN_OR_RETURN(solver::ProofDir committed, solver::OpenProofDir(forced_dir));
  POLNODE_ASSIGN_OR_RETURN(solver::ProofDir honest, solver::OpenProofDir(honest_dir));
  const std::vector<consensus::Hash256>& honest_hashes = honest.manifest.checkpoint_hashes;
  std::vector<consensus::Hash256> leaves = committed.manifest.checkpoint_hashes;
  if (leaves.size() != honest_hashes.size() || leaves.empty()) {
    return Status::Corruption("the committed and honest proofs of " + forced_dir + " differ in length");
  }
  // Each hidden checkpoint on its path in the committed proof with those before it restored.
  for (std::uint64_t h : hidden) {
    if (h >= leaves.size()) return Status::InvalidArgument("the proof has no checkpoint " + std::to_string(h));
    proto::HiddenCheckpointReveal* leaf = reveal.add_hidden();
    leaf->set_committed(Raw(leaves[h]));
    leaf->set_honest(Raw(honest_hashes[h]));
    leaf->set_proof(PathOf(leaves, h));
    leaves[h] = honest_hashes[h];
  }
  reveal.set_committed_final(Raw(leaves.back()));
  reveal.set_honest_final(Raw(honest_hashes.back()));
  reveal.set_final_proof(PathOf(leaves, leaves.size() - 1));
  return Status::Ok();
}

}  // namespace polnode::node
