// Zarr v2 metadata Strata writes: round trips of every data type, codec,
// order and separator, and the errors of broken .zarray documents.
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
// Zarr v2: round trips of Strata's own metadata.

std::vector<BytesCodecSpec> V2Compressors() {
  return {BloscSpec{},
          BloscSpec{.cname = "zstd", .clevel = 9, .shuffle = 2, .blocksize = 1 << 16},
          BloscSpec{.cname = "zlib", .clevel = 0, .shuffle = 0},
          BloscSpec{.cname = "lz4hc", .clevel = 3, .shuffle = -1},
          ZstdSpec{.level = -5},
          ZstdSpec{.level = 22, .checksum = true},
          ZlibSpec{.level = 0},
          GzipSpec{.level = 9},
          Lz4Spec{.acceleration = 17}};
}

TEST(ZarrV2MetadataTest, RoundTripEveryDTypeCodecOrderAndSeparator) {
  // Every dtype with every compressor and byte order; the order and the
  // separator cycle through their values rather than multiplying the cases.
  int variant = 0;
  for (int d = 0; d < kNumDTypes; ++d) {
    const DType dtype(static_cast<DTypeId>(d));
    std::vector<std::optional<BytesCodecSpec>> codecs = {std::nullopt};
    for (const BytesCodecSpec& c : V2Compressors()) codecs.push_back(c);
    for (const std::optional<BytesCodecSpec>& codec : codecs) {
      for (Endian endian : {Endian::kLittle, Endian::kBig}) {
        ++variant;
        ArrayMetadata m;
        m.zarr_format = ZarrFormat::kV2;
        m.shape = {10, 0, 7};
        m.chunk_shape = {3, 1, 7};
        m.encoding.dtype = dtype;
        m.encoding.endian = dtype.size() > 1 ? endian : Endian::kLittle;
        if (variant % 2 == 1) m.encoding.transpose = {2, 1, 0};
        if (codec.has_value()) m.encoding.bytes_codecs.push_back(*codec);
        m.fill_value = MakeFillValue(dtype, 3);
        m.chunk_key_encoding = {ChunkKeyEncoding::Kind::kV2, variant % 3 == 0 ? '/' : '.'};
        m.attributes_json = R"({"long_name": "x", "scale": [0.5, -1e-300]})";
        ASSERT_TRUE(m.Validate().ok()) << m.Validate().ToString();
        Result<ArrayMetadata> back = RoundTrip(m);
        ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n"
                               << EncodedDocument(m, kZarrayKey);
        EXPECT_EQ(back->zarr_format, m.zarr_format);
        EXPECT_EQ(back->shape, m.shape);
        EXPECT_EQ(back->chunk_shape, m.chunk_shape);
        EXPECT_EQ(back->encoding, m.encoding) << EncodedDocument(m, kZarrayKey);
        EXPECT_EQ(back->fill_value, m.fill_value);
        EXPECT_EQ(back->chunk_key_encoding, m.chunk_key_encoding);
        EXPECT_EQ(json::parse(back->attributes_json), json::parse(m.attributes_json));
      }
    }
  }
}

// Fill values that must survive both formats bit for bit.

// ---------------------------------------------------------------------------
// Zarr v2: errors.

// A valid .zarray that each case below breaks in one way.
constexpr std::string_view kValidZarray = R"({
  "zarr_format": 2, "shape": [7, 5], "chunks": [3, 2], "dtype": "<u1",
  "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
  "fill_value": 0, "filters": null, "order": "C"})";


TEST(ZarrV2MetadataTest, ValidBaseDocumentParses) {
  EXPECT_TRUE(ParseZarrV2ArrayMetadata(kValidZarray, "").ok());
}

TEST(ZarrV2MetadataTest, ErrorsNameTheFieldAndValue) {
  const StatusCode kInvalid = StatusCode::kInvalidArgument;
  const JsonEdit kCases[] = {
      {"not an object",
       [](json& j) {
         j = json::array({1, 2});
       },
       kInvalid, "invalid .zarray: expected a JSON object, got [1,2]"},
      {"no shape", [](json& j) { j.erase("shape"); }, kInvalid,
       "invalid .zarray: missing required field 'shape'"},
      {"no dtype", [](json& j) { j.erase("dtype"); }, kInvalid, "missing required field 'dtype'"},
      {"no chunks", [](json& j) { j.erase("chunks"); }, kInvalid,
       "missing required field 'chunks'"},
      {"no compressor", [](json& j) { j.erase("compressor"); }, kInvalid,
       "missing required field 'compressor'"},
      {"no fill_value", [](json& j) { j.erase("fill_value"); }, kInvalid,
       "missing required field 'fill_value'"},
      {"no filters", [](json& j) { j.erase("filters"); }, kInvalid,
       "missing required field 'filters'"},
      {"no order", [](json& j) { j.erase("order"); }, kInvalid, "missing required field 'order'"},
      {"no zarr_format", [](json& j) { j.erase("zarr_format"); }, kInvalid,
       "missing required field 'zarr_format'"},
      {"zarr_format 3", [](json& j) { j["zarr_format"] = 3; }, kInvalid,
       "invalid .zarray: 'zarr_format' must be 2, got 3"},
      {"shape string", [](json& j) { j["shape"] = "abc"; }, kInvalid,
       R"(invalid .zarray: 'shape' must be a list of non-negative integers, got "abc")"},
      {"negative shape",
       [](json& j) {
         j["shape"] = {-1, 5};
       },
       kInvalid, "'shape' must be a list of non-negative integers, got [-1,5]"},
      {"fractional shape",
       [](json& j) {
         j["shape"] = {7.5, 5};
       },
       kInvalid, "'shape' must be a list of non-negative integers, got [7.5,5]"},
      {"zero chunk",
       [](json& j) {
         j["chunks"] = {0, 2};
       },
       kInvalid, "'chunks' must be a list of positive integers, got [0,2]"},
      {"chunk rank", [](json& j) { j["chunks"] = {3}; }, kInvalid,
       "'chunks' [3] and 'shape' [7,5] have different lengths"},
      {"too many elements",
       [](json& j) {
         j["shape"] = {1LL << 62, 1LL << 62};
       },
       kInvalid, "more elements than fit in int64"},
      {"object dtype", [](json& j) { j["dtype"] = "|O"; }, kInvalid,
       "unsupported Zarr v2 dtype '|O'"},
      {"datetime dtype", [](json& j) { j["dtype"] = "<M8[ns]"; }, kInvalid,
       "unsupported Zarr v2 dtype '<M8[ns]'"},
      {"structured dtype",
       [](json& j) { j["dtype"] = json::parse(R"([["r", "|u1"], ["g", "|u1"]])"); }, kInvalid,
       "structured data types are not supported"},
      {"numeric dtype", [](json& j) { j["dtype"] = 8; }, kInvalid,
       "'dtype' must be a typestr such as \"<f8\", got 8"},
      {"unknown compressor",
       [](json& j) {
         j["compressor"] = {{"id", "lzma"}, {"preset", 1}};
       },
       kInvalid, "codec 'lzma' is not supported (compressor in .zarray"},
      {"compressor string", [](json& j) { j["compressor"] = "blosc"; }, kInvalid,
       R"('compressor' must be null or an object with a string 'id', got "blosc")"},
      {"compressor without id", [](json& j) { j["compressor"].erase("id"); }, kInvalid,
       "'compressor' must be null or an object with a string 'id'"},
      {"blosc clevel", [](json& j) { j["compressor"]["clevel"] = 12; }, kInvalid,
       "'compressor.clevel' must be an integer from 0 to 9, got 12"},
      {"blosc shuffle", [](json& j) { j["compressor"]["shuffle"] = "bit"; }, kInvalid,
       "'compressor.shuffle' must be an integer from -1 to 2, got \"bit\""},
      {"blosc cname", [](json& j) { j["compressor"]["cname"] = "snappy"; }, kInvalid,
       "unsupported blosc cname 'snappy'"},
      {"blosc unknown key", [](json& j) { j["compressor"]["cnames"] = 4; }, kInvalid,
       "unknown key 'cnames' in compressor 'blosc'"},
      {"bz2 level", [](json& j) { j["compressor"] = {{"id", "bz2"}, {"level", 0}}; }, kInvalid,
       "'compressor.level' must be an integer from 1 to 9, got 0"},
      {"checksum location",
       [](json& j) { j["filters"] = json::parse(R"([{"id": "crc32", "location": "middle"}])"); },
       kInvalid, R"('filters[0].location' must be "start" or "end", got "middle")"},
      {"zstd level",
       [](json& j) {
         j["compressor"] = {{"id", "zstd"}, {"level", 23}};
       },
       kInvalid, "'compressor.level' must be an integer from -131072 to 22, got 23"},
      {"zstd checksum",
       [](json& j) {
         j["compressor"] = {{"id", "zstd"}, {"checksum", 1}};
       },
       kInvalid, "'compressor.checksum' must be true or false, got 1"},
      {"zlib level",
       [](json& j) {
         j["compressor"] = {{"id", "zlib"}, {"level", -3}};
       },
       kInvalid, "'compressor.level' must be an integer from 0 to 9, got -3"},
      {"gzip unknown key",
       [](json& j) {
         j["compressor"] = {{"id", "gzip"}, {"mtime", 0}};
       },
       kInvalid, "unknown key 'mtime' in compressor 'gzip'"},
      {"lz4 acceleration",
       [](json& j) {
         j["compressor"] = {{"id", "lz4"}, {"acceleration", "x"}};
       },
       kInvalid, "'compressor.acceleration' must be an integer"},
      {"delta filter",
       [](json& j) { j["filters"] = json::parse(R"([{"id": "delta", "dtype": "<u1"}])"); },
       kInvalid, "codec 'delta' is not supported (an array filter: filters[0]"},
      {"filter without id", [](json& j) { j["filters"] = json::parse(R"([{"elementsize": 4}])"); },
       kInvalid, "'filters[0]' must be an object with a string 'id'"},
      {"filters not a list", [](json& j) { j["filters"] = "delta"; }, kInvalid,
       R"('filters' must be null or a list, got "delta")"},
      {"order", [](json& j) { j["order"] = "K"; }, kInvalid,
       R"('order' must be "C" or "F", got "K")"},
      {"separator", [](json& j) { j["dimension_separator"] = "-"; }, kInvalid,
       R"('dimension_separator' must be "." or "/", got "-")"},
      {"uint8 fill range", [](json& j) { j["fill_value"] = 300; }, kInvalid,
       "'fill_value' 300 is out of range for uint8 [0, 255]"},
      {"uint8 negative fill", [](json& j) { j["fill_value"] = -1; }, kInvalid,
       "'fill_value' -1 is out of range for uint8 [0, 255]"},
      {"integer fill with fraction", [](json& j) { j["fill_value"] = 1.5; }, kInvalid,
       "'fill_value' must be an integer for data type uint8, got 1.5"},
      {"integer fill NaN", [](json& j) { j["fill_value"] = "NaN"; }, kInvalid,
       "'fill_value' must be an integer for data type uint8, got \"NaN\""},
      {"uint64 fill above 2^64",
       [](json& j) {
         j["dtype"] = "<u8";
         j["fill_value"] = 18446744073709551616.0;
       },
       kInvalid, "is out of range for uint64 [0, 18446744073709551615]"},
      {"int64 fill below -2^63",
       [](json& j) {
         j["dtype"] = "<i8";
         j["fill_value"] = -9223372036854777856.0;
       },
       kInvalid, "is out of range for int64"},
      {"int16 fill",
       [](json& j) {
         j["dtype"] = ">i2";
         j["fill_value"] = 32768;
       },
       kInvalid, "'fill_value' 32768 is out of range for int16 [-32768, 32767]"},
      {"float fill string",
       [](json& j) {
         j["dtype"] = "<f8";
         j["fill_value"] = "nan";
       },
       kInvalid, R"('fill_value' must be a number, "NaN", "Infinity" or "-Infinity", got "nan")"},
      {"float fill hex is v3 only",
       [](json& j) {
         j["dtype"] = "<f4";
         j["fill_value"] = "0x7fc00000";
       },
       kInvalid, "'fill_value' must be a number"},
      {"float32 fill range",
       [](json& j) {
         j["dtype"] = "<f4";
         j["fill_value"] = 1e39;
       },
       kInvalid, "'fill_value' 1e+39 is out of range for a 32-bit float"},
      {"bool fill",
       [](json& j) {
         j["dtype"] = "|b1";
         j["fill_value"] = "yes";
       },
       kInvalid, "'fill_value' must be true or false for data type bool, got \"yes\""},
      {"complex fill scalar",
       [](json& j) {
         j["dtype"] = "<c16";
         j["fill_value"] = 1.0;
       },
       kInvalid, "'fill_value' must be a list [real, imaginary] for data type complex128, got 1.0"},
      {"complex fill component",
       [](json& j) {
         j["dtype"] = "<c8";
         j["fill_value"] = {1.0, "i"};
       },
       kInvalid, "'fill_value[1]' must be a number"},
  };
  for (const JsonEdit& c : kCases) {
    SCOPED_TRACE(c.name);
    json doc = json::parse(kValidZarray);
    c.edit(doc);
    EXPECT_STATUS(ParseZarrV2ArrayMetadata(doc.dump(), "").status(), c.code, c.message);
  }
}

TEST(ZarrV2MetadataTest, MalformedJson) {
  EXPECT_STATUS(ParseZarrV2ArrayMetadata(R"({"zarr_format": 2, "shape": [1,})", "").status(),
                StatusCode::kInvalidArgument, "malformed JSON in .zarray at byte 32: ");
  EXPECT_STATUS(ParseZarrV2ArrayMetadata("", "").status(), StatusCode::kInvalidArgument,
                "malformed JSON in .zarray");
  EXPECT_STATUS(ParseZarrV2ArrayMetadata(kValidZarray, "{\"a\": ").status(),
                StatusCode::kInvalidArgument, "malformed JSON in .zattrs at byte");
  EXPECT_STATUS(ParseZarrV2ArrayMetadata(kValidZarray, "[1, 2]").status(),
                StatusCode::kInvalidArgument,
                "invalid .zattrs: the attributes must be a JSON object, got [1,2]");
  EXPECT_STATUS(ParseZarrV2GroupMetadata("{\"zarr_format\": 3}", "").status(),
                StatusCode::kInvalidArgument, "invalid .zgroup: 'zarr_format' must be 2, got 3");
  EXPECT_STATUS(ParseZarrV2GroupMetadata("{}", "").status(), StatusCode::kInvalidArgument,
                "invalid .zgroup: missing required field 'zarr_format'");
  EXPECT_STATUS(ParseZarrV2GroupMetadata("{\"zarr_format\": 2}", "\"x\"").status(),
                StatusCode::kInvalidArgument, "invalid .zattrs");
}

TEST(ZarrV2MetadataTest, UnknownKeysAreIgnoredAsTheSpecAsks) {
  json doc = json::parse(kValidZarray);
  doc["written_by"] = "some other tool";
  EXPECT_TRUE(ParseZarrV2ArrayMetadata(doc.dump(), "").ok());
}

}  // namespace
}  // namespace strata::testing_zarr
