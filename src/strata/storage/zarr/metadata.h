// Zarr array and group metadata, v2 and v3, in one typed form.
//
// ArrayMetadata is what Strata needs to read and write an array whatever its
// format: shape, chunk shape, dtype, fill value, how chunks are encoded and how
// chunk keys are spelled, plus the user's attributes kept verbatim as JSON.
// Parse* functions refuse anything they do not support with an error naming
// the feature (a filter, a storage transformer, an irregular chunk grid, an
// unknown codec, a string dtype), never silently ignore it.
//
// Formats:
//   v2: `.zarray` (+ `.zattrs`), `.zgroup`. Chunk keys "0.1" or "0/1"
//       (dimension_separator). Order "C" or "F". Compressor: one of
//       blosc/zstd/zlib/gzip/lz4; filters must be null or empty.
//   v2: compressor and filters: blosc, zstd, zlib, gzip, bz2, lz4, the
//       numcodecs checksums (crc32, adler32, crc32c, fletcher32) and
//       shuffle; filters are applied before the compressor.
//   v3: `zarr.json` with node_type "array" or "group". Chunk keys "c/0/1"
//       (default encoding) or "0.1" (v2 encoding). Codecs: at most one
//       transpose, exactly one array -> bytes codec ("bytes", or
//       "sharding_indexed" whose inner codecs follow the same rules), then
//       blosc/gzip/zstd/crc32c and zarr-python 3's "numcodecs.*" adapters of
//       the v2 codecs above.
//   Data types: numeric, float16, and the fixed-length "S"/"U"/"V" types
//   (zarr-python 3's null_terminated_bytes, fixed_length_utf32, raw_bytes).
//
// Thread-safety: plain values.
#ifndef STRATA_STORAGE_ZARR_METADATA_H_
#define STRATA_STORAGE_ZARR_METADATA_H_

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/box.h"
#include "strata/core/dtype.h"
#include "strata/storage/codec/codec_spec.h"

namespace strata {

enum class ZarrFormat : int { kV2 = 2, kV3 = 3 };

struct ChunkKeyEncoding {
  enum class Kind { kDefault, kV2 };
  // v2 arrays always use kV2. v3 arrays use kDefault ("c/0/1") unless their
  // metadata says "v2".
  Kind kind = Kind::kV2;
  char separator = '.';  // '.' or '/'
  friend bool operator==(const ChunkKeyEncoding&, const ChunkKeyEncoding&) = default;
};

// One element's bytes in native (little-endian) order. `is_null` is Zarr v2's
// `"fill_value": null` (Strata then fills missing chunks with zeros, which is
// also what zarr-python returns for them).
struct FillValue {
  std::vector<std::byte> bytes;
  bool is_null = false;
  friend bool operator==(const FillValue&, const FillValue&) = default;
};

// A fill value of `dtype` equal to `value` (cast as numpy would: NaN for floats
// stays NaN, integers truncate). For tests and the API.
FillValue MakeFillValue(DType dtype, double value);
// The all-zero fill value of `dtype`.
FillValue ZeroFillValue(DType dtype);

// Zarr v3 sharding (the "sharding_indexed" codec, ZEP 2): every stored chunk
// is a *shard* (ArrayMetadata::chunk_shape) holding inner chunks of
// `inner_chunk_shape`, each encoded on its own with `inner_encoding`, and an
// index of (offset, nbytes) per inner chunk, 2^64-1 for both when the inner
// chunk is missing (it reads as the fill value). The index is little- or
// big-endian uint64, optionally followed by its CRC-32C, at the start or the
// end of the shard. Nested sharding is not supported.
struct ShardingSpec {
  Shape inner_chunk_shape;
  ChunkEncoding inner_encoding;  // inner_encoding.dtype is the array's dtype
  Endian index_endian = Endian::kLittle;
  bool index_crc32c = true;
  bool index_at_end = true;
  friend bool operator==(const ShardingSpec&, const ShardingSpec&) = default;
};

struct ArrayMetadata {
  ZarrFormat zarr_format = ZarrFormat::kV2;
  Shape shape;
  // The stored chunks' shape: the shard shape of a sharded array.
  Shape chunk_shape;
  // encoding.dtype is the array's dtype.
  ChunkEncoding encoding;
  FillValue fill_value;
  ChunkKeyEncoding chunk_key_encoding;
  // The attributes object (.zattrs / "attributes"), verbatim JSON text; "{}" when none.
  std::string attributes_json = "{}";
  // v3 only: one name (or null) per axis.
  std::optional<std::vector<std::optional<std::string>>> dimension_names;
  // v3 only: set for a sharded array. Then `encoding` holds only the dtype
  // (and the default endian): every codec is inside the sharding codec.
  std::optional<ShardingSpec> sharding;

  // The shape of the chunks a reader can fetch one by one: the inner chunk
  // shape of a sharded array, else chunk_shape.
  const Shape& read_chunk_shape() const {
    return sharding ? sharding->inner_chunk_shape : chunk_shape;
  }
  // The encoding of those chunks.
  const ChunkEncoding& read_chunk_encoding() const {
    return sharding ? sharding->inner_encoding : encoding;
  }

  DType dtype() const { return encoding.dtype; }
  int rank() const { return static_cast<int>(shape.size()); }

  // The store key of chunk `block`, relative to the array's own prefix:
  // "0.1", "0/1", "c/0/1", "c.0.1"; for a rank-0 array "0" (v2) or "c" (v3).
  std::string ChunkKey(std::span<const Index> block) const;

  // Parses a key produced by ChunkKey back into block coordinates; false when
  // `key` is not a chunk key of this array (e.g. ".zarray", a temp file).
  bool ParseChunkKey(std::string_view key, Shape& block) const;

  // The metadata documents to write, keyed by their store key relative to the
  // array prefix: {".zarray", ".zattrs"} for v2 (".zattrs" only when
  // attributes are not empty) or {"zarr.json"} for v3.
  std::vector<std::pair<std::string, std::string>> Encode() const;

  // Checks internal consistency (ranks, chunk sizes >= 1, v2 transposes are C
  // or F, fill value size) and limits (rank <= 32 as in numpy, the array's bytes fit
  // in int64); InvalidArgument names the problem.
  Status Validate() const;
};

// Names of the metadata keys, relative to a node's prefix.
inline constexpr std::string_view kZarrayKey = ".zarray";
inline constexpr std::string_view kZattrsKey = ".zattrs";
inline constexpr std::string_view kZgroupKey = ".zgroup";
inline constexpr std::string_view kZarrJsonKey = "zarr.json";

// Parses `.zarray` text (and `.zattrs` text, empty when absent).
// InvalidArgument names the field at fault.
Result<ArrayMetadata> ParseZarrV2ArrayMetadata(std::string_view zarray_json,
                                               std::string_view zattrs_json);

// Parses a v3 `zarr.json` whose node_type is "array". FailedPrecondition when it
// describes a group.
Result<ArrayMetadata> ParseZarrV3ArrayMetadata(std::string_view zarr_json);

struct GroupMetadata {
  ZarrFormat zarr_format = ZarrFormat::kV2;
  std::string attributes_json = "{}";
  std::vector<std::pair<std::string, std::string>> Encode() const;
};

Result<GroupMetadata> ParseZarrV2GroupMetadata(std::string_view zgroup_json,
                                               std::string_view zattrs_json);
Result<GroupMetadata> ParseZarrV3GroupMetadata(std::string_view zarr_json);

// Consolidated metadata: every document of a hierarchy in one place, so that
// opening a dataset reads one object instead of listing the store.
//   v2: `.zmetadata` at the root, {"metadata": {".zgroup": {...},
//       "a/.zarray": {...}, "a/.zattrs": {...}}, "zarr_consolidated_format": 1}
//       (zarr-python 2's consolidate_metadata).
//   v3: the root group's zarr.json holds "consolidated_metadata": {"kind":
//       "inline", "must_understand": false, "metadata": {"a": {zarr.json of
//       a}, "a/b": {...}}} (zarr-python 3's).
// Both are parsed into (key, document text) pairs, keys relative to the root
// ("a/.zarray" for v2, "a" for v3 whose documents are zarr.json texts).
inline constexpr std::string_view kZmetadataKey = ".zmetadata";
// nullopt when the v3 group document has no consolidated metadata.
Result<std::optional<std::vector<std::pair<std::string, std::string>>>> ParseConsolidatedMetadata(
    std::string_view text, ZarrFormat format);
// The `.zmetadata` text for v2 documents (keys as above).
std::string EncodeConsolidatedV2(const std::vector<std::pair<std::string, std::string>>& documents);
// The root group's zarr.json text with `members` (path, zarr.json text) inlined.
std::string EncodeConsolidatedV3(const GroupMetadata& root,
                                 const std::vector<std::pair<std::string, std::string>>& members);

// `attributes_json` with `key` set to the JSON text `value_json`, or removed
// when nullopt (keys keep their order; NaN literals survive).
// InvalidArgument for attributes or a value that are not valid JSON.
Result<std::string> EditAttributes(std::string_view attributes_json, std::string_view key,
                                   std::optional<std::string_view> value_json);

// A one-line summary of the codecs: "blosc(cname=lz4, clevel=5, shuffle=byte)",
// "transpose(1,0) -> bytes(little) -> zstd(level=3) -> crc32c", "none",
// "sharding_indexed(inner chunks [10, 10]: bytes(little) -> zstd(level=3);
// index at end, crc32c)".
std::string DescribeEncoding(const ArrayMetadata& metadata);

}  // namespace strata

#endif  // STRATA_STORAGE_ZARR_METADATA_H_
