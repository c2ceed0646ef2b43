#include "polnode/solver/philox.h"

#include <numeric>
#include <utility>

namespace polnode::solver {
namespace {

// Multipliers and Weyl key increments of Philox4x32 (Random123's PHILOX_M4x32_* and PHILOX_W32_*).
constexpr std::uint32_t kMul0 = 0xD2511F53u;
constexpr std::uint32_t kMul1 = 0xCD9E8D57u;
constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;
constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;

PhiloxCounter Round(const PhiloxCounter& c, const PhiloxKey& k) {
  const std::uint64_t p0 = static_cast<std::uint64_t>(kMul0) * c[0];
  const std::uint64_t p1 = static_cast<std::uint64_t>(kMul1) * c[2];
  const auto hi = [](std::uint64_t p) { return static_cast<std::uint32_t>(p >> 32); };
  const auto lo = [](std::uint64_t p) { return static_cast<std::uint32_t>(p); };
  return {hi(p1) ^ c[1] ^ k[0], lo(p1), hi(p0) ^ c[3] ^ k[1], lo(p0)};
}

PhiloxCounter Block(std::uint64_t seed, RandomPurpose purpose, std::uint32_t stream,
                    std::uint64_t block) {
  const PhiloxCounter counter = {static_cast<std::uint32_t>(block),
                                 static_cast<std::uint32_t>(block >> 32), stream,
                                 static_cast<std::uint32_t>(purpose)};
  const PhiloxKey key = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  return Philox4x32(counter, key);
}

}  // namespace

PhiloxCounter Philox4x32(PhiloxCounter counter, PhiloxKey key, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    if (r > 0) {  // the key is bumped before every round but the first
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    counter = Round(counter, key);
  }
  return counter;
}

std::uint32_t RandomWord(std::uint64_t seed, RandomPurpose purpose, std::uint32_t stream,
                         std::uint64_t index) {
  return Block(seed, purpose, stream, index / 4)[index % 4];
}

std::uint64_t RandomU64(std::uint64_t seed, RandomPurpose purpose, std::uint32_t stream,
                        std::uint64_t index) {
  const PhiloxCounter b = Block(seed, purpose, stream, index);
  return static_cast<std::uint64_t>(b[0]) | (static_cast<std::uint64_t>(b[1]) << 32);
}

float UniformFloat(std::uint32_t bits) {
  constexpr float kTwoToMinus24 = 1.0f / 16777216.0f;  // exact: a power of two
  return static_cast<float>(bits >> 8) * kTwoToMinus24;
}

std::uint32_t UniformIndex(std::uint64_t r, std::uint64_t n) {
  // floor(r * n / 2^64) with r = rh * 2^32 + rl: the nested floors below are exact, and
  // rh * n + (rl * n >> 32) < 2^64 because n <= 2^32.
  const std::uint64_t rh = r >> 32;
  const std::uint64_t rl = r & 0xFFFFFFFFu;
  const std::uint64_t mid = rh * n + ((rl * n) >> 32);
  return static_cast<std::uint32_t>(mid >> 32);
}

std::vector<std::uint32_t> EpochPermutation(std::uint64_t seed, std::uint32_t epoch,
                                            std::uint32_t n) {
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  for (std::uint32_t i = n > 0 ? n - 1 : 0; i > 0; --i) {
    const std::uint32_t j =
        UniformIndex(RandomU64(seed, RandomPurpose::kDataOrder, epoch, i), std::uint64_t{i} + 1);
    std::swap(order[i], order[j]);
  }
  return order;
}

}  // namespace polnode::solver
