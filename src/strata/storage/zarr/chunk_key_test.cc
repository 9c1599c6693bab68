// Chunk keys of every encoding, and keys that are not chunks.
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
// Chunk keys.

ArrayMetadata WithKeys(int rank, ChunkKeyEncoding::Kind kind, char separator) {
  ArrayMetadata m;
  m.zarr_format = kind == ChunkKeyEncoding::Kind::kV2 ? ZarrFormat::kV2 : ZarrFormat::kV3;
  m.shape = Shape(rank, 100);
  m.chunk_shape = Shape(rank, 10);
  m.chunk_key_encoding = {kind, separator};
  return m;
}

TEST(ChunkKeyTest, EachEncoding) {
  using Kind = ChunkKeyEncoding::Kind;
  struct Case {
    Kind kind;
    char separator;
    Shape block;
    const char* key;
  };
  const Case kCases[] = {
      {Kind::kV2, '.', {0, 1}, "0.1"},
      {Kind::kV2, '/', {0, 1}, "0/1"},
      {Kind::kV2, '.', {12, 0, 345}, "12.0.345"},
      {Kind::kV2, '.', {7}, "7"},
      {Kind::kV2, '/', {7}, "7"},
      {Kind::kV2, '.', {}, "0"},
      {Kind::kV2, '/', {}, "0"},
      {Kind::kDefault, '/', {0, 1}, "c/0/1"},
      {Kind::kDefault, '.', {0, 1}, "c.0.1"},
      {Kind::kDefault, '/', {1, 23, 45}, "c/1/23/45"},
      {Kind::kDefault, '/', {5}, "c/5"},
      {Kind::kDefault, '/', {}, "c"},
      {Kind::kDefault, '.', {}, "c"},
      {Kind::kV2, '.', {std::numeric_limits<Index>::max(), 0}, "9223372036854775807.0"},
  };
  for (const Case& c : kCases) {
    ArrayMetadata m = WithKeys(static_cast<int>(c.block.size()), c.kind, c.separator);
    EXPECT_EQ(m.ChunkKey(c.block), c.key);
    Shape parsed = {99};
    EXPECT_TRUE(m.ParseChunkKey(c.key, parsed)) << c.key;
    EXPECT_EQ(parsed, c.block) << c.key;
  }
}

TEST(ChunkKeyTest, RejectsKeysThatAreNotChunks) {
  using Kind = ChunkKeyEncoding::Kind;
  struct Case {
    int rank;
    Kind kind;
    char separator;
    std::vector<const char*> keys;
  };
  const Case kCases[] = {
      {2,
       Kind::kV2,
       '.',
       {".zarray",
        ".zattrs",
        "zarr.json",
        ".0.0.strata-tmp-123",
        "0.0.strata-tmp-123",
        "0",
        "0.1.2",
        "0.",
        ".0",
        "0..1",
        "-1.0",
        "+1.0",
        "01.0",
        "0/1",
        "c/0/1",
        "a.b",
        "",
        " 0.1",
        "0.1 ",
        "99999999999999999999.0",
        "0x1.0"}},
      {2, Kind::kV2, '/', {"0.1", "0/1/", "/0/1", "0//1", "c/0/1"}},
      {1, Kind::kV2, '.', {"0.0", "-0", "", "00"}},
      {0, Kind::kV2, '.', {"", "c", "0.0", "00", "1"}},
      {2,
       Kind::kDefault,
       '/',
       {"0/1", "c", "c/0", "c/0/1/2", "c.0.1", "c/0/", "c//1", "c/-1/0", "d/0/1", "zarr.json",
        "c/0/1.strata-tmp-7", "C/0/1", "c/01/1"}},
      {2, Kind::kDefault, '.', {"c/0/1", "c.0", "c0.1", "c.0.1."}},
      {0, Kind::kDefault, '/', {"", "0", "c/", "c/0", "cc"}},
  };
  for (const Case& c : kCases) {
    ArrayMetadata m = WithKeys(c.rank, c.kind, c.separator);
    for (const char* key : c.keys) {
      Shape block = {42};
      EXPECT_FALSE(m.ParseChunkKey(key, block)) << "rank " << c.rank << " key '" << key << "'";
      EXPECT_EQ(block, Shape({42})) << "left untouched on failure: '" << key << "'";
    }
  }
}

}  // namespace
}  // namespace strata::testing_zarr
