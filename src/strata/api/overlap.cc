// api/overlap.h: pad and map_overlap as gathers.
#include "strata/api/overlap.h"

#include <fmt/format.h>

#include <algorithm>

#include "strata/api/creation.h"
#include "strata/api/gather_internal.h"
#include "strata/api/internal.h"

namespace strata {

using internal_api::AxisRun;
using internal_api::AxisSource;

namespace {

Index Mod(Index a, Index m) { return ((a % m) + m) % m; }

// The input position of position i (anywhere on the line) of an axis of
// extent n >= 1 under `mode`; -1 for the fill value.
Index SourceOf(Index i, Index n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : n - 1;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const Index period = 2 * (n - 1);
      const Index m = Mod(i, period);
      return m < n ? m : period - m;
    }
    case PadMode::kSymmetric: {
      const Index m = Mod(i, 2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
    case PadMode::kWrap:
      return Mod(i, n);
  }
  return -1;
}

// Appends output position `p` taking input `src` (-1: fill), merging with the
// last run where it continues it.
void AppendPosition(std::vector<AxisRun>& runs, Index p, Index src) {
  if (!runs.empty()) {
    AxisRun& r = runs.back();
    if (r.out_start + r.length == p) {
      if (src < 0 && r.in_start < 0) {
        ++r.length;
        return;
      }
      if (src >= 0 && r.in_start >= 0) {
        const Index last = r.in_start + r.step * (r.length - 1);
        if (r.length == 1 && std::abs(src - last) <= 1) {
          r.step = src - last;
          ++r.length;
          return;
        }
        if (r.length > 1 && src == last + r.step) {
          ++r.length;
          return;
        }
      }
    }
  }
  runs.push_back({p, 1, src, 1});
}

// Output positions [out, out + (hi - lo)) take line positions [lo, hi).
void AppendRange(std::vector<AxisRun>& runs, Index out, Index lo, Index hi, Index n, PadMode mode) {
  Index p = out;
  for (Index i = lo; i < std::min<Index>(hi, 0); ++i)
    AppendPosition(runs, p++, SourceOf(i, n, mode));
  const Index a = std::max<Index>(lo, 0), b = std::min(hi, n);
  if (b > a) {
    runs.push_back({p, b - a, a, 1});
    p += b - a;
  }
  for (Index i = std::max(lo, n); i < hi; ++i) AppendPosition(runs, p++, SourceOf(i, n, mode));
}

PadMode ModeOf(Boundary b) {
  switch (b) {
    case Boundary::kConstant:
      return PadMode::kConstant;
    case Boundary::kNearest:
      return PadMode::kEdge;
    case Boundary::kReflect:
      return PadMode::kSymmetric;
    case Boundary::kPeriodic:
      return PadMode::kWrap;
    case Boundary::kNone:
      break;
  }
  return PadMode::kConstant;
}

template <typename T>
Result<std::vector<T>> PerAxis(std::vector<T> v, int rank, std::string_view what) {
  if (v.size() == 1 && rank != 1) v.assign(rank, v[0]);
  if (static_cast<int>(v.size()) != rank) {
    return InvalidArgumentError(
        fmt::format("{}: {} values given for an array of rank {}", what, v.size(), rank));
  }
  return v;
}

}  // namespace

Array pad(const Array& x, std::vector<std::pair<Index, Index>> pad_width, PadMode mode,
          Scalar constant_value) {
  if (!x.ok()) return x;
  const int rank = x.ndim();
  if (rank == 0) return x;
  Result<std::vector<std::pair<Index, Index>>> w =
      PerAxis(std::move(pad_width), rank, "pad: pad_width");
  if (!w.ok()) return Array::FromStatus(w.status());
  std::vector<AxisSource> sources;
  Shape shape(rank);
  for (int d = 0; d < rank; ++d) {
    const auto [before, after] = (*w)[d];
    const Index n = x.shape()[d];
    if (before < 0 || after < 0) {
      return Array::FromStatus(InvalidArgumentError(
          fmt::format("pad: widths ({}, {}) along axis {} must be >= 0", before, after, d)));
    }
    if (n == 0 && mode != PadMode::kConstant && before + after > 0) {
      return Array::FromStatus(InvalidArgumentError(
          fmt::format("pad: cannot extend the empty axis {} with a mode other than constant", d)));
    }
    shape[d] = before + n + after;
    AxisSource s;
    const Index nominal = std::max<Index>(1, x.chunks().chunk_shape()[d]);
    for (Index c : internal_api::SplitExtent(before, nominal)) s.out_chunks.push_back(c);
    for (Index c : x.chunks().AxisChunkSizes(d)) s.out_chunks.push_back(c);
    for (Index c : internal_api::SplitExtent(after, nominal)) s.out_chunks.push_back(c);
    if (n == 0) {
      if (shape[d] > 0) s.runs.push_back({0, shape[d], -1, 1});
    } else {
      AppendRange(s.runs, 0, -before, n + after, n, mode);
    }
    sources.push_back(std::move(s));
  }
  if (NumElements(shape) == 0) return zeros(shape, {}, x.dtype(), *x.spec());
  return internal_api::OrthogonalGather("pad", x, std::move(sources), constant_value);
}

Array map_overlap(MapBlocksFunction fn, const Array& x, DType dtype, OverlapOptions options) {
  if (!x.ok()) return x;
  if (!fn) return Array::FromStatus(InvalidArgumentError("map_overlap: no function given"));
  const int rank = x.ndim();
  Result<std::vector<Index>> depth = PerAxis(
      options.depth.empty() ? std::vector<Index>{0} : options.depth, rank, "map_overlap: depth");
  if (!depth.ok()) return Array::FromStatus(depth.status());
  Result<std::vector<Boundary>> boundary = PerAxis(options.boundary, rank, "map_overlap: boundary");
  if (!boundary.ok()) return Array::FromStatus(boundary.status());
  if (options.extra_mem < 0) {
    return Array::FromStatus(InvalidArgumentError("map_overlap: extra_mem is negative"));
  }
  const ChunkGrid& grid = x.chunks();
  std::vector<AxisSource> sources;
  // Per axis, per block: the halo before it (the trim offset).
  auto lead = std::make_shared<std::vector<std::vector<Index>>>(rank);
  for (int d = 0; d < rank; ++d) {
    const Index dd = (*depth)[d], n = x.shape()[d];
    if (dd < 0) {
      return Array::FromStatus(InvalidArgumentError(
          fmt::format("map_overlap: depth {} along axis {} is negative", dd, d)));
    }
    const Boundary b = (*boundary)[d];
    AxisSource s;
    Index out = 0;
    for (Index k = 0; k < grid.grid_shape()[d]; ++k) {
      const Index o = grid.block_origin(d, k), e = o + grid.block_size(d, k);
      const Index lo = b == Boundary::kNone ? std::max<Index>(0, o - dd) : o - dd;
      const Index hi = b == Boundary::kNone ? std::min(n, e + dd) : e + dd;
      AppendRange(s.runs, out, lo, hi, n, ModeOf(b));
      s.out_chunks.push_back(hi - lo);
      (*lead)[d].push_back(o - lo);
      out += hi - lo;
    }
    sources.push_back(std::move(s));
  }
  Array halo =
      internal_api::OrthogonalGather("overlap", x, std::move(sources), options.constant_value);
  if (!halo.ok()) return halo;
  const bool trim = options.trim;
  const ChunkGrid out_grid = trim ? grid : halo.chunks();
  ChunkGrid core = grid;
  BlockFunction block_fn = [fn = std::move(fn), dtype, trim, lead,
                            core](const BlockRequest& r) -> Result<NDArray> {
    const ConstArrayView views[] = {r.inputs[0][0].view};
    const Box out_box = trim ? r.box : core.BlockBox(r.block);
    const BlockInfo info{r.block, out_box};
    Result<NDArray> got = fn(views, info, *r.pool);
    if (!got.ok()) {
      return got.status().WithContext(
          fmt::format("map_overlap: block {}", JoinIndices(r.block, '.')));
    }
    const Shape& ext = r.inputs[0][0].box.shape;
    if (got->shape() != ext || got->dtype() != dtype) {
      return InvalidArgumentError(fmt::format(
          "map_overlap: the function returned a {} block of shape {} for block {}, expected {} "
          "of shape {} (the block with its halo)",
          got->dtype().name(), ShapeToString(got->shape()), JoinIndices(r.block, '.'), dtype.name(),
          ShapeToString(ext)));
    }
    if (!trim) return got;
    Box center(Shape(r.box.rank()), r.box.shape);
    for (int d = 0; d < r.box.rank(); ++d) center.origin[d] = (*lead)[d][r.block[d]];
    return NDArray::CopyOf(*r.pool, got->view().Slice(center));
  };
  // The function's result (the halo block's shape) beside the trimmed copy.
  const int64_t extended = halo.chunks().max_block_elements() * dtype.size();
  return internal_api::MakeBlockwise("map_overlap", out_grid.shape(), dtype, out_grid, {halo},
                                     {InputMap::IdentityMap(halo.chunks().grid_shape())},
                                     std::move(block_fn), options.extra_mem + (trim ? extended : 0),
                                     x.spec());
}

}  // namespace strata
