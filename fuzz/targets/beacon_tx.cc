// Target beacon_tx: the CometBFT beacon tx (node/ledger/abci_beacon.h) on arbitrary bytes, decoded
// and then verified against a fixed set of four validators (VRF keys from fixed bytes, power 10
// each) on a fixed alpha, as ProcessProposal and FinalizeBlock check a proposed block's first tx.
// Properties: never crashes; a decoded tx re-encodes to exactly the input and its addresses are
// strictly ascending; decoding and verifying fail only with kInvalidArgument; a verified tx holds
// more than 2/3 of the power (at least 3 entries here) and its beacon is the same on a second try.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz.h"
#include "polnode/ledger/abci_beacon.h"

namespace polnode::fuzz {
namespace {

constexpr std::string_view kChain = "polnode-fuzz";
constexpr std::uint64_t kHeight = 7;

consensus::SecretKey ValidatorKey(int i) {
  std::array<std::uint8_t, 32> secret{};
  secret.fill(static_cast<std::uint8_t>(0x31 + i));
  return *consensus::SecretKey::FromBytes(secret);
}

std::string Address(int i) { return std::string(node::kValidatorAddressBytes, static_cast<char>('a' + i)); }

struct Validators {
  Validators() : alpha(node::BeaconAlpha(kChain, kHeight, node::GenesisBeacon(kChain))) {
    for (int i = 0; i < 4; ++i) {
      keys.emplace(Address(i), ValidatorKey(i).PublicKey());
      powers[Address(i)] = 10;
    }
  }
  node::BeaconKeys keys;
  node::VotingPowers powers;
  std::vector<std::uint8_t> alpha;
};

const Validators& Set() {
  static const Validators* set = new Validators();
  return *set;
}

void Run(FuzzInput input) {
  const std::string_view tx(reinterpret_cast<const char*>(input.data()), input.size());
  Result<std::vector<node::BeaconEntry>> entries = node::DecodeBeaconTx(tx);
  if (!entries.ok()) {
    POLNODE_FUZZ_CHECK(entries.status().code() == StatusCode::kInvalidArgument,
                       "DecodeBeaconTx failed with an undocumented status code");
    POLNODE_FUZZ_CHECK(!node::VerifyBeaconTx(tx, Set().keys, Set().powers, Set().alpha).ok(),
                       "a beacon tx that does not decode verified");
    return;
  }
  POLNODE_FUZZ_CHECK(node::EncodeBeaconTx(*entries) == tx, "re-encoding a decoded beacon tx changed its bytes");
  for (std::size_t i = 1; i < entries->size(); ++i) {
    POLNODE_FUZZ_CHECK((*entries)[i - 1].address < (*entries)[i].address, "decoded addresses are not strictly ascending");
  }
  Result<consensus::Hash256> beacon = node::VerifyBeaconTx(tx, Set().keys, Set().powers, Set().alpha);
  if (!beacon.ok()) {
    POLNODE_FUZZ_CHECK(beacon.status().code() == StatusCode::kInvalidArgument,
                       "VerifyBeaconTx failed with an undocumented status code");
    return;
  }
  POLNODE_FUZZ_CHECK(entries->size() >= 3, "a beacon tx of 2/3 of the power or less verified");
  Result<consensus::Hash256> again = node::VerifyBeaconTx(tx, Set().keys, Set().powers, Set().alpha);
  POLNODE_FUZZ_CHECK(again.ok() && *again == *beacon, "the same beacon tx gave another beacon");
}

node::BeaconEntry Entry(int i) {
  node::BeaconEntry e;
  e.address = Address(i);
  e.proof = *consensus::VrfProve(ValidatorKey(i), Set().alpha);
  return e;
}

std::vector<std::uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<Seed> Seeds() {
  const std::string three = node::EncodeBeaconTx({Entry(0), Entry(1), Entry(2)});
  std::vector<Seed> seeds = {
      {"valid-three", Bytes(three)},
      {"valid-four", Bytes(node::EncodeBeaconTx({Entry(0), Entry(1), Entry(2), Entry(3)}))},
      {"too-little-power", Bytes(node::EncodeBeaconTx({Entry(0), Entry(1)}))},
      {"unsorted", Bytes(node::EncodeBeaconTx({Entry(1), Entry(0), Entry(2)}))},
      {"duplicate", Bytes(node::EncodeBeaconTx({Entry(0), Entry(0), Entry(1), Entry(2)}))},
      {"truncated", Bytes(three.substr(0, three.size() - 1))},
      {"prefix-only", {0x00}},
      {"empty", {}},
  };
  node::BeaconEntry forged = Entry(2);
  forged.proof[40] ^= 0x01;
  seeds.push_back({"bad-proof", Bytes(node::EncodeBeaconTx({Entry(0), Entry(1), forged}))});
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(beacon_tx, Run, Seeds);

}  // namespace polnode::fuzz
