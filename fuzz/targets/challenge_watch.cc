// Target challenge_watch: DecodeChallengeWatch on arbitrary bytes (a whistleblower's watch file
// damaged on disk, or written by another polnode version). Properties: those of every local-file
// decoder (local_file_properties.h), the re-encoding within kMaxChallengeWatchBytes.
#include <vector>

#include "fuzz.h"
#include "local_file_properties.h"
#include "polnode/roles/challenge_watch.h"

namespace polnode::fuzz {
namespace {

void Run(FuzzInput input) {
  CheckLocalDecoder<node::ChallengeWatch>(input, node::DecodeChallengeWatch, node::EncodeChallengeWatch,
                                          node::kMaxChallengeWatchBytes);
}

std::vector<Seed> Seeds() {
  const std::vector<std::uint8_t> holdings = node::EncodeChallengeWatch({1'000'000});
  std::vector<Seed> seeds = DamagedLocalSeeds(holdings, 3);
  seeds.push_back({"holdings", holdings});
  seeds.push_back({"zero", node::EncodeChallengeWatch({0})});
  seeds.push_back({"text", TextBytes("1000000\n")});
  seeds.push_back({"text-not-a-number", TextBytes("12ab\n")});
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(challenge_watch, Run, Seeds);

}  // namespace polnode::fuzz
