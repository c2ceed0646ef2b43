// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): the
// counter-based generator behind every random choice a task fixes (DESIGN.md sections 3 and 4).
//
// A value is a pure function of (task seed, purpose, stream, index): the seed is the Philox key,
// and the 128-bit counter is {index low word, index high word, stream, purpose}. Nothing is
// carried from one draw to the next, so a verifier regenerates any single value (one weight, one
// epoch's order) without replaying anything before it.
#ifndef POLNODE_SOLVER_PHILOX_H_
#define POLNODE_SOLVER_PHILOX_H_

#include <array>
#include <cstdint>
#include <vector>

namespace polnode::solver {

using PhiloxCounter = std::array<std::uint32_t, 4>;
using PhiloxKey = std::array<std::uint32_t, 2>;

/// The Philox4x32 bijection with `rounds` rounds (10 is the standard strength, and the only one
/// polnode uses; other counts exist for the Random123 known-answer tests). Pure.
PhiloxCounter Philox4x32(PhiloxCounter counter, PhiloxKey key, int rounds = 10);

/// What a random value is for. Part of the counter, so two purposes never share a value even under
/// the same seed, stream and index. Values are stable: they are part of every task's definition.
enum class RandomPurpose : std::uint32_t {
  kInit = 1,       // initial weights: stream = parameter index, index = element index
  kDataOrder = 2,  // per-epoch sample permutation: stream = epoch, index = Fisher-Yates position
  kSynthetic = 3,  // synthetic inputs for tests and benchmarks (never part of a real task)
  kTextWindow = 4,  // text batches: stream 0, index = step * batch + row (a window's start)
  kSampling = 5,    // text generation: stream 0, index = the generated symbol's position
};

/// The `index`-th 32-bit word of the (seed, purpose, stream) sequence: word `index % 4` of the
/// Philox block with counter {index / 4 (64 bits, low word first), stream, purpose} and key
/// {seed low word, seed high word}.
std::uint32_t RandomWord(std::uint64_t seed, RandomPurpose purpose, std::uint32_t stream,
                         std::uint64_t index);

/// A 64-bit value for (seed, purpose, stream, index): words 0 (low half) and 1 (high half) of the
/// Philox block with counter {index low, index high, stream, purpose}. One block per index, so it
/// does not overlap RandomWord's blocks only when the purposes differ; use one or the other per
/// purpose.
std::uint64_t RandomU64(std::uint64_t seed, RandomPurpose purpose, std::uint32_t stream,
                        std::uint64_t index);

/// A float in [0, 1) from the top 24 bits of `bits`: (bits >> 8) * 2^-24, exact (every result is
/// a multiple of 2^-24 below 1, representable in float).
float UniformFloat(std::uint32_t bits);

/// An integer in [0, n) from a uniform 64-bit value: floor(r * n / 2^64), computed exactly in
/// integers. Precondition: 1 <= n <= 2^32. The bias against a perfectly uniform choice is below
/// n / 2^64 (< 2^-32), and there is no rejection loop, so each choice costs exactly one block.
std::uint32_t UniformIndex(std::uint64_t r, std::uint64_t n);

/// The sample order of `epoch`: a Fisher-Yates shuffle of 0..n-1 where position i (from n-1 down
/// to 1) swaps with UniformIndex(RandomU64(seed, kDataOrder, epoch, i), i + 1). Preconditions:
/// n <= 2^32 - 1, epoch < 2^32. Pure function of (seed, epoch, n).
std::vector<std::uint32_t> EpochPermutation(std::uint64_t seed, std::uint32_t epoch,
                                            std::uint32_t n);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_PHILOX_H_
