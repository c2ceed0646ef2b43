#include "polnode/roles/whistleblower_role.h"

#include <algorithm>
#include <filesystem>

#include "polnode/base/file_util.h"
#include "polnode/consensus/encoding.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/locks.h"
#include "polnode/contracts/payloads.h"
#include "polnode/roles/challenge_watch.h"

namespace polnode::node {
namespace {

// A check that failed on this side (document or proof server away, data set missing) is tried
// again after this pause rather than every pass.
constexpr auto kRetryPause = std::chrono::seconds(5);

std::string JoinSegments(const std::vector<std::int64_t>& segments) {
  std::string out;
  for (std::int64_t s : segments) out += (out.empty() ? "" : ",") + std::to_string(s);
  return out;
}

const char* VerdictName(proto::Verdict verdict) {
  switch (verdict) {
    case proto::VERDICT_ACCEPT: return "accept";
    case proto::VERDICT_REJECT: return "reject";
    case proto::VERDICT_UNAVAILABLE: return "unavailable";
    default: return "none";
  }
}

// What the whistleblower owns on the ledger: its balance and its whistleblower stake. Disputes
// move money between the two (a dispute locks stake, a top-up bonds more), so only their sum
// shows what a task's disputes earned or cost.
struct Holdings {
  std::uint64_t balance = 0;
  std::uint64_t stake = 0;  // bonded, locked included
  std::uint64_t total() const { return balance + stake; }
};

Result<Holdings> HoldingsOf(const RoleContext& ctx) {
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, ctx.ledger().Account(ctx.pubkey()));
  POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, ctx.ledger().Stake(ctx.pubkey(), proto::ROLE_WHISTLEBLOWER));
  return Holdings{account.balance(), stake.bonded()};
}

}  // namespace

bool SelectedForCheck(std::string_view task_id, std::uint32_t slot, std::string_view self, double share) {
  consensus::HashWriter w;
  w.String("polnode/whistleblower-audit/v2");
  w.String(task_id);
  w.U32(slot);
  w.String(self);
  const consensus::Hash256 h = w.Finalize();
  std::uint64_t word = 0;
  for (int i = 0; i < 8; ++i) word = (word << 8) | h[static_cast<std::size_t>(i)];
  // The top 53 bits, exactly representable as a double, give a fraction strictly below 1, so a
  // share of 1 audits everything and a share of 0 nothing.
  return static_cast<double>(word >> 11) * 0x1p-53 < share;
}

WhistleblowerRole::WhistleblowerRole(WhistleblowerOptions options)
    : options_(std::move(options)), data_(options_.loader) {}

WhistleblowerRole::~WhistleblowerRole() { Stop(); }

void WhistleblowerRole::Stop() { running_.reset(); }  // stops the check and waits for its thread

std::string WhistleblowerRole::WatchPath(const RoleContext& ctx, const std::string& task_id) const {
  return ctx.home() + "/watch/" + consensus::ToHex(task_id);
}

bool WhistleblowerRole::Challenged(const RoleContext& ctx, const proto::Task& task) {
  return std::any_of(task.challenges().begin(), task.challenges().end(),
                     [&](const proto::Challenge& c) { return c.challenger() == ctx.pubkey(); });
}

Status WhistleblowerRole::Poll(RoleContext& ctx) {
  POLNODE_RETURN_IF_ERROR(data_.UseFileStore(ctx.home() + "/files"));
  if (!backend_) {
    POLNODE_ASSIGN_OR_RETURN(backend_, kernels::MakeBackend(options_.backend, options_.threads));
    POLNODE_ASSIGN_OR_RETURN(dispute_backend_, kernels::MakeBackend(options_.backend, options_.threads));
  }
  if (!have_params_) {
    POLNODE_ASSIGN_OR_RETURN(params_, ctx.ledger().Params());
    have_params_ = true;
  }
  const std::uint64_t stake = options_.stake > 0 ? options_.stake : 2 * params_.min_stake_whistleblower();
  POLNODE_ASSIGN_OR_RETURN(bool staked, ctx.EnsureStake(proto::ROLE_WHISTLEBLOWER, stake));
  ctx.metrics().Set("staked", staked ? 1 : 0);
  POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord record, ctx.ledger().Stake(ctx.pubkey(), proto::ROLE_WHISTLEBLOWER));
  // A challenge still in the mempool has not locked its stake yet, but will.
  promised_ = 0;
  for (const auto& [duty, lock] : pending_challenges_) promised_ += lock;
  const std::uint64_t free = record.bonded() > record.locked() ? record.bonded() - record.locked() : 0;
  free_stake_ = free > promised_ ? free - promised_ : 0;
  Collect(ctx);
  // Whether an audit runs or waits to be retried (devnet.cc holds blocks back while one does).
  const bool retry_due = std::any_of(audits_.begin(), audits_.end(), [&](const auto& a) {
    return !a.second.error.empty() && a.second.retry_at != std::chrono::steady_clock::time_point::max() &&
           ctx.clock().Now() < a.second.retry_at;
  });
  ctx.metrics().Set("checking", running_ || retry_due ? 1 : 0);
  return scan_.Pass(ctx, [&](const proto::Task& task) -> Status {
    // Neither a task's solver nor its submitter nor one of its verifiers may challenge its proof.
    if (task.solver() == ctx.pubkey() || task.submitter() == ctx.pubkey()) return Status::Ok();
    if (!SlotsOf(task, ctx.pubkey()).empty()) return Status::Ok();
    if (task.status() != proto::TASK_VERIFYING && task.status() != proto::TASK_PUBLISHING &&
        task.status() != proto::TASK_CHALLENGE) {
      pending_challenges_.erase("challenge-" + consensus::ToHex(task.id()));
    }
    if (TaskClosed(task)) audits_.erase(task.id());
    if (task.status() != proto::TASK_DISPUTED) disputes_.erase(task.id());
    switch (task.status()) {
      case proto::TASK_VERIFYING:
      case proto::TASK_PUBLISHING: return AuditTask(ctx, task);
      case proto::TASK_CHALLENGE: {
        POLNODE_RETURN_IF_ERROR(AuditTask(ctx, task));
        auto audit = audits_.find(task.id());
        return audit != audits_.end() && audit->second.check ? Compare(ctx, task, audit->second) : Status::Ok();
      }
      case proto::TASK_REVEALING:
      case proto::TASK_DISPUTED: return Challenged(ctx, task) ? PlayDisputes(ctx, task) : Status::Ok();
      case proto::TASK_SETTLED:
      case proto::TASK_CANCELLED: return ReportSettled(ctx, task);
      default: return Status::Ok();
    }
  });
}

void WhistleblowerRole::Collect(RoleContext& ctx) {
  if (!running_ || !running_->check->ready()) return;
  const std::string id = running_->task_id;
  Result<ProofCheck> check = running_->check->Take();
  running_.reset();
  auto audit = audits_.find(id);
  if (audit == audits_.end()) return;  // the task closed while its check ran
  if (!check.ok()) {
    ctx.metrics().Add("verify_errors_total");
    if (audit->second.error != check.status().ToString()) {
      audit->second.error = check.status().ToString();
      ctx.log().Event(IsDeclined(check.status()) ? "declined" : "verify_failed",
                      {{"task_id", consensus::ToHex(id)}, {"error", audit->second.error}});
    }
    // A declined task is never audited here; anything else is retried.
    audit->second.retry_at = IsDeclined(check.status()) ? std::chrono::steady_clock::time_point::max() : ctx.clock().Now() + kRetryPause;
    return;
  }
  ctx.metrics().Add("verifications_total");
  ctx.metrics().Add("verify_seconds_total", check->seconds);
  ctx.metrics().Add("blobs_fetched_total", static_cast<double>(check->blobs_fetched));
  ctx.metrics().Add("published_loaded_total", static_cast<double>(check->published_loaded));
  ctx.metrics().Add("segments_replayed_total", static_cast<double>(check->evidence.size()));
  audit->second.check = std::move(*check);
}

Status WhistleblowerRole::AuditTask(RoleContext& ctx, const proto::Task& task) {
  auto it = audits_.find(task.id());
  if (it == audits_.end()) {
    TaskAudit audit;
    for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(task.verifiers_size()); ++i) {
      if (SelectedForCheck(task.id(), i, ctx.pubkey(), options_.check_share)) audit.slots.push_back(i);
    }
    it = audits_.emplace(task.id(), std::move(audit)).first;
  }
  TaskAudit& audit = it->second;
  // A check from before the solver published checkpoints may have lacked some; it runs again.
  if (audit.check && audit.published_seen != task.published_size()) audit.check.reset();
  if (audit.slots.empty() || audit.check || running_) return Status::Ok();
  if (!audit.error.empty() && ctx.clock().Now() < audit.retry_at) return Status::Ok();
  CheckRequest request;
  request.task = task;
  // Its own challenge's segments too: a challenge names failures among those only.
  request.segments = SegmentsOfSlots(task, audit.slots);
  for (std::int64_t s : ChallengeSegmentsOf(task, ctx.pubkey())) request.segments.push_back(s);
  std::sort(request.segments.begin(), request.segments.end());
  request.segments.erase(std::unique(request.segments.begin(), request.segments.end()), request.segments.end());
  request.cache_dir = ctx.home() + "/cache";
  request.fetch = ctx.fetch_policy();
  request.data = &data_;
  request.backend = backend_.get();
  request.ledger = &ctx.ledger();
  request.clock = &ctx.clock();
  audit.published_seen = task.published_size();
  ctx.log().Event("auditing", {{"task_id", consensus::ToHex(task.id())},
                               {"slots", std::to_string(audit.slots.size())},
                               {"segments", JoinSegments(request.segments)}});
  running_.emplace(Running{task.id(), std::make_unique<BackgroundCheck>(std::move(request))});
  return Status::Ok();
}

Status WhistleblowerRole::Compare(RoleContext& ctx, const proto::Task& task, TaskAudit& audit) {
  for (std::uint32_t i : audit.slots) {
    const proto::VerifierSlot& slot = task.verifiers(static_cast<int>(i));
    if (slot.absent() || slot.verdict() == proto::VERDICT_NONE) continue;
    if (!audit.compared.insert(i).second) continue;
    POLNODE_ASSIGN_OR_RETURN(SegmentsVerdict mine, VerdictOn(*audit.check, SlotSegments(slot)));
    const bool agree = mine.verdict == slot.verdict();
    ctx.metrics().Add("checks_total");
    if (!agree) ctx.metrics().Add("disagreements_total");
    ctx.log().Event("checked", {{"task_id", consensus::ToHex(task.id())},
                                {"slot", std::to_string(i)},
                                {"verifier", consensus::ToHex(slot.verifier())},
                                {"result", agree ? "agree" : "disagree"},
                                {"theirs", VerdictName(slot.verdict())},
                                {"mine", VerdictName(mine.verdict)},
                                {"reason", mine.reason}});
  }
  // The whistleblower challenges the proof itself when its replay of its covered segments shows a
  // transition wrong: the one thing a game can show. An accepting verifier whose slot's segments
  // include the one the game disproves loses that slot's lock to the whistleblower; in a forced
  // round the challenge catches the forced error when it names exactly the covered segments that
  // end at forced checkpoints. Its game looks first where any of its replays found the proof wrong.
  POLNODE_ASSIGN_OR_RETURN(SegmentsVerdict audited, VerdictOn(*audit.check, SegmentsOfSlots(task, audit.slots)));
  POLNODE_ASSIGN_OR_RETURN(SegmentsVerdict mine, VerdictOn(*audit.check, ChallengeSegmentsOf(task, ctx.pubkey())));
  audit.suspects = mine.failed_segments;
  for (std::uint64_t s : audited.failed_segments) {
    if (std::find(audit.suspects.begin(), audit.suspects.end(), s) == audit.suspects.end()) audit.suspects.push_back(s);
  }
  if (mine.verdict != proto::VERDICT_REJECT) return Status::Ok();
  return Challenge(ctx, task, mine);
}

Status WhistleblowerRole::Challenge(RoleContext& ctx, const proto::Task& task, const SegmentsVerdict& mine) {
  if (Challenged(ctx, task) || task.challenges_size() >= static_cast<int>(params_.max_challengers())) return Status::Ok();
  const std::string duty = "challenge-" + consensus::ToHex(task.id());
  const std::uint64_t lock = contracts::TaskLock(params_, proto::ROLE_WHISTLEBLOWER, task.spec().payment());
  if (!ctx.DutySent(duty)) {
    // The challenge locks stake when it executes (more for larger payments); sent without enough
    // free stake it would fail for good, so it tops the stake up and waits for that first.
    if (free_stake_ < lock) return ctx.EnsureStake(proto::ROLE_WHISTLEBLOWER, lock + promised_).status();
    const std::string watch = WatchPath(ctx, task.id());
    if (!std::filesystem::exists(watch)) {
      POLNODE_ASSIGN_OR_RETURN(Holdings before, HoldingsOf(ctx));
      std::error_code ec;
      std::filesystem::create_directories(ctx.home() + "/watch", ec);
      POLNODE_RETURN_IF_ERROR(WriteFileAtomically(watch, EncodeChallengeWatch({before.total()})));
    }
  }
  proto::DisputeTx tx;
  tx.set_task_id(task.id());  // no verifier: the proof itself is challenged
  // Like a reject, it names its failed covered segments and commits to what its replays found
  // there (the end states reached, or in tolerant mode the elements beyond forced_delta / 2): in a
  // forced round only a challenge right about every forced one is a catch.
  for (std::uint64_t s : mine.failed_segments) tx.add_failed_segments(s);
  for (std::string& digest : SegmentDigestsOf(ctx.pubkey(), mine)) tx.add_segment_digests(std::move(digest));
  POLNODE_ASSIGN_OR_RETURN(DutyState state, ctx.SendDuty(duty, contracts::payload::kDispute, tx.SerializeAsString()));
  if (state == DutyState::kCommitted || state == DutyState::kFailed) {
    pending_challenges_.erase(duty);
    return Status::Ok();
  }
  pending_challenges_[duty] = lock;
  if (state != DutyState::kSent) return Status::Ok();
  free_stake_ -= lock;
  ctx.metrics().Add("challenges_total");
  std::string failed;
  for (std::uint64_t s : mine.failed_segments) failed += (failed.empty() ? "" : ",") + std::to_string(s);
  ctx.log().Event("challenged", {{"task_id", consensus::ToHex(task.id())}, {"failed", failed}, {"reason", mine.reason}});
  return Status::Ok();
}

Status WhistleblowerRole::PlayDisputes(RoleContext& ctx, const proto::Task& task) {
  std::unique_ptr<DisputeDuty>& duty = disputes_[task.id()];
  if (!duty) {
    POLNODE_ASSIGN_OR_RETURN(BoundTask bound, BindTask(ctx.fetch_policy(), task, data_));
    DisputeParty party = DaemonParty(ctx, std::move(bound.document), bound.data, dispute_backend_.get());
    // As challenger it looks first where its audit found the proof wrong.
    if (auto audit = audits_.find(task.id()); audit != audits_.end()) party.suspect_segments = audit->second.suspects;
    duty = std::make_unique<DisputeDuty>(std::move(party));
  }
  return duty->Poll(ctx, task).status();  // DisputeDuty logs and counts its moves
}

Status WhistleblowerRole::ReportSettled(RoleContext& ctx, const proto::Task& task) {
  const std::string watch = WatchPath(ctx, task.id());
  // An unreadable watch stays where it is, named in the error, for the operator to look at.
  POLNODE_ASSIGN_OR_RETURN(std::optional<ChallengeWatch> before, LoadChallengeWatch(watch));
  if (!before) return Status::Ok();
  POLNODE_ASSIGN_OR_RETURN(Holdings now, HoldingsOf(ctx));
  const std::int64_t change =
      static_cast<std::int64_t>(now.total()) - static_cast<std::int64_t>(before->holdings_before);
  ctx.metrics().Add("settled_total");
  ctx.metrics().Set("balance", static_cast<double>(now.balance));
  ctx.log().Event("settled", {{"task_id", consensus::ToHex(task.id())},
                              {"outcome", proto::TaskOutcome_Name(task.outcome())},
                              {"forced_error", task.forced_error() ? "true" : "false"},
                              {"balance", std::to_string(now.balance)},
                              {"stake", std::to_string(now.stake)},
                              {"change", std::to_string(change)}});
  std::error_code ec;
  std::filesystem::remove(watch, ec);
  if (ec) return Status::IOError("cannot remove " + watch + ": " + ec.message());
  return Status::Ok();
}

}  // namespace polnode::node
