#include "pol_cli.h"

#include "polnode/consensus/hex.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/task_steps.h"

namespace polnode::node {

Result<solver::TaskSpec> ReadTaskFile(const std::string& path) {
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(path, solver::kMaxTaskBytes);
  if (!bytes.ok()) return bytes.status().WithContext("task file " + path);
  const bool proto = path.size() >= 3 && path.compare(path.size() - 3, 3, ".pb") == 0;
  Result<solver::TaskSpec> task =
      proto ? solver::DecodeTaskProto(*bytes)
            : solver::ParseTaskToml(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  if (!task.ok()) return task.status().WithContext("task file " + path);
  return task;
}

Result<ProofDir> OpenProofDir(const std::string& dir) {
  const std::string path = dir + "/" + std::string(solver::kManifestFile);
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(path, solver::kMaxManifestBytes);
  if (!bytes.ok()) return bytes.status().WithContext("manifest " + path);
  Result<solver::ProofManifest> manifest = solver::DecodeManifest(*bytes);
  if (!manifest.ok()) return manifest.status().WithContext("manifest " + path);
  POLNODE_ASSIGN_OR_RETURN(solver::BlobStore store,
                           solver::BlobStore::Open(dir + "/" + std::string(solver::kBlobDir)));
  return ProofDir{std::move(*manifest), std::move(store)};
}

Result<solver::ImageDataset> LoadTaskData(const solver::TaskSpec& task) {
  POLNODE_ASSIGN_OR_RETURN(solver::ImageDataset data, solver::LoadImageDataset(task.data_location));
  POLNODE_RETURN_IF_ERROR(solver::CheckTaskData(task, data));
  return data;
}

void WriteSegmentEvidence(JsonWriter& w, const verifier::SegmentEvidence& e) {
  w.BeginObject()
      .Field("segment", e.segment)
      .Field("ok", e.ok)
      .Field("reason", e.reason)
      .Field("replayed", e.replayed)
      .Field("claimed_hash", consensus::ToHex(e.claimed))
      .Field("recomputed_hash", e.replayed ? consensus::ToHex(e.recomputed) : std::string())
      .Field("losses_match", e.losses_match)
      .Key("distances");
  if (e.have_distances) {
    w.BeginObject()
        .Field("l1", e.distances.l1)
        .Field("l2", e.distances.l2)
        .Field("linf", e.distances.linf)
        .Field("cosine", e.distances.cosine)
        .EndObject();
  } else {
    w.Null();
  }
  w.EndObject();
}

}  // namespace polnode::node
