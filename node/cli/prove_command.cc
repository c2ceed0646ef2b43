// `polnode prove`: trains a task with proof of learning into a directory (resumable: run the same
// command again after an interruption and it continues from the last checkpoint).
#include <unistd.h>

#include <climits>
#include <iostream>
#include <ostream>

#include "flag_groups.h"
#include "progress_printer.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/key_file.h"
#include "polnode/kernels/backend.h"
#include "polnode/rpc/json.h"
#include "polnode/solver/pol_files.h"
#include "polnode/solver/prover.h"

namespace polnode::node {
namespace {

constexpr const char* kCommand = "polnode prove";

int Prove(const FlagSet& flags, Io& io) {
  Result<solver::TaskSpec> task = solver::ReadTaskFile(flags.Get("task"));
  if (!task.ok()) return ReportError(io, kCommand, task.status());
  Result<BackendChoice> backend = ReadBackendFlags(flags);
  if (!backend.ok()) return ReportError(io, kCommand, backend.status());
  // Verifiers reject unsigned proofs, so --key is required (FlagSet enforces it): training for
  // hours into a proof nobody will accept would only waste the run.
  Result<consensus::SecretKey> key = consensus::ReadKeyFile(flags.Get("key"));
  if (!key.ok()) return ReportError(io, kCommand, key.status().WithContext(flags.Get("key")));
  Result<solver::ImageDataset> data = solver::LoadTaskData(*task);
  if (!data.ok()) return ReportError(io, kCommand, data.status());

  Result<std::int64_t> every = flags.GetInt("log-every", 1, INT64_MAX);
  if (!every.ok()) return ReportError(io, kCommand, every.status());
  Result<Clock::Duration> commit_interval = ReadCommitIntervalFlag(flags);
  if (!commit_interval.ok()) return ReportError(io, kCommand, commit_interval.status());

  solver::ProveOptions options;
  options.out_dir = flags.Get("out");
  options.key = &*key;
  options.commit_interval = *commit_interval;
  // Progress on stderr: the step, loss, speed and time left, and one line per durable checkpoint
  // (a run stopped after such a line resumes from that step). stdout stays the result (one JSON
  // object with --json).
  const bool terminal = &io.err == &std::cerr && isatty(STDERR_FILENO) == 1;
  ProgressPrinter progress(io.err, terminal, *every);
  options.sink = &progress;
  const std::int64_t total_steps = task->steps;
  options.on_checkpoint_saved = [&progress, total_steps](std::int64_t step) {
    progress.Note("polnode prove: checkpoint at step " + std::to_string(step) + " of " + std::to_string(total_steps) +
                  " saved");
  };
  Result<solver::ProveResult> result = solver::Prove(*task, *data, *backend->backend, options);
  if (!result.ok()) return ReportError(io, kCommand, result.status());
  const solver::ProofManifest& m = result->manifest;
  const double steps_run = static_cast<double>(task->steps - result->resumed_from_step);
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject()
        .Field("document_hash", consensus::ToHex(m.task_id))
        .Field("merkle_root", consensus::ToHex(m.merkle_root))
        .Field("final_state_hash", consensus::ToHex(m.checkpoint_hashes.back()))
        .Field("checkpoints", static_cast<std::int64_t>(m.checkpoint_hashes.size()))
        .Field("steps", m.steps)
        .Field("checkpoint_interval", m.checkpoint_interval)
        .Field("resumed_from_step", result->resumed_from_step)
        .Field("backend", m.backend)
        .Field("signed", m.is_signed)
        .Field("train_seconds", result->train_seconds)
        .Field("steps_per_second", result->train_seconds > 0 ? steps_run / result->train_seconds : 0.0)
        .EndObject();
    io.out << w.str() << "\n";
  } else {
    io.out << "proved document " << consensus::ToHex(m.task_id) << " into " << options.out_dir << "\n"
           << m.checkpoint_hashes.size() << " checkpoints (k=" << m.checkpoint_interval << ", " << m.steps
           << " steps" << (result->resumed_from_step > 0 ? ", resumed from step " + std::to_string(result->resumed_from_step) : "")
           << ") on " << m.backend << (m.is_signed ? ", signed" : ", unsigned") << "\n"
           << "merkle root " << consensus::ToHex(m.merkle_root) << "\n";
  }
  return kExitOk;
}

}  // namespace

int RunProveCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(kCommand,
                "Train a task with proof of learning: a checkpoint blob every k steps and a signed "
                "manifest in --out. Rerun after an interruption to resume; the manifest comes out "
                "byte-identical.");
  DeclareTaskFileFlag(flags, true);
  flags.Value("out", "DIR", "proof directory (created; an existing one is resumed)", "", true);
  flags.Value("key", "FILE", "solver key file (polnode keygen) that signs the manifest; verifiers reject unsigned proofs",
              "", true);
  DeclareBackendFlags(flags);
  flags.Value("log-every", "N", "steps between progress lines (step, loss, steps/s, ETA) when stderr is not a terminal",
              "50");
  DeclareCommitIntervalFlag(flags);
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  return Prove(flags, io);
}

}  // namespace polnode::node
