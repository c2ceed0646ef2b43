#include "polnode/consensus/pinpoint.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "polnode/consensus/encoding.h"
#include "polnode/consensus/merkle.h"
#include "sha256_lane_kernels.h"

namespace polnode::consensus {

static_assert(std::endian::native == std::endian::little,
              "tensor and chain hashes read float storage as little-endian U32 bits directly");

namespace {

// A group of fewer than lanes / kMinLaneFillDivisor block leaves goes through OpenSSL instead of
// the lanes: on Zen 5 hashing one register's 16 leaves at once with AVX-512 costs about as much as
// hashing 8 one at a time on the SHA extensions (state_hash_bench: about 2x), and the lanes of a
// partial set cost as much as full ones.
constexpr std::size_t kMinLaneFillDivisor = 2;

std::span<const std::uint8_t> AsBytes(std::span<const float> values) {
  return std::span(reinterpret_cast<const std::uint8_t*>(values.data()), values.size_bytes());
}

void Tag(Writer& w, std::string_view tag) {
  w.Fixed(std::span(reinterpret_cast<const std::uint8_t*>(tag.data()), tag.size()));
}

// Whether any of `values` is a NaN: one pass without early exit, four floats at a time where the
// baseline has vectors, so that hashing a NaN-free tensor costs little beyond SHA-256 itself.
bool HasNan(std::span<const float> values) {
  std::size_t i = 0;
  bool nan = false;
#if defined(__SSE2__)
  __m128 unordered = _mm_setzero_ps();
  for (; i + 4 <= values.size(); i += 4) {
    const __m128 v = _mm_loadu_ps(values.data() + i);
    unordered = _mm_or_ps(unordered, _mm_cmpunord_ps(v, v));
  }
  nan = _mm_movemask_ps(unordered) != 0;
#endif
  for (; i < values.size(); ++i) nan |= values[i] != values[i];
  return nan;
}

// Passes the bits of `values` to `append` (a byte-span sink) with every NaN read as
// kCanonicalNanBits: runs without NaN go in place, NaN runs as copies of the canonical pattern.
template <typename Append>
void AppendCanonicalBits(std::span<const float> values, Append&& append) {
  static constexpr std::size_t kPatternFloats = 64;
  static const std::array<std::uint32_t, kPatternFloats> kNans = [] {
    std::array<std::uint32_t, kPatternFloats> nans{};
    nans.fill(kCanonicalNanBits);
    return nans;
  }();
  if (!HasNan(values)) {  // the usual case: the bits as they are, in one piece
    append(AsBytes(values));
    return;
  }
  std::size_t at = 0;
  while (at < values.size()) {
    std::size_t end = at;
    while (end < values.size() && values[end] == values[end]) ++end;  // false only for a NaN
    if (end > at) append(AsBytes(values.subspan(at, end - at)));
    at = end;
    while (end < values.size() && values[end] != values[end]) ++end;
    for (std::size_t left = end - at; left > 0;) {
      const std::size_t n = std::min(left, kPatternFloats);
      append(std::span(reinterpret_cast<const std::uint8_t*>(kNans.data()), n * sizeof(std::uint32_t)));
      left -= n;
    }
    at = end;
  }
}

void UpdateCanonical(Sha256Hasher& hasher, std::span<const float> values) {
  AppendCanonicalBits(values, [&](std::span<const std::uint8_t> bytes) { hasher.Update(bytes); });
}

// The block leaf of block `rect` of a row-major tensor with `cols` columns. A block whose rows
// are contiguous in the tensor (it spans every column) is hashed in place; another one's rows are
// gathered into one buffer first, so SHA-256 takes the block in one call instead of one per
// 64-float row (the same bytes either way).
Hash256 BlockLeafInPlace(std::span<const float> data, std::int64_t cols, const GridRect& rect) {
  Sha256Hasher hasher;
  const std::uint8_t prefix = 0x00;
  hasher.Update(std::span(&prefix, 1));
  const auto row_start = static_cast<std::size_t>(rect.row_begin * cols + rect.col_begin);
  const auto row_floats = static_cast<std::size_t>(rect.cols());
  const auto rows = static_cast<std::size_t>(rect.row_end - rect.row_begin);
  if (rect.cols() == cols) {
    UpdateCanonical(hasher, data.subspan(row_start, rows * row_floats));
    return hasher.Finalize();
  }
  thread_local std::vector<float> block;
  block.resize(rows * row_floats);
  for (std::size_t r = 0; r < rows; ++r) {
    std::memcpy(block.data() + r * row_floats, data.data() + row_start + r * static_cast<std::size_t>(cols),
                row_floats * sizeof(float));
  }
  UpdateCanonical(hasher, block);
  return hasher.Finalize();
}

}  // namespace

Hash256 BlockLeafHash(std::span<const float> block) {
  Sha256Hasher hasher;
  const std::uint8_t prefix = 0x00;
  hasher.Update(std::span(&prefix, 1));
  UpdateCanonical(hasher, block);
  return hasher.Finalize();
}

std::vector<float> BlockValues(std::span<const std::int64_t> dims, std::span<const float> data, std::uint64_t index) {
  const BlockGrid grid = BlockGrid::Of(dims);
  const GridRect rect = grid.BlockRect(index);
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(rect.elements()));
  for (std::int64_t r = rect.row_begin; r < rect.row_end; ++r) {
    const float* row = data.data() + r * grid.cols();
    out.insert(out.end(), row + rect.col_begin, row + rect.col_end);
  }
  return out;
}

std::vector<Hash256> TensorBlockLeaves(std::span<const std::int64_t> dims, std::span<const float> data) {
  return TensorBlockLeavesAt(BestSha256Isa(), dims, data);
}

std::vector<Hash256> TensorBlockLeavesAt(Sha256Isa isa, std::span<const std::int64_t> dims,
                                         std::span<const float> data) {
  const BlockGrid grid = BlockGrid::Of(dims);
  std::vector<Hash256> leaves(grid.block_count());
  // The lanes' gathers index the tensor with signed 32-bit integers.
  if (isa == Sha256Isa::kOpenSsl || data.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    for (std::uint64_t b = 0; b < grid.block_count(); ++b) {
      leaves[b] = BlockLeafInPlace(data, grid.cols(), grid.BlockRect(b));
    }
    return leaves;
  }
  const Sha256LaneKernels& kernels = LaneKernelsFor(isa);
  // Blocks of one shape have messages of one length, so they share the lanes: the full blocks, and
  // apart from them the bottom row's, the right column's and the corner's (edge blocks are smaller).
  struct Group {
    std::array<std::uint64_t, kMaxSha256Lanes> blocks{};
    std::array<std::int32_t, kMaxSha256Lanes> starts{};
    std::size_t count = 0;
    GridRect rect;
  };
  std::array<Group, 4> groups;
  std::array<std::uint8_t, 32 * kMaxSha256Lanes> digests{};
  // Up to two sets of lanes per call; a group that fits one set goes through the one-set kernel.
  const std::size_t per_call = 2 * kernels.lanes;
  auto flush = [&](Group& group) {
    if (group.count * kMinLaneFillDivisor < kernels.lanes) {
      // Too few to fill the lanes: one at a time through OpenSSL is faster.
      for (std::size_t l = 0; l < group.count; ++l) {
        leaves[group.blocks[l]] = BlockLeafInPlace(data, grid.cols(), grid.BlockRect(group.blocks[l]));
      }
    } else {
      const bool two_sets = group.count > kernels.lanes;
      // Idle lanes of a partial group hash its first block again; their digests are dropped.
      const std::size_t call_lanes = two_sets ? per_call : kernels.lanes;
      for (std::size_t l = group.count; l < call_lanes; ++l) group.starts[l] = group.starts[0];
      (two_sets ? kernels.hash_block_leaves_two_sets : kernels.hash_block_leaves)(
          data.data(), group.starts.data(), static_cast<std::size_t>(group.rect.rows()),
          static_cast<std::size_t>(group.rect.cols()), static_cast<std::size_t>(grid.cols()), digests.data());
      for (std::size_t l = 0; l < group.count; ++l) {
        std::copy_n(digests.data() + 32 * l, 32, leaves[group.blocks[l]].begin());
      }
    }
    group.count = 0;
  };
  for (std::uint64_t b = 0; b < grid.block_count(); ++b) {
    const GridRect rect = grid.BlockRect(b);
    const bool short_rows = rect.rows() < BlockGrid::kBlockRows;
    const bool narrow = rect.cols() < BlockGrid::kBlockCols;
    Group& group = groups[(short_rows ? 1 : 0) + (narrow ? 2 : 0)];
    group.rect = rect;
    group.blocks[group.count] = b;
    group.starts[group.count] = static_cast<std::int32_t>(rect.row_begin * grid.cols() + rect.col_begin);
    if (++group.count == per_call) flush(group);
  }
  for (Group& group : groups) {
    if (group.count > 0) flush(group);
  }
  return leaves;
}

Hash256 BlockRootOf(std::span<const Hash256> leaves) {
  if (leaves.empty()) return Hash256{};
  if (leaves.size() == 1) return leaves[0];
  // The game tree's root without keeping its levels.
  std::vector<Hash256> level(std::uint64_t{1} << GameTreeDepth(leaves.size()), Hash256{});
  std::copy(leaves.begin(), leaves.end(), level.begin());
  while (level.size() > 1) {
    for (std::size_t i = 0; i < level.size() / 2; ++i) level[i] = MerkleNodeHash(level[2 * i], level[2 * i + 1]);
    level.resize(level.size() / 2);
  }
  return level[0];
}

Hash256 TensorHashFromBlockRoot(std::span<const std::int64_t> dims, const Hash256& block_root) {
  HashWriter w;
  Tag(w, "polnode.tensor.v3\n");
  w.U32(static_cast<std::uint32_t>(dims.size()));
  for (std::int64_t d : dims) w.U64(static_cast<std::uint64_t>(d));
  w.Fixed(block_root);
  return w.Finalize();
}

Hash256 TensorHashOf(std::span<const std::int64_t> dims, std::span<const float> data) {
  return TensorHashFromBlockRoot(dims, BlockRootOf(TensorBlockLeaves(dims, data)));
}

TensorBlockTree::TensorBlockTree(std::span<const std::int64_t> dims, std::span<const float> data)
    : dims_(dims.begin(), dims.end()), grid_(BlockGrid::Of(dims)) {
  const std::vector<Hash256> leaves = TensorBlockLeaves(dims, data);
  if (!leaves.empty()) {
    tree_.emplace(leaves);
    root_ = tree_->root();
  }
}

Hash256 StateHashFromTensorHashes(std::uint64_t step, std::span<const std::string> names,
                                  std::span<const Hash256> tensor_hashes) {
  HashWriter w;
  Tag(w, "polnode.state.v2\n");
  w.U64(step);
  w.U32(static_cast<std::uint32_t>(names.size()));
  for (std::size_t i = 0; i < names.size(); ++i) {
    w.String(names[i]);
    w.Fixed(tensor_hashes[i]);
  }
  return w.Finalize();
}

Hash256 BatchLeaf(const Hash256& images_hash, const Hash256& labels_hash) {
  HashWriter w;
  Tag(w, "polnode.batch.v1\n");
  w.Fixed(images_hash);
  w.Fixed(labels_hash);
  return w.Finalize();
}

Hash256 ChainStateHash(std::uint64_t position, std::span<const float> state) {
  HashWriter w;
  Tag(w, "polnode.chain.v1\n");
  w.U64(position);
  w.U32(static_cast<std::uint32_t>(state.size()));
  AppendCanonicalBits(state, [&](std::span<const std::uint8_t> bytes) { w.Fixed(bytes); });
  return w.Finalize();
}

}  // namespace polnode::consensus
