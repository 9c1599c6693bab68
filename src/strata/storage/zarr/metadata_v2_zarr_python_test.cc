// Zarr v2 metadata as zarr-python 2 wrote it: compressors, order F,
// dimension separators, rank 0, groups and attributes, parsed and encoded
// back byte for byte; the v2 specification's example.
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

// Documents as zarr-python 2 wrote them (metadata_v2_dtypes_test.cc tells
// how they were made).

// zarr.create(store=MemoryStore(), shape=(100, 100), chunks=(10, 10), dtype='<i4',
//             compressor=COMPRESSOR); store['.zarray']
const ZarrPythonCompressor kZarrPythonCompressors[] = {
    {"Blosc()",
     {BloscSpec{}},
     R"json({
    "chunks": [
        10,
        10
    ],
    "compressor": {
        "blocksize": 0,
        "clevel": 5,
        "cname": "lz4",
        "id": "blosc",
        "shuffle": 1
    },
    "dtype": "<i4",
    "fill_value": 0,
    "filters": null,
    "order": "C",
    "shape": [
        100,
        100
    ],
    "zarr_format": 2
})json"},
    {"Blosc(cname='zstd', clevel=3, shuffle=BITSHUFFLE, blocksize=256)",
     {BloscSpec{.cname = "zstd", .clevel = 3, .shuffle = 2, .blocksize = 256}},
     R"json({
    "chunks": [
        10,
        10
    ],
    "compressor": {
        "blocksize": 256,
        "clevel": 3,
        "cname": "zstd",
        "id": "blosc",
        "shuffle": 2
    },
    "dtype": "<i4",
    "fill_value": 0,
    "filters": null,
    "order": "C",
    "shape": [
        100,
        100
    ],
    "zarr_format": 2
})json"},
    {"Blosc(cname='lz4hc', clevel=9, shuffle=NOSHUFFLE)",
     {BloscSpec{.cname = "lz4hc", .clevel = 9, .shuffle = 0}},
     R"json({
    "chunks": [
        10,
        10
    ],
    "compressor": {
        "blocksize": 0,
        "clevel": 9,
        "cname": "lz4hc",
        "id": "blosc",
        "shuffle": 0
    },
    "dtype": "<i4",
    "fill_value": 0,
    "filters": null,
    "order": "C",
    "shape": [
        100,
        100
    ],
    "zarr_format": 2
})json"},
    {"Blosc(cname='blosclz', clevel=1, shuffle=AUTOSHUFFLE)",
     {BloscSpec{.cname = "blosclz", .clevel = 1, .shuffle = -1}},
     R"json({
    "chunks": [
        10,
        10
    ],
    "compressor": {
        "blocksize": 0,
        "clevel": 1,
        "cname": "blosclz",
        "id": "blosc",
        "shuffle": -1
    },
    "dtype": "<i4",
    "fill_value": 0,
    "filters": null,
    "order": "C",
    "shape": [
        100,
        100
    ],
    "zarr_format": 2
})json"},
    {"Blosc(cname='zlib', clevel=0)",
     {BloscSpec{.cname = "zlib", .clevel = 0}},
     R"json({
    "chunks": [
        10,
        10
    ],
    "compressor": {
        "blocksize": 0,
        "clevel": 0,
        "cname": "zlib",
        "id": "blosc",
        "shuffle": 1
    },
    "dtype": "<i4",
    "fill_value": 0,
    "filters": null,
    "order": "C",
    "shape": [
        100,
        100
    ],
    "zarr_format": 2
})json"},
    {"Zstd(level=3)",
     {ZstdSpec{.level = 3}},
     R"json({
    "chunks": [
        10,
        10
    ],
    "compressor": {
        "id": "zstd",
        "level": 3
    },
    "dtype": "<i4",
    "fill_value": 0,
    "filters": null,
    "order": "C",
    "shape": [
        100,
        100
    ],
    "zarr_format": 2
})json"},
    {"Zlib(level=6)",
     {ZlibSpec{.level = 6}},
     R"json({
    "chunks": [
        10,
        10
    ],
    "compressor": {
        "id": "zlib",
        "level": 6
    },
    "dtype": "<i4",
    "fill_value": 0,
    "filters": null,
    "order": "C",
    "shape": [
        100,
        100
    ],
    "zarr_format": 2
})json"},
    {"GZip(level=9)",
     {GzipSpec{.level = 9}},
     R"json({
    "chunks": [
        10,
        10
    ],
    "compressor": {
        "id": "gzip",
        "level": 9
    },
    "dtype": "<i4",
    "fill_value": 0,
    "filters": null,
    "order": "C",
    "shape": [
        100,
        100
    ],
    "zarr_format": 2
})json"},
    {"LZ4(acceleration=2)",
     {Lz4Spec{.acceleration = 2}},
     R"json({
    "chunks": [
        10,
        10
    ],
    "compressor": {
        "acceleration": 2,
        "id": "lz4"
    },
    "dtype": "<i4",
    "fill_value": 0,
    "filters": null,
    "order": "C",
    "shape": [
        100,
        100
    ],
    "zarr_format": 2
})json"},
    {"None",
     {},
     R"json({
    "chunks": [
        10,
        10
    ],
    "compressor": null,
    "dtype": "<i4",
    "fill_value": 0,
    "filters": null,
    "order": "C",
    "shape": [
        100,
        100
    ],
    "zarr_format": 2
})json"},
};

// zarr.create(shape=(4, 5, 6), chunks=(2, 2, 3), dtype='<f8', order='F')
constexpr std::string_view kZarrPythonOrderF = R"json({
    "chunks": [
        2,
        2,
        3
    ],
    "compressor": {
        "blocksize": 0,
        "clevel": 5,
        "cname": "lz4",
        "id": "blosc",
        "shuffle": 1
    },
    "dtype": "<f8",
    "fill_value": 0.0,
    "filters": null,
    "order": "F",
    "shape": [
        4,
        5,
        6
    ],
    "zarr_format": 2
})json";
// zarr.create(shape=(4, 5), chunks=(2, 2), dtype='>f8', dimension_separator='/')
constexpr std::string_view kZarrPythonSlash = R"json({
    "chunks": [
        2,
        2
    ],
    "compressor": {
        "blocksize": 0,
        "clevel": 5,
        "cname": "lz4",
        "id": "blosc",
        "shuffle": 1
    },
    "dimension_separator": "/",
    "dtype": ">f8",
    "fill_value": 0.0,
    "filters": null,
    "order": "C",
    "shape": [
        4,
        5
    ],
    "zarr_format": 2
})json";
// zarr.create(shape=(4, 5), chunks=(2, 2), dtype='<f8', dimension_separator='.')
constexpr std::string_view kZarrPythonDot = R"json({
    "chunks": [
        2,
        2
    ],
    "compressor": {
        "blocksize": 0,
        "clevel": 5,
        "cname": "lz4",
        "id": "blosc",
        "shuffle": 1
    },
    "dimension_separator": ".",
    "dtype": "<f8",
    "fill_value": 0.0,
    "filters": null,
    "order": "C",
    "shape": [
        4,
        5
    ],
    "zarr_format": 2
})json";
// zarr.create(shape=(4, 5), chunks=(2, 2), dtype='|u1', order='F', dimension_separator='/',
// fill_value=7)
constexpr std::string_view kZarrPythonOrderFSlash = R"json({
    "chunks": [
        2,
        2
    ],
    "compressor": {
        "blocksize": 0,
        "clevel": 5,
        "cname": "lz4",
        "id": "blosc",
        "shuffle": 1
    },
    "dimension_separator": "/",
    "dtype": "|u1",
    "fill_value": 7,
    "filters": null,
    "order": "F",
    "shape": [
        4,
        5
    ],
    "zarr_format": 2
})json";
// zarr.create(shape=(), chunks=(), dtype='<f8', fill_value=-2.5 (zarr drops the compressor))
constexpr std::string_view kZarrPythonRank0 = R"json({
    "chunks": [],
    "compressor": null,
    "dtype": "<f8",
    "fill_value": -2.5,
    "filters": null,
    "order": "C",
    "shape": [],
    "zarr_format": 2
})json";
// g = zarr.group(store); g.attrs.update({'zeta': 1, 'alpha': [1.5, None, True],
//   'nan': float('nan'), 'inf': float('-inf'), 'unicode': 'h\u00e9llo \u2603', 'big': 1e16,
//   'fifteen': 1e15, 'nested': {'b': 2, 'a': {}}}); x = g.create_dataset('x', shape=(3,),
//   chunks=(3,), dtype='<i2'); x.attrs['units'] = 'm'
constexpr std::string_view kZarrPythonZgroup = R"json({
    "zarr_format": 2
})json";
constexpr std::string_view kZarrPythonGroupZattrs = R"json({
    "alpha": [
        1.5,
        null,
        true
    ],
    "big": 1e+16,
    "fifteen": 1000000000000000.0,
    "inf": -Infinity,
    "nan": NaN,
    "nested": {
        "a": {},
        "b": 2
    },
    "unicode": "h\u00e9llo \u2603",
    "zeta": 1
})json";
constexpr std::string_view kZarrPythonArrayZarray = R"json({
    "chunks": [
        3
    ],
    "compressor": {
        "blocksize": 0,
        "clevel": 5,
        "cname": "lz4",
        "id": "blosc",
        "shuffle": 1
    },
    "dtype": "<i2",
    "fill_value": 0,
    "filters": null,
    "order": "C",
    "shape": [
        3
    ],
    "zarr_format": 2
})json";
constexpr std::string_view kZarrPythonArrayZattrs = R"json({
    "units": "m"
})json";

// ---------------------------------------------------------------------------
// Zarr v2: documents from zarr-python.

TEST(ZarrV2MetadataTest, ZarrPythonCompressorsParseAndEncodeByteForByte) {
  for (const ZarrPythonCompressor& doc : kZarrPythonCompressors) {
    SCOPED_TRACE(doc.name);
    Result<ArrayMetadata> parsed = ParseZarrV2ArrayMetadata(doc.zarray, "");
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(parsed->encoding.bytes_codecs, doc.codecs);
    EXPECT_EQ(parsed->dtype(), DType(DTypeId::kInt32));
    EXPECT_EQ(parsed->shape, Shape({100, 100}));
    EXPECT_EQ(parsed->chunk_shape, Shape({10, 10}));
    EXPECT_EQ(parsed->fill_value, ZeroFillValue(DTypeId::kInt32));
    EXPECT_EQ(EncodedDocument(*parsed, kZarrayKey), doc.zarray);
  }
}

TEST(ZarrV2MetadataTest, ZarrPythonOrderF) {
  Result<ArrayMetadata> parsed = ParseZarrV2ArrayMetadata(kZarrPythonOrderF, "");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->encoding.transpose, (std::vector<int>{2, 1, 0}));
  EXPECT_EQ(parsed->shape, Shape({4, 5, 6}));
  EXPECT_EQ(parsed->chunk_shape, Shape({2, 2, 3}));
  EXPECT_EQ(parsed->chunk_key_encoding.separator, '.');
  EXPECT_EQ(EncodedDocument(*parsed, kZarrayKey), kZarrPythonOrderF);
}

TEST(ZarrV2MetadataTest, ZarrPythonDimensionSeparators) {
  Result<ArrayMetadata> slash = ParseZarrV2ArrayMetadata(kZarrPythonSlash, "");
  ASSERT_TRUE(slash.ok()) << slash.status().ToString();
  EXPECT_EQ(slash->chunk_key_encoding, (ChunkKeyEncoding{ChunkKeyEncoding::Kind::kV2, '/'}));
  EXPECT_EQ(slash->encoding.endian, Endian::kBig);
  EXPECT_EQ(slash->ChunkKey(std::vector<Index>{1, 2}), "1/2");
  EXPECT_EQ(EncodedDocument(*slash, kZarrayKey), kZarrPythonSlash);

  // zarr-python writes an explicit "." only when asked; Strata writes the
  // default the way zarr.create(...) does, by leaving the key out.
  Result<ArrayMetadata> dot = ParseZarrV2ArrayMetadata(kZarrPythonDot, "");
  ASSERT_TRUE(dot.ok()) << dot.status().ToString();
  EXPECT_EQ(dot->chunk_key_encoding, (ChunkKeyEncoding{ChunkKeyEncoding::Kind::kV2, '.'}));
  EXPECT_EQ(dot->ChunkKey(std::vector<Index>{1, 2}), "1.2");
  std::string expected(kZarrPythonDot);
  const std::string line = "    \"dimension_separator\": \".\",\n";
  ASSERT_NE(expected.find(line), std::string::npos);
  expected.erase(expected.find(line), line.size());
  EXPECT_EQ(EncodedDocument(*dot, kZarrayKey), expected);

  Result<ArrayMetadata> f_slash = ParseZarrV2ArrayMetadata(kZarrPythonOrderFSlash, "");
  ASSERT_TRUE(f_slash.ok()) << f_slash.status().ToString();
  EXPECT_EQ(f_slash->encoding.transpose, (std::vector<int>{1, 0}));
  EXPECT_EQ(f_slash->chunk_key_encoding.separator, '/');
  EXPECT_EQ(f_slash->fill_value, FillOf<uint8_t>(7));
  EXPECT_EQ(EncodedDocument(*f_slash, kZarrayKey), kZarrPythonOrderFSlash);
}

TEST(ZarrV2MetadataTest, ZarrPythonRankZero) {
  Result<ArrayMetadata> parsed = ParseZarrV2ArrayMetadata(kZarrPythonRank0, "");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->rank(), 0);
  EXPECT_TRUE(parsed->chunk_shape.empty());
  EXPECT_EQ(parsed->fill_value, FillOf(-2.5));
  EXPECT_EQ(parsed->ChunkKey({}), "0");
  EXPECT_EQ(EncodedDocument(*parsed, kZarrayKey), kZarrPythonRank0);
}

TEST(ZarrV2MetadataTest, ZarrPythonAttributesWithNaNAndUnicodeRoundTripByteForByte) {
  Result<ArrayMetadata> array =
      ParseZarrV2ArrayMetadata(kZarrPythonArrayZarray, kZarrPythonArrayZattrs);
  ASSERT_TRUE(array.ok()) << array.status().ToString();
  EXPECT_EQ(json::parse(array->attributes_json), json::parse(R"({"units": "m"})"));
  EXPECT_EQ(EncodedKeys(*array), (std::vector<std::string>{".zarray", ".zattrs"}));
  EXPECT_EQ(EncodedDocument(*array, kZarrayKey), kZarrPythonArrayZarray);
  EXPECT_EQ(EncodedDocument(*array, kZattrsKey), kZarrPythonArrayZattrs);

  // Python's json module writes NaN and -Infinity as bare literals.
  Result<GroupMetadata> group = ParseZarrV2GroupMetadata(kZarrPythonZgroup, kZarrPythonGroupZattrs);
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  EXPECT_EQ(group->zarr_format, ZarrFormat::kV2);
  EXPECT_NE(group->attributes_json.find("NaN"), std::string::npos);
  std::vector<std::pair<std::string, std::string>> encoded = group->Encode();
  ASSERT_EQ(encoded.size(), 2u);
  EXPECT_EQ(encoded[0].first, ".zgroup");
  EXPECT_EQ(encoded[0].second, kZarrPythonZgroup);
  EXPECT_EQ(encoded[1].first, ".zattrs");
  EXPECT_EQ(encoded[1].second, kZarrPythonGroupZattrs);

  // Attributes survive a trip through v3 (where they are embedded) and back.
  GroupMetadata v3 = *group;
  v3.zarr_format = ZarrFormat::kV3;
  Result<GroupMetadata> v3_parsed = ParseZarrV3GroupMetadata(EncodedDocument(v3, kZarrJsonKey));
  ASSERT_TRUE(v3_parsed.ok()) << v3_parsed.status().ToString();
  v3_parsed->zarr_format = ZarrFormat::kV2;
  EXPECT_EQ(EncodedDocument(*v3_parsed, kZattrsKey), kZarrPythonGroupZattrs);
}

TEST(ZarrV2MetadataTest, ZattrsOnlyWhenAttributesAreNotEmpty) {
  ArrayMetadata metadata = *ParseZarrV2ArrayMetadata(kZarrPythonArrayZarray, "");
  EXPECT_EQ(EncodedKeys(metadata), std::vector<std::string>{".zarray"});
  metadata.attributes_json = " { } ";
  EXPECT_EQ(EncodedKeys(metadata), std::vector<std::string>{".zarray"});
  GroupMetadata group;
  EXPECT_EQ(EncodedKeys(group), std::vector<std::string>{".zgroup"});
  group.attributes_json = R"({"b": 1, "a": [1, 2]})";
  EXPECT_EQ(EncodedDocument(group, kZattrsKey),
            "{\n    \"a\": [\n        1,\n        2\n    ],\n    \"b\": 1\n}");
}

// The example in the v2 spec (docs/v2/v2.0.rst, "Metadata") uses a delta
// filter, which Strata refuses by name.
TEST(ZarrV2MetadataTest, SpecExampleWithDeltaFilterIsRefused) {
  constexpr std::string_view kSpecExample = R"({
        "chunks": [
            1000,
            1000
        ],
        "compressor": {
            "id": "blosc",
            "cname": "lz4",
            "clevel": 5,
            "shuffle": 1
        },
        "dtype": "<f8",
        "fill_value": "NaN",
        "filters": [
            {"id": "delta", "dtype": "<f8", "astype": "<f4"}
        ],
        "order": "C",
        "shape": [
            10000,
            10000
        ],
        "zarr_format": 2
    })";
  EXPECT_STATUS(ParseZarrV2ArrayMetadata(kSpecExample, "").status(), StatusCode::kInvalidArgument,
                "codec 'delta' is not supported (an array filter: filters[0] in .zarray");
  // Without the filter it is a valid array; blocksize defaults to 0 as in numcodecs.
  json doc = json::parse(kSpecExample);
  doc["filters"] = nullptr;
  Result<ArrayMetadata> parsed = ParseZarrV2ArrayMetadata(doc.dump(), "");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->encoding.bytes_codecs, std::vector<BytesCodecSpec>{BloscSpec{}});
  EXPECT_EQ(parsed->fill_value, FillOf(uint64_t{0x7ff8000000000000}));
  // The v2 spec's example of zarr.create(..., dtype='i4', fill_value=42,
  // compressor=zarr.Zlib(level=1)) in its "Examples" section.
  constexpr std::string_view kSpecZlibExample = R"({
        "chunks": [
            10,
            10
        ],
        "compressor": {
            "id": "zlib",
            "level": 1
        },
        "dtype": "<i4",
        "fill_value": 42,
        "filters": null,
        "order": "C",
        "shape": [
            20,
            20
        ],
        "zarr_format": 2
    })";
  Result<ArrayMetadata> zlib = ParseZarrV2ArrayMetadata(kSpecZlibExample, "");
  ASSERT_TRUE(zlib.ok()) << zlib.status().ToString();
  EXPECT_EQ(zlib->encoding.bytes_codecs, std::vector<BytesCodecSpec>{ZlibSpec{.level = 1}});
  EXPECT_EQ(zlib->fill_value, FillOf<int32_t>(42));
}

}  // namespace
}  // namespace strata::testing_zarr
