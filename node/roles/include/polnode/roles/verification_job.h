// What `polnode verifier` and `polnode whistleblower` share: checking a committed proof of
// learning the way the ledger assigned it (DESIGN.md section 5). From the ledger's task record
// alone a checker fetches the task document (spec_uri) and binds it to the ledger's spec
// (task_binding.h), fetches the manifest from proof_uri (it must have the committed proof_root and
// be signed by the task's solver), downloads only the checkpoints the replay needs into a blob
// cache, and replays the segments contracts::DrawSegments gives a verifier, plus the final one.
//
// A whistleblower judges a verifier by re-doing exactly that verifier's segments, so both roles
// compute verdicts with the same code: one replay of the union of the segments of interest
// (CheckCommittedProof), then VerdictOn for each verifier's own segments.
#ifndef POLNODE_ROLES_VERIFICATION_JOB_H_
#define POLNODE_ROLES_VERIFICATION_JOB_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/kernels/backend.h"
#include "polnode/roles/role_runtime.h"
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

 private:
  Loader loader_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<solver::ImageDataset>> sets_;  // by data_location
};

/// A ledger task's document, checked against the ledger's spec, and its data set.
struct BoundTask {
  solver::TaskSpec document;
  const solver::ImageDataset* data = nullptr;  // owned by the DataCache
};

/// Fetches `task`'s document from its spec_uri, loads its data through `cache` and checks the
/// binding (solver::CheckSpecBinding). Errors: kUnavailable when the document cannot be fetched;
/// the cache's errors; kFailedPrecondition "task document: <why>" for a document that does not decode
/// or does not bind to the ledger's spec.
[[nodiscard]] Result<BoundTask> BindTask(const proto::Task& task, DataCache& cache);

/// The segments `verifier` (32 raw key bytes) replays on `task`, ascending: contracts::DrawSegments
/// over the task's segment beacon, total_steps / checkpoint_interval segments, Q =
/// segments_per_verification. Empty when the task has no beacon yet or its spec draws nothing.
std::vector<std::int64_t> AssignedSegments(const proto::Task& task, std::string_view verifier);

/// What one check of a committed proof found.
struct ProofCheck {
  std::vector<std::int64_t> segments;  // replayed before the final segment, in this order
  verifier::Verdict verdict;           // over `segments` and the final segment
  /// Tolerant-mode tasks only: the thresholds the replays were judged by, profiled from the task
  /// alone (verifier::ProfileTask under every backend and thread count here), never from the proof.
  std::optional<verifier::Thresholds> thresholds;
  std::int64_t blobs_fetched = 0;      // checkpoints downloaded (not already in the cache)
  double seconds = 0.0;                // wall time of the whole check
};

struct CheckRequest {
  proto::Task task;                    // the ledger's record (status VERIFYING or later)
  std::vector<std::int64_t> segments;  // non-empty, each in [0, segment count), distinct
  std::string cache_dir;               // checkpoints go to cache_dir/blobs (DisputeDuty's layout)
  DataCache* data = nullptr;
  kernels::Backend* backend = nullptr;  // used by this call only, for its duration
};

/// Checks the proof `request.task` committed: BindTask, the manifest from proof_uri (its root must
/// be the task's proof_root), the checkpoints the replay needs (each replayed segment's start and
/// end, nothing else), then verifier::VerifyProof with the request's segments as the explicit
/// list and the task's solver as the required signer.
///
/// Whatever the task's parties are to blame for is a reject verdict (never an error), with the
/// reason: a task document that does not decode or bind, a manifest that does not decode, holds
/// another root or is not signed by the solver, checkpoints that are missing or corrupt after
/// a few attempts, and failed replays. Errors are the checker's own, worth retrying later:
/// kUnavailable when the document or manifest cannot be fetched, the data set cannot be loaded,
/// the blob cache cannot be opened, the backend fails.
[[nodiscard]] Result<ProofCheck> CheckCommittedProof(const CheckRequest& request);

/// A verdict on some segments of a checked proof.
struct SegmentsVerdict {
  bool accept = false;
  std::string reason;  // the first failure in replay order; empty on accept
  /// A reject whose first failure a dispute game can show: a segment that replayed from its
  /// checkpoint to another end state than the proof claims. (A game pinpoints one wrong step of
  /// one segment; a bad manifest, signature, initial state or unservable checkpoint is not one.)
  bool provable = false;
};

/// The verdict a check of just `segments` (plus the final segment) gives, read from `check`,
/// which must have replayed all of them (kInternal naming a segment it did not replay): reject
/// when the task document or manifest failed, checkpoint 0 is not the initial state, or one of
/// those segments failed (the first in replay order gives the reason).
[[nodiscard]] Result<SegmentsVerdict> VerdictOn(const ProofCheck& check, const std::vector<std::int64_t>& segments);

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
