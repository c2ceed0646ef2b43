// A node home directory, as `polnode init` lays it out and `polnode ledger`/`polnode tx` read it:
//   DIR/config.toml   node settings (node_config.h)
//   DIR/genesis.json  the chain's genesis (genesis_file.h)
//   DIR/node.key      the node's secret key (consensus/key_file.h; mode 0600)
//   DIR/<data_dir>    the RocksDB chain store (config ledger.data_dir, default "data")
#ifndef POLNODE_RPC_NODE_HOME_H_
#define POLNODE_RPC_NODE_HOME_H_

#include <cstdint>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"
#include "polnode/contracts/genesis.h"
#include "polnode/ledger/genesis_file.h"
#include "polnode/ledger/node_config.h"

namespace polnode::node {

inline constexpr char kConfigFileName[] = "config.toml";
inline constexpr char kGenesisFileName[] = "genesis.json";
inline constexpr char kNodeKeyFileName[] = "node.key";

struct NodeHome {
  std::string dir;
  NodeConfig config;
  GenesisFile genesis;

  std::string ConfigPath() const { return dir + "/" + kConfigFileName; }
  std::string GenesisPath() const { return dir + "/" + kGenesisFileName; }
  std::string KeyPath() const { return dir + "/" + kNodeKeyFileName; }
  /// config.data_dir, resolved against `dir` when relative.
  std::string DataDir() const;
};

/// What a new node home's genesis and config hold; its node key is made fresh.
struct NodeHomeSpec {
  std::string chain_id = "polnode-local";
  proto::Params params = contracts::DefaultParams();
  std::uint64_t node_balance = 1'000'000'000'000;  // the node key's genesis balance (0: no account)
  std::vector<proto::Allocation> accounts;          // more genesis accounts, after the node's
  NodeConfig config;
};

/// A home CreateNodeHome made.
struct NewNodeHome {
  NodeHome home;            // as LoadNodeHome reads it back
  std::string node_pubkey;  // the new node key's x-only public key, 32 raw bytes
};

/// Creates the node home at `dir` (mode 0700): a new node key (mode 0600), genesis.json (genesis
/// time: now) and config.toml. kAlreadyExists when any of the three exists (a home is never
/// overwritten); kInvalidArgument for a bad chain id or a config the node would refuse.
[[nodiscard]] Result<NewNodeHome> CreateNodeHome(const std::string& dir, const NodeHomeSpec& spec);

/// Reads config.toml and genesis.json of the home at `dir`. kNotFound (with a hint to run
/// `polnode init`) when the directory or a file is missing; parse errors name the file.
[[nodiscard]] Result<NodeHome> LoadNodeHome(const std::string& dir);

}  // namespace polnode::node

#endif  // POLNODE_RPC_NODE_HOME_H_
