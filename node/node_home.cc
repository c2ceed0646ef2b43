#include "node_home.h"

#include "polnode/base/file_util.h"

#include <filesystem>


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

}  // namespace polnode::node
