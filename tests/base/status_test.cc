#include "polnode/base/status.h"

#include <gtest/gtest.h>

#include <string>

namespace polnode {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = Status::NotFound("key file /x missing");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "not found: key file /x missing");
}

TEST(StatusTest, WithContextPrefixesErrorsAndKeepsOk) {
  EXPECT_EQ(Status::Corruption("bad crc").WithContext("block 7").ToString(),
            "corruption: block 7: bad crc");
  EXPECT_TRUE(Status::Ok().WithContext("anything").ok());
}

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  POLNODE_ASSIGN_OR_RETURN(int h, Half(x));
  POLNODE_ASSIGN_OR_RETURN(h, Half(h));
  return h;
}

Status CheckEven(int x) {
  POLNODE_RETURN_IF_ERROR(Half(x).status());
  return Status::Ok();
}

TEST(ResultTest, ValueAndErrorPropagate) {
  ASSERT_TRUE(Quarter(8).ok());
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_FALSE(CheckEven(3).ok());
}

TEST(ResultTest, OkStatusIsNotAValue) {
  Result<std::string> r{Status::Ok()};
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace polnode
