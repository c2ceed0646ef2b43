#include "polnode/consensus/merkle.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "polnode/consensus/encoding.h"

namespace polnode::consensus {
namespace {

constexpr std::uint8_t kLeafTag = 0x00;
constexpr std::uint8_t kNodeTag = 0x01;
constexpr std::uint8_t kRootTag = 0x02;

// Written as n / 2 + n % 2 rather than (n + 1) / 2, which overflows at n = 2^64 - 1.
std::uint64_t ParentLevelSize(std::uint64_t n) { return n / 2 + n % 2; }

// The node at `i` of a level of `n` nodes is promoted (has no sibling) iff it is the odd last one.
bool IsPromoted(std::uint64_t i, std::uint64_t n) { return n % 2 == 1 && i == n - 1; }

Hash256 RootFromTop(std::uint64_t count, const Hash256* top) {
  HashWriter w;
  w.U8(kRootTag);
  w.U64(count);
  if (top != nullptr) w.Fixed(*top);
  return w.Finalize();
}

std::vector<Hash256> NextLevel(const std::vector<Hash256>& level) {
  std::vector<Hash256> parents;
  parents.reserve(ParentLevelSize(level.size()));
  for (std::size_t i = 0; i + 1 < level.size(); i += 2) {
    parents.push_back(MerkleNodeHash(level[i], level[i + 1]));
  }
  if (level.size() % 2 == 1) parents.push_back(level.back());
  return parents;
}

std::vector<Hash256> LeafLevel(std::span<const Hash256> leaves) {
  std::vector<Hash256> level;
  level.reserve(leaves.size());
  for (const Hash256& leaf : leaves) level.push_back(MerkleLeafHash(leaf));
  return level;
}

}  // namespace

// Leaf and node hashes are the hot path of building large trees, so they hash one stack buffer
// instead of going through a streaming HashWriter.
Hash256 MerkleLeafHash(const Hash256& leaf) {
  std::array<std::uint8_t, 1 + 32> buf{};
  buf[0] = kLeafTag;
  std::copy(leaf.begin(), leaf.end(), buf.begin() + 1);
  return Sha256(buf);
}

Hash256 MerkleNodeHash(const Hash256& left, const Hash256& right) {
  std::array<std::uint8_t, 1 + 32 + 32> buf{};
  buf[0] = kNodeTag;
  std::copy(left.begin(), left.end(), buf.begin() + 1);
  std::copy(right.begin(), right.end(), buf.begin() + 1 + 32);
  return Sha256(buf);
}

Hash256 MerkleRoot(std::span<const Hash256> leaves) {
  if (leaves.empty()) return RootFromTop(0, nullptr);
  std::vector<Hash256> level = LeafLevel(leaves);
  while (level.size() > 1) level = NextLevel(level);
  return RootFromTop(leaves.size(), &level.front());
}

std::uint32_t MerkleProofLength(std::uint64_t index, std::uint64_t count) {
  if (index >= count) return 0;
  std::uint32_t length = 0;
  for (std::uint64_t i = index, n = count; n > 1; i /= 2, n = ParentLevelSize(n)) {
    if (!IsPromoted(i, n)) ++length;
  }
  return length;
}

Status VerifyMerkleProof(const Hash256& root, const Hash256& leaf, const MerkleProof& proof) {
  if (proof.leaf_count == 0) return Status::InvalidArgument("Merkle proof for an empty tree");
  if (proof.leaf_index >= proof.leaf_count) {
    return Status::InvalidArgument("Merkle proof index " + std::to_string(proof.leaf_index) +
                                   " is outside a tree of " + std::to_string(proof.leaf_count) + " leaves");
  }
  const std::uint32_t expected = MerkleProofLength(proof.leaf_index, proof.leaf_count);
  if (proof.siblings.size() != expected) {
    return Status::InvalidArgument("Merkle proof has " + std::to_string(proof.siblings.size()) +
                                   " siblings, its index and count need " + std::to_string(expected));
  }
  Hash256 node = MerkleLeafHash(leaf);
  std::size_t next_sibling = 0;
  for (std::uint64_t i = proof.leaf_index, n = proof.leaf_count; n > 1; i /= 2, n = ParentLevelSize(n)) {
    if (IsPromoted(i, n)) continue;
    const Hash256& sibling = proof.siblings[next_sibling++];
    node = (i % 2 == 0) ? MerkleNodeHash(node, sibling) : MerkleNodeHash(sibling, node);
  }
  if (RootFromTop(proof.leaf_count, &node) != root) {
    return Status::Corruption("Merkle proof does not lead to the expected root");
  }
  return Status::Ok();
}

MerkleTree::MerkleTree(std::span<const Hash256> leaves) : leaf_count_(leaves.size()) {
  if (leaves.empty()) {
    root_ = RootFromTop(0, nullptr);
    return;
  }
  levels_.push_back(LeafLevel(leaves));
  while (levels_.back().size() > 1) levels_.push_back(NextLevel(levels_.back()));
  root_ = RootFromTop(leaf_count_, &levels_.back().front());
}

Result<MerkleProof> MerkleTree::Prove(std::uint64_t index) const {
  if (index >= leaf_count_) {
    return Status::OutOfRange("leaf " + std::to_string(index) + " of a tree with " + std::to_string(leaf_count_) +
                              " leaves");
  }
  MerkleProof proof;
  proof.leaf_index = index;
  proof.leaf_count = leaf_count_;
  std::uint64_t i = index;
  for (std::size_t k = 0; k + 1 < levels_.size(); ++k, i /= 2) {
    const std::vector<Hash256>& level = levels_[k];
    if (IsPromoted(i, level.size())) continue;
    proof.siblings.push_back(level[i ^ 1]);
  }
  return proof;
}

std::vector<std::uint8_t> SerializeMerkleProof(const MerkleProof& proof) {
  BufferWriter w;
  w.U8(kMerkleProofVersion);
  w.U64(proof.leaf_index);
  w.U64(proof.leaf_count);
  for (const Hash256& sibling : proof.siblings) w.Fixed(sibling);
  return w.Take();
}

Result<MerkleProof> ParseMerkleProof(std::span<const std::uint8_t> bytes) {
  Reader r(bytes);
  POLNODE_ASSIGN_OR_RETURN(std::uint8_t version, r.U8());
  if (version != kMerkleProofVersion) {
    return Status::Corruption("unknown Merkle proof version " + std::to_string(version));
  }
  MerkleProof proof;
  POLNODE_ASSIGN_OR_RETURN(proof.leaf_index, r.U64());
  POLNODE_ASSIGN_OR_RETURN(proof.leaf_count, r.U64());
  if (proof.leaf_count == 0) return Status::InvalidArgument("Merkle proof for an empty tree");
  if (proof.leaf_index >= proof.leaf_count) {
    return Status::InvalidArgument("Merkle proof index " + std::to_string(proof.leaf_index) +
                                   " is outside a tree of " + std::to_string(proof.leaf_count) + " leaves");
  }
  proof.siblings.resize(MerkleProofLength(proof.leaf_index, proof.leaf_count));
  for (Hash256& sibling : proof.siblings) POLNODE_RETURN_IF_ERROR(r.Fixed(sibling));
  POLNODE_RETURN_IF_ERROR(r.ExpectEnd());
  return proof;
}

}  // namespace polnode::consensus
