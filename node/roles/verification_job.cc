#include "polnode/roles/verification_job.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <span>

#include "polnode/consensus/forced_perturbation.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/beacon.h"
#include "polnode/rpc/proof_http.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/task_binding.h"
#include "polnode/solver/task_steps.h"
#include "polnode/verifier/profile.h"

namespace polnode::node {
namespace {

// A manifest or blob the solver's server failed to hand over is asked for this often before the
// checkpoint counts as unavailable: one refused or dropped connection must not make the solver
// publish on the ledger.
constexpr int kFetchAttempts = 3;
constexpr auto kFetchRetryPause = std::chrono::milliseconds(300);

Result<consensus::Hash256> Hash32(const std::string& raw, std::string_view what) {
  consensus::Hash256 hash{};
  if (raw.size() != hash.size()) return Status::InvalidArgument(std::string(what) + " is not 32 bytes");
  std::copy(raw.begin(), raw.end(), hash.begin());
  return hash;
}

// `x` with enough digits to read back as the same double, for error messages.
std::string Number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

// CheckForcedDeltaFits's first half, which needs no profile.
Status CheckForcedDelta(float forced_delta) {
  // The ledger admits no other tolerant task (payload_rules.cc); a record that has one cannot be
  // judged by the forced-round rule at all.
  if (!(std::isfinite(forced_delta) && forced_delta > 0.0f)) {
    return Status::FailedPrecondition("declined: the tolerant task's forced_delta " + Number(forced_delta) +
                                      " is not finite and positive");
  }
  return Status::Ok();
}

Status StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const Result<T>& r) { return r.status(); }

// Calls `fetch` until it succeeds, fails for another reason than kUnavailable, has been tried
// kFetchAttempts times or the request is stopped, pausing kFetchRetryPause of the request's clock
// between tries. The pause waits on the stop flag too, so a stopping daemon does not wait it out.
template <typename Fetch>
auto WithRetries(const CheckRequest& request, Fetch fetch) -> decltype(fetch()) {
  const std::atomic<bool>* stop = request.stop;
  for (int attempt = 1;; ++attempt) {
    auto result = fetch();
    const Status status = StatusOf(result);
    if (status.ok() || status.code() != StatusCode::kUnavailable || attempt == kFetchAttempts) return result;
    if (request.clock->WaitFor(kFetchRetryPause, [stop] { return stop != nullptr && stop->load(); })) return result;
  }
}

// BindTask's steps, telling what the task's parties are to blame for (a document that is served
// but does not decode or does not bind: `fault`) from what the checker is (errors).
struct Binding {
  std::optional<BoundTask> bound;
  std::string fault;
};

Result<Binding> TryBind(const FetchPolicy& fetch, const proto::Task& task, DataCache& cache) {
  Result<solver::TaskSpec> document = FetchTaskDocument(fetch, task.spec_uri());
  if (!document.ok()) {
    if (document.status().code() == StatusCode::kUnavailable) return document.status();
    return Binding{std::nullopt, document.status().ToString()};
  }
  // Served files that cannot be had (refused by the policy, not what the document declares) are
  // the task's fault like a bad document; an unreachable server or this machine's disk are not.
  if (Status s = cache.Resolve(fetch, *document); !s.ok()) {
    if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kIOError) return s;
    return Binding{std::nullopt, s.ToString()};
  }
  POLNODE_ASSIGN_OR_RETURN(const solver::ImageDataset* data, cache.Get(*document));
  if (Status s = solver::CheckSpecBinding(task.spec(), *document, *data); !s.ok()) return Binding{std::nullopt, s.ToString()};
  return Binding{BoundTask{std::move(*document), data}, ""};
}

// Where one check's checkpoints come from: the solver's server through a usable manifest, else the
// ledger's publication. Every state handed out is proven to be the committed checkpoint (by the
// manifest's hashes under the committed root, or by the ledger's check of the publication).
class CheckpointSource {
 public:
  CheckpointSource(const CheckRequest& request, const solver::TrainState& layout, std::int64_t k)
      : request_(request), layout_(layout), k_(k) {}

  // The server's side; `manifest` is unset when none is usable.
  void UseServer(std::optional<solver::ProofManifest> manifest, solver::BlobStore* store) {
    manifest_ = std::move(manifest);
    store_ = store;
  }
  const std::optional<solver::ProofManifest>& manifest() const { return manifest_; }

  // Checkpoint `index`, or std::nullopt with `why` it is not available. Errors are the checker's
  // own (the ledger gone).
  Result<std::optional<solver::TrainState>> Get(std::int64_t index, std::string& why) {
    if (manifest_) {
      const consensus::Hash256& blob = manifest_->checkpoint_blobs[static_cast<std::size_t>(index)];
      if (!store_->Contains(blob)) {
        const Status fetched =
            WithRetries(request_, [&] { return FetchBlob(request_.fetch, request_.task.proof_uri(), blob, *store_); });
        if (fetched.ok()) ++blobs_fetched_;
      }
      Result<solver::TrainState> state = verifier::LoadCheckpoint(*manifest_, *store_, layout_, index);
      if (state.ok()) return std::optional<solver::TrainState>(std::move(*state));
      why = state.status().ToString();
    }
    const auto& published = request_.task.published();
    if (request_.ledger != nullptr &&
        std::find(published.begin(), published.end(), static_cast<std::uint64_t>(index)) != published.end()) {
      Result<solver::TrainState> state = request_.ledger->PublishedState(request_.task, static_cast<std::uint64_t>(index));
      if (!state.ok() && state.status().code() == StatusCode::kUnavailable) return state.status();
      if (state.ok()) state = [&]() -> Result<solver::TrainState> {
        POLNODE_RETURN_IF_ERROR(verifier::CheckCheckpointState(*state, layout_, index, k_));
        return std::move(*state);
      }();
      if (state.ok()) {
        ++published_loaded_;
        return std::optional<solver::TrainState>(std::move(*state));
      }
      why = "published " + state.status().ToString();
    } else if (!manifest_) {
      why = "checkpoint " + std::to_string(index) + " is neither served nor published";
    }
    return std::optional<solver::TrainState>();
  }

  std::int64_t blobs_fetched() const { return blobs_fetched_; }
  std::int64_t published_loaded() const { return published_loaded_; }

 private:
  const CheckRequest& request_;
  const solver::TrainState& layout_;
  std::int64_t k_;
  std::optional<solver::ProofManifest> manifest_;
  solver::BlobStore* store_ = nullptr;
  std::int64_t blobs_fetched_ = 0;
  std::int64_t published_loaded_ = 0;
};

// The manifest at proof_uri when it is the committed proof's, fits the task and is signed by the
// task's solver; else std::nullopt with `why`.
std::optional<solver::ProofManifest> UsableManifest(const CheckRequest& request, const solver::TaskSpec& document,
                                                    std::string& why) {
  const proto::Task& task = request.task;
  Result<consensus::Hash256> root = Hash32(task.proof_root(), "the committed proof root");
  if (!root.ok()) {
    why = root.status().ToString();
    return std::nullopt;
  }
  Result<solver::ProofManifest> manifest =
      WithRetries(request, [&] { return FetchManifest(request.fetch, task.proof_uri(), *root); });
  Status usable = manifest.status();
  if (usable.ok()) usable = verifier::CheckManifestAgainstTask(*manifest, document);
  if (usable.ok() && (!manifest->is_signed || std::string_view(reinterpret_cast<const char*>(manifest->solver_pubkey.data()),
                                                               manifest->solver_pubkey.size()) != task.solver())) {
    usable = Status::FailedPrecondition("the manifest is not signed by the task's solver");
  }
  if (!usable.ok()) {
    why = "manifest: " + usable.ToString();
    return std::nullopt;
  }
  return std::move(*manifest);
}

// CheckCommittedProof without the clock.
Result<ProofCheck> RunCheck(const CheckRequest& request) {
  const proto::Task& task = request.task;
  if (task.solver().size() != 32) return Status::FailedPrecondition("the task has no solver");
  const std::int64_t segment_count =
      static_cast<std::int64_t>(task.spec().total_steps() / std::max<std::uint64_t>(1, task.spec().checkpoint_interval()));
  if (segment_count < 1) return Status::FailedPrecondition("the task has no segments");
  ProofCheck check;
  check.tolerant = task.spec().tolerant();
  if (check.tolerant) {
    // Before anything is fetched or profiled.
    check.forced_delta = task.spec().forced_delta();
    POLNODE_RETURN_IF_ERROR(CheckForcedDelta(check.forced_delta));
  }
  for (std::int64_t s : request.segments) {
    if (s < 0 || s >= segment_count) return Status::InvalidArgument("segment " + std::to_string(s) + " out of range");
    if (std::find(check.segments.begin(), check.segments.end(), s) != check.segments.end()) {
      return Status::InvalidArgument("segment " + std::to_string(s) + " repeats");
    }
    check.segments.push_back(s);
  }
  // The final checkpoint is the model that gets paid for: its segment is always replayed.
  const std::int64_t final_segment = segment_count - 1;
  if (std::find(check.segments.begin(), check.segments.end(), final_segment) == check.segments.end()) {
    check.segments.push_back(final_segment);
  }
  POLNODE_ASSIGN_OR_RETURN(Binding binding, TryBind(request.fetch, task, *request.data));
  if (!binding.bound) {
    // Without the task document nothing can be replayed, from the server or from the ledger.
    check.data_fault = "task document: " + binding.fault;
    for (std::int64_t s : check.segments) {
      verifier::SegmentEvidence e;
      e.segment = s;
      e.reason = check.data_fault;
      check.evidence.push_back(std::move(e));
    }
    return check;
  }
  const BoundTask& bound = *binding.bound;
  POLNODE_ASSIGN_OR_RETURN(solver::TaskStepper stepper, solver::TaskStepper::Create(bound.document, *bound.data));
  const solver::TrainState layout = stepper.Initial();
  POLNODE_ASSIGN_OR_RETURN(solver::BlobStore store, solver::BlobStore::Open(request.cache_dir + "/blobs"));
  CheckpointSource source(request, layout, bound.document.checkpoint_interval);
  source.UseServer(UsableManifest(request, bound.document, check.data_fault), &store);

  verifier::Thresholds thresholds;
  std::optional<double> element_limit;
  if (bound.document.mode == solver::ReproMode::kTolerant) {
    const std::vector<verifier::ProfileVariation> variations = verifier::AllVariations();
    POLNODE_ASSIGN_OR_RETURN(verifier::Profile profile, verifier::ProfileTask(bound.document, *bound.data, variations));
    POLNODE_RETURN_IF_ERROR(CheckForcedDeltaFits(check.forced_delta, profile.thresholds));
    thresholds = profile.thresholds;
    check.thresholds = profile.thresholds;
    element_limit = static_cast<double>(check.forced_delta) / 2.0;  // exact: halving a float
  }
  const std::int64_t k = bound.document.checkpoint_interval;
  for (std::int64_t s : check.segments) {
    std::string why;
    POLNODE_ASSIGN_OR_RETURN(std::optional<solver::TrainState> start, source.Get(s, why));
    std::optional<solver::TrainState> end;
    if (start) {
      POLNODE_ASSIGN_OR_RETURN(end, source.Get(s + 1, why));
    }
    if (!start || !end) {
      verifier::SegmentEvidence e;
      e.segment = s;
      e.reason = why;
      check.evidence.push_back(std::move(e));
      continue;
    }
    // Exact mode judges by the end state's hash, the one thing a dispute game can show wrong (the
    // claimed losses are not committed on the ledger); tolerant mode holds the proof to its
    // claimed losses within the profiled tolerance as well.
    std::span<const std::uint32_t> losses;
    if (check.tolerant && source.manifest()) {
      losses = std::span<const std::uint32_t>(source.manifest()->loss_bits).subspan(static_cast<std::size_t>(s * k),
                                                                                   static_cast<std::size_t>(k));
    }
    POLNODE_ASSIGN_OR_RETURN(verifier::SegmentEvidence e,
                             verifier::ReplayFromStates(stepper, *request.backend, s, std::move(*start), *end, losses,
                                                        thresholds, element_limit));
    check.evidence.push_back(std::move(e));
  }
  check.blobs_fetched = source.blobs_fetched();
  check.published_loaded = source.published_loaded();
  return check;
}

}  // namespace

Status CheckForcedDeltaFits(float forced_delta, const verifier::Thresholds& profiled) {
  POLNODE_RETURN_IF_ERROR(CheckForcedDelta(forced_delta));
  // A reject names the elements its replay found beyond forced_delta / 2. The ledger holds a
  // perturbation to at least 3 forced_delta / 4 (consensus::PerturbationVisible), so a replay off
  // by less than forced_delta / 4 names exactly the perturbed elements; one off by more could
  // miss them or name noise.
  const double limit = static_cast<double>(forced_delta) / 4.0;
  if (!(profiled.linf < limit)) {
    return Status::FailedPrecondition("declined: the profiled replay error (linf threshold " + Number(profiled.linf) +
                                      ") is not below forced_delta / 4 = " + Number(limit) + " (forced_delta " +
                                      Number(forced_delta) +
                                      "), so a forced round's perturbation cannot be told from replay noise here");
  }
  return Status::Ok();
}

bool IsDeclined(const Status& status) {
  return status.code() == StatusCode::kFailedPrecondition && status.message().rfind("declined: ", 0) == 0;
}

Result<const solver::ImageDataset*> DataCache::Get(const solver::TaskSpec& document) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(document.data_location);
  if (it == sets_.end()) {
    POLNODE_ASSIGN_OR_RETURN(solver::ImageDataset data, loader_(document));
    it = sets_.emplace(document.data_location, std::make_unique<solver::ImageDataset>(std::move(data))).first;
  }
  POLNODE_RETURN_IF_ERROR(solver::CheckTaskData(document, *it->second));
  return it->second.get();
}

Status DataCache::UseFileStore(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  if (files_) return Status::Ok();
  POLNODE_ASSIGN_OR_RETURN(FileStore store, FileStore::Open(dir));
  files_.emplace(std::move(store));
  return Status::Ok();
}

Status DataCache::Resolve(const FetchPolicy& fetch, solver::TaskSpec& document) {
  if (!IsRemoteLocation(document.data_location) && !IsRemoteLocation(document.model_location)) return Status::Ok();
  std::optional<FileStore> files;
  {
    std::lock_guard<std::mutex> lock(mu_);
    files = files_;
  }
  if (!files) return Status::FailedPrecondition("the task's files are served over HTTP, and this process keeps no file store");
  // The fetch runs outside the lock: the store is safe for concurrent fetches, and other tasks'
  // data must stay readable meanwhile.
  return ResolveTaskFiles(fetch, *files, document);
}

Result<BoundTask> BindTask(const FetchPolicy& fetch, const proto::Task& task, DataCache& cache) {
  POLNODE_ASSIGN_OR_RETURN(Binding binding, TryBind(fetch, task, cache));
  if (!binding.bound) return Status::FailedPrecondition("task document: " + binding.fault);
  return std::move(*binding.bound);
}

std::vector<std::uint32_t> SlotsOf(const proto::Task& task, std::string_view verifier) {
  std::vector<std::uint32_t> slots;
  for (int i = 0; i < task.verifiers_size(); ++i) {
    if (task.verifiers(i).verifier() == verifier) slots.push_back(static_cast<std::uint32_t>(i));
  }
  return slots;
}

std::vector<std::int64_t> SlotSegments(const proto::VerifierSlot& slot) {
  return std::vector<std::int64_t>(slot.segments().begin(), slot.segments().end());
}

std::vector<std::int64_t> SegmentsOfSlots(const proto::Task& task, const std::vector<std::uint32_t>& slots) {
  std::vector<std::int64_t> all;
  for (std::uint32_t i : slots) {
    for (std::int64_t s : SlotSegments(task.verifiers(static_cast<int>(i)))) all.push_back(s);
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

std::vector<std::int64_t> ChallengeSegmentsOf(const proto::Task& task, std::string_view challenger) {
  const std::uint64_t segment_count = task.spec().total_steps() / std::max<std::uint64_t>(1, task.spec().checkpoint_interval());
  if (task.segment_beacon().empty() || segment_count == 0) return {};
  const std::vector<std::uint64_t> covered = contracts::ChallengeSegments(task.segment_beacon(), challenger, segment_count,
                                                                          task.spec().segments_per_verification());
  return std::vector<std::int64_t>(covered.begin(), covered.end());
}

Result<ProofCheck> CheckCommittedProof(const CheckRequest& request) {
  const Clock::TimePoint started = request.clock->Now();
  POLNODE_ASSIGN_OR_RETURN(ProofCheck check, RunCheck(request));
  check.seconds = std::chrono::duration<double>(request.clock->Now() - started).count();
  return check;
}

BackgroundCheck::BackgroundCheck(CheckRequest request) : clock_(request.clock) {
  request.stop = &stop_;
  result_ = std::async(std::launch::async, [request = std::move(request)] { return CheckCommittedProof(request); });
}

BackgroundCheck::~BackgroundCheck() {
  stop_ = true;
  clock_->Notify();
  if (result_.valid()) result_.wait();
}

bool BackgroundCheck::ready() const { return result_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

Result<ProofCheck> BackgroundCheck::Take() { return result_.get(); }

Result<SegmentsVerdict> VerdictOn(const ProofCheck& check, const std::vector<std::int64_t>& segments) {
  std::vector<std::int64_t> order = segments;
  if (!check.segments.empty() && std::find(order.begin(), order.end(), check.segments.back()) == order.end()) {
    order.push_back(check.segments.back());  // the final segment, always replayed last
  }
  SegmentsVerdict v;
  std::string unavailable;
  for (std::int64_t s : order) {
    auto at = std::find(check.segments.begin(), check.segments.end(), s);
    if (at == check.segments.end()) return Status::Internal("segment " + std::to_string(s) + " was not replayed");
    const verifier::SegmentEvidence& e = check.evidence[static_cast<std::size_t>(at - check.segments.begin())];
    if (!e.available) {
      if (unavailable.empty()) unavailable = "segment " + std::to_string(s) + ": " + e.reason;
      continue;
    }
    if (!e.ok) {
      v.failed_segments.push_back(static_cast<std::uint64_t>(s));
      if (v.reason.empty()) v.reason = "segment " + std::to_string(s) + ": " + e.reason;
    }
  }
  std::sort(v.failed_segments.begin(), v.failed_segments.end());
  if (!v.failed_segments.empty()) {
    v.verdict = proto::VERDICT_REJECT;
  } else if (!unavailable.empty()) {
    v.verdict = proto::VERDICT_UNAVAILABLE;
    v.reason = unavailable;
    return v;
  } else {
    v.verdict = proto::VERDICT_ACCEPT;
  }
  // What each failed segment's replay found, which the reject commits to by digest: the end it
  // reached (exact mode), checked against the honest hash the solver reveals in a forced round, or
  // the elements beyond forced_delta / 2 (tolerant mode), checked against the revealed perturbation.
  for (std::uint64_t s : v.failed_segments) {
    const auto at = std::find(check.segments.begin(), check.segments.end(), static_cast<std::int64_t>(s));
    const verifier::SegmentEvidence& e = check.evidence[static_cast<std::size_t>(at - check.segments.begin())];
    v.failed_ends.push_back(check.tolerant ? consensus::PerturbedIndicesHash(e.beyond_limit) : e.recomputed);
  }
  return v;
}

std::vector<std::string> SegmentDigestsOf(std::string_view key, const SegmentsVerdict& verdict) {
  std::vector<std::string> digests;
  for (std::size_t j = 0; j < verdict.failed_ends.size() && j < verdict.failed_segments.size(); ++j) {
    const consensus::Hash256& end = verdict.failed_ends[j];
    const consensus::Hash256 digest = contracts::SegmentDigest(
        key, verdict.failed_segments[j], std::string_view(reinterpret_cast<const char*>(end.data()), end.size()));
    digests.emplace_back(digest.begin(), digest.end());
  }
  return digests;
}

proto::VerdictTx VerdictTxFor(std::string_view task_id, std::uint32_t slot, std::string_view verifier,
                              const SegmentsVerdict& verdict, const consensus::Hash256& report_hash) {
  proto::VerdictTx tx;
  tx.set_task_id(std::string(task_id));
  tx.set_slot(slot);
  tx.set_verdict(verdict.verdict);
  tx.set_report_hash(std::string(report_hash.begin(), report_hash.end()));
  if (verdict.verdict != proto::VERDICT_REJECT) return tx;
  for (std::uint64_t s : verdict.failed_segments) tx.add_failed_segments(s);
  for (std::string& digest : SegmentDigestsOf(verifier, verdict)) tx.add_segment_digests(std::move(digest));
  return tx;
}

bool TaskClosed(const proto::Task& task) {
  return task.status() == proto::TASK_SETTLED || task.status() == proto::TASK_CANCELLED;
}

Status TaskScan::Pass(RoleContext& ctx, const std::function<Status(const proto::Task&)>& visit) {
  std::uint64_t next_first_open = first_open_;
  bool all_closed_so_far = true;
  for (std::uint64_t start = first_open_;;) {
    POLNODE_ASSIGN_OR_RETURN(contracts::TaskPage page, ctx.ledger().Tasks(start, 100));
    for (std::size_t i = 0; i < page.tasks.size(); ++i) {
      const proto::Task& task = page.tasks[i];
      const Status status = visit(task);
      if (status.code() == StatusCode::kUnavailable) return status;
      if (status.ok()) {
        errors_.erase(task.id());
      } else {
        ctx.metrics().Add("task_errors_total");
        std::string& last = errors_[task.id()];
        if (last != status.ToString()) {
          last = status.ToString();
          ctx.log().Event("task_error", {{"task_id", consensus::ToHex(task.id())}, {"error", last}});
        }
      }
      all_closed_so_far = all_closed_so_far && status.ok() && TaskClosed(task);
      if (all_closed_so_far) next_first_open = start + i + 1;
    }
    start += page.tasks.size();
    if (page.tasks.empty() || start >= page.total) break;
  }
  first_open_ = next_first_open;
  return Status::Ok();
}

}  // namespace polnode::node
