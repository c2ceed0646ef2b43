// Target prove_progress: DecodeProgress on arbitrary bytes (a progress file damaged on disk, or
// written by another polnode version). Properties: never crashes or over-allocates whatever
// lengths the bytes claim; failures are kCorruption or kFailedPrecondition; its re-encoding (the
// newest format) decodes to the same progress (local_file_properties.h); an accepted progress has
// as many blob hashes as state hashes.
#include <vector>

#include "fuzz.h"
#include "local_file_properties.h"
#include "polnode/solver/prove_progress.h"
#include "polnode/testing/legacy_progress.h"

namespace polnode::fuzz {
namespace {

void Run(FuzzInput input) {
  const std::optional<solver::ProveProgress> decoded =
      CheckLocalDecoder<solver::ProveProgress>(input, solver::DecodeProgress, solver::EncodeProgress);
  if (!decoded) return;
  POLNODE_FUZZ_CHECK(decoded->hashes.size() == decoded->blobs.size(), "hashes and blobs differ in length");
}

std::vector<Seed> Seeds() {
  solver::ProveProgress p;
  p.task_id.fill(3);
  p.hashes.assign(2, consensus::Hash256{});
  p.blobs.assign(2, consensus::Hash256{});
  p.hashes[1].fill(1);
  p.blobs[1].fill(2);
  p.loss_bits = {0x3f800000u, 0x3f000000u};
  const std::vector<std::uint8_t> bytes = solver::EncodeProgress(p);
  std::vector<Seed> seeds = DamagedLocalSeeds(bytes, 3);
  seeds.push_back({"valid", bytes});
  seeds.push_back({"legacy", solver::testing::LegacyProgressBytes(p)});
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(prove_progress, Run, Seeds);

}  // namespace polnode::fuzz
