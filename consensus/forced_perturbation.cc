#include "polnode/consensus/forced_perturbation.h"

#include <algorithm>
#include <cmath>

#include "polnode/base/block_grid.h"
#include "polnode/consensus/encoding.h"

namespace polnode::consensus {
namespace {

std::span<const std::uint8_t> Span(std::string_view bytes) {
  return {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()};
}

// Uniform draws in [0, n) from one counter-indexed stream of hashes, without modulo bias.
class Draws {
 public:
  Draws(std::string_view secret, std::string_view forced_seed, std::string_view task_id, std::uint64_t k)
      : secret_(secret), forced_seed_(forced_seed), task_id_(task_id), k_(k) {}

  // Precondition: n > 0.
  std::uint64_t Below(std::uint64_t n) {
    // 2^64 mod n: accepting only words >= this leaves a range whose size is a multiple of n.
    const std::uint64_t reject_below = (0 - n) % n;
    for (;;) {
      const std::uint64_t x = Next();
      if (x >= reject_below) return x % n;
    }
  }

 private:
  std::uint64_t Next() {
    HashWriter w;
    w.String("polnode/forced-perturbation/v1");
    w.Bytes(Span(secret_));
    w.Bytes(Span(forced_seed_));
    w.Bytes(Span(task_id_));
    w.U64(k_);
    w.U64(counter_++);
    const Hash256 h = w.Finalize();
    std::uint64_t word = 0;
    for (std::size_t i = 0; i < 8; ++i) word = (word << 8) | h[i];
    return word;
  }

  std::string_view secret_, forced_seed_, task_id_;
  std::uint64_t k_;
  std::uint64_t counter_ = 0;
};

}  // namespace

Perturbation DrawPerturbation(std::string_view secret, std::string_view forced_seed, std::string_view task_id,
                              std::uint64_t k, std::span<const std::int64_t> dims) {
  const BlockGrid grid = BlockGrid::Of(dims);
  Draws draws(secret, forced_seed, task_id, k);
  Perturbation p;
  p.block = draws.Below(grid.block_count());
  const GridRect rect = grid.BlockRect(p.block);
  const std::uint64_t size = static_cast<std::uint64_t>(rect.elements());
  const std::uint64_t count = std::min<std::uint64_t>(kPerturbedElements, size);
  std::vector<std::int64_t> offsets;
  while (offsets.size() < count) {
    const auto offset = static_cast<std::int64_t>(draws.Below(size));
    if (std::find(offsets.begin(), offsets.end(), offset) == offsets.end()) offsets.push_back(offset);
  }
  std::sort(offsets.begin(), offsets.end());
  for (std::int64_t offset : offsets) {
    PerturbedElement e;
    e.offset = offset;
    e.flat = (rect.row_begin + offset / rect.cols()) * grid.cols() + rect.col_begin + offset % rect.cols();
    e.sign = draws.Below(2) == 0 ? 1.0f : -1.0f;
    p.elements.push_back(e);
  }
  return p;
}

float PerturbedValue(float honest, float sign, float delta) {
  // One multiplication by +-1 (exact) and one addition: no contraction can change the bits.
  const float step = sign * delta;
  return honest + step;
}

bool PerturbationVisible(float honest, float committed, float delta) {
  if (!std::isfinite(honest) || !std::isfinite(committed) || !(delta > 0.0f) || !std::isfinite(delta)) return false;
  // In double: half of a float delta is exact, and the comparison is the same IEEE-754 operation
  // on every machine.
  return std::fabs(static_cast<double>(committed) - static_cast<double>(honest)) >= 0.75 * static_cast<double>(delta);
}

Hash256 PerturbedIndicesHash(std::span<const std::uint64_t> flat_indices) {
  HashWriter w;
  w.String("polnode/perturbed-indices/v1");
  w.U64(flat_indices.size());
  for (std::uint64_t i : flat_indices) w.U64(i);
  return w.Finalize();
}

std::vector<std::uint64_t> PerturbedIndices(const Perturbation& perturbation) {
  std::vector<std::uint64_t> indices;
  indices.reserve(perturbation.elements.size());
  for (const PerturbedElement& e : perturbation.elements) indices.push_back(static_cast<std::uint64_t>(e.flat));
  return indices;
}

}  // namespace polnode::consensus
