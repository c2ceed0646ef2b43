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
// A forced round (protocol v5, tolerant mode v7) has two proofs (SolverProofs): at each forced
// checkpoint the solver falsifies the state it reached, commits that, and trains on from it (a new
// branch starts at the falsified state). Exact mode falsifies by replacing the state with another
// one; tolerant mode (Perturbed) by moving the drawn elements of the honest state by +-D
// (consensus/forced_perturbation.h), so the committed state there is the honest one but for those
// elements, as the reveal's PerturbationProof shows. So the committed proof's segment ending at a
// forced checkpoint is wrong, every other one is right, and the result proof (the committed one
// with each forced checkpoint's state replaced by the state training reached there) is what a
// replay from the committed start reaches, segment by segment.
//
// Every checkpoint is a real training state: one float32 tensor ("w", StateDims) whose values
// derive from (task key, branch, index), whose version-2 state hash (consensus/pinpoint.h) is the
// Merkle leaf. So dispute openings carry real Merkle proofs against the committed and result
// roots, forced reveals real leaf paths and real perturbed blocks with their block-tree paths,
// publications real tensors that the contracts hash and check, and a tolerant replay finds the
// elements beyond D / 2 by comparing real values.
#ifndef POLNODE_ECON_PROOF_MODEL_H_
#define POLNODE_ECON_PROOF_MODEL_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "polnode/consensus/forced_perturbation.h"
#include "polnode/consensus/merkle.h"
#include "polnode/contracts.pb.h"

namespace polnode::econ {

using consensus::Hash256;

/// State tensors of every simulated checkpoint.
inline constexpr std::uint32_t kStateTensors = 1;

/// The dims of the one state tensor. Exact mode: 4 values (a replay compares state hashes, so the
/// size changes nothing but the run time, and the exact-mode tables stay what they were).
/// Tolerant mode: 2 x 160, three blocks of the 64 x 64 grid (128, 128 and 64 values), so the
/// consensus::kPerturbedElements elements a forced checkpoint perturbs are a few of many: with 4
/// values every element would be perturbed, and a verifier could name the indices without a replay.
const std::vector<std::int64_t>& StateDims(bool tolerant);

/// A tolerant forced checkpoint's state: the state of branch `honest_branch` there with the
/// elements of `perturbation` moved by consensus::PerturbedValue(value, sign, delta).
struct Perturbed {
  std::uint32_t honest_branch = 0;
  consensus::Perturbation perturbation;
  float delta = 0;
};

class ProofModel {
 public:
  /// A proof of a task identified by `task_key` with checkpoint interval `k` and state tensor
  /// `dims` whose checkpoint c lies on `branches[c]` (S + 1 entries for S segments); the state of
  /// each checkpoint in `perturbed` is that perturbation (its branch names the trajectory training
  /// from it follows).
  ProofModel(std::string task_key, std::uint64_t k, std::vector<std::int64_t> dims, std::vector<std::uint32_t> branches,
             std::map<std::uint64_t, Perturbed> perturbed = {});

  /// The state hash of checkpoint 0 of every proof with checkpoint interval `k` and state tensor
  /// `dims`: the task's initial state (TaskSpec.initial_state_hash).
  static Hash256 InitialStateHash(std::uint64_t k, const std::vector<std::int64_t>& dims);

  std::uint64_t segments() const { return branches_.size() - 1; }
  std::uint32_t branch(std::uint64_t checkpoint) const { return branches_[checkpoint]; }
  bool SegmentRight(std::uint64_t segment) const { return branches_[segment] == branches_[segment + 1]; }

  const Hash256& Leaf(std::uint64_t checkpoint) const { return leaves_[checkpoint]; }
  const Hash256& Root() const { return tree_.root(); }
  /// consensus::SerializeMerkleProof of checkpoint `checkpoint`, as payloads carry it.
  std::string PathOf(std::uint64_t checkpoint) const;
  /// The state an honest replay of segment `segment` from this proof's checkpoint reaches.
  Hash256 ReplayEnd(std::uint64_t segment) const;
  /// The flat state indices, ascending, at which the state an honest replay of `segment` reaches
  /// differs from this proof's checkpoint `segment + 1` by more than `delta` / 2 (NaN differences
  /// count): what a tolerant verifier's digest commits to.
  std::vector<std::uint64_t> ReplayDifferences(std::uint64_t segment, float delta) const;

  /// This proof with checkpoint `checkpoint` moved to `branch` (and no longer perturbed) for each
  /// entry of `moved`.
  ProofModel WithBranches(const std::vector<std::pair<std::uint64_t, std::uint32_t>>& moved) const;

  /// The reveal's proof that checkpoint `checkpoint` is its honest state with exactly its
  /// perturbation (contracts/perturbation.h CheckPerturbationProof): the perturbed block in both
  /// states and its path in the tensor's block tree. Precondition: the checkpoint is perturbed.
  proto::PerturbationProof PerturbationProofOf(std::uint64_t checkpoint) const;

  /// The task/publish transactions that put checkpoint `checkpoint` on the ledger: its header,
  /// then its chunks.
  std::vector<proto::PublishTx> Publication(const std::string& task_id, std::uint64_t checkpoint) const;

 private:
  /// The values of checkpoint `checkpoint`'s state.
  std::vector<float> Values(std::uint64_t checkpoint) const;

  std::string task_key_;
  std::uint64_t k_;
  std::vector<std::int64_t> dims_;
  std::vector<std::uint32_t> branches_;
  std::map<std::uint64_t, Perturbed> perturbed_;
  std::vector<Hash256> leaves_;
  consensus::MerkleTree tree_;
};

/// A solver's two proofs of one task: the committed one (the verify window checks it, games take
/// segment starts from it) and the result one (the reveal shows it, games take segment ends from
/// it and the submitter gets its final state). Outside forced rounds they are the same proof.
struct SolverProofs {
  ProofModel committed;
  ProofModel result;

  /// What a dispute game over `segment` decides: the result end is what the committed start
  /// steps to.
  bool ResultSegmentRight(std::uint64_t segment) const {
    return committed.ReplayEnd(segment) == result.Leaf(segment + 1);
  }
};

/// The proofs of a solver that trains task `task_key` (checkpoint interval `k`, `segments`
/// segments, state tensor `dims`) from checkpoint 0, makes up the state at each checkpoint in
/// `made_up` instead of training the segment before it (a fresh branch), falsifies the state at
/// each checkpoint in `forced` and trains on from the committed state (a fresh branch). A forced
/// checkpoint with an entry in `perturbations` (tolerant mode) is falsified by that perturbation
/// by `delta`, any other one by a fresh state (exact mode). Checkpoints outside 1..segments are
/// ignored.
SolverProofs Train(const std::string& task_key, std::uint64_t k, const std::vector<std::int64_t>& dims,
                   std::uint64_t segments, const std::set<std::uint64_t>& forced,
                   const std::set<std::uint64_t>& made_up,
                   const std::map<std::uint64_t, consensus::Perturbation>& perturbations, float delta);

}  // namespace polnode::econ

#endif  // POLNODE_ECON_PROOF_MODEL_H_
