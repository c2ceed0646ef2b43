// Target train_state: DecodeState on arbitrary bytes (checkpoint blobs arrive from solvers that
// may be hostile). Properties: never crashes or over-allocates; failures are kCorruption; an
// accepted state is canonical, i.e. re-encodes to exactly the input bytes, and its state hash
// (version 2, over the tensor hashes) survives that round trip and is the one its tensor hashes
// give.
#include <algorithm>
#include <string>
#include <vector>

#include "fuzz.h"
#include "polnode/consensus/pinpoint.h"
#include "polnode/consensus/sha256.h"
#include "polnode/solver/init.h"
#include "polnode/solver/model_spec.h"
#include "polnode/solver/train_state.h"

namespace polnode::fuzz {
namespace {

void Run(FuzzInput input) {
  Result<solver::TrainState> decoded = solver::DecodeState(input);
  if (!decoded.ok()) {
    POLNODE_FUZZ_CHECK(decoded.status().code() == StatusCode::kCorruption,
                       "DecodeState failed with a code other than kCorruption");
    return;
  }
  const std::vector<std::uint8_t> again = solver::EncodeState(*decoded);
  POLNODE_FUZZ_CHECK(again.size() == input.size() && std::equal(again.begin(), again.end(), input.begin()),
                     "an accepted state does not re-encode to its own bytes");
  Result<solver::TrainState> again_decoded = solver::DecodeState(again);
  POLNODE_FUZZ_CHECK(again_decoded.ok(), "the re-encoding of an accepted state does not decode");
  const consensus::Hash256 hash = solver::StateHash(*decoded);
  POLNODE_FUZZ_CHECK(solver::StateHash(*again_decoded) == hash, "StateHash changed across a re-encoding");
  std::vector<std::string> names;
  for (const solver::NamedTensor& nt : decoded->tensors) names.push_back(nt.name);
  POLNODE_FUZZ_CHECK(consensus::StateHashFromTensorHashes(static_cast<std::uint64_t>(decoded->step), names,
                                                          solver::TensorHashes(*decoded)) == hash,
                     "StateHash differs from StateHashFromTensorHashes over the tensor hashes");
}

std::vector<Seed> Seeds() {
  std::vector<Seed> seeds;
  Result<solver::ModelSpec> model = solver::ParseModelSpec("mlp:4-3-2");
  if (!model.ok()) return seeds;
  for (solver::OptimizerKind kind : {solver::OptimizerKind::kSgd, solver::OptimizerKind::kAdam}) {
    solver::TrainState state = solver::InitialState(*model, kind, 7);
    state.step = 3;
    std::vector<std::uint8_t> bytes = solver::EncodeState(state);
    std::string name(solver::OptimizerName(kind));
    seeds.push_back({"valid-" + name, bytes});
    seeds.push_back({"truncated-" + name, std::vector<std::uint8_t>(bytes.begin(), bytes.end() - 5)});
    std::vector<std::uint8_t> trailing = bytes;
    trailing.push_back(0);
    seeds.push_back({"trailing-" + name, trailing});
  }
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(train_state, Run, Seeds);

}  // namespace polnode::fuzz
