#include "strata/core/box.h"

#include <gtest/gtest.h>

#include "strata/core/checked_index.h"

namespace strata {
namespace {

TEST(BoxTest, IntersectAndContains) {
  Box a({0, 0}, {10, 10});
  Box b({5, 8}, {10, 10});
  Box i = Intersect(a, b);
  EXPECT_EQ(i, Box({5, 8}, {5, 2}));
  EXPECT_TRUE(a.Contains(i));
  EXPECT_FALSE(a.Contains(b));
  EXPECT_TRUE(Intersect(Box({0}, {3}), Box({5}, {2})).empty());
}

TEST(BoxTest, LinearIndexRoundTrip) {
  Shape shape = {3, 4, 5};
  Shape idx(3, 0);
  Index expected = 0;
  do {
    EXPECT_EQ(LinearIndex(idx, shape), expected);
    Shape back(3);
    UnravelIndex(expected, shape, back);
    EXPECT_EQ(back, idx);
    ++expected;
  } while (NextIndex(idx, shape));
  EXPECT_EQ(expected, 60);
}

TEST(BoxTest, ParseShape) {
  EXPECT_EQ(*ParseShape("10000,1000", "shape"), Shape({10000, 1000}));
  EXPECT_EQ(*ParseShape("(5,)", "shape"), Shape({5}));
  EXPECT_EQ(*ParseShape("[2, 3]", "shape"), Shape({2, 3}));
  EXPECT_EQ(*ParseShape("", "shape"), Shape());
  Result<Shape> bad = ParseShape("3,-1", "chunks");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("invalid chunks '3,-1'"), std::string_view::npos);
  EXPECT_FALSE(ParseShape("3,,4", "shape").ok());
  EXPECT_FALSE(ParseShape("99999999999999999999", "shape").ok());
}

TEST(BoxTest, CheckedNumElementsOverflow) {
  Shape huge = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_EQ(CheckedNumElements(huge, "shape").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*CheckedNumElements(Shape{}, "shape"), 1);
  EXPECT_EQ(*CheckedNumElements(Shape{4, 0}, "shape"), 0);
}

// A region whose end (origin + extent) passes 2^63 once wrapped to a
// negative end that every bound check passed: the checked helpers refuse it,
// naming it, and Contains answers false without computing it.
TEST(BoxTest, OriginPlusExtentNearTwoToTheSixtyThree) {
  const Index big = INT64_MAX - 7;
  EXPECT_EQ(*CheckedAdd(big, 7, "x"), INT64_MAX);
  Result<Index> sum = CheckedAdd(big, 50, "region of x");
  EXPECT_EQ(sum.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sum.status().message().find("region of x: 9223372036854775800 + 50 overflows int64"),
            std::string_view::npos)
      << sum.status().ToString();
  EXPECT_EQ(*CheckedMul(int64_t{1} << 31, int64_t{1} << 31, "x"), int64_t{1} << 62);
  EXPECT_EQ(CheckedMul(int64_t{1} << 32, int64_t{1} << 31, "stride").status().code(),
            StatusCode::kInvalidArgument);

  const Box wraps({big, 0}, {50, 70});
  Status s = CheckBox(wraps, "region");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("region at (9223372036854775800, 0) of shape (50, 70) ends past"),
            std::string_view::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("axis 0"), std::string_view::npos) << s.ToString();
  EXPECT_EQ(CheckBox(Box({0, INT64_MAX}, {50, 70}), "region").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckBox(Box({-1, 0}, {5, 5}), "region").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckBox(Box({big, 0}, {7, 70}), "region").ok());

  const Box array = Box::FromShape({400, 300});
  EXPECT_FALSE(array.Contains(wraps));
  EXPECT_FALSE(array.Contains(Box({0, INT64_MAX}, {50, 70})));
  EXPECT_FALSE(array.Contains(Box({0, 250}, {50, 70})));
  EXPECT_TRUE(array.Contains(Box({350, 230}, {50, 70})));
  EXPECT_EQ(wraps.ToString(), "[9223372036854775800:9223372036854775800+50, 0:70]");
}

}  // namespace
}  // namespace strata
