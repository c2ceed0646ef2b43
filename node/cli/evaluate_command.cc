// `polnode evaluate`: use a delivered model outside the protocol. Reads a training state (a
// submitter's models/<task id>.state, or any checkpoint blob of a proof), checks that it is a
// state of the task document's model, and classifies the data set's test split with it: test
// accuracy, the state hash, and optionally the first N predictions beside their labels.
#include <ostream>
#include <string>
#include <vector>

#include "flag_groups.h"
#include "polnode/base/file_util.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/rpc/json.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/onnx_model.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/train_state.h"
#include "polnode/solver/trainer.h"

namespace polnode::node {
namespace {

constexpr std::string_view kCommand = "polnode evaluate";
// Forward passes of this many samples, as `polnode train` and the submitter evaluate.
constexpr std::int64_t kEvalBatch = 1000;
// A training state is at most this large (a model of 2^30 fp32 parameters with two buffers each).
constexpr std::uint64_t kMaxStateBytes = std::uint64_t{12} << 30;

Status Run(const FlagSet& flags, Io& io) {
  POLNODE_ASSIGN_OR_RETURN(solver::TaskSpec document, solver::ReadTaskFile(flags.Get("task")));
  if (flags.Given("data")) document.data_location = flags.Get("data");
  POLNODE_ASSIGN_OR_RETURN(solver::ImageDataset data, solver::LoadTaskData(document));
  POLNODE_ASSIGN_OR_RETURN(solver::ModelSpec model, solver::TaskModelSpec(document));
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadWholeFile(flags.Get("model"), kMaxStateBytes));
  POLNODE_ASSIGN_OR_RETURN(solver::TrainState state, solver::DecodeState(bytes));
  POLNODE_ASSIGN_OR_RETURN(std::int64_t show, flags.GetInt("predict", 0, data.test.count));
  POLNODE_ASSIGN_OR_RETURN(BackendChoice backend, ReadBackendFlags(flags));
  Result<solver::EvalResult> eval = solver::Evaluate(model, state, data.test, *backend.backend, kEvalBatch);
  if (!eval.ok()) {
    return Status::InvalidArgument(flags.Get("model") + " is not a state of " + document.model + ": " +
                                   eval.status().ToString());
  }
  const std::vector<std::int32_t> predictions(eval->predictions.begin(), eval->predictions.begin() + show);
  const std::string state_hash = consensus::ToHex(solver::StateHash(state));
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject()
        .Field("model", document.model)
        .Field("step", state.step)
        .Field("state_hash", state_hash)
        .Field("test_correct", eval->correct)
        .Field("test_total", eval->total)
        .Field("test_accuracy", eval->accuracy())
        .Key("predictions")
        .BeginArray();
    for (std::size_t i = 0; i < predictions.size(); ++i) {
      w.BeginObject().Field("predicted", predictions[i]).Field("label", int{data.test.labels[i]}).EndObject();
    }
    w.EndArray().EndObject();
    io.out << w.str() << "\n";
    return Status::Ok();
  }
  io.out << "model          " << document.model << " after " << state.step << " steps\n"
         << "state hash     " << state_hash << "\n"
         << "test accuracy  " << eval->correct << " / " << eval->total << " (" << 100.0 * eval->accuracy() << "%)\n";
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    io.out << "test sample " << i << ": predicted " << predictions[i] << ", label " << int{data.test.labels[i]} << "\n";
  }
  return Status::Ok();
}

}  // namespace

int RunEvaluateCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(std::string(kCommand),
                "Evaluate a delivered model (a submitter's models/<task id>.state, or any checkpoint of a proof) "
                "on the test split of its task's data set: test accuracy and state hash, and with --predict N "
                "the predicted class of the first N test samples beside their labels. The file is the training "
                "state's canonical encoding (solver/train_state.h): the model's tensors first, row-major fp32, "
                "a linear layer's weight as [inputs, outputs] (PyTorch's nn.Linear holds its transpose).");
  DeclareTaskFileFlag(flags, true);
  flags.Value("model", "FILE", "the training state to evaluate", "", true);
  flags.Value("data", "DIR", "the data set, instead of the task document's data_location");
  flags.Value("predict", "N", "print the predicted class of the first N test samples", "0");
  DeclareBackendFlags(flags);
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  const Status s = Run(flags, io);
  if (!s.ok()) return ReportError(io, kCommand, s);
  return kExitOk;
}

}  // namespace polnode::node
