#include "polnode/consensus/state_root.h"

#include <array>
#include <utility>

namespace polnode::consensus {
namespace {

constexpr std::uint32_t kBuckets = std::uint32_t{1} << kStateBucketBits;
constexpr std::string_view kBucketDomain = "polnode/state-bucket/v2";

void AppendBe(Sha256Hasher& hasher, std::uint64_t n, int bytes) {
  std::array<std::uint8_t, 8> be{};
  for (int i = bytes - 1; i >= 0; --i) {
    be[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n & 0xff);
    n >>= 8;
  }
  hasher.Update(std::span<const std::uint8_t>(be.data(), static_cast<std::size_t>(bytes)));
}

void AppendPair(Sha256Hasher& hasher, std::string_view key, std::string_view value) {
  AppendBe(hasher, key.size(), 8);
  hasher.Update(key);
  AppendBe(hasher, value.size(), 8);
  hasher.Update(value);
}

Hash256 NodeHash(const Hash256& left, const Hash256& right) {
  Sha256Hasher h;
  const std::uint8_t tag = 0x01;
  h.Update(std::span<const std::uint8_t>(&tag, 1));
  h.Update(std::span<const std::uint8_t>(left));
  h.Update(std::span<const std::uint8_t>(right));
  return h.Finalize();
}

Hash256 RootOf(const Hash256& top) {
  Sha256Hasher h;
  h.Update(kStateRootDomain);
  h.Update(std::span<const std::uint8_t>(top));
  return h.Finalize();
}

}  // namespace

std::uint32_t StateBucketOf(std::string_view key) {
  const Hash256 h = Sha256(key);
  return (std::uint32_t{h[0]} << 8) | h[1];
}

StateTree::StateTree() : buckets_(kBuckets) {
  levels_.emplace_back(kBuckets, Hash256{});
  for (int level = 1; level <= kStateBucketBits; ++level) {
    const std::vector<Hash256>& below = levels_.back();
    std::vector<Hash256> nodes(below.size() / 2);
    // Every node of an empty tree is the same per level: hash once, copy.
    const Hash256 empty = NodeHash(below[0], below[1]);
    std::fill(nodes.begin(), nodes.end(), empty);
    levels_.push_back(std::move(nodes));
  }
}

void StateTree::Set(std::string_view key, std::optional<std::string_view> value) {
  const std::uint32_t b = StateBucketOf(key);
  Bucket& bucket = buckets_[b];
  auto it = bucket.find(key);
  if (value) {
    if (it == bucket.end()) {
      bucket.emplace(std::string(key), std::string(*value));
      ++size_;
    } else {
      it->second.assign(*value);
    }
  } else if (it != bucket.end()) {
    bucket.erase(it);
    --size_;
  }
  dirty_.insert(b);
}

std::optional<std::string_view> StateTree::Get(std::string_view key) const {
  const Bucket& bucket = buckets_[StateBucketOf(key)];
  auto it = bucket.find(key);
  if (it == bucket.end()) return std::nullopt;
  return std::string_view(it->second);
}

Hash256 StateTree::LeafOf(std::uint32_t b, const BucketWrites& writes) const {
  // Merge the committed pairs with the pending writes of this bucket, both in key order.
  const Bucket& bucket = buckets_[b];
  Sha256Hasher h;
  h.Update(kBucketDomain);
  AppendBe(h, b, 4);
  bool any = false;
  auto c = bucket.begin();
  auto p = writes.begin();
  while (c != bucket.end() || p != writes.end()) {
    if (p == writes.end() || (c != bucket.end() && std::string_view(c->first) < p->first)) {
      AppendPair(h, c->first, c->second);
      any = true;
      ++c;
      continue;
    }
    if (c != bucket.end() && std::string_view(c->first) == p->first) ++c;
    if (*p->second) {
      AppendPair(h, p->first, **p->second);
      any = true;
    }
    ++p;
  }
  if (!any) return Hash256{};
  return h.Finalize();
}

void StateTree::Rehash() {
  static const BucketWrites kNone;
  std::set<std::uint32_t> changed = std::move(dirty_);
  dirty_.clear();
  for (std::uint32_t b : changed) levels_[0][b] = LeafOf(b, kNone);
  for (int level = 1; level <= kStateBucketBits; ++level) {
    std::set<std::uint32_t> parents;
    for (std::uint32_t i : changed) parents.insert(i / 2);
    const std::vector<Hash256>& below = levels_[static_cast<std::size_t>(level - 1)];
    for (std::uint32_t i : parents) levels_[static_cast<std::size_t>(level)][i] = NodeHash(below[2 * i], below[2 * i + 1]);
    changed = std::move(parents);
  }
}

Hash256 StateTree::root() const { return RootOf(levels_.back()[0]); }

Hash256 StateTree::RootWith(const StateDelta& pending) const {
  // The leaves `pending` changes, then each level's changed nodes from the level below (changed
  // ones from this computation, the rest from the committed tree).
  std::map<std::uint32_t, BucketWrites> writes;  // pending is in key order, so each list is too
  for (const auto& [key, value] : pending) writes[StateBucketOf(key)].emplace_back(key, &value);
  std::map<std::uint32_t, Hash256> changed;
  for (const auto& [b, bucket_writes] : writes) changed.emplace(b, LeafOf(b, bucket_writes));
  for (int level = 1; level <= kStateBucketBits; ++level) {
    const std::vector<Hash256>& below = levels_[static_cast<std::size_t>(level - 1)];
    auto at = [&](std::uint32_t i) -> const Hash256& {
      auto it = changed.find(i);
      return it != changed.end() ? it->second : below[i];
    };
    std::map<std::uint32_t, Hash256> parents;
    for (const auto& [i, unused] : changed) {
      const std::uint32_t parent = i / 2;
      if (parents.count(parent) == 0) parents.emplace(parent, NodeHash(at(2 * parent), at(2 * parent + 1)));
    }
    changed = std::move(parents);
  }
  return RootOf(changed.empty() ? levels_.back()[0] : changed.begin()->second);
}

}  // namespace polnode::consensus
