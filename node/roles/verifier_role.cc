#include "polnode/roles/verifier_role.h"

#include <algorithm>
#include <filesystem>

#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/sha256.h"
#include "polnode/contracts/payloads.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/replay_json.h"

namespace polnode::node {
namespace {

// A check that failed on this side (document server away, data set missing) is tried again after
// this pause rather than every pass.
constexpr auto kRetryPause = std::chrono::seconds(5);
constexpr std::uint64_t kMaxVerdictBytes = 1 << 16;
constexpr const char* kLazyReason = "lazy: accepted without a check";

std::string JoinSegments(const std::vector<std::int64_t>& segments) {
  std::string out;
  for (std::int64_t s : segments) out += (out.empty() ? "" : ",") + std::to_string(s);
  return out;
}

// The slots of `task` that `key` holds and that await its verdict: live, none given yet.
std::vector<std::uint32_t> OpenSlots(const proto::Task& task, std::string_view key) {
  std::vector<std::uint32_t> open;
  for (std::uint32_t i : SlotsOf(task, key)) {
    const proto::VerifierSlot& slot = task.verifiers(static_cast<int>(i));
    if (!slot.absent() && slot.verdict() == proto::VERDICT_NONE) open.push_back(i);
  }
  return open;
}

std::string JoinSlots(const std::vector<std::uint32_t>& slots) {
  std::string out;
  for (std::uint32_t i : slots) out += (out.empty() ? "" : ",") + std::to_string(i);
  return out;
}

std::string VerdictWord(proto::Verdict verdict) {
  switch (verdict) {
    case proto::VERDICT_ACCEPT: return "accept";
    case proto::VERDICT_REJECT: return "reject";
    case proto::VERDICT_UNAVAILABLE: return "unavailable";
    default: return "none";
  }
}

// The fields every report starts with: the verdict, then what it is about.
void ReportHeader(JsonWriter& w, const proto::Task& task, std::uint32_t slot, std::string_view verifier,
                  const SegmentsVerdict& verdict) {
  w.BeginObject()
      .Field("verdict", VerdictWord(verdict.verdict))
      .Field("reason", verdict.reason)
      .Field("task", consensus::ToHex(task.id()))
      .Field("slot", static_cast<std::uint64_t>(slot))
      .Field("verifier", consensus::ToHex(verifier))
      .Field("solver", consensus::ToHex(task.solver()))
      .Field("proof_root", consensus::ToHex(task.proof_root()))
      .Field("segment_beacon", consensus::ToHex(task.segment_beacon()));
}

// The evidence behind a checked verdict on one slot: the whole replay it was read from (one replay
// answers every slot the key held open). Only what the replay determines goes in (no times, no
// cache statistics), so a rerun of the same check writes the same bytes.
std::string ReportJson(const proto::Task& task, std::uint32_t slot, std::string_view verifier, std::string_view backend,
                       const ProofCheck& check, const SegmentsVerdict& verdict) {
  JsonWriter w;
  ReportHeader(w, task, slot, verifier, verdict);
  w.Field("backend", backend).Field("data_fault", check.data_fault);
  if (check.thresholds) {
    // Tolerant mode: the profiled thresholds the distances were judged by, and forced_delta, whose
    // half every element was judged by.
    w.Key("thresholds")
        .BeginObject()
        .Field("l1", check.thresholds->l1)
        .Field("l2", check.thresholds->l2)
        .Field("linf", check.thresholds->linf)
        .Field("cosine", check.thresholds->cosine)
        .Field("loss", check.thresholds->loss)
        .EndObject();
    w.Field("forced_delta", static_cast<double>(check.forced_delta));
  }
  w.Key("failed_segments").BeginArray();
  for (std::uint64_t s : verdict.failed_segments) w.Int(static_cast<std::int64_t>(s));
  w.EndArray();
  // What each failed segment's replay found, which the reject's segment digests commit to: the
  // state hash it reached (exact mode) or the hash of the elements beyond forced_delta / 2
  // (tolerant mode; the elements themselves are in failed_indices).
  w.Key("failed_ends").BeginArray();
  for (const consensus::Hash256& end : verdict.failed_ends) w.String(consensus::ToHex(end));
  w.EndArray();
  if (check.tolerant) {
    w.Key("failed_indices").BeginArray();
    for (std::uint64_t s : verdict.failed_segments) {
      const auto at = std::find(check.segments.begin(), check.segments.end(), static_cast<std::int64_t>(s));
      w.BeginArray();
      for (std::uint64_t i : check.evidence[static_cast<std::size_t>(at - check.segments.begin())].beyond_limit) w.Uint(i);
      w.EndArray();
    }
    w.EndArray();
  }
  w.Key("replays").BeginArray();
  for (const verifier::SegmentEvidence& e : check.evidence) WriteSegmentEvidence(w, e);
  w.EndArray().EndObject();
  return w.str();
}

// A lazy verifier's report: it says that nothing was checked.
std::string LazyReportJson(const proto::Task& task, std::uint32_t slot, std::string_view verifier,
                           const SegmentsVerdict& verdict) {
  JsonWriter w;
  ReportHeader(w, task, slot, verifier, verdict);
  w.EndObject();
  return w.str();
}

}  // namespace

VerifierRole::VerifierRole(VerifierOptions options) : options_(std::move(options)), data_(options_.loader) {}

VerifierRole::~VerifierRole() { Stop(); }

void VerifierRole::Stop() { running_.reset(); }  // stops the check and waits for its thread

std::string VerifierRole::ReportPath(const RoleContext& ctx, const proto::Task& task, std::uint32_t slot) const {
  // A slot reopened after the solver published its checkpoints gets a second verdict, from the
  // ledger's copy: its own report.
  const bool published = task.verifiers(static_cast<int>(slot)).published();
  return ctx.home() + "/reports/" + consensus::ToHex(task.id()) + "-" + std::to_string(slot) +
         (published ? "-published" : "") + ".json";
}

std::string VerifierRole::VerdictPath(const RoleContext& ctx, const proto::Task& task, std::uint32_t slot) const {
  std::string path = ReportPath(ctx, task, slot);
  return path.replace(path.size() - std::string_view(".json").size(), std::string::npos, ".verdict");
}

Status VerifierRole::Poll(RoleContext& ctx) {
  POLNODE_RETURN_IF_ERROR(data_.UseFileStore(ctx.home() + "/files"));
  if (!options_.lazy && !backend_) {
    POLNODE_ASSIGN_OR_RETURN(backend_, kernels::MakeBackend(options_.backend, options_.threads));
    POLNODE_ASSIGN_OR_RETURN(dispute_backend_, kernels::MakeBackend(options_.backend, options_.threads));
  }
  if (!have_params_) {
    POLNODE_ASSIGN_OR_RETURN(params_, ctx.ledger().Params());
    have_params_ = true;
  }
  const std::uint64_t stake = options_.stake > 0 ? options_.stake : 4 * params_.min_stake_verifier();
  POLNODE_ASSIGN_OR_RETURN(bool staked, ctx.EnsureStake(proto::ROLE_VERIFIER, stake));
  ctx.metrics().Set("staked", staked ? 1 : 0);
  POLNODE_RETURN_IF_ERROR(Collect(ctx));
  // Whether a replay runs or waits to be retried (devnet.cc holds blocks back while one does); a
  // declined task is never retried.
  const bool retry_due = std::any_of(failures_.begin(), failures_.end(), [&](const auto& f) {
    return f.second.retry_at != std::chrono::steady_clock::time_point::max() && ctx.clock().Now() < f.second.retry_at;
  });
  ctx.metrics().Set("checking", running_ || retry_due ? 1 : 0);
  return scan_.Pass(ctx, [&](const proto::Task& task) -> Status {
    const std::vector<std::uint32_t> mine = SlotsOf(task, ctx.pubkey());
    if (mine.empty()) return Status::Ok();
    if (task.status() != proto::TASK_VERIFYING) {
      failures_.erase(task.id());
      reasons_.erase(task.id());
      assigned_.erase(task.id());
    }
    if (task.status() != proto::TASK_DISPUTED) disputes_.erase(task.id());
    if (task.status() == proto::TASK_VERIFYING) {
      const std::vector<std::uint32_t> open = OpenSlots(task, ctx.pubkey());
      return open.empty() ? Status::Ok() : HandleAssigned(ctx, task, open);
    }
    const bool disputed = std::any_of(mine.begin(), mine.end(), [&](std::uint32_t i) {
      const proto::VerifierSlot& slot = task.verifiers(static_cast<int>(i));
      return slot.disputed() && slot.verdict() == proto::VERDICT_REJECT;
    });
    if (task.status() == proto::TASK_DISPUTED && disputed && !options_.lazy) return PlayDisputes(ctx, task);
    return Status::Ok();
  });
}

Status VerifierRole::Collect(RoleContext& ctx) {
  if (!running_ || !running_->check->ready()) return Status::Ok();
  const proto::Task task = running_->task;
  const std::vector<std::uint32_t> slots = running_->slots;
  Result<ProofCheck> check = running_->check->Take();
  running_.reset();
  const std::string id = task.id();
  if (!check.ok()) {
    ctx.metrics().Add("verify_errors_total");
    Failure& failure = failures_[id];
    if (failure.error != check.status().ToString()) {
      failure.error = check.status().ToString();
      ctx.log().Event(IsDeclined(check.status()) ? "declined" : "verify_failed",
                      {{"task_id", consensus::ToHex(id)}, {"error", failure.error}});
    }
    // A declined task stays declined (its slots go unanswered); anything else is retried.
    failure.retry_at = IsDeclined(check.status()) ? std::chrono::steady_clock::time_point::max() : ctx.clock().Now() + kRetryPause;
    return Status::Ok();
  }
  failures_.erase(id);
  ctx.metrics().Add("verifications_total");
  ctx.metrics().Add("verify_seconds_total", check->seconds);
  ctx.metrics().Add("blobs_fetched_total", static_cast<double>(check->blobs_fetched));
  ctx.metrics().Add("published_loaded_total", static_cast<double>(check->published_loaded));
  ctx.metrics().Add("segments_replayed_total", static_cast<double>(check->evidence.size()));
  // One replay answers every slot it was run for, each by its own segments.
  for (std::uint32_t i : slots) {
    POLNODE_ASSIGN_OR_RETURN(SegmentsVerdict verdict, VerdictOn(*check, SlotSegments(task.verifiers(static_cast<int>(i)))));
    reasons_[id][i] = verdict.reason;
    POLNODE_RETURN_IF_ERROR(
        SaveVerdict(ctx, task, i, ReportJson(task, i, ctx.pubkey(), backend_->name(), *check, verdict), verdict));
  }
  return Status::Ok();
}

Status VerifierRole::SaveVerdict(RoleContext& ctx, const proto::Task& task, std::uint32_t slot,
                                 const std::string& report, const SegmentsVerdict& verdict) {
  std::error_code ec;
  std::filesystem::create_directories(ctx.home() + "/reports", ec);
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(ReportPath(ctx, task, slot), report));
  // The transaction is kept beside its report, so a restarted verifier posts the same verdict.
  const proto::VerdictTx tx = VerdictTxFor(task.id(), slot, ctx.pubkey(), verdict, consensus::Sha256(report));
  return WriteFileAtomically(VerdictPath(ctx, task, slot), tx.SerializeAsString());
}

Status VerifierRole::HandleAssigned(RoleContext& ctx, const proto::Task& task, const std::vector<std::uint32_t>& open) {
  const std::string& id = task.id();
  if (assigned_.insert(id).second) {
    ctx.metrics().Add("assignments_total", static_cast<double>(open.size()));
    ctx.log().Event("assigned", {{"task_id", consensus::ToHex(id)},
                                 {"slots", JoinSlots(open)},
                                 {"segments", JoinSegments(SegmentsOfSlots(task, open))}});
  }
  // Slots whose verdict is saved on disk are posted from it; the others need a check.
  std::vector<std::uint32_t> unchecked;
  for (std::uint32_t i : open) {
    Result<std::vector<std::uint8_t>> saved = ReadWholeFile(VerdictPath(ctx, task, i), kMaxVerdictBytes);
    if (saved.ok()) {
      proto::VerdictTx tx;
      if (!tx.ParseFromArray(saved->data(), static_cast<int>(saved->size())) || tx.task_id() != id || tx.slot() != i) {
        return Status::Corruption(VerdictPath(ctx, task, i) + " does not hold this slot's verdict");
      }
      POLNODE_RETURN_IF_ERROR(PostVerdict(ctx, task, i, tx));
      continue;
    }
    if (saved.status().code() != StatusCode::kNotFound) return saved.status();
    unchecked.push_back(i);
  }
  if (unchecked.empty()) return Status::Ok();
  if (options_.lazy) {
    SegmentsVerdict accept;
    accept.verdict = proto::VERDICT_ACCEPT;
    accept.reason = kLazyReason;
    for (std::uint32_t i : unchecked) {
      reasons_[id][i] = kLazyReason;
      POLNODE_RETURN_IF_ERROR(SaveVerdict(ctx, task, i, LazyReportJson(task, i, ctx.pubkey(), accept), accept));
    }
    return HandleAssigned(ctx, task, open);
  }
  if (running_) return Status::Ok();  // one check at a time; this task waits its turn
  auto failed = failures_.find(id);
  if (failed != failures_.end() && ctx.clock().Now() < failed->second.retry_at) return Status::Ok();
  StartCheck(ctx, task, std::move(unchecked));
  return Status::Ok();
}

void VerifierRole::StartCheck(RoleContext& ctx, const proto::Task& task, std::vector<std::uint32_t> slots) {
  // One replay of the union of the slots' segments (and the final one, replayed once) answers all.
  std::vector<std::int64_t> segments = SegmentsOfSlots(task, slots);
  ctx.log().Event("verifying",
                  {{"task_id", consensus::ToHex(task.id())}, {"slots", JoinSlots(slots)}, {"segments", JoinSegments(segments)}});
  CheckRequest request;
  request.task = task;
  request.segments = std::move(segments);
  request.cache_dir = ctx.home() + "/cache";
  request.fetch = ctx.fetch_policy();
  request.data = &data_;
  request.backend = backend_.get();
  request.ledger = &ctx.ledger();
  request.clock = &ctx.clock();
  running_.emplace(Running{task, std::move(slots), std::make_unique<BackgroundCheck>(std::move(request))});
}

Status VerifierRole::PostVerdict(RoleContext& ctx, const proto::Task& task, std::uint32_t slot,
                                 const proto::VerdictTx& tx) {
  const std::string round = task.verifiers(static_cast<int>(slot)).published() ? "-published" : "";
  const std::string duty = "verdict-" + consensus::ToHex(task.id()) + "-" + std::to_string(slot) + round;
  POLNODE_ASSIGN_OR_RETURN(DutyState state, ctx.SendDuty(duty, contracts::payload::kVerdict, tx.SerializeAsString()));
  if (state != DutyState::kSent) return Status::Ok();
  ctx.metrics().Add("verdicts_total", 1.0, {"verdict", proto::Verdict_Name(tx.verdict())});
  std::string reason = "see the report";
  if (auto task_reasons = reasons_.find(task.id()); task_reasons != reasons_.end()) {
    if (auto r = task_reasons->second.find(slot); r != task_reasons->second.end()) reason = r->second;
  }
  std::string failed;
  for (std::uint64_t s : tx.failed_segments()) failed += (failed.empty() ? "" : ",") + std::to_string(s);
  ctx.log().Event("verdict", {{"task_id", consensus::ToHex(task.id())},
                              {"slot", std::to_string(slot)},
                              {"verdict", proto::Verdict_Name(tx.verdict())},
                              {"failed", failed},
                              {"reason", reason},
                              {"report", consensus::ToHex(tx.report_hash())}});
  return Status::Ok();
}

Status VerifierRole::PlayDisputes(RoleContext& ctx, const proto::Task& task) {
  std::unique_ptr<DisputeDuty>& duty = disputes_[task.id()];
  if (!duty) {
    POLNODE_ASSIGN_OR_RETURN(BoundTask bound, BindTask(ctx.fetch_policy(), task, data_));
    DisputeParty party = DaemonParty(ctx, std::move(bound.document), bound.data, dispute_backend_.get());
    // The challenger of a reject looks first where this verifier's own replays looked: one game
    // stands for every disputed reject slot the key holds.
    for (std::uint32_t i : SlotsOf(task, ctx.pubkey())) {
      const proto::VerifierSlot& slot = task.verifiers(static_cast<int>(i));
      if (!slot.disputed() || slot.verdict() != proto::VERDICT_REJECT) continue;
      for (std::uint64_t s : slot.failed_segments()) {
        if (std::find(party.suspect_segments.begin(), party.suspect_segments.end(), s) == party.suspect_segments.end()) {
          party.suspect_segments.push_back(s);
        }
      }
    }
    duty = std::make_unique<DisputeDuty>(std::move(party));
  }
  return duty->Poll(ctx, task).status();  // DisputeDuty logs and counts its moves
}

}  // namespace polnode::node
