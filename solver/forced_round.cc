#include "polnode/solver/forced_round.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "polnode/base/file_util.h"
#include "polnode/consensus/encoding.h"
#include "polnode/consensus/forced_perturbation.h"
#include "polnode/consensus/merkle.h"
#include "polnode/kernels/detmath.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/prover.h"

namespace polnode::solver {
namespace {

using kernels::det::FloatBits;

std::span<const std::uint8_t> Span(std::string_view bytes) {
  return {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()};
}

Status CheckFirstTensor(const TrainState& state) {
  if (state.tensors.empty() || state.tensors[0].tensor.numel() == 0) {
    return Status::FailedPrecondition("the state has no first tensor to falsify");
  }
  return Status::Ok();
}

// Tolerant mode: the perturbation of checkpoint `k` over `state`'s first tensor, once every drawn
// element is known to move visibly (a perturbation a replay cannot see would make honest accepts
// count as wrong, and the ledger refuses to reveal it).
Result<consensus::Perturbation> VisiblePerturbation(const TrainState& state, const ForcedRound& round, std::uint64_t k) {
  POLNODE_RETURN_IF_ERROR(CheckFirstTensor(state));
  const kernels::Tensor& tensor = state.tensors[0].tensor;
  consensus::Perturbation p =
      consensus::DrawPerturbation(round.secret, round.forced_seed, round.task_id, k, tensor.shape());
  for (const consensus::PerturbedElement& e : p.elements) {
    const float honest = tensor.data()[e.flat];
    if (!consensus::PerturbationVisible(honest, consensus::PerturbedValue(honest, e.sign, round.forced_delta),
                                        round.forced_delta)) {
      return Status::FailedPrecondition("checkpoint " + std::to_string(k) + ": element " + std::to_string(e.flat) +
                                        " of the first tensor cannot be visibly moved by forced_delta");
    }
  }
  return p;
}

// Where the hook keeps the honest values of tolerant forced checkpoint `k`.
std::string HonestValuesPath(const ForcedRound& round, std::uint64_t k) {
  return round.honest_dir + "/checkpoint-" + std::to_string(k) + ".f32";
}

Status CheckHonestDir(const ForcedRound& round) {
  if (round.honest_dir.empty()) {
    return Status::FailedPrecondition("a tolerant forced round needs a private directory for its honest values");
  }
  return Status::Ok();
}

// `path` made absolute, with its symbolic links resolved as far as it exists.
Result<std::filesystem::path> Resolved(const std::string& path) {
  std::error_code ec;
  std::filesystem::path resolved = std::filesystem::absolute(path, ec);
  if (!ec) resolved = std::filesystem::weakly_canonical(resolved, ec);
  if (ec) return Status::IOError("cannot resolve " + path + ": " + ec.message());
  return resolved;
}

// Whether `path` is `dir` or lies under it.
Result<bool> Within(const std::string& path, const std::string& dir) {
  POLNODE_ASSIGN_OR_RETURN(std::filesystem::path inner, Resolved(path));
  POLNODE_ASSIGN_OR_RETURN(std::filesystem::path outer, Resolved(dir));
  const std::filesystem::path relative = inner.lexically_relative(outer);
  return !relative.empty() && *relative.begin() != "..";
}

// Tolerant mode: `state` (committed forced checkpoint `k`) with the honest values the hook kept
// put back, after checking that the committed values are exactly those values perturbed.
Status RestoreHonestValues(TrainState& state, const ForcedRound& round, std::uint64_t k) {
  POLNODE_RETURN_IF_ERROR(CheckFirstTensor(state));
  kernels::Tensor& tensor = state.tensors[0].tensor;
  const consensus::Perturbation p =
      consensus::DrawPerturbation(round.secret, round.forced_seed, round.task_id, k, tensor.shape());
  const std::string path = HonestValuesPath(round, k);
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadWholeFile(path, p.elements.size() * sizeof(float)));
  if (bytes.size() != p.elements.size() * sizeof(float)) {
    return Status::Corruption(path + " must hold " + std::to_string(p.elements.size()) + " float32 values");
  }
  std::vector<float> honest(p.elements.size());
  std::memcpy(honest.data(), bytes.data(), bytes.size());
  for (std::size_t i = 0; i < honest.size(); ++i) {
    const consensus::PerturbedElement& e = p.elements[i];
    const float committed = consensus::PerturbedValue(honest[i], e.sign, round.forced_delta);
    if (FloatBits(tensor.data()[e.flat]) != FloatBits(committed)) {
      return Status::Corruption(path + ": the committed checkpoint " + std::to_string(k) +
                                " is not these honest values perturbed (another round's file?)");
    }
  }
  for (std::size_t i = 0; i < honest.size(); ++i) tensor.data()[p.elements[i].flat] = honest[i];
  return Status::Ok();
}

void Apply(TrainState& state, const consensus::Perturbation& p, float delta) {
  float* values = state.tensors[0].tensor.data();
  for (const consensus::PerturbedElement& e : p.elements) {
    values[e.flat] = consensus::PerturbedValue(values[e.flat], e.sign, delta);
  }
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
  if (round.mode == ReproMode::kTolerant) {
    POLNODE_ASSIGN_OR_RETURN(consensus::Perturbation p, VisiblePerturbation(state, round, k));
    Apply(state, p, round.forced_delta);
    return Status::Ok();
  }
  POLNODE_RETURN_IF_ERROR(CheckFirstTensor(state));
  kernels::Tensor& tensor = state.tensors[0].tensor;
  const std::uint64_t i = FalsifiedElement(round, k, static_cast<std::uint64_t>(tensor.numel()));
  // Exact mode compares hashes: the smallest change is enough. On the bits, not the value: a bit
  // flip is its own inverse for every float (zeros and NaNs included), which is what lets the
  // honest state be recovered from the committed one.
  std::uint32_t bits = FloatBits(tensor.data()[i]) ^ 1u;
  std::memcpy(&tensor.data()[i], &bits, sizeof bits);
  return Status::Ok();
}

std::function<Status(TrainState&)> ForcedCheckpointHook(ForcedRound round, std::int64_t interval) {
  return [round = std::move(round), interval](TrainState& state) -> Status {
    if (state.step <= 0 || state.step % interval != 0) return Status::Ok();
    const std::uint64_t k = static_cast<std::uint64_t>(state.step / interval);
    if (!round.Forced(k)) return Status::Ok();
    if (round.mode != ReproMode::kTolerant) return FalsifyCheckpoint(state, round, k);
    POLNODE_RETURN_IF_ERROR(CheckHonestDir(round));
    POLNODE_ASSIGN_OR_RETURN(consensus::Perturbation p, VisiblePerturbation(state, round, k));
    // The honest values reach the disk before the state that hides them, so a committed forced
    // checkpoint always has them; the training is deterministic, so a redone checkpoint writes
    // the same bytes.
    std::vector<float> honest;
    honest.reserve(p.elements.size());
    for (const consensus::PerturbedElement& e : p.elements) honest.push_back(state.tensors[0].tensor.data()[e.flat]);
    std::error_code ec;
    std::filesystem::create_directories(round.honest_dir, ec);
    if (ec) return Status::IOError("cannot create " + round.honest_dir + ": " + ec.message());
    // Little-endian float32, as every hash reads values (this build targets little-endian hosts).
    POLNODE_RETURN_IF_ERROR(WriteFileAtomically(
        HonestValuesPath(round, k),
        std::span(reinterpret_cast<const std::uint8_t*>(honest.data()), honest.size() * sizeof(float))));
    Apply(state, p, round.forced_delta);
    return Status::Ok();
  };
}

Result<consensus::Hash256> WriteResultProof(const std::string& committed_dir, const std::string& result_dir,
                                            const ForcedRound& round, const consensus::SecretKey& key) {
  const bool tolerant = round.mode == ReproMode::kTolerant;
  if (tolerant) {
    if (round.honest_dir.empty()) {
      return Status::InvalidArgument("a tolerant forced round needs a private directory for its honest values");
    }
    for (const std::string& served : {committed_dir, result_dir}) {
      POLNODE_ASSIGN_OR_RETURN(bool inside, Within(round.honest_dir, served));
      if (inside) {
        return Status::InvalidArgument("the honest values' directory " + round.honest_dir + " lies under the proof directory " +
                                       served + ", which is served");
      }
    }
  }
  POLNODE_ASSIGN_OR_RETURN(ProofDir committed, OpenProofDir(committed_dir));
  ProofManifest manifest = committed.manifest;
  POLNODE_ASSIGN_OR_RETURN(BlobStore out, BlobStore::Open(result_dir + "/" + std::string(kBlobDir)));
  for (std::uint64_t k : round.checkpoints) {
    if (k == 0 || k >= manifest.checkpoint_blobs.size()) {
      return Status::OutOfRange("the committed proof has no checkpoint " + std::to_string(k) + " to restore");
    }
  }
  for (std::size_t k = 0; k < manifest.checkpoint_blobs.size(); ++k) {
    if (!round.Forced(k)) {
      POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, committed.store.Get(manifest.checkpoint_blobs[k]));
      POLNODE_RETURN_IF_ERROR(out.PutNamed(manifest.checkpoint_blobs[k], bytes));
      continue;
    }
    // GetState decodes the blob once, for its name check and for the state changed here.
    POLNODE_ASSIGN_OR_RETURN(StoredState stored, committed.store.GetState(manifest.checkpoint_blobs[k]));
    TrainState& state = stored.state;
    POLNODE_RETURN_IF_ERROR(tolerant ? RestoreHonestValues(state, round, k) : FalsifyCheckpoint(state, round, k));
    manifest.checkpoint_hashes[k] = StateHash(state);
    manifest.checkpoint_blobs[k] = manifest.checkpoint_hashes[k];
    POLNODE_RETURN_IF_ERROR(out.PutNamed(manifest.checkpoint_blobs[k], EncodeState(state)));
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
