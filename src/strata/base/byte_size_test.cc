#include "strata/base/byte_size.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(ByteSizeTest, DecimalAndBinaryUnits) {
  EXPECT_EQ(*ParseByteSize("400MB"), 400'000'000);
  EXPECT_EQ(*ParseByteSize("2GiB"), int64_t{2} << 30);
  EXPECT_EQ(*ParseByteSize("1.5 GB"), 1'500'000'000);
  EXPECT_EQ(*ParseByteSize("1048576"), 1048576);
  EXPECT_EQ(*ParseByteSize("10kb"), 10'000);
  EXPECT_EQ(*ParseByteSize("3KiB"), 3072);
  EXPECT_EQ(*ParseByteSize("1e9"), 1'000'000'000);
  EXPECT_EQ(*ParseByteSize("0"), 0);
}

TEST(ByteSizeTest, RejectsNonsense) {
  for (const char* bad : {"", "MB", "12 parsecs", "-5MB", "1.5", "abc", "1e400GB"}) {
    Result<int64_t> r = ParseByteSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("invalid size"), std::string_view::npos);
  }
  EXPECT_NE(ParseByteSize("12 parsecs").status().message().find("unknown unit 'parsecs'"),
            std::string_view::npos);
}

TEST(ByteSizeTest, Format) {
  EXPECT_EQ(FormatBytes(80'000'000), "80.0 MB");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(2'500'000'000), "2.50 GB");
  EXPECT_EQ(FormatBytes(400'000'000), "400 MB");
}

}  // namespace
}  // namespace strata
