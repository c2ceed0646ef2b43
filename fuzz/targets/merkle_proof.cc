// Target merkle_proof: ParseMerkleProof + VerifyMerkleProof against a fixed 13-leaf tree.
// Input: 32 bytes of claimed leaf, then a serialized proof.
// Properties: never crashes; an accepted proof re-serializes to the same bytes; a proof that
// verifies names a real leaf at its real index (soundness); the honest proof of a leaf verifies.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "fuzz.h"
#include "polnode/consensus/encoding.h"
#include "polnode/consensus/merkle.h"

namespace polnode::fuzz {
namespace {

using consensus::Hash256;
using consensus::MerkleProof;

constexpr std::uint64_t kLeafCount = 13;  // odd at several levels, so promotion is exercised

struct FixedTree {
  std::vector<Hash256> leaves;
  consensus::MerkleTree tree;
};

std::vector<Hash256> MakeLeaves() {
  std::vector<Hash256> leaves;
  for (std::uint64_t i = 0; i < kLeafCount; ++i) {
    consensus::HashWriter w;
    w.String("polnode/fuzz/merkle-leaf");
    w.U64(i);
    leaves.push_back(w.Finalize());
  }
  return leaves;
}

const FixedTree& Tree() {
  static const FixedTree fixed = [] {
    std::vector<Hash256> leaves = MakeLeaves();
    consensus::MerkleTree tree(leaves);
    return FixedTree{std::move(leaves), std::move(tree)};
  }();
  return fixed;
}

void Run(FuzzInput input) {
  if (input.size() < 32) return;
  Hash256 leaf{};
  std::copy_n(input.begin(), 32, leaf.begin());
  const FuzzInput proof_bytes = input.subspan(32);

  Result<MerkleProof> proof = consensus::ParseMerkleProof(proof_bytes);
  if (!proof.ok()) return;
  const std::vector<std::uint8_t> reserialized = consensus::SerializeMerkleProof(*proof);
  POLNODE_FUZZ_CHECK(std::equal(reserialized.begin(), reserialized.end(), proof_bytes.begin(), proof_bytes.end()),
                     "a parsed proof does not re-serialize to its input");

  const FixedTree& fixed = Tree();
  const Status verified = consensus::VerifyMerkleProof(fixed.tree.root(), leaf, *proof);
  if (verified.ok()) {
    POLNODE_FUZZ_CHECK(proof->leaf_count == kLeafCount, "a proof with the wrong leaf count verified");
    POLNODE_FUZZ_CHECK(leaf == fixed.leaves[proof->leaf_index], "a proof of a leaf not in the tree verified");
  }
  if (proof->leaf_count == kLeafCount && leaf == fixed.leaves[proof->leaf_index]) {
    Result<MerkleProof> honest = fixed.tree.Prove(proof->leaf_index);
    POLNODE_FUZZ_CHECK(honest.ok(), "the fixed tree cannot prove one of its leaves");
    POLNODE_FUZZ_CHECK(verified.ok() == (*honest == *proof), "verification disagrees with the honest proof");
  }
}

std::vector<std::uint8_t> Input(const Hash256& leaf, const MerkleProof& proof) {
  std::vector<std::uint8_t> out(leaf.begin(), leaf.end());
  const std::vector<std::uint8_t> bytes = consensus::SerializeMerkleProof(proof);
  out.insert(out.end(), bytes.begin(), bytes.end());
  return out;
}

std::vector<Seed> Seeds() {
  const FixedTree& fixed = Tree();
  std::vector<Seed> seeds;
  for (std::uint64_t i : {0, 5, 12}) {  // 12 is promoted at the first levels
    seeds.push_back({"valid-leaf-" + std::to_string(i), Input(fixed.leaves[i], *fixed.tree.Prove(i))});
  }
  const MerkleProof proof = *fixed.tree.Prove(3);
  seeds.push_back({"wrong-leaf", Input(fixed.leaves[4], proof)});
  MerkleProof wrong_count = proof;
  wrong_count.leaf_count = 15;  // same path shape as 13 for leaf 3
  seeds.push_back({"wrong-count", Input(fixed.leaves[3], wrong_count)});
  std::vector<std::uint8_t> bad_version = Input(fixed.leaves[3], proof);
  bad_version[32] = 2;
  seeds.push_back({"bad-version", bad_version});
  std::vector<std::uint8_t> trailing = Input(fixed.leaves[3], proof);
  trailing.push_back(0);
  seeds.push_back({"trailing-byte", trailing});
  std::vector<std::uint8_t> truncated = Input(fixed.leaves[3], proof);
  truncated.resize(truncated.size() - 1);
  seeds.push_back({"truncated", truncated});
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(merkle_proof, Run, Seeds);

}  // namespace polnode::fuzz
