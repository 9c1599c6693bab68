// Zarr v3 metadata: the errors of broken zarr.json documents.
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
// Zarr v3: errors.

TEST(ZarrV3MetadataTest, ErrorsNameTheFieldAndValue) {
  const StatusCode kInvalid = StatusCode::kInvalidArgument;
  auto codecs = [](const char* text) {
    return [text](json& j) { j["codecs"] = json::parse(text); };
  };
  const JsonEdit kCases[] = {
      {"zarr_format 2", [](json& j) { j["zarr_format"] = 2; }, kInvalid,
       "invalid zarr.json: 'zarr_format' must be 3, got 2"},
      {"no zarr_format", [](json& j) { j.erase("zarr_format"); }, kInvalid,
       "missing required field 'zarr_format'"},
      {"no node_type", [](json& j) { j.erase("node_type"); }, kInvalid,
       "missing required field 'node_type'"},
      {"node_type", [](json& j) { j["node_type"] = "dataset"; }, kInvalid,
       R"('node_type' must be "array" or "group", got "dataset")"},
      {"group", [](json& j) { j["node_type"] = "group"; }, StatusCode::kFailedPrecondition,
       "zarr.json describes a group, not an array"},
      {"no shape", [](json& j) { j.erase("shape"); }, kInvalid,
       "invalid zarr.json: missing required field 'shape'"},
      {"no data_type", [](json& j) { j.erase("data_type"); }, kInvalid,
       "missing required field 'data_type'"},
      {"no chunk_grid", [](json& j) { j.erase("chunk_grid"); }, kInvalid,
       "missing required field 'chunk_grid'"},
      {"no chunk_key_encoding", [](json& j) { j.erase("chunk_key_encoding"); }, kInvalid,
       "missing required field 'chunk_key_encoding'"},
      {"no fill_value", [](json& j) { j.erase("fill_value"); }, kInvalid,
       "missing required field 'fill_value'"},
      {"no codecs", [](json& j) { j.erase("codecs"); }, kInvalid,
       "missing required field 'codecs'"},
      {"negative shape",
       [](json& j) {
         j["shape"] = {-3, 5};
       },
       kInvalid, "'shape' must be a list of non-negative integers, got [-3,5]"},
      {"shape object",
       [](json& j) {
         j["shape"] = {{"x", 1}};
       },
       kInvalid, R"('shape' must be a list of non-negative integers, got {"x":1})"},
      {"unknown data type", [](json& j) { j["data_type"] = "bfloat16"; }, kInvalid,
       "unsupported data_type 'bfloat16'"},
      {"numpy spelling", [](json& j) { j["data_type"] = "U7"; }, kInvalid,
       "unsupported data_type 'U7'"},
      {"utf32 length", [](json& j) {
         j["data_type"] = json::parse(R"({"name": "fixed_length_utf32",
                                          "configuration": {"length_bytes": 6}})");
       }, kInvalid, "fixed_length_utf32 'length_bytes' 6 is not a multiple of 4"},
      {"extension data type", [](json& j) {
         j["data_type"] = json::parse(R"({"name": "datetime64", "configuration": {"unit": "s"}})");
       }, kInvalid, "\"name\":\"datetime64\"} in zarr.json"},
      {"irregular grid",
       [](json& j) {
         j["chunk_grid"] = {{"name", "rectilinear"}, {"configuration", json::object()}};
       },
       kInvalid, "unsupported chunk_grid 'rectilinear'"},
      {"no chunk_shape", [](json& j) { j["chunk_grid"]["configuration"].erase("chunk_shape"); },
       kInvalid, "missing required field 'chunk_grid.configuration.chunk_shape'"},
      {"zero chunk",
       [](json& j) {
         j["chunk_grid"]["configuration"]["chunk_shape"] = {0, 100};
       },
       kInvalid, "'chunk_grid.configuration.chunk_shape' must be a list of positive integers"},
      {"chunk rank", [](json& j) { j["chunk_grid"]["configuration"]["chunk_shape"] = {10}; },
       kInvalid, "'chunk_shape' [10] and 'shape' [10000,1000] have different lengths"},
      {"chunk key encoding", [](json& j) { j["chunk_key_encoding"] = "nested"; }, kInvalid,
       "unsupported chunk_key_encoding 'nested'"},
      {"separator", [](json& j) { j["chunk_key_encoding"]["configuration"]["separator"] = "_"; },
       kInvalid, R"('chunk_key_encoding.configuration.separator' must be "." or "/", got "_")"},
      {"null fill", [](json& j) { j["fill_value"] = nullptr; }, kInvalid,
       "'fill_value' must not be null for data type float64"},
      {"short hex fill", [](json& j) { j["fill_value"] = "0x7fc00000"; }, kInvalid,
       R"('fill_value' must be a number, "NaN", "Infinity" or "-Infinity" or a hex string)"},
      {"bad hex fill", [](json& j) { j["fill_value"] = "0x7ff800000000000g"; }, kInvalid,
       R"('fill_value' "0x7ff800000000000g" is not a valid hexadecimal float)"},
      {"int fill exponent",
       [](json& j) {
         j["data_type"] = "int32";
         j["fill_value"] = 1.5;
       },
       kInvalid, "'fill_value' must be an integer for data type int32, got 1.5"},
      {"bool fill number",
       [](json& j) {
         j["data_type"] = "bool";
         j["codecs"] = json::parse(R"(["bytes"])");
         j["fill_value"] = 2;
       },
       kInvalid, "'fill_value' must be true or false for data type bool, got 2"},
      {"codecs not a list", [](json& j) { j["codecs"] = "bytes"; }, kInvalid,
       R"('codecs' must be a list, got "bytes")"},
      {"empty codecs", codecs("[]"), kInvalid, "'codecs' must contain exactly one 'bytes' codec"},
      {"no bytes codec", codecs(R"([{"name": "gzip", "configuration": {"level": 1}}])"), kInvalid,
       "codec 'gzip' must come after the 'bytes' codec"},
      {"two bytes codecs", codecs(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                                      {"name": "bytes", "configuration": {"endian": "little"}}])"),
       kInvalid, "'codecs' must contain exactly one 'bytes' codec, found a second one"},
      {"transpose after bytes", codecs(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                  {"name": "transpose", "configuration": {"order": [1, 0]}}])"),
       kInvalid, "codec 'transpose' must come before the 'bytes' codec"},
      {"transpose not a permutation",
       codecs(R"([{"name": "transpose", "configuration": {"order": [0, 0]}},
                  {"name": "bytes", "configuration": {"endian": "little"}}])"),
       kInvalid, "'transpose.order' must be a permutation of the 2 axes [0, 2), got [0,0]"},
      {"transpose K", codecs(R"([{"name": "transpose", "configuration": {"order": "K"}},
                  {"name": "bytes", "configuration": {"endian": "little"}}])"),
       kInvalid, "'transpose.order' must be a permutation"},
      {"bytes without endian", codecs(R"([{"name": "bytes"}])"), kInvalid,
       "codec 'bytes' needs 'endian' for the multi-byte data type float64"},
      {"bytes endian", codecs(R"([{"name": "bytes", "configuration": {"endian": "native"}}])"),
       kInvalid, R"('bytes.endian' must be "little" or "big", got "native")"},
      {"unknown codec", codecs(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                                   {"name": "bz2", "configuration": {}}])"),
       kInvalid, "codec 'bz2' is not supported"},
      {"unknown numcodecs codec",
       codecs(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                  {"name": "numcodecs.lzma", "configuration": {}}])"),
       kInvalid, "codec 'numcodecs.lzma' is not supported (codecs[1]"},
      {"numcodecs id mismatch",
       codecs(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                  {"name": "numcodecs.zlib", "configuration": {"id": "gzip"}}])"),
       kInvalid, "codec 'numcodecs.zlib' has a configuration 'id' \"gzip\""},
      {"v2 codec name", codecs(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                                   {"name": "zlib", "configuration": {"level": 1}}])"),
       kInvalid, "codec 'zlib' is not supported"},
      {"sharding", codecs(R"([{"name": "sharding_indexed", "configuration": {}}])"), kInvalid,
       "missing required field 'codecs[0].configuration.chunk_shape'"},
      {"nested sharding", codecs(R"([{"name": "sharding_indexed", "configuration": {
          "chunk_shape": [16, 8], "codecs": [{"name": "sharding_indexed", "configuration": {
          "chunk_shape": [8, 8], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]}}])"),
       kInvalid, "unsupported nested 'sharding_indexed' in codecs[0].configuration.codecs"},
      {"codec after sharding", codecs(R"([{"name": "sharding_indexed", "configuration": {
          "chunk_shape": [16, 8], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}},
          {"name": "crc32c"}])"),
       kInvalid, "unsupported codec 'crc32c' after 'sharding_indexed'"},
      {"compressed index", codecs(R"([{"name": "sharding_indexed", "configuration": {
          "chunk_shape": [16, 8], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
          "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                           {"name": "gzip", "configuration": {"level": 1}}]}}])"),
       kInvalid, "unsupported 'sharding_indexed.index_codecs'"},
      {"index location", codecs(R"([{"name": "sharding_indexed", "configuration": {
          "chunk_shape": [16, 8], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
          "index_location": "middle"}}])"),
       kInvalid, R"('sharding_indexed.index_location' must be "start" or "end", got "middle")"},
      {"inner codecs", codecs(R"([{"name": "sharding_indexed", "configuration": {
          "chunk_shape": [16, 8], "codecs": [{"name": "gzip", "configuration": {"level": 1}}]}}])"),
       kInvalid, "codec 'gzip' must come after the 'bytes' codec"},
      {"codec without name", codecs(R"([{"configuration": {}}])"), kInvalid,
       "'codecs[0]' must be a name or an object with a string 'name'"},
      {"codec unknown member", codecs(R"([{"name": "bytes", "config": {"endian": "little"}}])"),
       kInvalid, "unknown key 'config' in 'codecs[0]'"},
      {"blosc numeric shuffle", codecs(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                  {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": 1,
                                                      "typesize": 8, "blocksize": 0}}])"),
       kInvalid, R"('blosc.shuffle' must be "noshuffle", "shuffle" or "bitshuffle", got 1)"},
      {"blosc without typesize",
       codecs(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                  {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                      "shuffle": "shuffle"}}])"),
       kInvalid, "codec 'blosc' needs 'typesize' unless shuffle is \"noshuffle\""},
      {"blosc without cname", codecs(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                  {"name": "blosc", "configuration": {"clevel": 5, "shuffle": "noshuffle"}}])"),
       kInvalid, "codec 'blosc' is missing its configuration 'cname'"},
      {"gzip level", codecs(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                                {"name": "gzip", "configuration": {"level": 10}}])"),
       kInvalid, "'gzip.level' must be an integer from 0 to 9, got 10"},
      {"zstd checksum", codecs(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                                   {"name": "zstd", "configuration": {"level": 1,
                                                                      "checksum": "yes"}}])"),
       kInvalid, R"('zstd.checksum' must be true or false, got "yes")"},
      {"crc32c configuration", codecs(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                  {"name": "crc32c", "configuration": {"polynomial": 1}}])"),
       kInvalid, "unknown key 'polynomial' in the configuration of codec 'crc32c'"},
      {"storage transformer",
       [](json& j) { j["storage_transformers"] = json::parse(R"([{"name": "caching"}])"); },
       kInvalid, "unsupported storage transformer 'caching'"},
      {"dimension names length", [](json& j) { j["dimension_names"] = {"x"}; }, kInvalid,
       R"('dimension_names' must be a list of 2 strings or nulls, got ["x"])"},
      {"dimension names type",
       [](json& j) {
         j["dimension_names"] = {"x", 1};
       },
       kInvalid, "'dimension_names' must be a list of 2 strings or nulls"},
      {"attributes", [](json& j) { j["attributes"] = "none"; }, kInvalid,
       R"('attributes' must be an object, got "none")"},
      {"unknown field", [](json& j) { j["chunk_memory_layout"] = "C"; }, kInvalid,
       "unsupported field 'chunk_memory_layout' in zarr.json"},
  };
  for (const JsonEdit& c : kCases) {
    SCOPED_TRACE(c.name);
    json doc = json::parse(kCoreSpecArrayExample);
    c.edit(doc);
    EXPECT_STATUS(ParseZarrV3ArrayMetadata(doc.dump()).status(), c.code, c.message);
  }
  // Absent, null and empty forms of the optional members are fine.
  json doc = json::parse(kCoreSpecArrayExample);
  doc["storage_transformers"] = json::array();
  doc["dimension_names"] = nullptr;
  doc.erase("attributes");
  Result<ArrayMetadata> parsed = ParseZarrV3ArrayMetadata(doc.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_FALSE(parsed->dimension_names.has_value());
  EXPECT_EQ(parsed->attributes_json, "{}");
}

TEST(ZarrV3MetadataTest, MalformedJson) {
  EXPECT_STATUS(ParseZarrV3ArrayMetadata(R"({"zarr_format": 3, "node_type": x})").status(),
                StatusCode::kInvalidArgument,
                "malformed JSON in zarr.json at byte 33: syntax error while parsing value");
  EXPECT_STATUS(ParseZarrV3ArrayMetadata("\"array\"").status(), StatusCode::kInvalidArgument,
                "invalid zarr.json: expected a JSON object, got \"array\"");
  EXPECT_STATUS(ParseZarrV3GroupMetadata("{").status(), StatusCode::kInvalidArgument,
                "malformed JSON in zarr.json at byte 2: syntax error while parsing object key");
  // Bare NaN literals are accepted, but a real error behind them is still reported.
  EXPECT_STATUS(ParseZarrV3GroupMetadata(R"({"zarr_format": 3, "node_type": "group",
                                   "attributes": {"a": NaN, "b": nope}})")
                    .status(),
                StatusCode::kInvalidArgument, "malformed JSON in zarr.json");
  Result<GroupMetadata> nan_attributes = ParseZarrV3GroupMetadata(
      R"({"zarr_format": 3, "node_type": "group", "attributes": {"a": NaN, "b": [-Infinity]}})");
  ASSERT_TRUE(nan_attributes.ok()) << nan_attributes.status().ToString();
  EXPECT_EQ(nan_attributes->attributes_json, R"({"a":NaN,"b":[-Infinity]})");
}

}  // namespace
}  // namespace strata::testing_zarr
