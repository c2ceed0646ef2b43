#include "verification_job.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <set>
#include <thread>

#include "proof_http.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/beacon.h"
#include "polnode/solver/blob_store.h"
#include "polnode/verifier/profile.h"
#include "task_binding.h"

namespace polnode::node {
namespace {

// A blob the solver's server failed to hand over is asked for this often before the segment that
// needs it is failed: one refused or dropped connection must not turn into a reject verdict.
constexpr int kBlobAttempts = 3;
constexpr auto kBlobRetryPause = std::chrono::milliseconds(300);

// A reject verdict for a proof the replay never reached.
ProofCheck Rejected(std::vector<std::int64_t> segments, std::string reason) {
  ProofCheck check;
  check.segments = std::move(segments);
  check.verdict.reason = std::move(reason);
  return check;
}

Result<consensus::Hash256> Hash32(const std::string& raw, std::string_view what) {
  consensus::Hash256 hash{};
  if (raw.size() != hash.size()) return Status::InvalidArgument(std::string(what) + " is not 32 bytes");
  std::copy(raw.begin(), raw.end(), hash.begin());
  return hash;
}

// Downloads checkpoint `index` of the proof into `store` unless it is there; returns whether it
// was downloaded. A blob that stays unavailable, or comes back corrupt, is left out: the segment
// that needs it then fails its replay with the blob named, which is the solver's fault.
bool FetchCheckpoint(const std::string& uri, const solver::ProofManifest& manifest, std::size_t index,
                     solver::BlobStore& store) {
  const consensus::Hash256& blob = manifest.checkpoint_blobs[index];
  if (store.Contains(blob) && store.Get(blob).ok()) return false;
  for (int attempt = 1;; ++attempt) {
    const Status s = FetchBlob(uri, blob, store);
    if (s.ok()) return true;
    if (s.code() != StatusCode::kUnavailable || attempt == kBlobAttempts) return false;
    std::this_thread::sleep_for(kBlobRetryPause);
  }
}

// BindTask's steps, telling what the task's parties are to blame for (a document that is served
// but does not decode or does not bind: `fault`) from what the checker is (errors).
struct Binding {
  std::optional<BoundTask> bound;
  std::string fault;
};

Result<Binding> TryBind(const proto::Task& task, DataCache& cache) {
  Result<solver::TaskSpec> document = FetchTaskDocument(task.spec_uri());
  if (!document.ok()) {
    if (document.status().code() == StatusCode::kUnavailable) return document.status();
    return Binding{std::nullopt, document.status().ToString()};
  }
  POLNODE_ASSIGN_OR_RETURN(const solver::ImageDataset* data, cache.Get(*document));
  if (Status s = CheckSpecBinding(task.spec(), *document, *data); !s.ok()) return Binding{std::nullopt, s.ToString()};
  return Binding{BoundTask{std::move(*document), data}, ""};
}

// CheckCommittedProof without the clock.
Result<ProofCheck> RunCheck(const CheckRequest& request) {
  const proto::Task& task = request.task;
  if (request.segments.empty()) return Status::InvalidArgument("no segments to check");
  std::array<std::uint8_t, 32> solver_key{};
  if (task.solver().size() != solver_key.size()) return Status::FailedPrecondition("the task has no solver");
  std::copy(task.solver().begin(), task.solver().end(), solver_key.begin());
  POLNODE_ASSIGN_OR_RETURN(Binding binding, TryBind(task, *request.data));
  if (!binding.bound) return Rejected(request.segments, "task document: " + binding.fault);
  const BoundTask& bound = *binding.bound;
  Result<consensus::Hash256> root = Hash32(task.proof_root(), "the committed proof root");
  if (!root.ok()) return Rejected(request.segments, "proof: " + root.status().message());
  Result<solver::ProofManifest> manifest = FetchManifest(task.proof_uri(), *root);
  if (!manifest.ok()) {
    if (manifest.status().code() == StatusCode::kUnavailable) return manifest.status();
    return Rejected(request.segments, "manifest: " + manifest.status().ToString());
  }
  POLNODE_ASSIGN_OR_RETURN(solver::BlobStore store, solver::BlobStore::Open(request.cache_dir + "/blobs"));
  ProofCheck check;
  check.segments = request.segments;
  // Only a manifest that VerifyProof goes on to replay is worth its downloads; VerifyProof words
  // the rejection of any other.
  if (verifier::CheckManifestAgainstTask(*manifest, bound.document).ok() && manifest->is_signed &&
      manifest->solver_pubkey == solver_key) {
    const std::int64_t segment_count = bound.document.checkpoint_count() - 1;
    std::set<std::int64_t> needed = {segment_count - 1, segment_count};  // the final segment's ends
    for (std::int64_t s : request.segments) {
      if (s < 0 || s >= segment_count) return Status::InvalidArgument("segment " + std::to_string(s) + " out of range");
      needed.insert({s, s + 1});
    }
    for (std::int64_t index : needed) {
      const bool fetched = FetchCheckpoint(task.proof_uri(), *manifest, static_cast<std::size_t>(index), store);
      check.blobs_fetched += fetched ? 1 : 0;
    }
  }
  verifier::VerifyOptions options;
  options.explicit_segments = request.segments;
  options.solver_pubkey = solver_key;
  if (bound.document.mode == solver::ReproMode::kTolerant) {
    const std::vector<verifier::ProfileVariation> variations = verifier::AllVariations();
    POLNODE_ASSIGN_OR_RETURN(verifier::Profile profile, verifier::ProfileTask(bound.document, *bound.data, variations));
    options.thresholds = profile.thresholds;
    check.thresholds = profile.thresholds;
  }
  POLNODE_ASSIGN_OR_RETURN(
      check.verdict, verifier::VerifyProof(bound.document, *bound.data, *manifest, store, *request.backend, options));
  return check;
}

}  // namespace

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

Result<BoundTask> BindTask(const proto::Task& task, DataCache& cache) {
  POLNODE_ASSIGN_OR_RETURN(Binding binding, TryBind(task, cache));
  if (!binding.bound) return Status::FailedPrecondition("task document: " + binding.fault);
  return std::move(*binding.bound);
}

std::vector<std::int64_t> AssignedSegments(const proto::Task& task, std::string_view verifier) {
  const proto::TaskSpec& spec = task.spec();
  if (task.segment_beacon().empty() || spec.checkpoint_interval() == 0) return {};
  const std::vector<std::uint64_t> drawn =
      contracts::DrawSegments(task.segment_beacon(), verifier, spec.total_steps() / spec.checkpoint_interval(),
                              spec.segments_per_verification());
  return std::vector<std::int64_t>(drawn.begin(), drawn.end());
}

Result<ProofCheck> CheckCommittedProof(const CheckRequest& request) {
  const auto started = std::chrono::steady_clock::now();
  POLNODE_ASSIGN_OR_RETURN(ProofCheck check, RunCheck(request));
  check.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return check;
}

Result<SegmentsVerdict> VerdictOn(const ProofCheck& check, const std::vector<std::int64_t>& segments) {
  const verifier::Verdict& v = check.verdict;
  // Everything before the segments (document, manifest, signature, checkpoint 0) is the first
  // reason when it failed, and it fails every verifier alike.
  if (!v.manifest_ok || !v.initial_state_ok) return SegmentsVerdict{false, v.reason, false};
  std::vector<std::int64_t> order = segments;
  if (!v.segments.empty() && std::find(order.begin(), order.end(), v.segments.back().segment) == order.end()) {
    order.push_back(v.segments.back().segment);  // the final segment, always replayed last
  }
  for (std::int64_t s : order) {
    auto e = std::find_if(v.segments.begin(), v.segments.end(),
                          [s](const verifier::SegmentEvidence& evidence) { return evidence.segment == s; });
    if (e == v.segments.end()) return Status::Internal("segment " + std::to_string(s) + " was not replayed");
    if (!e->ok) {
      return SegmentsVerdict{false, "segment " + std::to_string(s) + ": " + e->reason,
                             e->replayed && e->recomputed != e->claimed};
    }
  }
  return SegmentsVerdict{true, "", false};
}

bool TaskClosed(const proto::Task& task) {
  return task.status() == proto::TASK_SETTLED || task.status() == proto::TASK_CANCELLED;
}

Status TaskScan::Pass(RoleContext& ctx, const std::function<Status(const proto::Task&)>& visit) {
  std::uint64_t next_first_open = first_open_;
  bool all_closed_so_far = true;
  for (std::uint64_t start = first_open_;;) {
    POLNODE_ASSIGN_OR_RETURN(TaskPage page, ctx.ledger().Tasks(start, 100));
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
          ctx.log().Event("task_error", {{"task", consensus::ToHex(task.id())}, {"error", last}});
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

void DeclareReplayFlags(FlagSet& flags, std::string stake_help) {
  flags.Value("stake", "AMOUNT", std::move(stake_help));
  flags.Value("backend", "NAME", "replay backend: reference, cpu, cuda or hip", "cpu");
  flags.Value("threads", "T", "replay threads", "1");
}

Status ReadReplayFlags(const FlagSet& flags, std::uint64_t& stake, std::string& backend, int& threads) {
  if (flags.Given("stake")) {
    POLNODE_ASSIGN_OR_RETURN(std::int64_t amount, flags.GetInt("stake", 1, INT64_MAX));
    stake = static_cast<std::uint64_t>(amount);
  }
  backend = flags.Get("backend");
  POLNODE_ASSIGN_OR_RETURN(std::int64_t count, flags.GetInt("threads", 1, 1024));
  threads = static_cast<int>(count);
  Status made = kernels::MakeBackend(backend, threads).status();
  if (!made.ok()) return Status::InvalidArgument("--backend: " + made.ToString());
  return Status::Ok();
}

}  // namespace polnode::node
