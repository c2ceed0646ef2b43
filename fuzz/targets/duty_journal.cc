// Target duty_journal: DecodeDutyJournal on arbitrary bytes (a role daemon's journal damaged on
// disk, or written by another polnode version). Properties: those of every local-file decoder
// (local_file_properties.h); an accepted journal names a non-empty hex transaction id and a
// reason within its bound.
#include <string>
#include <vector>

#include "fuzz.h"
#include "local_file_properties.h"
#include "polnode/roles/duty_journal.h"

namespace polnode::fuzz {
namespace {

void Run(FuzzInput input) {
  const std::optional<node::DutyJournal> decoded =
      CheckLocalDecoder<node::DutyJournal>(input, node::DecodeDutyJournal, node::EncodeDutyJournal, node::kMaxDutyJournalBytes);
  if (!decoded) return;
  POLNODE_FUZZ_CHECK(!decoded->tx_id.empty() &&
                         decoded->tx_id.find_first_not_of("0123456789abcdef") == std::string::npos,
                     "an accepted journal's transaction id is not hex");
  POLNODE_FUZZ_CHECK(decoded->reason.size() <= node::kMaxDutyReasonBytes, "an accepted reason exceeds its bound");
}

std::vector<Seed> Seeds() {
  const std::string tx(64, 'c');
  const std::vector<std::uint8_t> failed =
      node::EncodeDutyJournal({tx, node::DutyJournal::Outcome::kFailed, "insufficient balance"});
  std::vector<Seed> seeds = DamagedLocalSeeds(failed, 4);
  seeds.push_back({"failed", failed});
  seeds.push_back({"sent", node::EncodeDutyJournal({tx, node::DutyJournal::Outcome::kSent, ""})});
  seeds.push_back({"text-committed", TextBytes(tx + " committed\n")});
  seeds.push_back({"text-failed", TextBytes(tx + " failed nonce too low\n")});
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(duty_journal, Run, Seeds);

}  // namespace polnode::fuzz
