#include "strata/base/status.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace strata {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  STRATA_ASSIGN_OR_RETURN(int h, Half(x));
  STRATA_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  STRATA_RETURN_IF_ERROR(Half(x));
  return Status::Ok();
}

TEST(StatusTest, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, WithContextPrependsAndKeepsCode) {
  Status s = DataLossError("truncated").WithContext("reading chunk 3.7 of a.zarr");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "reading chunk 3.7 of a.zarr: truncated");
  EXPECT_TRUE(Status().WithContext("x").ok());
}

TEST(StatusTest, RetryableCodes) {
  EXPECT_TRUE(IsRetryable(UnavailableError("x")));
  EXPECT_FALSE(IsRetryable(InvalidArgumentError("x")));
  EXPECT_FALSE(IsRetryable(DataLossError("x")));
}

TEST(StatusTest, ErrnoMapping) {
  EXPECT_EQ(ErrnoToStatus(ENOENT, "open a").code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoToStatus(ENOSPC, "write").code(), StatusCode::kResourceExhausted);
  Status s = ErrnoToStatus(EACCES, "open /x");
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("open /x: "), std::string_view::npos);
}

TEST(ResultTest, ValueAndErrorPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "odd");
  EXPECT_TRUE(CheckEven(2).ok());
  EXPECT_EQ(CheckEven(3).code(), StatusCode::kInvalidArgument);
}

TEST(ResultTest, MoveOnlyValue) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);
}

}  // namespace
}  // namespace strata
