// Target duty_journal: DecodeDutyJournal on arbitrary bytes (a role daemon's journal damaged on
// disk, or written by another polnode version). Properties: never crashes or over-allocates;
// failures are kCorruption or kFailedPrecondition; an accepted journal names a non-empty hex
// transaction id and a reason within its bound, and its re-encoding decodes to the same journal.
#include <string>
#include <vector>

#include "fuzz.h"
#include "polnode/roles/duty_journal.h"

namespace polnode::fuzz {
namespace {

void Run(FuzzInput input) {
  Result<node::DutyJournal> decoded = node::DecodeDutyJournal(input, "duties/d");
  if (!decoded.ok()) {
    const StatusCode code = decoded.status().code();
    POLNODE_FUZZ_CHECK(code == StatusCode::kCorruption || code == StatusCode::kFailedPrecondition,
                       "DecodeDutyJournal failed with a code other than kCorruption or kFailedPrecondition");
    return;
  }
  POLNODE_FUZZ_CHECK(!decoded->tx_id.empty() &&
                         decoded->tx_id.find_first_not_of("0123456789abcdef") == std::string::npos,
                     "an accepted journal's transaction id is not hex");
  POLNODE_FUZZ_CHECK(decoded->reason.size() <= node::kMaxDutyReasonBytes, "an accepted reason exceeds its bound");
  Result<node::DutyJournal> again = node::DecodeDutyJournal(node::EncodeDutyJournal(*decoded), "duties/d");
  POLNODE_FUZZ_CHECK(again.ok(), "the re-encoding of an accepted journal does not decode");
  POLNODE_FUZZ_CHECK(*again == *decoded, "an accepted journal changed across a re-encoding");
}

std::vector<std::uint8_t> Text(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<Seed> Seeds() {
  const std::string tx(64, 'c');
  std::vector<Seed> seeds;
  const std::vector<std::uint8_t> failed =
      node::EncodeDutyJournal({tx, node::DutyJournal::Outcome::kFailed, "insufficient balance"});
  seeds.push_back({"failed", failed});
  seeds.push_back({"sent", node::EncodeDutyJournal({tx, node::DutyJournal::Outcome::kSent, ""})});
  seeds.push_back({"truncated", std::vector<std::uint8_t>(failed.begin(), failed.end() - 4)});
  std::vector<std::uint8_t> newer = failed;
  newer[1 + kLocalKindBytes] = 2;
  seeds.push_back({"newer-version", newer});
  seeds.push_back({"text-committed", Text(tx + " committed\n")});
  seeds.push_back({"text-failed", Text(tx + " failed nonce too low\n")});
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(duty_journal, Run, Seeds);

}  // namespace polnode::fuzz
