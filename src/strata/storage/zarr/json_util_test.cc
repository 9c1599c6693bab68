#include "strata/storage/zarr/json_util.h"

#include <gtest/gtest.h>

#include <string>

#include "strata/storage/zarr/metadata.h"

namespace strata::internal_zarr {
namespace {

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonLimitsTest, DepthUpToTheLimitIsRead) {
  EXPECT_TRUE(CheckJsonLimits(Nested(kMaxJsonDepth), "x").ok());
  Result<nlohmann::ordered_json> j = ParseLimitedJson(Nested(kMaxJsonDepth), "x");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
}

TEST(JsonLimitsTest, DeeperIsRefusedWithoutRecursion) {
  // 50,000 levels overflowed nlohmann's recursion before: now a linear scan.
  for (int depth : {kMaxJsonDepth + 1, 10'000, 1'000'000}) {
    Status s = CheckJsonLimits(Nested(depth), ".zarray");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(".zarray nests JSON deeper than 128 levels"), std::string_view::npos)
        << s.message();
  }
  std::string objects;
  for (int i = 0; i < 200; ++i) objects += "{\"a\":";
  objects += "1" + std::string(200, '}');
  EXPECT_EQ(CheckJsonLimits(objects, "zarr.json").code(), StatusCode::kInvalidArgument);
}

TEST(JsonLimitsTest, BracketsInStringsDoNotCount) {
  std::string text =
      "{\"a\": \"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
  EXPECT_TRUE(CheckJsonLimits(text, "x").ok());
  EXPECT_TRUE(ParseLimitedJson(text, "x").ok());
}

TEST(JsonLimitsTest, SizeIsCapped) {
  std::string big(kMaxJsonBytes + 1, ' ');
  Status s = CheckJsonLimits(big, ".zattrs");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("more than the 64 MiB"), std::string_view::npos) << s.message();
}

TEST(JsonLimitsTest, MalformedIsAnErrorNotAThrow) {
  Result<nlohmann::ordered_json> j = ParseLimitedJson("{\"a\": ", "marker");
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(j.status().message().find("malformed JSON in marker"), std::string_view::npos);
}

TEST(JsonLimitsTest, MetadataParsersApplyTheLimits) {
  const std::string zarray =
      R"({"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f8", "compressor": null,
          "fill_value": 0, "filters": null, "order": "C", "x": )" +
      Nested(50'000) + "}";
  Result<ArrayMetadata> m = ParseZarrV2ArrayMetadata(zarray, "");
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("deeper than"), std::string_view::npos);
  const std::string ok =
      R"({"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f8", "compressor": null,
          "fill_value": 0, "filters": null, "order": "C"})";
  Result<ArrayMetadata> attrs = ParseZarrV2ArrayMetadata(ok, "{\"a\": " + Nested(10'000) + "}");
  EXPECT_NE(attrs.status().message().find(".zattrs nests JSON deeper"), std::string_view::npos)
      << attrs.status().ToString();
  Result<GroupMetadata> g = ParseZarrV3GroupMetadata(
      R"({"zarr_format": 3, "node_type": "group", "attributes": {"a": )" + Nested(300) + "}}");
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
}

TEST(JsonLimitsTest, WrongTypesAreErrors) {
  for (const char* node_type : {"null", "1", "[]", "{}", "true"}) {
    const std::string doc = std::string(R"({"zarr_format": 3, "node_type": )") + node_type +
                            R"(, "shape": [4], "data_type": "float64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]})";
    Result<ArrayMetadata> m = ParseZarrV3ArrayMetadata(doc);
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << node_type;
    EXPECT_NE(m.status().message().find("node_type"), std::string_view::npos)
        << m.status().ToString();
    EXPECT_FALSE(ParseZarrV3GroupMetadata(doc).ok());
  }
}

TEST(JsonLimitsTest, RankAndBytesLimits) {
  auto v2 = [](const std::string& shape, const std::string& chunks, const std::string& dtype) {
    return ParseZarrV2ArrayMetadata(R"({"zarr_format": 2, "shape": )" + shape + R"(, "chunks": )" +
                                        chunks + R"(, "dtype": ")" + dtype +
                                        R"(", "compressor": null, "fill_value": 0,
                                        "filters": null, "order": "C"})",
                                    "");
  };
  Result<ArrayMetadata> big = v2("[2147483648, 2147483648]", "[1, 1]", "<f8");
  EXPECT_NE(big.status().message().find("more bytes than fit in int64"), std::string_view::npos)
      << big.status().ToString();
  EXPECT_TRUE(v2("[2147483648, 2147483648]", "[1, 1]", "|u1").ok());
  std::string ones33 = "[1", ones32 = "[1";
  for (int i = 1; i < 33; ++i) ones33 += ",1";
  for (int i = 1; i < 32; ++i) ones32 += ",1";
  ones33 += "]";
  ones32 += "]";
  EXPECT_TRUE(v2(ones32, ones32, "<f8").ok());
  Result<ArrayMetadata> rank = v2(ones33, ones33, "<f8");
  EXPECT_NE(rank.status().message().find("rank 33"), std::string_view::npos)
      << rank.status().ToString();
}

}  // namespace
}  // namespace strata::internal_zarr
