#include "polnode/ledger/abci_beacon.h"

#include <algorithm>
#include <cstdint>

namespace polnode::node {
namespace {

using consensus::Hash256;

constexpr std::string_view kAlphaTag = "polnode/abci-beacon/v2";
constexpr std::string_view kBlockTag = "polnode/abci-beacon/v2/block";
constexpr std::string_view kGenesisTag = "polnode/abci-beacon/v2/genesis";

void AppendBigEndian(std::vector<std::uint8_t>& out, std::uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

std::span<const std::uint8_t> AsBytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// CometBFT's MaxTotalVotingPower (int64 max / 8): no validator set has more, so three times any
// sum of its powers fits in 64 bits.
constexpr std::uint64_t kMaxTotalPower = static_cast<std::uint64_t>(INT64_MAX) / 8;

// Adds a validator's power to `sum`; kInvalidArgument past CometBFT's maximum.
Status AddPower(std::uint64_t& sum, std::int64_t power) {
  if (power <= 0) return Status::Ok();
  if (static_cast<std::uint64_t>(power) > kMaxTotalPower - sum) {
    return Status::InvalidArgument("voting power above CometBFT's maximum total");
  }
  sum += static_cast<std::uint64_t>(power);
  return Status::Ok();
}

// Whether `part` holds more than 2/3 of the total power of `powers`.
Result<bool> MoreThanTwoThirds(std::uint64_t part, const VotingPowers& powers) {
  std::uint64_t total = 0;
  for (const auto& entry : powers) POLNODE_RETURN_IF_ERROR(AddPower(total, entry.second));
  return part * 3 > total * 2;
}

}  // namespace

std::vector<std::uint8_t> BeaconAlpha(std::string_view chain_id, std::uint64_t height, const Hash256& previous_randomness) {
  std::vector<std::uint8_t> alpha(kAlphaTag.begin(), kAlphaTag.end());
  AppendBigEndian(alpha, chain_id.size(), 4);
  alpha.insert(alpha.end(), chain_id.begin(), chain_id.end());
  AppendBigEndian(alpha, height, 8);
  alpha.insert(alpha.end(), previous_randomness.begin(), previous_randomness.end());
  return alpha;
}

Hash256 GenesisBeacon(std::string_view chain_id) { return consensus::Sha256(std::string(kGenesisTag) + std::string(chain_id)); }

Result<std::string> MakeBeaconExtension(const consensus::SecretKey& key, std::span<const std::uint8_t> alpha) {
  POLNODE_ASSIGN_OR_RETURN(consensus::VrfProof proof, consensus::VrfProve(key, alpha));
  return std::string(proof.begin(), proof.end());
}

Result<Hash256> VerifyBeaconExtension(const BeaconKeys& keys, std::string_view address, std::string_view extension,
                                      std::span<const std::uint8_t> alpha) {
  if (extension.size() != consensus::kVrfProofBytes) {
    return Status::InvalidArgument("a beacon vote extension is " + std::to_string(consensus::kVrfProofBytes) +
                                   " bytes, not " + std::to_string(extension.size()));
  }
  const auto key = keys.find(std::string(address));
  if (key == keys.end()) return Status::InvalidArgument("validator has no VRF key in the genesis beacon_keys");
  POLNODE_ASSIGN_OR_RETURN(Hash256 output,
                           consensus::VrfVerify(key->second, alpha,
                                                std::span<const std::uint8_t, consensus::kVrfProofBytes>(
                                                    AsBytes(extension).data(), consensus::kVrfProofBytes)));
  return output;
}

std::string EncodeBeaconTx(const std::vector<BeaconEntry>& entries) {
  std::string tx(1, static_cast<char>(kBeaconTxPrefix));
  for (const BeaconEntry& e : entries) {
    tx += e.address;
    tx.append(e.proof.begin(), e.proof.end());
  }
  return tx;
}

bool IsBeaconTx(std::string_view tx) { return !tx.empty() && static_cast<std::uint8_t>(tx[0]) == kBeaconTxPrefix; }

Result<std::vector<BeaconEntry>> DecodeBeaconTx(std::string_view tx) {
  if (!IsBeaconTx(tx)) return Status::InvalidArgument("not a beacon tx (no 0x00 prefix)");
  tx.remove_prefix(1);
  if (tx.empty() || tx.size() % kBeaconEntryBytes != 0) {
    return Status::InvalidArgument("beacon tx body of " + std::to_string(tx.size()) + " bytes is not a positive multiple of " +
                                   std::to_string(kBeaconEntryBytes));
  }
  std::vector<BeaconEntry> entries(tx.size() / kBeaconEntryBytes);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string_view entry = tx.substr(i * kBeaconEntryBytes, kBeaconEntryBytes);
    entries[i].address = std::string(entry.substr(0, kValidatorAddressBytes));
    std::copy_n(entry.begin() + kValidatorAddressBytes, consensus::kVrfProofBytes, entries[i].proof.begin());
    if (i > 0 && !(entries[i - 1].address < entries[i].address)) {
      return Status::InvalidArgument("beacon tx validators are not in strictly ascending address order (entry " +
                                     std::to_string(i) + ")");
    }
  }
  return entries;
}

Result<Hash256> VerifyBeaconTx(std::string_view tx, const BeaconKeys& keys, const VotingPowers& powers,
                               std::span<const std::uint8_t> alpha) {
  POLNODE_ASSIGN_OR_RETURN(std::vector<BeaconEntry> entries, DecodeBeaconTx(tx));
  consensus::Sha256Hasher beacon;
  beacon.Update(AsBytes(kBlockTag));
  std::uint64_t included = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const BeaconEntry& e = entries[i];
    const auto power = powers.find(e.address);
    if (power == powers.end()) {
      return Status::InvalidArgument("beacon tx entry " + std::to_string(i) + " is not a validator of the last commit");
    }
    const std::string_view proof(reinterpret_cast<const char*>(e.proof.data()), e.proof.size());
    Result<Hash256> output = VerifyBeaconExtension(keys, e.address, proof, alpha);
    if (!output.ok()) return output.status().WithContext("beacon tx entry " + std::to_string(i));
    beacon.Update(*output);
    POLNODE_RETURN_IF_ERROR(AddPower(included, power->second));
  }
  POLNODE_ASSIGN_OR_RETURN(bool enough, MoreThanTwoThirds(included, powers));
  if (!enough) {
    return Status::InvalidArgument("beacon tx validators hold 2/3 of the voting power or less");
  }
  return beacon.Finalize();
}

Result<std::string> BuildBeaconTx(const std::vector<ExtendedVote>& votes, const BeaconKeys& keys, const VotingPowers& powers,
                                  std::span<const std::uint8_t> alpha) {
  std::vector<BeaconEntry> entries;
  std::uint64_t included = 0;
  for (const ExtendedVote& vote : votes) {
    const auto power = powers.find(vote.address);
    if (power == powers.end() || vote.address.size() != kValidatorAddressBytes) continue;
    if (!VerifyBeaconExtension(keys, vote.address, vote.extension, alpha).ok()) continue;
    if (std::any_of(entries.begin(), entries.end(), [&](const BeaconEntry& e) { return e.address == vote.address; })) continue;
    BeaconEntry entry;
    entry.address = vote.address;
    std::copy_n(vote.extension.begin(), consensus::kVrfProofBytes, entry.proof.begin());
    entries.push_back(std::move(entry));
    POLNODE_RETURN_IF_ERROR(AddPower(included, power->second));
  }
  POLNODE_ASSIGN_OR_RETURN(bool enough, MoreThanTwoThirds(included, powers));
  if (!enough) {
    return Status::Unavailable("the valid vote extensions hold 2/3 of the voting power or less");
  }
  std::sort(entries.begin(), entries.end(), [](const BeaconEntry& a, const BeaconEntry& b) { return a.address < b.address; });
  return EncodeBeaconTx(entries);
}

}  // namespace polnode::node
