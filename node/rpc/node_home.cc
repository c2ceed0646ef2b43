#include "polnode/rpc/node_home.h"

#include <sys/stat.h>

#include <filesystem>

#include "polnode/base/clock.h"
#include "polnode/base/file_util.h"
#include "polnode/consensus/key_file.h"
#include "polnode/rpc/genesis_json.h"

namespace polnode::node {

std::string NodeHome::DataDir() const {
  std::filesystem::path data(config.data_dir);
  return data.is_absolute() ? data.string() : (std::filesystem::path(dir) / data).string();
}

Result<NodeHome> LoadNodeHome(const std::string& dir) {
  NodeHome home;
  home.dir = dir;
  Result<std::vector<std::uint8_t>> config_text = ReadWholeFile(home.ConfigPath(), 1 << 20);
  if (!config_text.ok()) {
    if (config_text.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("no " + home.ConfigPath() + "; create the node home with 'polnode init --home " + dir + "'");
    }
    return config_text.status();
  }
  Result<NodeConfig> config = ParseNodeConfig(std::string(config_text->begin(), config_text->end()));
  if (!config.ok()) return config.status().WithContext(home.ConfigPath());
  home.config = std::move(config).value();
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> genesis_bytes, ReadWholeFile(home.GenesisPath(), 64 << 20));
  Result<GenesisFile> genesis = ParseGenesisJson(std::string(genesis_bytes.begin(), genesis_bytes.end()));
  if (!genesis.ok()) return genesis.status().WithContext(home.GenesisPath());
  home.genesis = std::move(genesis).value();
  return home;
}

Result<NewNodeHome> CreateNodeHome(const std::string& dir, const NodeHomeSpec& spec) {
  for (const char* name : {kConfigFileName, kGenesisFileName, kNodeKeyFileName}) {
    if (std::filesystem::exists(dir + "/" + name)) {
      return Status::AlreadyExists(dir + "/" + name + " exists; a node home is never overwritten");
    }
  }
  POLNODE_RETURN_IF_ERROR(contracts::ValidateChainId(spec.chain_id).WithContext("chain id"));
  // Round-trip through the parser so that no config is written the node would refuse.
  POLNODE_ASSIGN_OR_RETURN(NodeConfig config, ParseNodeConfig(FormatNodeConfig(spec.config)));

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError("create " + dir + ": " + ec.message());
  // The home holds the node key; keep it private like ~/.ssh.
  ::chmod(dir.c_str(), 0700);

  POLNODE_ASSIGN_OR_RETURN(consensus::SecretKey key, consensus::SecretKey::Generate());
  const auto& pubkey = key.PublicKey().bytes();
  NewNodeHome created;
  created.node_pubkey.assign(reinterpret_cast<const char*>(pubkey.data()), pubkey.size());
  NodeHome& home = created.home;
  home.dir = dir;
  home.config = std::move(config);
  home.genesis.spec.set_chain_id(spec.chain_id);
  *home.genesis.spec.mutable_params() = spec.params;
  home.genesis.genesis_time_unix_ms =
      SystemClock().UnixMillis();
  if (spec.node_balance > 0) {
    proto::Allocation* a = home.genesis.spec.add_allocations();
    a->set_pubkey(created.node_pubkey);
    a->set_amount(spec.node_balance);
  }
  for (const proto::Allocation& a : spec.accounts) *home.genesis.spec.add_allocations() = a;

  POLNODE_RETURN_IF_ERROR(consensus::WriteKeyFile(home.KeyPath(), key));
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(home.GenesisPath(), FormatGenesisJson(home.genesis)));
  POLNODE_RETURN_IF_ERROR(WriteFileAtomically(home.ConfigPath(), FormatNodeConfig(home.config)));
  return created;
}

}  // namespace polnode::node
