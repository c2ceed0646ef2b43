#include "polnode/solver/forced_round.h"

#include <algorithm>
#include <cstring>

#include "polnode/base/file_util.h"
#include "polnode/consensus/encoding.h"
#include "polnode/consensus/merkle.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/prover.h"

namespace polnode::solver {
namespace {

std::span<const std::uint8_t> Span(std::string_view bytes) {
  return {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()};
}

}  // namespace

bool ForcedRound::Forced(std::uint64_t k) const { return std::binary_search(checkpoints.begin(), checkpoints.end(), k); }

std::uint64_t FalsifiedElement(const ForcedRound& round, std::uint64_t k, std::uint64_t elements) {
  consensus::HashWriter w;
  w.String("polnode/forced-falsify/v1");
  w.Bytes(Span(round.secret));
  w.Bytes(Span(round.forced_seed));
  w.Bytes(Span(round.task_id));
  w.U64(k);
  const consensus::Hash256 h = w.Finalize();
  std::uint64_t word = 0;
  for (std::size_t i = 0; i < 8; ++i) word = (word << 8) | h[i];
  return word % elements;
}

Status FalsifyCheckpoint(TrainState& state, const ForcedRound& round, std::uint64_t k) {
  if (state.tensors.empty() || state.tensors[0].tensor.numel() == 0) {
    return Status::FailedPrecondition("the state has no first tensor to falsify");
  }
  kernels::Tensor& tensor = state.tensors[0].tensor;
  const std::uint64_t elements = static_cast<std::uint64_t>(tensor.numel());
  // On the bits, not the values: a bit flip is its own inverse for every float (zeros and NaNs
  // included), which is what lets the honest state be recovered from the committed one.
  const auto flip = [&](std::uint64_t i, std::uint32_t mask) {
    float& value = tensor.data()[i];
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    bits ^= mask;
    std::memcpy(&value, &bits, sizeof bits);
  };
  if (round.mode == ReproMode::kExact) {
    // Exact mode compares hashes: the smallest change is enough.
    flip(FalsifiedElement(round, k, elements), 1u);
  } else {
    // Tolerant mode judges by distances within profiled thresholds, which a one-bit change passes.
    for (std::uint64_t i = 0; i < elements; ++i) flip(i, 0x80000000u);
  }
  return Status::Ok();
}

std::function<Status(TrainState&)> ForcedCheckpointHook(ForcedRound round, std::int64_t interval) {
  return [round = std::move(round), interval](TrainState& state) -> Status {
    if (state.step <= 0 || state.step % interval != 0) return Status::Ok();
    const std::uint64_t k = static_cast<std::uint64_t>(state.step / interval);
    return round.Forced(k) ? FalsifyCheckpoint(state, round, k) : Status::Ok();
  };
}

Result<consensus::Hash256> WriteResultProof(const std::string& committed_dir, const std::string& result_dir,
                                            const ForcedRound& round, const consensus::SecretKey& key) {
  POLNODE_ASSIGN_OR_RETURN(ProofDir committed, OpenProofDir(committed_dir));
  ProofManifest manifest = committed.manifest;
  POLNODE_ASSIGN_OR_RETURN(BlobStore out, BlobStore::Open(result_dir + "/" + std::string(kBlobDir)));
  for (std::uint64_t k : round.checkpoints) {
    if (k == 0 || k >= manifest.checkpoint_blobs.size()) {
      return Status::OutOfRange("the committed proof has no checkpoint " + std::to_string(k) + " to restore");
    }
  }
  for (std::size_t k = 0; k < manifest.checkpoint_blobs.size(); ++k) {
    POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, committed.store.Get(manifest.checkpoint_blobs[k]));
    if (!round.Forced(k)) {
      POLNODE_RETURN_IF_ERROR(out.Put(bytes).status());
      continue;
    }
    POLNODE_ASSIGN_OR_RETURN(TrainState state, DecodeState(bytes));
    POLNODE_RETURN_IF_ERROR(FalsifyCheckpoint(state, round, k));
    POLNODE_ASSIGN_OR_RETURN(manifest.checkpoint_blobs[k], out.Put(EncodeState(state)));
    manifest.checkpoint_hashes[k] = StateHash(state);
  }
  manifest.merkle_root = consensus::MerkleRoot(manifest.checkpoint_hashes);
  POLNODE_RETURN_IF_ERROR(SignManifest(manifest, key));
  const std::string task_file = "/" + std::string(kTaskFile);
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> task_bytes, ReadWholeFile(committed_dir + task_file, kMaxTaskBytes));
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(result_dir + task_file, task_bytes));
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(result_dir + "/" + std::string(kManifestFile), EncodeManifest(manifest)));
  return manifest.merkle_root;
}

}  // namespace polnode::solver
