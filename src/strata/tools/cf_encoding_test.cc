#include "strata/tools/cf_encoding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace strata {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kHour = int64_t{3600} * 1'000'000'000;
constexpr int64_t kMinute = int64_t{60} * 1'000'000'000;
constexpr int64_t kDay = 24 * kHour;
// 2000-01-01 and 2010-01-01 in nanoseconds since 1970-01-01.
constexpr int64_t k2000 = int64_t{10957} * kDay;
constexpr int64_t k2010 = int64_t{14610} * kDay;

// A v2 array's encoding from its .zarray fields and .zattrs text.
CfEncoding V2(const std::string& dtype, const std::string& fill, const std::string& zattrs) {
  const std::string zarray = "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [4], \"dtype\": \"" +
                             dtype + "\", \"fill_value\": " + fill +
                             ", \"order\": \"C\", \"filters\": null, \"compressor\": null}";
  Result<ArrayMetadata> m = ParseZarrV2ArrayMetadata(zarray, zattrs);
  STRATA_CHECK(m.ok()) << m.status().ToString();
  Result<CfEncoding> e = ParseCfEncoding(*m, "x");
  STRATA_CHECK(e.ok()) << e.status().ToString();
  return *e;
}

template <typename T>
std::vector<std::byte> Bytes(std::vector<T> values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

template <typename T>
std::vector<T> Values(const std::vector<std::byte>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// Converts `in` (stored as From) from one encoding to the other.
template <typename To, typename From>
Result<std::vector<To>> Convert(const CfEncoding& from, const CfEncoding& to,
                                std::vector<From> in) {
  STRATA_ASSIGN_OR_RETURN(CfConverter c, CfConverter::Make(from, to, "x"));
  std::vector<std::byte> src = Bytes(in), dst(in.size() * sizeof(To));
  STRATA_RETURN_IF_ERROR(c.Convert(src.data(), dst.data(), static_cast<int64_t>(in.size())));
  return Values<To>(dst);
}

TEST(CfTimeUnitsTest, ParsesUnitsAndEpochs) {
  Result<CfTimeUnits> u = ParseCfTimeUnits("hours since 2000-01-01");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->unit_ns, kHour);
  EXPECT_EQ(u->epoch_ns, k2000);
  u = ParseCfTimeUnits("minutes since 2010-01-01 06:30:00");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->unit_ns, kMinute);
  EXPECT_EQ(u->epoch_ns, k2010 + 6 * kHour + 30 * kMinute);
  u = ParseCfTimeUnits("seconds since 1970-01-01T00:00:00.5Z");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->epoch_ns, 500'000'000);
  u = ParseCfTimeUnits("days since 2000-01-01 02:00 +02:00");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->unit_ns, kDay);
  EXPECT_EQ(u->epoch_ns, k2000);  // 02:00 at +02:00 is midnight UTC
}

TEST(CfTimeUnitsTest, RefusesWhatDoesNotParse) {
  Result<CfTimeUnits> u = ParseCfTimeUnits("fortnights since 2000-01-01");
  EXPECT_EQ(u.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(u.status().message(), HasSubstr("unknown unit 'fortnights'"));
  u = ParseCfTimeUnits("hours after 2000-01-01");
  EXPECT_THAT(u.status().message(), HasSubstr("no ' since '"));
  u = ParseCfTimeUnits("hours since 2000-13-01");
  EXPECT_THAT(u.status().message(), HasSubstr("date is invalid"));
}

TEST(CfTimeUnitsTest, FormatsTimes) {
  EXPECT_EQ(FormatTimeNs(k2000 + 6 * kHour + 30 * kMinute), "2000-01-01T06:30:00");
  EXPECT_EQ(FormatTimeNs(-kDay), "1969-12-31T00:00:00");
  EXPECT_EQ(FormatTimeNs(kNaT), "NaT");
}

TEST(CfEncodingTest, ReadsV2PackingAndFillValue) {
  CfEncoding e = V2("<i2", "-32767", R"({"scale_factor": 0.01, "add_offset": 273.15})");
  EXPECT_EQ(e.scale_factor, 0.01);
  EXPECT_EQ(e.add_offset, 273.15);
  ASSERT_EQ(e.missing.size(), 1u);
  EXPECT_TRUE(e.has_fill);
  EXPECT_EQ(e.missing[0], -32767.0);
  EXPECT_TRUE(e.from_attributes);
  // A null fill_value is no mask; a plain float array's NaN is.
  EXPECT_TRUE(V2("<i8", "null", "{}").missing.empty());
  EXPECT_FALSE(V2("<f4", "\"NaN\"", "{}").from_attributes);
}

TEST(CfEncodingTest, ReadsV3FillValueAttributeAsXarrayWritesIt) {
  const std::string zarr_json = R"({"zarr_format": 3, "node_type": "array", "shape": [2],
    "data_type": "float32", "chunk_grid": {"name": "regular", "configuration":
    {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default"}, "fill_value": "NaN",
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "attributes": {"_FillValue": "AAAAAAA4j8A="}})";
  Result<ArrayMetadata> m = ParseZarrV3ArrayMetadata(zarr_json);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Result<CfEncoding> e = ParseCfEncoding(*m, "x");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->missing.size(), 1u);
  EXPECT_EQ(e->missing[0], -999.0);  // the base64 of float64 -999
}

TEST(CfEncodingTest, ReadsTimesAndRefusesOtherCalendars) {
  CfEncoding t =
      V2("<i8", "null", R"({"units": "hours since 2000-01-01", "calendar": "gregorian"})");
  EXPECT_EQ(t.kind, CfKind::kTime);
  EXPECT_EQ(t.calendar, "standard");
  EXPECT_EQ(t.epoch_ns, k2000);
  CfEncoding d = V2("<i8", "null", R"({"units": "hours", "dtype": "timedelta64[s]"})");
  EXPECT_EQ(d.kind, CfKind::kTimedelta);
  EXPECT_EQ(d.unit_ns, kHour);

  Result<ArrayMetadata> m = ParseZarrV2ArrayMetadata(
      R"({"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<i8", "fill_value": null,
          "order": "C", "filters": null, "compressor": null})",
      R"({"units": "days since 2000-01-01", "calendar": "noleap"})");
  ASSERT_TRUE(m.ok());
  Result<CfEncoding> e = ParseCfEncoding(*m, "time");
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("time: calendar 'noleap' is not supported"));

  m->attributes_json = R"({"units": "days since 1500-01-01"})";
  e = ParseCfEncoding(*m, "time");
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("before 1582-10-15"));
  m->attributes_json = R"({"units": "days since 1500-01-01", "calendar": "proleptic_gregorian"})";
  e = ParseCfEncoding(*m, "time");
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("is outside datetime64[ns]"));
  m->attributes_json = R"({"units": "days since 1700-01-01", "calendar": "standard"})";
  EXPECT_TRUE(ParseCfEncoding(*m, "time").ok());
}

TEST(CfConverterTest, EqualEncodingsCopyBytes) {
  CfEncoding a = V2("<i2", "-32767", R"({"scale_factor": 0.01, "add_offset": 273.15})");
  Result<CfConverter> c = CfConverter::Make(a, a, "t2m");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->copies_bytes());
  // Any difference (here only the fill value) means values must be converted.
  CfEncoding b = V2("<i2", "-32768", R"({"scale_factor": 0.01, "add_offset": 273.15})");
  c = CfConverter::Make(a, b, "t2m");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->copies_bytes());
}

TEST(CfConverterTest, RepacksValuesAndMapsTheFillValue) {
  // The patch: scale 0.02, no offset, fill -1. The archive: scale 0.01,
  // offset 273.15, fill -32767.
  CfEncoding patch = V2("<i2", "-1", R"({"scale_factor": 0.02})");
  CfEncoding archive = V2("<i2", "-32767", R"({"scale_factor": 0.01, "add_offset": 273.15})");
  // 280.00 K, 265.50 K, missing.
  Result<std::vector<int16_t>> out =
      Convert<int16_t, int16_t>(patch, archive, std::vector<int16_t>{14000, 13275, -1});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, (std::vector<int16_t>{685, -765, -32767}));
  // Back again.
  Result<std::vector<int16_t>> back = Convert<int16_t, int16_t>(archive, patch, *out);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, (std::vector<int16_t>{14000, 13275, -1}));
  // NaN into a float archive without a fill value stays NaN; into float32.
  CfEncoding plain = V2("<f4", "\"NaN\"", "{}");
  Result<std::vector<float>> f = Convert<float, int16_t>(archive, plain, *out);
  ASSERT_TRUE(f.ok());
  EXPECT_FLOAT_EQ((*f)[0], 280.0f);
  EXPECT_TRUE(std::isnan((*f)[2]));
}

TEST(CfConverterTest, RefusesValuesOutsideThePackedRange) {
  // int8 with scale 1 and offset 0 holds -128..127: 300 (from an int16
  // patch) would wrap to 44 if cast.
  CfEncoding patch = V2("<i2", "null", R"({"scale_factor": 1.0})");
  CfEncoding archive = V2("|i1", "null", R"({"scale_factor": 1.0})");
  Result<std::vector<int8_t>> out =
      Convert<int8_t, int16_t>(patch, archive, std::vector<int16_t>{5, 300});
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("x: value 300 is outside what the target"));
  // A value that would store as the archive's _FillValue is refused too.
  CfEncoding masked = V2("|i1", "-128", R"({"scale_factor": 1.0})");
  out = Convert<int8_t, int16_t>(patch, masked, std::vector<int16_t>{-128});
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("the target's missing value"));
  // A missing value where the archive has no _FillValue.
  CfEncoding patch_masked = V2("<i2", "-1", R"({"scale_factor": 1.0})");
  out = Convert<int8_t, int16_t>(patch_masked, archive, std::vector<int16_t>{-1});
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("has no _FillValue"));
}

TEST(CfConverterTest, ConvertsTimesBetweenUnits) {
  const std::string hours = R"({"units": "hours since 2000-01-01", )";
  CfEncoding patch = V2("<i8", "null", hours + R"("calendar": "proleptic_gregorian"})");
  CfEncoding archive = V2("<i8", "null",
                          R"({"units": "minutes since 2010-01-01", "calendar": "standard"})");
  // 2010-01-01T00:00 and 2010-01-01T06:00 are 87672 and 87678 hours after 2000.
  Result<std::vector<int64_t>> out =
      Convert<int64_t, int64_t>(patch, archive, std::vector<int64_t>{87672, 87678});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, (std::vector<int64_t>{0, 360}));
}

TEST(CfConverterTest, RefusesTimesTheArchiveCannotRepresent) {
  CfEncoding minutes = V2("<i8", "null", R"({"units": "minutes since 2010-01-01"})");
  CfEncoding hours = V2("<i8", "null", R"({"units": "hours since 2010-01-01"})");
  Result<std::vector<int64_t>> out =
      Convert<int64_t, int64_t>(minutes, hours, std::vector<int64_t>{60, 90});
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(),
              HasSubstr("2010-01-01T01:30:00 is not a whole number of hours"));
  // Before the epoch of an unsigned archive.
  CfEncoding unsigned_hours = V2("<u4", "null", R"({"units": "hours since 2010-01-01"})");
  Result<std::vector<uint32_t>> u =
      Convert<uint32_t, int64_t>(minutes, unsigned_hours, std::vector<int64_t>{-60});
  EXPECT_EQ(u.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(u.status().message(), HasSubstr("is before the epoch"));
  // Past int32 seconds.
  CfEncoding seconds32 = V2("<i4", "null", R"({"units": "seconds since 2010-01-01"})");
  Result<std::vector<int32_t>> s =
      Convert<int32_t, int64_t>(hours, seconds32, std::vector<int64_t>{24 * 365 * 100});
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("does not fit int32"));
}

TEST(CfConverterTest, RefusesKindAndUnitMismatches) {
  CfEncoding time = V2("<i8", "null", R"({"units": "hours since 2000-01-01"})");
  CfEncoding number = V2("<i8", "null", "{}");
  Result<CfConverter> c = CfConverter::Make(time, number, "init_time");
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("init_time: SRC holds times"));
  CfEncoding kelvin = V2("<f4", "\"NaN\"", R"({"units": "K"})");
  CfEncoding celsius = V2("<f4", "\"NaN\"", R"({"units": "degC"})");
  c = CfConverter::Make(celsius, kelvin, "t2m");
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("does not convert physical units"));
}

}  // namespace
}  // namespace strata
