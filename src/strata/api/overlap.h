// pad (numpy's modes constant, edge, reflect, symmetric, wrap) and
// map_overlap (a function over blocks extended by a halo from their
// neighbours, Dask's map_overlap).
//
// Both are gathers (api/gather_internal.h): an output block of pad, or a halo
// block of map_overlap, reads exactly the input blocks its elements come
// from: a block and its neighbours within the depth, the blocks a reflection
// or wrap-around reaches at the edges, nothing for constant padding. The halo
// array is never materialised: it is computed inside the tasks of the
// function that consumes it (fused), so map_overlap's memory per task is the
// neighbouring blocks, the halo block, the function's extra_mem and its
// output.
//
// Thread-safety: pure functions of immutable Array values; map_overlap calls
// `fn` from worker threads, concurrently.
#ifndef STRATA_API_OVERLAP_H_
#define STRATA_API_OVERLAP_H_

#include <optional>
#include <utility>
#include <vector>

#include "strata/api/array.h"
#include "strata/api/map_blocks.h"

namespace strata {

enum class PadMode {
  kConstant,   // the constant value
  kEdge,       // the edge value repeated (Dask's "nearest")
  kReflect,    // mirrored without the edge: 3 2 | 1 2 3 | 2 1
  kSymmetric,  // mirrored with the edge: 2 1 | 1 2 3 | 3 2 (Dask's "reflect")
  kWrap,       // periodic (Dask's "periodic")
};

// pad_width: one (before, after) pair per axis, or one pair for every axis.
// InvalidArgument for negative widths, a count of pairs that fits neither,
// or a non-constant mode on an axis of extent 0 (as numpy).
Array pad(const Array& x, std::vector<std::pair<Index, Index>> pad_width,
          PadMode mode = PadMode::kConstant, Scalar constant_value = Scalar(0));

enum class Boundary {
  kNone,      // no halo beyond the array's edges (edge blocks are smaller)
  kConstant,  // the constant value
  kNearest,   // the edge value repeated
  kReflect,   // mirrored with the edge (Dask's "reflect": numpy's symmetric)
  kPeriodic,  // wrapped around
};

struct OverlapOptions {
  // Depth of the halo per axis (one value for every axis, or one per axis).
  std::vector<Index> depth;
  // Boundary handling per axis (one for all, or one per axis).
  std::vector<Boundary> boundary = {Boundary::kReflect};
  Scalar constant_value = Scalar(0);
  // fn returns the extended block; it is trimmed back to the block (true), or
  // kept extended, making the output's blocks the extended ones (false).
  bool trim = true;
  int64_t extra_mem = 0;  // scratch fn needs per call
};

// Calls fn on each block of x extended by `depth` elements of its neighbours
// along each axis (BlockInfo: the block's coordinates and its region of the
// *output*). fn must return a block of `dtype` of the extended block's shape.
// InvalidArgument for a negative depth, or a depth larger than a block that
// the boundary cannot extend (kNone is fine).
Array map_overlap(MapBlocksFunction fn, const Array& x, DType dtype, OverlapOptions options);

}  // namespace strata

#endif  // STRATA_API_OVERLAP_H_
