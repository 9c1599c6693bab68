// ArrayMetadata::Validate and DescribeEncoding.
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
// Validate.

ArrayMetadata ValidV2() {
  ArrayMetadata m;
  m.shape = {10, 20};
  m.chunk_shape = {5, 5};
  m.encoding.dtype = DTypeId::kFloat32;
  m.fill_value = ZeroFillValue(DTypeId::kFloat32);
  return m;
}

ArrayMetadata ValidV3() {
  ArrayMetadata m = ValidV2();
  m.zarr_format = ZarrFormat::kV3;
  m.chunk_key_encoding = {ChunkKeyEncoding::Kind::kDefault, '/'};
  return m;
}

TEST(ValidateTest, AcceptsConsistentMetadata) {
  EXPECT_TRUE(ValidV2().Validate().ok());
  EXPECT_TRUE(ValidV3().Validate().ok());
  ArrayMetadata f = ValidV2();
  f.encoding.transpose = {1, 0};
  EXPECT_TRUE(f.Validate().ok());
  ArrayMetadata null_fill = ValidV2();
  null_fill.fill_value = FillValue{.bytes = {}, .is_null = true};
  EXPECT_TRUE(null_fill.Validate().ok());
}

TEST(ValidateTest, RefusesInconsistentMetadata) {
  const StatusCode kInvalid = StatusCode::kInvalidArgument;
  struct Case {
    const char* name;
    std::function<void(ArrayMetadata&)> edit;
    const char* message;
  };
  const Case kCases[] = {
      {"rank", [](ArrayMetadata& m) { m.chunk_shape = {5}; },
       "chunk shape (5,) has rank 1 but the array shape (10, 20) has rank 2"},
      {"zero chunk",
       [](ArrayMetadata& m) {
         m.chunk_shape = {5, 0};
       },
       "chunk shape (5, 0) has an extent below 1"},
      {"negative shape",
       [](ArrayMetadata& m) {
         m.shape = {-1, 20};
       },
       "has a negative extent"},
      {"overflow",
       [](ArrayMetadata& m) {
         m.shape = {1LL << 40, 1LL << 40};
       },
       "more elements than fit in int64"},
      {"chunk bytes",
       [](ArrayMetadata& m) {
         m.chunk_shape = {1LL << 31, 1LL << 31};
       },
       "has more bytes than fit in int64"},
      {"fill size", [](ArrayMetadata& m) { m.fill_value = ZeroFillValue(DTypeId::kFloat64); },
       "fill value has 8 bytes but float32 elements have 4"},
      {"not a permutation",
       [](ArrayMetadata& m) {
         m.encoding.transpose = {0, 0};
       },
       "transpose (0,0) is not a permutation of the 2 axes"},
      {"permutation rank", [](ArrayMetadata& m) { m.encoding.transpose = {0}; },
       "transpose (0) is not a permutation of the 2 axes"},
      {"v2 identity transpose",
       [](ArrayMetadata& m) {
         m.encoding.transpose = {0, 1};
       },
       "Zarr v2 stores chunks in C or F order only, not transpose (0,1)"},
      {"v2 default keys",
       [](ArrayMetadata& m) { m.chunk_key_encoding.kind = ChunkKeyEncoding::Kind::kDefault; },
       "Zarr v2 arrays use the v2 chunk key encoding"},
      {"separator", [](ArrayMetadata& m) { m.chunk_key_encoding.separator = '_'; },
       "chunk key separator '_' must be '.' or '/'"},
      {"v2 blosc typesize",
       [](ArrayMetadata& m) { m.encoding.bytes_codecs = {BloscSpec{.typesize = 8}}; },
       "Zarr v2 blosc shuffles by the element size (4), not typesize 8"},
      {"dimension names",
       [](ArrayMetadata& m) { m.dimension_names = std::vector<std::optional<std::string>>{"x"}; },
       "1 dimension names for an array of rank 2"},
      {"attributes", [](ArrayMetadata& m) { m.attributes_json = "[]"; },
       "the attributes must be a JSON object, got []"},
      {"attributes syntax", [](ArrayMetadata& m) { m.attributes_json = "{"; },
       "malformed JSON in attributes"},
  };
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    ArrayMetadata m = ValidV2();
    c.edit(m);
    EXPECT_STATUS(m.Validate(), kInvalid, c.message);
  }
  ArrayMetadata v3 = ValidV3();
  // zlib and lz4 have v3 forms now: zarr-python 3's numcodecs.zlib/lz4.
  v3.encoding.bytes_codecs = {ZlibSpec{}};
  EXPECT_TRUE(v3.Validate().ok());
  v3.encoding.bytes_codecs = {Lz4Spec{}};
  EXPECT_TRUE(v3.Validate().ok());
  // Several codecs in v2 are filters and a compressor.
  ArrayMetadata v2 = ValidV2();
  v2.encoding.bytes_codecs = {ZstdSpec{}, Crc32cSpec{}};
  EXPECT_TRUE(v2.Validate().ok());
  v3.encoding.bytes_codecs = {};
  v3.encoding.transpose = {0, 1};  // any permutation is fine in v3
  EXPECT_TRUE(v3.Validate().ok());
}

// ---------------------------------------------------------------------------
// DescribeEncoding.

TEST(DescribeEncodingTest, SummarisesTheChain) {
  ArrayMetadata v2 = ValidV2();
  EXPECT_EQ(DescribeEncoding(v2), "none");
  v2.encoding.bytes_codecs = {BloscSpec{}};
  EXPECT_EQ(DescribeEncoding(v2), DescribeCodec(BloscSpec{}));
  v2.encoding.transpose = {1, 0};
  v2.encoding.endian = Endian::kBig;
  EXPECT_EQ(DescribeEncoding(v2), "transpose(1,0) -> bytes(big) -> " + DescribeCodec(BloscSpec{}));

  ArrayMetadata v3 = ValidV3();
  EXPECT_EQ(DescribeEncoding(v3), "bytes(little)");
  v3.encoding.transpose = {1, 0};
  v3.encoding.bytes_codecs = {ZstdSpec{.level = 3}, Crc32cSpec{}};
  EXPECT_EQ(DescribeEncoding(v3), "transpose(1,0) -> bytes(little) -> " +
                                      DescribeCodec(ZstdSpec{.level = 3}) + " -> " +
                                      DescribeCodec(Crc32cSpec{}));
}

}  // namespace
}  // namespace strata::testing_zarr
