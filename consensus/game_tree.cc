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
