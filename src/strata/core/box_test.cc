#include "strata/core/box.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace strata
