// `polnode export`: the delivered model as an ONNX file (solver/onnx_model.h) that onnxruntime or
// PyTorch loads and runs, with the same logits as `polnode evaluate` computes.
#include <ostream>
#include <string>
#include <vector>

#include "flag_groups.h"
#include "polnode/base/file_util.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/sha256.h"
#include "polnode/rpc/json.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/onnx_model.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/train_state.h"

namespace polnode::node {
namespace {

constexpr std::string_view kCommand = "polnode export";
// As `polnode evaluate`: a state of up to 2^30 fp32 parameters with two optimizer buffers each.
constexpr std::uint64_t kMaxStateBytes = std::uint64_t{12} << 30;

std::string ShapeText(const kernels::Shape& sample) {
  std::string out = "[batch";
  for (std::int64_t d : sample) out += ", " + std::to_string(d);
  return out + "]";
}

Status Run(const FlagSet& flags, Io& io) {
  POLNODE_ASSIGN_OR_RETURN(solver::TaskSpec document, solver::ReadTaskFile(flags.Get("task")));
  POLNODE_ASSIGN_OR_RETURN(solver::ModelSpec model, solver::TaskModelSpec(document));
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadWholeFile(flags.Get("model"), kMaxStateBytes));
  POLNODE_ASSIGN_OR_RETURN(solver::TrainState state, solver::DecodeState(bytes));
  POLNODE_ASSIGN_OR_RETURN(model, solver::WithStateVocab(std::move(model), state));
  Result<std::string> onnx = solver::ExportOnnx(model, state);
  if (!onnx.ok()) {
    return Status::InvalidArgument(flags.Get("model") + " cannot be exported as " + document.model + ": " +
                                   onnx.status().ToString());
  }
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(flags.Get("out"), *onnx));
  const std::string file_hash = consensus::ToHex(consensus::Sha256(*onnx));
  const std::string state_hash = consensus::ToHex(solver::StateHash(state));
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject()
        .Field("out", flags.Get("out"))
        .Field("bytes", static_cast<std::int64_t>(onnx->size()))
        .Field("sha256", file_hash)
        .Field("model", document.model)
        .Field("step", state.step)
        .Field("state_hash", state_hash)
        .Field("opset", solver::kOnnxOpset)
        .Field("input", std::string(solver::kOnnxInputName))
        .Field("output", std::string(solver::kOnnxOutputName))
        .EndObject();
    io.out << w.str() << "\n";
    return Status::Ok();
  }
  io.out << "wrote          " << flags.Get("out") << " (" << onnx->size() << " bytes, sha256 " << file_hash << ")\n"
         << "model          " << document.model << " after " << state.step << " steps, state hash " << state_hash
         << "\n"
         << "onnx           opset " << solver::kOnnxOpset << ", input '" << solver::kOnnxInputName << "' "
         << (model.gpt ? "int64 token ids " : "float32 ") << ShapeText(model.input_shape) << ", output '"
         << solver::kOnnxOutputName << "' float32 "
         << (model.gpt ? ShapeText({model.gpt->context, model.gpt->vocab}) : ShapeText({model.num_outputs()}))
         << " (logits)\n";
  return Status::Ok();
}

}  // namespace

int RunExportCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(std::string(kCommand),
                "Write a delivered model (a training state: a submitter's models/<task id>.state or any checkpoint "
                "of a proof) as an ONNX file, opset 17, for onnxruntime or PyTorch. Input 'input': float32 "
                "[batch, features] (mlp:) or [batch, C, H, W] (cnn:), pixels normalised as the task's data set feeds "
                "training; output 'logits': float32 [batch, classes]. A gpt: model takes int64 token ids [batch, T] "
                "(the corpus's symbol indices) and outputs logits [batch, T, V]. Parameters are initializers named "
                "as in the state (fc1.w, conv1.b, h0.attn.wq, ...; a GPT's wpe as [T, C]).");
  DeclareTaskFileFlag(flags, true);
  flags.Value("model", "FILE", "the training state to export", "", true);
  flags.Value("out", "FILE", "the ONNX file to write", "", true);
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  const Status s = Run(flags, io);
  if (!s.ok()) return ReportError(io, kCommand, s);
  return kExitOk;
}

}  // namespace polnode::node
