// `polnode sample`: generates text from a trained GPT state (`polnode train --out`, a proof's
// checkpoint, or a delivered model), deterministically from a seed.
#include <string>

#include "flag_groups.h"
#include "polnode/base/file_util.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/rpc/json.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/train_state.h"
#include "polnode/solver/trainer.h"

namespace polnode::node {
namespace {

constexpr const char* kCommand = "polnode sample";
// A state file holds the model's tensors and its optimizer's: far below this for any GPT the
// spec grammar allows on one machine.
constexpr std::uint64_t kMaxStateBytes = std::uint64_t{1} << 32;

void DeclareFlags(FlagSet& flags) {
  flags.Value("model", "SPEC", "the gpt: spec the state was trained with (or give --task)");
  flags.Value("data", "FILE",
              "the text it was trained on, which fixes the vocabulary ('jargon' means Debian's "
              "jargon-text)",
              "jargon");
  flags.Value("task", "FILE", "a gpt: task document: its model and data (checked by hash)");
  flags.Value("state", "FILE", "the trained state (train --out, or a checkpoint blob)", "", true);
  flags.Value("prompt", "TEXT", "text to continue (every symbol must occur in the data)");
  flags.Value("length", "N", "symbols to generate", "200");
  flags.Value("temperature", "X", "softmax temperature; 0 always takes the likeliest symbol",
              "1.0");
  flags.Value("seed", "S", "fixes the draws: the same seed gives the same text", "1");
  DeclareBackendFlags(flags);
}

struct Loaded {
  solver::ModelSpec model;
  solver::ImageDataset data;
};

Result<Loaded> LoadModelAndData(const FlagSet& flags) {
  Loaded l;
  std::string model_text;
  if (flags.Given("task")) {
    if (flags.Given("model") || flags.Given("data")) {
      return Status::InvalidArgument("give --task or --model/--data, not both");
    }
    POLNODE_ASSIGN_OR_RETURN(solver::TaskSpec task, solver::ReadTaskFile(flags.Get("task")));
    POLNODE_ASSIGN_OR_RETURN(l.data, solver::LoadTaskData(task));
    model_text = task.model;
  } else {
    if (!flags.Given("model")) return Status::InvalidArgument("--model or --task is required");
    model_text = flags.Get("model");
    if (!solver::IsGptSpec(model_text)) {
      return Status::InvalidArgument("sample needs a gpt: model, got " + model_text);
    }
    POLNODE_ASSIGN_OR_RETURN(l.data, solver::LoadDatasetFor(model_text, flags.Get("data")));
  }
  POLNODE_ASSIGN_OR_RETURN(l.model, solver::ModelForData(model_text, l.data));
  return l;
}

}  // namespace

int RunSampleCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(kCommand,
                "Generate text from a trained GPT: each symbol drawn from the model's softmax at "
                "the given temperature, the draws fixed by the seed.");
  DeclareFlags(flags);
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  Result<Loaded> loaded = LoadModelAndData(flags);
  if (!loaded.ok()) return ReportError(io, kCommand, loaded.status());
  Result<BackendChoice> backend = ReadBackendFlags(flags);
  if (!backend.ok()) return ReportError(io, kCommand, backend.status());
  Result<std::int64_t> length = flags.GetInt("length", 0, 1 << 20);
  if (!length.ok()) return ReportError(io, kCommand, length.status());
  Result<double> temperature = flags.GetDouble("temperature");
  if (!temperature.ok()) return ReportError(io, kCommand, temperature.status());
  Result<std::int64_t> seed = flags.GetInt("seed", 0, INT64_MAX);
  if (!seed.ok()) return ReportError(io, kCommand, seed.status());
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(flags.Get("state"), kMaxStateBytes);
  if (!bytes.ok()) return ReportError(io, kCommand, bytes.status().WithContext("state file"));
  Result<solver::TrainState> state = solver::DecodeState(*bytes);
  if (!state.ok()) {
    return ReportError(io, kCommand, state.status().WithContext("state file " + flags.Get("state")));
  }
  const std::string prompt = flags.Get("prompt");
  Result<std::string> text = solver::SampleText(loaded->model, *state, *loaded->data.text, prompt,
                                                *length, *temperature,
                                                static_cast<std::uint64_t>(*seed),
                                                *backend->backend);
  if (!text.ok()) return ReportError(io, kCommand, text.status());
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject()
        .Field("prompt", prompt)
        .Field("text", *text)
        .Field("seed", static_cast<std::uint64_t>(*seed))
        .Field("temperature", *temperature)
        .Field("state_hash", consensus::ToHex(solver::StateHash(*state)))
        .EndObject();
    io.out << w.str() << "\n";
  } else {
    io.out << prompt << *text << "\n";
  }
  return kExitOk;
}

}  // namespace polnode::node
