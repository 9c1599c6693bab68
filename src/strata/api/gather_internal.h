// OrthogonalGather: the one op behind roll, tile, repeat, pad and the halo
// blocks of map_overlap. Along every axis independently, each output
// position takes one input position (or a fill value): output element
// (i0, i1, ...) = x[src0(i0), src1(i1), ...].
//
// Each axis's source map is a list of runs covering the output axis in
// order: output positions [out_start, out_start + length) take input
// positions in_start + step * t for t in [0, length), step -1 (a reflection),
// 0 (one position repeated) or 1 (a shifted copy); in_start < 0 means the
// fill value. The key function follows from the runs: output block j along
// an axis reads exactly the input blocks its runs' positions fall in (no
// rechunk, nothing else read); the task copies each piece with one strided
// CopyArray per run of every axis.
//
// Thread-safety: pure; the returned Array is immutable.
#ifndef STRATA_API_GATHER_INTERNAL_H_
#define STRATA_API_GATHER_INTERNAL_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "strata/api/array.h"

namespace strata::internal_api {

struct AxisRun {
  Index out_start = 0;
  Index length = 0;
  Index in_start = 0;  // < 0: the fill value
  Index step = 1;      // -1, 0 or 1
};

struct AxisSource {
  std::vector<AxisRun> runs;      // sorted, covering [0, output extent) without gaps
  std::vector<Index> out_chunks;  // the output's block sizes along this axis (sum = extent)
};

// The identity source of axis `axis` of x (its own chunks).
AxisSource IdentityAxis(const Array& x, int axis);

// Block sizes of at most `chunk` each, covering `extent` (a last smaller one).
std::vector<Index> SplitExtent(Index extent, Index chunk);

// Builds the gather (one blockwise op named `op`). `fill` is required when a
// run has in_start < 0 (it is cast to x's dtype). `decorate` may set the
// node's optional fields (MakeBlockwise). InvalidArgument when the runs do
// not cover the output axis exactly or point outside x.
Array OrthogonalGather(std::string op, const Array& x, std::vector<AxisSource> axes,
                       std::optional<Scalar> fill = std::nullopt,
                       const std::function<void(Node&)>& decorate = nullptr);

}  // namespace strata::internal_api

#endif  // STRATA_API_GATHER_INTERNAL_H_
