// Names and randomness of the protocol, as pure functions so that solvers, verifiers and auditors
// compute exactly what the ledger computed:
//   - a task's spec hash and id;
//   - the forced-error seed (block randomness drawn after the claim) and the forced-error flag,
//     which also depends on the solver's committed secret, so only the solver knows it before the
//     reveal and no one (solver included) can choose it;
//   - the segment beacon (block randomness drawn after the proof commitment), the draws of the
//     stake-weighted verifier assignment and the segments each verifier slot replays;
//   - the digest a verdict gives of the verifier's replayed final state.
// Every hash starts with a versioned domain string (encoding.h) so no two purposes collide.
#ifndef POLNODE_CONTRACTS_BEACON_H_
#define POLNODE_CONTRACTS_BEACON_H_

#include <cstddef>
#include <cstdint>
#include <span>
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

/// Whether checkpoint `k` (1 <= k <= checkpoints) is falsified in a forced round, in either mode:
/// each checkpoint independently with probability 1/2 from H(secret, seed, task id, k), and the
/// final one also whenever none of the 63 checkpoints before it is (so every forced round
/// falsifies at least one, and a verifier cannot tell from the draws which ones). Known only to
/// the solver (it depends on the secret) until the reveal.
bool IsForcedCheckpoint(std::string_view secret, std::string_view forced_seed, std::string_view task_id,
                        std::uint64_t k, std::uint64_t checkpoints);
/// Every k in [1, checkpoints] with IsForcedCheckpoint, ascending. O(checkpoints) hashes.
std::vector<std::uint64_t> ForcedCheckpoints(std::string_view secret, std::string_view forced_seed,
                                             std::string_view task_id, std::uint64_t checkpoints);

/// The segment beacon, from the randomness of a block after the proof commitment and the
/// submitter's revealed seed (empty when it committed none).
Hash256 SegmentBeacon(const Hash256& block_randomness, std::string_view task_id, std::string_view proof_root,
                      std::string_view submitter_seed);

/// The `counter`-th uniform 64-bit draw for filling verifier slot `slot` in assignment round
/// `round` of a task: StakeWeightedPicks turns it into a stake-weighted pick (a point in the
/// eligible verifiers' free stake counted in task locks, rejection-sampled so there is no modulo
/// bias).
std::uint64_t SelectionDraw(std::string_view segment_beacon, std::uint32_t round, std::uint32_t slot,
                            std::uint64_t counter);
/// Up to `count` picks of indices into `capacities` (how many task locks each candidate's free
/// stake covers), one per slot, with replacement: each pick is index i with probability
/// capacities[i] / (the sum of the capacities left), from a uniform point in that sum
/// (SelectionDraw(beacon, round, first_slot + pick number, counter), rejection-sampled: no
/// modulo bias) located in the cumulative capacities in index order, and takes one lock of i's
/// capacity, so a candidate is picked again while its stake covers another lock. The picks are
/// draws without replacement of lock-sized units of stake: a candidate's expected number of picks
/// is count x capacities[i] / sum, and how its stake is split over keys only matters through the
/// locks the parts cover (splitting never adds any). Fewer than `count` picks only when the
/// capacities run out. Precondition: the capacities sum to at most 2^64 - 1 (they count parts of
/// the supply).
std::vector<std::size_t> StakeWeightedPicks(std::span<const std::uint64_t> capacities, std::size_t count,
                                            std::string_view segment_beacon, std::uint32_t round,
                                            std::uint32_t first_slot);
/// What a verdict's or challenge's segment digest commits to: H(party key, segment, the state hash
/// the party's replay of that segment reached). Keyed by the party so that nobody can copy
/// another's, and by the segment so that a digest cannot be moved to another segment.
Hash256 SegmentDigest(std::string_view party, std::uint64_t segment, std::string_view end_state_hash);

/// The `q` distinct segment indices in [0, segment_count) that verifier slot `slot` (its index in
/// the task's verifier list) replays, ascending, drawn uniformly (rejection sampling, no modulo
/// bias) from the beacon and the slot index, so different slots check different segments, also
/// two slots one key was drawn for. Empty if q == 0 or q > segment_count.
std::vector<std::uint64_t> DrawSegments(std::string_view segment_beacon, std::uint32_t slot,
                                        std::uint64_t segment_count, std::uint32_t q);

/// The segments a whistleblower's challenge covers: `q` distinct segments in [0, segment_count)
/// drawn from the beacon and the challenger's key (as DrawSegments draws a slot's), plus the final
/// one, ascending and distinct. A challenger cannot pick them, so it cannot aim at the segments a
/// public reject already named without replaying; all segments when q + 1 >= segment_count.
std::vector<std::uint64_t> ChallengeSegments(std::string_view segment_beacon, std::string_view challenger,
                                             std::uint64_t segment_count, std::uint32_t q);

}  // namespace polnode::contracts

#endif  // POLNODE_CONTRACTS_BEACON_H_
