#include "polnode/contracts/beacon.h"

#include <algorithm>
#include <span>

#include "polnode/consensus/encoding.h"

namespace polnode::contracts {
namespace {

std::span<const std::uint8_t> Span(std::string_view bytes) {
  return {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()};
}

// The first 8 bytes of a digest as a big-endian integer.
std::uint64_t Leading64(const Hash256& hash) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < 8; ++i) value = (value << 8) | hash[i];
  return value;
}

}  // namespace

Hash256 TaskSpecHash(const proto::TaskSpec& spec) {
  consensus::HashWriter w;
  w.String("polnode/task-spec/v3");
  w.String(spec.model_spec());
  w.Bytes(Span(spec.dataset_hash()));
  w.Bytes(Span(spec.hyperparameters_hash()));
  w.U64(spec.total_steps());
  w.U64(spec.checkpoint_interval());
  w.U32(spec.segments_per_verification());
  w.U64(spec.payment());
  w.U64(spec.claim_window());
  w.U64(spec.training_window());
  w.Bytes(Span(spec.graph_root()));
  w.Bytes(Span(spec.batch_root()));
  w.U64(spec.step_leaf_count());
  w.U32(spec.state_tensor_count());
  w.Bool(spec.tolerant());
  w.Bytes(Span(spec.initial_state_hash()));
  // Only tolerant specs have one (exact specs hash as they did before it existed).
  if (spec.tolerant()) w.F32(spec.forced_delta());
  return w.Finalize();
}

Hash256 TaskIdFor(const Hash256& spec_hash, std::string_view submitter, std::uint64_t nonce) {
  consensus::HashWriter w;
  w.String("polnode/task-id/v1");
  w.Fixed(spec_hash);
  w.Bytes(Span(submitter));
  w.U64(nonce);
  return w.Finalize();
}

Hash256 SecretCommitment(std::string_view secret) { return consensus::Sha256(secret); }

Hash256 ForcedSeed(const Hash256& block_randomness, std::string_view task_id) {
  consensus::HashWriter w;
  w.String("polnode/forced-seed/v1");
  w.Fixed(block_randomness);
  w.Bytes(Span(task_id));
  return w.Finalize();
}

bool IsForcedError(std::string_view secret, std::string_view forced_seed, std::string_view task_id,
                   std::uint64_t rate) {
  if (rate == 0) return false;
  consensus::HashWriter w;
  w.String("polnode/forced-error/v1");
  w.Bytes(Span(secret));
  w.Bytes(Span(forced_seed));
  w.Bytes(Span(task_id));
  return Leading64(w.Finalize()) % rate == 0;
}

Hash256 SegmentBeacon(const Hash256& block_randomness, std::string_view task_id, std::string_view proof_root,
                      std::string_view submitter_seed) {
  consensus::HashWriter w;
  w.String("polnode/segment-beacon/v2");
  w.Fixed(block_randomness);
  w.Bytes(Span(task_id));
  w.Bytes(Span(proof_root));
  w.Bytes(Span(submitter_seed));
  return w.Finalize();
}

std::uint64_t SelectionDraw(std::string_view segment_beacon, std::uint32_t round, std::uint32_t slot,
                            std::uint64_t counter) {
  consensus::HashWriter w;
  w.String("polnode/assignment/v2");
  w.Bytes(Span(segment_beacon));
  w.U32(round);
  w.U32(slot);
  w.U64(counter);
  return Leading64(w.Finalize());
}

std::vector<std::size_t> StakeWeightedPicks(std::span<const std::uint64_t> capacities, std::size_t count,
                                            std::string_view segment_beacon, std::uint32_t round,
                                            std::uint32_t first_slot) {
  std::vector<std::uint64_t> left(capacities.begin(), capacities.end());
  std::uint64_t range = 0;
  for (std::uint64_t c : left) range += c;
  std::vector<std::size_t> picked;
  while (picked.size() < count && range > 0) {
    // 2^64 mod range: accepting only draws >= this leaves a range whose size is a multiple of it.
    const std::uint64_t reject_below = (0 - range) % range;
    const std::uint32_t slot = first_slot + static_cast<std::uint32_t>(picked.size());
    std::uint64_t point = 0;
    for (std::uint64_t counter = 0;; ++counter) {
      const std::uint64_t x = SelectionDraw(segment_beacon, round, slot, counter);
      if (x < reject_below) continue;
      point = x % range;
      break;
    }
    // The candidate whose cumulative interval holds the point: range > point, so one does.
    std::size_t at = 0;
    for (std::uint64_t below = left[0]; point >= below;) below += left[++at];
    picked.push_back(at);
    --left[at];
    --range;
  }
  return picked;
}

Hash256 SegmentDigest(std::string_view party, std::uint64_t segment, std::string_view end_state_hash) {
  consensus::HashWriter w;
  w.String("polnode/segment-digest/v1");
  w.Bytes(Span(party));
  w.U64(segment);
  w.Bytes(Span(end_state_hash));
  return w.Finalize();
}

bool IsForcedCheckpoint(std::string_view secret, std::string_view forced_seed, std::string_view task_id,
                        std::uint64_t k, std::uint64_t checkpoints) {
  if (k == 0 || k > checkpoints) return false;
  const auto coin = [&](std::uint64_t at) {
    consensus::HashWriter w;
    w.String("polnode/forced-checkpoint/v1");
    w.Bytes(Span(secret));
    w.Bytes(Span(forced_seed));
    w.Bytes(Span(task_id));
    w.U64(at);
    return (Leading64(w.Finalize()) & 1) == 1;
  };
  if (coin(k)) return true;
  if (k != checkpoints) return false;
  // The final checkpoint is also forced when none of the 63 before it is, so a forced round always
  // falsifies something (for 64 or fewer checkpoints: when none before it is).
  const std::uint64_t first = checkpoints > 64 ? checkpoints - 63 : 1;
  for (std::uint64_t j = first; j < checkpoints; ++j) {
    if (coin(j)) return false;
  }
  return true;
}

std::vector<std::uint64_t> ForcedCheckpoints(std::string_view secret, std::string_view forced_seed,
                                             std::string_view task_id, std::uint64_t checkpoints) {
  std::vector<std::uint64_t> forced;
  for (std::uint64_t k = 1; k <= checkpoints; ++k) {
    if (IsForcedCheckpoint(secret, forced_seed, task_id, k, checkpoints)) forced.push_back(k);
  }
  return forced;
}

namespace {

// `q` distinct uniform indices in [0, segment_count), ascending, from H(domain, beacon, key,
// counter) with rejection sampling (no modulo bias); `write_key` writes the key. Precondition:
// 0 < q <= segment_count.
template <typename WriteKey>
std::vector<std::uint64_t> DrawDistinct(std::string_view domain, std::string_view segment_beacon,
                                        const WriteKey& write_key, std::uint64_t segment_count, std::uint64_t q) {
  std::vector<std::uint64_t> drawn;
  // 2^64 mod n: accepting only draws >= this leaves a range whose size is a multiple of n.
  const std::uint64_t reject_below = (0 - segment_count) % segment_count;
  for (std::uint64_t counter = 0; drawn.size() < q; ++counter) {
    consensus::HashWriter w;
    w.String(domain);
    w.Bytes(Span(segment_beacon));
    write_key(w);
    w.U64(counter);
    const std::uint64_t x = Leading64(w.Finalize());
    if (x < reject_below) continue;
    const std::uint64_t index = x % segment_count;
    if (std::find(drawn.begin(), drawn.end(), index) == drawn.end()) drawn.push_back(index);
  }
  std::sort(drawn.begin(), drawn.end());
  return drawn;
}

}  // namespace

std::vector<std::uint64_t> DrawSegments(std::string_view segment_beacon, std::uint32_t slot,
                                        std::uint64_t segment_count, std::uint32_t q) {
  if (q == 0 || q > segment_count) return {};
  return DrawDistinct("polnode/segments/v2", segment_beacon, [slot](consensus::HashWriter& w) { w.U32(slot); },
                      segment_count, q);
}

std::vector<std::uint64_t> ChallengeSegments(std::string_view segment_beacon, std::string_view challenger,
                                             std::uint64_t segment_count, std::uint32_t q) {
  std::vector<std::uint64_t> covered;
  if (segment_count == 0) return covered;
  if (static_cast<std::uint64_t>(q) + 1 >= segment_count) {
    for (std::uint64_t i = 0; i < segment_count; ++i) covered.push_back(i);
    return covered;
  }
  covered = DrawDistinct("polnode/challenge-segments/v1", segment_beacon,
                         [challenger](consensus::HashWriter& w) { w.Bytes(Span(challenger)); }, segment_count, q);
  if (covered.empty() || covered.back() != segment_count - 1) covered.push_back(segment_count - 1);
  return covered;
}

}  // namespace polnode::contracts
