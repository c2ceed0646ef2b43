// The state root: one SHA-256 commitment over the whole ledger state (every key/value pair the
// contracts have written). Every block header carries the root after its transactions ran, so
// `verify-chain` and any future second node can check they reached the very same state.
//
// Definition (version 1), exact to the byte:
//
//   root = SHA-256( "polnode/state-root/v1" (21 ASCII bytes, no terminator)
//                   || for each pair (k, v) in ascending bytewise order of k:
//                        u64be(len(k)) || k || u64be(len(v)) || v )
//
// where u64be is the 8-byte big-endian length. Keys are unique; an empty value is a present key
// (distinct from a deleted one). The empty state hashes the domain string alone. Length prefixes
// make the concatenation unambiguous, so two different states cannot produce the same byte stream.
// Cost is O(total state bytes) per computation; an incremental structure can replace it later,
// behind a new version string, without touching callers.
#ifndef POLNODE_CONSENSUS_STATE_ROOT_H_
#define POLNODE_CONSENSUS_STATE_ROOT_H_

#include <cstdint>
#include <string_view>

#include "polnode/consensus/sha256.h"

namespace polnode::consensus {

/// The domain string that starts every state-root hash.
inline constexpr std::string_view kStateRootDomain = "polnode/state-root/v1";

/// Streams pairs into the state-root hash. The caller must Add pairs in strictly ascending key
/// order; `Finish` returns kInternal if it did not (a bug in the caller's iteration, never data).
class StateRootBuilder {
 public:
  StateRootBuilder();

  /// Appends one pair. Keys must arrive in strictly ascending bytewise order.
  void Add(std::string_view key, std::string_view value);

  /// The root over everything added. The builder must not be used afterwards.
  [[nodiscard]] Result<Hash256> Finish();

  /// Number of pairs added so far.
  std::uint64_t count() const { return count_; }

 private:
  Sha256Hasher hasher_;
  std::string last_key_;
  std::uint64_t count_ = 0;
  bool ordered_ = true;
};

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_STATE_ROOT_H_
