// genesis.json: the chain's starting point (genesis_file.h), read by `polnode ledger` and
// `verify-chain`, written by `polnode init` and `polnode devnet`.
//
//   {
//     "chain_id": "polnode-local",
//     "genesis_time_unix_ms": 1700000000000,
//     "params": {"tx_fee": 1, ...every field of contracts.proto's Params...},
//     "accounts": [{"pubkey": "<64 hex>", "balance": 1000000000}]
//   }
//
// Every key is required (a genesis that silently took a default would differ between nodes that
// were built at different times); unknown keys are rejected; integers must be exact JSON integers.
#ifndef POLNODE_RPC_GENESIS_JSON_H_
#define POLNODE_RPC_GENESIS_JSON_H_

#include <string>
#include <string_view>

#include "polnode/base/status.h"
#include "polnode/ledger/genesis_file.h"

namespace polnode::node {

/// Parses genesis.json text. kInvalidArgument naming the offending key. Does not run the
/// contracts' own validation (InitChain does that when the ledger starts).
[[nodiscard]] Result<GenesisFile> ParseGenesisJson(std::string_view json);

/// The genesis.json text of `genesis` (pretty enough to edit by hand: one account per line).
std::string FormatGenesisJson(const GenesisFile& genesis);

}  // namespace polnode::node

#endif  // POLNODE_RPC_GENESIS_JSON_H_
