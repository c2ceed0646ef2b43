// The block randomness of a CometBFT network that no single validator controls (issue 17 item 2):
// a beacon built from the validators' VRF outputs (consensus/vrf.h), carried by vote extensions.
//
//   alpha(h)        = "polnode/abci-beacon/v2" || len(chain_id) || chain_id || h || R(h-1)
//                     (h as 8 bytes big-endian, len as 4): fixed once block h-1 is committed.
//   ExtendVote h    each validator's extension is VrfProve(its VRF key, alpha(h)): 81 bytes.
//   block h+1       its first tx is the beacon tx: 0x00 || (address 20 bytes || proof 81 bytes)*,
//                   the proofs of validators of height h's set, addresses strictly ascending, whose
//                   voting power is more than 2/3 of that set's.
//   R(h+1)          = SHA-256("polnode/abci-beacon/v2/block" || beta_1 || ... || beta_k), the VRF
//                     outputs of the beacon tx in its (address) order.
//   R(1)            = SHA-256("polnode/abci-beacon/v2/genesis" || chain_id): block 1 follows no
//                     votes with extensions, so its value is public from genesis.
//
// Bias bound. VRF uniqueness gives each validator exactly one possible output per alpha(h), and
// alpha(h) is fixed before anyone votes at h, so no validator can grind its own contribution, and
// without the other validators' keys nobody predicts theirs before they vote. What the proposer of
// h+1 still chooses is which subset of the extensions it received to include (any subset holding
// more than 2/3 of the power), and whether to propose at all. With n equal validators that is at
// most log2(sum over k > 2n/3 of C(n, k)) bits: 4 validators, the 5 subsets of 3 or 4, 2.3 bits (the
// proposer picks the best of 5 draws); 100 validators, 88.8 bits, where the bound is instead the
// proposer's hashing budget within its propose timeout (one SHA-256 per subset tried). Withholding
// its proposal hands the same choice to the next round's proposer and costs it the block. A
// coalition holding several keys learns nothing before the others vote except its own outputs, so
// it adds no choice beyond leaving its own extensions out within the same 2/3 rule.
#ifndef POLNODE_LEDGER_ABCI_BEACON_H_
#define POLNODE_LEDGER_ABCI_BEACON_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/sha256.h"
#include "polnode/consensus/vrf.h"

namespace polnode::node {

/// CometBFT's validator address: the first 20 bytes of SHA-256 of its consensus public key.
inline constexpr std::size_t kValidatorAddressBytes = 20;
/// The first byte of the beacon tx. No polnode transaction envelope starts with it (a protobuf
/// message never starts with field number 0), and CheckTx refuses it from users.
inline constexpr std::uint8_t kBeaconTxPrefix = 0x00;
/// One entry of the beacon tx: address, then the VRF proof.
inline constexpr std::size_t kBeaconEntryBytes = kValidatorAddressBytes + consensus::kVrfProofBytes;

/// The VRF public key of each validator, by its 20-byte address (genesis app_state's beacon_keys).
using BeaconKeys = std::map<std::string, consensus::XOnlyPublicKey>;
/// A validator set's voting power, by 20-byte address (an ABCI CommitInfo's votes).
using VotingPowers = std::map<std::string, std::int64_t>;

struct BeaconEntry {
  std::string address;  // kValidatorAddressBytes bytes
  consensus::VrfProof proof{};
};

/// What the validators' VRFs are evaluated on for height `height` (the file comment's alpha(h)).
std::vector<std::uint8_t> BeaconAlpha(std::string_view chain_id, std::uint64_t height,
                                      const consensus::Hash256& previous_randomness);

/// R(1): the randomness of block 1, which no votes precede.
consensus::Hash256 GenesisBeacon(std::string_view chain_id);

/// The vote extension of the validator holding `key` at the height `alpha` was made for: the VRF
/// proof bytes. kInternal only if the VRF fails on a valid key.
[[nodiscard]] Result<std::string> MakeBeaconExtension(const consensus::SecretKey& key, std::span<const std::uint8_t> alpha);

/// The VRF output that `extension` proves for the validator at `address` on `alpha`.
/// kInvalidArgument when the extension is not exactly one proof, the address has no registered
/// key, or the proof does not verify with it.
[[nodiscard]] Result<consensus::Hash256> VerifyBeaconExtension(const BeaconKeys& keys, std::string_view address,
                                                               std::string_view extension,
                                                               std::span<const std::uint8_t> alpha);

/// The beacon tx of `entries` (given in strictly ascending address order).
std::string EncodeBeaconTx(const std::vector<BeaconEntry>& entries);

/// Whether `tx` is meant as a beacon tx (starts with kBeaconTxPrefix), well formed or not.
bool IsBeaconTx(std::string_view tx);

/// The entries of a beacon tx, checking its shape only: the prefix, a whole number of entries, at
/// least one, addresses strictly ascending (so none twice). kInvalidArgument otherwise.
[[nodiscard]] Result<std::vector<BeaconEntry>> DecodeBeaconTx(std::string_view tx);

/// The randomness a block whose beacon tx is `tx` gets, the file comment's R(h+1): `powers` is the
/// validator set that voted at h (the block's last commit) and `alpha` is alpha(h). kInvalidArgument
/// when the tx is malformed, names a validator outside `powers` or without a key, carries a proof
/// that does not verify, or its validators hold 2/3 of the power or less.
[[nodiscard]] Result<consensus::Hash256> VerifyBeaconTx(std::string_view tx, const BeaconKeys& keys,
                                                        const VotingPowers& powers, std::span<const std::uint8_t> alpha);

/// A validator's vote as PrepareProposal receives it: its address and vote extension.
struct ExtendedVote {
  std::string address;
  std::string extension;
};

/// The beacon tx a proposer puts first in block h+1: every vote of `votes` (the local last commit
/// of h) whose extension verifies, in address order. CometBFT hands PrepareProposal a late
/// precommit's extension without calling VerifyVoteExtension on it, so each is checked here.
/// kUnavailable when the valid ones hold 2/3 of `powers` or less (no valid beacon tx exists).
[[nodiscard]] Result<std::string> BuildBeaconTx(const std::vector<ExtendedVote>& votes, const BeaconKeys& keys,
                                                const VotingPowers& powers, std::span<const std::uint8_t> alpha);

}  // namespace polnode::node

#endif  // POLNODE_LEDGER_ABCI_BEACON_H_
