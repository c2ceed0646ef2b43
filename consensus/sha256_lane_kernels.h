// The multi-buffer SHA-256 kernels of one instruction-set level (sha256_lanes.h), as the
// dispatcher (sha256_lanes.cc) and the tensor hash (pinpoint.cc) call them. Each level's kernels
// live in their own translation unit, compiled with that level's flags (consensus/CMakeLists.txt),
// and are reached only through a table that sha256_lanes.cc hands out after the CPU check.
#ifndef POLNODE_CONSENSUS_SHA256_LANE_KERNELS_H_
#define POLNODE_CONSENSUS_SHA256_LANE_KERNELS_H_

#include <cstddef>
#include <cstdint>

#include "polnode/consensus/sha256_lanes.h"

namespace polnode::consensus {

/// The most messages any level hashes per call (AVX-512's two registers of 16).
inline constexpr std::size_t kMaxSha256Lanes = 32;

/// Each kernel runs its messages as one or two sets of `lanes` (one vector register's worth),
/// two sets' rounds alternating: SHA-256's rounds are one long chain of dependent instructions,
/// and the second set's fill the first one's waits (on Zen 5, state_hash_bench's 14.9 MB state:
/// AVX-512 1.2x faster, AVX2 1.6x). A set costs the same full or not, so a group of leaves that
/// fills one set alone goes through the one-set kernel.
struct Sha256LaneKernels {
  /// Messages per vector register: 16 for AVX-512, 8 for AVX2.
  std::size_t lanes = 0;
  /// Writes the digests of 2 * lanes messages of `length` bytes each, messages[i] being message
  /// i's, to digests[32 i .. 32 i + 32).
  void (*hash_messages)(const std::uint8_t* const* messages, std::size_t length, std::uint8_t* digests) = nullptr;
  /// Writes the block leaves (pinpoint.h: SHA-256 of 0x00 || the values row by row, every NaN as
  /// kCanonicalNanBits) of `lanes` blocks of `rows` x `cols` floats to digests[32 i .. 32 i + 32).
  /// Block i starts at data[starts[i]] and its rows are `stride` floats apart. Preconditions:
  /// rows, cols >= 1; every element read lies at an index below 2^31.
  void (*hash_block_leaves)(const float* data, const std::int32_t* starts, std::size_t rows, std::size_t cols,
                            std::size_t stride, std::uint8_t* digests) = nullptr;
  /// hash_block_leaves over 2 * lanes blocks, as two sets.
  void (*hash_block_leaves_two_sets)(const float* data, const std::int32_t* starts, std::size_t rows,
                                     std::size_t cols, std::size_t stride, std::uint8_t* digests) = nullptr;
};

/// The kernels of a vector level. Aborts unless `isa` is kAvx2 or kAvx512 and in
/// AvailableSha256Isas().
const Sha256LaneKernels& LaneKernelsFor(Sha256Isa isa);

#if defined(__x86_64__)
namespace avx2 {
const Sha256LaneKernels& LaneKernels();
}
namespace avx512 {
const Sha256LaneKernels& LaneKernels();
}
#endif

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_SHA256_LANE_KERNELS_H_
