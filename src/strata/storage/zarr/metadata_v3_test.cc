// Zarr v3 metadata: the specification's examples, round trips of every data
// type and codec, the layout Encode writes, fill value forms and extension
// fields.
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
// Zarr v3: examples from the specification.


TEST(ZarrV3MetadataTest, CoreSpecArrayExample) {
  Result<ArrayMetadata> parsed = ParseZarrV3ArrayMetadata(kCoreSpecArrayExample);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->zarr_format, ZarrFormat::kV3);
  EXPECT_EQ(parsed->shape, Shape({10000, 1000}));
  EXPECT_EQ(parsed->chunk_shape, Shape({1000, 100}));
  EXPECT_EQ(parsed->dtype(), DType(DTypeId::kFloat64));
  EXPECT_EQ(parsed->encoding.endian, Endian::kLittle);
  EXPECT_TRUE(parsed->encoding.transpose.empty());
  EXPECT_TRUE(parsed->encoding.bytes_codecs.empty());
  EXPECT_EQ(parsed->chunk_key_encoding, (ChunkKeyEncoding{ChunkKeyEncoding::Kind::kDefault, '/'}));
  EXPECT_EQ(parsed->fill_value, FillOf(uint64_t{0x7ff8000000000000}));
  ASSERT_TRUE(parsed->dimension_names.has_value());
  EXPECT_EQ(*parsed->dimension_names, (std::vector<std::optional<std::string>>{"rows", "columns"}));
  // Attributes keep the document's key order.
  EXPECT_EQ(parsed->attributes_json, R"({"foo":42,"bar":"apples","baz":[1,2,3,4]})");
  EXPECT_EQ(parsed->ChunkKey(std::vector<Index>{9, 3}), "c/9/3");

  // Encode writes the same document (modulo whitespace and key order).
  EXPECT_EQ(json::parse(EncodedDocument(*parsed, kZarrJsonKey)),
            json::parse(kCoreSpecArrayExample));
  Result<ArrayMetadata> back = RoundTrip(*parsed);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->encoding, parsed->encoding);
  EXPECT_EQ(back->attributes_json, parsed->attributes_json);
  EXPECT_EQ(back->dimension_names, parsed->dimension_names);
}

// The second array example of the core specification uses a made-up
// extension data type.
TEST(ZarrV3MetadataTest, CoreSpecExtensionDataTypeExampleIsRefused) {
  constexpr std::string_view kExample = R"({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [10000, 1000],
        "data_type": {
            "name": "datetime",
            "configuration": {
                "unit": "ns"
            }
        },
        "chunk_grid": {
            "name": "regular",
            "configuration": {
                "chunk_shape": [1000, 100]
            }
        },
        "chunk_key_encoding": {
            "name": "default",
            "configuration": {
                "separator": "/"
            }
        },
        "codecs": [{
            "name": "bytes",
            "configuration": {
                "endian": "big"
            }
        }],
        "fill_value": null
    })";  // The spec's text has a trailing comma after null, removed here.
  EXPECT_STATUS(ParseZarrV3ArrayMetadata(kExample).status(), StatusCode::kInvalidArgument,
                "unsupported data_type {\"name\":\"datetime\"");
}

// The group example of the core specification, section "Group metadata".
TEST(ZarrV3MetadataTest, CoreSpecGroupExample) {
  constexpr std::string_view kExample = R"({
        "zarr_format": 3,
        "node_type": "group",
        "attributes": {
            "spam": "ham",
            "eggs": 42
        }
    })";
  Result<GroupMetadata> group = ParseZarrV3GroupMetadata(kExample);
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  EXPECT_EQ(group->zarr_format, ZarrFormat::kV3);
  EXPECT_EQ(group->attributes_json, R"({"spam":"ham","eggs":42})");
  EXPECT_EQ(EncodedDocument(*group, kZarrJsonKey),
            "{\n  \"zarr_format\": 3,\n  \"node_type\": \"group\",\n  \"attributes\": {\n"
            "    \"spam\": \"ham\",\n    \"eggs\": 42\n  }\n}");
  EXPECT_STATUS(ParseZarrV3ArrayMetadata(kExample).status(), StatusCode::kFailedPrecondition,
                "zarr.json describes a group, not an array");
  EXPECT_STATUS(ParseZarrV3GroupMetadata(kCoreSpecArrayExample).status(),
                StatusCode::kFailedPrecondition, "zarr.json describes an array, not a group");
  // zarr-python 3 writes "consolidated_metadata": null into groups.
  EXPECT_TRUE(ParseZarrV3GroupMetadata(
                  R"({"zarr_format": 3, "node_type": "group", "consolidated_metadata": null})")
                  .ok());
  EXPECT_STATUS(
      ParseZarrV3GroupMetadata(R"({"zarr_format": 3, "node_type": "group", "foo": 1})").status(),
      StatusCode::kInvalidArgument, "unsupported field 'foo' in zarr.json");
}

// A complete array document around a "codecs" list: the codec specifications
// show only that member.
std::string ArrayWithCodecs(std::string_view data_type, std::string_view codecs) {
  return fmt::format(R"({{
    "zarr_format": 3, "node_type": "array", "shape": [64, 48], "data_type": "{}",
    "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [32, 16]}}}},
    "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0,
    "codecs": {}}})",
                     data_type, codecs);
}

TEST(ZarrV3MetadataTest, CodecSpecExamples) {
  struct Example {
    const char* source;
    const char* data_type;
    const char* codecs;
    std::vector<int> transpose;
    Endian endian;
    std::vector<BytesCodecSpec> bytes_codecs;
  };
  const Example kExamples[] = {
      // docs/v3/codecs/blosc/index.rst, "Configuration parameters" (with the
      // bytes codec the core spec requires in front of it).
      {"blosc",
       "int32",
       R"([{"name": "bytes", "configuration": {"endian": "little"}}, {
            "name": "blosc",
            "configuration": {
                "cname": "lz4",
                "clevel": 1,
                "shuffle": "shuffle",
                "typesize": 4,
                "blocksize": 0
            }
        }])",
       {},
       Endian::kLittle,
       // typesize 4 is the element size, which BloscSpec spells 0.
       {BloscSpec{.cname = "lz4", .clevel = 1, .shuffle = 1, .blocksize = 0, .typesize = 0}}},
      // docs/v3/codecs/gzip/index.rst.
      {"gzip",
       "float32",
       R"([{"name": "bytes", "configuration": {"endian": "big"}}, {
            "name": "gzip",
            "configuration": {
                "level": 1
            }
        }])",
       {},
       Endian::kBig,
       {GzipSpec{.level = 1}}},
      // docs/v3/codecs/zstd/v1.0.rst.
      {"zstd",
       "uint16",
       R"([{"name": "bytes", "configuration": {"endian": "little"}}, {
            "name": "zstd",
            "configuration": {
                "level": 1,
                "checksum": true
            }
        }])",
       {},
       Endian::kLittle,
       {ZstdSpec{.level = 1, .checksum = true}}},
      // docs/v3/codecs/crc32c/index.rst (no configuration), after zstd as in
      // the sharding spec's index codecs.
      {"crc32c",
       "int64",
       R"([{"name": "bytes", "configuration": {"endian": "little"}},
                              {"name": "zstd", "configuration": {"level": 3, "checksum": false}},
                              {"name": "crc32c"}])",
       {},
       Endian::kLittle,
       {ZstdSpec{.level = 3}, Crc32cSpec{}}},
      // docs/v3/codecs/transpose/index.rst: "order" is an explicit permutation.
      {"transpose",
       "int16",
       R"([{"name": "transpose", "configuration": {"order": [1, 0]}},
                                      {"name": "bytes", "configuration": {"endian": "little"}}])",
       {1, 0},
       Endian::kLittle,
       {}},
      // docs/v3/codecs/bytes/index.rst: "endian" is not needed for one-byte types.
      {"bytes without endian", "uint8", R"([{"name": "bytes"}])", {}, Endian::kLittle, {}},
      // Short-hand names (core spec, "Extension definition").
      {"short-hand names", "int8", R"(["bytes", "crc32c"])", {}, Endian::kLittle, {Crc32cSpec{}}},
  };
  for (const Example& e : kExamples) {
    SCOPED_TRACE(e.source);
    Result<ArrayMetadata> parsed = ParseZarrV3ArrayMetadata(ArrayWithCodecs(e.data_type, e.codecs));
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(parsed->dtype(), *ParseDTypeName(e.data_type));
    EXPECT_EQ(parsed->encoding.transpose, e.transpose);
    EXPECT_EQ(parsed->encoding.endian, e.endian);
    EXPECT_EQ(parsed->encoding.bytes_codecs, e.bytes_codecs);
    Result<ArrayMetadata> back = RoundTrip(*parsed);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->encoding, parsed->encoding);
  }
}

TEST(ZarrV3MetadataTest, ShardingSpecExampleParses) {
  // The sharding spec's configuration example (docs/v3/codecs/sharding-indexed/
  // index.rst), with its missing and trailing commas fixed.
  constexpr const char* kSharding = R"([{
          "name": "sharding_indexed",
          "configuration": {
            "chunk_shape": [32, 32],
            "codecs": [
              {"name": "bytes", "configuration": {"endian": "little"}},
              {"name": "gzip", "configuration": {"level": 1}}
            ],
            "index_codecs": [
              {"name": "bytes", "configuration": {"endian": "little"}},
              {"name": "crc32c"}
            ],
            "index_location": "end"
          }
        }])";
  // The example's inner chunks (32, 32) must divide the shard shape.
  const std::string doc = std::string(ArrayWithCodecs("float32", kSharding));
  std::string shards = doc;
  shards.replace(shards.find("[32, 16]"), 8, "[64, 64]");
  Result<ArrayMetadata> m = ParseZarrV3ArrayMetadata(shards);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(m->sharding.has_value());
  EXPECT_EQ(m->chunk_shape, (Shape{64, 64}));
  EXPECT_EQ(m->sharding->inner_chunk_shape, (Shape{32, 32}));
  EXPECT_EQ(m->sharding->inner_encoding.bytes_codecs, std::vector<BytesCodecSpec>{GzipSpec{1}});
  EXPECT_TRUE(m->sharding->index_crc32c);
  EXPECT_TRUE(m->sharding->index_at_end);
  EXPECT_EQ(m->read_chunk_shape(), (Shape{32, 32}));
  Result<ArrayMetadata> again = ParseZarrV3ArrayMetadata(m->Encode()[0].second);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->sharding, m->sharding);
  EXPECT_STATUS(ParseZarrV3ArrayMetadata(doc).status(), StatusCode::kInvalidArgument,
                "the inner chunk shape (32, 32) must divide the shard shape (32, 16)");
}

// ---------------------------------------------------------------------------
// Zarr v3: round trips.

TEST(ZarrV3MetadataTest, RoundTripEveryDTypeAndCodec) {
  const std::vector<std::vector<BytesCodecSpec>> kChains = {
      {},
      {BloscSpec{}},
      {BloscSpec{.cname = "zstd", .clevel = 9, .shuffle = 2, .blocksize = 4096, .typesize = 3}},
      {BloscSpec{.cname = "blosclz", .clevel = 0, .shuffle = 0}},
      {GzipSpec{.level = 6}},
      {ZstdSpec{.level = -7, .checksum = true}},
      {Crc32cSpec{}},
      {ZstdSpec{.level = 3}, Crc32cSpec{}},
      {GzipSpec{.level = 1}, BloscSpec{.cname = "lz4", .typesize = 5}, Crc32cSpec{}},
  };
  const ChunkKeyEncoding kKeyEncodings[] = {{ChunkKeyEncoding::Kind::kDefault, '/'},
                                            {ChunkKeyEncoding::Kind::kDefault, '.'},
                                            {ChunkKeyEncoding::Kind::kV2, '.'},
                                            {ChunkKeyEncoding::Kind::kV2, '/'}};
  const std::vector<int> kTransposes[] = {{}, {2, 0, 1}, {0, 1, 2}};
  // Every dtype with every chain and byte order; key encodings and transposes
  // cycle through their values rather than multiplying the cases.
  int variant = 0;
  for (int d = 0; d < kNumDTypes; ++d) {
    const DType dtype(static_cast<DTypeId>(d));
    for (const std::vector<BytesCodecSpec>& chain : kChains) {
      for (Endian endian : {Endian::kLittle, Endian::kBig}) {
        ++variant;
        ArrayMetadata m;
        m.zarr_format = ZarrFormat::kV3;
        m.shape = {100, 0, 3};
        m.chunk_shape = {7, 1, 3};
        m.encoding.dtype = dtype;
        m.encoding.endian = dtype.size() > 1 ? endian : Endian::kLittle;
        m.encoding.transpose = kTransposes[variant % 3];
        m.encoding.bytes_codecs = chain;
        m.fill_value = MakeFillValue(dtype, -1);
        m.chunk_key_encoding = kKeyEncodings[variant % 4];
        m.attributes_json = R"({"z": null, "a": {"nested": [true, 1.5]}})";
        m.dimension_names = std::vector<std::optional<std::string>>{"t", std::nullopt, "band"};
        ASSERT_TRUE(m.Validate().ok()) << m.Validate().ToString();
        EXPECT_EQ(EncodedKeys(m), std::vector<std::string>{"zarr.json"});
        Result<ArrayMetadata> back = RoundTrip(m);
        ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n"
                               << EncodedDocument(m, kZarrJsonKey);
        EXPECT_EQ(back->shape, m.shape);
        EXPECT_EQ(back->chunk_shape, m.chunk_shape);
        EXPECT_EQ(back->encoding, m.encoding) << EncodedDocument(m, kZarrJsonKey);
        EXPECT_EQ(back->fill_value, m.fill_value);
        EXPECT_EQ(back->chunk_key_encoding, m.chunk_key_encoding);
        EXPECT_EQ(back->attributes_json, R"({"z":null,"a":{"nested":[true,1.5]}})");
        EXPECT_EQ(back->dimension_names, m.dimension_names);
      }
    }
  }
}

TEST(ZarrV3MetadataTest, EncodeWritesTheSpecLayout) {
  ArrayMetadata m;
  m.zarr_format = ZarrFormat::kV3;
  m.shape = {4, 6};
  m.chunk_shape = {2, 3};
  m.encoding.dtype = DTypeId::kInt16;
  m.encoding.endian = Endian::kBig;
  m.encoding.transpose = {1, 0};
  m.encoding.bytes_codecs = {BloscSpec{.shuffle = -1}, Crc32cSpec{}};
  m.fill_value = MakeFillValue(DTypeId::kInt16, -7);
  m.chunk_key_encoding = {ChunkKeyEncoding::Kind::kDefault, '/'};
  m.dimension_names = std::vector<std::optional<std::string>>{"y", std::nullopt};
  EXPECT_EQ(EncodedDocument(m, kZarrJsonKey), R"({
  "zarr_format": 3,
  "node_type": "array",
  "shape": [
    4,
    6
  ],
  "data_type": "int16",
  "chunk_grid": {
    "name": "regular",
    "configuration": {
      "chunk_shape": [
        2,
        3
      ]
    }
  },
  "chunk_key_encoding": {
    "name": "default",
    "configuration": {
      "separator": "/"
    }
  },
  "fill_value": -7,
  "codecs": [
    {
      "name": "transpose",
      "configuration": {
        "order": [
          1,
          0
        ]
      }
    },
    {
      "name": "bytes",
      "configuration": {
        "endian": "big"
      }
    },
    {
      "name": "blosc",
      "configuration": {
        "cname": "lz4",
        "clevel": 5,
        "shuffle": "shuffle",
        "typesize": 2,
        "blocksize": 0
      }
    },
    {
      "name": "crc32c"
    }
  ],
  "attributes": {},
  "dimension_names": [
    "y",
    null
  ]
})");
}

TEST(ZarrV3MetadataTest, FillValueForms) {
  struct Case {
    const char* data_type;
    const char* fill_json;
    FillValue expected;
  };
  const Case kCases[] = {
      {"float32", R"("0x7fc00000")", FillOf(std::numeric_limits<float>::quiet_NaN())},
      {"float32", R"("0x3F800000")", FillOf(1.0f)},
      {"float64", R"("0x8000000000000000")", FillOf(-0.0)},
      {"float64", R"("Infinity")", FillOf(std::numeric_limits<double>::infinity())},
      {"float64", R"("-Infinity")", FillOf(-std::numeric_limits<double>::infinity())},
      {"float64", "7", FillOf(7.0)},
      {"float32", "0.1", FillOf(0.1f)},
      {"complex64", R"(["-Infinity", "NaN"])",
       ComplexFillOf(-std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::quiet_NaN())},
      {"complex128", "[1, 2]", ComplexFillOf(1.0, 2.0)},
      {"complex128", R"(["0x3ff0000000000000", -0.0])", ComplexFillOf(1.0, -0.0)},
      {"bool", "true", FillOf(uint8_t{1})},
      {"uint64", "18446744073709551615", FillOf(std::numeric_limits<uint64_t>::max())},
      {"int64", "-9223372036854775808", FillOf(std::numeric_limits<int64_t>::min())},
      {"int8", "-1", FillOf(int8_t{-1})},
  };
  for (const Case& c : kCases) {
    SCOPED_TRACE(fmt::format("{} {}", c.data_type, c.fill_json));
    json doc = json::parse(ArrayWithCodecs(c.data_type, R"([{"name": "bytes",
        "configuration": {"endian": "little"}}])"));
    doc["fill_value"] = json::parse(c.fill_json);
    Result<ArrayMetadata> parsed = ParseZarrV3ArrayMetadata(doc.dump());
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(Hex(parsed->fill_value.bytes), Hex(c.expected.bytes));
  }
}

TEST(ZarrV3MetadataTest, ExtensionFields) {
  json doc = json::parse(kCoreSpecArrayExample);
  doc["consolidated"] = {{"must_understand", false}, {"kind", "inline"}};
  EXPECT_TRUE(ParseZarrV3ArrayMetadata(doc.dump()).ok());
  doc["consolidated"]["must_understand"] = true;
  EXPECT_STATUS(ParseZarrV3ArrayMetadata(doc.dump()).status(), StatusCode::kInvalidArgument,
                "unsupported field 'consolidated' in zarr.json");
  doc["consolidated"].erase("must_understand");
  EXPECT_STATUS(ParseZarrV3ArrayMetadata(doc.dump()).status(), StatusCode::kInvalidArgument,
                "unsupported field 'consolidated' in zarr.json");
  doc["consolidated"] = false;
  EXPECT_STATUS(ParseZarrV3ArrayMetadata(doc.dump()).status(), StatusCode::kInvalidArgument,
                "unsupported field 'consolidated' in zarr.json");
}

}  // namespace
}  // namespace strata::testing_zarr
