// Genesis: the params every node of a chain must share, their rules, and sensible defaults for a
// local devnet. Application::InitChain applies a proto::GenesisSpec to an empty store.
#ifndef POLNODE_CONTRACTS_GENESIS_H_
#define POLNODE_CONTRACTS_GENESIS_H_

#include <string_view>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts {

/// Params for a local devnet: 1-unit fees, locks that scale with the payment, windows of tens of
/// blocks, 3 verifiers, forced errors at a rate of 1 in 5, and the fee, jackpot and lock sizes
/// econ/README.md derives. Passes ValidateParams.
proto::Params DefaultParams();

/// kInvalidArgument naming the first broken rule: every min stake and window >= 1 (a zero
/// window would schedule a deadline in the past), beacon_delay >= 1 (the draw must come from a
/// block after the commitment), 1 <= verifiers_per_task <= 64, basis points <= 10000,
/// max_training_window > beacon_delay, mempool_nonce_window >= 1, max_segments_per_verification
/// >= 1, max_payload_bytes >= 1024.
[[nodiscard]] Status ValidateParams(const proto::Params& params);

/// kInvalidArgument unless `chain_id` is 1..64 characters of [A-Za-z0-9._/-] (the envelope's
/// rule, so every genesis chain id can be signed for).
[[nodiscard]] Status ValidateChainId(std::string_view chain_id);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_GENESIS_H_
