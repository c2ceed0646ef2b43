// Target prove_progress: DecodeProgress on arbitrary bytes (a progress file damaged on disk, or
// written by another polnode version). Properties: never crashes or over-allocates whatever
// lengths the bytes claim; failures are kCorruption or kFailedPrecondition; an accepted progress
// has as many blob hashes as state hashes, and its re-encoding (the newest format) decodes to the
// same progress.
#include <vector>

#include "fuzz.h"
#include "polnode/solver/prove_progress.h"
#include "polnode/testing/legacy_progress.h"

namespace polnode::fuzz {
namespace {

void Run(FuzzInput input) {
  Result<solver::ProveProgress> decoded = solver::DecodeProgress(input, "progress.bin");
  if (!decoded.ok()) {
    const StatusCode code = decoded.status().code();
    POLNODE_FUZZ_CHECK(code == StatusCode::kCorruption || code == StatusCode::kFailedPrecondition,
                       "DecodeProgress failed with a code other than kCorruption or kFailedPrecondition");
    return;
  }
  POLNODE_FUZZ_CHECK(decoded->hashes.size() == decoded->blobs.size(), "hashes and blobs differ in length");
  Result<solver::ProveProgress> again = solver::DecodeProgress(solver::EncodeProgress(*decoded), "progress.bin");
  POLNODE_FUZZ_CHECK(again.ok(), "the re-encoding of an accepted progress does not decode");
  POLNODE_FUZZ_CHECK(*again == *decoded, "an accepted progress changed across a re-encoding");
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
  std::vector<Seed> seeds;
  seeds.push_back({"valid", bytes});
  seeds.push_back({"truncated", std::vector<std::uint8_t>(bytes.begin(), bytes.end() - 3)});
  std::vector<std::uint8_t> newer = bytes;
  newer[1 + kLocalKindBytes] = 2;
  seeds.push_back({"newer-version", newer});
  seeds.push_back({"legacy", solver::testing::LegacyProgressBytes(p)});
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(prove_progress, Run, Seeds);

}  // namespace polnode::fuzz
