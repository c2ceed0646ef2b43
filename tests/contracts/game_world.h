// A tiny deterministic "model" whose steps the contracts' dispute game can be played over without
// the solver: state {w [2,2], b [2]}, one step = two operators,
//   node 0 "add" = BiasAdd(w, b), node 1 "relu" = Relu(node 0) -> the new w; b is unchanged.
// Leaves of a step (dispute.proto): 0 w, 1 b, 2 images, 3 labels, 4 add, 5 relu, 6 state after.
// A trajectory may be tampered: at one global step one node's output element 0 gets +1, and every
// later state follows from the wrong value (a cheating solver's self-consistent proof).
#ifndef POLNODE_TESTS_CONTRACTS_GAME_WORLD_H_
#define POLNODE_TESTS_CONTRACTS_GAME_WORLD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "polnode/consensus/game_tree.h"
#include "polnode/contracts.pb.h"
#include "polnode/dispute.pb.h"
#include "polnode/kernels/tensor.h"

namespace polnode::contracts::testing {

struct Tamper {
  std::uint64_t step = 0;  // the global step (completed steps before it) whose node is wrong
  int node = 0;            // 0 add, 1 relu
};

struct WorldState {
  kernels::Tensor w;
  kernels::Tensor b;
};

class GameWorld {
 public:
  static constexpr std::uint64_t kStateTensors = 2;
  static constexpr std::uint64_t kLeaves = 7;

  GameWorld(std::uint64_t checkpoint_interval, std::uint64_t segments);

  std::uint64_t k() const { return k_; }
  std::uint64_t total_steps() const { return k_ * segments_; }

  /// The task spec fields the game needs (roots, counts, steps, k); the rest is TaskSubmission's.
  proto::TaskSpec Spec() const;

  /// States 0..total_steps of the trajectory with `tamper` (none: the honest one).
  std::vector<WorldState> Trajectory(const std::optional<Tamper>& tamper) const;

  /// The v2 state hash of `state` after `step` completed steps.
  consensus::Hash256 StateHash(const WorldState& state, std::uint64_t step) const;

  /// The proof root over the checkpoints of `trajectory` and the Merkle proof of checkpoint i.
  consensus::Hash256 ProofRoot(const std::vector<WorldState>& trajectory) const;
  std::string CheckpointProof(const std::vector<WorldState>& trajectory, std::uint64_t i) const;
  consensus::Hash256 Checkpoint(const std::vector<WorldState>& trajectory, std::uint64_t i) const;

  /// The 7 leaves of global step `step` from `before`, with `tamper` applied if it names the step.
  std::vector<consensus::Hash256> Leaves(const WorldState& before, std::uint64_t step,
                                         const std::optional<Tamper>& tamper) const;

  /// Honest referee evidence for leaf `leaf` of global step `step` from `before`, with paths taken
  /// from `tree` (the poster's own tree, which agrees with the other party's on earlier leaves).
  proto::RefereeMove Evidence(const WorldState& before, std::uint64_t step, std::uint64_t leaf,
                              const consensus::GameTree& tree, const std::optional<Tamper>& tamper) const;

 private:
  std::uint64_t k_;
  std::uint64_t segments_;
  std::vector<proto::PinpointDescriptor> descriptors_;
  std::vector<std::string> descriptor_bytes_;
};


}  // namespace polnode::contracts::testing

#endif  // POLNODE_TESTS_CONTRACTS_GAME_WORLD_H_
