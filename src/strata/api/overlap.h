// pad (numpy's modes constant, edge, reflect, symmetric, wrap) and
// map_overlap (a function over blocks extended by a halo from their
// neighbours, Dask's map_overlap).
//
// pad is a gather (api/gather_internal.h): an output block reads exactly the
// input blocks its elements come from (a block and its neighbours, the
// blocks a reflection or wrap-around reaches at the edges, nothing for
// constant padding).
//
// map_overlap extends the blocks one axis after the other, as Dask's
// overlap does: per axis, an "overlap-edges" op keeps each block's first and
// last `depth` elements along it, and an "overlap" op makes each block with
// its halo from the edges its positions come from (the neighbours', or near
// the array's ends those a reflection or wrap-around reaches); corners come
// through the edges of blocks already extended along the earlier axes. A
// task so holds one block, a few thin edges and the extended block, never
// its neighbours whole; the last extension is computed inside the tasks of
// the function (fused), whose projection adds the function's result and
// the output block, and extra_mem.
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
  // Depth of the halo per axis (one value for every axis, or one per axis):
  // before and after each block, or only before when `depth_after` is given.
  std::vector<Index> depth;
  // When non-empty, the halo after each block per axis (one for all, or one
  // per axis), `depth` being the halo before (Dask's asymmetric depth).
  std::vector<Index> depth_after;
  // Boundary handling per axis (one for all, or one per axis).
  std::vector<Boundary> boundary = {Boundary::kReflect};
  Scalar constant_value = Scalar(0);
  // true: fn returns the extended block, which is trimmed back to the block;
  // false: fn trims it itself and returns the block (Dask's and Cubed's
  // trim=False). The output has x's chunks either way.
  bool trim = true;
  int64_t extra_mem = 0;  // scratch fn needs per call
  // The op's name in the plan and in errors ("map_overlap-smooth").
  std::string name = "map_overlap";
  // As MapBlocksOptions::calling_process_only: why fn must run in the calling
  // process; such an op is refused on the processes and mpi executors.
  std::string calling_process_only;
};

// Calls fn on each block of x extended by `depth` elements of its neighbours
// along each axis (BlockInfo: the block's coordinates and its region of the
// output, which has x's shape and chunks). fn must return a block of `dtype`
// of the extended block's shape (trim) or of the block's (no trim).
// The halo may be deeper than a block (it then comes from several blocks,
// or, at the edges, from reflections and wrap-arounds of the whole axis).
// InvalidArgument for a negative depth, a count of depths or boundaries that
// fits neither one nor every axis, a negative extra_mem, or (with
// calling_process_only) the processes or mpi executor; when run, fn's errors
// and a block of the wrong shape or dtype, naming the block.
Array map_overlap(MapBlocksFunction fn, const Array& x, DType dtype, OverlapOptions options);

// The same over several arrays of one shape (Dask's map_overlap(func, x, y)):
// their chunks are unified as for elementwise ops, each gets the same halo,
// and fn gets one extended block per array. InvalidArgument for arrays of
// different shapes or none.
Array map_overlap(MapBlocksFunction fn, const std::vector<Array>& xs, DType dtype,
                  OverlapOptions options);

}  // namespace strata

#endif  // STRATA_API_OVERLAP_H_
