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
  Hash256 RootWith(const StateDelta& pending) const;

  /// Number of pairs.
  std::size_t size() const { return size_; }

 private:
  using Bucket = std::map<std::string, std::string, std::less<>>;
  // Pending writes that fall into one bucket, in key order.
  using BucketWrites = std::vector<std::pair<std::string_view, const std::optional<std::string>*>>;

  // The leaf of bucket b with `writes` applied over its pairs.
  Hash256 LeafOf(std::uint32_t b, const BucketWrites& writes) const;

  std::vector<Bucket> buckets_;
  std::vector<std::vector<Hash256>> levels_;  // levels_[0]: the leaves; levels_[16]: the top node
  std::set<std::uint32_t> dirty_;
  std::size_t size_ = 0;
};

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_STATE_ROOT_H_
