#include "polnode/base/block_grid.h"

#include <algorithm>

namespace polnode {

BlockGrid BlockGrid::Of(std::span<const std::int64_t> dims) {
  BlockGrid g;
  g.cols_ = dims.empty() ? 1 : dims.back();
  g.rows_ = 1;
  for (std::size_t i = 0; i + 1 < dims.size(); ++i) g.rows_ *= dims[i];
  if (g.rows_ <= 0 || g.cols_ <= 0) {
    g.rows_ = g.cols_ = 0;
    return g;
  }
  g.grid_rows_ = (g.rows_ + kBlockRows - 1) / kBlockRows;
  g.grid_cols_ = (g.cols_ + kBlockCols - 1) / kBlockCols;
  return g;
}

GridRect BlockGrid::BlockRect(std::uint64_t index) const {
  const std::int64_t i = static_cast<std::int64_t>(index) / grid_cols_;
  const std::int64_t j = static_cast<std::int64_t>(index) % grid_cols_;
  return {i * kBlockRows, std::min(i * kBlockRows + kBlockRows, rows_), j * kBlockCols,
          std::min(j * kBlockCols + kBlockCols, cols_)};
}

std::uint64_t BlockGrid::BlockOf(std::int64_t flat) const {
  const std::int64_t row = flat / cols_, col = flat % cols_;
  return static_cast<std::uint64_t>((row / kBlockRows) * grid_cols_ + col / kBlockCols);
}

std::int64_t BlockGrid::OffsetInBlock(std::int64_t flat) const {
  const std::int64_t row = flat / cols_, col = flat % cols_;
  const std::int64_t col_begin = (col / kBlockCols) * kBlockCols;
  const std::int64_t width = std::min(col_begin + kBlockCols, cols_) - col_begin;
  return (row % kBlockRows) * width + (col - col_begin);
}

std::vector<std::uint64_t> BlockGrid::BlocksOfRuns(std::span<const FlatRun> runs) const {
  std::vector<std::uint64_t> blocks;
  const std::int64_t total = rows_ * cols_;
  auto add_row_span = [&](std::int64_t row_block, std::int64_t c0, std::int64_t c1) {  // columns [c0, c1]
    for (std::int64_t j = c0 / kBlockCols; j <= c1 / kBlockCols; ++j) {
      blocks.push_back(static_cast<std::uint64_t>(row_block * grid_cols_ + j));
    }
  };
  for (const FlatRun& run : runs) {
    const std::int64_t begin = std::max<std::int64_t>(run.begin, 0);
    const std::int64_t end = std::min(run.begin + run.length, total);
    if (end <= begin) continue;
    const std::int64_t r0 = begin / cols_, c0 = begin % cols_;
    const std::int64_t r1 = (end - 1) / cols_, c1 = (end - 1) % cols_;
    if (r0 == r1) {
      add_row_span(r0 / kBlockRows, c0, c1);
      continue;
    }
    // The first row from c0, the last up to c1, and every row between them whole: by block row.
    add_row_span(r0 / kBlockRows, c0, cols_ - 1);
    add_row_span(r1 / kBlockRows, 0, c1);
    if (r1 - r0 >= 2) {
      const std::int64_t first_full = r0 + 1, last_full = r1 - 1;
      for (std::int64_t i = first_full / kBlockRows; i <= last_full / kBlockRows; ++i) add_row_span(i, 0, cols_ - 1);
    }
  }
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  return blocks;
}

}  // namespace polnode
