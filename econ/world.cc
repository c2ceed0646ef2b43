#include "world.h"

#include <algorithm>
#include <map>

#include "polnode/consensus/encoding.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/payloads.h"

namespace polnode::econ {
namespace {

// Branches (proof_model.h) of the made-up states: a forced round's wrong final checkpoint, a
// garbage trajectory's checkpoints, a random "honest" final state.
constexpr std::uint32_t kGarbageFinal = 0xF000'0000;
constexpr std::uint32_t kGarbageBase = 0xE000'0000;
constexpr std::uint32_t kRandomFinal = 0xD000'0000;

// The slot index the honest whistleblower draws its own segments for (beacon.h DrawSegments): no
// task has that many slots, so the draw is independent of every verifier's.
constexpr std::uint32_t kWhistleblowerDraw = 0xFFFF'FFFF;

// Blocks after which a task that has not closed is a simulator bug (every window is tens of blocks).
constexpr std::uint64_t kMaxTaskBlocks = 20'000;

PubKey KeyFilled(std::uint8_t n) {
  PubKey key;
  key.fill(n);
  return key;
}

std::string Bytes(const Hash256& h) { return {reinterpret_cast<const char*>(h.data()), h.size()}; }

std::string Tagged(std::string_view tag, std::uint64_t seed, std::string_view more) {
  consensus::HashWriter w;
  w.String("polnode/econ/");
  w.String(tag);
  w.U64(seed);
  w.String(more);
  return Bytes(w.Finalize());
}

std::string FinalDigestOf(const PubKey& verifier, const Hash256& state) {
  return Bytes(contracts::FinalDigest(Raw(verifier), Bytes(state)));
}

bool Contains(const std::vector<PubKey>& keys, const PubKey& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

proto::SubmitTaskTx Submission(const SimConfig& config, std::uint64_t index) {
  proto::SubmitTaskTx msg;
  proto::TaskSpec* spec = msg.mutable_spec();
  spec->set_model_spec("econ-sim");
  // A fresh data set hash per task: a spec is trained once (tasks.h), so each task needs its own.
  spec->set_dataset_hash(Tagged("dataset", config.seed, std::to_string(index)));
  spec->set_hyperparameters_hash(Tagged("hyperparameters", config.seed, ""));
  spec->set_total_steps(config.segments * config.checkpoint_interval);
  spec->set_checkpoint_interval(config.checkpoint_interval);
  spec->set_segments_per_verification(config.segments_per_verification);
  spec->set_payment(config.payment);
  spec->set_claim_window(std::min<std::uint64_t>(10, config.params.max_claim_window()));
  // Long enough to commit after the forced-error seed; an abandoned claim waits this long.
  spec->set_training_window(std::min(config.params.max_training_window(), 2 * config.params.beacon_delay() + 8));
  spec->set_graph_root(Tagged("graph", config.seed, ""));
  spec->set_batch_root(Tagged("batch", config.seed, ""));
  spec->set_step_leaf_count(kStateTensors + 4);
  spec->set_state_tensor_count(kStateTensors);
  spec->set_initial_state_hash(Bytes(ProofModel::InitialStateHash(config.checkpoint_interval)));
  msg.set_spec_uri("sim://task/" + std::to_string(index));
  return msg;
}

}  // namespace

Cast::Cast(std::uint32_t verifier_count, std::uint32_t operator_count)
    : submitter(KeyFilled(0x01)),
      solver(KeyFilled(0x02)),
      whistleblower(KeyFilled(0x03)),
      owner_submitter(KeyFilled(0x20)),
      owner_solver(KeyFilled(0x21)),
      owner_whistleblower(KeyFilled(0x22)) {
  for (std::uint32_t i = 0; i < verifier_count; ++i) verifiers.push_back(KeyFilled(static_cast<std::uint8_t>(0x40 + i)));
  for (std::uint32_t j = 0; j < operator_count; ++j) operators.push_back(KeyFilled(static_cast<std::uint8_t>(0x30 + j)));
}

std::vector<PubKey> Cast::All() const {
  std::vector<PubKey> all = {submitter, solver, whistleblower, owner_submitter, owner_solver, owner_whistleblower};
  all.insert(all.end(), verifiers.begin(), verifiers.end());
  all.insert(all.end(), operators.begin(), operators.end());
  return all;
}

World::World(SimChain chain, const SimConfig& config, const WorldSpec& spec)
    : chain_(std::move(chain)),
      config_(config),
      spec_(spec),
      cast_(config.params.verifiers_per_task(), kMaxOperatorKeys),
      money_(MoneyOf(config.params, config.payment)) {}

Status World::TopUp(proto::Role role, const PubKey& key, std::uint64_t target, std::vector<PendingTx>& txs) const {
  POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, chain_.Stake(role, key));
  if (stake.bonded() >= target) return Status::Ok();
  proto::StakeTx msg;
  msg.set_role(role);
  msg.set_amount(target - stake.bonded());
  txs.push_back(MakeTx(key, contracts::payload::kStake, msg));
  return Status::Ok();
}

Status World::TopUps(std::vector<PendingTx>& txs) const {
  POLNODE_RETURN_IF_ERROR(TopUp(proto::ROLE_SOLVER, Claimer(), money_.solver_lock, txs));
  for (const PubKey& v : cast_.verifiers) POLNODE_RETURN_IF_ERROR(TopUp(proto::ROLE_VERIFIER, v, money_.verifier_lock, txs));
  POLNODE_RETURN_IF_ERROR(TopUp(proto::ROLE_WHISTLEBLOWER, cast_.whistleblower, money_.whistleblower_lock, txs));
  if (SelfDealing()) {
    POLNODE_RETURN_IF_ERROR(
        TopUp(proto::ROLE_WHISTLEBLOWER, cast_.owner_whistleblower, money_.whistleblower_lock, txs));
  }
  if (spec_.operator_keys > 0) {
    const std::uint64_t per_key = spec_.operator_locks / spec_.operator_keys * money_.verifier_lock;
    for (std::uint32_t j = 0; j < spec_.operator_keys; ++j) {
      POLNODE_RETURN_IF_ERROR(TopUp(proto::ROLE_VERIFIER, cast_.operators[j], per_key, txs));
    }
  }
  return Status::Ok();
}

Party World::PartyOf(const PubKey& key) const {
  if (key == cast_.submitter) return Party::kSubmitter;
  if (key == cast_.solver) return Party::kSolver;
  if (key == cast_.whistleblower) return Party::kWhistleblower;
  if (key == cast_.verifiers[0]) return Party::kVerifier;
  if (Contains(cast_.verifiers, key)) return Party::kOtherVerifiers;
  if (Contains(cast_.operators, key)) return Party::kOperator;
  return Party::kOwner;
}

PartyTask& World::Work(Round& round, const PubKey& key) const {
  return round.record.parties[static_cast<std::size_t>(PartyOf(key))];
}

ProofModel World::HonestProof(const Round& round) const {
  return ProofModel(round.task_id, config_.checkpoint_interval, std::vector<std::uint32_t>(config_.segments + 1, 0));
}

ProofModel World::WithheldProof(const Round& round) const {
  std::vector<std::uint32_t> branches(config_.segments + 1);
  for (std::uint64_t c = 0; c < branches.size(); ++c) branches[c] = kGarbageBase + static_cast<std::uint32_t>(c);
  return ProofModel(round.task_id, config_.checkpoint_interval, std::move(branches));
}

std::optional<ProofModel> World::CommittedProof(const Round& round) const {
  const std::uint64_t s = config_.segments;
  const SolverPlay play = SelfDealing() ? SolverPlay::kHonest : spec_.solver;
  switch (play) {
    case SolverPlay::kWithhold:
      return std::nullopt;
    case SolverPlay::kForcedGarbage:
      if (round.forced) return WithheldProof(round);
      break;
    case SolverPlay::kFake: {
      // The skipped segments: distinct, never the final one (every verifier replays it), drawn
      // from the task id so each task fakes different ones.
      std::vector<std::uint64_t> skipped;
      for (std::uint64_t counter = 0; skipped.size() < std::min<std::uint64_t>(spec_.faked_segments, s - 1); ++counter) {
        const std::string draw = Tagged("fake", counter, round.task_id);
        std::uint64_t x = 0;
        for (int i = 0; i < 8; ++i) x = (x << 8) | static_cast<unsigned char>(draw[i]);
        const std::uint64_t segment = x % (s - 1);
        if (std::find(skipped.begin(), skipped.end(), segment) == skipped.end()) skipped.push_back(segment);
      }
      std::vector<std::uint32_t> branches(s + 1, 0);
      for (std::uint64_t c = 1; c <= s; ++c) {
        const bool made_up = std::find(skipped.begin(), skipped.end(), c - 1) != skipped.end();
        branches[c] = branches[c - 1] + (made_up ? 1 : 0);
      }
      ProofModel proof(round.task_id, config_.checkpoint_interval, std::move(branches));
      return round.forced ? proof.WithFinal(kGarbageFinal) : proof;
    }
    case SolverPlay::kHonest:
      break;
  }
  ProofModel honest = HonestProof(round);
  return round.forced ? honest.WithFinal(kGarbageFinal) : honest;
}

Result<std::optional<PendingTx>> World::Verdict(Round& round, const proto::Task& task, std::uint32_t index) const {
  const proto::VerifierSlot& slot = task.verifiers(static_cast<int>(index));
  const PubKey key = KeyOf(slot.verifier());
  VerifierPlay play = key == cast_.verifiers[0] ? spec_.verifier : VerifierPlay::kHonest;
  if (play == VerifierPlay::kFalseUnavailable && slot.published()) play = VerifierPlay::kHonest;
  const std::uint64_t final_segment = config_.segments - 1;
  proto::VerdictTx msg;
  msg.set_task_id(round.task_id);
  msg.set_slot(index);
  msg.set_report_hash(Tagged("report", config_.seed, slot.verifier()));
  const Hash256 nothing{};
  auto replay = [&](std::set<std::uint64_t> segments) {
    // A key drawn for several slots replays a segment they share (the final one at least) once.
    std::set<std::uint64_t>& done = round.replayed[slot.verifier()];
    for (std::uint64_t s : segments) Work(round, key).segments_replayed += done.insert(s).second ? 1 : 0;
    for (std::uint64_t s : segments) {
      if (!round.committed->SegmentRight(s)) msg.add_failed_segments(s);
    }
    msg.set_verdict(msg.failed_segments().empty() ? proto::VERDICT_ACCEPT : proto::VERDICT_REJECT);
    msg.set_final_digest(FinalDigestOf(key, round.committed->ReplayEnd(final_segment)));
  };
  switch (play) {
    case VerifierPlay::kAbsent:
      return std::optional<PendingTx>();
    case VerifierPlay::kLazyAccept:
      // The proof's own final checkpoint is the cheapest stand-in for a replay.
      msg.set_verdict(proto::VERDICT_ACCEPT);
      msg.set_final_digest(FinalDigestOf(key, round.committed ? round.committed->Leaf(config_.segments) : nothing));
      break;
    case VerifierPlay::kLazyReject:
      msg.set_verdict(proto::VERDICT_REJECT);
      msg.add_failed_segments(final_segment);
      msg.set_final_digest(FinalDigestOf(key, nothing));
      break;
    case VerifierPlay::kFalseUnavailable:
      msg.set_verdict(proto::VERDICT_UNAVAILABLE);
      break;
    case VerifierPlay::kFinalOnly:
    case VerifierPlay::kHonest:
      if (!round.committed) {
        msg.set_verdict(proto::VERDICT_UNAVAILABLE);
        break;
      }
      if (play == VerifierPlay::kFinalOnly) {
        replay({final_segment});
      } else {
        std::set<std::uint64_t> segments(slot.segments().begin(), slot.segments().end());
        segments.insert(final_segment);
        replay(std::move(segments));
      }
      break;
  }
  return std::optional<PendingTx>(MakeTx(key, contracts::payload::kVerdict, msg));
}

Result<std::vector<PendingTx>> World::Verdicts(Round& round, const proto::Task& task) const {
  std::vector<PendingTx> txs;
  for (int i = 0; i < task.verifiers_size(); ++i) {
    const proto::VerifierSlot& slot = task.verifiers(i);
    if (slot.absent() || slot.verdict() != proto::VERDICT_NONE) continue;
    POLNODE_ASSIGN_OR_RETURN(std::optional<PendingTx> tx, Verdict(round, task, static_cast<std::uint32_t>(i)));
    if (tx) txs.push_back(std::move(*tx));
  }
  return txs;
}

std::vector<PendingTx> World::Publications(const Round& round, const proto::Task& task) const {
  std::vector<PendingTx> txs;
  if (!round.committed) return txs;  // a withheld proof cannot be shown
  for (std::uint64_t checkpoint : task.publish_required()) {
    for (const proto::PublishTx& msg : round.committed->Publication(round.task_id, checkpoint)) {
      txs.push_back(MakeTx(Claimer(), contracts::payload::kPublish, msg));
    }
  }
  return txs;
}

Result<std::vector<PendingTx>> World::Challenges(Round& round, const proto::Task& task) const {
  std::vector<PendingTx> txs;
  const std::uint64_t final_segment = config_.segments - 1;
  // The solver disputes the rejects it holds wrong: those naming no segment its proof got wrong.
  // In a forced round it disputes none: the reveal itself sorts catchers from wrong rejecters.
  if (!round.forced) {
    for (int i = 0; i < task.verifiers_size(); ++i) {
      const proto::VerifierSlot& slot = task.verifiers(i);
      if (slot.absent() || slot.verdict() != proto::VERDICT_REJECT || slot.disputed()) continue;
      const bool right = round.committed && std::any_of(slot.failed_segments().begin(), slot.failed_segments().end(),
                                                         [&](std::uint64_t s) { return !round.committed->SegmentRight(s); });
      if (right) continue;
      proto::DisputeTx msg;
      msg.set_task_id(round.task_id);
      msg.set_verifier(slot.verifier());
      msg.set_slot(static_cast<std::uint32_t>(i));
      txs.push_back(MakeTx(Claimer(), contracts::payload::kDispute, msg));
    }
  }
  proto::DisputeTx challenge;
  challenge.set_task_id(round.task_id);
  // A challenge commits to the final state the whistleblower's replay reached; one that did not
  // replay can only offer the proof's own final checkpoint (what a lazy accept offers).
  const Hash256 nothing{};
  challenge.set_final_digest(
      FinalDigestOf(cast_.whistleblower, round.committed ? round.committed->Leaf(config_.segments) : nothing));
  bool challenges = false;
  switch (spec_.whistleblower) {
    case WhistleblowerPlay::kHonest: {
      if (!round.committed) break;  // nothing served to check
      // A draw of its own, independent of every slot's: the index no slot holds.
      const std::vector<std::uint64_t> drawn = contracts::DrawSegments(
          task.segment_beacon(), kWhistleblowerDraw, config_.segments, config_.segments_per_verification);
      std::set<std::uint64_t> segments(drawn.begin(), drawn.end());
      segments.insert(final_segment);
      Work(round, cast_.whistleblower).segments_replayed += segments.size();
      for (std::uint64_t s : segments) {
        if (!round.committed->SegmentRight(s)) round.whistleblower_failures.push_back(s);
      }
      challenge.set_final_digest(FinalDigestOf(cast_.whistleblower, round.committed->ReplayEnd(final_segment)));
      challenges = !round.whistleblower_failures.empty();
      break;
    }
    case WhistleblowerPlay::kNeverChecks:
      break;
    case WhistleblowerPlay::kChallengesAll:
      challenges = true;
      break;
    case WhistleblowerPlay::kCopycat:
      challenges = std::any_of(task.verifiers().begin(), task.verifiers().end(), [](const proto::VerifierSlot& s) {
        return !s.absent() && s.verdict() == proto::VERDICT_REJECT;
      });
      break;
  }
  if (challenges) txs.push_back(MakeTx(cast_.whistleblower, contracts::payload::kDispute, challenge));
  // The owner knows its round is forced, and the honest final state: its whistleblower key is a
  // catcher at no cost.
  if (SelfDealing() && round.forced) {
    proto::DisputeTx own = challenge;
    own.set_final_digest(FinalDigestOf(cast_.owner_whistleblower, round.committed->ReplayEnd(final_segment)));
    txs.push_back(MakeTx(cast_.owner_whistleblower, contracts::payload::kDispute, own));
  }
  return txs;
}

std::optional<PendingTx> World::Reveal(Round& round) const {
  if (!round.committed) return std::nullopt;  // a withheld proof has nothing to reveal
  const std::uint64_t s = config_.segments;
  proto::RevealTx msg;
  msg.set_task_id(round.task_id);
  msg.set_secret(round.secret);
  if (!round.forced) {
    msg.set_result_root(Bytes(round.committed->Root()));
    round.trial = round.committed;
  } else {
    // The honest final state continues checkpoint S-1's trajectory; garbage has none to continue.
    const bool garbage = !SelfDealing() && spec_.solver == SolverPlay::kForcedGarbage;
    const std::uint32_t final_branch = garbage ? kRandomFinal : round.committed->branch(s - 1);
    round.trial = round.committed->WithFinal(final_branch);
    msg.set_result_root(Bytes(round.trial->Root()));
    msg.set_committed_final(Bytes(round.committed->Leaf(s)));
    msg.set_honest_final(Bytes(round.trial->Leaf(s)));
    msg.set_final_proof(round.committed->PathOf(s));
  }
  return MakeTx(Claimer(), contracts::payload::kReveal, msg);
}

Result<std::optional<PendingTx>> World::GameMove(const Round& round, const proto::Task& task,
                                                 std::uint64_t& deadline) const {
  // The running game is the first claim without a result (dispute_game.h plays them in order).
  std::string challenger;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (challenger.empty() && !slot.absent() && slot.verdict() == proto::VERDICT_REJECT && slot.disputed() &&
        slot.game_result() == proto::GAME_RESULT_NONE) {
      challenger = slot.verifier();
    }
  }
  for (const proto::Challenge& c : task.challenges()) {
    if (challenger.empty() && !c.caught() && c.game_result() == proto::GAME_RESULT_NONE) challenger = c.challenger();
  }
  if (challenger.empty()) return Status::Internal("a disputed task has no running game");
  POLNODE_ASSIGN_OR_RETURN(proto::DisputeGame game, chain_.Game(round.task_id, challenger));
  deadline = game.deadline();
  // What the challenger knows to be wrong: the failures its own replays found.
  std::vector<std::uint64_t> known;
  if (challenger == Raw(cast_.whistleblower)) {
    known = round.whistleblower_failures;
  } else if (round.replayed.count(challenger) != 0) {
    // One game stands for all of the key's disputed rejects: it knows every failure they name.
    for (const proto::VerifierSlot& slot : task.verifiers()) {
      if (slot.verifier() == challenger && !slot.absent()) {
        known.insert(known.end(), slot.failed_segments().begin(), slot.failed_segments().end());
      }
    }
  }
  const ProofModel& trial = *round.trial;
  const auto wrong = std::find_if(known.begin(), known.end(), [&](std::uint64_t s) { return !trial.SegmentRight(s); });
  // A challenger with nothing true to show forfeits; a right one leaves the wrong solver silent.
  if (wrong == known.end()) return std::optional<PendingTx>();
  proto::DisputeMoveTx move;
  move.set_task_id(round.task_id);
  move.set_challenger(challenger);
  move.set_round(game.round());
  if (game.phase() == proto::GAME_OPENING) {
    proto::OpenMove* open = move.mutable_open();
    open->set_segment(*wrong);
    open->set_start_hash(Bytes(trial.Leaf(*wrong)));
    open->set_start_proof(trial.PathOf(*wrong));
    open->set_end_hash(Bytes(trial.Leaf(*wrong + 1)));
    open->set_end_proof(trial.PathOf(*wrong + 1));
    open->set_claimed_end_hash(Bytes(trial.ReplayEnd(*wrong)));
  } else if (game.phase() == proto::GAME_STEPS && !game.challenger().moved()) {
    move.mutable_step()->set_state_hash(Tagged("midpoint", game.round(), round.task_id));
  } else {
    return std::optional<PendingTx>();
  }
  return std::optional<PendingTx>(MakeTx(KeyOf(challenger), contracts::payload::kDisputeMove, move));
}

Result<TaskRecord> World::RunTask(std::uint64_t index) {
  Round round;
  std::map<PubKey, std::uint64_t> before;
  for (const PubKey& key : cast_.All()) {
    POLNODE_ASSIGN_OR_RETURN(before[key], chain_.Wealth(key));
  }
  chain_.StartEpoch(index);
  const std::uint64_t start = chain_.height();

  // Block 1: the task posted (with the first stakes, in a world's first task).
  const proto::SubmitTaskTx submission = Submission(config_, index);
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t poster_nonce, chain_.Nonce(Poster()));
  std::vector<PendingTx> txs;
  POLNODE_RETURN_IF_ERROR(TopUps(txs));
  txs.push_back(MakeTx(Poster(), contracts::payload::kSubmitTask, submission));
  POLNODE_RETURN_IF_ERROR(chain_.Block(txs));
  round.task_id = Bytes(contracts::TaskIdFor(contracts::TaskSpecHash(submission.spec()), Raw(Poster()), poster_nonce));

  // Block 2: the claim; the forced-error seed follows beacon_delay blocks later.
  round.secret = Tagged("secret", config_.seed, std::to_string(index));
  proto::ClaimTaskTx claim;
  claim.set_task_id(round.task_id);
  claim.set_secret_commitment(Bytes(contracts::SecretCommitment(round.secret)));
  POLNODE_RETURN_IF_ERROR(chain_.Block({MakeTx(Claimer(), contracts::payload::kClaimTask, claim)}));
  POLNODE_ASSIGN_OR_RETURN(proto::Task task, chain_.Task(round.task_id));
  if (task.solver_lock() != money_.solver_lock) {
    return Status::Internal("the contracts locked " + std::to_string(task.solver_lock()) + " of solver stake, MoneyOf says " +
                            std::to_string(money_.solver_lock));
  }
  POLNODE_RETURN_IF_ERROR(chain_.AdvanceTo(task.claim_height() + config_.params.beacon_delay()));
  POLNODE_ASSIGN_OR_RETURN(task, chain_.Task(round.task_id));
  round.forced = contracts::IsForcedError(round.secret, task.forced_seed(), round.task_id, config_.params.forced_error_rate());

  if (SelfDealing() && !round.forced) {
    POLNODE_RETURN_IF_ERROR(chain_.AdvanceTo(task.deadline()));  // abandoned: the commit deadline passes
  } else {
    round.committed = CommittedProof(round);
    const SolverPlay play = SelfDealing() ? SolverPlay::kHonest : spec_.solver;
    std::uint64_t trained = config_.segments;
    if (play == SolverPlay::kWithhold || (play == SolverPlay::kForcedGarbage && round.forced)) trained = 0;
    if (play == SolverPlay::kFake) trained -= std::min<std::uint64_t>(spec_.faked_segments, config_.segments - 1);
    Work(round, Claimer()).segments_trained = trained;
    proto::CommitProofTx commit;
    commit.set_task_id(round.task_id);
    // A withheld proof is a root whose checkpoint 0 opens (the ledger checks that much) and whose
    // other checkpoints nobody can ever fetch.
    const ProofModel committed = round.committed ? *round.committed : WithheldProof(round);
    commit.set_proof_root(Bytes(committed.Root()));
    commit.set_initial_proof(committed.PathOf(0));
    commit.set_proof_uri("sim://proof");
    POLNODE_RETURN_IF_ERROR(chain_.Block({MakeTx(Claimer(), contracts::payload::kCommitProof, commit)}));
    POLNODE_RETURN_IF_ERROR(chain_.AdvanceTo(chain_.height() + config_.params.beacon_delay()));
  }

  POLNODE_ASSIGN_OR_RETURN(task, chain_.Task(round.task_id));
  while (task.status() != proto::TASK_SETTLED && task.status() != proto::TASK_CANCELLED) {
    if (chain_.height() - start > kMaxTaskBlocks) return Status::Internal("task " + std::to_string(index) + " never closed");
    std::vector<PendingTx> next;
    std::uint64_t wait_until = task.deadline();
    switch (task.status()) {
      case proto::TASK_VERIFYING: {
        for (const proto::VerifierSlot& slot : task.verifiers()) {
          if (slot.lock() != money_.verifier_lock) return Status::Internal("a verifier slot locks another amount than MoneyOf");
        }
        POLNODE_ASSIGN_OR_RETURN(next, Verdicts(round, task));
        break;
      }
      case proto::TASK_PUBLISHING:
        next = Publications(round, task);
        break;
      case proto::TASK_CHALLENGE:
        if (!round.challenged) {
          round.challenged = true;
          POLNODE_ASSIGN_OR_RETURN(next, Challenges(round, task));
        }
        break;
      case proto::TASK_REVEALING:
        if (!round.revealed) {
          round.revealed = true;
          if (std::optional<PendingTx> reveal = Reveal(round)) next.push_back(std::move(*reveal));
        }
        break;
      case proto::TASK_DISPUTED: {
        POLNODE_ASSIGN_OR_RETURN(std::optional<PendingTx> move, GameMove(round, task, wait_until));
        if (move) next.push_back(std::move(*move));
        break;
      }
      default:
        return Status::Internal("task " + std::to_string(index) + " stuck in status " +
                                proto::TaskStatus_Name(task.status()));
    }
    if (!next.empty()) {
      POLNODE_RETURN_IF_ERROR(chain_.Block(next));
    } else {
      POLNODE_RETURN_IF_ERROR(chain_.AdvanceTo(std::max(wait_until, chain_.height() + 1)));
    }
    POLNODE_ASSIGN_OR_RETURN(task, chain_.Task(round.task_id));
  }

  // A slashed actor stakes again now, so what coming back costs counts against the task that
  // slashed it, and the next task finds every lock available.
  std::vector<PendingTx> restake;
  POLNODE_RETURN_IF_ERROR(TopUps(restake));
  if (!restake.empty()) POLNODE_RETURN_IF_ERROR(chain_.Block(restake));

  for (const proto::Challenge& challenge : task.challenges()) {
    if (challenge.lock() != money_.whistleblower_lock) return Status::Internal("a challenge locks another amount than MoneyOf");
  }
  round.record.forced = round.forced;
  round.record.outcome = task.outcome();
  POLNODE_ASSIGN_OR_RETURN(round.record.jackpot_after, chain_.Jackpot());
  for (const PubKey& key : cast_.All()) {
    POLNODE_ASSIGN_OR_RETURN(std::uint64_t after, chain_.Wealth(key));
    Work(round, key).money += static_cast<std::int64_t>(after) - static_cast<std::int64_t>(before[key]);
  }
  return round.record;
}

}  // namespace polnode::econ
