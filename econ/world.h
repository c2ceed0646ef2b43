// One simulated world: the cast of simulator.h on a SimChain, and the driver that takes one task
// from submission to settlement with every actor acting on what the chain shows it.
#ifndef POLNODE_ECON_WORLD_H_
#define POLNODE_ECON_WORLD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "polnode/econ/simulator.h"
#include "proof_model.h"
#include "sim_chain.h"

namespace polnode::econ {

/// The operator's keys are funded in every world (the genesis is shared); WorldSpec uses up to this many.
inline constexpr std::uint32_t kMaxOperatorKeys = 8;

/// The keys of the cast (simulator.h). Keys are 32 copies of one byte; the contracts never check
/// that a key is a curve point.
struct Cast {
  Cast(std::uint32_t verifier_count, std::uint32_t operator_count);
  /// Every key, for the genesis allocations.
  std::vector<PubKey> All() const;

  PubKey submitter;
  PubKey solver;
  PubKey whistleblower;
  std::vector<PubKey> verifiers;  // verifiers[0] varies its play
  PubKey owner_submitter;
  PubKey owner_solver;
  PubKey owner_whistleblower;
  std::vector<PubKey> operators;
};

class World {
 public:
  World(SimChain chain, const SimConfig& config, const WorldSpec& spec);

  /// Runs task number `index` (which names its epoch, spec and secret) to its end.
  [[nodiscard]] Result<TaskRecord> RunTask(std::uint64_t index);

  /// The chain as the tasks left it.
  SimChain TakeChain() && { return std::move(chain_); }

 private:
  // What the current task's actors know and did.
  struct Round {
    std::string task_id;
    std::string secret;
    bool forced = false;
    std::set<std::uint64_t> forced_checkpoints;  // beacon.h ForcedCheckpoints, in a forced round
    // Tolerant mode, in a forced round: consensus::DrawPerturbation of each forced checkpoint.
    std::map<std::uint64_t, consensus::Perturbation> perturbations;
    std::optional<SolverProofs> proofs;          // empty for a withheld proof
    // The segments whose replayed end each key (raw bytes) knows, over all the slots it holds: what
    // it replayed, or for the owner's whistleblower key what its solver key trained. Only a named
    // segment in this set can be shown wrong in a game.
    std::map<std::string, std::set<std::uint64_t>> replayed;
    bool challenged = false;
    bool revealed = false;
    TaskRecord record;
  };

  [[nodiscard]] Status TopUps(std::vector<PendingTx>& txs) const;
  [[nodiscard]] Status TopUp(proto::Role role, const PubKey& key, std::uint64_t target,
                             std::vector<PendingTx>& txs) const;
  Party PartyOf(const PubKey& key) const;
  PartyTask& Work(Round& round, const PubKey& key) const;
  bool SelfDealing() const { return spec_.self_dealing; }
  const PubKey& Poster() const { return SelfDealing() ? cast_.owner_submitter : cast_.submitter; }
  const PubKey& Claimer() const { return SelfDealing() ? cast_.owner_solver : cast_.solver; }

  /// The proofs the round's solver commits and reveals (proof_model.h), or nothing for a withheld proof.
  std::optional<SolverProofs> ProofsOf(const Round& round) const;
  /// The proof a withholding solver commits to: garbage past checkpoint 0, never served.
  ProofModel WithheldProof(const Round& round) const;
  /// What a replay of `segment` from the committed proof finds wrong, as a segment digest commits
  /// to it: nothing when the replayed end agrees with the committed one; otherwise the replayed
  /// end's state hash (exact mode) or consensus::PerturbedIndicesHash of the elements where they
  /// differ by more than forced_delta / 2 (tolerant mode). Precondition: the round has proofs.
  std::optional<Hash256> Finding(const Round& round, std::uint64_t segment) const;
  /// What a party that names a segment failed without replaying it puts in its digest: the proof's
  /// own end state stands in for a replay's, whose hash (exact mode) is the committed leaf and
  /// whose differences from the committed end (tolerant mode) are none.
  Hash256 StandIn(const Round& round, std::uint64_t segment) const;
  /// Replays `segments` from the committed proof for `key` (each segment a key already replayed
  /// costs nothing again) and returns those whose replay finds something wrong (Finding).
  std::vector<std::uint64_t> Replay(Round& round, const PubKey& key, const std::set<std::uint64_t>& segments) const;
  /// SegmentDigest(key, segment, Finding of the segment), for each of `segments`. Precondition:
  /// the round has proofs and each of the segments failed its replay.
  std::vector<std::string> Digests(const Round& round, const PubKey& key, const std::vector<std::uint64_t>& segments) const;
  [[nodiscard]] Result<std::vector<PendingTx>> Verdicts(Round& round, const proto::Task& task) const;
  /// The verdict on slot `index` of `task`, or nothing for an absent verifier.
  [[nodiscard]] Result<std::optional<PendingTx>> Verdict(Round& round, const proto::Task& task, std::uint32_t index) const;
  std::vector<PendingTx> Publications(const Round& round, const proto::Task& task) const;
  [[nodiscard]] Result<std::vector<PendingTx>> Challenges(Round& round, const proto::Task& task) const;
  std::optional<PendingTx> Reveal(const Round& round, const proto::Task& task) const;
  /// One step of the running dispute game: the move a right challenger owes, or nothing.
  [[nodiscard]] Result<std::optional<PendingTx>> GameMove(const Round& round, const proto::Task& task,
                                                          std::uint64_t& deadline) const;

  SimChain chain_;
  SimConfig config_;
  WorldSpec spec_;
  Cast cast_;
  TaskMoney money_;
};

}  // namespace polnode::econ

#endif  // POLNODE_ECON_WORLD_H_
