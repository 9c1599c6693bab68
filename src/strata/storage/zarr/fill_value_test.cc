// Fill values in both Zarr formats: exact round trips, NaN payloads, Python's
// float spelling, null, and MakeFillValue's casts.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "strata/storage/zarr/metadata.h"
#include "strata/storage/zarr/metadata_test_util.h"

namespace strata::testing_zarr {
namespace {

// ---------------------------------------------------------------------------
// Fill values.

std::vector<std::pair<DType, FillValue>> ExactFillValues() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const float nanf = std::numeric_limits<float>::quiet_NaN();
  const float inff = std::numeric_limits<float>::infinity();
  return {
      {DTypeId::kFloat64, FillOf(-0.0)},
      {DTypeId::kFloat64, FillOf(nan)},
      {DTypeId::kFloat64, FillOf(inf)},
      {DTypeId::kFloat64, FillOf(-inf)},
      {DTypeId::kFloat64, FillOf(0.1)},
      {DTypeId::kFloat64, FillOf(1e15)},
      {DTypeId::kFloat64, FillOf(123456789012345.67)},
      {DTypeId::kFloat64, FillOf(std::numeric_limits<double>::denorm_min())},
      {DTypeId::kFloat64, FillOf(std::numeric_limits<double>::max())},
      {DTypeId::kFloat64, FillOf(-std::numeric_limits<double>::min())},
      {DTypeId::kFloat32, FillOf(-0.0f)},
      {DTypeId::kFloat32, FillOf(nanf)},
      {DTypeId::kFloat32, FillOf(inff)},
      {DTypeId::kFloat32, FillOf(-inff)},
      {DTypeId::kFloat32, FillOf(0.1f)},
      {DTypeId::kFloat32, FillOf(std::numeric_limits<float>::max())},
      {DTypeId::kFloat32, FillOf(std::numeric_limits<float>::denorm_min())},
      {DTypeId::kInt64, FillOf(std::numeric_limits<int64_t>::min())},
      {DTypeId::kInt64, FillOf(std::numeric_limits<int64_t>::max())},
      {DTypeId::kInt64, FillOf(int64_t{(1LL << 53) + 1})},
      {DTypeId::kUInt64, FillOf(std::numeric_limits<uint64_t>::max())},
      {DTypeId::kUInt64, FillOf(uint64_t{(1ULL << 63) + 1})},
      {DTypeId::kInt8, FillOf(int8_t{-128})},
      {DTypeId::kUInt16, FillOf(uint16_t{65535})},
      {DTypeId::kInt32, FillOf(std::numeric_limits<int32_t>::min())},
      {DTypeId::kUInt32, FillOf(std::numeric_limits<uint32_t>::max())},
      {DTypeId::kBool, FillOf(uint8_t{1})},
      {DTypeId::kBool, FillOf(uint8_t{0})},
      {DTypeId::kComplex64, ComplexFillOf(nanf, -inff)},
      {DTypeId::kComplex64, ComplexFillOf(-0.0f, 0.1f)},
      {DTypeId::kComplex128, ComplexFillOf(1e300, -2.5)},
      {DTypeId::kComplex128, ComplexFillOf(inf, nan)},
  };
}

TEST(FillValueTest, UnicodeFillPastTheLastCodePointIsWrittenAsTheReplacementCharacter) {
  // A fixed_length_utf32 fill holding U+00E9 and 0x110000 (no code point):
  // the document gets U+FFFD for the latter, and reads back as such.
  const uint32_t written[] = {0xe9, 0x110000};
  const uint32_t read[] = {0xe9, 0xfffd};
  for (ZarrFormat format : {ZarrFormat::kV2, ZarrFormat::kV3}) {
    ArrayMetadata m;
    m.zarr_format = format;
    m.shape = {4};
    m.chunk_shape = {2};
    m.encoding.dtype = DType::FixedUnicode(2);
    m.fill_value.bytes.resize(sizeof(written));
    std::memcpy(m.fill_value.bytes.data(), written, sizeof(written));
    m.chunk_key_encoding = {format == ZarrFormat::kV2 ? ChunkKeyEncoding::Kind::kV2
                                                      : ChunkKeyEncoding::Kind::kDefault,
                            format == ZarrFormat::kV2 ? '.' : '/'};
    Result<ArrayMetadata> back = RoundTrip(m);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_EQ(back->fill_value.bytes.size(), sizeof(read));
    EXPECT_EQ(std::memcmp(back->fill_value.bytes.data(), read, sizeof(read)), 0)
        << FillHex(back->fill_value);
  }
}

TEST(FillValueTest, RoundTripsExactlyInBothFormats) {
  for (ZarrFormat format : {ZarrFormat::kV2, ZarrFormat::kV3}) {
    for (const auto& [dtype, fill] : ExactFillValues()) {
      ArrayMetadata m;
      m.zarr_format = format;
      m.shape = {4};
      m.chunk_shape = {2};
      m.encoding.dtype = dtype;
      m.fill_value = fill;
      m.chunk_key_encoding = {format == ZarrFormat::kV2 ? ChunkKeyEncoding::Kind::kV2
                                                        : ChunkKeyEncoding::Kind::kDefault,
                              format == ZarrFormat::kV2 ? '.' : '/'};
      SCOPED_TRACE(m.Encode().front().second);
      Result<ArrayMetadata> back = RoundTrip(m);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_EQ(Hex(back->fill_value.bytes), Hex(fill.bytes));
      EXPECT_FALSE(back->fill_value.is_null);
    }
  }
}

TEST(FillValueTest, NonCanonicalNaNKeepsItsBitsInV3Only) {
  ArrayMetadata m;
  m.zarr_format = ZarrFormat::kV3;
  m.shape = {4};
  m.chunk_shape = {2};
  m.chunk_key_encoding = {ChunkKeyEncoding::Kind::kDefault, '/'};
  m.encoding.dtype = DTypeId::kFloat32;
  m.fill_value = FillOf(uint32_t{0xffc00001});
  EXPECT_NE(EncodedDocument(m, kZarrJsonKey).find(R"("fill_value": "0xffc00001")"),
            std::string::npos);
  EXPECT_EQ(RoundTrip(m)->fill_value, m.fill_value);
  m.encoding.dtype = DTypeId::kFloat64;
  m.fill_value = FillOf(uint64_t{0x7ff0000000000001});
  EXPECT_NE(EncodedDocument(m, kZarrJsonKey).find(R"("fill_value": "0x7ff0000000000001")"),
            std::string::npos);
  EXPECT_EQ(RoundTrip(m)->fill_value, m.fill_value);
  // The canonical NaN is spelled "NaN".
  m.fill_value = FillOf(std::numeric_limits<double>::quiet_NaN());
  EXPECT_NE(EncodedDocument(m, kZarrJsonKey).find(R"("fill_value": "NaN")"), std::string::npos);
  // v2 can only say "NaN" (as zarr-python does), which reads back as the canonical NaN.
  m.zarr_format = ZarrFormat::kV2;
  m.chunk_key_encoding = {ChunkKeyEncoding::Kind::kV2, '.'};
  m.fill_value = FillOf(uint64_t{0x7ff0000000000001});
  EXPECT_NE(EncodedDocument(m, kZarrayKey).find(R"("fill_value": "NaN")"), std::string::npos);
  EXPECT_EQ(RoundTrip(m)->fill_value, FillOf(uint64_t{0x7ff8000000000000}));
}

TEST(FillValueTest, FloatsAreWrittenAsPythonWritesThem) {
  // Expected strings are Python's json.dumps(float(x)).
  const std::pair<double, const char*> kCases[] = {
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {100.0, "100.0"},
      {0.1, "0.1"},
      {1e-4, "0.0001"},
      {1.5e-5, "1.5e-05"},
      {1e15, "1000000000000000.0"},
      {1234567890123456.0, "1234567890123456.0"},
      {1e16, "1e+16"},
      {1.2345678901234568e+17, "1.2345678901234568e+17"},
      {1e300, "1e+300"},
      {5e-324, "5e-324"},
      {-2.5, "-2.5"},
      {12345.678, "12345.678"},
      {static_cast<double>(0.1f), "0.10000000149011612"},
  };
  for (const auto& [value, expected] : kCases) {
    ArrayMetadata m;
    m.shape = {1};
    m.chunk_shape = {1};
    m.encoding.dtype = DTypeId::kFloat64;
    m.fill_value = FillOf(value);
    EXPECT_NE(EncodedDocument(m, kZarrayKey).find(fmt::format("\"fill_value\": {},", expected)),
              std::string::npos)
        << EncodedDocument(m, kZarrayKey);
  }
}

TEST(FillValueTest, NullFillValue) {
  Result<ArrayMetadata> parsed = ParseZarrV2ArrayMetadata(
      R"({"zarr_format": 2, "shape": [3], "chunks": [3], "dtype": "<f4", "compressor": null,
          "fill_value": null, "filters": null, "order": "C"})",
      "");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(parsed->fill_value.is_null);
  EXPECT_EQ(parsed->fill_value.bytes, ZeroFillValue(DTypeId::kFloat32).bytes);
  EXPECT_NE(EncodedDocument(*parsed, kZarrayKey).find("\"fill_value\": null"), std::string::npos);
  // v3 has no null: the zeros Strata reads for it are written instead.
  ArrayMetadata v3 = *parsed;
  v3.zarr_format = ZarrFormat::kV3;
  v3.chunk_key_encoding = {ChunkKeyEncoding::Kind::kDefault, '/'};
  EXPECT_NE(EncodedDocument(v3, kZarrJsonKey).find("\"fill_value\": 0.0"), std::string::npos);
}

TEST(FillValueTest, MakeFillValueCastsAsNumpy) {
  EXPECT_EQ(MakeFillValue(DTypeId::kInt32, -3.9), FillOf<int32_t>(-3));
  EXPECT_EQ(MakeFillValue(DTypeId::kUInt8, 255.5), FillOf<uint8_t>(255));
  EXPECT_EQ(MakeFillValue(DTypeId::kInt64, 1e30), FillOf(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(MakeFillValue(DTypeId::kInt16, std::nan("")), FillOf<int16_t>(0));
  EXPECT_EQ(MakeFillValue(DTypeId::kBool, 0.0), FillOf<uint8_t>(0));
  EXPECT_EQ(MakeFillValue(DTypeId::kBool, -2.0), FillOf<uint8_t>(1));
  EXPECT_EQ(MakeFillValue(DTypeId::kFloat32, 0.1), FillOf(0.1f));
  EXPECT_EQ(MakeFillValue(DTypeId::kFloat32, 1e300),
            FillOf(std::numeric_limits<float>::infinity()));
  EXPECT_EQ(MakeFillValue(DTypeId::kFloat64, -0.0), FillOf(-0.0));
  EXPECT_EQ(MakeFillValue(DTypeId::kFloat64, std::nan("")), FillOf(uint64_t{0x7ff8000000000000}));
  EXPECT_EQ(MakeFillValue(DTypeId::kComplex64, 2.0), ComplexFillOf(2.0f, 0.0f));
  EXPECT_EQ(MakeFillValue(DTypeId::kComplex128, -1.0), ComplexFillOf(-1.0, 0.0));
  EXPECT_EQ(ZeroFillValue(DTypeId::kComplex128).bytes, std::vector<std::byte>(16));
  EXPECT_FALSE(ZeroFillValue(DTypeId::kBool).is_null);
}

}  // namespace
}  // namespace strata::testing_zarr
