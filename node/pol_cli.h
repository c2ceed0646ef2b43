// Shared by the proof-of-learning commands (prove, verify --proof, profile): reading a task file,
// a proof directory and the task's data, each with errors that name the file at fault.
#ifndef POLNODE_NODE_POL_CLI_H_
#define POLNODE_NODE_POL_CLI_H_

#include <string>

#include "json.h"
#include "polnode/base/status.h"
#include "polnode/verifier/replay.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/proof_manifest.h"
#include "polnode/solver/task_spec.h"

namespace polnode::node {

/// Reads a task: the protobuf form when `path` ends in ".pb", else the TOML form. Errors carry
/// the path; malformed content is kInvalidArgument or kCorruption.
Result<solver::TaskSpec> ReadTaskFile(const std::string& path);

/// A proof directory written by `polnode prove`: its decoded manifest and its blob store.
struct ProofDir {
  solver::ProofManifest manifest;
  solver::BlobStore store;
};
/// Reads DIR/manifest.pb (DecodeManifest's errors, with the path) and opens DIR/blobs.
Result<ProofDir> OpenProofDir(const std::string& dir);

/// Loads the task's data from its data_location and checks its content hash
/// (kFailedPrecondition when it differs).
Result<solver::ImageDataset> LoadTaskData(const solver::TaskSpec& task);

/// Writes one replayed segment's evidence (verifier/replay.h) as a JSON object value: segment, ok,
/// reason, replayed, both hashes, losses_match and the distances (null when not comparable).
void WriteSegmentEvidence(JsonWriter& w, const verifier::SegmentEvidence& evidence);

}  // namespace polnode::node

#endif  // POLNODE_NODE_POL_CLI_H_
