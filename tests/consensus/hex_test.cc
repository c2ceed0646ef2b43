#include "polnode/consensus/hex.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace polnode::consensus {
namespace {

TEST(HexTest, EncodesLowercase) {
  const std::vector<std::uint8_t> bytes = {0x00, 0x0f, 0xa0, 0xff};
  EXPECT_EQ(ToHex(bytes), "000fa0ff");
  EXPECT_EQ(ToHex(std::span<const std::uint8_t>()), "");
  EXPECT_EQ(ToHex(std::string_view("\x01\xfe", 2)), "01fe");
}

TEST(HexTest, DecodesEitherCase) {
  Result<std::vector<std::uint8_t>> bytes = HexToBytes("000fA0fF");
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, (std::vector<std::uint8_t>{0x00, 0x0f, 0xa0, 0xff}));
}

TEST(HexTest, RejectsOddLengthAndNonHex) {
  EXPECT_EQ(HexToBytes("abc").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HexToBytes("zz").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HexToBytes("0x00").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HexToBytes("0 0f").status().code(), StatusCode::kInvalidArgument);
}

TEST(HexTest, FixedNeedsExactLengthAndLeavesOutputOnError) {
  std::array<std::uint8_t, 2> out = {7, 7};
  EXPECT_EQ(HexToFixed("0102", out).code(), StatusCode::kOk);
  EXPECT_EQ(out, (std::array<std::uint8_t, 2>{1, 2}));
  out = {7, 7};
  EXPECT_EQ(HexToFixed("01", out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HexToFixed("010203", out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HexToFixed("01g2", out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out, (std::array<std::uint8_t, 2>{7, 7}));
}

}  // namespace
}  // namespace polnode::consensus
