// What `polnode verifier` and `polnode whistleblower` share: checking a committed proof of
// learning the way the ledger assigned it (DESIGN.md section 5, docs/protocol.md). From the
// ledger's task record alone a checker fetches the task document (spec_uri) and binds it to the
// ledger's spec (task_binding.h), fetches the manifest from proof_uri (it must have the committed
// proof_root and be signed by the task's solver), downloads only the checkpoints the replay needs
// into a blob cache (or reads those the solver published on the ledger), and replays the segments
// of interest plus the final one.
//
// A verifier replays the union of its slots' segments (a key may hold several slots of a task);
// a whistleblower the union of the segments of the slots it audits. Both read verdicts with the same code: one replay (CheckCommittedProof),
// then VerdictOn for a set of segments.
//
// A reject (or a challenge) commits to what each failed segment's replay found (beacon.h
// SegmentDigest), which a forced round's reveal settles: in exact mode the state hash it reached;
// in tolerant mode, where forced checkpoints are perturbed at a few elements by +-forced_delta
// (consensus/forced_perturbation.h), the elements at which the replayed end differs from the
// proof's by more than forced_delta / 2. A tolerant replay is only trusted to that precision when
// the checker's own profiled replay error is below forced_delta / 4; otherwise it declines the task.
#ifndef POLNODE_ROLES_VERIFICATION_JOB_H_
#define POLNODE_ROLES_VERIFICATION_JOB_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/clock.h"
#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/contracts.pb.h"
#include "polnode/kernels/backend.h"
#include "polnode/roles/role_runtime.h"
#include "polnode/rpc/fetch_policy.h"
#include "polnode/rpc/file_http.h"
#include "polnode/rpc/file_store.h"
#include "polnode/rpc/ledger_client.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/task_spec.h"
#include "polnode/verifier/replay.h"

namespace polnode::node {

/// The data sets task documents name, each loaded once per process (loading Fashion-MNIST takes
/// seconds) and kept for the cache's life. Thread-safe.
class DataCache {
 public:
  using Loader = std::function<Result<solver::ImageDataset>(const solver::TaskSpec& document)>;
  /// `loader` loads a document's data (solver::LoadTaskData, pol_files.h, in the daemons; tests
  /// substitute a synthetic set).
  explicit DataCache(Loader loader) : loader_(std::move(loader)) {}

  /// The data set of `document`, by its data_location, loaded on first need and checked against
  /// the document's dataset hash (solver::CheckTaskData's kFailedPrecondition) on every call.
  /// The loader's errors pass through. The pointer stays valid as long as the cache.
  [[nodiscard]] Result<const solver::ImageDataset*> Get(const solver::TaskSpec& document);

  /// Keeps fetched data and model files in the FileStore at `dir` (file_store.h; the role home's
  /// files/), opened on the first call; later calls do nothing. kIOError naming the path.
  [[nodiscard]] Status UseFileStore(const std::string& dir);

  /// Fetches `document`'s remote data and model locations under `fetch` into the file store and
  /// points them at the local copies (ResolveTaskFiles, file_http.h); a document with local
  /// locations is left as it is. kFailedPrecondition for a remote location when UseFileStore was
  /// never called; ResolveTaskFiles's errors pass through.
  [[nodiscard]] Status Resolve(const FetchPolicy& fetch, solver::TaskSpec& document);

 private:
  Loader loader_;
  std::optional<FileStore> files_;  // set once by UseFileStore, under mu_
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<solver::ImageDataset>> sets_;  // by data_location
};

/// A ledger task's document, checked against the ledger's spec, and its data set.
struct BoundTask {
  solver::TaskSpec document;
  const solver::ImageDataset* data = nullptr;  // owned by the DataCache
};

/// Fetches `task`'s document from its spec_uri under `fetch`, loads its data through `cache` and
/// checks the binding (solver::CheckSpecBinding). Errors: kUnavailable when the document cannot be
/// fetched; the cache's errors; kFailedPrecondition "task document: <why>" for a document that
/// does not decode or does not bind to the ledger's spec, or a spec_uri that is malformed or that
/// `fetch` refuses (the task's fault, not the checker's).
[[nodiscard]] Result<BoundTask> BindTask(const FetchPolicy& fetch, const proto::Task& task, DataCache& cache);

/// The indices in task.verifiers of the slots `verifier` (32 raw key bytes) holds, ascending: slots
/// are drawn by stake with replacement, so a key may hold several of one task. Absent slots
/// included; empty when the key holds none.
std::vector<std::uint32_t> SlotsOf(const proto::Task& task, std::string_view verifier);

/// The segments the ledger drew for `slot`, ascending (the final segment, which every slot's
/// verifier replays, is not among them unless drawn).
std::vector<std::int64_t> SlotSegments(const proto::VerifierSlot& slot);

/// The union of the segments of task.verifiers' slots `slots`, ascending: what one replay for all
/// of them covers (plus the final segment, which CheckCommittedProof adds).
std::vector<std::int64_t> SegmentsOfSlots(const proto::Task& task, const std::vector<std::uint32_t>& slots);

/// The segments a whistleblower's challenge of `task` by `challenger` (32 raw key bytes) covers:
/// beacon.h ChallengeSegments over the task's segment beacon, segment count and Q, ascending (the
/// final segment included). Empty before the segment beacon is drawn.
std::vector<std::int64_t> ChallengeSegmentsOf(const proto::Task& task, std::string_view challenger);

/// What one check of a committed proof found.
struct ProofCheck {
  /// Replayed in this order: the request's segments, then the final segment unless among them.
  std::vector<std::int64_t> segments;
  std::vector<verifier::SegmentEvidence> evidence;  // one per segment, in the same order
  /// Why none of the solver's data could be used (the task document, or a manifest that is not
  /// the committed proof's or not signed by the task's solver); empty when it could. Segments
  /// were then replayed only from checkpoints published on the ledger.
  std::string data_fault;
  bool tolerant = false;
  /// Tolerant-mode tasks only: the thresholds the replays were judged by, profiled from the task
  /// alone (verifier::ProfileTask under every backend and thread count here), never from the proof.
  std::optional<verifier::Thresholds> thresholds;
  /// Tolerant-mode tasks only: the ledger spec's forced_delta D. Each replay also failed when an
  /// element of its end differed from the proof's by more than D / 2, and its evidence lists
  /// those elements (SegmentEvidence::beyond_limit). 0 in exact mode.
  float forced_delta = 0.0f;
  std::int64_t blobs_fetched = 0;      // checkpoints downloaded (not already in the cache)
  std::int64_t published_loaded = 0;   // checkpoints read from the ledger's publication
  double seconds = 0.0;                // wall time of the whole check
};

struct CheckRequest {
  proto::Task task;                    // the ledger's record (status VERIFYING or later)
  std::vector<std::int64_t> segments;  // each in [0, segment count), distinct; may be empty
  std::string cache_dir;               // checkpoints go to cache_dir/blobs (DisputeDuty's layout)
  FetchPolicy fetch;                   // what spec_uri and proof_uri may be fetched from
  DataCache* data = nullptr;
  kernels::Backend* backend = nullptr;  // used by this call only, for its duration
  /// Reads the checkpoints the task's solver published on the ledger (task.published()); those
  /// stand in for blobs its server does not hand over. Null: only the server is asked.
  const LedgerClient* ledger = nullptr;
  /// Times the replay (ProofCheck::seconds) and the pause between fetch attempts; never null.
  Clock* clock = &SystemClock();
  /// Set by the caller when the check's result is no longer wanted (its daemon stops): a pause
  /// between fetch attempts ends at once and no further attempt is made, so the check ends soon.
  /// Whoever sets it calls clock->Notify() to wake that pause. Null: never stopped.
  const std::atomic<bool>* stop = nullptr;
};

/// Checks the proof `request.task` committed by replaying `request.segments` and the final segment,
/// each from its start checkpoint, against its end checkpoint (contracts, section 6: the data
/// is the solver's burden). A checkpoint comes from the solver's server (proof_uri: a manifest
/// whose root is the committed proof_root and which the task's solver signed, then the blob,
/// checked against the manifest's hash; a refused or dropped download is retried a few times), or
/// else from the ledger when the solver published it there. A segment with a checkpoint from
/// neither is not available; that is a fact about the proof, not an error.
///
/// Exact-mode replays are judged by the end state's hash alone (what a dispute game can show);
/// tolerant-mode ones by the profiled distance thresholds, the manifest's claimed losses and,
/// with D the spec's forced_delta, by every element: a segment whose replayed end differs from the
/// proof's by more than D / 2 at any element (a NaN difference included) fails, and its evidence
/// names those elements (a forced round's perturbation, which a reject commits to: VerdictOn).
/// Errors are the checker's own, worth retrying later: kUnavailable when the task document
/// cannot be fetched, the data set cannot be loaded, the blob cache cannot be opened, the
/// backend fails; kInvalidArgument for a segment out of range. A tolerant task this checker
/// cannot judge (CheckForcedDeltaFits under the task's profile) is declined with its
/// kFailedPrecondition "declined: ...", before any segment is replayed: no verdict comes of it.
[[nodiscard]] Result<ProofCheck> CheckCommittedProof(const CheckRequest& request);

/// Whether a checker whose profiled thresholds are `profiled` can judge the forced rounds of a
/// tolerant task whose spec has `forced_delta` (D): ok when D is finite and positive and
/// profiled.linf < D / 4: the ledger holds every perturbation to at least 3D / 4
/// (consensus::PerturbationVisible), so the elements such a replay finds beyond D / 2 are exactly
/// the perturbed ones, never its own replay error. Else kFailedPrecondition "declined: ..." naming
/// D and, for a profile too loose, the linf threshold and D / 4. CheckCommittedProof declines a
/// task by it.
[[nodiscard]] Status CheckForcedDeltaFits(float forced_delta, const verifier::Thresholds& profiled);

/// Whether `status` is a decline of CheckForcedDeltaFits: the task cannot be judged on this
/// machine, and retrying the check cannot change that (the roles stop retrying it).
bool IsDeclined(const Status& status);

/// CheckCommittedProof on a thread of its own, beside a daemon's poll loop (the verifier's and the
/// whistleblower's checks). Destroying it stops the check (CheckRequest::stop) and waits for its
/// thread, so a daemon's Stop returns without anyone moving the clock past a fetch retry pause.
class BackgroundCheck {
 public:
  /// Starts the check; `request.stop` is replaced by this object's own.
  explicit BackgroundCheck(CheckRequest request);
  ~BackgroundCheck();
  BackgroundCheck(const BackgroundCheck&) = delete;
  BackgroundCheck& operator=(const BackgroundCheck&) = delete;

  /// Whether the check has ended, so Take returns at once.
  bool ready() const;
  /// The check's result; call once, after ready() (it blocks until the check ends).
  Result<ProofCheck> Take();

 private:
  std::atomic<bool> stop_{false};  // read by the check's retry pause; outlives the thread
  Clock* clock_;
  std::future<Result<ProofCheck>> result_;
};

/// A verdict on some segments of a checked proof (the VerdictTx a verifier with those segments
/// posts).
struct SegmentsVerdict {
  proto::Verdict verdict = proto::VERDICT_NONE;
  /// Reject: the segments whose replay from an available start did not reach the proof's end
  /// state (tolerant mode: within the profiled thresholds and forced_delta / 2 of every element),
  /// ascending. Dispute games can show each of them wrong.
  std::vector<std::uint64_t> failed_segments;
  /// Reject: what each failed segment's replay found, in the order of failed_segments (the end
  /// beacon.h SegmentDigest commits to): the state hash it reached in exact mode;
  /// consensus::PerturbedIndicesHash of the elements at which its end differed from the proof's
  /// by more than forced_delta / 2 in tolerant mode (ProofCheck::forced_delta). Empty otherwise.
  std::vector<consensus::Hash256> failed_ends;
  std::string reason;  // the first failure (or unavailable segment) in replay order; empty on accept
};

/// The verdict a check of just `segments` (plus the final segment) gives, read from `check`,
/// which must have replayed all of them (kInternal naming a segment it did not): reject when one
/// of them failed, else unavailable when one of them lacked a checkpoint, else accept.
[[nodiscard]] Result<SegmentsVerdict> VerdictOn(const ProofCheck& check, const std::vector<std::int64_t>& segments);

/// What a reject or a whistleblower's challenge by `key` (32 raw bytes) commits to: one beacon.h
/// SegmentDigest(key, segment, failed end) per failed segment of `verdict`, in order, 32 raw bytes
/// each (SegmentsVerdict::failed_ends: the end its replay reached, or in tolerant mode the hash of
/// the elements it found perturbed); empty when the verdict has no failed ends (accept,
/// unavailable).
std::vector<std::string> SegmentDigestsOf(std::string_view key, const SegmentsVerdict& verdict);

/// The transaction a verifier (`verifier`, 32 raw key bytes) posts for `verdict` on slot `slot` of
/// `task_id`: for a reject the failed segments and SegmentDigestsOf(verifier, verdict).
proto::VerdictTx VerdictTxFor(std::string_view task_id, std::uint32_t slot, std::string_view verifier,
                              const SegmentsVerdict& verdict, const consensus::Hash256& report_hash);

/// Pages through the ledger's tasks pass after pass, skipping the tasks before the first one
/// that was still open (not settled or cancelled) in the previous pass: closed tasks never
/// change again, so a long-lived daemon does not re-read its whole history every pass.
class TaskScan {
 public:
  /// Calls `visit` on every task from the first one not known closed, in submission order (closed
  /// ones included, so a role sees each task close at least once). An error of `visit` about one
  /// task does not hold up the others: it is logged as event "task_error" (again only when its
  /// message changes) and counted in task_errors_total, and that task is visited again next
  /// pass. kUnavailable (the ledger is gone) ends the pass and is returned, as are the ledger's
  /// own errors.
  [[nodiscard]] Status Pass(RoleContext& ctx, const std::function<Status(const proto::Task&)>& visit);

 private:
  std::uint64_t first_open_ = 0;
  std::map<std::string, std::string> errors_;  // raw task id -> the last error logged for it
};

/// Whether a task has closed for good.
bool TaskClosed(const proto::Task& task);

}  // namespace polnode::node

#endif  // POLNODE_ROLES_VERIFICATION_JOB_H_
