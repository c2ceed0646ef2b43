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
// Every checkpoint is a real training state: one tensor of kElements float32 values derived from
// (task key, branch, index), whose version-2 state hash (consensus/pinpoint.h) is the Merkle leaf.
// So dispute openings carry real Merkle proofs against the committed root, forced reveals real
// final-leaf paths, and publications real tensors that the contracts hash and check.
#ifndef POLNODE_ECON_PROOF_MODEL_H_
#define POLNODE_ECON_PROOF_MODEL_H_

#include <cstdint>
#include <string>
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

  /// This proof with its final checkpoint moved to `branch`.
  ProofModel WithFinal(std::uint32_t branch) const;

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

}  // namespace polnode::econ

#endif  // POLNODE_ECON_PROOF_MODEL_H_
