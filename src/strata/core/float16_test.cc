#include "strata/core/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace strata {
namespace {

TEST(Float16Test, RoundsLikeNumpy) {
  // numpy 1.24: np.array([v]).astype(np.float16).view(np.uint16).
  const std::pair<double, uint16_t> cases[] = {
      {1.0, 0x3c00},          {65504.0, 0x7bff},      {65519.99, 0x7bff},
      {65520.0, 0x7c00},      {0x1p-24, 0x0001},      {0x1p-25, 0x0000},
      {3 * 0x1p-26, 0x0001},  {1.0 / 3, 0x3555},      {0.1, 0x2e66},
      {-0.0, 0x8000},         {6.1035156e-05, 0x0400}, {0x1p-14 - 0x1p-25, 0x0400},
      {1e-8, 0x0000},         {-2.5, 0xc100},         {1e300, 0x7c00},
      {1.5 * 0x1p-24, 0x0002}, {0x1p-14, 0x0400},
  };
  for (const auto& [value, bits] : cases) {
    EXPECT_EQ(DoubleToHalf(value), bits) << value;
  }
  EXPECT_EQ(DoubleToHalf(-std::numeric_limits<double>::infinity()), 0xfc00);
  EXPECT_TRUE(std::isnan(HalfToDouble(DoubleToHalf(std::nan("")))));
  EXPECT_EQ(FloatToHalf(0.1f), 0x2e66);
}

TEST(Float16Test, EveryHalfRoundTripsThroughDouble) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const auto h = static_cast<uint16_t>(b);
    const double d = HalfToDouble(h);
    if (std::isnan(d)) {
      EXPECT_TRUE(std::isnan(HalfToDouble(DoubleToHalf(d))));
      continue;
    }
    ASSERT_EQ(DoubleToHalf(d), h) << std::hex << b;
    ASSERT_EQ(FloatToHalf(HalfToFloat(h)), h) << std::hex << b;
  }
  EXPECT_EQ(HalfToDouble(0x3c00), 1.0);
  EXPECT_EQ(HalfToDouble(0x0001), 0x1p-24);
  EXPECT_EQ(HalfToDouble(0x7bff), 65504.0);
  EXPECT_EQ(HalfToDouble(0xc100), -2.5);
}

TEST(Float16Test, MidpointsRoundToEven) {
  // Between consecutive halves h and h+1, the midpoint goes to the even one.
  for (uint32_t b = 0x0400; b < 0x7bff; b += 97) {
    const double lo = HalfToDouble(static_cast<uint16_t>(b));
    const double hi = HalfToDouble(static_cast<uint16_t>(b + 1));
    const uint16_t even = (b % 2 == 0) ? static_cast<uint16_t>(b) : static_cast<uint16_t>(b + 1);
    EXPECT_EQ(DoubleToHalf((lo + hi) / 2), even) << std::hex << b;
    EXPECT_EQ(DoubleToHalf(std::nextafter((lo + hi) / 2, 0.0)), b) << std::hex << b;
    EXPECT_EQ(DoubleToHalf(std::nextafter((lo + hi) / 2, 1e9)), b + 1) << std::hex << b;
  }
}

}  // namespace
}  // namespace strata
