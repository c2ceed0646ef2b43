#include "polnode/consensus/game_tree.h"

#include <bit>

#include "polnode/consensus/merkle.h"

namespace polnode::consensus {

std::uint32_t GameTreeDepth(std::uint64_t leaf_count) {
  if (leaf_count <= 1) return 0;
  return static_cast<std::uint32_t>(std::bit_width(leaf_count - 1));
}

std::uint32_t AgreedSubtreeHeight(std::uint64_t j, std::uint64_t d) {
  return static_cast<std::uint32_t>(std::bit_width(j ^ d) - 1);
}

Hash256 ClimbGameTree(const Hash256& leaf, std::uint64_t index, std::span<const Hash256> siblings) {
  Hash256 node = leaf;
  for (const Hash256& sibling : siblings) {
    node = (index & 1) == 0 ? MerkleNodeHash(node, sibling) : MerkleNodeHash(sibling, node);
    index >>= 1;
  }
  return node;
}

namespace {

// Checks indices for a multiproof: ascending, distinct, below 2^depth.
Status CheckIndices(std::span<const std::uint64_t> indices, std::uint32_t depth) {
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if ((depth < 64 && indices[i] >> depth != 0) || (i > 0 && indices[i] <= indices[i - 1])) {
      return Status::InvalidArgument("multiproof leaf indices must be ascending, distinct and inside the tree");
    }
  }
  return Status::Ok();
}

// One level of a multiproof climb over `nodes` (ascending indices): calls `pair(i)` when nodes i
// and i + 1 are siblings, `single(i)` when node i takes its sibling from the proof; returns the
// parents' indices.
template <typename Pair, typename Single>
std::vector<std::uint64_t> ClimbLevel(std::span<const std::uint64_t> nodes, Pair pair, Single single) {
  std::vector<std::uint64_t> parents;
  parents.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if ((nodes[i] & 1) == 0 && i + 1 < nodes.size() && nodes[i + 1] == nodes[i] + 1) {
      pair(i);
      parents.push_back(nodes[i] >> 1);
      ++i;
    } else {
      single(i);
      parents.push_back(nodes[i] >> 1);
    }
  }
  return parents;
}

}  // namespace

std::uint64_t MultiProofLength(std::span<const std::uint64_t> indices, std::uint32_t depth) {
  std::vector<std::uint64_t> nodes(indices.begin(), indices.end());
  std::uint64_t length = 0;
  for (std::uint32_t level = 0; level < depth && !nodes.empty(); ++level) {
    nodes = ClimbLevel(nodes, [](std::size_t) {}, [&](std::size_t) { ++length; });
  }
  return length;
}

Result<Hash256> ClimbGameTreeMany(std::span<const std::pair<std::uint64_t, Hash256>> leaves, std::uint32_t depth,
                                  std::span<const Hash256> siblings) {
  if (leaves.empty()) return Status::InvalidArgument("a multiproof proves at least one leaf");
  std::vector<std::uint64_t> nodes;
  std::vector<Hash256> values;
  for (const auto& [index, value] : leaves) {
    nodes.push_back(index);
    values.push_back(value);
  }
  POLNODE_RETURN_IF_ERROR(CheckIndices(nodes, depth));
  if (MultiProofLength(nodes, depth) != siblings.size()) {
    return Status::InvalidArgument("the multiproof has " + std::to_string(siblings.size()) + " siblings, its leaves need " +
                                   std::to_string(MultiProofLength(nodes, depth)));
  }
  std::size_t next = 0;
  for (std::uint32_t level = 0; level < depth; ++level) {
    std::vector<Hash256> parents;
    parents.reserve(values.size());
    nodes = ClimbLevel(
        nodes, [&](std::size_t i) { parents.push_back(MerkleNodeHash(values[i], values[i + 1])); },
        [&](std::size_t i) {
          const Hash256& sibling = siblings[next++];
          parents.push_back((nodes[i] & 1) == 0 ? MerkleNodeHash(values[i], sibling) : MerkleNodeHash(sibling, values[i]));
        });
    values = std::move(parents);
  }
  return values[0];
}

GameTree::GameTree(std::span<const Hash256> leaves) : leaf_count_(leaves.size()) {
  const std::uint32_t depth = GameTreeDepth(leaves.size());
  std::vector<Hash256> level(std::uint64_t{1} << depth, Hash256{});
  for (std::size_t i = 0; i < leaves.size(); ++i) level[i] = leaves[i];
  levels_.push_back(std::move(level));
  while (levels_.back().size() > 1) {
    const std::vector<Hash256>& below = levels_.back();
    std::vector<Hash256> above(below.size() / 2);
    for (std::size_t i = 0; i < above.size(); ++i) above[i] = MerkleNodeHash(below[2 * i], below[2 * i + 1]);
    levels_.push_back(std::move(above));
  }
}

Result<Hash256> GameTree::Node(std::uint32_t level, std::uint64_t index) const {
  if (level >= levels_.size() || index >= levels_[level].size()) {
    return Status::OutOfRange("no node (" + std::to_string(level) + ", " + std::to_string(index) +
                              ") in a tree of depth " + std::to_string(depth()));
  }
  return levels_[level][index];
}

Result<std::vector<Hash256>> GameTree::Siblings(std::uint64_t index, std::uint32_t height) const {
  if (height > depth() || index >= levels_[0].size()) {
    return Status::OutOfRange("no path from leaf " + std::to_string(index) + " up " + std::to_string(height) +
                              " levels in a tree of depth " + std::to_string(depth()));
  }
  std::vector<Hash256> siblings;
  siblings.reserve(height);
  for (std::uint32_t level = 0; level < height; ++level) {
    siblings.push_back(levels_[level][index ^ 1]);
    index >>= 1;
  }
  return siblings;
}

}  // namespace polnode::consensus

namespace polnode::consensus {

Result<std::vector<Hash256>> GameTree::MultiSiblings(std::span<const std::uint64_t> indices) const {
  if (indices.empty()) return Status::InvalidArgument("a multiproof proves at least one leaf");
  POLNODE_RETURN_IF_ERROR(CheckIndices(indices, depth()));
  std::vector<Hash256> siblings;
  std::vector<std::uint64_t> nodes(indices.begin(), indices.end());
  for (std::uint32_t level = 0; level < depth(); ++level) {
    nodes = ClimbLevel(nodes, [](std::size_t) {}, [&](std::size_t i) { siblings.push_back(levels_[level][nodes[i] ^ 1]); });
  }
  return siblings;
}

}  // namespace polnode::consensus
