#include "polnode/contracts/perturbation.h"

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "keys.h"
#include "move_fields.h"
#include "polnode/base/block_grid.h"
#include "polnode/consensus/forced_perturbation.h"
#include "polnode/consensus/game_tree.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/kernels/detmath.h"

namespace polnode::contracts {
namespace {

using kernels::det::FloatBits;

using consensus::Hash256;

// The most elements the first tensor may declare: far above any model a task trains, and small
// enough that no index below overflows.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;

Result<std::vector<float>> BlockValues(const std::string& bytes, std::int64_t elements, const std::string& what) {
  if (bytes.size() != static_cast<std::size_t>(elements) * sizeof(float)) {
    return Status::InvalidArgument(what + " must hold the perturbed block's " + std::to_string(elements) + " values");
  }
  std::vector<float> values(static_cast<std::size_t>(elements));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

}  // namespace

Result<std::string> CheckPerturbationProof(const proto::Task& task, std::string_view secret,
                                           const proto::RevealedLeaf& leaf, const proto::PerturbationProof& proof) {
  const std::uint64_t k = leaf.checkpoint();
  const std::string at = "perturbation of checkpoint " + std::to_string(k);
  if (proof.checkpoint() != k) return Status::InvalidArgument(at + ": the proof names checkpoint " + std::to_string(proof.checkpoint()));
  const std::uint32_t tensors = task.spec().state_tensor_count();
  if (proof.names_size() != static_cast<int>(tensors) || proof.tensor_hashes_size() + 1 != static_cast<int>(tensors)) {
    return Status::InvalidArgument(at + ": the task's state has " + std::to_string(tensors) +
                                   " tensors: that many names and the hashes of all but the first");
  }
  std::vector<std::int64_t> dims(proof.dims().begin(), proof.dims().end());
  if (dims.size() > 8) return Status::InvalidArgument(at + ": the first tensor has more than 8 dims");
  std::int64_t elements = 1;
  for (std::int64_t d : dims) {
    if (d < 1 || d > kMaxElements || elements > kMaxElements / d) {
      return Status::InvalidArgument(at + ": the first tensor's dims must be positive with at most 2^40 elements");
    }
    elements *= d;
  }
  const consensus::Perturbation drawn =
      consensus::DrawPerturbation(secret, task.forced_seed(), task.id(), k, dims);
  const BlockGrid grid = BlockGrid::Of(dims);
  const std::int64_t block_elements = grid.BlockRect(drawn.block).elements();
  POLNODE_ASSIGN_OR_RETURN(std::vector<float> committed, BlockValues(proof.committed_block(), block_elements, at + ": committed_block"));
  POLNODE_ASSIGN_OR_RETURN(std::vector<float> honest, BlockValues(proof.honest_block(), block_elements, at + ": honest_block"));

  // The block's values: the honest ones moved by exactly the drawn perturbation, nothing else.
  const float delta = task.spec().forced_delta();
  std::size_t next = 0;
  for (std::int64_t j = 0; j < block_elements; ++j) {
    const std::size_t i = static_cast<std::size_t>(j);
    if (next < drawn.elements.size() && drawn.elements[next].offset == j) {
      const float expected = consensus::PerturbedValue(honest[i], drawn.elements[next].sign, delta);
      if (FloatBits(committed[i]) != FloatBits(expected) ||
          !consensus::PerturbationVisible(honest[i], committed[i], delta)) {
        return Status::InvalidArgument(at + ": element " + std::to_string(drawn.elements[next].flat) +
                                       " is not the honest value moved by the drawn +-forced_delta");
      }
      ++next;
    } else if (FloatBits(committed[i]) != FloatBits(honest[i])) {
      return Status::InvalidArgument(at + ": element " + std::to_string(j) + " of the block is not drawn but differs");
    }
  }

  // One path and one list of other tensors for both states: they can differ in this block only.
  std::vector<Hash256> siblings;
  for (const std::string& s : proof.block_siblings()) {
    POLNODE_ASSIGN_OR_RETURN(Hash256 h, HashField(s, at + ": block_siblings"));
    siblings.push_back(h);
  }
  if (siblings.size() != consensus::GameTreeDepth(grid.block_count())) {
    return Status::InvalidArgument(at + ": block_siblings must climb the first tensor's block tree (" +
                                   std::to_string(consensus::GameTreeDepth(grid.block_count())) + " levels)");
  }
  std::vector<std::string> names(proof.names().begin(), proof.names().end());
  std::vector<Hash256> hashes(tensors);
  for (int t = 0; t < proof.tensor_hashes_size(); ++t) {
    POLNODE_ASSIGN_OR_RETURN(hashes[static_cast<std::size_t>(t) + 1], HashField(proof.tensor_hashes(t), at + ": tensor_hashes"));
  }
  const std::uint64_t step = k * task.spec().checkpoint_interval();
  const auto state_hash = [&](const std::vector<float>& block) {
    const Hash256 root = consensus::ClimbGameTree(consensus::BlockLeafHash(block), drawn.block, siblings);
    hashes[0] = consensus::TensorHashFromBlockRoot(dims, root);
    return ToBytes(consensus::StateHashFromTensorHashes(step, names, hashes));
  };
  if (state_hash(committed) != leaf.committed_hash()) {
    return Status::InvalidArgument(at + ": the committed block does not climb to the committed checkpoint's hash");
  }
  if (state_hash(honest) != leaf.result_hash()) {
    return Status::InvalidArgument(at + ": the honest block does not climb to the result checkpoint's hash");
  }
  return ToBytes(consensus::PerturbedIndicesHash(consensus::PerturbedIndices(drawn)));
}

Result<proto::PerturbationProof> BuildPerturbationProof(std::uint64_t checkpoint, std::span<const std::string> names,
                                                        std::span<const std::int64_t> dims,
                                                        std::span<const float> committed_first,
                                                        std::span<const float> honest_first,
                                                        std::span<const Hash256> other_hashes, std::uint64_t block) {
  if (dims.empty()) return Status::InvalidArgument("the first tensor has no dims");
  std::int64_t elements = 1;
  for (std::int64_t d : dims) {
    if (d < 1 || elements > kMaxElements / d) return Status::InvalidArgument("the first tensor's dims are not a tensor's");
    elements *= d;
  }
  if (committed_first.size() != static_cast<std::size_t>(elements) || honest_first.size() != committed_first.size()) {
    return Status::InvalidArgument("the first tensor's values do not match its dims");
  }
  const consensus::TensorBlockTree committed_tree(dims, committed_first);
  const consensus::TensorBlockTree honest_tree(dims, honest_first);
  if (block >= committed_tree.grid().block_count()) {
    return Status::InvalidArgument("block " + std::to_string(block) + " is not one of the first tensor's");
  }
  const std::uint32_t depth = committed_tree.tree()->depth();
  POLNODE_ASSIGN_OR_RETURN(const std::vector<Hash256> siblings, committed_tree.tree()->Siblings(block, depth));
  POLNODE_ASSIGN_OR_RETURN(const std::vector<Hash256> honest_siblings, honest_tree.tree()->Siblings(block, depth));
  if (siblings != honest_siblings) {
    return Status::InvalidArgument("the first tensor differs between the two states outside the drawn block");
  }
  const auto bytes = [](const std::vector<float>& values) {
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  };
  proto::PerturbationProof proof;
  proof.set_checkpoint(checkpoint);
  for (const std::string& name : names) proof.add_names(name);
  for (std::int64_t d : dims) proof.add_dims(d);
  for (const Hash256& h : other_hashes) proof.add_tensor_hashes(std::string(h.begin(), h.end()));
  proof.set_committed_block(bytes(consensus::BlockValues(dims, committed_first, block)));
  proof.set_honest_block(bytes(consensus::BlockValues(dims, honest_first, block)));
  for (const Hash256& h : siblings) proof.add_block_siblings(std::string(h.begin(), h.end()));
  return proof;
}

}  // namespace polnode::contracts
