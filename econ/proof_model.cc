#include "proof_model.h"

#include <cmath>

#include "polnode/base/block_grid.h"
#include "polnode/consensus/encoding.h"
#include "polnode/consensus/game_tree.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/contracts/payloads.h"
#include "polnode/contracts/perturbation.h"

namespace polnode::econ {
namespace {

// Values one digest of StateValues yields: a 16-bit word each.
constexpr std::size_t kValuesPerDigest = sizeof(Hash256) / 2;

// StateDims: {4} in exact mode, {2, 160} in tolerant mode. Both are far below
// payload::kPublishChunkElements, so one publication chunk holds the whole tensor.
constexpr std::int64_t kExactElements = 4;
constexpr std::int64_t kTolerantRows = 2;
constexpr std::int64_t kTolerantCols = 160;
static_assert(kExactElements <= static_cast<std::int64_t>(contracts::payload::kPublishChunkElements) &&
              kTolerantRows * kTolerantCols <= static_cast<std::int64_t>(contracts::payload::kPublishChunkElements));

const std::vector<std::string>& TensorNames() {
  static const std::vector<std::string> names = {"w"};
  return names;
}

std::int64_t ElementsOf(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

// The `count` values of the state at `checkpoint` of `branch`: 16-bit words over 16, so exact
// binary fractions in [0, 4096), never NaN, that any two states differ in by at least 1/16 where
// they differ at all, and that a perturbation by D = 2^-10 moves exactly (a float holds 24
// significant bits). The first 16 words are those of one digest (what the 4-value states of exact
// mode always were); the rest come from a SplitMix64 stream seeded by that digest, since hashing
// every 16 values made generating states most of a tolerant run's time.
std::vector<float> StateValues(const std::string& task_key, std::uint32_t branch, std::uint64_t checkpoint,
                               std::int64_t count) {
  consensus::HashWriter w;
  w.String("polnode/econ/state/v1");
  w.String(task_key);
  w.U32(branch);
  w.U64(checkpoint);
  const Hash256 digest = w.Finalize();
  std::vector<float> values(static_cast<std::size_t>(count));
  std::uint64_t state = 0;
  for (std::size_t i = 0; i < digest.size(); ++i) state = (state << 8 | state >> 56) ^ digest[i];
  std::uint64_t word = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    unsigned bits = 0;
    if (i < kValuesPerDigest) {
      bits = (unsigned{digest[2 * i]} << 8) | digest[2 * i + 1];
    } else {
      if ((i - kValuesPerDigest) % 4 == 0) {
        // SplitMix64 (Steele, Lea and Flood 2014).
        state += 0x9E37'79B9'7F4A'7C15;
        word = state;
        word = (word ^ (word >> 30)) * 0xBF58'476D'1CE4'E5B9;
        word = (word ^ (word >> 27)) * 0x94D0'49BB'1331'11EB;
        word ^= word >> 31;
      }
      bits = static_cast<unsigned>(word >> (16 * ((i - kValuesPerDigest) % 4))) & 0xFFFF;
    }
    values[i] = static_cast<float>(bits) / 16.0f;
  }
  return values;
}

// Every proof starts at the state the task fixes (the ledger checks checkpoint 0 at commit), so
// checkpoint 0 is the same on every branch and for every task.
std::vector<float> CheckpointValues(const std::string& task_key, const std::vector<std::int64_t>& dims,
                                    std::uint32_t branch, std::uint64_t checkpoint) {
  const std::int64_t count = ElementsOf(dims);
  return checkpoint == 0 ? StateValues("initial", 0, 0, count) : StateValues(task_key, branch, checkpoint, count);
}

// `honest` with `p`'s elements moved as the solver moves them (the first tensor is the whole state).
std::vector<float> PerturbedValues(std::vector<float> honest, const Perturbed& p) {
  for (const consensus::PerturbedElement& e : p.perturbation.elements) {
    float& v = honest[static_cast<std::size_t>(e.flat)];
    v = consensus::PerturbedValue(v, e.sign, p.delta);
  }
  return honest;
}

Hash256 StateHashOf(std::uint64_t step, const std::vector<std::int64_t>& dims, const std::vector<float>& values) {
  const std::vector<Hash256> hashes = {consensus::TensorHashOf(dims, values)};
  return consensus::StateHashFromTensorHashes(step, TensorNames(), hashes);
}

std::string Bytes(const Hash256& h) { return {reinterpret_cast<const char*>(h.data()), h.size()}; }

std::string FloatBytes(const std::vector<float>& values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)};
}

}  // namespace

const std::vector<std::int64_t>& StateDims(bool tolerant) {
  static const std::vector<std::int64_t> exact = {kExactElements};
  static const std::vector<std::int64_t> perturbable = {kTolerantRows, kTolerantCols};
  return tolerant ? perturbable : exact;
}

Hash256 ProofModel::InitialStateHash(std::uint64_t k, const std::vector<std::int64_t>& dims) {
  return ProofModel("", k, dims, {0}).Leaf(0);
}

ProofModel::ProofModel(std::string task_key, std::uint64_t k, std::vector<std::int64_t> dims,
                       std::vector<std::uint32_t> branches, std::map<std::uint64_t, Perturbed> perturbed)
    : task_key_(std::move(task_key)),
      k_(k),
      dims_(std::move(dims)),
      branches_(std::move(branches)),
      perturbed_(std::move(perturbed)),
      leaves_([this] {
        std::vector<Hash256> leaves;
        leaves.reserve(branches_.size());
        for (std::uint64_t c = 0; c < branches_.size(); ++c) leaves.push_back(StateHashOf(c * k_, dims_, Values(c)));
        return leaves;
      }()),
      tree_(leaves_) {}

std::vector<float> ProofModel::Values(std::uint64_t checkpoint) const {
  const auto p = perturbed_.find(checkpoint);
  if (p == perturbed_.end()) return CheckpointValues(task_key_, dims_, branches_[checkpoint], checkpoint);
  return PerturbedValues(CheckpointValues(task_key_, dims_, p->second.honest_branch, checkpoint), p->second);
}

std::string ProofModel::PathOf(std::uint64_t checkpoint) const {
  // Prove cannot fail for an index below the leaf count, which every caller passes.
  const std::vector<std::uint8_t> bytes = consensus::SerializeMerkleProof(*tree_.Prove(checkpoint));
  return {bytes.begin(), bytes.end()};
}

Hash256 ProofModel::ReplayEnd(std::uint64_t segment) const {
  return StateHashOf((segment + 1) * k_, dims_, CheckpointValues(task_key_, dims_, branches_[segment], segment + 1));
}

std::vector<std::uint64_t> ProofModel::ReplayDifferences(std::uint64_t segment, float delta) const {
  const std::vector<float> replayed = CheckpointValues(task_key_, dims_, branches_[segment], segment + 1);
  const std::vector<float> committed = Values(segment + 1);
  // In double, as consensus::PerturbationVisible compares: half of a float delta is exact there.
  const double half = static_cast<double>(delta) / 2.0;
  std::vector<std::uint64_t> differ;
  for (std::size_t i = 0; i < replayed.size(); ++i) {
    const double d = std::fabs(static_cast<double>(replayed[i]) - static_cast<double>(committed[i]));
    if (!(d <= half)) differ.push_back(i);  // a NaN difference is no agreement
  }
  return differ;
}

ProofModel ProofModel::WithBranches(const std::vector<std::pair<std::uint64_t, std::uint32_t>>& moved) const {
  std::vector<std::uint32_t> branches = branches_;
  std::map<std::uint64_t, Perturbed> perturbed = perturbed_;
  for (const auto& [checkpoint, branch] : moved) {
    branches[checkpoint] = branch;
    perturbed.erase(checkpoint);
  }
  return ProofModel(task_key_, k_, dims_, std::move(branches), std::move(perturbed));
}

proto::PerturbationProof ProofModel::PerturbationProofOf(std::uint64_t checkpoint) const {
  const Perturbed& p = perturbed_.at(checkpoint);
  const std::vector<float> committed = Values(checkpoint);
  const std::vector<float> honest = CheckpointValues(task_key_, dims_, p.honest_branch, checkpoint);
  // The model's states are one tensor, which differs from the honest one in the drawn block alone.
  return contracts::BuildPerturbationProof(checkpoint, TensorNames(), dims_, committed, honest, {},
                                           p.perturbation.block)
      .value();
}

SolverProofs Train(const std::string& task_key, std::uint64_t k, const std::vector<std::int64_t>& dims,
                   std::uint64_t segments, const std::set<std::uint64_t>& forced,
                   const std::set<std::uint64_t>& made_up,
                   const std::map<std::uint64_t, consensus::Perturbation>& perturbations, float delta) {
  // Fresh branches: a made-up state and a falsified one at checkpoint c lie on a branch of their
  // own (two falsified checkpoints are no segment of one trajectory; training on from a perturbed
  // state leaves the honest trajectory too).
  constexpr std::uint32_t kMadeUpBase = 0xB000'0000;
  constexpr std::uint32_t kFalsifiedBase = 0xC000'0000;
  std::vector<std::uint32_t> committed(segments + 1, 0);
  std::vector<std::uint32_t> result(segments + 1, 0);
  std::map<std::uint64_t, Perturbed> perturbed;
  for (std::uint64_t c = 1; c <= segments; ++c) {
    const std::uint32_t fresh = static_cast<std::uint32_t>(c);
    // Training from the committed checkpoint c - 1 stays on its branch.
    result[c] = made_up.count(c) != 0 ? kMadeUpBase + fresh : committed[c - 1];
    if (forced.count(c) == 0) {
      committed[c] = result[c];
      continue;
    }
    committed[c] = kFalsifiedBase + fresh;
    const auto draw = perturbations.find(c);
    if (draw != perturbations.end()) perturbed.emplace(c, Perturbed{result[c], draw->second, delta});
  }
  return SolverProofs{ProofModel(task_key, k, dims, std::move(committed), std::move(perturbed)),
                      ProofModel(task_key, k, dims, std::move(result))};
}

std::vector<proto::PublishTx> ProofModel::Publication(const std::string& task_id, std::uint64_t checkpoint) const {
  const std::vector<float> values = Values(checkpoint);
  proto::PublishTx header;
  header.set_task_id(task_id);
  header.set_checkpoint(checkpoint);
  proto::PublishedTensorHeader* tensor = header.mutable_header()->add_tensors();
  tensor->set_name(TensorNames()[0]);
  for (std::int64_t d : dims_) tensor->add_dims(d);
  tensor->set_hash(Bytes(consensus::TensorHashOf(dims_, values)));
  header.mutable_header()->set_proof(PathOf(checkpoint));
  // One chunk holds the whole tensor (see kTolerantCols).
  proto::PublishTx chunk;
  chunk.set_task_id(task_id);
  chunk.set_checkpoint(checkpoint);
  chunk.mutable_chunk()->set_tensor(0);
  chunk.mutable_chunk()->set_chunk(0);
  chunk.mutable_chunk()->set_data(FloatBytes(values));
  return {header, chunk};
}

}  // namespace polnode::econ
