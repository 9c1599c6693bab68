// Writing Zarr: to_zarr, a lazy store of an array into a Zarr v2 or v3 array
// (new, or an existing one backfilled or appended to, as xarray's to_zarr
// does). Reading Zarr is from_zarr (api/creation.h).
//
//   Array stored = to_zarr(mean(t2m, {0}), "s3://bucket/climatology.zarr",
//                          {.zarr_format = ZarrFormat::kV3});
//   Result<NDArray> done = compute(stored);   // writes; returns an empty NDArray
//
// to_zarr returns a handle; nothing is written until compute() of it
// (api/compute.h) runs the store, one task per chunk (per shard when
// sharded). The Zarr array is created only when the compute starts, so a
// plan that is refused writes nothing (storage/zarr/zarr_target.h). A handle
// is refused when the graph reads the array it would write.
//
// Thread-safety: pure functions of immutable Array values; concurrent writes
// into an existing array go through the storage layer's lock per chunk.
#ifndef STRATA_API_IO_H_
#define STRATA_API_IO_H_

#include <optional>
#include <string>
#include <vector>

#include "strata/api/array.h"
#include "strata/storage/codec/codec_spec.h"
#include "strata/storage/zarr/metadata.h"

namespace strata {

struct ToZarrOptions {
  std::vector<BytesCodecSpec> codecs;  // empty: blosc lz4 (zarr-python's default)
  bool no_compression = false;         // store raw bytes
  ZarrFormat zarr_format = ZarrFormat::kV2;
  bool overwrite = false;
  std::string attributes_json = "{}";
  // Zarr v3 sharding, as zarr-python 3's create_array(chunks=, shards=): x's
  // chunks become the inner chunks (read one by one), `shards` the stored
  // objects; each must be a multiple of the chunks. A task writes one whole
  // shard, encoding each inner chunk as soon as it is filled.
  std::optional<Shape> shards;
  // v3 only: one name per axis (xarray's dimensions), kept in zarr.json.
  std::optional<std::vector<std::optional<std::string>>> dimension_names;
  // The fill value (default: zero; v2's null is kept only in v2).
  std::optional<FillValue> fill_value;
  // Backfill (xarray's to_zarr(region=)): write x into the box starting at
  // `region_origin` (x's shape) of the existing array at `path`, whose
  // metadata stays as it is (codecs, chunks, fill value; the options above
  // are ignored). Chunks x covers partly are read, updated and rewritten
  // under a lock per chunk; none is ever torn. x is cast to the array's
  // dtype under numpy's same_kind rule (int into float, float64 into
  // float32); a cast across kinds (float into int) is InvalidArgument, as
  // are both options at once, a rank or extent that does not fit and a
  // missing array (NotFound).
  std::optional<Shape> region_origin;
  // Append (xarray's append_dim): the existing array grows along this axis
  // by x's extent there, x filling the new part; the other extents must
  // match. The new shape is written last: until the compute ends readers see
  // the old array.
  std::optional<int> append_dim;
};
// A lazy store of `x` into a Zarr array at `path` (chunks must be regular).
// compute() of the returned handle writes it; nothing is written before.
// InvalidArgument (as the handle's status) for shards that are not a
// multiple of the chunks, or sharding in Zarr v2.
Array to_zarr(const Array& x, const std::string& path, ToZarrOptions options = {});

}  // namespace strata

#endif  // STRATA_API_IO_H_
