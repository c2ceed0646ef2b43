// Target onnx_model: ImportOnnx on arbitrary bytes (a task's model file comes from its submitter,
// who may be hostile). Properties: never crashes or over-allocates; a failure is kCorruption,
// kInvalidArgument or kResourceExhausted; an accepted file gives one parameter per ModelSpec
// parameter with its shape, and exporting those parameters imports back to the same spec and the
// same bits. Seeds: polnode's exports of an MLP, a CNN and a GPT, each whole and truncated.
#include <string>
#include <vector>

#include "fuzz.h"
#include "polnode/solver/init.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/onnx_model.h"

namespace polnode::fuzz {
namespace {

void Run(FuzzInput input) {
  Result<solver::OnnxImport> imported = solver::ImportOnnx(input);
  if (!imported.ok()) {
    const StatusCode code = imported.status().code();
    POLNODE_FUZZ_CHECK(code == StatusCode::kCorruption || code == StatusCode::kInvalidArgument ||
                           code == StatusCode::kResourceExhausted,
                       "ImportOnnx failed with an unexpected status code");
    return;
  }
  POLNODE_FUZZ_CHECK(imported->params.size() == imported->model.params.size(), "parameter count differs from the spec's");
  for (std::size_t i = 0; i < imported->params.size(); ++i) {
    POLNODE_FUZZ_CHECK(imported->params[i].tensor.shape() == imported->model.params[i].shape,
                       "an imported parameter's shape differs from the spec's");
  }
  const solver::TrainState state = solver::ImportedInitialState(imported->model, imported->params, solver::OptimizerKind::kSgd);
  Result<std::string> exported = solver::ExportOnnx(imported->model, state);
  POLNODE_FUZZ_CHECK(exported.ok(), "an imported model does not export");
  Result<solver::OnnxImport> again = solver::ImportOnnx(
      std::span(reinterpret_cast<const std::uint8_t*>(exported->data()), exported->size()));
  POLNODE_FUZZ_CHECK(again.ok() && again->spec == imported->spec, "an exported import does not import to its spec");
  for (std::size_t i = 0; i < again->params.size(); ++i) {
    POLNODE_FUZZ_CHECK(again->params[i].tensor.BitwiseEqual(imported->params[i].tensor),
                       "export and import changed a parameter's bits");
  }
}

std::vector<Seed> Seeds() {
  std::vector<Seed> seeds;
  // The GPT seed reaches the GPT mapper (its int64 input); the committed corpus also holds
  // torch-gpt, a torch.onnx.export of the same sizes (tests/solver/onnx_torch_export.py gpt DIR 5
  // 1 2 8 4), whose shape arithmetic polnode's own export does not have.
  for (const char* text : {"mlp:4-3-2", "cnn:i1x4x4-c2-p-f3-2", "gpt:layers=1,heads=2,width=8,context=4,vocab=5"}) {
    Result<solver::ModelSpec> model = solver::ParseModelSpec(text);
    if (!model.ok()) return seeds;
    Result<std::string> bytes = solver::ExportOnnx(*model, solver::InitialState(*model, solver::OptimizerKind::kSgd, 7));
    if (!bytes.ok()) return seeds;
    const std::string name = std::string(text).substr(0, 3);
    const std::vector<std::uint8_t> valid(bytes->begin(), bytes->end());
    seeds.push_back({"valid-" + name, valid});
    seeds.push_back({"truncated-" + name, std::vector<std::uint8_t>(valid.begin(), valid.end() - 7)});
  }
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(onnx_model, Run, Seeds);

}  // namespace polnode::fuzz
