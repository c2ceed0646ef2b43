#include "polnode/consensus/state_root.h"

#include <algorithm>
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

// `h` is reused across the many node hashes of a root: a fresh hasher per node allocated an
// OpenSSL context each time, which cost more than the two compression rounds of the hash itself.
Hash256 NodeHash(Sha256Hasher& h, const Hash256& left, const Hash256& right) {
  std::array<std::uint8_t, 65> message;
  message[0] = 0x01;
  std::copy(left.begin(), left.end(), message.begin() + 1);
  std::copy(right.begin(), right.end(), message.begin() + 33);
  h.Update(std::span<const std::uint8_t>(message));
  return h.Finalize();
}

// Node hashes of one level, in index order.
using LevelNodes = std::vector<std::pair<std::uint32_t, Hash256>>;

// The parents of `changed` (level-1 nodes in index order), their children taken from `changed`
// where present and from `below` (the tree's level) otherwise. In index order.
LevelNodes ParentsOf(const LevelNodes& changed, const std::vector<Hash256>& below, Sha256Hasher& h) {
  LevelNodes parents;
  parents.reserve(changed.size());
  for (std::size_t k = 0; k < changed.size();) {
    const std::uint32_t parent = changed[k].first / 2;
    const Hash256* left = &below[2 * parent];
    const Hash256* right = &below[2 * parent + 1];
    // Sorted and distinct: a parent's changed children are adjacent, left before right.
    for (; k < changed.size() && changed[k].first / 2 == parent; ++k) {
      (changed[k].first % 2 == 0 ? left : right) = &changed[k].second;
    }
    parents.emplace_back(parent, NodeHash(h, *left, *right));
  }
  return parents;
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
  Sha256Hasher h;
  for (int level = 1; level <= kStateBucketBits; ++level) {
    const std::vector<Hash256>& below = levels_.back();
    std::vector<Hash256> nodes(below.size() / 2);
    // Every node of an empty tree is the same per level: hash once, copy.
    const Hash256 empty = NodeHash(h, below[0], below[1]);
    std::fill(nodes.begin(), nodes.end(), empty);
    levels_.push_back(std::move(nodes));
  }
}

void StateTree::Set(std::string_view key, std::optional<std::string_view> value) {
  const std::uint32_t b = StateBucketOf(key);
  SetPair(buckets_[b], key, value);
  dirty_.insert(b);
  ++generation_;
}

void StateTree::SetPair(Bucket& bucket, std::string_view key, std::optional<std::string_view> value) {
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
}

std::optional<std::string_view> StateTree::Get(std::string_view key) const {
  const Bucket& bucket = buckets_[StateBucketOf(key)];
  auto it = bucket.find(key);
  if (it == bucket.end()) return std::nullopt;
  return std::string_view(it->second);
}

Hash256 StateTree::LeafOf(std::uint32_t b, const BucketWrites& writes, Sha256Hasher& h) const {
  // Merge the committed pairs with the pending writes of this bucket, both in key order.
  const Bucket& bucket = buckets_[b];
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
  // Finalize also resets the hasher for its next use; an empty bucket's hash is discarded.
  const Hash256 digest = h.Finalize();
  return any ? digest : Hash256{};
}

void StateTree::Rehash() {
  static const BucketWrites kNone;
  Sha256Hasher h;
  LevelNodes changed;
  changed.reserve(dirty_.size());
  for (std::uint32_t b : dirty_) changed.emplace_back(b, LeafOf(b, kNone, h));  // std::set: index order
  dirty_.clear();
  ++generation_;
  for (const auto& [b, leaf] : changed) levels_[0][b] = leaf;
  for (int level = 1; level <= kStateBucketBits; ++level) {
    changed = ParentsOf(changed, levels_[static_cast<std::size_t>(level - 1)], h);
    for (const auto& [i, node] : changed) levels_[static_cast<std::size_t>(level)][i] = node;
  }
}

Hash256 StateTree::root() const { return RootOf(levels_.back()[0]); }

Hash256 StateTree::RootWith(const StateDelta& pending, StateRootUpdate* update) const {
  // The leaves `pending` changes, then each level's changed nodes from the level below (changed
  // ones from this computation, the rest from the committed tree). Sorted vectors rather than
  // maps: a block of 1,000 transfers changes some 2,000 leaves and 12,000 nodes.
  struct Write {
    std::uint32_t bucket;
    std::string_view key;
    const std::optional<std::string>* value;
  };
  std::vector<Write> writes;
  writes.reserve(pending.size());
  for (const auto& [key, value] : pending) writes.push_back(Write{StateBucketOf(key), key, &value});
  if (update != nullptr) {
    update->buckets.clear();
    update->buckets.reserve(writes.size());
    for (const Write& w : writes) update->buckets.push_back(w.bucket);  // still in key order
  }
  // Stable: `pending` is in key order, so each bucket's writes stay in key order.
  std::stable_sort(writes.begin(), writes.end(), [](const Write& a, const Write& b) { return a.bucket < b.bucket; });
  Sha256Hasher h;
  LevelNodes changed;
  BucketWrites bucket_writes;
  for (std::size_t k = 0; k < writes.size();) {
    const std::uint32_t b = writes[k].bucket;
    bucket_writes.clear();
    for (; k < writes.size() && writes[k].bucket == b; ++k) bucket_writes.emplace_back(writes[k].key, writes[k].value);
    changed.emplace_back(b, LeafOf(b, bucket_writes, h));
  }
  if (update != nullptr) {
    update->levels.clear();
    update->levels.reserve(kStateBucketBits + 1);
    update->levels.push_back(changed);
    update->generation = generation_;
  }
  for (int level = 1; level <= kStateBucketBits; ++level) {
    changed = ParentsOf(changed, levels_[static_cast<std::size_t>(level - 1)], h);
    if (update != nullptr) update->levels.push_back(changed);
  }
  return RootOf(changed.empty() ? levels_.back()[0] : changed.front().second);
}

void StateTree::ApplyWith(const StateDelta& pending, const StateRootUpdate& update) {
  const bool have_buckets = update.buckets.size() == pending.size();
  std::size_t k = 0;
  for (const auto& [key, value] : pending) {
    const std::uint32_t b = have_buckets ? update.buckets[k++] : StateBucketOf(key);
    SetPair(buckets_[b], key, value ? std::optional<std::string_view>(*value) : std::nullopt);
  }
  for (std::size_t level = 0; level < update.levels.size() && level < levels_.size(); ++level) {
    for (const auto& [i, node] : update.levels[level]) levels_[level][i] = node;
  }
  ++generation_;
}

}  // namespace polnode::consensus
