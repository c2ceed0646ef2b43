// The proofs of learning the simulator's solvers commit, without training a real model.
//
// Training is modelled as a step function on named trajectories: checkpoint c of trajectory
// ("branch") b steps to checkpoint c + 1 of the same branch. A proof lists, for each of its
// checkpoints 0..S, the branch it lies on; its segment i is right exactly when checkpoints i and
// i + 1 lie on one branch, so a verifier that replays segment i from the proof's checkpoint i
// reaches checkpoint i + 1 of branch[i] and finds the segment wrong iff the proof says otherwise.
// An honest proof stays on branch 0; a solver that skips a segment makes up the next checkpoint (a
// new branch) and trains on from there.
//
// A forced round (protocol v5) has two proofs (SolverProofs): at each forced checkpoint the solver
// falsifies the state it reached (a new branch: the perturbed state), commits that, and trains on
// from it. So the committed proof's segment ending at a forced checkpoint is wrong, every other one
// is right, and the result proof (the committed one with each forced checkpoint's leaf replaced by
// the state training reached there) is what a replay from the committed start reaches, segment by
// segment.
//
// Every checkpoint is a real training state: one tensor of kElements float32 values derived from
// (task key, branch, index), whose version-2 state hash (consensus/pinpoint.h) is the Merkle leaf.
// So dispute openings carry real Merkle proofs against the committed and result roots, forced
// reveals real leaf paths, and publications real tensors that the contracts hash and check.
#ifndef POLNODE_ECON_PROOF_MODEL_H_
#define POLNODE_ECON_PROOF_MODEL_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "polnode/consensus/merkle.h"
#include "polnode/contracts.pb.h"

namespace polnode::econ {

using consensus::Hash256;

/// State tensors of every simulated checkpoint, and the values each holds.
inline constexpr std::uint32_t kStateTensors = 1;
inline constexpr std::int64_t kElements = 4;

class ProofModel {
 public:
  /// A proof of a task identified by `task_key` with checkpoint interval `k` whose checkpoint c
  /// lies on `branches[c]` (S + 1 entries for S segments).
  ProofModel(std::string task_key, std::uint64_t k, std::vector<std::uint32_t> branches);

  /// The state hash of checkpoint 0 of every proof with checkpoint interval `k`: the task's
  /// initial state (TaskSpec.initial_state_hash).
  static Hash256 InitialStateHash(std::uint64_t k);

  std::uint64_t segments() const { return branches_.size() - 1; }
  std::uint32_t branch(std::uint64_t checkpoint) const { return branches_[checkpoint]; }
  bool SegmentRight(std::uint64_t segment) const { return branches_[segment] == branches_[segment + 1]; }

  const Hash256& Leaf(std::uint64_t checkpoint) const { return leaves_[checkpoint]; }
  const Hash256& Root() const { return tree_.root(); }
  /// consensus::SerializeMerkleProof of checkpoint `checkpoint`, as payloads carry it.
  std::string PathOf(std::uint64_t checkpoint) const;
  /// The state an honest replay of segment `segment` from this proof's checkpoint reaches.
  Hash256 ReplayEnd(std::uint64_t segment) const;

  /// This proof with checkpoint `checkpoint` moved to `branch` for each entry of `moved`.
  ProofModel WithBranches(const std::vector<std::pair<std::uint64_t, std::uint32_t>>& moved) const;

  /// The task/publish transactions that put checkpoint `checkpoint` on the ledger: its header,
  /// then its chunks.
  std::vector<proto::PublishTx> Publication(const std::string& task_id, std::uint64_t checkpoint) const;

 private:
  std::string task_key_;
  std::uint64_t k_;
  std::vector<std::uint32_t> branches_;
  std::vector<Hash256> leaves_;
  consensus::MerkleTree tree_;
};

/// A solver's two proofs of one task: the committed one (the verify window checks it, games take
/// segment starts from it) and the result one (the reveal shows it, games take segment ends from
/// it and the submitter gets its final state). Outside forced rounds they are the same proof.
struct SolverProofs {
  ProofModel committed;
  ProofModel result;

  /// What a replay of `segment` from the committed start finds: the committed end is right.
  bool CommittedSegmentRight(std::uint64_t segment) const {
    return committed.ReplayEnd(segment) == committed.Leaf(segment + 1);
  }
  /// What a dispute game over `segment` decides: the result end is what the committed start
  /// steps to.
  bool ResultSegmentRight(std::uint64_t segment) const {
    return committed.ReplayEnd(segment) == result.Leaf(segment + 1);
  }
};

/// The proofs of a solver that trains task `task_key` (checkpoint interval `k`, `segments`
/// segments) from checkpoint 0, makes up the state at each checkpoint in `made_up` instead of
/// training the segment before it (a fresh branch), falsifies the state at each checkpoint in
/// `forced` (a fresh branch) and trains on from the committed state. Checkpoints outside
/// 1..segments in either set are ignored.
SolverProofs Train(const std::string& task_key, std::uint64_t k, std::uint64_t segments,
                   const std::set<std::uint64_t>& forced, const std::set<std::uint64_t>& made_up);

}  // namespace polnode::econ

#endif  // POLNODE_ECON_PROOF_MODEL_H_
