// Target perturbation_proof: arbitrary bytes as the PerturbationProof of a tolerant forced round's
// reveal (contracts/perturbation.h CheckPerturbationProof), against a fixed task, secret and
// checkpoint whose committed and honest states are real: a [70, 130] first tensor (4 blocks, edge
// blocks smaller) and two more tensors.
// Properties: never crashes; an accepted proof shows exactly the true committed and honest blocks
// (anything else would be a hash collision) and yields the drawn indices' hash; the honest proof is
// accepted.
#include <cstring>
#include <string>
#include <vector>

#include "fuzz.h"
#include "polnode/consensus/forced_perturbation.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/contracts/perturbation.h"

namespace polnode::fuzz {
namespace {

using consensus::Hash256;

constexpr std::uint64_t kCheckpoint = 3, kInterval = 2;
constexpr float kDelta = 0x1p-10f;
const std::vector<std::int64_t> kDims = {70, 130};
const std::vector<std::string> kNames = {"w", "b", "v"};

std::string Raw(const Hash256& h) { return std::string(h.begin(), h.end()); }

struct Fixture {
  proto::Task task;
  std::string secret = std::string(32, '\x5e');
  proto::RevealedLeaf leaf;
  proto::PerturbationProof honest_proof;
  std::string indices_hash;
};

const Fixture& Fixed() {
  static const Fixture fixed = [] {
    Fixture f;
    f.task.set_id(std::string(32, '\x07'));
    f.task.set_forced_seed(std::string(32, '\x08'));
    f.task.mutable_spec()->set_tolerant(true);
    f.task.mutable_spec()->set_forced_delta(kDelta);
    f.task.mutable_spec()->set_checkpoint_interval(kInterval);
    f.task.mutable_spec()->set_state_tensor_count(static_cast<std::uint32_t>(kNames.size()));
    std::vector<float> honest(70 * 130);
    for (std::size_t i = 0; i < honest.size(); ++i) honest[i] = static_cast<float>(i % 211) / 211.0f - 0.5f;
    std::vector<float> committed = honest;
    const consensus::Perturbation p = consensus::DrawPerturbation(f.secret, f.task.forced_seed(), f.task.id(), kCheckpoint, kDims);
    for (const consensus::PerturbedElement& e : p.elements) {
      committed[static_cast<std::size_t>(e.flat)] = consensus::PerturbedValue(honest[static_cast<std::size_t>(e.flat)], e.sign, kDelta);
    }
    const std::vector<Hash256> others = {consensus::Sha256("b"), consensus::Sha256("v")};
    const auto state_hash = [&](const std::vector<float>& first) {
      std::vector<Hash256> hashes{consensus::TensorHashOf(kDims, first)};
      hashes.insert(hashes.end(), others.begin(), others.end());
      return consensus::StateHashFromTensorHashes(kCheckpoint * kInterval, kNames, hashes);
    };
    f.leaf.set_checkpoint(kCheckpoint);
    f.leaf.set_committed_hash(Raw(state_hash(committed)));
    f.leaf.set_result_hash(Raw(state_hash(honest)));
    Result<proto::PerturbationProof> proof =
        contracts::BuildPerturbationProof(kCheckpoint, kNames, kDims, committed, honest, others, p.block);
    POLNODE_FUZZ_CHECK(proof.ok(), "the fixture's perturbation proof cannot be built");
    f.honest_proof = *std::move(proof);
    f.indices_hash = Raw(consensus::PerturbedIndicesHash(consensus::PerturbedIndices(p)));
    return f;
  }();
  return fixed;
}

void Run(FuzzInput input) {
  const Fixture& f = Fixed();
  proto::PerturbationProof proof;
  if (!proof.ParseFromArray(input.data(), static_cast<int>(input.size()))) return;
  const Result<std::string> checked = contracts::CheckPerturbationProof(f.task, f.secret, f.leaf, proof);
  if (!checked.ok()) {
    POLNODE_FUZZ_CHECK(checked.status().code() == StatusCode::kInvalidArgument, "a refused proof must be kInvalidArgument");
    return;
  }
  POLNODE_FUZZ_CHECK(*checked == f.indices_hash, "an accepted proof gave another indices hash");
  POLNODE_FUZZ_CHECK(proof.committed_block() == f.honest_proof.committed_block() &&
                         proof.honest_block() == f.honest_proof.honest_block(),
                     "a proof with other block values was accepted");
}

std::vector<std::uint8_t> Bytes(const proto::PerturbationProof& proof) {
  const std::string s = proof.SerializeAsString();
  return std::vector<std::uint8_t>(s.begin(), s.end());
}

std::vector<Seed> Seeds() {
  const Fixture& f = Fixed();
  // The honest proof must pass: a fixture that no longer does would make the target vacuous.
  const Result<std::string> honest = contracts::CheckPerturbationProof(f.task, f.secret, f.leaf, f.honest_proof);
  POLNODE_FUZZ_CHECK(honest.ok() && *honest == f.indices_hash, "the honest perturbation proof is refused");
  std::vector<Seed> seeds;
  seeds.push_back({"honest", Bytes(f.honest_proof)});
  proto::PerturbationProof swapped = f.honest_proof;
  swapped.set_committed_block(f.honest_proof.honest_block());
  swapped.set_honest_block(f.honest_proof.committed_block());
  seeds.push_back({"blocks-swapped", Bytes(swapped)});
  proto::PerturbationProof short_path = f.honest_proof;
  short_path.mutable_block_siblings()->RemoveLast();
  seeds.push_back({"short-path", Bytes(short_path)});
  proto::PerturbationProof big_dims = f.honest_proof;
  big_dims.set_dims(0, std::int64_t{1} << 40);
  seeds.push_back({"huge-dims", Bytes(big_dims)});
  proto::PerturbationProof unperturbed = f.honest_proof;
  unperturbed.set_committed_block(f.honest_proof.honest_block());
  seeds.push_back({"unperturbed", Bytes(unperturbed)});
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(perturbation_proof, Run, Seeds);

}  // namespace polnode::fuzz
