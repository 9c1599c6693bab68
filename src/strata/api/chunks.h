// rechunk, and chunks as Python users write them: Dask's normalize_chunks
// rules, shared by every creation function and rechunk of the Python package
// (and usable from C++).
//
//   "auto"                 every axis auto
//   "100MB" (a ByteSize)   every axis auto, blocks of at most that size
//   5                      5 along every axis
//   (5, -1, "auto")        per axis: a size, the whole axis, auto
//   ((2, 2, 1), (5,))      per axis: every block's size (rectilinear)
//
// Auto axes are sized as `GridFor` sizes them (api/internal.h): trailing axes
// whole, the leading ones split so that a block holds at most the target
// bytes (allowed_mem / 8 of the spec, at least 1 MiB, unless a ByteSize is
// given), counting the fixed axes' sizes. A size larger than its axis is the
// whole axis, as in Dask.
//
// Thread-safety: values and pure functions.
#ifndef STRATA_API_CHUNKS_H_
#define STRATA_API_CHUNKS_H_

#include <string_view>
#include <vector>

#include "strata/api/array.h"
#include "strata/base/byte_size.h"
#include "strata/base/status.h"
#include "strata/core/chunk_grid.h"
#include "strata/plan/spec.h"

namespace strata {

struct AxisChunks {
  enum class Kind { kAuto, kFull, kSize, kSizes };
  Kind kind = Kind::kAuto;
  Index size = 0;            // kSize
  std::vector<Index> sizes;  // kSizes
  static AxisChunks Auto() { return {}; }
  static AxisChunks Full() { return {Kind::kFull}; }
  static AxisChunks Size(Index size) { return {Kind::kSize, size}; }
  static AxisChunks Sizes(std::vector<Index> sizes) { return {Kind::kSizes, 0, std::move(sizes)}; }
};

struct ChunksRequest {
  // Per axis; empty means every axis is `all` (auto unless set).
  std::vector<AxisChunks> axes;
  AxisChunks all;  // used when `axes` is empty (an int, "auto", -1 for every axis)
  // Target block bytes for auto axes ("100MB"); unset: allowed_mem / 8.
  ByteSize auto_bytes;
};

// The grid `request` describes for an array of `shape` and `dtype` under
// `spec`. InvalidArgument (prefixed by `op`) for a rank mismatch, sizes < 1,
// explicit sizes that do not sum to the extent, or bad ByteSize text.
Result<ChunkGrid> NormalizeChunks(const ChunksRequest& request, const Shape& shape, DType dtype,
                                  const Spec& spec, std::string_view op);

// New chunks, same data. How the data moves (one exchange through RAM, or
// rechunker's stages through disk or an object store) is the planner's
// choice; `min_mem` is the smallest intermediate chunk a stage may store
// (default max_mem / 20, as in Cubed).
Array rechunk(const Array& x, Shape chunks, ByteSize min_mem = {});
// x with exactly `grid` (regular or rectilinear); the same shape required.
Array rechunk(const Array& x, const ChunkGrid& grid);
// x rechunked as `request` says (NormalizeChunks with x's shape, dtype, spec).
Array rechunk(const Array& x, const ChunksRequest& request);

}  // namespace strata

#endif  // STRATA_API_CHUNKS_H_
