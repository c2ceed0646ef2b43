#include "verification.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "accounts.h"
#include "checked_math.h"
#include "deadlines.h"
#include "keys.h"
#include "polnode/contracts/beacon.h"
#include "publication.h"
#include "records.h"
#include "settlement.h"
#include "staking.h"
#include "task_ops.h"

namespace polnode::contracts {
namespace {

struct Candidate {
  std::string key;
  std::uint64_t capacity = 0;  // how many of the task's verifier locks its free stake covers
};

// The verifiers that may take new slots of `task`: staked, neither its solver nor its submitter,
// holding no slot of it yet, with free stake for at least one lock. In key order. The first round
// draws from every such key (a key drawn again holds several slots: slots follow stake); a key
// drawn beside an overdue slot must hold none, because a key that already answered would only
// repeat its verdict, and in a small network a lazy accept would become the only voice.
Result<std::vector<Candidate>> EligibleVerifiers(const ExecContext& ctx, const proto::Task& task, std::uint64_t lock) {
  POLNODE_ASSIGN_OR_RETURN(proto::VerifierSet set, LoadVerifierSet(ctx.state));
  std::set<std::string> holders;
  for (const proto::VerifierSlot& slot : task.verifiers()) holders.insert(slot.verifier());
  std::vector<Candidate> eligible;
  for (const std::string& verifier : set.pubkeys()) {
    if (verifier == task.solver() || verifier == task.submitter() || holders.count(verifier) != 0) continue;
    POLNODE_ASSIGN_OR_RETURN(std::uint64_t free, FreeStake(ctx.state, proto::ROLE_VERIFIER, verifier));
    if (free < lock) continue;
    eligible.push_back({verifier, free / lock});
  }
  return eligible;
}

// Assigns up to `count` new slots for verification round `round`, with a beacon from this block's
// randomness (unknown when the proof root or the previous round's verdicts were posted). Each slot
// is drawn by free stake with replacement (beacon.h StakeWeightedPicks), so stake split over
// several keys holds no more slots than on one key; a key drawn for several slots locks one lock
// per slot and replays each slot's own segments. Fresh slots (round > 1, beside overdue ones) go
// to at most one slot per key, still weighted by stake: each is a separate voice, so a lazy key
// with the stake for several locks cannot fill every fresh slot of a task whose honest verifiers
// are slow and leave it the only voice. Returns how many slots were assigned.
Result<std::size_t> AssignSlots(ExecContext& ctx, proto::Task& task, std::size_t count, std::uint32_t round) {
  const Hash256 beacon = SegmentBeacon(ctx.block.randomness, task.id(), task.proof_root(), task.submitter_seed());
  if (round == 1) task.set_segment_beacon(ToBytes(beacon));
  const std::uint64_t lock = TaskLock(ctx.params, proto::ROLE_VERIFIER, task.spec().payment());
  POLNODE_ASSIGN_OR_RETURN(std::vector<Candidate> eligible, EligibleVerifiers(ctx, task, lock));
  std::vector<std::uint64_t> capacities;
  for (const Candidate& c : eligible) capacities.push_back(c.capacity);
  const std::uint64_t segments = SegmentCount(task.spec());
  const std::uint32_t first = static_cast<std::uint32_t>(task.verifiers_size());
  std::vector<std::size_t> picks;
  if (round == 1) {
    picks = StakeWeightedPicks(capacities, count, ToBytes(beacon), round, first);
  } else {
    for (std::uint32_t n = 0; n < count; ++n) {
      const std::vector<std::size_t> one = StakeWeightedPicks(capacities, 1, ToBytes(beacon), round, first + n);
      if (one.empty()) break;
      picks.push_back(one.front());
      capacities[one.front()] = 0;
    }
  }
  for (std::size_t i : picks) {
    const std::string& verifier = eligible[i].key;
    POLNODE_RETURN_IF_ERROR(LockStake(ctx.state, proto::ROLE_VERIFIER, verifier, lock));
    const std::uint32_t index = static_cast<std::uint32_t>(task.verifiers_size());
    proto::VerifierSlot* slot = task.add_verifiers();
    slot->set_verifier(verifier);
    slot->set_lock(lock);
    for (std::uint64_t s : DrawSegments(ToBytes(beacon), index, segments, task.spec().segments_per_verification())) {
      slot->add_segments(s);
    }
    ctx.Emit("verifier_assigned", {{"task", ToHex(task.id())},
                                   {"verifier", ToHex(verifier)},
                                   {"slot", std::to_string(index)},
                                   {"round", std::to_string(round)}});
  }
  task.set_verification_round(round);
  return picks.size();
}

// Slot `index` of the task when `key` holds it and it still counts (not absent); else why not.
Result<proto::VerifierSlot*> LiveSlotOf(proto::Task& task, std::uint32_t index, std::string_view key) {
  if (index >= static_cast<std::uint32_t>(task.verifiers_size())) {
    return Status::NotFound("the task has no verifier slot " + std::to_string(index));
  }
  proto::VerifierSlot* slot = task.mutable_verifiers(static_cast<int>(index));
  if (slot->verifier() != key) {
    return Status::PermissionDenied("verifier slot " + std::to_string(index) + " is held by another key");
  }
  if (slot->absent()) return Status::PermissionDenied("verifier slot " + std::to_string(index) + " was absent");
  return slot;
}

// Checks the segments a reject or challenge names as failed and their digests: at least one,
// strictly ascending, each one of `covered`, with one 32-byte digest per segment (beacon.h
// SegmentDigest: of the replayed end state's hash in exact mode, of the indices the replay found
// beyond forced_delta / 2 in tolerant mode).
Status CheckFailedSegments(const std::vector<std::uint64_t>& covered,
                           const google::protobuf::RepeatedField<std::uint64_t>& failed,
                           const google::protobuf::RepeatedPtrField<std::string>& digests) {
  if (failed.empty()) return Status::InvalidArgument("a reject or challenge names the segments that failed");
  for (int i = 0; i < failed.size(); ++i) {
    if (i > 0 && failed[i] <= failed[i - 1]) return Status::InvalidArgument("failed_segments must be strictly ascending");
    if (!std::binary_search(covered.begin(), covered.end(), failed[i])) {
      return Status::InvalidArgument("segment " + std::to_string(failed[i]) + " is not one of the covered segments");
    }
  }
  if (digests.size() != failed.size()) {
    return Status::InvalidArgument("segment_digests must hold " + std::to_string(failed.size()) +
                                   " digests, one per failed segment");
  }
  for (const std::string& digest : digests) {
    if (digest.size() != kIdBytes) return Status::InvalidArgument("each segment digest must be 32 bytes");
  }
  return Status::Ok();
}

bool AllLiveSlotsAnswered(const proto::Task& task) {
  return std::all_of(task.verifiers().begin(), task.verifiers().end(), [](const proto::VerifierSlot& s) {
    return s.absent() || s.verdict() != proto::VERDICT_NONE;
  });
}

// The verdicts are in (or their window is over): unavailable verdicts first make the solver
// publish; with none left, the challenge window opens. Stores the task.
Status EndVerification(ExecContext& ctx, proto::Task& task) {
  bool any_verdict = false;
  bool any_unavailable = false;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (slot.absent() || slot.verdict() == proto::VERDICT_NONE) continue;
    any_verdict = true;
    any_unavailable |= slot.verdict() == proto::VERDICT_UNAVAILABLE;
  }
  if (!any_verdict) return SettleUnverified(ctx, task);
  if (any_unavailable) return EnterPublishing(ctx, task);
  POLNODE_RETURN_IF_ERROR(
      EnterStatus(ctx, task, proto::TASK_CHALLENGE, ctx.params.challenge_window(), proto::DUE_CHALLENGE_END));
  StoreTask(ctx.state, task);
  return Status::Ok();
}

}  // namespace

std::uint64_t SegmentCount(const proto::TaskSpec& spec) { return spec.total_steps() / spec.checkpoint_interval(); }

std::vector<std::uint64_t> CoveredSegments(const proto::Task& task, const proto::VerifierSlot& slot) {
  std::vector<std::uint64_t> covered(slot.segments().begin(), slot.segments().end());
  covered.push_back(SegmentCount(task.spec()) - 1);
  std::sort(covered.begin(), covered.end());
  covered.erase(std::unique(covered.begin(), covered.end()), covered.end());
  return covered;
}

Status OnSegmentBeacon(ExecContext& ctx, proto::Task& task) {
  if (task.status() != proto::TASK_COMMITTED || task.deadline() != ctx.block.height) return Status::Ok();
  if (!task.seed_commitment().empty() && task.submitter_seed().empty()) {
    POLNODE_ASSIGN_OR_RETURN(std::uint64_t last, CheckedAdd(task.commit_height(), ctx.params.seed_reveal_window(),
                                                            "seed reveal deadline"));
    if (ctx.block.height >= last) return SettleNoSeed(ctx, task);
    // The beacon waits for the submitter's seed (ExecuteRevealSeed draws it a block later).
    task.set_deadline(last);
    POLNODE_RETURN_IF_ERROR(ScheduleTaskDue(ctx.state, last, proto::DUE_SEGMENT_BEACON, task.id()));
    StoreTask(ctx.state, task);
    return Status::Ok();
  }
  POLNODE_ASSIGN_OR_RETURN(std::size_t assigned, AssignSlots(ctx, task, ctx.params.verifiers_per_task(), 1));
  if (assigned == 0) {
    POLNODE_RETURN_IF_ERROR(UnlockStake(ctx.state, proto::ROLE_SOLVER, task.solver(), task.solver_lock()));
    POLNODE_RETURN_IF_ERROR(RefundEscrow(ctx, task));
    return CloseTask(ctx, task, proto::TASK_CANCELLED, proto::OUTCOME_NO_VERIFIERS);
  }
  // Verification starts: the jackpot cut leaves the escrow now, so tasks nobody could verify or
  // nobody trained are refunded in full.
  if (task.jackpot_cut() > 0) {
    task.set_escrow(task.escrow() - task.jackpot_cut());
    POLNODE_RETURN_IF_ERROR(AddToJackpot(ctx.state, task.jackpot_cut()));
  }
  ctx.Emit("segment_beacon", {{"task", ToHex(task.id())}, {"beacon", ToHex(task.segment_beacon())}});
  POLNODE_RETURN_IF_ERROR(
      EnterStatus(ctx, task, proto::TASK_VERIFYING, ctx.params.verify_window(), proto::DUE_VERDICT_DEADLINE));
  StoreTask(ctx.state, task);
  return Status::Ok();
}

Status ExecuteVerdict(ExecContext& ctx, std::string_view signer, const proto::VerdictTx& msg) {
  POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(ctx.state, msg.task_id()));
  if (task.status() != proto::TASK_VERIFYING) return Status::FailedPrecondition("the task is not awaiting verdicts");
  Result<proto::VerifierSlot*> held = LiveSlotOf(task, msg.slot(), signer);
  // Not holding the slot is the signer's lack of permission, whatever the index names.
  if (!held.ok()) return Status::PermissionDenied(held.status().message());
  proto::VerifierSlot* slot = *held;
  if (slot->verdict() != proto::VERDICT_NONE) return Status::AlreadyExists("this slot already has its verdict");
  switch (msg.verdict()) {
    case proto::VERDICT_UNAVAILABLE:
      if (slot->published()) {
        return Status::FailedPrecondition("this slot's checkpoints are published on the ledger; replay them");
      }
      if (!msg.failed_segments().empty() || !msg.segment_digests().empty()) {
        return Status::InvalidArgument("an unavailable verdict names no segments and no digests");
      }
      break;
    case proto::VERDICT_ACCEPT:
      if (!msg.failed_segments().empty() || !msg.segment_digests().empty()) {
        return Status::InvalidArgument("an accept names no failed segments and no digests");
      }
      break;
    case proto::VERDICT_REJECT:
      POLNODE_RETURN_IF_ERROR(
          CheckFailedSegments(CoveredSegments(task, *slot), msg.failed_segments(), msg.segment_digests()));
      break;
    default:
      return Status::InvalidArgument("verdict must be accept, reject or unavailable");
  }
  slot->set_verdict(msg.verdict());
  slot->set_report_hash(msg.report_hash());
  *slot->mutable_failed_segments() = msg.failed_segments();
  *slot->mutable_segment_digests() = msg.segment_digests();
  ctx.Emit("verdict", {{"task", ToHex(task.id())},
                       {"verifier", ToHex(signer)},
                       {"slot", std::to_string(msg.slot())},
                       {"verdict", std::string(VerdictName(msg.verdict()))}});
  if (AllLiveSlotsAnswered(task)) return EndVerification(ctx, task);
  StoreTask(ctx.state, task);
  return Status::Ok();
}

Status OnVerdictDeadline(ExecContext& ctx, proto::Task& task) {
  if (task.status() != proto::TASK_VERIFYING || task.deadline() != ctx.block.height) return Status::Ok();
  const bool rounds_left = task.verification_round() < ctx.params.max_verification_rounds();
  std::size_t newly_overdue = 0;
  for (proto::VerifierSlot& slot : *task.mutable_verifiers()) {
    if (slot.absent() || slot.verdict() != proto::VERDICT_NONE) continue;
    // A slow verifier's replay may still be running: it keeps its slot one more window, so its
    // verdict (a reject of a cheat) is not lost to a lazy accept that was in at once.
    if (rounds_left && !slot.overdue()) {
      slot.set_overdue(true);
      ++newly_overdue;
      continue;
    }
    POLNODE_RETURN_IF_ERROR(SlashToJackpot(ctx, task, proto::ROLE_VERIFIER, slot.verifier(), slot.lock(),
                                           slash_reason::kAbsentVerifier));
    slot.set_absent(true);
  }
  if (newly_overdue > 0) {
    // Beside each overdue slot a key that holds no slot of the task is drawn (where one is left),
    // so a verifier cut off from the ledger never leaves the others' verdicts to decide alone.
    POLNODE_RETURN_IF_ERROR(AssignSlots(ctx, task, newly_overdue, task.verification_round() + 1).status());
    POLNODE_RETURN_IF_ERROR(
        EnterStatus(ctx, task, proto::TASK_VERIFYING, ctx.params.verify_window(), proto::DUE_VERDICT_DEADLINE));
    StoreTask(ctx.state, task);
    return Status::Ok();
  }
  return EndVerification(ctx, task);
}

bool VerificationShort(const proto::Task& task, const proto::Params& params) {
  bool any_absent = false;
  std::uint32_t answered = 0;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    any_absent |= slot.absent();
    if (!slot.absent() && slot.verdict() != proto::VERDICT_NONE) ++answered;
  }
  return any_absent && answered < params.verifiers_per_task();
}

Status ReopenVerification(ExecContext& ctx, proto::Task& task) {
  for (proto::VerifierSlot& slot : *task.mutable_verifiers()) {
    if (slot.absent() || slot.verdict() != proto::VERDICT_UNAVAILABLE) continue;
    slot.set_verdict(proto::VERDICT_NONE);
    slot.set_published(true);
  }
  POLNODE_RETURN_IF_ERROR(
      EnterStatus(ctx, task, proto::TASK_VERIFYING, ctx.params.verify_window(), proto::DUE_VERDICT_DEADLINE));
  StoreTask(ctx.state, task);
  return Status::Ok();
}

Status ExecuteRevealSeed(ExecContext& ctx, std::string_view signer, const proto::SeedRevealTx& msg) {
  POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(ctx.state, msg.task_id()));
  if (task.submitter() != signer) return Status::PermissionDenied("only the task's submitter reveals its seed");
  if (task.seed_commitment().empty()) return Status::FailedPrecondition("the task committed to no seed");
  if (task.status() != proto::TASK_COMMITTED) {
    return Status::FailedPrecondition("the seed is revealed after the proof commitment and before the beacon");
  }
  if (!task.submitter_seed().empty()) return Status::AlreadyExists("the seed is already revealed");
  if (ToBytes(SecretCommitment(msg.seed())) != task.seed_commitment()) {
    return Status::InvalidArgument("the seed does not match the submission's commitment");
  }
  task.set_submitter_seed(msg.seed());
  // Drawn at the end of the next block at the earliest, and never before the usual beacon delay:
  // the block producer could include the reveal late, but not make the draw earlier.
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t usual, CheckedAdd(task.commit_height(), ctx.params.beacon_delay(), "beacon"));
  const std::uint64_t draw = std::max(usual, ctx.block.height + 1);
  if (draw != task.deadline()) {
    task.set_deadline(draw);
    POLNODE_RETURN_IF_ERROR(ScheduleTaskDue(ctx.state, draw, proto::DUE_SEGMENT_BEACON, task.id()));
  }
  ctx.Emit("seed_revealed", {{"task", ToHex(task.id())}});
  StoreTask(ctx.state, task);
  return Status::Ok();
}

Status ExecuteDispute(ExecContext& ctx, std::string_view signer, const proto::DisputeTx& msg) {
  POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(ctx.state, msg.task_id()));
  if (task.status() != proto::TASK_CHALLENGE) return Status::FailedPrecondition("the challenge window is not open");
  if (signer == task.solver()) {
    if (msg.verifier().empty()) return Status::InvalidArgument("the solver disputes a reject verdict: name its verifier");
    Result<proto::VerifierSlot*> held = LiveSlotOf(task, msg.slot(), msg.verifier());
    if (!held.ok()) return Status::NotFound(held.status().message());
    proto::VerifierSlot* slot = *held;
    if (slot->verdict() != proto::VERDICT_REJECT) {
      return Status::FailedPrecondition("the solver may only dispute a reject verdict");
    }
    if (slot->disputed()) return Status::AlreadyExists("that verdict is already disputed");
    slot->set_disputed(true);
    ctx.Emit("dispute", {{"task", ToHex(task.id())},
                         {"verifier", ToHex(msg.verifier())},
                         {"slot", std::to_string(msg.slot())},
                         {"by", "solver"}});
  } else {
    if (!msg.verifier().empty()) {
      return Status::InvalidArgument("a whistleblower challenges the proof itself: leave verifier empty");
    }
    if (signer == task.submitter()) return Status::PermissionDenied("the submitter cannot challenge its own task");
    for (const proto::VerifierSlot& slot : task.verifiers()) {
      if (slot.verifier() == signer) return Status::PermissionDenied("a verifier of this task gives its verdict instead");
    }
    for (const proto::Challenge& c : task.challenges()) {
      if (c.challenger() == signer) return Status::AlreadyExists("this whistleblower already challenged the proof");
    }
    if (task.challenges_size() >= static_cast<int>(ctx.params.max_challengers())) {
      return Status::ResourceExhausted("the task already has " + std::to_string(ctx.params.max_challengers()) +
                                       " challenges");
    }
    // The ledger draws the segments the challenge covers now, from the beacon and the
    // challenger's key: a challenger cannot aim at the segments a public reject named.
    const std::vector<std::uint64_t> covered = ChallengeSegments(
        task.segment_beacon(), signer, SegmentCount(task.spec()), task.spec().segments_per_verification());
    POLNODE_RETURN_IF_ERROR(CheckFailedSegments(covered, msg.failed_segments(), msg.segment_digests()));
    const std::uint64_t lock = TaskLock(ctx.params, proto::ROLE_WHISTLEBLOWER, task.spec().payment());
    POLNODE_RETURN_IF_ERROR(LockStake(ctx.state, proto::ROLE_WHISTLEBLOWER, signer, lock));
    proto::Challenge* challenge = task.add_challenges();
    challenge->set_challenger(std::string(signer));
    challenge->set_lock(lock);
    *challenge->mutable_segments() = {covered.begin(), covered.end()};
    *challenge->mutable_failed_segments() = msg.failed_segments();
    *challenge->mutable_segment_digests() = msg.segment_digests();
    ctx.Emit("dispute", {{"task", ToHex(task.id())}, {"challenger", ToHex(signer)}, {"by", "whistleblower"}});
  }
  StoreTask(ctx.state, task);
  return Status::Ok();
}

Status OnChallengeEnd(ExecContext& ctx, proto::Task& task) {
  if (task.status() != proto::TASK_CHALLENGE || task.deadline() != ctx.block.height) return Status::Ok();
  POLNODE_RETURN_IF_ERROR(
      EnterStatus(ctx, task, proto::TASK_REVEALING, ctx.params.reveal_window(), proto::DUE_REVEAL_DEADLINE));
  StoreTask(ctx.state, task);
  return Status::Ok();
}

std::string_view VerdictName(proto::Verdict verdict) {
  switch (verdict) {
    case proto::VERDICT_ACCEPT:
      return "accept";
    case proto::VERDICT_REJECT:
      return "reject";
    case proto::VERDICT_UNAVAILABLE:
      return "unavailable";
    default:
      return "none";
  }
}

}  // namespace polnode::contracts
