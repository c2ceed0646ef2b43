// The canonical encoding: exact byte layout, round trips, and the Reader's refusal of truncated,
// overlong or non-canonical input.
#include "polnode/consensus/encoding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "consensus_test_util.h"

namespace polnode::consensus {
namespace {

using testing::Unhex;

std::vector<std::uint8_t> Encoded(void (*write)(Writer&)) {
  BufferWriter w;
  write(w);
  return w.Take();
}

TEST(EncodingTest, IntegersAreFixedWidthLittleEndian) {
  EXPECT_EQ(Encoded([](Writer& w) { w.U8(0xab); }), Unhex("ab"));
  EXPECT_EQ(Encoded([](Writer& w) { w.U16(0x0102); }), Unhex("0201"));
  EXPECT_EQ(Encoded([](Writer& w) { w.U32(0x01020304); }), Unhex("04030201"));
  EXPECT_EQ(Encoded([](Writer& w) { w.U64(0x0102030405060708); }), Unhex("0807060504030201"));
  EXPECT_EQ(Encoded([](Writer& w) { w.U64(0); }), Unhex("0000000000000000"));
  EXPECT_EQ(Encoded([](Writer& w) { w.I64(-2); }), Unhex("feffffffffffffff"));
  EXPECT_EQ(Encoded([](Writer& w) { w.Bool(true); }), Unhex("01"));
  EXPECT_EQ(Encoded([](Writer& w) { w.Bool(false); }), Unhex("00"));
}

TEST(EncodingTest, FloatsAreTheirIeeeBits) {
  EXPECT_EQ(Encoded([](Writer& w) { w.F32(1.0f); }), Unhex("0000803f"));
  EXPECT_EQ(Encoded([](Writer& w) { w.F64(1.0); }), Unhex("000000000000f03f"));
  // Signed zeros are different values to a hash.
  EXPECT_EQ(Encoded([](Writer& w) { w.F32(0.0f); }), Unhex("00000000"));
  EXPECT_EQ(Encoded([](Writer& w) { w.F32(-0.0f); }), Unhex("00000080"));
}

TEST(EncodingTest, NanPayloadSurvivesRoundTrip) {
  const std::uint32_t bits = 0x7fc12345;  // a quiet NaN with a payload
  float nan;
  std::memcpy(&nan, &bits, sizeof nan);
  BufferWriter w;
  w.F32(nan);
  Reader r(w.bytes());
  Result<float> back = r.F32();
  ASSERT_TRUE(back.ok());
  std::uint32_t back_bits;
  std::memcpy(&back_bits, &*back, sizeof back_bits);
  EXPECT_EQ(back_bits, bits);
}

TEST(EncodingTest, BytesAndStringsAreLengthPrefixed) {
  EXPECT_EQ(Encoded([](Writer& w) { w.String("hi"); }), Unhex("02000000000000006869"));
  EXPECT_EQ(Encoded([](Writer& w) { w.String(""); }), Unhex("0000000000000000"));
  const std::vector<std::uint8_t> raw = {1, 2, 3};
  BufferWriter w;
  w.Bytes(raw);
  w.Fixed(raw);
  EXPECT_EQ(w.Take(), Unhex("0300000000000000010203010203"));
}

TEST(EncodingTest, RoundTripOfEveryType) {
  const std::vector<std::uint8_t> blob = {0, 255, 7};
  BufferWriter w;
  w.U8(200);
  w.U16(65000);
  w.U32(4000000000u);
  w.U64(std::numeric_limits<std::uint64_t>::max());
  w.I64(std::numeric_limits<std::int64_t>::min());
  w.Bool(true);
  w.F32(-3.5f);
  w.F64(std::numeric_limits<double>::denorm_min());
  w.Bytes(blob);
  w.String("polnode");
  w.Fixed(blob);

  Reader r(w.bytes());
  EXPECT_EQ(*r.U8(), 200);
  EXPECT_EQ(*r.U16(), 65000);
  EXPECT_EQ(*r.U32(), 4000000000u);
  EXPECT_EQ(*r.U64(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(*r.I64(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(*r.Bool(), true);
  EXPECT_EQ(*r.F32(), -3.5f);
  EXPECT_EQ(*r.F64(), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(*r.Bytes(16), blob);
  EXPECT_EQ(*r.String(16), "polnode");
  std::vector<std::uint8_t> fixed(3);
  ASSERT_TRUE(r.Fixed(fixed).ok());
  EXPECT_EQ(fixed, blob);
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_TRUE(r.ExpectEnd().ok());
}

TEST(EncodingTest, TruncationIsCorruptionAndDoesNotAdvance) {
  const std::vector<std::uint8_t> seven(7, 0x11);
  Reader r(seven);
  Result<std::uint64_t> v = r.U64();
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(r.remaining(), 7u);
  EXPECT_EQ(r.U32().status().code(), StatusCode::kOk);
  EXPECT_EQ(r.U32().status().code(), StatusCode::kCorruption);
  EXPECT_EQ(r.remaining(), 3u);

  std::vector<std::uint8_t> out(4);
  EXPECT_EQ(r.Fixed(out).code(), StatusCode::kCorruption);
  EXPECT_EQ(r.remaining(), 3u);

  Reader empty(std::span<const std::uint8_t>{});
  EXPECT_EQ(empty.U8().status().code(), StatusCode::kCorruption);
  EXPECT_EQ(empty.Bool().status().code(), StatusCode::kCorruption);
  EXPECT_EQ(empty.F64().status().code(), StatusCode::kCorruption);
}

TEST(EncodingTest, TruncatedByteStringIsCorruptionAndDoesNotAdvance) {
  // Declares 5 bytes, carries 4.
  const std::vector<std::uint8_t> bytes = Unhex("050000000000000061626364");
  Reader r(bytes);
  Result<std::string> s = r.String(100);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(r.remaining(), bytes.size());
}

TEST(EncodingTest, OverlongByteStringIsRefusedBeforeAllocating) {
  // Declares 2^64 - 1 bytes: must be refused by the limit, not attempted.
  const std::vector<std::uint8_t> bytes = Unhex("ffffffffffffffff00");
  Reader r(bytes);
  Result<std::vector<std::uint8_t>> b = r.Bytes(1 << 20);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(r.remaining(), bytes.size());

  const std::vector<std::uint8_t> three = Unhex("0300000000000000616263");
  Reader limited(three);
  EXPECT_EQ(limited.String(2).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(*limited.String(3), "abc");
}

TEST(EncodingTest, BoolHasOneEncoding) {
  const std::vector<std::uint8_t> two = {2};
  Reader r(two);
  EXPECT_EQ(r.Bool().status().code(), StatusCode::kCorruption);
  EXPECT_EQ(r.remaining(), 1u);
}

TEST(EncodingTest, TrailingBytesAreCorruption) {
  const std::vector<std::uint8_t> bytes = {1, 2};
  Reader r(bytes);
  ASSERT_TRUE(r.U8().ok());
  EXPECT_EQ(r.ExpectEnd().code(), StatusCode::kCorruption);
}

TEST(EncodingTest, HashWriterHashesExactlyTheBufferedBytes) {
  BufferWriter buffered;
  HashWriter hashed;
  for (Writer* w : {static_cast<Writer*>(&buffered), static_cast<Writer*>(&hashed)}) {
    w->String("polnode/test/v1");
    w->U64(42);
    w->F32(0.25f);
  }
  EXPECT_EQ(hashed.Finalize(), Sha256(buffered.bytes()));
  // Finalize restarts the hash.
  EXPECT_EQ(hashed.Finalize(), Sha256(std::string_view()));
}

}  // namespace
}  // namespace polnode::consensus
