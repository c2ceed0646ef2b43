// `polnode train`: trains a model on an IDX image data set (Fashion-MNIST by default), or a GPT on
// a text file (the Jargon File by default), with the deterministic engine and prints the state
// hash a proof of learning would name; --out keeps the trained state (for `polnode sample`).
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <optional>
#include <ostream>
#include <sstream>

#include "flag_groups.h"
#include "progress_printer.h"
#include "polnode/cli/commands.h"
#include "polnode/kernels/backend.h"
#include "polnode/rpc/json.h"
#include "polnode/base/file_util.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/train_state.h"
#include "polnode/solver/trainer.h"

namespace polnode::node {
namespace {

constexpr const char* kCommand = "polnode train";

void DeclareFlags(FlagSet& flags) {
  flags.Value("model", "SPEC",
              "mlp:IN-H1-...-OUT, or cnn:[iCxHxW-]LAYERS-OUT with layers cK (3x3 conv + ReLU), p "
              "(2x2 max pool), fK (linear + ReLU), e.g. cnn:c8-p-c16-p-f64-10, or a character-level "
              "GPT gpt:layers=L,heads=H,width=C,context=T (vocabulary from the data)",
              "mlp:784-256-128-10");
  flags.Value("data", "DIR|FILE",
              "images: directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] "
              "('fashion-mnist', the default, means Debian's dataset-fashion-mnist); gpt: a text "
              "file, gzipped or not ('jargon', the default, means Debian's jargon-text)");
  flags.Value("steps", "N", "training steps (overrides --epochs)");
  flags.Value("epochs", "E",
              "full passes over the training split (a last partial batch is dropped)", "3");
  flags.Value("batch", "B", "samples per step", "128");
  flags.Value("optimizer", "NAME", "sgd (momentum) or adam (AdamW; Adam with --weight-decay 0)",
              "sgd");
  flags.Value("lr", "X",
              "learning rate, the peak under a schedule (default: 0.05 for sgd, 0.001 for adam)");
  flags.Value("warmup-steps", "N", "steps of linear learning-rate warm-up", "0");
  flags.Value("lr-decay-steps", "N",
              "cosine decay of the learning rate to --min-lr at this step (0: no decay)", "0");
  flags.Value("min-lr", "X", "the learning rate after the decay", "0");
  flags.Value("beta2", "B", "Adam's second-moment decay", "0.999");
  flags.Value("grad-clip", "X",
              "scale the gradients down to this global L2 norm when above it (0: no clipping)", "0");
  flags.Value("momentum", "M", "SGD momentum", "0.9");
  flags.Value("weight-decay", "W",
              "weight decay (added to the gradient for sgd, decoupled for adam)", "0");
  flags.Value("seed", "S", "task seed: fixes the initial weights and the data order", "1");
  DeclareBackendFlags(flags);
  flags.Value("log-every", "N", "steps between progress lines when stderr is not a terminal",
              "100");
  flags.Value("eval-windows", "N",
              "gpt: windows of the validation (and training) split whose mean loss is printed",
              "200");
  flags.Value("out", "FILE", "write the trained state there (the training state's encoding)");
}

// Reads the flags into a TrainConfig; kInvalidArgument naming the flag at fault.
Result<solver::TrainConfig> ConfigFromFlags(const FlagSet& flags) {
  solver::TrainConfig c;
  c.model = flags.Get("model");
  const bool gpt = solver::IsGptSpec(c.model);
  c.data = flags.Given("data") ? flags.Get("data") : gpt ? "jargon" : "fashion-mnist";
  if (flags.Given("steps")) {
    POLNODE_ASSIGN_OR_RETURN(c.steps, flags.GetInt("steps", 1, INT64_MAX));
  }
  POLNODE_ASSIGN_OR_RETURN(c.epochs, flags.GetInt("epochs", 1, 1 << 20));
  POLNODE_ASSIGN_OR_RETURN(c.batch, flags.GetInt("batch", 1, 1 << 20));
  POLNODE_ASSIGN_OR_RETURN(c.optimizer.kind, solver::ParseOptimizerKind(flags.Get("optimizer")));
  c.optimizer.lr = solver::DefaultLearningRate(c.optimizer.kind);
  if (flags.Given("lr")) {
    POLNODE_ASSIGN_OR_RETURN(double lr, flags.GetDouble("lr"));
    c.optimizer.lr = static_cast<float>(lr);
  }
  POLNODE_ASSIGN_OR_RETURN(double momentum, flags.GetDouble("momentum"));
  c.optimizer.momentum = static_cast<float>(momentum);
  POLNODE_ASSIGN_OR_RETURN(double wd, flags.GetDouble("weight-decay"));
  c.optimizer.weight_decay = static_cast<float>(wd);
  POLNODE_ASSIGN_OR_RETURN(c.optimizer.warmup_steps, flags.GetInt("warmup-steps", 0, solver::kMaxScheduleSteps));
  POLNODE_ASSIGN_OR_RETURN(c.optimizer.decay_steps,
                           flags.GetInt("lr-decay-steps", 0, solver::kMaxScheduleSteps));
  POLNODE_ASSIGN_OR_RETURN(double min_lr, flags.GetDouble("min-lr"));
  c.optimizer.min_lr = static_cast<float>(min_lr);
  POLNODE_ASSIGN_OR_RETURN(double beta2, flags.GetDouble("beta2"));
  c.optimizer.beta2 = static_cast<float>(beta2);
  POLNODE_ASSIGN_OR_RETURN(double grad_clip, flags.GetDouble("grad-clip"));
  c.optimizer.grad_clip = static_cast<float>(grad_clip);
  if (Status s = solver::ValidateOptimizer(c.optimizer); !s.ok()) return s;
  POLNODE_ASSIGN_OR_RETURN(std::int64_t seed, flags.GetInt("seed", 0, INT64_MAX));
  c.seed = static_cast<std::uint64_t>(seed);
  POLNODE_ASSIGN_OR_RETURN(c.eval_windows, flags.GetInt("eval-windows", 1, 1 << 20));
  return c;
}

void PrintSummary(std::ostream& out, const solver::TrainConfig& c, const solver::TrainSummary& s,
                  int threads) {
  out << "trained " << c.model << " on " << c.data << ": " << s.steps << " steps ("
      << s.steps_per_epoch << " per epoch), " << solver::OptimizerName(c.optimizer.kind) << " lr "
      << c.optimizer.lr;
  if (solver::HasLrSchedule(c.optimizer)) {
    out << " (warm-up " << c.optimizer.warmup_steps << " steps";
    if (c.optimizer.decay_steps > 0) {
      out << ", cosine decay to " << c.optimizer.min_lr << " at step " << c.optimizer.decay_steps;
    }
    out << ")";
  }
  if (c.optimizer.grad_clip > 0.0f) out << ", gradient norm clipped to " << c.optimizer.grad_clip;
  out << ", batch " << c.batch << ", seed " << c.seed << ", backend " << s.backend << " ("
      << threads << " threads)\n";
  out << std::fixed << std::setprecision(4);
  out << "train loss     " << s.train_loss << " (mean of the last "
      << std::min<std::int64_t>(c.loss_window, s.steps) << " steps)\n";
  if (s.test) {
    out << "test accuracy  " << std::setprecision(2) << 100.0 * s.test->accuracy() << "% ("
        << s.test->correct << "/" << s.test->total << ")\n";
  }
  if (s.eval_train_loss) {
    out << "eval loss      train " << *s.eval_train_loss << ", val ";
    if (s.val_loss) {
      out << *s.val_loss;
    } else {
      out << "- (the validation split is shorter than one window)";
    }
    out << " (" << c.eval_windows << " windows each)\n";
  }
  out << "speed          " << std::setprecision(1) << s.steps_per_second << " steps/s ("
      << std::setprecision(2) << s.elapsed_seconds << " s)\n";
  out << "state hash     " << s.state_hash_hex << "\n";
  out << "data set hash  " << s.dataset_hash_hex << "\n";
}

// The double nearest the shortest decimal that reads back as `value`: 0.05f is printed 0.05, not
// as the double it widens to (0.05000000074505806), while parsing it as a float still gives `value`.
double AsWritten(float value) {
  char text[32];
  const auto [end, ec] = std::to_chars(std::begin(text), std::end(text), value);
  if (ec != std::errc()) return static_cast<double>(value);
  return std::strtod(std::string(text, end).c_str(), nullptr);
}

void PrintJson(std::ostream& out, const solver::TrainConfig& c, const solver::TrainSummary& s,
               const std::string& backend, int threads) {
  JsonWriter w;
  w.BeginObject()
      .Field("state_hash", s.state_hash_hex)
      .Field("train_loss", s.train_loss)
      .Key("test_accuracy");
  if (s.test) {
    w.Double(s.test->accuracy());
  } else {
    w.Null();
  }
  const auto optional_double = [&w](const char* key, const std::optional<double>& v) {
    w.Key(key);
    if (v) {
      w.Double(*v);
    } else {
      w.Null();
    }
  };
  optional_double("eval_train_loss", s.eval_train_loss);
  optional_double("val_loss", s.val_loss);
  w.Field("steps", s.steps)
      .Field("steps_per_second", s.steps_per_second)
      .Field("elapsed_seconds", s.elapsed_seconds)
      .Field("backend", backend)
      .Field("backend_impl", s.backend)
      .Field("threads", threads)
      .Field("model", c.model)
      .Field("optimizer", std::string(solver::OptimizerName(c.optimizer.kind)))
      .Field("lr", AsWritten(c.optimizer.lr))
      .Field("batch", c.batch)
      .Field("seed", static_cast<std::uint64_t>(c.seed))
      .Field("dataset_hash", s.dataset_hash_hex)
      .EndObject();
  out << w.str() << "\n";
}

}  // namespace

int RunTrainCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(kCommand,
                "Train a model on an image data set, or a GPT on a text file, with the "
                "deterministic engine: the same flags give the same state hash on every backend "
                "and thread count.");
  DeclareFlags(flags);
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;

  Result<solver::TrainConfig> config = ConfigFromFlags(flags);
  if (!config.ok()) return ReportError(io, kCommand, config.status());
  Result<BackendChoice> backend = ReadBackendFlags(flags);
  if (!backend.ok()) return ReportError(io, kCommand, backend.status());
  Result<std::int64_t> every = flags.GetInt("log-every", 1, INT64_MAX);
  if (!every.ok()) return ReportError(io, kCommand, every.status());

  // Redraw in place only when stderr really is this process's terminal.
  const bool terminal = &io.err == &std::cerr && isatty(STDERR_FILENO) == 1;
  ProgressPrinter progress(io.err, terminal, *every);
  Result<solver::TrainSummary> summary = solver::Train(*config, *backend->backend, &progress);
  if (!summary.ok()) return ReportError(io, kCommand, summary.status());
  if (flags.Given("out")) {
    const Status written = WriteFileAtomically(flags.Get("out"), solver::EncodeState(summary->state));
    if (!written.ok()) return ReportError(io, kCommand, written);
  }
  if (flags.json()) {
    PrintJson(io.out, *config, *summary, backend->name, backend->threads);
  } else {
    PrintSummary(io.out, *config, *summary, backend->threads);
  }
  return kExitOk;
}

}  // namespace polnode::node
