// Indexing: getitem (basic indexing: integers and slices) and take (an integer
// array along one axis). Both are one blockwise op whose key function is a
// table per axis from output block to the input blocks its positions come from.
//
// Output chunking along a selected axis: the selected positions are grouped
// by the input block they come from, and consecutive groups are merged into
// one output block while it stays within the input's nominal chunk size along
// that axis and within a number of input blocks per task that fits in
// allowed_mem. So a step-1 slice keeps the input's chunk boundaries, a large
// step does not make 1-element blocks, and a scattered take cannot make one
// task read the whole axis.
#include "strata/api/indexing.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "strata/api/creation.h"
#include "strata/api/internal.h"
#include "strata/plan/memory_model.h"

namespace strata {

using internal_api::GridFromSizes;
using internal_api::MakeBlockwise;

namespace {

constexpr Index kNoLimit = std::numeric_limits<Index>::max();

// What a task gathering `blocks` (>= 1) input blocks of x into an output
// block holds at its peak: the output block (no larger than x's) beside the
// input blocks and one block's worth spare (decoding copies, ragged edges, the
// scratch of an input computed in the task), and never less than the memory
// model's gather of a leaf: the blocks held and the last one read
// (LeafReadBytes: a Zarr chunk beside every copy its codecs make).
int64_t GatherTaskBytes(const Array& x, int64_t blocks) {
  const int64_t in_bytes = std::max<int64_t>(1, x.node()->max_block_bytes());
  return std::max(x.node()->max_block_bytes() + (blocks + 1) * in_bytes,
                  (blocks - 1) * in_bytes + LeafReadBytes(*x.node()));
}

// The most input blocks a task can gather (at least 1): GatherTaskBytes
// grows by one input block a block.
Index MaxInputBlocks(const Array& x) {
  const int64_t in_bytes = std::max<int64_t>(1, x.node()->max_block_bytes());
  const int64_t spare = internal_api::TaskMemoryBudget(*x.spec()) - GatherTaskBytes(x, 1);
  return std::max<int64_t>(1, spare / in_bytes + 1);
}

// The output block sizes and, per output block, the sorted distinct input
// blocks, from input blocks given in output order (one per output position,
// runs of equal values allowed): consecutive positions join one output block
// while it holds at most `max_size` positions and `max_blocks` input blocks.
struct AxisGrouping {
  std::vector<Index> sizes;
  std::vector<std::vector<Index>> table;
  Index max_row = 0;  // the longest table row
};

class Grouper {
 public:
  Grouper(Index max_size, Index max_blocks) : max_size_(max_size), max_blocks_(max_blocks) {}

  // `count` consecutive output positions coming from input block `block`; a
  // run of one block is never split unless it exceeds max_size.
  void Add(Index block, Index count) {
    while (count > 0) {
      const bool known = std::find(row_.begin(), row_.end(), block) != row_.end();
      const Index room = max_size_ - size_;
      if (room == 0 || (!known && static_cast<Index>(row_.size()) >= max_blocks_) ||
          (!known && size_ > 0 && count > room && count <= max_size_)) {
        Flush();
        continue;
      }
      if (!known) row_.push_back(block);
      const Index take = std::min(room, count);
      size_ += take;
      count -= take;
    }
  }

  AxisGrouping Finish() {
    Flush();
    return std::move(out_);
  }

 private:
  void Flush() {
    if (size_ == 0) return;
    std::sort(row_.begin(), row_.end());
    out_.max_row = std::max<Index>(out_.max_row, static_cast<Index>(row_.size()));
    out_.sizes.push_back(size_);
    out_.table.push_back(std::move(row_));
    row_.clear();
    size_ = 0;
  }

  Index max_size_, max_blocks_;
  Index size_ = 0;
  std::vector<Index> row_;
  AxisGrouping out_;
};

// ------------------------------------------------------------------ getitem

// What getitem selects along one input axis: positions start + step * t for
// t in [0, length). An integer item is a slice of length 1 whose axis is
// dropped.
struct AxisSelection {
  bool drop = false;
  Index start = 0;
  Index step = 1;
  Index length = 0;
  int out_axis = -1;
  // Per input block along this axis: the first t it holds and how many.
  std::vector<Index> first, count;
};

// Python's slice.indices(extent) and the resulting length.
Result<AxisSelection> NormalizeSlice(const Slice& s, Index extent) {
  if (s.step == 0) return InvalidArgumentError("getitem: slice step cannot be zero");
  AxisSelection sel;
  const Index step = s.step;
  const Index lower = step > 0 ? 0 : -1;
  const Index upper = step > 0 ? extent : extent - 1;
  auto clamp = [&](std::optional<Index> v, Index fallback) {
    if (!v) return fallback;
    Index x = *v;
    if (x < 0) x = x < -extent ? lower : std::max(x + extent, lower);
    return std::min(std::max(x, lower), upper);
  };
  const Index start = clamp(s.start, step > 0 ? lower : upper);
  const Index stop = clamp(s.stop, step > 0 ? upper : lower);
  if (step > 0) {
    sel.length = stop > start ? (stop - start - 1) / step + 1 : 0;
  } else if (start > stop) {
    // -(step + 1) + 1 avoids negating INT64_MIN.
    const Index magnitude_minus_one = -(step + 1);
    sel.length = magnitude_minus_one == std::numeric_limits<Index>::max()
                     ? 1
                     : (start - stop - 1) / (magnitude_minus_one + 1) + 1;
  }
  sel.start = sel.length > 0 ? start : 0;
  // With one element the step no longer matters; 1 keeps strides small.
  sel.step = sel.length > 1 ? step : 1;
  return sel;
}

// Groups one selected axis's positions by input block (see the file comment).
AxisGrouping GroupAxis(const ChunkGrid& grid, int axis, AxisSelection& sel, Index max_blocks) {
  const Index nblocks = grid.grid_shape()[axis];
  sel.first.assign(nblocks, 0);
  sel.count.assign(nblocks, 0);
  Grouper grouper(grid.chunk_shape()[axis], max_blocks);
  if (sel.length == 0) return grouper.Finish();
  const Index last = sel.start + sel.step * (sel.length - 1);
  const Index k0 = grid.BlockContaining(axis, sel.start);
  const Index k1 = grid.BlockContaining(axis, last);
  const Index dir = sel.step > 0 ? 1 : -1;
  const Index mag = sel.step > 0 ? sel.step : -sel.step;
  for (Index k = k0;; k += dir) {
    const Index o = grid.block_origin(axis, k), e = o + grid.block_size(axis, k);
    // t range whose positions fall in [o, e).
    Index t0, t1;
    if (sel.step > 0) {
      t0 = o <= sel.start ? 0 : (o - sel.start + mag - 1) / mag;
      t1 = (e - sel.start + mag - 1) / mag;
    } else {
      t0 = e - 1 >= sel.start ? 0 : (sel.start - (e - 1) + mag - 1) / mag;
      t1 = (sel.start - o) / mag + 1;
    }
    t1 = std::min(t1, sel.length);
    if (t1 > t0) {
      sel.first[k] = t0;
      sel.count[k] = t1 - t0;
      grouper.Add(k, t1 - t0);
    }
    if (k == k1) break;
  }
  return grouper.Finish();
}

Status OutOfBounds(std::string_view op, Index index, int axis, Index extent) {
  return InvalidArgumentError(fmt::format("{}: index {} is out of bounds for axis {} with size {}",
                                          op, index, axis, extent));
}

BlockFunction GetitemFunction(DType dtype, std::shared_ptr<const std::vector<AxisSelection>> axes) {
  return [dtype, axes](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    const int rank = static_cast<int>(axes->size());
    for (const InputBlock& b : r.inputs[0]) {
      Box in_box{Shape(rank), Shape(rank)};
      Shape steps(rank, 1);
      Box out_box{Shape(r.box.rank()), Shape(r.box.rank())};
      Shape kept, kept_strides;
      bool empty = false;
      for (int d = 0; d < rank; ++d) {
        const AxisSelection& sel = (*axes)[d];
        if (sel.drop) {
          in_box.origin[d] = sel.start - b.box.origin[d];
          in_box.shape[d] = 1;
          continue;
        }
        const int j = sel.out_axis;
        const Index k = b.block[d];
        const Index lo = std::max(sel.first[k], r.box.origin[j]);
        const Index hi = std::min(sel.first[k] + sel.count[k], r.box.end(j));
        const Index n = hi - lo;
        if (n <= 0) {
          empty = true;
          break;
        }
        const Index p = sel.start + sel.step * lo - b.box.origin[d];  // first, in the block
        const Index step = n > 1 ? sel.step : 1;
        const Index span = (n - 1) * (step > 0 ? step : -step) + 1;
        in_box.origin[d] = step > 0 ? p : p + step * (n - 1);
        in_box.shape[d] = span;
        steps[d] = step;
        out_box.origin[j] = lo - r.box.origin[j];
        out_box.shape[j] = n;
      }
      if (empty) continue;
      ConstArrayView v = b.view.Stepped(in_box, steps);
      for (int d = 0; d < rank; ++d) {
        if ((*axes)[d].drop) continue;
        kept.push_back(v.shape()[d]);
        kept_strides.push_back(v.byte_strides()[d]);
      }
      CopyArray(ConstArrayView(v.data(), dtype, kept, kept_strides), out.view().Slice(out_box));
    }
    return out;
  };
}

// --------------------------------------------------------------------- take

struct TakeData {
  std::vector<Index> indices;  // normalized
  ChunkGrid grid;              // the input's
  int axis;
};

BlockFunction TakeFunction(DType dtype, std::shared_ptr<const TakeData> data) {
  return [dtype, data](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    const int axis = data->axis;
    const auto& blocks = r.inputs[0];  // sorted along `axis`, one per block there
    const Index begin = r.box.origin[axis], end = r.box.end(axis);
    Index t = begin;
    while (t < end) {
      const Index p = data->indices[t];
      const Index k = data->grid.BlockContaining(axis, p);
      auto it = std::lower_bound(blocks.begin(), blocks.end(), k,
                                 [axis](const InputBlock& b, Index v) { return b.block[axis] < v; });
      STRATA_CHECK(it != blocks.end() && it->block[axis] == k) << "take: block " << k << " not read";
      // A run of consecutive positions in the same block moves in one copy.
      Index run = 1;
      while (t + run < end && data->indices[t + run] == p + run && p + run < it->box.end(axis)) ++run;
      Box src = Box::FromShape(it->box.shape);
      src.origin[axis] = p - it->box.origin[axis];
      src.shape[axis] = run;
      Box dst = Box::FromShape(r.box.shape);
      dst.origin[axis] = t - begin;
      dst.shape[axis] = run;
      CopyArray(it->view.Slice(src), out.view().Slice(dst));
      t += run;
    }
    return out;
  };
}

// Zeros for an empty selection, chunked like the input where it can be.
Array EmptySelection(const Array& x, Shape shape, Shape chunks) {
  return zeros(std::move(shape), std::move(chunks), x.dtype(), *x.spec());
}

}  // namespace

Array getitem(const Array& x, std::vector<IndexItem> items) {
  if (!x.ok()) return x;
  const int rank = x.ndim();
  if (static_cast<int>(items.size()) > rank) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "getitem: too many indices for array: array is {}-dimensional, but {} were indexed", rank,
        items.size())));
  }
  auto axes = std::make_shared<std::vector<AxisSelection>>(rank);
  bool identity = true;
  Shape out_shape, nominal;
  for (int d = 0; d < rank; ++d) {
    const Index extent = x.shape()[d];
    AxisSelection& sel = (*axes)[d];
    if (d < static_cast<int>(items.size()) && items[d].kind == IndexItem::Kind::kInteger) {
      Index i = items[d].integer;
      if (i < -extent || i >= extent) return Array::FromStatus(OutOfBounds("getitem", i, d, extent));
      sel.drop = true;
      sel.start = i < 0 ? i + extent : i;
      sel.length = 1;
      identity = false;
      continue;
    }
    if (d < static_cast<int>(items.size())) {
      Result<AxisSelection> s = NormalizeSlice(items[d].slice, extent);
      if (!s.ok()) return Array::FromStatus(s.status());
      sel = *std::move(s);
    } else {
      sel.length = extent;
    }
    identity = identity && sel.start == 0 && sel.length == extent && (sel.step == 1 || extent <= 1);
    sel.out_axis = static_cast<int>(out_shape.size());
    out_shape.push_back(sel.length);
    nominal.push_back(x.chunksize()[d]);
  }
  if (identity) return x;
  if (NumElements(out_shape) == 0) return EmptySelection(x, out_shape, nominal);

  // Group each selected axis; while a task would not fit (GatherTaskBytes),
  // the input blocks allowed along an axis are halved (FitChunksToBudget over
  // those limits).
  const ChunkGrid& grid = x.chunks();
  std::vector<AxisGrouping> groups(rank);
  Shape limit(rank, 1);
  for (int d = 0; d < rank; ++d) {
    if ((*axes)[d].drop) continue;
    groups[d] = GroupAxis(grid, d, (*axes)[d], kNoLimit);
    limit[d] = std::max<Index>(1, groups[d].max_row);
  }
  auto task_bytes = [&](const Shape& limits) {
    int64_t blocks = 1;
    for (int d = 0; d < rank; ++d) {
      if ((*axes)[d].drop) continue;
      if (limits[d] != limit[d]) {
        groups[d] = GroupAxis(grid, d, (*axes)[d], limits[d]);
        limit[d] = limits[d];
      }
      // Saturates: far past any budget is as good as any larger count.
      blocks = std::min<int64_t>(blocks * groups[d].max_row, int64_t{1} << 40);
    }
    return GatherTaskBytes(x, blocks);
  };
  const Shape fitted =
      FitChunksToBudget(limit, {}, task_bytes, internal_api::TaskMemoryBudget(*x.spec())).chunks;
  task_bytes(fitted);  // the groups of the limits chosen

  std::vector<std::vector<Index>> sizes;
  InputMap map;
  for (int d = 0; d < rank; ++d) {
    const AxisSelection& sel = (*axes)[d];
    const Index n_in = grid.grid_shape()[d];
    if (sel.drop) {
      map.axes.push_back(AxisMap::Fixed({grid.BlockContaining(d, sel.start)}, n_in));
    } else {
      sizes.push_back(groups[d].sizes);
      map.axes.push_back(AxisMap::Table(sel.out_axis, groups[d].table, n_in));
    }
  }
  return MakeBlockwise("getitem", out_shape, x.dtype(), GridFromSizes(std::move(sizes)), {x},
                       {std::move(map)}, GetitemFunction(x.dtype(), std::move(axes)), 0, x.spec());
}

Array take(const Array& x, std::vector<Index> indices, int axis_in) {
  if (!x.ok()) return x;
  Result<int> ax = internal_api::NormalizeAxis(axis_in, x.ndim(), "take");
  if (!ax.ok()) return Array::FromStatus(ax.status());
  const int axis = *ax;
  const Index extent = x.shape()[axis];
  for (Index& i : indices) {
    if (i < -extent || i >= extent) return Array::FromStatus(OutOfBounds("take", i, axis, extent));
    if (i < 0) i += extent;
  }
  Shape out_shape = x.shape();
  out_shape[axis] = static_cast<Index>(indices.size());
  if (NumElements(out_shape) == 0) return EmptySelection(x, out_shape, x.chunksize());

  const ChunkGrid& grid = x.chunks();
  Grouper grouper(grid.chunk_shape()[axis], MaxInputBlocks(x));
  for (size_t t = 0; t < indices.size();) {
    const Index k = grid.BlockContaining(axis, indices[t]);
    size_t u = t + 1;
    while (u < indices.size() && grid.BlockContaining(axis, indices[u]) == k) ++u;
    grouper.Add(k, static_cast<Index>(u - t));
    t = u;
  }
  AxisGrouping g = grouper.Finish();
  std::vector<std::vector<Index>> sizes;
  InputMap map;
  for (int d = 0; d < x.ndim(); ++d) {
    if (d == axis) {
      sizes.push_back(g.sizes);
      map.axes.push_back(AxisMap::Table(d, g.table, grid.grid_shape()[d]));
    } else {
      sizes.push_back(grid.AxisChunkSizes(d));
      map.axes.push_back(AxisMap::Identity(d, grid.grid_shape()[d]));
    }
  }
  auto data = std::make_shared<TakeData>(TakeData{std::move(indices), grid, axis});
  return MakeBlockwise("take", out_shape, x.dtype(), GridFromSizes(std::move(sizes)), {x},
                       {std::move(map)}, TakeFunction(x.dtype(), std::move(data)), 0, x.spec());
}

}  // namespace strata
