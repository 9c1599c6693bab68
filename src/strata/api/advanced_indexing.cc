// api/advanced_indexing.h: NumPy's advanced indexing as two ops.
//
//   PointGather   integer index arrays on k axes, known on the host: the points
//                 are sorted by the block (along those axes) they fall in; output
//                 block j of the "sorted" array holds the points of one block
//                 tuple (at most a block's worth of them), so its key function
//                 lists exactly that tuple; a take along the point axis restores
//                 the caller's order.
//   MaskedSelect  a boolean mask over the leading k axes: per-row counts first
//                 (eager), then output block r holds the selected elements of
//                 block-row r along axis 0, in C order (all blocks of that row
//                 along axes 1..k-1 are read by that one task; rows are made
//                 smaller first when they would not fit in the task budget).
#include "strata/api/advanced_indexing.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "strata/api/array.h"
#include "strata/api/compute.h"
#include "strata/api/creation.h"
#include "strata/api/elementwise.h"
#include "strata/api/gather_internal.h"
#include "strata/api/internal.h"
#include "strata/api/manipulation.h"
#include "strata/api/manipulation_extras.h"
#include "strata/api/reduction.h"
#include "strata/base/byte_size.h"
#include "strata/core/dtype_dispatch.h"
#include "strata/core/kernels/elementwise.h"

namespace strata {

using internal_api::GridFromSizes;
using internal_api::MakeBlockwise;

Indexer::Indexer(std::vector<Index> indices) : kind_(Kind::kArray) {
  const Index n = static_cast<Index>(indices.size());
  NDArray a = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt64, {n});
  std::copy(indices.begin(), indices.end(), a.data_as<int64_t>());
  array_ = asarray(std::move(a));
}

Indexer::Indexer(IndexItem item) {
  if (item.kind == IndexItem::Kind::kInteger) {
    kind_ = Kind::kInteger;
    integer_ = item.integer;
  } else {
    kind_ = Kind::kSlice;
    slice_ = item.slice;
  }
}

namespace {

Status OutOfBounds(Index index, int axis, Index extent) {
  return InvalidArgumentError(fmt::format(
      "index: index {} is out of bounds for axis {} with size {}", index, axis, extent));
}

// ------------------------------------------------------------ MaskedSelect

struct MaskedData {
  int k = 0;                    // mask rank (axes 0..k-1 of x)
  bool coords = false;          // emit coordinates (nonzero) instead of values
  ChunkGrid grid;               // x's (and the mask's) grid after unification
  std::vector<Index> out_rows;  // per output block: x's block along axis 0
  std::vector<Index> counts;    // per output block: selected elements
};

}  // namespace

namespace internal_api {

// x[mask] (values) or nonzero(mask) (coords, x ignored) as described above.
Array MaskedSelect(const Array& x_in, const Array& mask_in, bool coords) {
  const char* op = coords ? "nonzero" : "boolean_mask";
  if (!mask_in.ok()) return mask_in;
  if (!coords && !x_in.ok()) return x_in;
  Array mask = mask_in.dtype().is_bool() ? mask_in : not_equal(mask_in, Scalar(0));
  if (!mask.ok()) return mask;
  const int k = mask.ndim();
  Array x = coords ? mask : x_in;
  if (k == 0) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "{}: a 0-d {} is not supported (index with a 1-d array)", op, coords ? "array" : "mask")));
  }
  if (k > x.ndim() || !std::equal(mask.shape().begin(), mask.shape().end(), x.shape().begin())) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "{}: a mask of shape {} does not match the leading axes of an array of shape {}", op,
        ShapeToString(mask.shape()), ShapeToString(x.shape()))));
  }
  // Budget: a task holds the row-slab of x's blocks (axes 1..k-1 whole, the
  // trailing axes one block) and of the mask, the assembled mask slab and
  // its output (no larger than the x slab).
  const int64_t budget = TaskMemoryBudget(*x.spec());
  Index row_elements = 1;  // of the mask, per position along axis 0
  for (int d = 1; d < k; ++d) row_elements *= x.shape()[d];
  Index trailing = 1;
  for (int d = k; d < x.ndim(); ++d) trailing *= x.chunksize()[d];
  const int64_t row_bytes = coords ? 3 * row_elements + row_elements * 8 * k
                                   : row_elements * (2 + 2 * trailing * x.dtype().size());
  const Index rows_fit = std::max<int64_t>(0, budget / 2) / std::max<int64_t>(1, row_bytes);
  if (rows_fit < 1 && x.shape()[0] > 0) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "{}: one row along axis 0 of the mask and its elements takes {}, over the task budget "
        "{} (allowed_mem less reserved_mem); use smaller chunks along the axes after the mask",
        op, FormatBytes(row_bytes), FormatBytes(budget))));
  }
  // Both on one grid along the mask's axes: x's chunks, axis 0 at most
  // rows_fit per block; axes 1..k-1 keep their chunks (all are read).
  std::vector<std::vector<Index>> sizes(x.ndim());
  for (int d = 0; d < x.ndim(); ++d) sizes[d] = x.chunks().AxisChunkSizes(d);
  if (x.chunksize()[0] > rows_fit && x.shape()[0] > 0) {
    sizes[0] = SplitExtent(x.shape()[0], rows_fit);
  }
  const ChunkGrid grid = GridFromSizes(sizes);
  if (!coords) x = RechunkToGrid(x, grid);
  std::vector<std::vector<Index>> msizes(sizes.begin(), sizes.begin() + k);
  mask = RechunkToGrid(mask, GridFromSizes(msizes));

  // The count decides the output's shape: computed first (one pass).
  std::vector<int> rest_axes;
  for (int d = 1; d < k; ++d) rest_axes.push_back(d);
  Array per_row = k == 1 ? astype(mask, DTypeId::kInt64) : count_nonzero(mask, rest_axes);
  Result<NDArray> counted = compute(per_row);
  if (!counted.ok()) return Array::FromStatus(counted.status().WithContext(op));
  std::span<const int64_t> row_counts = counted->values<int64_t>();
  auto data = std::make_shared<MaskedData>();
  data->k = k;
  data->coords = coords;
  data->grid = grid;
  Index total = 0;
  for (Index r = 0; r < grid.grid_shape()[0]; ++r) {
    const Index o = grid.block_origin(0, r), e = o + grid.block_size(0, r);
    Index c = 0;
    for (Index i = o; i < e; ++i) c += row_counts[i];
    if (c == 0) continue;
    data->out_rows.push_back(r);
    data->counts.push_back(c);
    total += c;
  }
  // Output: (total,) + trailing axes (values) or (total, k) (coords).
  Shape out_shape = {total};
  std::vector<std::vector<Index>> out_sizes = {data->counts};
  if (coords) {
    out_shape.push_back(k);
    out_sizes.push_back({k});
  } else {
    for (int d = k; d < x.ndim(); ++d) {
      out_shape.push_back(x.shape()[d]);
      out_sizes.push_back(grid.AxisChunkSizes(d));
    }
  }
  const DType out_dtype = coords ? DType(DTypeId::kInt64) : x.dtype();
  if (total == 0) return zeros(out_shape, {}, out_dtype, *x.spec());
  std::vector<std::vector<Index>> table;
  for (Index r : data->out_rows) table.push_back({r});
  auto slab_map = [&](const ChunkGrid& g, int rank) {
    InputMap m;
    m.axes.push_back(AxisMap::Table(0, table, g.grid_shape()[0]));
    for (int d = 1; d < rank; ++d) {
      if (d < k) {
        m.axes.push_back(AxisMap::All(g.grid_shape()[d]));
      } else {
        m.axes.push_back(AxisMap::Identity(d - k + 1, g.grid_shape()[d]));
      }
    }
    return m;
  };
  std::vector<Array> inputs;
  std::vector<InputMap> maps;
  if (!coords) {
    inputs.push_back(x);
    maps.push_back(slab_map(grid, x.ndim()));
  }
  inputs.push_back(mask);
  maps.push_back(slab_map(mask.chunks(), k));
  const DType xdt = x.dtype();
  BlockFunction fn = [data, out_dtype, xdt](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, out_dtype, r.box.shape));
    const int k = data->k;
    const int mask_input = data->coords ? 0 : 1;
    const auto& mblocks = r.inputs[mask_input];
    // The mask's row-slab, contiguous.
    Box region = mblocks.front().box;
    for (const InputBlock& b : mblocks) {
      for (int d = 0; d < k; ++d) {
        const Index lo = std::min(region.origin[d], b.box.origin[d]);
        const Index hi = std::max(region.end(d), b.box.end(d));
        region.origin[d] = lo;
        region.shape[d] = hi - lo;
      }
    }
    STRATA_ASSIGN_OR_RETURN(NDArray slab,
                            internal_api::Assemble(r, mask_input, region, DTypeId::kBool));
    const Index expected = r.box.shape[0];
    const bool* m = slab.data_as<bool>();
    const Index n = slab.num_elements();
    Shape idx(k, 0);
    Index pos = 0;
    if (data->coords) {
      int64_t* o = out.data_as<int64_t>();
      for (Index e = 0; e < n; ++e) {
        if (m[e]) {
          if (pos >= expected) break;
          for (int d = 0; d < k; ++d) o[pos * k + d] = region.origin[d] + idx[d];
          ++pos;
        }
        NextIndex(idx, region.shape);
      }
    } else {
      // Per mask axis, position -> (block index among the inputs, local).
      const auto& xblocks = r.inputs[0];
      const ChunkGrid& g = data->grid;
      std::vector<std::vector<Index>> block_of(k), local_of(k);
      Shape block_stride(k, 0);
      Index stride = 1;
      for (int d = k - 1; d >= 1; --d) {
        block_stride[d] = stride;
        stride *= g.grid_shape()[d];
      }
      for (int d = 0; d < k; ++d) {
        block_of[d].resize(region.shape[d]);
        local_of[d].resize(region.shape[d]);
        for (Index i = 0; i < region.shape[d]; ++i) {
          const Index p = region.origin[d] + i;
          const Index b = d == 0 ? 0 : g.BlockContaining(d, p);
          block_of[d][i] = b;
          local_of[d][i] = p - (d == 0 ? region.origin[0] : g.block_origin(d, b));
        }
      }
      const int rank = xblocks.front().view.rank();
      const int64_t item = xdt.size();
      Box dst = Box::FromShape(r.box.shape);
      dst.shape[0] = 1;
      for (Index e = 0; e < n; ++e) {
        if (m[e]) {
          if (pos >= expected) break;
          Index which = 0;
          for (int d = 1; d < k; ++d) which += block_of[d][idx[d]] * block_stride[d];
          const ConstArrayView& v = xblocks[which].view;
          const std::byte* src = v.data();
          for (int d = 0; d < k; ++d) src += local_of[d][idx[d]] * v.byte_strides()[d];
          if (rank == k) {
            std::memcpy(out.data() + pos * item, src, item);
          } else {
            Shape tshape(v.shape().begin() + k, v.shape().end());
            Shape tstrides(v.byte_strides().begin() + k, v.byte_strides().end());
            dst.origin[0] = pos;
            ArrayView o = out.view().Slice(dst);
            CopyArray(ConstArrayView(src, xdt, tshape, tstrides),
                      ArrayView(o.data(), xdt, tshape,
                                Shape(o.byte_strides().begin() + 1, o.byte_strides().end())));
          }
          ++pos;
        }
        NextIndex(idx, region.shape);
      }
    }
    if (pos != expected) {
      return DataLossError(fmt::format(
          "the mask selected {} elements in rows {}.. but {} when counted: its values changed "
          "between the count and the selection",
          pos, region.origin[0], expected));
    }
    return out;
  };
  // The assembled mask slab (bool).
  const int64_t slab_bytes = std::max<Index>(1, mask.chunksize()[0]) * row_elements;
  return MakeBlockwise(op, out_shape, out_dtype, GridFromSizes(out_sizes), std::move(inputs),
                       std::move(maps), std::move(fn), slab_bytes, x.spec());
}

}  // namespace internal_api

namespace {

// -------------------------------------------------------------- PointGather

struct PointData {
  std::vector<int> adv;                    // the indexed axes (sorted)
  std::vector<std::vector<Index>> coords;  // per indexed axis, per point (original order)
  std::vector<Index> order;                // sorted position -> point
  std::vector<Index> group_start;          // per output block: first sorted position
  int point_axis = 0;                      // in the sorted array
};

// y indexed by points on the axes `adv` (coords normalized, P points each);
// the point axis of the result sits at `q` among the other axes.
Array PointGather(const Array& y, std::vector<int> adv, std::vector<std::vector<Index>> coords,
                  int q) {
  const int rank = y.ndim();
  const int k = static_cast<int>(adv.size());
  const Index P = coords.empty() ? 0 : static_cast<Index>(coords[0].size());
  const ChunkGrid& grid = y.chunks();
  std::vector<int> rest;
  for (int d = 0; d < rank; ++d) {
    if (std::find(adv.begin(), adv.end(), d) == adv.end()) rest.push_back(d);
  }
  Shape out_shape;
  for (int i = 0; i < q; ++i) out_shape.push_back(y.shape()[rest[i]]);
  out_shape.push_back(P);
  for (size_t i = q; i < rest.size(); ++i) out_shape.push_back(y.shape()[rest[i]]);
  if (NumElements(out_shape) == 0) return zeros(out_shape, {}, y.dtype(), *y.spec());

  auto data = std::make_shared<PointData>();
  data->adv = adv;
  data->point_axis = q;
  // Block tuple of each point, as one linear id.
  std::vector<Index> id(P, 0);
  for (Index p = 0; p < P; ++p) {
    Index v = 0;
    for (int i = 0; i < k; ++i) {
      v = v * grid.grid_shape()[adv[i]] + grid.BlockContaining(adv[i], coords[i][p]);
    }
    id[p] = v;
  }
  data->order.resize(P);
  std::iota(data->order.begin(), data->order.end(), Index{0});
  std::stable_sort(data->order.begin(), data->order.end(),
                   [&](Index a, Index b) { return id[a] < id[b]; });
  // Groups: one block tuple each, at most a block's worth of points.
  Index target = 1;
  for (int a : adv) target *= std::max<Index>(1, grid.chunk_shape()[a]);
  std::vector<Index> group_sizes;
  std::vector<std::vector<std::vector<Index>>> tables(k);
  for (Index s = 0; s < P;) {
    Index e = s + 1;
    while (e < P && id[data->order[e]] == id[data->order[s]] && e - s < target) ++e;
    data->group_start.push_back(s);
    group_sizes.push_back(e - s);
    const Index p = data->order[s];
    for (int i = 0; i < k; ++i) tables[i].push_back({grid.BlockContaining(adv[i], coords[i][p])});
    s = e;
  }
  data->group_start.push_back(P);
  data->coords = std::move(coords);
  std::vector<std::vector<Index>> sizes;
  InputMap map;
  map.axes.resize(rank, AxisMap::Fixed({0}, 1));
  for (int i = 0; i < q; ++i) sizes.push_back(grid.AxisChunkSizes(rest[i]));
  sizes.push_back(group_sizes);
  for (size_t i = q; i < rest.size(); ++i) sizes.push_back(grid.AxisChunkSizes(rest[i]));
  for (size_t i = 0; i < rest.size(); ++i) {
    const int out_axis = static_cast<int>(i) < q ? static_cast<int>(i) : static_cast<int>(i) + 1;
    map.axes[rest[i]] = AxisMap::Identity(out_axis, grid.grid_shape()[rest[i]]);
  }
  for (int i = 0; i < k; ++i) {
    map.axes[adv[i]] = AxisMap::Table(q, tables[i], grid.grid_shape()[adv[i]]);
  }
  const DType dtype = y.dtype();
  BlockFunction fn = [data, dtype](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    const InputBlock& b = r.inputs[0][0];
    const int q = data->point_axis;
    const Index j = r.block[q];
    const Index s0 = data->group_start[j], s1 = data->group_start[j + 1];
    // The input block without its indexed axes; the output without its point axis.
    Shape vshape, vstrides;
    for (int d = 0; d < b.view.rank(); ++d) {
      if (std::find(data->adv.begin(), data->adv.end(), d) != data->adv.end()) continue;
      vshape.push_back(b.view.shape()[d]);
      vstrides.push_back(b.view.byte_strides()[d]);
    }
    ArrayView ov = out.view();
    Shape ostrides = ov.byte_strides();
    const Index point_stride = ostrides[q];
    ostrides.erase(ostrides.begin() + q);
    for (Index s = s0; s < s1; ++s) {
      const Index p = data->order[s];
      const std::byte* src = b.view.data();
      for (size_t i = 0; i < data->adv.size(); ++i) {
        const int d = data->adv[i];
        src += (data->coords[i][p] - b.box.origin[d]) * b.view.byte_strides()[d];
      }
      CopyArray(ConstArrayView(src, dtype, vshape, vstrides),
                ArrayView(ov.data() + (s - s0) * point_stride, dtype, vshape, ostrides));
    }
    return out;
  };
  ChunkGrid out_grid = GridFromSizes(sizes);
  bool in_order = true;
  for (Index s = 0; s < P && in_order; ++s) in_order = data->order[s] == s;
  // Out of order, several tasks of the final take read each sorted block:
  // kept materialized so that each source block is still read once.
  Array sorted = MakeBlockwise("vindex", out_grid.shape(), dtype, out_grid, {y}, {std::move(map)},
                               std::move(fn), 0, y.spec(), NodeKind::kBlockwise,
                               [&](Node& node) { node.keep_materialized = !in_order; });
  // Back to the caller's order.
  if (in_order) return sorted;
  std::vector<Index> pos_of(P);
  for (Index s = 0; s < P; ++s) pos_of[data->order[s]] = s;
  return take(sorted, std::move(pos_of), q);
}

// ------------------------------------------------------------------- index

// An advanced item after the eager step: its index values (int64, normalized)
// with their shape, per axis it covers.
struct AdvancedItem {
  int first_axis = 0;                      // in y
  Shape shape;                             // of the index array(s)
  std::vector<std::vector<Index>> values;  // per covered axis, C order over `shape`
};

Array IndexImpl(const Array& x_in, std::vector<Indexer> items, bool vindex) {
  if (!x_in.ok()) return x_in;
  for (const Indexer& it : items) {
    if (it.kind() != Indexer::Kind::kArray) continue;
    if (!it.array().ok()) return it.array();
    if (it.array().dtype().is_bool() && it.array().ndim() == 0) {
      return Array::FromStatus(
          InvalidArgumentError("index: a 0-d boolean index is not supported (use newaxis)"));
    }
  }
  // Axes each item consumes; expand the Ellipsis.
  int consumed = 0, ellipses = 0;
  bool any_array = false;
  for (const Indexer& it : items) {
    switch (it.kind()) {
      case Indexer::Kind::kInteger:
      case Indexer::Kind::kSlice:
        ++consumed;
        break;
      case Indexer::Kind::kArray:
        any_array = true;
        consumed += it.array().dtype().is_bool() ? std::max(1, it.array().ndim()) : 1;
        break;
      case Indexer::Kind::kEllipsis:
        ++ellipses;
        break;
      case Indexer::Kind::kNewAxis:
        break;
    }
  }
  if (ellipses > 1) {
    return Array::FromStatus(
        InvalidArgumentError("index: an index can only have a single ellipsis"));
  }
  if (consumed > x_in.ndim()) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "index: too many indices for array: array is {}-dimensional, but {} were indexed",
        x_in.ndim(), consumed)));
  }
  std::vector<Indexer> expanded;
  for (const Indexer& it : items) {
    if (it.kind() == Indexer::Kind::kEllipsis) {
      for (int i = 0; i < x_in.ndim() - consumed; ++i) expanded.push_back(Slice{});
    } else {
      expanded.push_back(it);
    }
  }
  if (ellipses == 0) {
    for (int i = consumed; i < x_in.ndim(); ++i) expanded.push_back(Slice{});
  }
  // newaxis: insert extent-1 axes and index them with ':'.
  Array x = x_in;
  {
    int axis = 0;
    for (Indexer& it : expanded) {
      if (it.kind() == Indexer::Kind::kNewAxis) {
        x = expand_dims(x, axis);
        it = Slice{};
        ++axis;
      } else if (it.kind() == Indexer::Kind::kArray && it.array().dtype().is_bool()) {
        axis += std::max(1, it.array().ndim());
      } else {
        ++axis;
      }
    }
    if (!x.ok()) return x;
  }
  if (!any_array) {
    std::vector<IndexItem> basic;
    for (const Indexer& it : expanded) {
      if (it.kind() == Indexer::Kind::kInteger) {
        basic.push_back(IndexItem(it.integer()));
      } else {
        basic.push_back(IndexItem(it.slice()));
      }
    }
    return getitem(x, basic);
  }
  // Slices first (every advanced axis kept whole): y.
  std::vector<IndexItem> basic;
  struct Adv {
    int item;   // position in `expanded`
    int axis;   // first axis of y it covers
    int width;  // axes it covers
  };
  std::vector<Adv> adv;
  int axis = 0;
  for (size_t i = 0; i < expanded.size(); ++i) {
    const Indexer& it = expanded[i];
    if (it.kind() == Indexer::Kind::kSlice) {
      basic.push_back(IndexItem(it.slice()));
      ++axis;
      continue;
    }
    const int width = it.kind() == Indexer::Kind::kArray && it.array().dtype().is_bool()
                          ? std::max(1, it.array().ndim())
                          : 1;
    for (int w = 0; w < width; ++w) basic.push_back(IndexItem(Slice{}));
    adv.push_back({static_cast<int>(i), axis, width});
    axis += width;
  }
  Array y = getitem(x, basic);
  if (!y.ok()) return y;
  bool adjacent = true;
  for (size_t i = 1; i < adv.size(); ++i) {
    adjacent = adjacent && adv[i].axis == adv[i - 1].axis + adv[i - 1].width;
  }
  // One mask (plus integers): the slab selection, no host indices.
  int masks = 0, int_arrays = 0;
  for (const Adv& a : adv) {
    const Indexer& it = expanded[a.item];
    if (it.kind() == Indexer::Kind::kArray) {
      (it.array().dtype().is_bool() ? masks : int_arrays) += 1;
    }
  }
  if (masks == 1 && int_arrays == 0) {
    // Integers select their positions (they broadcast with the mask's
    // indices as scalars), then the mask's axes lead.
    std::vector<IndexItem> ints(y.ndim(), IndexItem(Slice{}));
    const Adv* mask_adv = nullptr;
    for (const Adv& a : adv) {
      const Indexer& it = expanded[a.item];
      if (it.kind() == Indexer::Kind::kInteger) {
        ints[a.axis] = IndexItem(it.integer());
      } else {
        mask_adv = &a;
      }
    }
    Array z = getitem(y, ints);
    int mask_axis = mask_adv->axis;
    for (const Adv& a : adv) {
      if (expanded[a.item].kind() == Indexer::Kind::kInteger && a.axis < mask_adv->axis)
        --mask_axis;
    }
    const Array& mask = expanded[mask_adv->item].array();
    const int width = mask_adv->width;
    std::vector<int> src, dst;
    for (int w = 0; w < width; ++w) {
      src.push_back(mask_axis + w);
      dst.push_back(w);
    }
    Array lead = mask_axis == 0 ? z : moveaxis(z, src, dst);
    Array picked = internal_api::MaskedSelect(lead, mask, false);
    if (!picked.ok()) return picked;
    // Where the selected axis goes: the mask's position when the advanced
    // items are adjacent (after the dropped integer axes), else first.
    const int place = (adjacent && !vindex) ? mask_axis : 0;
    return place == 0 ? picked : moveaxis(picked, 0, place);
  }
  // Integer arrays (and masks as their nonzero indices): computed first.
  std::vector<Array> eager;
  std::vector<std::pair<int, int>> eager_of;  // adv index -> (first eager slot, count)
  for (const Adv& a : adv) {
    const Indexer& it = expanded[a.item];
    if (it.kind() != Indexer::Kind::kArray) {
      eager_of.push_back({-1, 0});
      continue;
    }
    const Array& arr = it.array();
    if (arr.dtype().is_bool()) {
      std::vector<Array> nz = nonzero(arr.ndim() == 0 ? reshape(arr, {1}) : arr);
      eager_of.push_back({static_cast<int>(eager.size()), static_cast<int>(nz.size())});
      for (Array& n : nz) eager.push_back(std::move(n));
    } else if (arr.dtype().is_integer()) {
      eager_of.push_back({static_cast<int>(eager.size()), 1});
      eager.push_back(astype(arr, DTypeId::kInt64));
    } else {
      return Array::FromStatus(InvalidArgumentError(
          fmt::format("index: arrays used as indices must be of integer or boolean type, not {}",
                      arr.dtype().name())));
    }
  }
  if (Status s = internal_api::FirstError(eager); !s.ok()) return Array::FromStatus(s);
  Result<std::vector<NDArray>> values = compute(eager);
  if (!values.ok())
    return Array::FromStatus(values.status().WithContext("index: the index arrays"));
  // Per advanced axis: its index array (shape, values).
  std::vector<int> adv_axes;
  std::vector<Shape> shapes;
  std::vector<const NDArray*> arrays;  // null: an integer scalar
  std::vector<Index> scalars;
  for (size_t i = 0; i < adv.size(); ++i) {
    const Indexer& it = expanded[adv[i].item];
    for (int w = 0; w < adv[i].width; ++w) {
      adv_axes.push_back(adv[i].axis + w);
      if (it.kind() == Indexer::Kind::kInteger) {
        shapes.push_back({});
        arrays.push_back(nullptr);
        scalars.push_back(it.integer());
      } else {
        const NDArray& v = (*values)[eager_of[i].first + w];
        shapes.push_back(v.shape());
        arrays.push_back(&v);
        scalars.push_back(0);
      }
    }
  }
  Result<Shape> B = BroadcastShapes(shapes);
  if (!B.ok()) return Array::FromStatus(B.status().WithContext("index: the index arrays"));
  const Index P = NumElements(*B);
  std::vector<std::vector<Index>> coords(adv_axes.size(), std::vector<Index>(P));
  for (size_t i = 0; i < adv_axes.size(); ++i) {
    const Index extent = y.shape()[adv_axes[i]];
    auto bad = [&](Index v) { return v < -extent || v >= extent; };
    if (!arrays[i]) {
      const Index v = scalars[i];
      if (bad(v)) return Array::FromStatus(OutOfBounds(v, adv_axes[i], extent));
      std::fill(coords[i].begin(), coords[i].end(), v < 0 ? v + extent : v);
      continue;
    }
    ConstArrayView view = BroadcastTo(arrays[i]->view(), *B);
    Shape idx(B->size(), 0);
    for (Index p = 0; p < P; ++p) {
      int64_t v;
      std::memcpy(&v, view.ElementPointer(idx), 8);
      if (bad(v)) return Array::FromStatus(OutOfBounds(v, adv_axes[i], extent));
      coords[i][p] = v < 0 ? v + extent : v;
      NextIndex(idx, *B);
    }
  }
  int q = 0;
  if (adjacent && !vindex) {
    for (int d = 0; d < adv_axes.front(); ++d) ++q;
  }
  Array flat = PointGather(y, adv_axes, std::move(coords), q);
  if (!flat.ok() || B->size() == 1) return flat;
  Shape final_shape(flat.shape().begin(), flat.shape().begin() + q);
  final_shape.insert(final_shape.end(), B->begin(), B->end());
  final_shape.insert(final_shape.end(), flat.shape().begin() + q + 1, flat.shape().end());
  return reshape(flat, final_shape);
}

}  // namespace

Array index(const Array& x, std::vector<Indexer> items) {
  return IndexImpl(x, std::move(items), false);
}

Array vindex(const Array& x, std::vector<Indexer> items) {
  return IndexImpl(x, std::move(items), true);
}

Array take(const Array& x, const Array& indices, std::optional<int> axis) {
  if (!x.ok()) return x;
  if (!indices.ok()) return indices;
  if (!indices.dtype().is_integer()) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("take: indices must have an integer dtype, not {}", indices.dtype().name())));
  }
  Array src = axis ? x : reshape(x, {-1});
  const int a = axis.value_or(0);
  Result<int> ax = internal_api::NormalizeAxis(a, src.ndim(), "take");
  if (!ax.ok()) return Array::FromStatus(ax.status());
  // The indices decide which blocks are read: computed first.
  Result<NDArray> v = compute(astype(indices, DTypeId::kInt64));
  if (!v.ok()) return Array::FromStatus(v.status().WithContext("take: the indices"));
  std::span<const int64_t> flat = v->values<int64_t>();
  Array t = take(src, std::vector<Index>(flat.begin(), flat.end()), *ax);
  if (!t.ok() || indices.ndim() == 1) return t;
  Shape shape(src.shape().begin(), src.shape().begin() + *ax);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), src.shape().begin() + *ax + 1, src.shape().end());
  return reshape(t, shape);
}

Array boolean_mask(const Array& x, const Array& mask) {
  if (!mask.ok()) return mask;
  if (!mask.dtype().is_bool()) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("boolean_mask: the mask must be bool, not {}", mask.dtype().name())));
  }
  return internal_api::MaskedSelect(x, mask, false);
}

std::vector<Array> nonzero(const Array& x) {
  if (!x.ok()) return {x};
  Array coords = internal_api::MaskedSelect(Array(), x, true);
  if (!coords.ok()) return {coords};
  std::vector<Array> out;
  for (int d = 0; d < x.ndim(); ++d) out.push_back(getitem(coords, {Slice{}, IndexItem(d)}));
  return out;
}

}  // namespace strata
