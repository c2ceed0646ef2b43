#include "polnode/verifier/segments.h"

#include <numeric>

#include "polnode/consensus/encoding.h"

namespace polnode::verifier {
namespace {

// The beacon's word stream, block by block.
class BeaconStream {
 public:
  explicit BeaconStream(const consensus::Hash256& beacon) : beacon_(beacon) {}
  std::uint64_t Next() {
    if (used_ == 4) {
      consensus::HashWriter w;
      w.String("polnode/pol-segments/v1");
      w.Fixed(beacon_);
      w.U64(counter_++);
      block_ = w.Finalize();
      used_ = 0;
    }
    std::uint64_t word = 0;
    for (int b = 7; b >= 0; --b) word = (word << 8) | block_[static_cast<std::size_t>(used_ * 8 + b)];
    ++used_;
    return word;
  }

 private:
  consensus::Hash256 beacon_;
  consensus::Hash256 block_{};
  std::uint64_t counter_ = 0;
  int used_ = 4;
};

// Uniform in [0, n) by rejection: 2^64 mod n words at the top of the range are refused.
std::uint64_t UniformBelow(BeaconStream& stream, std::uint64_t n) {
  const std::uint64_t excess = (UINT64_MAX % n + 1) % n;  // 2^64 mod n
  for (;;) {
    const std::uint64_t r = stream.Next();
    if (r <= UINT64_MAX - excess) return r % n;
  }
}

}  // namespace

Result<std::vector<std::int64_t>> SelectSegments(const consensus::Hash256& beacon,
                                                 std::int64_t segment_count, std::int64_t q) {
  if (q < 1 || q > segment_count || segment_count > (std::int64_t{1} << 32)) {
    return Status::InvalidArgument("cannot draw " + std::to_string(q) + " segments out of " +
                                   std::to_string(segment_count));
  }
  std::vector<std::int64_t> positions(static_cast<std::size_t>(segment_count));
  std::iota(positions.begin(), positions.end(), 0);
  BeaconStream stream(beacon);
  for (std::int64_t j = 0; j < q; ++j) {
    const std::uint64_t pick = UniformBelow(stream, static_cast<std::uint64_t>(segment_count - j));
    std::swap(positions[static_cast<std::size_t>(j)], positions[static_cast<std::size_t>(j) + pick]);
  }
  positions.resize(static_cast<std::size_t>(q));
  return positions;
}

}  // namespace polnode::verifier
