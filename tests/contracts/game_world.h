// A small deterministic "model" whose steps the contracts' dispute game can be played over without
// the solver, large enough that disputes over its operators' outputs descend block trees and
// bisect tile chains: state {w [300, 70], b [70], v [70]}, one step = four operators,
//   node 0 "add"  = BiasAdd(w, b)            [300, 70]  (10 blocks)
//   node 1 "relu" = Relu(add)                [300, 70]  -> the new w
//   node 2 "sum"  = BiasGrad(relu)           [70]       a chain of 300 row units per tile
//   node 3 "sgd"  = SgdMomentum(b, sum, v)   [70], [70] -> the new b and v
// Leaves of a step (dispute.proto): 0 w, 1 b, 2 v, 3 images, 4 labels, 5 add, 6 relu, 7 sum,
// 8 b', 9 v', 10 state after. Under Params() (max_payload_bytes 48 KiB) one ruling over a whole
// "sum" tile's chain does not fit, so the game bisects it.
// A trajectory may be tampered: at one global step one element of one node output gets +1000 (so it
// survives the ReLU and the SGD step), and every later state follows from the wrong value (a
// cheating solver's self-consistent proof).
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
  std::uint64_t step = 0;    // the global step (completed steps before it) whose node is wrong
  int node = 0;              // 0 add, 1 relu, 2 sum, 3 sgd
  int output = 0;            // sgd: 0 b', 1 v'
  std::int64_t element = 0;  // the element of that output
};

struct WorldState {
  kernels::Tensor w;
  kernels::Tensor b;
  kernels::Tensor v;
};

class GameWorld {
 public:
  static constexpr std::uint64_t kStateTensors = 3;
  static constexpr std::uint64_t kLeaves = 11;
  static constexpr std::int64_t kRows = 300;
  static constexpr std::int64_t kCols = 70;

  GameWorld(std::uint64_t checkpoint_interval, std::uint64_t segments);

  /// The chain parameters the world's games run under: the contracts tests' with a 48 KiB payload
  /// limit, so that the "sum" chain must be bisected.
  static proto::Params Params();

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

  /// The 11 leaves of global step `step` from `before`, with `tamper` applied if it names the step.
  std::vector<consensus::Hash256> Leaves(const WorldState& before, std::uint64_t step,
                                         const std::optional<Tamper>& tamper) const;

  /// The operator node writing leaf `leaf` (5..9) and the output of it the leaf is.
  static int NodeOfLeaf(std::uint64_t leaf);
  static int OutputOfLeaf(std::uint64_t leaf);
  const proto::PinpointNode& Node(int index) const { return descriptors_[static_cast<std::size_t>(index)].node(); }

  /// Honest referee evidence for a leaf that is not an operator's output (state inputs, batch,
  /// state after, padding) of global step `step` from `before`, with paths taken from `tree`
  /// (the poster's own tree, which agrees with the other party's on earlier leaves).
  proto::RefereeMove Evidence(const WorldState& before, std::uint64_t step, std::uint64_t leaf,
                              const consensus::GameTree& tree, const std::optional<Tamper>& tamper) const;

  /// The tile move of a party whose story is (`before`, `tamper`) for node (level, index) of the
  /// block tree of operator-output leaf `leaf`; the first round adds descriptor, proof and root.
  proto::TileMove TileMoveFor(const WorldState& before, std::uint64_t step, std::uint64_t leaf, std::uint32_t level,
                              std::uint64_t index, bool first_round, const std::optional<Tamper>& tamper) const;
  /// A party hiding a value in the padding of relu's block tree (leaf 6, the new w): the honest
  /// output's block leaves, padded, with the last padding leaf set to a non-zero hash; the tensor
  /// hash that tree gives, and the state hash after the step it leads to.
  struct HiddenInPadding {
    consensus::GameTree tree;
    consensus::Hash256 tensor_hash{};
    consensus::Hash256 state_after{};
  };
  HiddenInPadding HideInPadding(const WorldState& before, std::uint64_t step) const;

  /// The tile move for node (level, index) of a given block tree of leaf `leaf`'s output.
  proto::TileMove TileMoveFromTree(const consensus::GameTree& tree, std::uint64_t leaf, std::uint32_t level,
                                   std::uint64_t index, bool first_round) const;

  /// The block-tree depth of leaf `leaf`'s output.
  std::uint32_t TileDepth(std::uint64_t leaf) const;

  /// The chain state hash of block `tile` of leaf `leaf` after `units` units, from the party's
  /// inputs (the node's inputs in its story).
  consensus::Hash256 ChainHash(const WorldState& before, std::uint64_t step, std::uint64_t leaf, std::uint64_t tile,
                               std::uint64_t units, const std::optional<Tamper>& tamper) const;

  /// Referee evidence for units [lo, hi) of block `tile` of leaf `leaf`, from the party's inputs,
  /// with paths from `tree`.
  proto::RefereeMove TileEvidence(const WorldState& before, std::uint64_t step, std::uint64_t leaf, std::uint64_t tile,
                                  std::uint64_t lo, std::uint64_t hi, const consensus::GameTree& tree,
                                  const std::optional<Tamper>& tamper) const;

 private:
  std::uint64_t k_;
  std::uint64_t segments_;
  std::vector<proto::PinpointDescriptor> descriptors_;
  std::vector<std::string> descriptor_bytes_;
};

}  // namespace polnode::contracts::testing

#endif  // POLNODE_TESTS_CONTRACTS_GAME_WORLD_H_
