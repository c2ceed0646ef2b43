// Names and randomness of the protocol, as pure functions so that solvers, verifiers and auditors
// compute exactly what the ledger computed:
//   - a task's spec hash and id;
//   - the forced-error seed (block randomness drawn after the claim) and the forced-error flag,
//     which also depends on the solver's committed secret, so only the solver knows it before the
//     reveal and no one (solver included) can choose it;
//   - the segment beacon (block randomness drawn after the proof commitment), the verifier
//     assignment scores and the segments each verifier replays.
// Every hash starts with a versioned domain string (encoding.h) so no two purposes collide.
#ifndef POLNODE_CONTRACTS_BEACON_H_
#define POLNODE_CONTRACTS_BEACON_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "polnode/consensus/sha256.h"
#include "polnode/contracts.pb.h"

namespace polnode::contracts {

using consensus::Hash256;

/// SHA-256 over the canonical encoding of every TaskSpec field, in field-number order.
Hash256 TaskSpecHash(const proto::TaskSpec& spec);

/// The id of a task: H(spec hash, submitter key, the submitting tx's nonce). The nonce makes two
/// submissions of one spec (by anyone) distinct tasks.
Hash256 TaskIdFor(const Hash256& spec_hash, std::string_view submitter, std::uint64_t nonce);

/// SHA-256 of the solver's secret: what a claim commits to.
Hash256 SecretCommitment(std::string_view secret);

/// The forced-error seed of `task_id`, from the randomness of a block after the claim.
Hash256 ForcedSeed(const Hash256& block_randomness, std::string_view task_id);

/// Whether the round is a forced error: H(secret, seed, task id) read as a big-endian uint64 is
/// divisible by `rate` (probability ~1/rate). Never forced when rate is 0.
bool IsForcedError(std::string_view secret, std::string_view forced_seed, std::string_view task_id, std::uint64_t rate);

/// The segment beacon, from the randomness of a block after the proof commitment.
Hash256 SegmentBeacon(const Hash256& block_randomness, std::string_view task_id, std::string_view proof_root);

/// A verifier's assignment score for a beacon; the lowest scores among eligible verifiers are
/// assigned (ties cannot occur between distinct keys short of a SHA-256 collision).
Hash256 AssignmentScore(std::string_view segment_beacon, std::string_view verifier);

/// The `q` distinct segment indices in [0, segment_count) that `verifier` replays, ascending,
/// drawn uniformly (rejection sampling, no modulo bias) from the beacon and the verifier key, so
/// different verifiers check different segments. Empty if q == 0 or q > segment_count.
std::vector<std::uint64_t> DrawSegments(std::string_view segment_beacon, std::string_view verifier,
                                        std::uint64_t segment_count, std::uint32_t q);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_BEACON_H_
