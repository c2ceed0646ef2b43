// consensus/forced_perturbation.h: the draw every party recomputes, the one float operation that
// makes a perturbed value, and the visibility rule.
#include "polnode/consensus/forced_perturbation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "polnode/base/block_grid.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/pinpoint.h"

namespace polnode::consensus {
namespace {

std::uint32_t Bits(float v) {
  std::uint32_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

TEST(ForcedPerturbation, TheDrawIsDistinctSortedInsideOneBlockAndNamesTheRightElements) {
  const std::vector<std::int64_t> dims = {3, 100, 70};  // view 300 x 70: 5 x 2 blocks, edge blocks smaller
  const BlockGrid grid = BlockGrid::Of(dims);
  std::vector<float> data(300 * 70);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i);
  std::set<std::uint64_t> blocks;
  for (std::uint64_t k = 1; k <= 200; ++k) {
    const Perturbation p = DrawPerturbation("secret", "seed", "task", k, dims);
    ASSERT_LT(p.block, grid.block_count());
    blocks.insert(p.block);
    ASSERT_EQ(p.elements.size(), kPerturbedElements);
    const std::vector<float> block = BlockValues(dims, data, p.block);
    for (std::size_t j = 0; j < p.elements.size(); ++j) {
      const PerturbedElement& e = p.elements[j];
      if (j > 0) {
        EXPECT_LT(p.elements[j - 1].offset, e.offset);
        EXPECT_LT(p.elements[j - 1].flat, e.flat);
      }
      EXPECT_TRUE(e.sign == 1.0f || e.sign == -1.0f);
      // The flat index is the element the block's value at that offset holds.
      EXPECT_EQ(block[static_cast<std::size_t>(e.offset)], static_cast<float>(e.flat));
      EXPECT_EQ(grid.BlockOf(e.flat), p.block);
    }
    // The same inputs, the same draw; another checkpoint, another one (almost surely).
    const Perturbation again = DrawPerturbation("secret", "seed", "task", k, dims);
    EXPECT_EQ(PerturbedIndices(again), PerturbedIndices(p));
  }
  EXPECT_EQ(blocks.size(), grid.block_count());  // 200 draws reach all 10 blocks
  EXPECT_NE(PerturbedIndices(DrawPerturbation("secret", "seed", "task", 1, dims)),
            PerturbedIndices(DrawPerturbation("other secret", "seed", "task", 1, dims)));
}

TEST(ForcedPerturbation, ATinyTensorPerturbsEveryElementItHas) {
  const std::vector<std::int64_t> dims = {3};
  const Perturbation p = DrawPerturbation("s", "seed", "task", 7, dims);
  EXPECT_EQ(p.block, 0u);
  EXPECT_EQ(PerturbedIndices(p), (std::vector<std::uint64_t>{0, 1, 2}));
}

TEST(ForcedPerturbation, GoldenDraw) {
  // Every party must draw these very elements: a change here is a protocol change.
  const std::vector<std::int64_t> dims = {784, 256};
  const Perturbation p = DrawPerturbation(std::string(32, '\x5e'), std::string(32, '\x01'), std::string(32, '\x02'), 3, dims);
  std::string text = std::to_string(p.block) + ":";
  for (const PerturbedElement& e : p.elements) text += " " + std::to_string(e.flat) + (e.sign > 0 ? "+" : "-");
  EXPECT_EQ(text, "42: 167081- 171159+ 172439- 174740-");
  EXPECT_EQ(ToHex(PerturbedIndicesHash(PerturbedIndices(p))), "1ff281509410496c5da1c4a99342c1fe0e2e1004e7d03ed0fc2dc6ba836c2626");
}

TEST(ForcedPerturbation, ThePerturbedValueIsOneRoundedAddition) {
  EXPECT_EQ(PerturbedValue(0.25f, 1.0f, 0x1p-10f), 0.25f + 0x1p-10f);
  EXPECT_EQ(PerturbedValue(0.25f, -1.0f, 0x1p-10f), 0.25f - 0x1p-10f);
  // Rounded to nearest even, as every IEEE-754 machine rounds it.
  const float x = 1.0f + 0x1p-23f;
  EXPECT_EQ(Bits(PerturbedValue(x, 1.0f, 0x1p-24f)), Bits(1.0f + 0x1p-22f));
}

TEST(ForcedPerturbation, APerturbationIsVisibleWhenItMovesTheValueByThreeQuartersOfTheDeltaOrMore) {
  const float delta = 0x1p-10f;
  // 3D/4 and more: a replay off by less than D/4 still sees it beyond D/2; less is refused.
  EXPECT_TRUE(PerturbationVisible(0.25f, 0.25f + 0.75f * delta, delta));
  EXPECT_FALSE(PerturbationVisible(0.25f, 0.25f + 0.625f * delta, delta));
  EXPECT_FALSE(PerturbationVisible(0.25f, 0.25f + 0.5f * delta, delta));
  EXPECT_TRUE(PerturbationVisible(0.3f, PerturbedValue(0.3f, 1.0f, delta), delta));
  EXPECT_TRUE(PerturbationVisible(-0.3f, PerturbedValue(-0.3f, -1.0f, delta), delta));
  EXPECT_FALSE(PerturbationVisible(0.3f, PerturbedValue(0.3f, 1.0f, delta / 4), delta));
  // So large that adding delta does not move it.
  EXPECT_FALSE(PerturbationVisible(1e9f, PerturbedValue(1e9f, 1.0f, delta), delta));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(PerturbationVisible(nan, nan, delta));
  EXPECT_FALSE(PerturbationVisible(inf, inf, delta));
  EXPECT_FALSE(PerturbationVisible(0.3f, 0.5f, nan));
  EXPECT_FALSE(PerturbationVisible(0.3f, 0.5f, 0.0f));
}

TEST(ForcedPerturbation, TheIndicesHashCoversEveryIndexAndTheCount) {
  const std::vector<std::uint64_t> a = {1, 5, 9};
  const std::vector<std::uint64_t> b = {1, 5, 10};
  const std::vector<std::uint64_t> c = {1, 5};
  EXPECT_NE(PerturbedIndicesHash(a), PerturbedIndicesHash(b));
  EXPECT_NE(PerturbedIndicesHash(a), PerturbedIndicesHash(c));
  EXPECT_NE(PerturbedIndicesHash({}), PerturbedIndicesHash(c));
}

}  // namespace
}  // namespace polnode::consensus
