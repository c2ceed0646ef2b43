// The state root: one SHA-256 commitment over the whole ledger state (every key/value pair the
// contracts have written). Every block header carries the root after its transactions ran, so
// `verify-chain` and any other node can check they reached the very same state.
//
// Definition (version 2), exact to the byte. Keys fall into 2^16 buckets by the first two bytes of
// SHA-256(key), big-endian:
//
//   leaf(b)    = 32 zero bytes when bucket b is empty, else
//                SHA-256( "polnode/state-bucket/v2" || u32be(b)
//                         || for each pair (k, v) of bucket b in ascending bytewise order of k:
//                              u64be(len(k)) || k || u64be(len(v)) || v )
//   node(l, r) = SHA-256( 0x01 || l || r )   over the 2^16 leaves in bucket order, 16 levels
//   root       = SHA-256( "polnode/state-root/v2" || the top node )
//
// Length prefixes make each bucket's byte stream unambiguous; an empty value is a present key.
// Why buckets: a block changes few keys, and re-hashing the whole state every block grew with it
// (issue 15: O(state) per block). Here a changed key costs one bucket re-hash (about n / 2^16
// pairs) and 16 node hashes; unchanged buckets and nodes are kept from the previous block.
#ifndef POLNODE_CONSENSUS_STATE_ROOT_H_
#define POLNODE_CONSENSUS_STATE_ROOT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "polnode/consensus/sha256.h"

namespace polnode::consensus {

/// The domain string that starts the state-root hash.
inline constexpr std::string_view kStateRootDomain = "polnode/state-root/v2";

/// log2 of the number of buckets.
inline constexpr int kStateBucketBits = 16;

/// Pending writes over a state: a value replaces, nullopt deletes.
using StateDelta = std::map<std::string, std::optional<std::string>, std::less<>>;

/// The bucket of `key`: the first kStateBucketBits bits of SHA-256(key).
std::uint32_t StateBucketOf(std::string_view key);

/// The leaf and node hashes a RootWith computed (every node its pending writes change, level by
/// level, in index order), so the commit of those very writes can install them instead of hashing
/// the same buckets and nodes a second time (StateTree::ApplyWith).
struct StateRootUpdate {
  std::vector<std::vector<std::pair<std::uint32_t, Hash256>>> levels;  // [0]: leaves ... [16]: the top node
  std::uint64_t generation = 0;  // the tree's generation() it was computed on
  std::vector<std::uint32_t> buckets;  // StateBucketOf of each pending key, in key order
};

/// A state held in memory by bucket, with its root kept up to date incrementally.
/// Not thread-safe: the caller serializes access (ChainStore holds a lock).
class StateTree {
 public:
  /// The empty state.
  StateTree();

  /// Sets (or with nullopt erases) one pair; the root catches up at the next Rehash.
  void Set(std::string_view key, std::optional<std::string_view> value);

  /// The value of `key`, or nullopt.
  std::optional<std::string_view> Get(std::string_view key) const;

  /// Re-hashes the buckets Set touched and the nodes above them.
  void Rehash();

  /// The root of the state. Precondition: no Set since the last Rehash.
  Hash256 root() const;

  /// The root this state would have with `pending` applied, computed without changing it:
  /// O(buckets `pending` touches x (their size + 16)).
  /// With `update`, also returns the hashes computed (see StateRootUpdate).
  Hash256 RootWith(const StateDelta& pending, StateRootUpdate* update = nullptr) const;

  /// Applies `pending` (as Set of each pair followed by Rehash would) and installs the hashes of
  /// `update` instead of re-hashing. Precondition: `update` came from RootWith(pending, &update) on
  /// this tree at its current generation(), and no Set is waiting for a Rehash; ChainStore checks
  /// both (and falls back to Set + Rehash) since a stale update would give a wrong root silently.
  void ApplyWith(const StateDelta& pending, const StateRootUpdate& update);

  /// Changes with every Set, Rehash and ApplyWith: an update is only valid for the generation it
  /// was computed on.
  std::uint64_t generation() const { return generation_; }

  /// Whether a Set is waiting for a Rehash.
  bool dirty() const { return !dirty_.empty(); }

  /// Number of pairs.
  std::size_t size() const { return size_; }

 private:
  using Bucket = std::map<std::string, std::string, std::less<>>;
  // Pending writes that fall into one bucket, in key order.
  using BucketWrites = std::vector<std::pair<std::string_view, const std::optional<std::string>*>>;

  // The leaf of bucket b with `writes` applied over its pairs.
  Hash256 LeafOf(std::uint32_t b, const BucketWrites& writes, Sha256Hasher& hasher) const;
  // Sets one pair without marking its bucket dirty.
  void SetPair(Bucket& bucket, std::string_view key, std::optional<std::string_view> value);

  std::vector<Bucket> buckets_;
  std::vector<std::vector<Hash256>> levels_;  // levels_[0]: the leaves; levels_[16]: the top node
  std::set<std::uint32_t> dirty_;
  std::size_t size_ = 0;
  std::uint64_t generation_ = 0;
};

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_STATE_ROOT_H_
