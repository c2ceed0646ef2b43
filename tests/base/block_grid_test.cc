// The tensor block grid (base/block_grid.h): the 2-D view, block rectangles, the block of an
// element and its offset, and the blocks a set of flat runs touches, checked against brute force.
#include "polnode/base/block_grid.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace polnode {
namespace {

TEST(BlockGrid, ViewAndBlocks) {
  const std::vector<std::int64_t> dims = {3, 70, 130};
  const BlockGrid g = BlockGrid::Of(dims);
  EXPECT_EQ(g.rows(), 210);
  EXPECT_EQ(g.cols(), 130);
  EXPECT_EQ(g.grid_rows(), 4);
  EXPECT_EQ(g.grid_cols(), 3);
  EXPECT_EQ(g.block_count(), 12u);
  EXPECT_EQ(g.BlockRect(0), (GridRect{0, 64, 0, 64}));
  EXPECT_EQ(g.BlockRect(11), (GridRect{192, 210, 128, 130}));
  const std::vector<std::int64_t> vec = {130};
  EXPECT_EQ(BlockGrid::Of(vec).rows(), 1);
  EXPECT_EQ(BlockGrid::Of(vec).block_count(), 3u);
  const std::vector<std::int64_t> scalar = {};
  EXPECT_EQ(BlockGrid::Of(scalar).block_count(), 1u);
  const std::vector<std::int64_t> empty = {4, 0};
  EXPECT_EQ(BlockGrid::Of(empty).block_count(), 0u);
  // Every element lies in exactly the block whose rectangle holds it, at its row-by-row offset.
  std::vector<std::int64_t> seen(g.block_count(), 0);
  for (std::int64_t f = 0; f < g.rows() * g.cols(); ++f) {
    const std::uint64_t b = g.BlockOf(f);
    const GridRect r = g.BlockRect(b);
    const std::int64_t row = f / g.cols(), col = f % g.cols();
    ASSERT_TRUE(row >= r.row_begin && row < r.row_end && col >= r.col_begin && col < r.col_end);
    EXPECT_EQ(g.OffsetInBlock(f), (row - r.row_begin) * r.cols() + (col - r.col_begin));
    ++seen[b];
  }
  for (std::uint64_t b = 0; b < g.block_count(); ++b) EXPECT_EQ(seen[b], g.BlockRect(b).elements());
}

TEST(BlockGrid, BlocksOfRunsMatchBruteForce) {
  std::mt19937_64 rng(11);
  for (const std::vector<std::int64_t>& dims :
       std::vector<std::vector<std::int64_t>>{{210, 130}, {7, 300}, {1000}, {5, 3, 64, 65}, {200, 1}}) {
    const BlockGrid g = BlockGrid::Of(dims);
    const std::int64_t total = g.rows() * g.cols();
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<FlatRun> runs;
      std::set<std::uint64_t> want;
      for (int i = 0; i < 1 + static_cast<int>(rng() % 4); ++i) {
        const std::int64_t begin = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(total));
        const std::int64_t length = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(std::min<std::int64_t>(total - begin, 900) + 1));
        runs.push_back({begin, length});
        for (std::int64_t f = begin; f < begin + length; ++f) want.insert(g.BlockOf(f));
      }
      const std::vector<std::uint64_t> got = g.BlocksOfRuns(runs);
      EXPECT_EQ(got, std::vector<std::uint64_t>(want.begin(), want.end()));
    }
  }
}

}  // namespace
}  // namespace polnode
