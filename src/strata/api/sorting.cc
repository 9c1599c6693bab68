// api/sorting.h.
#include "strata/api/sorting.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "strata/api/array.h"
#include "strata/api/creation.h"
#include "strata/api/elementwise.h"
#include "strata/api/internal.h"
#include "strata/base/byte_size.h"
#include "strata/core/dtype_dispatch.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/plan/memory_model.h"

namespace strata {

using internal_api::GridFromSizes;
using internal_api::MakeBlockwise;

namespace internal_api {

// x rechunked so that every axis of `axes` is one chunk and a block of it, at
// `bytes_per_element` for everything a task holds per element, fits in the
// task budget (other axes' chunks halved by FitChunksToBudget until it does).
Result<Array> WholeAlongAxes(const Array& x, const std::vector<int>& axes,
                             int64_t bytes_per_element, std::string_view op) {
  const int64_t budget = TaskMemoryBudget(*x.spec());
  std::vector<bool> whole(x.ndim(), false);
  Index n = 1;
  for (int axis : axes) {
    whole[axis] = true;
    n *= std::max<Index>(1, x.shape()[axis]);
  }
  const int64_t slice = n * bytes_per_element;
  if (slice > budget) {
    std::vector<std::string> names;
    for (int axis : axes) names.push_back(fmt::format("{} of extent {}", axis, x.shape()[axis]));
    return InvalidArgumentError(fmt::format(
        "{}: axis {} must be in one chunk, and one slice along {} needs {} ({} bytes per "
        "element with the copies a task holds), over allowed_mem less reserved_mem ({}); "
        "raise allowed_mem or work along {}",
        op, fmt::join(names, " and axis "), axes.size() == 1 ? "it" : "them", FormatBytes(slice),
        bytes_per_element, FormatBytes(budget),
        axes.size() == 1 ? "a shorter axis" : "shorter axes"));
  }
  Shape chunks = x.chunksize(), min_chunks(x.ndim(), 1);
  for (int d = 0; d < x.ndim(); ++d) {
    chunks[d] = whole[d] ? std::max<Index>(1, x.shape()[d]) : std::max<Index>(1, chunks[d]);
    if (whole[d]) min_chunks[d] = chunks[d];
  }
  auto block_bytes = [bytes_per_element](const Shape& c) {
    return NumElements(c) * bytes_per_element;
  };
  chunks = FitChunksToBudget(std::move(chunks), min_chunks, block_bytes, budget).chunks;
  bool same = x.chunks().is_regular();
  for (int d = 0; d < x.ndim() && same; ++d) {
    same = whole[d] ? x.chunks().grid_shape()[d] <= 1 : x.chunks().chunk_shape()[d] <= chunks[d];
  }
  if (same) return x;
  Result<ChunkGrid> grid = ChunkGrid::Regular(x.shape(), chunks);
  if (!grid.ok()) return grid.status().WithContext(op);
  return RechunkToGrid(x, *grid);
}

Result<Array> WholeAlongAxis(const Array& x, int axis, int64_t bytes_per_element,
                             std::string_view op) {
  return WholeAlongAxes(x, {axis}, bytes_per_element, op);
}

}  // namespace internal_api

using internal_api::Lines;
using internal_api::LinesOf;
using internal_api::NanLastLess;

namespace {

template <typename T>
void SortLines(T* data, const Lines& l, bool descending, int64_t* indices) {
  std::vector<T> line(l.n);
  std::vector<int64_t> order(l.n);
  for (Index o = 0; o < l.outer; ++o) {
    for (Index j = 0; j < l.inner; ++j) {
      T* p = data + l.Base(o, j);
      for (Index i = 0; i < l.n; ++i) line[i] = p[i * l.inner];
      std::iota(order.begin(), order.end(), int64_t{0});
      if (descending) {
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t b) { return NanLastLess(line[b], line[a]); });
      } else {
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t b) { return NanLastLess(line[a], line[b]); });
      }
      if (indices) {
        int64_t* q = indices + l.Base(o, j);
        for (Index i = 0; i < l.n; ++i) q[i * l.inner] = order[i];
      } else {
        for (Index i = 0; i < l.n; ++i) p[i * l.inner] = line[order[i]];
      }
    }
  }
}

Array SortImpl(const Array& x_in, int axis_in, bool descending, bool indices) {
  if (!x_in.ok()) return x_in;
  const char* op = indices ? "argsort" : "sort";
  if (x_in.dtype().is_complex()) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("{}: complex numbers are not ordered ({})", op, x_in.dtype().name())));
  }
  if (x_in.ndim() == 0) {
    return Array::FromStatus(
        InvalidArgumentError(fmt::format("{}: the input must have rank >= 1", op)));
  }
  Result<int> ax = internal_api::NormalizeAxis(axis_in, x_in.ndim(), op);
  if (!ax.ok()) return Array::FromStatus(ax.status());
  const int axis = *ax;
  const int64_t item = x_in.dtype().size();
  // Per element a task holds the input block and the output block (argsort:
  // a copy of the values and int64 indices).
  Result<Array> x = internal_api::WholeAlongAxis(x_in, axis, indices ? 2 * item + 8 : 2 * item, op);
  if (!x.ok()) return Array::FromStatus(x.status());
  const DType dtype = x->dtype();
  const DType out_dtype = indices ? DType(DTypeId::kInt64) : dtype;
  BlockFunction fn = [dtype, out_dtype, axis, descending,
                      indices](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, out_dtype, r.box.shape));
    if (out.num_elements() == 0) return out;
    NDArray values;
    if (indices) {
      STRATA_ASSIGN_OR_RETURN(values, NDArray::CopyOf(*r.pool, r.inputs[0][0].view));
    } else {
      CopyArray(r.inputs[0][0].view, out.view());
    }
    const Lines lines = LinesOf(r.box.shape, axis);
    VisitDType(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!kIsComplex<T>) {
        using C = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
        if (indices) {
          SortLines<C>(values.data_as<C>(), lines, descending, out.data_as<int64_t>());
        } else {
          SortLines<C>(out.data_as<C>(), lines, descending, nullptr);
        }
      }
    });
    return out;
  };
  const int64_t scratch = indices ? x->node()->max_block_bytes() : 0;
  return MakeBlockwise(op, x->shape(), out_dtype, x->chunks(), {*x},
                       {InputMap::IdentityMap(x->chunks().grid_shape())}, std::move(fn), scratch,
                       x->spec());
}

}  // namespace

Array sort(const Array& x, int axis, bool descending, bool stable) {
  return SortImpl(x, axis, descending, false);
}

Array argsort(const Array& x, int axis, bool descending, bool stable) {
  return SortImpl(x, axis, descending, true);
}

Array take_along_axis(const Array& x_in, const Array& idx_in, int axis_in) {
  if (Status s = internal_api::FirstError({&x_in, &idx_in}); !s.ok()) return Array::FromStatus(s);
  const char* op = "take_along_axis";
  if (!idx_in.dtype().is_integer()) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("{}: indices must have an integer dtype, not {}", op, idx_in.dtype().name())));
  }
  if (idx_in.ndim() != x_in.ndim() || x_in.ndim() == 0) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("{}: indices of shape {} must have the rank of the array's shape {} (>= 1)", op,
                    ShapeToString(idx_in.shape()), ShapeToString(x_in.shape()))));
  }
  Result<int> ax = internal_api::NormalizeAxis(axis_in, x_in.ndim(), op);
  if (!ax.ok()) return Array::FromStatus(ax.status());
  const int axis = *ax;
  const int rank = x_in.ndim();
  Shape out_shape(rank);
  for (int d = 0; d < rank; ++d) {
    const Index a = x_in.shape()[d], b = idx_in.shape()[d];
    if (d == axis) {
      out_shape[d] = b;
    } else if (a == b || b == 1) {
      out_shape[d] = a;
    } else if (a == 1) {
      out_shape[d] = b;
    } else {
      return Array::FromStatus(InvalidArgumentError(
          fmt::format("{}: shapes {} and {} do not broadcast outside axis {}", op,
                      ShapeToString(x_in.shape()), ShapeToString(idx_in.shape()), axis)));
    }
  }
  if (NumElements(out_shape) == 0) return zeros(out_shape, {}, x_in.dtype(), *x_in.spec());
  if (x_in.shape()[axis] == 0) {
    return Array::FromStatus(
        InvalidArgumentError(fmt::format("{}: cannot take from axis {} of extent 0", op, axis)));
  }
  const int64_t item = x_in.dtype().size();
  Result<Array> xr = internal_api::WholeAlongAxis(x_in, axis, 2 * item + 16, op);
  if (!xr.ok()) return Array::FromStatus(xr.status());
  const Array& x = *xr;
  Array ind = idx_in.dtype() == DType(DTypeId::kInt64) ? idx_in : astype(idx_in, DTypeId::kInt64);
  // One grid: other axes from x where it spans them, else from the indices.
  std::vector<std::vector<Index>> sizes(rank), isizes(rank);
  for (int d = 0; d < rank; ++d) {
    if (d == axis) {
      sizes[d] = ind.chunks().AxisChunkSizes(d);
    } else if (x.shape()[d] == out_shape[d]) {
      sizes[d] = x.chunks().AxisChunkSizes(d);
    } else {
      sizes[d] = ind.chunks().AxisChunkSizes(d);
    }
    isizes[d] = ind.shape()[d] == out_shape[d] ? sizes[d] : ind.chunks().AxisChunkSizes(d);
  }
  ind = internal_api::RechunkToGrid(ind, GridFromSizes(isizes));
  InputMap xmap, imap;
  ChunkGrid grid = GridFromSizes(sizes);
  for (int d = 0; d < rank; ++d) {
    const bool x_spans = d != axis && x.shape()[d] == out_shape[d];
    xmap.axes.push_back(x_spans ? AxisMap::Identity(d, grid.grid_shape()[d])
                                : AxisMap::Fixed({0}, 1));
    const bool i_spans = ind.shape()[d] == out_shape[d];
    imap.axes.push_back(i_spans ? AxisMap::Identity(d, grid.grid_shape()[d])
                                : AxisMap::Fixed({0}, 1));
  }
  const DType dtype = x.dtype();
  const Index n = x.shape()[axis];
  BlockFunction fn = [dtype, axis, n](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    if (out.num_elements() == 0) return out;
    const int rank = r.box.rank();
    const ConstArrayView& xv = r.inputs[0][0].view;
    ConstArrayView iv = BroadcastTo(r.inputs[1][0].view, r.box.shape);
    // x's block broadcast to the output's shape on the other axes.
    Shape xstrides(rank);
    for (int d = 0; d < rank; ++d) {
      xstrides[d] = (d != axis && xv.shape()[d] == 1) ? 0 : xv.byte_strides()[d];
    }
    const int64_t item = dtype.size();
    Shape idx(rank, 0);
    std::byte* o = out.data();
    do {
      int64_t v;
      std::memcpy(&v, iv.ElementPointer(idx), 8);
      if (v < -n || v >= n) {
        return InvalidArgumentError(fmt::format(
            "take_along_axis: index {} is out of bounds for axis {} with size {}", v, axis, n));
      }
      if (v < 0) v += n;
      const std::byte* src = xv.data();
      for (int d = 0; d < rank; ++d) src += (d == axis ? v : idx[d]) * xstrides[d];
      std::memcpy(o, src, item);
      o += item;
    } while (NextIndex(idx, r.box.shape));
    return out;
  };
  return MakeBlockwise(op, out_shape, dtype, grid, {x, ind}, {std::move(xmap), std::move(imap)},
                       std::move(fn), 0, x.spec());
}

}  // namespace strata
