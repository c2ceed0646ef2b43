// Training with proof of learning (DESIGN.md section 5): runs a task, writes the full state every
// k steps (step 0 included) as a content-addressed blob, and finishes with a signed manifest.
//
// Layout of the output directory:
//   blobs/<state hash>   checkpoints: EncodeState bytes, named by the hex StateHash of the state
//                        they encode (blob_store.h)
//   task.pb              the task (protobuf), so the proof travels with what it claims to prove
//   progress.bin         checkpoints written so far (see below), for resuming
//   manifest.pb          the finished manifest (protobuf), written last
// progress.bin (prove_progress.h: a versioned local archive) names the checkpoints on disk and the
// losses before the last one; it is rewritten atomically after each batch of checkpoint blobs is
// durable, so it never names a blob that is missing, and it is read before anything else in the
// directory is written, so a file this build cannot read, or another task's, is left as it is.
//
// Checkpoints are copied on the training thread, then encoded, hashed and written into a
// temporary blob file either by a writer thread behind a bounded queue, overlapping the next
// steps, or at once on the backend's host threads (CheckpointWork); the writer thread always
// makes them durable (fsync, rename, progress file), in batches (ProveOptions::commit_interval),
// while the next steps run.
#ifndef POLNODE_SOLVER_PROVER_H_
#define POLNODE_SOLVER_PROVER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "polnode/base/clock.h"
#include "polnode/base/status.h"
#include "polnode/consensus/keys.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/proof_manifest.h"
#include "polnode/solver/task_spec.h"
#include "polnode/solver/trainer.h"

namespace polnode::solver {

inline constexpr std::string_view kManifestFile = "manifest.pb";
inline constexpr std::string_view kTaskFile = "task.pb";
inline constexpr std::string_view kProgressFile = "progress.bin";
inline constexpr std::string_view kBlobDir = "blobs";
/// ProveOptions::commit_interval's default.
inline constexpr std::chrono::milliseconds kDefaultCommitInterval{1000};

/// Where a checkpoint is encoded, hashed and written (its fsyncs and renames are always the
/// writer thread's, beside the next steps). Either way the proof is the same, bit for bit.
enum class CheckpointWork : std::uint8_t {
  /// kHostThreads when the backend's host threads take every CPU the process may use
  /// (Backend::host_threads() >= AvailableCpus()), else kWriterThread.
  kAuto,
  /// On the writer thread, beside the next steps: free where that thread has a CPU of its own
  /// (a device backend, or a CPU backend with fewer threads than CPUs).
  kWriterThread,
  /// On the backend's host threads before the next step (Backend::RunHostTasks): the work's own
  /// CPU time divided among them, where a writer thread would preempt one of them and stall
  /// every fork-join of the steps it overlaps.
  kHostThreads,
};

/// What `work` means for `backend` on this machine now: kAuto resolved (never returned).
CheckpointWork ResolveCheckpointWork(CheckpointWork work, const kernels::Backend& backend);

struct ProveOptions {
  std::string out_dir;
  /// Signs the manifest when set; must outlive the call.
  const consensus::SecretKey* key = nullptr;
  ProgressSink* sink = nullptr;
  /// For tests of resumption: stop once this many steps of the task are done (after the writer
  /// has finished, as if the process had been killed there) and return kFailedPrecondition.
  /// < 0: run to the end.
  std::int64_t stop_after_step = -1;
  CheckpointWork checkpoint_work = CheckpointWork::kAuto;
  /// Checkpoints waiting for the writer before training blocks (memory bound: this many states).
  std::size_t queue_capacity = 2;
  /// Checkpoints are made durable in batches: a checkpoint that training hands over less than
  /// this long (clock time) after the one that made the previous batch durable waits, written
  /// but not yet synced, for the next one or the end of the run (32 at most wait). A batch shares
  /// the fsyncs' journal commits and the wake-ups they cost the training beside them (on two busy
  /// cores, proof_bench: the 1024-wide MLP's 100-step segment +1.3% with batches against +5.9%
  /// with each checkpoint durable, the small MLP's -0.2% to +1.7% against +1.9% to +2.4%); the
  /// price is that a crash may lose up to this much training beyond what it loses without
  /// batching. A stopped or cancelled run makes all it wrote durable before Prove returns. Zero:
  /// every checkpoint is made durable on its own.
  Clock::Duration commit_interval = kDefaultCommitInterval;
  /// The clock commit_interval is measured on; SystemClock() when null. Must outlive the call.
  Clock* clock = nullptr;
  /// When set, polled after every step: once true, the run stops as stop_after_step does (the
  /// proof directory stays resumable) and Prove returns kFailedPrecondition ("cancelled").
  const std::atomic<bool>* cancel = nullptr;
  /// When set, called once with the completed steps of the state training starts from (0, or the
  /// step resumed from), before the first step: a backend that counts steps positions itself.
  std::function<void(std::int64_t first_step)> on_start;
  /// When set, called on the checkpoint writer's thread with a checkpoint's step once that
  /// checkpoint and the progress file naming it are durable (for each checkpoint of a batch, in
  /// order, after the batch): a run stopped after this call, by any means, resumes from that step
  /// or a later one.
  std::function<void(std::int64_t step)> on_checkpoint_saved;
  /// When set, called on the training thread with the state of every checkpoint after the
  /// initial one, right after the step that reaches it and before it is hashed and written: it may
  /// change the state (a forced round falsifies its forced checkpoints, forced_round.h), and the
  /// proof then commits the changed state and training goes on from it. An error stops the run
  /// (the proof directory stays resumable from the checkpoint before) and is returned. A resumed
  /// run does not call it again for the checkpoints already on disk.
  std::function<Status(TrainState& state)> on_checkpoint;
};

struct ProveResult {
  ProofManifest manifest;
  std::int64_t resumed_from_step = 0;  // 0 for a fresh run
  double train_seconds = 0.0;          // the step loop, checkpoint hand-off included
};

/// Trains `task` on `data` with proof into options.out_dir, resuming from progress.bin when the
/// directory holds one for the same task. The manifest (and manifest.pb) is byte-identical
/// however often the run was interrupted, for the same backend. Errors: those of
/// TaskStepper::Create; kFailedPrecondition when the data set hash differs from the task's, the
/// directory's progress belongs to another task or has a newer format, or stop_after_step was
/// reached; kCorruption for a damaged progress file or checkpoint (each naming the file); kIOError
/// from the disk.
Result<ProveResult> Prove(const TaskSpec& task, const ImageDataset& data, kernels::Backend& backend,
                          const ProveOptions& options);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_PROVER_H_
