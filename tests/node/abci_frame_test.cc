// ABCI framing (abci_frame.h): round trips, every truncation, over-limit and malformed length
// prefixes, bodies that are not Requests, and requests polnode does not know.
#include "polnode/ledger/abci_frame.h"

#include <gtest/gtest.h>

#include <string>

#include "polnode/testing/status_matchers.h"

namespace polnode::node {
namespace {

using polnode::testing::IsOk;
using polnode::testing::StatusIs;

std::string EchoFrame(const std::string& message) {
  abci::Request request;
  request.mutable_echo()->set_message(message);
  std::string out;
  EXPECT_TRUE(IsOk(AppendAbciFrame(request, out)));
  return out;
}

TEST(AbciFrameTest, RoundTripsConsecutiveFrames) {
  // 200 bytes need a two-byte length varint; the first frame a one-byte one.
  const std::string stream = EchoFrame("hi") + EchoFrame(std::string(200, 'x'));
  auto first = DecodeAbciFrame(stream);
  ASSERT_TRUE(IsOk(first));
  ASSERT_TRUE(first->has_value());
  auto request = ParseAbciRequest((*first)->body);
  ASSERT_TRUE(IsOk(request));
  EXPECT_EQ(request->echo().message(), "hi");

  auto second = DecodeAbciFrame(std::string_view(stream).substr((*first)->consumed));
  ASSERT_TRUE(IsOk(second));
  ASSERT_TRUE(second->has_value());
  EXPECT_EQ((*first)->consumed + (*second)->consumed, stream.size());
  EXPECT_EQ(static_cast<unsigned char>(stream[(*first)->consumed]), 0x80 | ((*second)->body.size() & 0x7f));
  auto big = ParseAbciRequest((*second)->body);
  ASSERT_TRUE(IsOk(big));
  EXPECT_EQ(big->echo().message(), std::string(200, 'x'));
}

TEST(AbciFrameTest, EveryTruncationAsksForMoreBytes) {
  const std::string frame = EchoFrame(std::string(300, 'y'));
  for (std::size_t n = 0; n < frame.size(); ++n) {
    auto decoded = DecodeAbciFrame(std::string_view(frame).substr(0, n));
    ASSERT_TRUE(IsOk(decoded)) << n;
    EXPECT_FALSE(decoded->has_value()) << "prefix of " << n << " bytes";
  }
}

TEST(AbciFrameTest, LengthOverTheCapIsRefusedBeforeTheBodyArrives) {
  // 2^20 + 1 as a varint, with no body at all: the cap is checked on the prefix alone.
  const std::string prefix = "\x81\x80\x40";
  EXPECT_TRUE(StatusIs(DecodeAbciFrame(prefix, std::size_t{1} << 20), StatusCode::kResourceExhausted));
  // The default cap against a claimed 2^62 bytes.
  const std::string huge = std::string(8, '\x80') + "\x40";
  EXPECT_TRUE(StatusIs(DecodeAbciFrame(huge), StatusCode::kResourceExhausted));
}

TEST(AbciFrameTest, MalformedVarintsAreCorruption) {
  EXPECT_TRUE(StatusIs(DecodeAbciFrame(std::string(11, '\x80')), StatusCode::kCorruption));
  // Ten bytes whose last carries more than the 64th bit.
  EXPECT_TRUE(StatusIs(DecodeAbciFrame(std::string(9, '\xff') + "\x02"), StatusCode::kCorruption));
}

TEST(AbciFrameTest, BodiesThatAreNotKnownRequests) {
  // Field 4 was SetOption, removed from ABCI: a Request naming it is unknown to polnode.
  EXPECT_TRUE(StatusIs(ParseAbciRequest(std::string("\x22\x00", 2)), StatusCode::kInvalidArgument));
  EXPECT_TRUE(StatusIs(ParseAbciRequest(""), StatusCode::kInvalidArgument));
  // A length-delimited field whose length runs past the end.
  EXPECT_TRUE(StatusIs(ParseAbciRequest("\x0a\x05hi"), StatusCode::kCorruption));
}

TEST(AbciFrameTest, TextFieldsAreBytesSoNonUtf8IsDataNotAParseError) {
  // RequestQuery.path (field 2 of field 6) holding 0xff: CometBFT's string, polnode's bytes.
  auto request = ParseAbciRequest(std::string("\x32\x03\x12\x01\xff", 5));
  ASSERT_TRUE(IsOk(request));
  EXPECT_EQ(request->query().path(), "\xff");
}

TEST(AbciFrameTest, EmptyMessageHasAZeroLengthFrame) {
  abci::Response response;
  response.mutable_flush();
  std::string out;
  ASSERT_TRUE(IsOk(AppendAbciFrame(response, out)));
  EXPECT_EQ(out, std::string("\x02\x1a\x00", 3));  // length 2: field 3 (flush), length 0
}

}  // namespace
}  // namespace polnode::node
