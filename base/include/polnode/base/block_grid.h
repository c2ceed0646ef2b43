// The block grid of a tensor: the 2-D view and the 64 x 64 blocks over which a tensor is hashed
// (consensus/pinpoint.h, tensor hash v3) and refereed tile by tile (kernels/tile.h,
// contracts/referee.h). Pure index arithmetic, shared by every layer so that the hash, the kernels
// that compute one tile and the ledger that checks one tile agree on which elements a block holds.
//
// Definition, exact. A tensor of dims d[0..r) in row-major order has the 2-D view
//   rows = d[0] * ... * d[r-2]   (1 for r <= 1)
//   cols = d[r-1]                (1 for r = 0)
// so that flat element f sits at row f / cols, column f % cols. Block (i, j) holds rows
// [64 i, min(64 i + 64, rows)) and columns [64 j, min(64 j + 64, cols)) of the view; blocks are
// numbered row-major, index = i * grid_cols + j, with grid_rows = ceil(rows / 64) and
// grid_cols = ceil(cols / 64). A block's values are its elements row by row (edge blocks are
// smaller). A tensor with no elements has no blocks.
//
// Why 2-D: an operator tile reads row slices and column slices of its inputs (a matrix product's
// tile needs rows of A and columns of B); a column slice of a row-major tensor touches every row,
// so 1-D chunks would prove a 64-column slice of a [784, 256] matrix with all 13 chunks of every
// row, while 64 x 64 blocks prove it with 13 blocks.
#ifndef POLNODE_BASE_BLOCK_GRID_H_
#define POLNODE_BASE_BLOCK_GRID_H_

#include <cstdint>
#include <span>
#include <vector>

namespace polnode {

/// A contiguous range of flat element indices [begin, begin + length).
struct FlatRun {
  std::int64_t begin = 0;
  std::int64_t length = 0;
};

/// Rows [row_begin, row_end) x columns [col_begin, col_end) of a 2-D view.
struct GridRect {
  std::int64_t row_begin = 0;
  std::int64_t row_end = 0;
  std::int64_t col_begin = 0;
  std::int64_t col_end = 0;

  std::int64_t rows() const { return row_end - row_begin; }
  std::int64_t cols() const { return col_end - col_begin; }
  std::int64_t elements() const { return rows() * cols(); }
  friend bool operator==(const GridRect&, const GridRect&) = default;
};

class BlockGrid {
 public:
  static constexpr std::int64_t kBlockRows = 64;
  static constexpr std::int64_t kBlockCols = 64;

  /// The grid of a tensor of `dims` (each >= 0; the caller keeps the element count in range).
  static BlockGrid Of(std::span<const std::int64_t> dims);

  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  std::int64_t grid_rows() const { return grid_rows_; }
  std::int64_t grid_cols() const { return grid_cols_; }
  std::uint64_t block_count() const { return static_cast<std::uint64_t>(grid_rows_ * grid_cols_); }

  /// The elements of block `index`. Precondition: index < block_count().
  GridRect BlockRect(std::uint64_t index) const;

  /// The block holding flat element `flat`. Precondition: 0 <= flat < rows() * cols().
  std::uint64_t BlockOf(std::int64_t flat) const;

  /// The position of flat element `flat` among its block's values (row by row).
  std::int64_t OffsetInBlock(std::int64_t flat) const;

  /// The blocks holding any element of `runs`, ascending, each once. Runs outside the tensor are
  /// a precondition violation (clipped).
  std::vector<std::uint64_t> BlocksOfRuns(std::span<const FlatRun> runs) const;

 private:
  std::int64_t rows_ = 0, cols_ = 0, grid_rows_ = 0, grid_cols_ = 0;
};

}  // namespace polnode

#endif  // POLNODE_BASE_BLOCK_GRID_H_
