#include "polnode/solver/prover.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <span>
#include <system_error>
#include <thread>

#include "polnode/base/clock.h"
#include "polnode/base/cpus.h"
#include "polnode/consensus/merkle.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/prove_progress.h"
#include "polnode/solver/task_steps.h"

namespace polnode::solver {
namespace {

std::uint32_t FloatBits(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// A checkpoint on its way to disk. Its blob is named by its state hash (blob_store.h).
struct Checkpoint {
  TrainState state;
  std::vector<std::uint32_t> losses;  // of the steps since the previous checkpoint
  bool last = false;                  // no step follows
  // Set once the state is hashed and its encoding written to `blob` (StageOnHostThreads); the
  // writer then only commits it.
  std::optional<StagedFile> blob;
  consensus::Hash256 state_hash{};
  Clock::TimePoint handed_over{};  // when training handed it to the writer (ProveOptions::clock)
};

// Reused from one checkpoint to the next: the headers of the encoding and its pieces.
struct EncodeScratch {
  std::vector<std::uint8_t> bytes;
  std::vector<std::span<const std::uint8_t>> pieces;
};

// Writes the encoding of `state`, straight from its tensors, into a new staged file of `store`.
Result<StagedFile> WriteBlobFile(const TrainState& state, const BlobStore& store, EncodeScratch& scratch) {
  EncodeStatePieces(state, scratch.bytes, scratch.pieces);
  POLNODE_ASSIGN_OR_RETURN(StagedFile file, store.Stage());
  std::uint64_t offset = 0;
  for (const std::span<const std::uint8_t> piece : scratch.pieces) {
    POLNODE_RETURN_IF_ERROR(file.WriteAt(offset, piece));
    offset += piece.size();
  }
  return file;
}

// Hashes `c.state` and writes its blob file on the backend's host threads: one task writes the
// file and starts its writeback (one task is all a file takes: writes to one file serialise in the
// kernel), the others hash one tensor each, the largest first so that the small ones fill in
// behind them.
Status StageOnHostThreads(Checkpoint& c, const BlobStore& store, kernels::Backend& backend, EncodeScratch& scratch) {
  const std::vector<NamedTensor>& tensors = c.state.tensors;
  std::vector<std::size_t> order(tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return tensors[a].tensor.numel() > tensors[b].tensor.numel(); });
  std::vector<consensus::Hash256> tensor_hashes(tensors.size());
  Result<StagedFile> file = Status::Internal("the blob file was not written");
  backend.RunHostTasks(static_cast<std::int64_t>(tensors.size() + 1), [&](std::int64_t task) {
    if (task == 0) {
      file = WriteBlobFile(c.state, store, scratch);
      // The pages' hand-over to the device here too, where it is shared out like the rest, rather
      // than in the writer's fsync, which would take it from a training thread.
      if (file.ok()) {
        if (Status started = file->StartWriteback(); !started.ok()) file = started;
      }
      return;
    }
    const std::size_t t = order[static_cast<std::size_t>(task - 1)];
    tensor_hashes[t] = TensorHash(tensors[t].tensor);
  });
  POLNODE_RETURN_IF_ERROR(file.status());
  c.state_hash = StateHashFrom(c.state, tensor_hashes);
  c.blob = std::move(*file);
  return Status::Ok();
}

// A checkpoint written to its blob file, waiting for its batch to be made durable.
struct StagedCheckpoint {
  StagedFile blob;
  consensus::Hash256 state_hash{};
  std::vector<std::uint32_t> losses;
  std::int64_t step = 0;
};

// Makes checkpoints durable on its own thread, in batches (ProveOptions::commit_interval): for a
// checkpoint not staged yet, its state hash and blob file first; then, once the batch is due,
// every blob's fsync and rename, one sync of the blob directory, and the progress file rewritten,
// so progress never names a missing blob. States whose blob files are written go back to the
// training thread (Recycled) for the next checkpoint's download, so a checkpoint allocates
// nothing once the first two are written.
class CheckpointWriter {
 public:
  CheckpointWriter(BlobStore store, std::string progress_path, ProveProgress progress, std::size_t capacity,
                   Clock::Duration commit_interval, Clock::TimePoint start, std::function<void(std::int64_t)> on_saved)
      : store_(std::move(store)), progress_path_(std::move(progress_path)), progress_(std::move(progress)),
        capacity_(std::max<std::size_t>(1, capacity)), commit_interval_(commit_interval), last_commit_(start),
        on_saved_(std::move(on_saved)), thread_([this] { Loop(); }) {}
  ~CheckpointWriter() { static_cast<void>(Finish()); }
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Queues one checkpoint (the writer owns it from here); blocks while the queue is full. Returns
  // the writer's first error, if it had one.
  [[nodiscard]] Status Push(Checkpoint checkpoint) {
    std::unique_lock lock(mu_);
    space_.wait(lock, [&] { return queue_.size() < capacity_ || !error_.ok(); });
    if (!error_.ok()) return error_;
    queue_.push_back(std::move(checkpoint));
    ready_.notify_one();
    return Status::Ok();
  }

  // A state the writer has finished with (its tensors keep their storage), to download the next
  // checkpoint into; an empty state when none is free yet.
  TrainState Recycled() {
    std::lock_guard lock(mu_);
    if (free_.empty()) return TrainState{};
    TrainState state = std::move(free_.back());
    free_.pop_back();
    return state;
  }

  // Waits until every queued checkpoint is durable; returns the first error.
  [[nodiscard]] Status Finish() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
      ready_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
    return error_;
  }

  // Valid after Finish.
  const ProveProgress& progress() const { return progress_; }
  const BlobStore& store() const { return store_; }

 private:
  // At most this many blob files wait for their batch: each holds a file descriptor open.
  static constexpr std::size_t kMaxBatch = 32;

  void Loop() {
    for (;;) {
      Checkpoint c;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [&] { return !queue_.empty() || done_; });
        if (queue_.empty()) break;
        c = std::move(queue_.front());
        queue_.pop_front();
        space_.notify_one();
      }
      Status s = Take(c);
      std::lock_guard lock(mu_);
      if (!s.ok()) {
        Fail(s);
        return;
      }
      if (free_.size() < kMaxFree) free_.push_back(std::move(c.state));
    }
    // A run stopped before its last checkpoint: what it wrote is made durable, to resume from.
    if (Status s = CommitBatch(); !s.ok()) {
      std::lock_guard lock(mu_);
      Fail(s);
    }
  }

  // Called with mu_ held.
  void Fail(const Status& s) {
    error_ = s;
    queue_.clear();
    space_.notify_all();
  }

  // Writes the blob file of a checkpoint not staged yet, and hashes its state.
  Status Stage(Checkpoint& c) {
    // The last checkpoint is the one write nothing overlaps: its state hash runs on a second thread
    // beside the blob's write (the training thread is only waiting by then).
    std::thread hasher;
    if (c.last) {
      try {
        hasher = std::thread([&] { c.state_hash = StateHash(c.state); });
      } catch (const std::system_error&) {
        // No thread to be had: the state is hashed below, after the blob, as any other checkpoint.
      }
    }
    Result<StagedFile> file = WriteBlobFile(c.state, store_, scratch_);
    if (file.ok()) {
      if (Status started = file->StartWriteback(); !started.ok()) file = started;
    }
    if (hasher.joinable()) {
      hasher.join();
    } else if (file.ok()) {
      c.state_hash = StateHash(c.state);
    }
    POLNODE_RETURN_IF_ERROR(file.status());
    c.blob = std::move(*file);
    return Status::Ok();
  }

  // Adds a checkpoint to the batch, and commits the batch when it is due: at the last checkpoint,
  // when it is full, or when the checkpoint came commit_interval or more after the one that made
  // the previous batch durable.
  Status Take(Checkpoint& c) {
    if (!c.blob) POLNODE_RETURN_IF_ERROR(Stage(c));
    batch_.push_back({std::move(*c.blob), c.state_hash, std::move(c.losses), c.state.step});
    c.blob.reset();
    if (c.last || batch_.size() >= kMaxBatch || c.handed_over - last_commit_ >= commit_interval_) {
      last_commit_ = c.handed_over;
      return CommitBatch();
    }
    return Status::Ok();
  }

  Status CommitBatch() {
    if (batch_.empty()) return Status::Ok();
    std::vector<StagedFile> files;
    std::vector<consensus::Hash256> names;
    for (StagedCheckpoint& b : batch_) {
      files.push_back(std::move(b.blob));
      names.push_back(b.state_hash);
    }
    POLNODE_RETURN_IF_ERROR(store_.CommitAll(files, names));
    for (const StagedCheckpoint& b : batch_) {
      progress_.hashes.push_back(b.state_hash);
      progress_.blobs.push_back(b.state_hash);
      progress_.loss_bits.insert(progress_.loss_bits.end(), b.losses.begin(), b.losses.end());
    }
    POLNODE_RETURN_IF_ERROR(WriteFileAtomically(progress_path_, EncodeProgress(progress_)));
    if (on_saved_) {
      for (const StagedCheckpoint& b : batch_) on_saved_(b.step);
    }
    batch_.clear();
    return Status::Ok();
  }

  BlobStore store_;
  std::string progress_path_;
  ProveProgress progress_;  // owned by the writer thread until Finish
  std::size_t capacity_;
  const Clock::Duration commit_interval_;
  Clock::TimePoint last_commit_;  // the writer thread's alone
  std::function<void(std::int64_t)> on_saved_;
  EncodeScratch scratch_;                // the writer thread's alone
  std::vector<StagedCheckpoint> batch_;  // the writer thread's alone
  static constexpr std::size_t kMaxFree = 2;
  std::mutex mu_;
  std::condition_variable ready_, space_;
  std::deque<Checkpoint> queue_;  // guarded by mu_
  std::vector<TrainState> free_;  // guarded by mu_: written states, for Recycled
  bool done_ = false;             // guarded by mu_
  Status error_;
  std::thread thread_;  // last: starts after every member it uses exists
};

// Loads the state of the last checkpoint named in `progress`, checked against both its names (the
// store checks the blob hash, this the state hash) and its step.
Result<TrainState> LoadLastCheckpoint(const BlobStore& store, const ProveProgress& progress, const TaskSpec& task) {
  POLNODE_ASSIGN_OR_RETURN(StoredState stored, store.GetState(progress.blobs.back()));
  TrainState& state = stored.state;
  if (stored.state_hash != progress.hashes.back()) {
    return Status::Corruption("last checkpoint's blob does not have the state hash the progress file names");
  }
  const std::int64_t want = static_cast<std::int64_t>(progress.hashes.size() - 1) * task.checkpoint_interval;
  if (state.step != want) {
    return Status::Corruption("last checkpoint is at step " + std::to_string(state.step) + ", expected " + std::to_string(want));
  }
  return state;
}

}  // namespace

CheckpointWork ResolveCheckpointWork(CheckpointWork work, const kernels::Backend& backend) {
  if (work != CheckpointWork::kAuto) return work;
  // A writer thread beside training that already keeps every CPU busy takes its CPU time from one
  // of the training threads, and a step that forks and joins then waits for that thread: the
  // step loses about twice the writer's time. Run on the training threads, the same work costs
  // its own time divided among them.
  return backend.host_threads() >= AvailableCpus() ? CheckpointWork::kHostThreads : CheckpointWork::kWriterThread;
}

Result<ProveResult> Prove(const TaskSpec& task, const ImageDataset& data, kernels::Backend& backend,
                          const ProveOptions& options) {
  POLNODE_ASSIGN_OR_RETURN(TaskStepper stepper, TaskStepper::Create(task, data));
  POLNODE_RETURN_IF_ERROR(CheckTaskData(task, data));
  const std::string dir = options.out_dir;
  POLNODE_ASSIGN_OR_RETURN(BlobStore store, BlobStore::Open(dir + "/" + std::string(kBlobDir)));
  const consensus::Hash256 task_id = TaskId(task);
  const std::string progress_path = dir + "/" + std::string(kProgressFile);

  // The progress is read before anything is written: a directory holding another task's progress,
  // or a file this build cannot read, is left exactly as it is.
  ProveResult result;
  ProveProgress progress;
  progress.task_id = task_id;
  TrainState state;
  Result<std::vector<std::uint8_t>> saved = ReadWholeFile(progress_path, kMaxManifestBytes);
  if (saved.ok()) {
    POLNODE_ASSIGN_OR_RETURN(progress, DecodeProgress(*saved, progress_path));
    POLNODE_RETURN_IF_ERROR(CheckProgress(progress, task, progress_path));
    POLNODE_ASSIGN_OR_RETURN(state, LoadLastCheckpoint(store, progress, task));
    result.resumed_from_step = state.step;
  } else if (saved.status().code() != StatusCode::kNotFound) {
    return saved.status();
  } else {
    state = stepper.Initial();
  }
  const std::string task_bytes = EncodeTaskProto(task);
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(
      dir + "/" + std::string(kTaskFile),
      std::span(reinterpret_cast<const std::uint8_t*>(task_bytes.data()), task_bytes.size())));

  const std::int64_t steps_per_epoch =
      data.text ? TextStepsPerEpoch(*data.text, task.batch, stepper.model().gpt->context)
                : data.train.count / task.batch;
  const bool on_host_threads = ResolveCheckpointWork(options.checkpoint_work, backend) == CheckpointWork::kHostThreads;
  EncodeScratch scratch;  // the training thread's (on_host_threads)
  const auto start = std::chrono::steady_clock::now();
  Clock& clock = options.clock != nullptr ? *options.clock : SystemClock();
  CheckpointWriter writer(std::move(store), progress_path, progress, options.queue_capacity, options.commit_interval,
                          clock.Now(), options.on_checkpoint_saved);
  // Hands a checkpoint to the writer, after hashing and writing it here when on_host_threads.
  const auto save = [&](Checkpoint c) -> Status {
    c.handed_over = clock.Now();
    if (on_host_threads) POLNODE_RETURN_IF_ERROR(StageOnHostThreads(c, writer.store(), backend, scratch));
    return writer.Push(std::move(c));
  };
  if (progress.hashes.empty()) POLNODE_RETURN_IF_ERROR(save({state, {}, false, std::nullopt, {}, {}}));
  std::vector<std::uint32_t> pending;
  if (options.on_start) options.on_start(state.step);
  // The state stays in the backend's buffers between checkpoints (device-resident training): each
  // step moves only its batch and its loss, and the state comes to the host at checkpoints.
  POLNODE_ASSIGN_OR_RETURN(ResidentTraining run, stepper.StartResident(state, backend));
  bool cancelled = false;
  while (run.step() < task.steps) {
    if (options.stop_after_step >= 0 && run.step() >= options.stop_after_step) break;
    if (options.cancel != nullptr && options.cancel->load()) {
      cancelled = true;
      break;
    }
    POLNODE_ASSIGN_OR_RETURN(float loss, stepper.Step(run));
    pending.push_back(FloatBits(loss));
    if (run.step() % task.checkpoint_interval == 0) {
      // Downloaded into a state the writer is done with and handed over whole: no copy, and no
      // allocation once the writer has returned two.
      TrainState checkpoint = writer.Recycled();
      POLNODE_RETURN_IF_ERROR(run.DownloadState(checkpoint));
      if (options.on_checkpoint) {
        POLNODE_RETURN_IF_ERROR(options.on_checkpoint(checkpoint));
        // Training goes on from the state as the hook left it (a forced round's falsification).
        POLNODE_RETURN_IF_ERROR(run.UploadState(checkpoint));
      }
      const bool last = run.step() == task.steps;
      POLNODE_RETURN_IF_ERROR(save({std::move(checkpoint), std::move(pending), last, std::nullopt, {}, {}}));
      pending.clear();
    }
    if (options.sink != nullptr) {
      options.sink->OnStep({run.step(), task.steps, (run.step() - 1) / steps_per_epoch, loss,
                            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
    }
  }
  POLNODE_RETURN_IF_ERROR(writer.Finish());
  result.train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (cancelled) return Status::FailedPrecondition("cancelled after step " + std::to_string(run.step()));
  if (run.step() < task.steps) {
    return Status::FailedPrecondition("stopped after step " + std::to_string(run.step()) + " as asked");
  }

  ProofManifest& m = result.manifest;
  m.task_id = task_id;
  m.checkpoint_interval = task.checkpoint_interval;
  m.steps = task.steps;
  m.checkpoint_hashes = writer.progress().hashes;
  m.checkpoint_blobs = writer.progress().blobs;
  m.merkle_root = consensus::MerkleRoot(m.checkpoint_hashes);
  m.loss_bits = writer.progress().loss_bits;
  m.backend = backend.name();
  if (options.key != nullptr) POLNODE_RETURN_IF_ERROR(SignManifest(m, *options.key));
  const std::string wire = EncodeManifest(m);
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(
      dir + "/" + std::string(kManifestFile),
      std::span(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size())));
  return result;
}

}  // namespace polnode::solver
