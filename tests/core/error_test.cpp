// Errors as values (core/error.h): a Result holds a value or an Error, a Status ok or an Error; messages keep the
// bad value and gain context without losing their code.
#include <gtest/gtest.h>

#include <string>

#include "samplecheck/core/error.h"

namespace samplecheck {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("x = " + std::to_string(x) + " is not even");
  return x / 2;
}

TEST(Error, ResultHoldsAValueOrAnError) {
  const Result<int> ok = Half(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 4);
  EXPECT_TRUE(ok.status().ok());
  const Result<int> bad = Half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message, "x = 3 is not even");
  EXPECT_EQ(bad.status().error().message, "x = 3 is not even");
}

TEST(Error, WithContextPrefixesTheMessageAndKeepsTheCode) {
  const Error e = Error{ErrorCode::kParse, "no \"binnings\""}.WithContext("case 3");
  EXPECT_EQ(e.code, ErrorCode::kParse);
  EXPECT_EQ(e.message, "case 3: no \"binnings\"");
  EXPECT_EQ(e.ToString(), "parse error: case 3: no \"binnings\"");
}

TEST(Error, EveryCodeHasAName) {
  for (ErrorCode code : {ErrorCode::kInvalidArgument, ErrorCode::kInvalidRow, ErrorCode::kUnsupported, ErrorCode::kIo,
                         ErrorCode::kParse, ErrorCode::kPlugin, ErrorCode::kCuda, ErrorCode::kInternal}) {
    EXPECT_STRNE(ErrorCodeName(code), "unknown error");
  }
  EXPECT_EQ(InternalError("x").code, ErrorCode::kInternal);
  EXPECT_EQ(Unsupported("x").code, ErrorCode::kUnsupported);
}

TEST(Error, StatusFromAFailedResultAndBack) {
  const Status st = Half(5).status();
  ASSERT_FALSE(st.ok());
  const Result<int> again = st;
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().message, "x = 5 is not even");
  EXPECT_TRUE(Status::Ok().ok());
}

}  // namespace
}  // namespace samplecheck
