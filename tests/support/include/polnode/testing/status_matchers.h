// Assertions on Status and Result that print the status when they fail:
//   EXPECT_TRUE(IsOk(result));  ASSERT_TRUE(StatusIs(result, StatusCode::kNotFound));
#ifndef POLNODE_TESTING_STATUS_MATCHERS_H_
#define POLNODE_TESTING_STATUS_MATCHERS_H_

#include <gtest/gtest.h>

#include "polnode/base/status.h"

namespace polnode::testing {

inline ::testing::AssertionResult IsOk(const Status& status) {
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected ok, got " << status.ToString();
}

template <typename T>
::testing::AssertionResult IsOk(const Result<T>& result) {
  return IsOk(result.status());
}

inline ::testing::AssertionResult StatusIs(const Status& status, StatusCode code) {
  if (status.code() == code) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected " << StatusCodeName(code) << ", got " << status.ToString();
}

template <typename T>
::testing::AssertionResult StatusIs(const Result<T>& result, StatusCode code) {
  return StatusIs(result.status(), code);
}

}  // namespace polnode::testing

#endif  // POLNODE_TESTING_STATUS_MATCHERS_H_
