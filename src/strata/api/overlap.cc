// api/overlap.h: pad and map_overlap as gathers.
#include "strata/api/overlap.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

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

// Whether output position `p` taking input position `src` (-1: the fill
// value) continues run `r`; if so `r` takes it (its second position sets
// its step).
bool Continues(AxisRun& r, Index p, Index src) {
  if (r.out_start + r.length != p || (src < 0) != (r.in_start < 0)) return false;
  if (src >= 0) {
    const Index last = r.in_start + r.step * (r.length - 1);
    if (r.length == 1 && std::abs(src - last) <= 1) {
      r.step = src - last;
    } else if (r.length == 1 || src != last + r.step) {
      return false;
    }
  }
  ++r.length;
  return true;
}

// Appends output position `p` taking input `src` (-1: fill), merging with the
// last run where it continues it.
void AppendPosition(std::vector<AxisRun>& runs, Index p, Index src) {
  if (runs.empty() || !Continues(runs.back(), p, src)) runs.push_back({p, 1, src, 1});
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

// Output positions of an extended block along the halo's axis taken from
// edge block `edge` (the task's edge input of that index; -1: the fill
// value), positions run.in_start + run.step * t of it.
struct HaloRun {
  int edge = -1;
  AxisRun run;
};

void AppendHalo(std::vector<HaloRun>& runs, Index out, int edge, Index in) {
  const Index src = edge < 0 ? -1 : in;
  if (runs.empty() || runs.back().edge != edge || !Continues(runs.back().run, out, src)) {
    runs.push_back({edge, {out, 1, src, 1}});
  }
}

// y with a halo of `before` and `after` elements along axis d, in two ops
// (Dask's overlap does the same with slices and concatenation):
// "overlap-edges" keeps each block's first and last w = max(before, after)
// elements along d (the whole block when it is no longer than 2w), and
// "overlap" makes each block of y extended, its halo copied from the edges
// of the blocks its positions come from: the neighbours', or, near the
// array's ends, those a reflection or a wrap-around reaches. Every such
// position lies within w of its block's ends, so a task holds one block of
// y, a few edges and the extended block, never the neighbouring blocks whole.
Array ExtendAlong(const Array& y, int d, Index before, Index after, Boundary boundary,
                  const Scalar& constant) {
  const Index w = std::max(before, after);
  if (w == 0) return y;
  const ChunkGrid& grid = y.chunks();
  const Index n = y.shape()[d], nb = grid.grid_shape()[d];
  const int rank = y.ndim();
  std::vector<AxisSource> sources;
  for (int i = 0; i < rank; ++i) {
    sources.push_back(i == d ? AxisSource{} : internal_api::IdentityAxis(y, i));
  }
  for (Index k = 0, at = 0; k < nb; ++k) {
    const Index o = grid.block_origin(d, k), s = grid.block_size(d, k);
    AxisSource& e = sources[d];
    if (s <= 2 * w) {
      e.runs.push_back({at, s, o, 1});
    } else {
      e.runs.push_back({at, w, o, 1});
      e.runs.push_back({at + w, w, o + s - w, 1});
    }
    e.out_chunks.push_back(std::min(s, 2 * w));
    at += e.out_chunks.back();
  }
  // Two extended blocks read each edge block: computed inside their tasks,
  // it would read its block of y twice, whole.
  Array edges = internal_api::OrthogonalGather("overlap-edges", y, std::move(sources),
                                               std::nullopt,
                                               [](Node& node) { node.keep_materialized = true; });
  if (!edges.ok()) return edges;
  // Per extended block: its size along d, where its core starts, which edge
  // blocks its halo reads (sorted: the task's edge inputs in that order) and
  // the runs that copy them.
  const PadMode mode = ModeOf(boundary);
  std::vector<Index> sizes(nb);
  std::vector<std::vector<Index>> table(nb);
  auto lead = std::make_shared<std::vector<Index>>(nb);
  auto runs = std::make_shared<std::vector<std::vector<HaloRun>>>(nb);
  bool fills = false;
  for (Index k = 0; k < nb; ++k) {
    const Index o = grid.block_origin(d, k), e = o + grid.block_size(d, k);
    const Index lo = boundary == Boundary::kNone ? std::max<Index>(0, o - before) : o - before;
    const Index hi = boundary == Boundary::kNone ? std::min(n, e + after) : e + after;
    sizes[k] = hi - lo;
    (*lead)[k] = o - lo;
    // (output position, edge block, position in it) of every halo position.
    struct Source {
      Index out, block, in;
    };
    std::vector<Source> halo;
    auto add = [&](Index q) {
      const Index p = SourceOf(q, n, mode);
      if (p < 0) {
        halo.push_back({q - lo, -1, 0});
        return;
      }
      const Index j = grid.BlocksIntersecting(d, p, p + 1).first;
      const Index po = grid.block_origin(d, j), ps = grid.block_size(d, j);
      // Every position a halo reads lies within w of its block's ends.
      STRATA_DCHECK(ps <= 2 * w || p - po < w || po + ps - p <= w);
      halo.push_back({q - lo, j, ps <= 2 * w || p - po < w ? p - po : w + p - (po + ps - w)});
    };
    for (Index q = lo; q < o; ++q) add(q);
    for (Index q = e; q < hi; ++q) add(q);
    std::vector<Index>& row = table[k];
    for (const Source& h : halo) {
      if (h.block >= 0) row.push_back(h.block);
    }
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    for (const Source& h : halo) {
      const int edge = h.block < 0 ? -1
                                   : static_cast<int>(std::lower_bound(row.begin(), row.end(),
                                                                       h.block) -
                                                      row.begin());
      fills = fills || edge < 0;
      AppendHalo((*runs)[k], h.out, edge, h.in);
    }
  }
  const DType dtype = y.dtype();
  auto fill = std::make_shared<NDArray>();
  if (fills) {
    Array s = internal_api::ScalarArray(constant, dtype, y.spec());
    if (!s.ok()) return s;
    *fill = *NDArray::CopyOf(*MemoryPool::Default(), s.node()->data->view());
  }
  std::vector<std::vector<Index>> out_sizes(rank);
  InputMap core_map, edge_map;
  for (int i = 0; i < rank; ++i) {
    out_sizes[i] = i == d ? sizes : grid.AxisChunkSizes(i);
    core_map.axes.push_back(AxisMap::Identity(i, grid.grid_shape()[i]));
    edge_map.axes.push_back(i == d ? AxisMap::Table(d, table, nb)
                                   : AxisMap::Identity(i, grid.grid_shape()[i]));
  }
  ChunkGrid out_grid = internal_api::GridFromSizes(out_sizes);
  BlockFunction fn = [d, dtype, lead, runs, fill](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    const ArrayView to = out.view();
    const Index k = r.block[d];
    const int rank = r.box.rank();
    const ConstArrayView& core = r.inputs[0][0].view;
    Box place(Shape(rank, 0), core.shape());
    place.origin[d] = (*lead)[k];
    CopyArray(core, to.Slice(place));
    for (const auto& [edge_index, run] : (*runs)[k]) {
      Box part(Shape(rank, 0), r.box.shape);
      part.origin[d] = run.out_start;
      part.shape[d] = run.length;
      if (edge_index < 0) {
        FillArray(to.Slice(part), fill->bytes());
        continue;
      }
      const ConstArrayView& edge = r.inputs[1][edge_index].view;
      Shape shape = edge.shape(), strides = edge.byte_strides();
      shape[d] = run.length;
      strides[d] *= run.step;
      CopyArray(ConstArrayView(edge.data() + run.in_start * edge.byte_strides()[d], dtype, shape,
                               strides),
                to.Slice(part));
    }
    return out;
  };
  return internal_api::MakeBlockwise("overlap", out_grid.shape(), dtype, out_grid, {y, edges},
                                     {std::move(core_map), std::move(edge_map)}, std::move(fn), 0,
                                     y.spec());
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
  return map_overlap(std::move(fn), std::vector<Array>{x}, dtype, std::move(options));
}

Array map_overlap(MapBlocksFunction fn, const std::vector<Array>& xs, DType dtype,
                  OverlapOptions options) {
  if (Status s = internal_api::FirstError(xs); !s.ok()) return Array::FromStatus(s);
  const std::string name = options.name;
  auto fail = [&](std::string m) {
    return Array::FromStatus(InvalidArgumentError(fmt::format("{}: {}", name, m)));
  };
  if (xs.empty()) return fail("no arrays given");
  if (!fn) return fail("no function given");
  for (size_t i = 1; i < xs.size(); ++i) {
    if (xs[i].shape() != xs[0].shape()) {
      return fail(fmt::format(
          "array {} has shape {} but array 0 has shape {}; the arrays must have one shape "
          "(broadcast them first)",
          i, ShapeToString(xs[i].shape()), ShapeToString(xs[0].shape())));
    }
  }
  std::shared_ptr<const Spec> spec = internal_api::SpecOf(xs);
  if (Status s = internal_api::CheckCallingProcessOnly(name, options.calling_process_only, *spec);
      !s.ok()) {
    return Array::FromStatus(s);
  }
  const int rank = xs[0].ndim();
  const std::string what = name + ": depth";
  Result<std::vector<Index>> before =
      PerAxis(options.depth.empty() ? std::vector<Index>{0} : options.depth, rank, what);
  if (!before.ok()) return Array::FromStatus(before.status());
  Result<std::vector<Index>> after =
      options.depth_after.empty() ? before : PerAxis(options.depth_after, rank, what);
  if (!after.ok()) return Array::FromStatus(after.status());
  Result<std::vector<Boundary>> boundary = PerAxis(options.boundary, rank, name + ": boundary");
  if (!boundary.ok()) return Array::FromStatus(boundary.status());
  if (options.extra_mem < 0) return fail(fmt::format("extra_mem {} is negative", options.extra_mem));
  // One block grid for all the arrays (as elementwise ops unify theirs).
  std::vector<Array> inputs = xs;
  if (xs.size() > 1) {
    Result<internal_api::UnifiedInputs> u = internal_api::UnifyChunks(name, xs);
    if (!u.ok()) return Array::FromStatus(u.status());
    inputs = std::move(u->inputs);
  }
  const ChunkGrid& grid = inputs[0].chunks();
  const Shape& shape = xs[0].shape();
  // Per axis, per block: the halo before it (the trim offset).
  auto lead = std::make_shared<std::vector<std::vector<Index>>>(rank);
  for (int d = 0; d < rank; ++d) {
    const Index db = (*before)[d], da = (*after)[d];
    if (db < 0 || da < 0) {
      return fail(fmt::format("depth {} along axis {} is negative", std::min(db, da), d));
    }
    for (Index k = 0; k < grid.grid_shape()[d]; ++k) {
      const Index o = grid.block_origin(d, k);
      (*lead)[d].push_back((*boundary)[d] == Boundary::kNone ? std::min(o, db) : db);
    }
  }
  const bool trim = options.trim;
  // No block: nothing to call fn on.
  if (NumElements(shape) == 0) return zeros(shape, {}, dtype, *spec);
  // Each array with its halo, one axis after the other (so that the corners
  // come from the diagonal neighbours through the edges of the extended
  // blocks, as in Dask).
  std::vector<Array> halos;
  std::vector<InputMap> maps;
  for (const Array& x : inputs) {
    Array halo = x;
    for (int d = 0; d < rank && halo.ok(); ++d) {
      halo = ExtendAlong(halo, d, (*before)[d], (*after)[d], (*boundary)[d],
                         options.constant_value);
    }
    if (!halo.ok()) return halo;
    maps.push_back(InputMap::IdentityMap(halo.chunks().grid_shape()));
    halos.push_back(std::move(halo));
  }
  BlockFunction block_fn = [fn = std::move(fn), dtype, trim, lead,
                            name](const BlockRequest& r) -> Result<NDArray> {
    std::vector<ConstArrayView> views;
    for (const auto& in : r.inputs) views.push_back(in[0].view);
    const BlockInfo info{r.block, r.box};
    Result<NDArray> got = fn(views, info, *r.pool);
    if (!got.ok()) {
      return got.status().WithContext(fmt::format("{}: block {}", name, JoinIndices(r.block, '.')));
    }
    const Shape& want = trim ? r.inputs[0][0].box.shape : r.box.shape;
    if (got->shape() != want || got->dtype() != dtype) {
      return InvalidArgumentError(fmt::format(
          "{}: the function returned a {} block of shape {} for block {}, expected {} of shape {} "
          "({})",
          name, got->dtype().name(), ShapeToString(got->shape()), JoinIndices(r.block, '.'),
          dtype.name(), ShapeToString(want),
          trim ? "the block with its halo, trimmed afterwards"
               : "the block without its halo, as trim is off"));
    }
    if (!trim) return got;
    Box center(Shape(r.box.rank()), r.box.shape);
    for (int d = 0; d < r.box.rank(); ++d) center.origin[d] = (*lead)[d][r.block[d]];
    return NDArray::CopyOf(*r.pool, got->view().Slice(center));
  };
  // The function's result (the halo block's shape) beside the trimmed copy.
  const int64_t result_bytes = halos[0].chunks().max_block_elements() * dtype.size();
  const std::string reason = options.calling_process_only;
  return internal_api::MakeBlockwise(
      name, grid.shape(), dtype, grid, std::move(halos), std::move(maps),
      std::move(block_fn), options.extra_mem + (trim ? result_bytes : 0), spec,
      NodeKind::kBlockwise, [&](Node& node) { node.calling_process_only = reason; });
}

}  // namespace strata
