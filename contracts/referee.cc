#include "polnode/contracts/referee.h"

#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "polnode/consensus/game_tree.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/kernels/tile.h"
#include "keys.h"
#include "move_fields.h"
#include "records.h"

namespace polnode::contracts {
namespace {

using consensus::Hash256;

// The agreed subtree node that holds leaf j < game.leaf(), from the descent transcript.
Result<Hash256> AgreedNode(const proto::DisputeGame& game, std::uint64_t j) {
  const std::uint64_t d = game.leaf();
  if (j >= d) return Status::InvalidArgument("leaf " + std::to_string(j) + " is not before the disputed leaf");
  const std::uint32_t height = consensus::AgreedSubtreeHeight(j, d);
  const std::uint32_t round = game.depth() - 1 - height;
  if (height >= game.depth() || round >= static_cast<std::uint32_t>(game.graph_rounds_size()) ||
      game.graph_rounds(static_cast<int>(round)).went_left()) {
    return Status::Internal("the descent transcript lacks the agreed node over leaf " + std::to_string(j));
  }
  return HashField(game.graph_rounds(static_cast<int>(round)).challenger_left(), "agreed node");
}

// Checks that `value` is leaf j of both parties' trees: it climbs through `siblings` to the agreed
// subtree node that holds j.
Status CheckAgreedLeaf(const proto::DisputeGame& game, std::uint64_t j, const Hash256& value,
                       const google::protobuf::RepeatedPtrField<std::string>& siblings) {
  POLNODE_ASSIGN_OR_RETURN(Hash256 agreed, AgreedNode(game, j));
  const std::uint32_t height = consensus::AgreedSubtreeHeight(j, game.leaf());
  if (static_cast<std::uint32_t>(siblings.size()) != height) {
    return Status::InvalidArgument("leaf " + std::to_string(j) + " needs " + std::to_string(height) + " siblings");
  }
  POLNODE_ASSIGN_OR_RETURN(std::vector<Hash256> path, SiblingsField(siblings));
  if (consensus::ClimbGameTree(value, j, path) != agreed) {
    return Status::InvalidArgument("the value given for leaf " + std::to_string(j) + " is not the agreed one");
  }
  return Status::Ok();
}

// The descriptor in the evidence, proven against the task's graph root; `layout` says whether the
// state layout (the last descriptor) or an operator node is expected.
Result<proto::PinpointDescriptor> ProvenDescriptor(const proto::TaskSpec& spec, const proto::RefereeMove& evidence,
                                                   bool layout) {
  proto::PinpointDescriptor descriptor;
  if (!descriptor.ParseFromString(evidence.node_descriptor()) ||
      EncodeRecord(descriptor) != evidence.node_descriptor()) {
    return Status::InvalidArgument("node_descriptor is not a canonical PinpointDescriptor");
  }
  POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof proof, ProofField(evidence.node_descriptor_proof(), "node_descriptor_proof"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 root, HashField(spec.graph_root(), "graph_root"));
  if (!consensus::VerifyMerkleProof(root, consensus::Sha256(evidence.node_descriptor()), proof).ok()) {
    return Status::InvalidArgument("node_descriptor is not in the task's graph");
  }
  const bool is_last = proof.leaf_index + 1 == proof.leaf_count;
  if (layout && (!is_last || !descriptor.has_state())) {
    return Status::InvalidArgument("the state layout is the graph's last descriptor");
  }
  if (!layout && (is_last || !descriptor.has_node())) return Status::InvalidArgument("expected an operator node");
  return descriptor;
}

Result<std::vector<std::string>> LayoutNames(const proto::TaskSpec& spec, const proto::PinpointStateLayout& layout) {
  if (layout.names_size() != static_cast<int>(spec.state_tensor_count()) ||
      layout.value_leaves_size() != layout.names_size()) {
    return Status::InvalidArgument("the state layout does not match the task's state tensor count");
  }
  return std::vector<std::string>(layout.names().begin(), layout.names().end());
}

Result<Hash256> StateInputLeaf(const proto::TaskSpec& spec, const proto::DisputeGame& game,
                               const proto::RefereeMove& evidence) {
  POLNODE_ASSIGN_OR_RETURN(proto::PinpointDescriptor descriptor, ProvenDescriptor(spec, evidence, true));
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::string> names, LayoutNames(spec, descriptor.state()));
  if (evidence.state_tensor_hashes_size() != static_cast<int>(names.size())) {
    return Status::InvalidArgument("state_tensor_hashes must list every state tensor");
  }
  std::vector<Hash256> hashes;
  for (const std::string& h : evidence.state_tensor_hashes()) {
    POLNODE_ASSIGN_OR_RETURN(Hash256 hash, HashField(h, "state tensor hash"));
    hashes.push_back(hash);
  }
  const std::uint64_t step = game.first_step() + game.lo();
  if (ToBytes(consensus::StateHashFromTensorHashes(step, names, hashes)) != game.lo_hash()) {
    return Status::InvalidArgument("state_tensor_hashes do not give the agreed state hash");
  }
  return hashes[game.leaf()];
}

Result<Hash256> BatchInputLeaf(const proto::TaskSpec& spec, const proto::DisputeGame& game,
                               const proto::RefereeMove& evidence) {
  POLNODE_ASSIGN_OR_RETURN(Hash256 images, HashField(evidence.images_hash(), "images_hash"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 labels, HashField(evidence.labels_hash(), "labels_hash"));
  POLNODE_ASSIGN_OR_RETURN(consensus::MerkleProof proof, ProofField(evidence.batch_proof(), "batch_proof"));
  POLNODE_ASSIGN_OR_RETURN(Hash256 root, HashField(spec.batch_root(), "batch_root"));
  const std::uint64_t step = game.first_step() + game.lo();
  if (proof.leaf_index != step || proof.leaf_count != spec.total_steps() ||
      !consensus::VerifyMerkleProof(root, consensus::BatchLeaf(images, labels), proof).ok()) {
    return Status::InvalidArgument("batch_proof does not prove this step's batch against the task's batch_root");
  }
  return game.leaf() == spec.state_tensor_count() ? images : labels;
}

Result<Hash256> StateAfterLeaf(const proto::TaskSpec& spec, const proto::DisputeGame& game,
                               const proto::RefereeMove& evidence) {
  POLNODE_ASSIGN_OR_RETURN(proto::PinpointDescriptor descriptor, ProvenDescriptor(spec, evidence, true));
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::string> names, LayoutNames(spec, descriptor.state()));
  if (evidence.inputs_size() != static_cast<int>(names.size())) {
    return Status::InvalidArgument("inputs must give every state tensor's hash");
  }
  std::vector<Hash256> hashes;
  for (int i = 0; i < evidence.inputs_size(); ++i) {
    const proto::RefereeInput& input = evidence.inputs(i);
    POLNODE_ASSIGN_OR_RETURN(Hash256 hash, HashField(input.hash(), "input hash"));
    POLNODE_RETURN_IF_ERROR(CheckAgreedLeaf(game, descriptor.state().value_leaves(i), hash, input.siblings()));
    hashes.push_back(hash);
  }
  return consensus::StateHashFromTensorHashes(game.first_step() + game.lo() + 1, names, hashes);
}

// The blocks of one operator input, as posted: its element source for the tile kernel.
class BlockSource final : public kernels::TileSource {
 public:
  BlockSource(BlockGrid grid, const std::vector<std::uint64_t>& blocks, const proto::TileInput& input)
      : grid_(grid), position_(grid.block_count(), -1) {
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      position_[blocks[k]] = static_cast<std::int32_t>(k);
      data_.push_back(input.blocks(static_cast<int>(k)).data());
    }
  }
  float At(std::int64_t flat) const override {
    const std::int32_t k = position_[grid_.BlockOf(flat)];
    if (k < 0) {
      missing_ = true;
      return 0.0f;
    }
    float v;
    std::memcpy(&v, data_[static_cast<std::size_t>(k)] + grid_.OffsetInBlock(flat) * sizeof(float), sizeof v);
    return v;
  }
  bool missing() const { return missing_; }

 private:
  BlockGrid grid_;
  std::vector<std::int32_t> position_;  // per block of the tensor: its place among those posted
  std::vector<const char*> data_;  // each posted block's bytes
  mutable bool missing_ = false;
};

// Checks one operator input of a tile ruling: its block root against the agreed leaf, the posted
// blocks (exactly `blocks`) against the root.
Status CheckTileInput(const proto::DisputeGame& game, const proto::PinpointInput& ref,
                      const std::vector<std::uint64_t>& blocks, const proto::TileInput& input, int i) {
  const std::string which = "tile input " + std::to_string(i);
  if (blocks.empty()) {
    if (!input.block_root().empty() || input.siblings_size() > 0 || input.blocks_size() > 0 || input.proof_size() > 0) {
      return Status::InvalidArgument(which + " is not read by the tile and must be empty");
    }
    return Status::Ok();
  }
  POLNODE_ASSIGN_OR_RETURN(Hash256 root, HashField(input.block_root(), which + " block_root"));
  const std::vector<std::int64_t> dims(ref.source_shape().dims().begin(), ref.source_shape().dims().end());
  POLNODE_RETURN_IF_ERROR(CheckAgreedLeaf(game, ref.leaf(), consensus::TensorHashFromBlockRoot(dims, root), input.siblings()));
  if (input.blocks_size() != static_cast<int>(blocks.size())) {
    return Status::InvalidArgument(which + " must give the " + std::to_string(blocks.size()) + " blocks the tile reads");
  }
  const BlockGrid grid = BlockGrid::Of(dims);
  std::vector<std::pair<std::uint64_t, Hash256>> leaves;
  leaves.reserve(blocks.size());
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const std::string& bytes = input.blocks(static_cast<int>(k));
    if (bytes.size() != static_cast<std::size_t>(grid.BlockRect(blocks[k]).elements()) * sizeof(float)) {
      return Status::InvalidArgument(which + " block " + std::to_string(blocks[k]) + " has the wrong size");
    }
    std::vector<float> values(bytes.size() / sizeof(float));
    std::memcpy(values.data(), bytes.data(), bytes.size());
    leaves.emplace_back(blocks[k], consensus::BlockLeafHash(values));
  }
  std::vector<Hash256> proof;
  for (const std::string& s : input.proof()) {
    POLNODE_ASSIGN_OR_RETURN(Hash256 h, HashField(s, which + " proof sibling"));
    proof.push_back(h);
  }
  Result<Hash256> climbed = consensus::ClimbGameTreeMany(leaves, consensus::GameTreeDepth(grid.block_count()), proof);
  if (!climbed.ok()) return Status::InvalidArgument(which + ": " + climbed.status().message());
  if (*climbed != root) return Status::InvalidArgument(which + "'s blocks are not those of its agreed tensor");
  return Status::Ok();
}

}  // namespace

Result<Hash256> RefereeLeaf(const proto::TaskSpec& spec, const proto::DisputeGame& game,
                            const proto::RefereeMove& evidence) {
  const std::uint64_t d = game.leaf();
  const std::uint64_t s = spec.state_tensor_count();
  const std::uint64_t n = spec.step_leaf_count();
  if (d >= n) return Hash256{};
  if (d < s) return StateInputLeaf(spec, game, evidence);
  if (d == s || d == s + 1) return BatchInputLeaf(spec, game, evidence);
  if (d == n - 1) return StateAfterLeaf(spec, game, evidence);
  return Status::Internal("an operator's output is ruled tile by tile");
}

Result<Hash256> RefereeTile(const proto::TaskSpec& spec, const proto::DisputeGame& game,
                            const proto::RefereeMove& evidence) {
  (void)spec;
  proto::PinpointDescriptor descriptor;
  if (!descriptor.ParseFromString(game.node_descriptor()) || !descriptor.has_node()) {
    return Status::Internal("the game's node descriptor does not parse");
  }
  const proto::PinpointNode& node = descriptor.node();
  const std::uint64_t step = game.first_step() + game.lo();
  POLNODE_ASSIGN_OR_RETURN(kernels::TileKernel kernel, TileKernelOf(node, game.output(), step));
  const BlockGrid out_grid = kernel.grid();
  if (game.tile() >= out_grid.block_count()) {
    // Padding beyond the output's blocks: its value is the all-zero hash, nothing to compute.
    if (evidence.tile_inputs_size() > 0 || !evidence.lo_state().empty()) {
      return Status::InvalidArgument("a padding block needs no evidence");
    }
    return Hash256{};
  }
  const TileBox box{game.tile(), game.chain_lo(), game.chain_hi()};
  if (box.lo >= box.hi && kernel.units() > 0) return Status::Internal("the game's chain range is empty");
  if (evidence.tile_inputs_size() != node.inputs_size()) {
    return Status::InvalidArgument("tile_inputs must list each of the operator's " + std::to_string(node.inputs_size()) +
                                   " inputs");
  }
  const std::vector<std::vector<std::uint64_t>> bound = BoxBlocks(kernel, node, box);
  // An input read where its index input points (the embeddings' token ids) is checked after the
  // index input: the ids' proven blocks name exactly the blocks it must give.
  std::vector<std::optional<BlockSource>> sources(static_cast<std::size_t>(node.inputs_size()));
  for (const bool indexed : {false, true}) {
    for (int i = 0; i < node.inputs_size(); ++i) {
      const int index = kernel.IndexInputOf(i);
      if ((index >= 0) != indexed) continue;
      std::vector<std::uint64_t> blocks = bound[static_cast<std::size_t>(i)];
      if (indexed) {
        Result<std::vector<std::uint64_t>> exact =
            ExactBoxBlocks(kernel, node, box, i, *sources[static_cast<std::size_t>(index)]);
        if (!exact.ok()) {
          return Status::InvalidArgument("tile input " + std::to_string(index) + "'s indices: " + exact.status().message());
        }
        blocks = std::move(*exact);
      }
      POLNODE_RETURN_IF_ERROR(CheckTileInput(game, node.inputs(i), blocks, evidence.tile_inputs(i), i));
      const std::vector<std::int64_t> dims(node.inputs(i).source_shape().dims().begin(),
                                           node.inputs(i).source_shape().dims().end());
      sources[static_cast<std::size_t>(i)].emplace(BlockGrid::Of(dims), blocks, evidence.tile_inputs(i));
    }
  }
  std::vector<const kernels::TileSource*> in;
  for (const std::optional<BlockSource>& s : sources) in.push_back(&*s);
  const GridRect rect = out_grid.BlockRect(box.tile);
  std::vector<float> state;
  if (box.lo == 0) {
    if (!evidence.lo_state().empty()) return Status::InvalidArgument("lo_state must be empty at the chain's start");
    state = kernel.Init(rect);
  } else {
    if (evidence.lo_state().size() != static_cast<std::size_t>(kernel.StateSize(rect)) * sizeof(float)) {
      return Status::InvalidArgument("lo_state has the wrong size for the tile's chain state");
    }
    state.resize(static_cast<std::size_t>(kernel.StateSize(rect)));
    std::memcpy(state.data(), evidence.lo_state().data(), evidence.lo_state().size());
    if (ToBytes(consensus::ChainStateHash(box.lo, state)) != game.chain_lo_hash()) {
      return Status::InvalidArgument("lo_state is not the agreed chain state");
    }
  }
  POLNODE_RETURN_IF_ERROR(kernel.Advance(rect, in, static_cast<std::int64_t>(box.lo),
                                         static_cast<std::int64_t>(box.hi), state));
  Hash256 truth;
  if (box.hi == static_cast<std::uint64_t>(kernel.units())) {
    POLNODE_ASSIGN_OR_RETURN(std::vector<float> values, kernel.Finish(rect, in, state));
    truth = consensus::BlockLeafHash(values);
  } else {
    truth = consensus::ChainStateHash(box.hi, state);
  }
  for (const std::optional<BlockSource>& s : sources) {
    if (s->missing()) return Status::Internal("the tile kernel read an element outside the blocks it declared");
  }
  return truth;
}

}  // namespace polnode::contracts
