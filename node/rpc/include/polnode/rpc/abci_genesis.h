// The app_state of a CometBFT genesis for polnode (`polnode abci`): polnode's genesis.json
// (rpc/genesis_json.h) with one more top-level key, "beacon_keys", that registers each validator's
// VRF public key (node/ledger/abci_beacon.h) by its CometBFT address:
//   "beacon_keys": [{"address": "<40 hex>", "vrf_pubkey": "<64 hex>"}, ...]
#ifndef POLNODE_RPC_ABCI_GENESIS_H_
#define POLNODE_RPC_ABCI_GENESIS_H_

#include <string>
#include <string_view>

#include "polnode/base/status.h"
#include "polnode/ledger/abci_app.h"

namespace polnode::node {

/// Parses an app_state as above: the genesis as ParseGenesisJson does, the keys checked (hex of the
/// right length, a valid x-only key, no address twice, at least one). kInvalidArgument otherwise.
[[nodiscard]] Result<AbciGenesis> ParseAbciGenesisJson(std::string_view json);

/// `genesis_json` (polnode's genesis.json text, a JSON object) with `keys` added as "beacon_keys".
/// kInvalidArgument when it does not start with '{'.
[[nodiscard]] Result<std::string> AddBeaconKeys(std::string_view genesis_json, const BeaconKeys& keys);

}  // namespace polnode::node

#endif  // POLNODE_RPC_ABCI_GENESIS_H_
