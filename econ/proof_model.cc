#include "proof_model.h"

#include "polnode/consensus/encoding.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/contracts/payloads.h"

namespace polnode::econ {
namespace {

const std::vector<std::string>& TensorNames() {
  static const std::vector<std::string> names = {"w"};
  return names;
}

// The values of the state at `checkpoint` of `branch`: small exact binary fractions, never NaN.
std::vector<float> StateValues(const std::string& task_key, std::uint32_t branch, std::uint64_t checkpoint) {
  consensus::HashWriter w;
  w.String("polnode/econ/state/v1");
  w.String(task_key);
  w.U32(branch);
  w.U64(checkpoint);
  const Hash256 digest = w.Finalize();
  std::vector<float> values(static_cast<std::size_t>(kElements));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const unsigned bits = (unsigned{digest[2 * i]} << 8) | digest[2 * i + 1];
    values[i] = static_cast<float>(bits) / 16.0f;
  }
  return values;
}

const std::vector<std::int64_t>& Dims() {
  static const std::vector<std::int64_t> dims = {kElements};
  return dims;
}

// Every proof starts at the state the task fixes (the ledger checks checkpoint 0 at commit), so
// checkpoint 0 is the same on every branch and for every task.
std::vector<float> CheckpointValues(const std::string& task_key, std::uint32_t branch, std::uint64_t checkpoint) {
  return checkpoint == 0 ? StateValues("initial", 0, 0) : StateValues(task_key, branch, checkpoint);
}

Hash256 LeafOf(const std::string& task_key, std::uint64_t k, std::uint32_t branch, std::uint64_t checkpoint) {
  const std::vector<Hash256> hashes = {consensus::TensorHashOf(Dims(), CheckpointValues(task_key, branch, checkpoint))};
  return consensus::StateHashFromTensorHashes(checkpoint * k, TensorNames(), hashes);
}

std::vector<Hash256> Leaves(const std::string& task_key, std::uint64_t k, const std::vector<std::uint32_t>& branches) {
  std::vector<Hash256> leaves;
  leaves.reserve(branches.size());
  for (std::uint64_t c = 0; c < branches.size(); ++c) leaves.push_back(LeafOf(task_key, k, branches[c], c));
  return leaves;
}

std::string Bytes(const Hash256& h) { return {reinterpret_cast<const char*>(h.data()), h.size()}; }

}  // namespace

Hash256 ProofModel::InitialStateHash(std::uint64_t k) { return LeafOf("", k, 0, 0); }

ProofModel::ProofModel(std::string task_key, std::uint64_t k, std::vector<std::uint32_t> branches)
    : task_key_(std::move(task_key)),
      k_(k),
      branches_(std::move(branches)),
      leaves_(Leaves(task_key_, k_, branches_)),
      tree_(leaves_) {}

std::string ProofModel::PathOf(std::uint64_t checkpoint) const {
  // Prove cannot fail for an index below the leaf count, which every caller passes.
  const std::vector<std::uint8_t> bytes = consensus::SerializeMerkleProof(*tree_.Prove(checkpoint));
  return {bytes.begin(), bytes.end()};
}

Hash256 ProofModel::ReplayEnd(std::uint64_t segment) const {
  return LeafOf(task_key_, k_, branches_[segment], segment + 1);
}

ProofModel ProofModel::WithBranches(const std::vector<std::pair<std::uint64_t, std::uint32_t>>& moved) const {
  std::vector<std::uint32_t> branches = branches_;
  for (const auto& [checkpoint, branch] : moved) branches[checkpoint] = branch;
  return ProofModel(task_key_, k_, std::move(branches));
}

SolverProofs Train(const std::string& task_key, std::uint64_t k, std::uint64_t segments,
                   const std::set<std::uint64_t>& forced, const std::set<std::uint64_t>& made_up) {
  // Fresh branches: a made-up state and a falsified one at checkpoint c lie on a branch of their
  // own (two falsified checkpoints are no segment of one trajectory).
  constexpr std::uint32_t kMadeUpBase = 0xB000'0000;
  constexpr std::uint32_t kFalsifiedBase = 0xC000'0000;
  std::vector<std::uint32_t> committed(segments + 1, 0);
  std::vector<std::uint32_t> result(segments + 1, 0);
  for (std::uint64_t c = 1; c <= segments; ++c) {
    const std::uint32_t fresh = static_cast<std::uint32_t>(c);
    // Training from the committed checkpoint c - 1 stays on its branch.
    result[c] = made_up.count(c) != 0 ? kMadeUpBase + fresh : committed[c - 1];
    committed[c] = forced.count(c) != 0 ? kFalsifiedBase + fresh : result[c];
  }
  return SolverProofs{ProofModel(task_key, k, std::move(committed)), ProofModel(task_key, k, std::move(result))};
}

std::vector<proto::PublishTx> ProofModel::Publication(const std::string& task_id, std::uint64_t checkpoint) const {
  const std::vector<float> values = CheckpointValues(task_key_, branches_[checkpoint], checkpoint);
  proto::PublishTx header;
  header.set_task_id(task_id);
  header.set_checkpoint(checkpoint);
  proto::PublishedTensorHeader* tensor = header.mutable_header()->add_tensors();
  tensor->set_name(TensorNames()[0]);
  tensor->add_dims(kElements);
  tensor->set_hash(Bytes(consensus::TensorHashOf(Dims(), values)));
  header.mutable_header()->set_proof(PathOf(checkpoint));
  // kElements is far below payload::kPublishChunkElements: one chunk holds the whole tensor.
  static_assert(kElements <= static_cast<std::int64_t>(contracts::payload::kPublishChunkElements));
  proto::PublishTx chunk;
  chunk.set_task_id(task_id);
  chunk.set_checkpoint(checkpoint);
  chunk.mutable_chunk()->set_tensor(0);
  chunk.mutable_chunk()->set_chunk(0);
  chunk.mutable_chunk()->set_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return {header, chunk};
}

}  // namespace polnode::econ
