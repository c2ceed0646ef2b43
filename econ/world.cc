#include "world.h"

#include <algorithm>
#include <map>

#include "polnode/consensus/encoding.h"
#include "polnode/consensus/forced_perturbation.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/forced.h"
#include "polnode/contracts/payloads.h"

namespace polnode::econ {
namespace {

// Branches (proof_model.h) of the made-up states: a garbage trajectory's checkpoints, and the
// random states a garbage solver reveals at its forced checkpoints.
constexpr std::uint32_t kGarbageBase = 0xE000'0000;
constexpr std::uint32_t kRandomBase = 0xD000'0000;

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

std::string DigestOf(const PubKey& party, std::uint64_t segment, const Hash256& state) {
  return Bytes(contracts::SegmentDigest(Raw(party), segment, Bytes(state)));
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
  spec->set_initial_state_hash(
      Bytes(ProofModel::InitialStateHash(config.checkpoint_interval, StateDims(config.tolerant))));
  spec->set_tolerant(config.tolerant);
  if (config.tolerant) spec->set_forced_delta(config.forced_delta);
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

ProofModel World::WithheldProof(const Round& round) const {
  std::vector<std::uint32_t> branches(config_.segments + 1);
  for (std::uint64_t c = 0; c < branches.size(); ++c) branches[c] = kGarbageBase + static_cast<std::uint32_t>(c);
  return ProofModel(round.task_id, config_.checkpoint_interval, StateDims(config_.tolerant), std::move(branches));
}

std::optional<SolverProofs> World::ProofsOf(const Round& round) const {
  const std::uint64_t s = config_.segments;
  const SolverPlay play = SelfDealing() ? SolverPlay::kHonest : spec_.solver;
  std::set<std::uint64_t> made_up;
  switch (play) {
    case SolverPlay::kWithhold:
      return std::nullopt;
    case SolverPlay::kForcedGarbage:
      if (round.forced) {
        // Garbage committed; the result proof differs from it exactly at the forced checkpoints, as
        // the reveal must, with random states there. In tolerant mode the reveal must also prove
        // each committed forced state the perturbation of the revealed one: there the garbage
        // solver commits the perturbation of its random state.
        ProofModel garbage = WithheldProof(round);
        std::vector<std::pair<std::uint64_t, std::uint32_t>> moved;
        for (std::uint64_t c : round.forced_checkpoints) moved.emplace_back(c, kRandomBase + static_cast<std::uint32_t>(c));
        ProofModel result = garbage.WithBranches(moved);
        if (!config_.tolerant) return SolverProofs{std::move(garbage), std::move(result)};
        std::vector<std::uint32_t> branches(config_.segments + 1);
        std::map<std::uint64_t, Perturbed> perturbed;
        for (std::uint64_t c = 0; c < branches.size(); ++c) {
          branches[c] = garbage.branch(c);
          const auto draw = round.perturbations.find(c);
          if (draw == round.perturbations.end()) continue;
          perturbed.emplace(c, Perturbed{result.branch(c), draw->second, config_.forced_delta});
        }
        ProofModel committed(round.task_id, config_.checkpoint_interval, StateDims(true), std::move(branches),
                             std::move(perturbed));
        return SolverProofs{std::move(committed), std::move(result)};
      }
      break;
    case SolverPlay::kFake:
      // The skipped segments: distinct, never the final one (every verifier replays it), drawn
      // from the task id so each task fakes different ones. Skipping segment i makes up checkpoint i + 1.
      for (std::uint64_t counter = 0; made_up.size() < std::min<std::uint64_t>(spec_.faked_segments, s - 1); ++counter) {
        const std::string draw = Tagged("fake", counter, round.task_id);
        std::uint64_t x = 0;
        for (int i = 0; i < 8; ++i) x = (x << 8) | static_cast<unsigned char>(draw[i]);
        made_up.insert(x % (s - 1) + 1);
      }
      break;
    case SolverPlay::kSkipsForced:
      for (std::uint64_t c : round.forced_checkpoints) {
        if (c < s && made_up.size() < spec_.faked_segments) made_up.insert(c);
      }
      break;
    case SolverPlay::kHonest:
      break;
  }
  return Train(round.task_id, config_.checkpoint_interval, StateDims(config_.tolerant), s, round.forced_checkpoints,
               made_up, round.perturbations, config_.forced_delta);
}

std::optional<Hash256> World::Finding(const Round& round, std::uint64_t segment) const {
  const ProofModel& committed = round.proofs->committed;
  if (!config_.tolerant) {
    const Hash256 end = committed.ReplayEnd(segment);
    return end == committed.Leaf(segment + 1) ? std::nullopt : std::optional<Hash256>(end);
  }
  // A modelled replay is exact, so the profiled distances fail a segment only where some element
  // differs, and every element two simulated states differ in differs by more than D / 2: the
  // elements alone decide.
  const std::vector<std::uint64_t> differ = committed.ReplayDifferences(segment, config_.forced_delta);
  if (differ.empty()) return std::nullopt;
  return consensus::PerturbedIndicesHash(differ);
}

Hash256 World::StandIn(const Round& round, std::uint64_t segment) const {
  if (config_.tolerant) return consensus::PerturbedIndicesHash({});
  return round.proofs ? round.proofs->committed.Leaf(segment + 1) : Hash256{};
}

std::vector<std::uint64_t> World::Replay(Round& round, const PubKey& key, const std::set<std::uint64_t>& segments) const {
  // A key drawn for several slots replays a segment they share (the final one at least) once.
  std::set<std::uint64_t>& done = round.replayed[Raw(key)];
  std::vector<std::uint64_t> failed;
  for (std::uint64_t s : segments) {
    Work(round, key).segments_replayed += done.insert(s).second ? 1 : 0;
    if (Finding(round, s)) failed.push_back(s);
  }
  return failed;
}

std::vector<std::string> World::Digests(const Round& round, const PubKey& key,
                                        const std::vector<std::uint64_t>& segments) const {
  std::vector<std::string> digests;
  for (std::uint64_t s : segments) digests.push_back(DigestOf(key, s, *Finding(round, s)));
  return digests;
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
  auto judge = [&](const std::set<std::uint64_t>& segments) {
    const std::vector<std::uint64_t> failed = Replay(round, key, segments);
    for (std::uint64_t s : failed) msg.add_failed_segments(s);
    for (const std::string& d : Digests(round, key, failed)) msg.add_segment_digests(d);
    msg.set_verdict(failed.empty() ? proto::VERDICT_ACCEPT : proto::VERDICT_REJECT);
  };
  switch (play) {
    case VerifierPlay::kAbsent:
      return std::optional<PendingTx>();
    case VerifierPlay::kLazyAccept:
      msg.set_verdict(proto::VERDICT_ACCEPT);
      break;
    case VerifierPlay::kLazyReject:
      msg.set_verdict(proto::VERDICT_REJECT);
      msg.add_failed_segments(final_segment);
      msg.add_segment_digests(DigestOf(key, final_segment, StandIn(round, final_segment)));
      break;
    case VerifierPlay::kFalseUnavailable:
      msg.set_verdict(proto::VERDICT_UNAVAILABLE);
      break;
    case VerifierPlay::kFinalOnly:
    case VerifierPlay::kHonest:
      if (!round.proofs) {
        msg.set_verdict(proto::VERDICT_UNAVAILABLE);
        break;
      }
      if (play == VerifierPlay::kFinalOnly) {
        judge({final_segment});
      } else {
        std::set<std::uint64_t> segments(slot.segments().begin(), slot.segments().end());
        segments.insert(final_segment);
        judge(segments);
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
  if (!round.proofs) return txs;  // a withheld proof cannot be shown
  for (std::uint64_t checkpoint : task.publish_required()) {
    for (const proto::PublishTx& msg : round.proofs->committed.Publication(round.task_id, checkpoint)) {
      txs.push_back(MakeTx(Claimer(), contracts::payload::kPublish, msg));
    }
  }
  return txs;
}

Result<std::vector<PendingTx>> World::Challenges(Round& round, const proto::Task& task) const {
  std::vector<PendingTx> txs;
  const std::uint64_t s = config_.segments;
  const std::uint64_t final_segment = s - 1;
  // The solver disputes the rejects it holds wrong: those naming no segment its proof got wrong.
  // In a forced round it disputes none: the reveal itself sorts catchers from wrong rejecters.
  if (!round.forced) {
    for (int i = 0; i < task.verifiers_size(); ++i) {
      const proto::VerifierSlot& slot = task.verifiers(i);
      if (slot.absent() || slot.verdict() != proto::VERDICT_REJECT || slot.disputed()) continue;
      const bool right = round.proofs && std::any_of(slot.failed_segments().begin(), slot.failed_segments().end(),
                                                      [&](std::uint64_t f) { return Finding(round, f).has_value(); });
      if (right) continue;
      proto::DisputeTx msg;
      msg.set_task_id(round.task_id);
      msg.set_verifier(slot.verifier());
      msg.set_slot(static_cast<std::uint32_t>(i));
      txs.push_back(MakeTx(Claimer(), contracts::payload::kDispute, msg));
    }
  }
  // The public rejects' named segments, each with the first reject's digest of it.
  std::map<std::uint64_t, std::string> named;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (slot.absent() || slot.verdict() != proto::VERDICT_REJECT) continue;
    for (int j = 0; j < slot.failed_segments_size(); ++j) {
      named.emplace(slot.failed_segments(j), j < slot.segment_digests_size() ? slot.segment_digests(j) : std::string());
    }
  }
  const PubKey& key = cast_.whistleblower;
  // Its covered segments, which the ledger draws again when the challenge lands: it cannot pick them.
  const std::vector<std::uint64_t> covered =
      contracts::ChallengeSegments(task.segment_beacon(), Raw(key), s, config_.segments_per_verification);
  proto::DisputeTx challenge;
  challenge.set_task_id(round.task_id);
  auto name = [&](const std::vector<std::uint64_t>& failed, const std::vector<std::string>& digests) {
    for (std::uint64_t f : failed) challenge.add_failed_segments(f);
    for (const std::string& d : digests) challenge.add_segment_digests(d);
  };
  switch (spec_.whistleblower) {
    case WhistleblowerPlay::kHonest:
    case WhistleblowerPlay::kReplaysNamed: {
      if (!round.proofs) break;  // nothing served to check
      std::set<std::uint64_t> replays;
      for (std::uint64_t c : covered) {
        if (spec_.whistleblower == WhistleblowerPlay::kHonest || named.count(c) != 0) replays.insert(c);
      }
      const std::vector<std::uint64_t> failed = Replay(round, key, replays);
      name(failed, Digests(round, key, failed));
      break;
    }
    case WhistleblowerPlay::kNeverChecks:
      break;
    case WhistleblowerPlay::kChallengesAll:
      name({final_segment}, {DigestOf(key, final_segment, StandIn(round, final_segment))});
      break;
    case WhistleblowerPlay::kCopycat: {
      std::vector<std::uint64_t> copied;
      std::vector<std::string> digests;
      for (std::uint64_t c : covered) {
        const auto found = named.find(c);
        if (found == named.end()) continue;
        copied.push_back(c);
        digests.push_back(found->second);
      }
      name(copied, digests);
      break;
    }
  }
  if (challenge.failed_segments_size() > 0) txs.push_back(MakeTx(key, contracts::payload::kDispute, challenge));
  // The owner knows its round is forced, which checkpoints it falsified and the states it trained
  // to there: its whistleblower key names exactly its covered segments ending at forced
  // checkpoints, a catch at no cost (when there is one to name).
  if (SelfDealing() && round.forced) {
    const PubKey& own_key = cast_.owner_whistleblower;
    std::vector<std::uint64_t> failed;
    for (std::uint64_t c : contracts::ChallengeSegments(task.segment_beacon(), Raw(own_key), s,
                                                        config_.segments_per_verification)) {
      if (round.forced_checkpoints.count(c + 1) != 0) failed.push_back(c);
    }
    if (!failed.empty()) {
      round.replayed[Raw(own_key)].insert(failed.begin(), failed.end());
      proto::DisputeTx own;
      own.set_task_id(round.task_id);
      for (std::uint64_t f : failed) own.add_failed_segments(f);
      for (const std::string& d : Digests(round, own_key, failed)) own.add_segment_digests(d);
      txs.push_back(MakeTx(own_key, contracts::payload::kDispute, own));
    }
  }
  return txs;
}

std::optional<PendingTx> World::Reveal(const Round& round, const proto::Task& task) const {
  if (!round.proofs) return std::nullopt;  // a withheld proof has nothing to reveal
  const SolverProofs& proofs = *round.proofs;
  proto::RevealTx msg;
  msg.set_task_id(round.task_id);
  msg.set_secret(round.secret);
  msg.set_result_root(Bytes(proofs.result.Root()));
  if (round.forced) {
    // Exactly the checkpoints the ledger needs: both proofs' leaves there, with their paths, and in
    // tolerant mode, for each forced one among them (ascending, as they are), the proof that its
    // committed state is the revealed one with exactly the drawn perturbation.
    for (std::uint64_t c : contracts::RevealCheckpoints(task)) {
      proto::RevealedLeaf* leaf = msg.add_leaves();
      leaf->set_checkpoint(c);
      leaf->set_committed_hash(Bytes(proofs.committed.Leaf(c)));
      leaf->set_committed_proof(proofs.committed.PathOf(c));
      leaf->set_result_hash(Bytes(proofs.result.Leaf(c)));
      leaf->set_result_proof(proofs.result.PathOf(c));
      if (config_.tolerant && round.forced_checkpoints.count(c) != 0) {
        *msg.add_perturbations() = proofs.committed.PerturbationProofOf(c);
      }
    }
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
  // The segments the challenger named: a key's disputed rejects all stand on one game, a
  // whistleblower's challenge on its own.
  std::set<std::uint64_t> named;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (slot.verifier() == challenger && !slot.absent() && slot.verdict() == proto::VERDICT_REJECT) {
      named.insert(slot.failed_segments().begin(), slot.failed_segments().end());
    }
  }
  for (const proto::Challenge& c : task.challenges()) {
    if (c.challenger() == challenger) named.insert(c.failed_segments().begin(), c.failed_segments().end());
  }
  // It can show only what it knows: a named segment it replayed whose result end is wrong (and
  // nothing of a proof nobody was served).
  if (!round.proofs) return std::optional<PendingTx>();
  const SolverProofs& proofs = *round.proofs;
  const auto known = round.replayed.find(challenger);
  std::optional<std::uint64_t> wrong;
  for (std::uint64_t s : named) {
    if (!wrong && known != round.replayed.end() && known->second.count(s) != 0 && !proofs.ResultSegmentRight(s)) wrong = s;
  }
  // A challenger with nothing true to show forfeits; a right one leaves the wrong solver silent.
  if (!wrong) return std::optional<PendingTx>();
  proto::DisputeMoveTx move;
  move.set_task_id(round.task_id);
  move.set_challenger(challenger);
  move.set_round(game.round());
  if (game.phase() == proto::GAME_OPENING) {
    // The segment's start from the committed proof (the game's start_root), its end from the result
    // proof (proof_root); outside forced rounds they are one proof.
    proto::OpenMove* open = move.mutable_open();
    open->set_segment(*wrong);
    open->set_start_hash(Bytes(proofs.committed.Leaf(*wrong)));
    open->set_start_proof(proofs.committed.PathOf(*wrong));
    open->set_end_hash(Bytes(proofs.result.Leaf(*wrong + 1)));
    open->set_end_proof(proofs.result.PathOf(*wrong + 1));
    open->set_claimed_end_hash(Bytes(proofs.committed.ReplayEnd(*wrong)));
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
  if (round.forced) {
    const std::vector<std::uint64_t> forced = contracts::ForcedCheckpoints(round.secret, task.forced_seed(), round.task_id,
                                                                           config_.segments);
    round.forced_checkpoints.insert(forced.begin(), forced.end());
    if (config_.tolerant) {
      for (std::uint64_t c : forced) {
        round.perturbations.emplace(c, consensus::DrawPerturbation(round.secret, task.forced_seed(), round.task_id, c,
                                                                   StateDims(true)));
      }
    }
  }

  if (SelfDealing() && !round.forced) {
    POLNODE_RETURN_IF_ERROR(chain_.AdvanceTo(task.deadline()));  // abandoned: the commit deadline passes
  } else {
    round.proofs = ProofsOf(round);
    // A trained segment is one whose result end is what training from its committed start reaches.
    // (A garbage trajectory has none.)
    std::uint64_t trained = 0;
    if (round.proofs) {
      for (std::uint64_t i = 0; i < config_.segments; ++i) trained += round.proofs->ResultSegmentRight(i) ? 1 : 0;
    }
    Work(round, Claimer()).segments_trained = trained;
    proto::CommitProofTx commit;
    commit.set_task_id(round.task_id);
    // A withheld proof is a root whose checkpoint 0 opens (the ledger checks that much) and whose
    // other checkpoints nobody can ever fetch.
    const ProofModel committed = round.proofs ? round.proofs->committed : WithheldProof(round);
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
          if (std::optional<PendingTx> reveal = Reveal(round, task)) next.push_back(std::move(*reveal));
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
  round.record.forced_checkpoints.assign(task.forced_checkpoints().begin(), task.forced_checkpoints().end());
  round.record.outcome = task.outcome();
  POLNODE_ASSIGN_OR_RETURN(round.record.jackpot_after, chain_.Jackpot());
  for (const PubKey& key : cast_.All()) {
    POLNODE_ASSIGN_OR_RETURN(std::uint64_t after, chain_.Wealth(key));
    Work(round, key).money += static_cast<std::int64_t>(after) - static_cast<std::int64_t>(before[key]);
  }
  return round.record;
}

}  // namespace polnode::econ
