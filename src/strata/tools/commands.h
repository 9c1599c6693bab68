// The verbs of the `strata` command, one function each, separated from
// argument parsing (main.cc) so that tests can call them directly.
#ifndef STRATA_TOOLS_COMMANDS_H_
#define STRATA_TOOLS_COMMANDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/box.h"
#include "strata/core/dtype.h"
#include "strata/plan/spec.h"
#include "strata/storage/codec/codec_spec.h"
#include "strata/storage/zarr/metadata.h"

namespace strata {

struct RandomOptions {
  std::string dst;
  Shape shape;
  Shape chunks;
  DType dtype = DTypeId::kFloat64;
  uint64_t seed = 0;
  std::vector<BytesCodecSpec> codecs;
  ZarrFormat zarr_format = ZarrFormat::kV2;
  // Zarr v3 sharding: `chunks` are the inner chunks, these the shards.
  std::optional<Shape> shards;
  int workers = 1;
  bool overwrite = false;
};
// Writes chunk-independent synthetic data (core/synthetic.h) to a new array.
Status RunRandom(const RandomOptions& options);

struct InfoOptions {
  std::string path;
  bool json = false;
};
// Prints a summary of the array or group at `path` to stdout.
Status RunInfo(const InfoOptions& options);

struct CopyOptions {
  std::string src;
  std::string dst;
  std::optional<std::vector<BytesCodecSpec>> codecs;  // nullopt: keep the source's
  std::optional<ZarrFormat> zarr_format;              // nullopt: keep the source's
  // Write a sharded v3 array: shards of this shape, inner chunks `chunks`
  // (default: the source's chunks). Runs as a rechunk.
  std::optional<Shape> shards;
  std::optional<Shape> chunks;
  int workers = 1;
  bool overwrite = false;
};
// Re-encodes an array chunk by chunk (same shape and chunks).
Status RunCopy(const CopyOptions& options);

struct VerifyOptions {
  std::string a;
  std::string b;
  int workers = 1;
  int max_report = 10;
};
// Compares two arrays element by element (NaN equals NaN) and prints a summary.
// Returns whether they are equal; an error only when they cannot be compared.
Result<bool> RunVerify(const VerifyOptions& options);

struct RechunkOptions {
  std::string src;  // empty with plan_only: a source described by shape/source_chunks/dtype
  std::string dst;
  Shape chunks;
  // Target chunks by dimension name ("time=-1,lat=10"): for a group (every
  // array, by its dimension names; unnamed axes keep their chunks) or one
  // array. Set instead of `chunks`.
  std::vector<std::pair<std::string, Index>> named_chunks;
  // The command line's settings, parsed once (main.cc): allowed/reserved/
  // total memory, work_dir, executor, workers, tier, the object-tier URL,
  // straggler backups and hung-worker detection.
  Spec spec;
  std::optional<std::vector<BytesCodecSpec>> codecs;  // nullopt: keep the source's
  std::optional<ZarrFormat> zarr_format;              // nullopt: keep the source's
  // Zarr v3 sharding of DST: `chunks` are the inner chunks, these the shards.
  std::optional<Shape> shards;
  bool overwrite = false;
  std::string history;  // JSON-lines history file, if any
  bool quiet = false;
  // `strata plan`: print the plan only (as JSON with `json`).
  bool plan_only = false;
  bool json = false;
  Shape shape, source_chunks;
  DType dtype = DTypeId::kFloat64;
};
// Rechunks SRC into a new array DST, printing the plan (tiers and why) first.
Status RunRechunk(const RechunkOptions& options);

// The fill value, attributes and dimension names of `source` as an array of
// `format` should carry them: attributes verbatim; v3 dimension_names kept in v3 and
// written as the `_ARRAY_DIMENSIONS` attribute (xarray's convention) in v2;
// a v2 `_ARRAY_DIMENSIONS` list becomes v3 dimension_names.
struct CarriedAttributes {
  // The source's fill value (a v2 null one becomes zero in v3, which has none).
  FillValue fill_value;
  std::string attributes_json = "{}";
  std::optional<std::vector<std::optional<std::string>>> dimension_names;
};
CarriedAttributes CarryAttributes(const ArrayMetadata& source, ZarrFormat format);

struct WriteRegionOptions {
  std::string src;               // the values (an array of the region's shape)
  std::string dst;               // an existing array
  std::optional<Shape> at;       // the region's origin in DST
  std::optional<int> append_dim; // or: append along this axis
  // By dimension name (datasets): --at init_time=4 / --append-dim init_time.
  std::vector<std::pair<std::string, Index>> at_named;
  std::optional<std::string> append_name;
  std::string allowed_mem = "2GB";
  std::string executor = "threads";
  int workers = 1;
  bool quiet = false;
};
// Backfill or append: writes SRC into a region of the existing array DST (or
// appends it along an axis), read-modify-writing partly covered chunks under
// a lock per chunk. DST's metadata, codecs and chunks stay.
// Groups (datasets), names given to --at/--append-dim, and arrays whose CF
// encodings (scale_factor, add_offset, _FillValue, time units) differ run as
// a dataset job instead: values converted from SRC's encoding into DST's,
// staged and published all or nothing (tools/dataset_write.h).
Status RunWriteRegion(const WriteRegionOptions& options);

// The default codec of new arrays: zarr-python's, blosc lz4 clevel 5 with byte shuffle.
std::vector<BytesCodecSpec> DefaultCodecs();

}  // namespace strata

#endif  // STRATA_TOOLS_COMMANDS_H_
