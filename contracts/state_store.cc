#include "polnode/contracts/state_store.h"

namespace polnode::contracts {
namespace {

bool HasPrefix(std::string_view key, std::string_view prefix) { return key.substr(0, prefix.size()) == prefix; }

}  // namespace

Result<std::optional<std::string>> MemoryStateStore::Get(std::string_view key) const {
  auto it = pairs_.find(key);
  if (it == pairs_.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

void MemoryStateStore::Put(std::string key, std::string value) { pairs_[std::move(key)] = std::move(value); }

void MemoryStateStore::Delete(std::string key) { pairs_.erase(key); }

Status MemoryStateStore::Scan(std::string_view prefix, const StateVisitor& visit) const {
  for (auto it = pairs_.lower_bound(prefix); it != pairs_.end() && HasPrefix(it->first, prefix); ++it) {
    if (!visit(it->first, it->second)) break;
  }
  return Status::Ok();
}

Result<std::optional<std::string>> OverlayStateStore::Get(std::string_view key) const {
  auto it = writes_.find(key);
  if (it != writes_.end()) return it->second;
  return base_.Get(key);
}

void OverlayStateStore::Put(std::string key, std::string value) { writes_[std::move(key)] = std::move(value); }

void OverlayStateStore::Delete(std::string key) { writes_[std::move(key)] = std::nullopt; }

// Merges the sorted buffer into the base's sorted scan: the base is scanned first into memory
// (bounded by the prefix), because the visitor interface cannot be paused to interleave.
Status OverlayStateStore::Scan(std::string_view prefix, const StateVisitor& visit) const {
  std::map<std::string, std::string, std::less<>> merged;
  POLNODE_RETURN_IF_ERROR(base_.Scan(prefix, [&merged](std::string_view key, std::string_view value) {
    merged.emplace(std::string(key), std::string(value));
    return true;
  }));
  for (auto it = writes_.lower_bound(prefix); it != writes_.end() && HasPrefix(it->first, prefix); ++it) {
    if (it->second.has_value()) {
      merged[it->first] = *it->second;
    } else {
      merged.erase(it->first);
    }
  }
  for (const auto& [key, value] : merged) {
    if (!visit(key, value)) break;
  }
  return Status::Ok();
}

void OverlayStateStore::FlushTo(StateStore& target) { Apply(TakeWrites(), target); }

void OverlayStateStore::Apply(Writes writes, StateStore& target) {
  for (auto& [key, value] : writes) {
    if (value.has_value()) {
      target.Put(key, std::move(*value));
    } else {
      target.Delete(key);
    }
  }
}

}  // namespace polnode::contracts
