#include "polnode/solver/philox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace polnode::solver {
namespace {

// Random123's kat_vectors, the "philox4x32" lines: rounds, counter (4 words), key (2 words),
// expected output (4 words).
struct Kat {
  int rounds;
  PhiloxCounter counter;
  PhiloxKey key;
  PhiloxCounter expected;
};
constexpr Kat kKats[] = {
    {10, {0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {10,
     {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {10,
     {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    {7,
     {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
};

TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  for (const Kat& k : kKats) {
    EXPECT_EQ(Philox4x32(k.counter, k.key, k.rounds), k.expected) << "rounds " << k.rounds;
  }
}

TEST(PhiloxTest, WordsAreLanesOfTheBlockAtIndexOverFour) {
  const std::uint64_t seed = 0x0123456789abcdefULL;
  const std::uint64_t block = 0x1'0000'0002ULL;  // exercises the counter's high word
  const PhiloxCounter expected =
      Philox4x32({0x00000002, 0x00000001, 7, static_cast<std::uint32_t>(RandomPurpose::kInit)},
                 {0x89abcdef, 0x01234567});
  for (std::uint32_t lane = 0; lane < 4; ++lane) {
    EXPECT_EQ(RandomWord(seed, RandomPurpose::kInit, 7, block * 4 + lane), expected[lane]);
  }
  EXPECT_EQ(RandomU64(seed, RandomPurpose::kInit, 7, block),
            expected[0] | (std::uint64_t{expected[1]} << 32));
}

TEST(PhiloxTest, PurposeStreamAndSeedSeparateTheSequences) {
  const std::uint32_t base = RandomWord(1, RandomPurpose::kInit, 0, 0);
  EXPECT_NE(base, RandomWord(2, RandomPurpose::kInit, 0, 0));
  EXPECT_NE(base, RandomWord(1, RandomPurpose::kDataOrder, 0, 0));
  EXPECT_NE(base, RandomWord(1, RandomPurpose::kInit, 1, 0));
  EXPECT_NE(base, RandomWord(1, RandomPurpose::kInit, 0, 1));
}

TEST(PhiloxTest, UniformFloatIsTheTop24BitsScaledExactly) {
  EXPECT_EQ(UniformFloat(0), 0.0f);
  EXPECT_EQ(UniformFloat(0xFF), 0.0f);  // the low 8 bits are dropped
  EXPECT_EQ(UniformFloat(0x100), 0x1p-24f);
  EXPECT_EQ(UniformFloat(0x80000000u), 0.5f);
  EXPECT_EQ(UniformFloat(0xFFFFFFFFu), 1.0f - 0x1p-24f);  // strictly below 1
}

TEST(PhiloxTest, UniformIndexIsFloorOfScaledFraction) {
  EXPECT_EQ(UniformIndex(0, 10), 0u);
  EXPECT_EQ(UniformIndex(~std::uint64_t{0}, 10), 9u);
  EXPECT_EQ(UniformIndex(std::uint64_t{1} << 63, 10), 5u);
  EXPECT_EQ(UniformIndex(std::uint64_t{1} << 63, 1), 0u);
  EXPECT_EQ(UniformIndex(~std::uint64_t{0}, std::uint64_t{1} << 32), 0xFFFFFFFFu);
  // floor(3/4 * 2^64 * 7 / 2^64) = floor(5.25) = 5
  EXPECT_EQ(UniformIndex(std::uint64_t{3} << 62, 7), 5u);
}

TEST(PhiloxTest, EpochPermutationIsADeterministicPermutationPerEpoch) {
  const std::vector<std::uint32_t> a = EpochPermutation(42, 0, 1000);
  EXPECT_EQ(a, EpochPermutation(42, 0, 1000));
  std::vector<std::uint32_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (std::uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_NE(a, EpochPermutation(42, 1, 1000));
  EXPECT_NE(a, EpochPermutation(43, 0, 1000));
  // A shuffle leaves few elements in place (about one on average).
  int fixed = 0;
  for (std::uint32_t i = 0; i < 1000; ++i) fixed += a[i] == i;
  EXPECT_LT(fixed, 10);
  EXPECT_TRUE(EpochPermutation(1, 0, 0).empty());
  EXPECT_EQ(EpochPermutation(1, 0, 1), std::vector<std::uint32_t>{0});
}

TEST(PhiloxTest, EpochPermutationMatchesTheWrittenFisherYatesRule) {
  // The rule in philox.h, spelled out for n = 5, so a change of algorithm fails here.
  const std::uint64_t seed = 9;
  std::vector<std::uint32_t> expected = {0, 1, 2, 3, 4};
  for (std::uint32_t i = 4; i > 0; --i) {
    const std::uint32_t j = UniformIndex(RandomU64(seed, RandomPurpose::kDataOrder, 3, i), i + 1);
    ASSERT_LE(j, i);
    std::swap(expected[i], expected[j]);
  }
  EXPECT_EQ(EpochPermutation(seed, 3, 5), expected);
}

}  // namespace
}  // namespace polnode::solver
