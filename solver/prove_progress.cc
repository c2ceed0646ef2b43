#include "polnode/solver/prove_progress.h"

#include <algorithm>
#include <string>

#include "polnode/consensus/encoding.h"
#include "polnode/consensus/hex.h"
#include "polnode/solver/proof_manifest.h"

namespace polnode::solver {
namespace {

constexpr std::string_view kLegacyDomain = "polnode/pol-progress/v2";

// No progress file is larger than a manifest: these bound the counts a damaged length may claim.
constexpr std::size_t kMaxProgressCheckpoints = kMaxManifestBytes / (2 * sizeof(consensus::Hash256));
constexpr std::size_t kMaxLosses = kMaxManifestBytes / sizeof(std::uint32_t);

bool IsLegacy(std::span<const std::uint8_t> bytes) {
  consensus::BufferWriter w;
  w.String(kLegacyDomain);
  const std::vector<std::uint8_t> prefix = w.Take();
  return bytes.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), bytes.begin());
}

// The legacy encoding; errors name no file (DecodeProgress adds it).
Result<ProveProgress> DecodeLegacy(std::span<const std::uint8_t> bytes) {
  consensus::Reader r(bytes);
  POLNODE_ASSIGN_OR_RETURN(std::string domain, r.String(64));
  ProveProgress p;
  POLNODE_RETURN_IF_ERROR(r.Fixed(p.task_id));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t n, r.U64());
  if (n > kMaxProgressCheckpoints) return Status::Corruption("names " + std::to_string(n) + " checkpoints");
  p.hashes.resize(n);
  p.blobs.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    POLNODE_RETURN_IF_ERROR(r.Fixed(p.hashes[i]));
    POLNODE_RETURN_IF_ERROR(r.Fixed(p.blobs[i]));
  }
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t m, r.U64());
  if (m > kMaxLosses) return Status::Corruption("names " + std::to_string(m) + " losses");
  p.loss_bits.resize(m);
  for (std::uint32_t& bits : p.loss_bits) {
    POLNODE_ASSIGN_OR_RETURN(bits, r.U32());
  }
  POLNODE_RETURN_IF_ERROR(r.ExpectEnd());
  return p;
}

}  // namespace

template <class Archive>
void ProveProgress::save(Archive& ar) const {
  ar(task_id, cereal::make_size_tag(static_cast<cereal::size_type>(hashes.size())));
  for (std::size_t i = 0; i < hashes.size(); ++i) ar(hashes[i], blobs[i]);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(loss_bits.size())));
  for (std::uint32_t bits : loss_bits) ar(bits);
}

template <class Archive>
void ProveProgress::load(Archive& ar, std::uint32_t version) {
  // Version 1 is the only one so far; a later version adds its fields behind `version >= 2`.
  if (version != 1) FailLocalLoad("no reader for version " + std::to_string(version));
  ar(task_id);
  const std::size_t n = LoadBoundedSize(ar, kMaxProgressCheckpoints);
  hashes.resize(n);
  blobs.resize(n);
  for (std::size_t i = 0; i < n; ++i) ar(hashes[i], blobs[i]);
  loss_bits.resize(LoadBoundedSize(ar, kMaxLosses));
  for (std::uint32_t& bits : loss_bits) ar(bits);
}

std::vector<std::uint8_t> EncodeProgress(const ProveProgress& progress) {
  return EncodeLocal(kProgressFormat, progress);
}

Result<ProveProgress> DecodeProgress(std::span<const std::uint8_t> bytes, std::string_view file) {
  if (IsLegacy(bytes)) {
    Result<ProveProgress> legacy = DecodeLegacy(bytes);
    if (!legacy.ok()) {
      return Status::Corruption(std::string(file) + ": damaged or truncated progress file (" +
                                legacy.status().message() + "); it is left as it is");
    }
    return legacy;
  }
  return DecodeLocal<ProveProgress>(bytes, kProgressFormat, file);
}

Status CheckProgress(const ProveProgress& p, const TaskSpec& task, std::string_view file) {
  const std::string name(file);
  if (p.task_id != TaskId(task)) {
    return Status::FailedPrecondition(name + " holds progress of another task (" + consensus::ToHex(p.task_id) +
                                      "); use an empty directory");
  }
  const std::uint64_t n = p.hashes.size();
  if (n < 1 || n > static_cast<std::uint64_t>(task.checkpoint_count()) || p.blobs.size() != n) {
    return Status::Corruption(name + " names " + std::to_string(n) + " checkpoints");
  }
  if (p.loss_bits.size() != (n - 1) * static_cast<std::uint64_t>(task.checkpoint_interval)) {
    return Status::Corruption(name + " has " + std::to_string(p.loss_bits.size()) + " losses for " +
                              std::to_string(n) + " checkpoints");
  }
  return Status::Ok();
}

}  // namespace polnode::solver
