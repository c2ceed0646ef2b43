// The files of proof of learning, as the commands and daemons read them: a task document (TOML or
// protobuf), a proof directory (manifest and blob store, as solver::Prove writes it) and the data
// set a task names. Errors name the file at fault.
#ifndef POLNODE_SOLVER_POL_FILES_H_
#define POLNODE_SOLVER_POL_FILES_H_

#include <string>

#include "polnode/base/status.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/proof_manifest.h"
#include "polnode/solver/task_spec.h"

namespace polnode::solver {

/// Reads a task: the protobuf form when `path` ends in ".pb", else the TOML form. Errors carry
/// the path; malformed content is kInvalidArgument or kCorruption.
Result<TaskSpec> ReadTaskFile(const std::string& path);

/// A proof directory written by solver::Prove (`polnode prove`): its decoded manifest and its
/// blob store.
struct ProofDir {
  ProofManifest manifest;
  BlobStore store;
};
/// Reads DIR/manifest.pb (DecodeManifest's errors, with the path) and opens DIR/blobs.
Result<ProofDir> OpenProofDir(const std::string& dir);

/// Loads the task's data from its data_location (LoadDatasetFor: a text corpus for a gpt: task or an
/// onnx: model whose file holds a GPT) and checks its content hash (kFailedPrecondition when it
/// differs).
Result<ImageDataset> LoadTaskData(const TaskSpec& task);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_POL_FILES_H_
