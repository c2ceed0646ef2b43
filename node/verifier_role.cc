#include "verifier_role.h"

#include <algorithm>
#include <filesystem>

#include "json.h"
#include "pol_cli.h"
#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/sha256.h"
#include "polnode/contracts/payloads.h"

namespace polnode::node {
namespace {

// A check that failed on this side (document or proof server away, data set missing) is tried
// again after this pause rather than every pass.
constexpr auto kRetryPause = std::chrono::seconds(5);
constexpr std::uint64_t kMaxReportBytes = 1 << 20;
// The report starts with the verdict (ReportJson writes it first), so a restarted verifier reads
// its verdict back without parsing JSON.
constexpr std::string_view kAcceptPrefix = R"({"verdict":"accept")";
constexpr std::string_view kRejectPrefix = R"({"verdict":"reject")";
constexpr const char* kLazyReason = "lazy: accepted without a check";

std::string JoinSegments(const std::vector<std::int64_t>& segments) {
  std::string out;
  for (std::int64_t s : segments) out += (out.empty() ? "" : ",") + std::to_string(s);
  return out;
}

const proto::VerifierSlot* SlotOf(const proto::Task& task, std::string_view key) {
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (slot.verifier() == key) return &slot;
  }
  return nullptr;
}

// The fields every report starts with: the verdict, then what it is about.
void ReportHeader(JsonWriter& w, const proto::Task& task, std::string_view verifier, bool accept,
                  std::string_view reason) {
  w.BeginObject()
      .Field("verdict", accept ? "accept" : "reject")
      .Field("reason", reason)
      .Field("task", consensus::ToHex(task.id()))
      .Field("verifier", consensus::ToHex(verifier))
      .Field("solver", consensus::ToHex(task.solver()))
      .Field("proof_root", consensus::ToHex(task.proof_root()))
      .Field("segment_beacon", consensus::ToHex(task.segment_beacon()));
}

// The evidence behind a checked verdict. Only what the replay determines goes in (no times, no
// cache statistics), so a rerun of the same check writes the same bytes.
std::string ReportJson(const proto::Task& task, std::string_view verifier, std::string_view backend,
                       const ProofCheck& check) {
  const verifier::Verdict& v = check.verdict;
  JsonWriter w;
  ReportHeader(w, task, verifier, v.accept, v.reason);
  w.Field("backend", backend);
  if (check.thresholds) {
    // Tolerant mode: the profiled thresholds the distances were judged by.
    w.Key("thresholds")
        .BeginObject()
        .Field("l1", check.thresholds->l1)
        .Field("l2", check.thresholds->l2)
        .Field("linf", check.thresholds->linf)
        .Field("cosine", check.thresholds->cosine)
        .EndObject();
  }
  w.Key("segments").BeginArray();
  for (std::int64_t s : check.segments) w.Int(s);
  w.EndArray()
      .Field("manifest_ok", v.manifest_ok)
      .Field("initial_state_ok", v.initial_state_ok)
      .Field("final_segment_ok", v.final_segment_ok)
      .Key("replays")
      .BeginArray();
  for (const verifier::SegmentEvidence& e : v.segments) WriteSegmentEvidence(w, e);
  w.EndArray().EndObject();
  return w.str();
}

// A lazy verifier's report: it says that nothing was checked.
std::string LazyReportJson(const proto::Task& task, std::string_view verifier) {
  JsonWriter w;
  ReportHeader(w, task, verifier, true, kLazyReason);
  w.EndObject();
  return w.str();
}

Result<bool> ReportAccepts(std::string_view report) {
  if (report.starts_with(kAcceptPrefix)) return true;
  if (report.starts_with(kRejectPrefix)) return false;
  return Status::Corruption("the report does not start with its verdict");
}

}  // namespace

VerifierRole::VerifierRole(VerifierOptions options) : options_(std::move(options)), data_(options_.loader) {}

VerifierRole::~VerifierRole() { Stop(); }

void VerifierRole::Stop() { running_.reset(); }  // a std::async future waits for its thread

std::string VerifierRole::ReportPath(const RoleContext& ctx, const std::string& task_id) const {
  return ctx.home() + "/reports/" + consensus::ToHex(task_id) + ".json";
}

Status VerifierRole::Poll(RoleContext& ctx) {
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
  return scan_.Pass(ctx, [&](const proto::Task& task) -> Status {
    const proto::VerifierSlot* slot = SlotOf(task, ctx.pubkey());
    if (slot == nullptr) return Status::Ok();
    if (task.status() != proto::TASK_VERIFYING) {
      failures_.erase(task.id());
      reasons_.erase(task.id());
      assigned_.erase(task.id());
    }
    if (task.status() != proto::TASK_DISPUTED) disputes_.erase(task.id());
    if (task.status() == proto::TASK_VERIFYING && slot->verdict() == proto::VERDICT_NONE) {
      return HandleAssigned(ctx, task);
    }
    if (task.status() == proto::TASK_DISPUTED && !slot->disputer().empty() && !options_.lazy) {
      return PlayDisputes(ctx, task);
    }
    return Status::Ok();
  });
}

Status VerifierRole::Collect(RoleContext& ctx) {
  if (!running_ || running_->result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return Status::Ok();
  const proto::Task task = running_->task;
  Result<ProofCheck> check = running_->result.get();
  running_.reset();
  const std::string id = task.id();
  if (!check.ok()) {
    ctx.metrics().Add("verify_errors_total");
    Failure& failure = failures_[id];
    if (failure.error != check.status().ToString()) {
      failure.error = check.status().ToString();
      ctx.log().Event("verify_failed", {{"task", consensus::ToHex(id)}, {"error", failure.error}});
    }
    failure.retry_at = std::chrono::steady_clock::now() + kRetryPause;
    return Status::Ok();
  }
  failures_.erase(id);
  ctx.metrics().Add("verifications_total");
  ctx.metrics().Add("verify_seconds_total", check->seconds);
  ctx.metrics().Add("blobs_fetched_total", static_cast<double>(check->blobs_fetched));
  ctx.metrics().Add("segments_replayed_total", static_cast<double>(check->verdict.segments.size()));
  reasons_[id] = check->verdict.reason;
  std::error_code ec;
  std::filesystem::create_directories(ctx.home() + "/reports", ec);
  return WriteFileAtomically(ReportPath(ctx, id), ReportJson(task, ctx.pubkey(), backend_->name(), *check));
}

Status VerifierRole::HandleAssigned(RoleContext& ctx, const proto::Task& task) {
  const std::string& id = task.id();
  const std::vector<std::int64_t> segments = AssignedSegments(task, ctx.pubkey());
  if (assigned_.insert(id).second) {
    ctx.metrics().Add("assignments_total");
    ctx.log().Event("assigned", {{"task", consensus::ToHex(id)}, {"segments", JoinSegments(segments)}});
  }
  Result<std::vector<std::uint8_t>> report = ReadWholeFile(ReportPath(ctx, id), kMaxReportBytes);
  if (report.ok()) return PostVerdict(ctx, task, std::string(report->begin(), report->end()));
  if (report.status().code() != StatusCode::kNotFound) return report.status();
  if (options_.lazy) {
    reasons_[id] = kLazyReason;
    std::error_code ec;
    std::filesystem::create_directories(ctx.home() + "/reports", ec);
    const std::string lazy = LazyReportJson(task, ctx.pubkey());
    POLNODE_RETURN_IF_ERROR(WriteFileAtomically(ReportPath(ctx, id), lazy));
    return PostVerdict(ctx, task, lazy);
  }
  if (running_) return Status::Ok();  // one check at a time; this task waits its turn
  auto failed = failures_.find(id);
  if (failed != failures_.end() && std::chrono::steady_clock::now() < failed->second.retry_at) return Status::Ok();
  StartCheck(ctx, task, segments);
  return Status::Ok();
}

void VerifierRole::StartCheck(RoleContext& ctx, const proto::Task& task, std::vector<std::int64_t> segments) {
  ctx.log().Event("verifying", {{"task", consensus::ToHex(task.id())}, {"segments", JoinSegments(segments)}});
  CheckRequest request;
  request.task = task;
  request.segments = std::move(segments);
  request.cache_dir = ctx.home() + "/cache";
  request.data = &data_;
  request.backend = backend_.get();
  running_.emplace(Running{task, std::async(std::launch::async, [request = std::move(request)] {
                             return CheckCommittedProof(request);
                           })});
}

Status VerifierRole::PostVerdict(RoleContext& ctx, const proto::Task& task, const std::string& report) {
  POLNODE_ASSIGN_OR_RETURN(bool accept, ReportAccepts(report));
  const consensus::Hash256 report_hash = consensus::Sha256(report);
  proto::VerdictTx tx;
  tx.set_task_id(task.id());
  tx.set_accept(accept);
  tx.set_report_hash(std::string(report_hash.begin(), report_hash.end()));
  const std::string duty = "verdict-" + consensus::ToHex(task.id());
  POLNODE_ASSIGN_OR_RETURN(DutyState state, ctx.SendDuty(duty, contracts::payload::kVerdict, tx.SerializeAsString()));
  if (state != DutyState::kSent) return Status::Ok();
  ctx.metrics().Add(accept ? "verdicts_accept_total" : "verdicts_reject_total");
  auto reason = reasons_.find(task.id());
  ctx.log().Event("verdict", {{"task", consensus::ToHex(task.id())},
                              {"verdict", accept ? "accept" : "reject"},
                              {"reason", reason != reasons_.end() ? reason->second : "see the report"},
                              {"report", consensus::ToHex(report_hash)}});
  return Status::Ok();
}

Status VerifierRole::PlayDisputes(RoleContext& ctx, const proto::Task& task) {
  std::unique_ptr<DisputeDuty>& duty = disputes_[task.id()];
  if (!duty) {
    POLNODE_ASSIGN_OR_RETURN(BoundTask bound, BindTask(task, data_));
    DisputeParty party;
    party.document = std::move(bound.document);
    party.data = bound.data;
    party.backend = dispute_backend_.get();
    // The challenger of a reject looks first where this verifier's own replay looked.
    for (std::int64_t s : AssignedSegments(task, ctx.pubkey())) {
      party.suspect_segments.push_back(static_cast<std::uint64_t>(s));
    }
    party.cache_dir = ctx.home() + "/cache";
    duty = std::make_unique<DisputeDuty>(std::move(party));
  }
  return duty->Poll(ctx, task).status();  // DisputeDuty logs and counts its moves
}

}  // namespace polnode::node
