// Which segments of a proof a verifier replays (DESIGN.md section 4): drawn uniformly without
// replacement from a 32-byte beacon that did not exist when the solver committed its Merkle root.
//
// Rule (version 1): a partial Fisher-Yates shuffle of [0, n). Draw j (j = 0..q-1) swaps position
// j with position j + r mod (n - j), where r is the next accepted 64-bit word of the stream
//   block c = SHA-256(String "polnode/pol-segments/v1" || Fixed beacon || U64 c), c = 0, 1, ...
//   words = the block's four 8-byte little-endian words, in order.
// A word r is accepted only when r <= 2^64 - 1 - (2^64 mod (n - j)), so every index is equally
// likely (no modulo bias). The answer is positions 0..q-1 in draw order.
#ifndef POLNODE_VERIFIER_SEGMENTS_H_
#define POLNODE_VERIFIER_SEGMENTS_H_

#include <cstdint>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"

namespace polnode::verifier {

/// `q` distinct segment indices in [0, segment_count) by the rule above. kInvalidArgument unless
/// 1 <= q <= segment_count <= 2^32.
Result<std::vector<std::int64_t>> SelectSegments(const consensus::Hash256& beacon,
                                                 std::int64_t segment_count, std::int64_t q);

}  // namespace polnode::verifier

#endif  // POLNODE_VERIFIER_SEGMENTS_H_
