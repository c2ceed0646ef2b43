#include "polnode/solver/pol_files.h"

#include "polnode/base/file_util.h"
#include "polnode/solver/onnx_model.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/task_steps.h"

namespace polnode::solver {

Result<TaskSpec> ReadTaskFile(const std::string& path) {
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(path, kMaxTaskBytes);
  if (!bytes.ok()) return bytes.status().WithContext("task file " + path);
  const bool proto = path.size() >= 3 && path.compare(path.size() - 3, 3, ".pb") == 0;
  Result<TaskSpec> task =
      proto ? DecodeTaskProto(*bytes)
            : ParseTaskToml(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  if (!task.ok()) return task.status().WithContext("task file " + path);
  return task;
}

Result<ProofDir> OpenProofDir(const std::string& dir) {
  const std::string path = dir + "/" + std::string(kManifestFile);
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(path, kMaxManifestBytes);
  if (!bytes.ok()) return bytes.status().WithContext("manifest " + path);
  Result<ProofManifest> manifest = DecodeManifest(*bytes);
  if (!manifest.ok()) return manifest.status().WithContext("manifest " + path);
  POLNODE_ASSIGN_OR_RETURN(BlobStore store,
                           BlobStore::Open(dir + "/" + std::string(kBlobDir)));
  return ProofDir{std::move(*manifest), std::move(store)};
}

Result<ImageDataset> LoadTaskData(const TaskSpec& task) {
  std::string model_text = task.model;
  if (IsOnnxModel(task.model)) {
    // An onnx: model's kind is in its file: a GPT trains on a text corpus. A file that cannot be
    // read or mapped leaves the data read as images; TaskStepper::Create then reports its error.
    Result<ModelSpec> model = TaskModelSpec(task);
    if (model.ok() && model->gpt) model_text = model->text;
  }
  POLNODE_ASSIGN_OR_RETURN(ImageDataset data, LoadDatasetFor(model_text, task.data_location));
  POLNODE_RETURN_IF_ERROR(CheckTaskData(task, data));
  return data;
}

}  // namespace polnode::solver
