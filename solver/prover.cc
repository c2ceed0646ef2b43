#include "polnode/solver/prover.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <thread>

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

// Encodes, hashes and stores checkpoints on its own thread; after each blob is durable it rewrites
// the progress file, so progress never names a missing blob. States it has written go back to the
// training thread (Recycled) for the next checkpoint's download, and it encodes into one buffer, so
// a checkpoint allocates nothing once the first two are written.
class CheckpointWriter {
 public:
  CheckpointWriter(BlobStore store, std::string progress_path, ProveProgress progress, std::size_t capacity,
                   std::function<void(std::int64_t)> on_saved)
      : store_(std::move(store)), progress_path_(std::move(progress_path)), progress_(std::move(progress)), capacity_(std::max<std::size_t>(1, capacity)),
        on_saved_(std::move(on_saved)), thread_([this] { Loop(); }) {}
  ~CheckpointWriter() { static_cast<void>(Finish()); }
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Queues one checkpoint (the writer owns the state from here) with the losses of the steps since
  // the previous one; blocks while the queue is full. `last`: no step follows (the training thread
  // only waits for the writer from here), so the writer hashes the state beside the blob's write.
  // Returns the writer's first error, if it had one.
  [[nodiscard]] Status Push(TrainState state, std::vector<std::uint32_t> losses, bool last) {
    std::unique_lock lock(mu_);
    space_.wait(lock, [&] { return queue_.size() < capacity_ || !error_.ok(); });
    if (!error_.ok()) return error_;
    queue_.push_back({std::move(state), std::move(losses), last});
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

  // Waits until every queued checkpoint is written; returns the first error.
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

 private:
  struct Job {
    TrainState state;
    std::vector<std::uint32_t> losses;
    bool last = false;
  };

  void Loop() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [&] { return !queue_.empty() || done_; });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        space_.notify_one();
      }
      Status s = Write(job);
      std::lock_guard lock(mu_);
      if (!s.ok()) {
        error_ = s;
        queue_.clear();
        space_.notify_all();
        return;
      }
      if (free_.size() < kMaxFree) free_.push_back(std::move(job.state));
    }
  }

  Status Write(const Job& job) {
    // The last checkpoint is the one write nothing overlaps: its state hash runs on a second thread
    // beside the blob's encoding, hash and write (the training thread is only waiting by then).
    consensus::Hash256 state_hash{};
    std::thread hasher;
    if (job.last) {
      try {
        hasher = std::thread([&] { state_hash = StateHash(job.state); });
      } catch (const std::system_error&) {
        // No thread to be had: the state is hashed below, after the blob, as any other checkpoint.
      }
    }
    EncodeStateInto(job.state, encoded_);
    Result<consensus::Hash256> blob = store_.Put(encoded_);
    if (hasher.joinable()) {
      hasher.join();
    } else if (blob.ok()) {
      state_hash = StateHash(job.state);
    }
    POLNODE_RETURN_IF_ERROR(blob.status());
    progress_.hashes.push_back(state_hash);
    progress_.blobs.push_back(*blob);
    progress_.loss_bits.insert(progress_.loss_bits.end(), job.losses.begin(), job.losses.end());
    POLNODE_RETURN_IF_ERROR(WriteFileAtomically(progress_path_, EncodeProgress(progress_)));
    if (on_saved_) on_saved_(job.state.step);
    return Status::Ok();
  }

  BlobStore store_;
  std::string progress_path_;
  ProveProgress progress_;  // owned by the writer thread until Finish
  std::size_t capacity_;
  std::function<void(std::int64_t)> on_saved_;
  std::vector<std::uint8_t> encoded_;  // the blob being written; the writer thread's alone
  static constexpr std::size_t kMaxFree = 2;
  std::mutex mu_;
  std::condition_variable ready_, space_;
  std::deque<Job> queue_;
  std::vector<TrainState> free_;  // written states, for Recycled
  bool done_ = false;
  Status error_;
  std::thread thread_;  // last: starts after every member it uses exists
};

// Loads the state of the last checkpoint named in `progress`, checked against both its names (the
// store checks the blob hash, this the state hash) and its step.
Result<TrainState> LoadLastCheckpoint(const BlobStore& store, const ProveProgress& progress, const TaskSpec& task) {
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, store.Get(progress.blobs.back()));
  POLNODE_ASSIGN_OR_RETURN(TrainState state, DecodeState(bytes));
  if (StateHash(state) != progress.hashes.back()) {
    return Status::Corruption("last checkpoint's blob does not have the state hash the progress file names");
  }
  const std::int64_t want = static_cast<std::int64_t>(progress.hashes.size() - 1) * task.checkpoint_interval;
  if (state.step != want) {
    return Status::Corruption("last checkpoint is at step " + std::to_string(state.step) + ", expected " + std::to_string(want));
  }
  return state;
}

}  // namespace

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
  const auto start = std::chrono::steady_clock::now();
  CheckpointWriter writer(std::move(store), progress_path, progress, options.queue_capacity,
                          options.on_checkpoint_saved);
  if (progress.hashes.empty()) POLNODE_RETURN_IF_ERROR(writer.Push(state, {}, false));
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
      POLNODE_RETURN_IF_ERROR(writer.Push(std::move(checkpoint), std::move(pending), last));
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
