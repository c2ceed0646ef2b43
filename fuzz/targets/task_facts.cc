// Target task_facts: DecodeTaskFacts on arbitrary bytes (a submitter's facts file, home/tasks/<id>,
// damaged on disk or written by another polnode version). Properties: those of every local-file
// decoder (local_file_properties.h), the re-encoding within kMaxTaskFactsBytes; an accepted model
// has a hex state hash within its bound and counts with 0 <= correct <= total.
#include <string>
#include <vector>

#include "fuzz.h"
#include "local_file_properties.h"
#include "polnode/roles/submitter_report.h"

namespace polnode::fuzz {
namespace {

void Run(FuzzInput input) {
  const std::optional<node::TaskFacts> decoded =
      CheckLocalDecoder<node::TaskFacts>(input, node::DecodeTaskFacts, node::EncodeTaskFacts, node::kMaxTaskFactsBytes);
  if (!decoded || !decoded->model) return;
  const node::DeliveredModel& m = *decoded->model;
  POLNODE_FUZZ_CHECK(!m.state_hash.empty() && m.state_hash.size() <= node::kMaxStateHashHex &&
                         m.state_hash.find_first_not_of("0123456789abcdef") == std::string::npos,
                     "an accepted model's state hash is not hex within its bound");
  POLNODE_FUZZ_CHECK(m.test_correct >= 0 && m.test_correct <= m.test_total,
                     "an accepted model's test counts are inconsistent");
}

std::vector<Seed> Seeds() {
  const std::string hash(64, 'e');
  const std::vector<std::uint8_t> full = node::EncodeTaskFacts({4900, node::DeliveredModel{"", hash, 7, 8}});
  std::vector<Seed> seeds = DamagedLocalSeeds(full, 5);
  seeds.push_back({"refund-and-model", full});
  seeds.push_back({"none", node::EncodeTaskFacts({})});
  seeds.push_back({"text", TextBytes("refund 4900\nmodel " + hash + " 7 8\n")});
  seeds.push_back({"text-bad-counts", TextBytes("model " + hash + " 9 8\n")});
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(task_facts, Run, Seeds);

}  // namespace polnode::fuzz
