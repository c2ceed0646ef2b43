#include "polnode/consensus/state_root.h"

#include <array>
#include <string>

namespace polnode::consensus {
namespace {

void AppendLength(Sha256Hasher& hasher, std::uint64_t n) {
  std::array<std::uint8_t, 8> be{};
  for (int i = 7; i >= 0; --i) {
    be[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n & 0xff);
    n >>= 8;
  }
  hasher.Update(std::span<const std::uint8_t>(be));
}

}  // namespace

StateRootBuilder::StateRootBuilder() { hasher_.Update(kStateRootDomain); }

void StateRootBuilder::Add(std::string_view key, std::string_view value) {
  if (count_ > 0 && !(std::string_view(last_key_) < key)) ordered_ = false;
  last_key_.assign(key);
  ++count_;
  AppendLength(hasher_, key.size());
  hasher_.Update(key);
  AppendLength(hasher_, value.size());
  hasher_.Update(value);
}

Result<Hash256> StateRootBuilder::Finish() {
  Hash256 root = hasher_.Finalize();
  if (!ordered_) return Status::Internal("state root: keys were not added in strictly ascending order");
  return root;
}

}  // namespace polnode::consensus
