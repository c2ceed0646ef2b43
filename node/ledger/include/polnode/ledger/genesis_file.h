// The chain's starting point: chain id, params, initial balances and the time of block 0. A node
// home keeps it as genesis.json (genesis_json.h).
#ifndef POLNODE_LEDGER_GENESIS_FILE_H_
#define POLNODE_LEDGER_GENESIS_FILE_H_

#include <cstdint>

#include "polnode/contracts.pb.h"

namespace polnode::node {

struct GenesisFile {
  proto::GenesisSpec spec;        // chain id, params, allocations
  std::int64_t genesis_time_unix_ms = 0;  // timestamp of block 0
};

}  // namespace polnode::node

#endif  // POLNODE_LEDGER_GENESIS_FILE_H_
