#include "strata/storage/zarr/base64.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata {
namespace {

std::vector<std::byte> Bytes(std::string_view s) {
  std::vector<std::byte> out;
  for (char c : s) out.push_back(static_cast<std::byte>(c));
  return out;
}

TEST(Base64Test, RoundTripsEveryPaddingAsPythonWritesIt) {
  // base64.standard_b64encode(b"...") for lengths 0..4.
  const std::pair<const char*, const char*> cases[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}};
  for (const auto& [plain, encoded] : cases) {
    EXPECT_EQ(Base64Encode(Bytes(plain)), encoded);
    std::optional<std::vector<std::byte>> decoded = Base64Decode(encoded);
    ASSERT_TRUE(decoded.has_value()) << encoded;
    EXPECT_EQ(*decoded, Bytes(plain));
  }
  // The float64 NaN xarray writes as a v3 _FillValue attribute.
  std::optional<std::vector<std::byte>> nan = Base64Decode("AAAAAAAA+H8=");
  ASSERT_TRUE(nan.has_value());
  EXPECT_EQ(nan->size(), 8u);
  EXPECT_EQ(std::to_integer<int>((*nan)[7]), 0x7f);
}

TEST(Base64Test, RefusesWhatIsNotPaddedBase64) {
  for (const char* bad : {"Zg", "Zg=", "Z===", "Zm9v!A==", "Zg==Zg==", "=Zg="}) {
    EXPECT_FALSE(Base64Decode(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace strata
