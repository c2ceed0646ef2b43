#include "polnode/ledger/chain_state.h"

namespace polnode::node {

Result<std::optional<std::string>> BlockState::Get(std::string_view key) const {
  if (auto it = delta_.find(key); it != delta_.end()) return it->second;
  return store_.GetState(key);
}

void BlockState::Put(std::string key, std::string value) { delta_[std::move(key)] = std::move(value); }

void BlockState::Delete(std::string key) { delta_[std::move(key)] = std::nullopt; }

Status BlockState::Scan(std::string_view prefix, const contracts::StateVisitor& visit) const {
  return store_.ScanState(prefix, delta_, visit);
}

}  // namespace polnode::node
