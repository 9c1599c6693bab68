#include "strata/base/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace strata {
namespace {

std::string Encode(uint32_t cp) {
  std::string out;
  EXPECT_TRUE(AppendUtf8(cp, out)) << cp;
  return out;
}

TEST(Utf8Test, EachLengthAtItsBoundaries) {
  EXPECT_EQ(Encode(0x00), std::string(1, '\0'));
  EXPECT_EQ(Encode('A'), "A");
  EXPECT_EQ(Encode(0x7f), "\x7f");
  EXPECT_EQ(Encode(0x80), "\xc2\x80");
  EXPECT_EQ(Encode(0xe9), "\xc3\xa9");  // é
  EXPECT_EQ(Encode(0x7ff), "\xdf\xbf");
  EXPECT_EQ(Encode(0x800), "\xe0\xa0\x80");
  EXPECT_EQ(Encode(0x20ac), "\xe2\x82\xac");  // €
  EXPECT_EQ(Encode(0xffff), "\xef\xbf\xbf");
  EXPECT_EQ(Encode(0x10000), "\xf0\x90\x80\x80");
  EXPECT_EQ(Encode(0x1f600), "\xf0\x9f\x98\x80");  // 😀
  EXPECT_EQ(Encode(kMaxCodePoint), "\xf4\x8f\xbf\xbf");
}

TEST(Utf8Test, SurrogatesAreEncodedAsTheyAre) {
  EXPECT_EQ(Encode(0xd800), "\xed\xa0\x80");
}

TEST(Utf8Test, PastTheLastCodePointAppendsNothing) {
  std::string out = "kept";
  EXPECT_FALSE(AppendUtf8(kMaxCodePoint + 1, out));
  EXPECT_FALSE(AppendUtf8(0xffffffff, out));
  EXPECT_EQ(out, "kept");
}

TEST(Utf8Test, AppendsAfterWhatIsThere) {
  std::string out = "x=";
  ASSERT_TRUE(AppendUtf8(0xe9, out));
  ASSERT_TRUE(AppendUtf8('!', out));
  EXPECT_EQ(out, "x=\xc3\xa9!");
}

}  // namespace
}  // namespace strata
