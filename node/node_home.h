// A node home directory, as `polnode init` lays it out and `polnode ledger`/`polnode tx` read it:
//   DIR/config.toml   node settings (node_config.h)
//   DIR/genesis.json  the chain's genesis (genesis_file.h)
//   DIR/node.key      the node's secret key (consensus/key_file.h; mode 0600)
//   DIR/<data_dir>    the RocksDB chain store (config ledger.data_dir, default "data")
#ifndef POLNODE_NODE_NODE_HOME_H_
#define POLNODE_NODE_NODE_HOME_H_

#include <string>

#include "genesis_file.h"
#include "node_config.h"
#include "polnode/base/status.h"

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

/// Reads config.toml and genesis.json of the home at `dir`. kNotFound (with a hint to run
/// `polnode init`) when the directory or a file is missing; parse errors name the file.
[[nodiscard]] Result<NodeHome> LoadNodeHome(const std::string& dir);

}  // namespace polnode::node

#endif  // POLNODE_NODE_NODE_HOME_H_
