#include "strata/api/subscript.h"

#include <fmt/format.h>

#include "strata/api/array.h"
#include "strata/api/chunks.h"
#include "strata/api/elementwise.h"
#include "strata/api/internal.h"
#include "strata/api/manipulation.h"
#include "strata/base/byte_size.h"
#include "strata/core/kernels/elementwise.h"

namespace strata {
namespace {

// The positions start + step * t, t in [0, length), one term selects along
// one axis; `drop` for an integer.
struct AxisSelection {
  Index start = 0, step = 1, length = 0;
  bool drop = false;
};

// Python's slice.indices(extent) and the slice's length.
AxisSelection SliceIndices(const Slice& s, Index extent) {
  const Index step = s.step;
  const Index lower = step > 0 ? 0 : -1;
  const Index upper = step > 0 ? extent : extent - 1;
  auto clamp = [&](std::optional<Index> v, Index fallback) {
    if (!v) return fallback;
    Index x = *v < 0 ? *v + extent : *v;
    return std::min(std::max(x, lower), upper);
  };
  AxisSelection a;
  a.step = step;
  a.start = clamp(s.start, step > 0 ? lower : upper);
  const Index stop = clamp(s.stop, step > 0 ? upper : lower);
  if (step > 0 && stop > a.start) a.length = (stop - a.start - 1) / step + 1;
  if (step < 0 && a.start > stop) {
    // -(step + 1) + 1 avoids negating INT64_MIN.
    const Index magnitude_minus_one = -(step + 1);
    a.length = magnitude_minus_one == INT64_MAX
                   ? 1
                   : (a.start - stop - 1) / (magnitude_minus_one + 1) + 1;
  }
  // With one element the step no longer matters; 1 keeps every product of
  // it with a position in range.
  if (a.length <= 1) a.step = 1;
  return a;
}

// One selection per axis of x, or the index error.
Result<std::vector<AxisSelection>> Selections(const Shape& shape,
                                              const std::vector<SubscriptTerm>& terms) {
  using Kind = SubscriptTerm::Kind;
  const int rank = static_cast<int>(shape.size());
  int indexed = 0, ellipses = 0;
  for (const SubscriptTerm& t : terms) {
    if (t.kind == Kind::kInteger || t.kind == Kind::kSlice) ++indexed;
    if (t.kind == Kind::kEllipsis) ++ellipses;
  }
  if (ellipses > 1) return OutOfRangeError("setitem: an index can only have a single ellipsis");
  if (indexed > rank) {
    return OutOfRangeError(fmt::format(
        "setitem: too many indices for array: array is {}-dimensional, but {} were indexed", rank,
        indexed));
  }
  std::vector<AxisSelection> out;
  auto full = [&](int axis) { return SliceIndices(Slice{}, shape[axis]); };
  for (const SubscriptTerm& t : terms) {
    const int axis = static_cast<int>(out.size());
    switch (t.kind) {
      case Kind::kInteger: {
        const Index extent = shape[axis];
        if (t.integer < -extent || t.integer >= extent) {
          return OutOfRangeError(fmt::format(
              "setitem: index {} is out of bounds for axis {} with size {}", t.integer, axis,
              extent));
        }
        out.push_back({t.integer < 0 ? t.integer + extent : t.integer, 1, 1, true});
        break;
      }
      case Kind::kSlice:
        if (t.slice.step == 0) return InvalidArgumentError("setitem: slice step cannot be zero");
        out.push_back(SliceIndices(t.slice, shape[axis]));
        break;
      case Kind::kNewAxis:
        break;
      case Kind::kEllipsis:
        for (int k = 0; k < rank - indexed; ++k) out.push_back(full(axis + k));
        break;
    }
  }
  while (static_cast<int>(out.size()) < rank) out.push_back(full(static_cast<int>(out.size())));
  return out;
}

// The t range [t0, t1) of a selection whose positions fall in [o, e).
std::pair<Index, Index> Overlap(const AxisSelection& a, Index o, Index e) {
  if (a.length == 0 || e <= o) return {0, 0};
  auto ceil_div = [](Index n, Index d) { return n <= 0 ? -((-n) / d) : (n + d - 1) / d; };
  Index t0, t1;
  if (a.step > 0) {
    t0 = ceil_div(o - a.start, a.step);
    t1 = ceil_div(e - a.start, a.step);
  } else {
    const Index m = -a.step;
    t0 = ceil_div(a.start - (e - 1), m);
    t1 = a.start - o < 0 ? 0 : (a.start - o) / m + 1;
  }
  return {std::max<Index>(t0, 0), std::min(t1, a.length)};
}

}  // namespace

Array subscript(const Array& x, const std::vector<SubscriptTerm>& terms) {
  using Kind = SubscriptTerm::Kind;
  if (!x.ok()) return x;
  const int rank = x.ndim();
  int indexed = 0, ellipses = 0;
  for (const SubscriptTerm& t : terms) {
    if (t.kind == Kind::kInteger || t.kind == Kind::kSlice) ++indexed;
    if (t.kind == Kind::kEllipsis) ++ellipses;
  }
  if (ellipses > 1) {
    return Array::FromStatus(
        OutOfRangeError("index: an index can only have a single ellipsis ('...')"));
  }
  if (indexed > rank) {
    return Array::FromStatus(OutOfRangeError(
        fmt::format("index: too many indices for array: array is {}-dimensional, but {} were "
                    "indexed",
                    rank, indexed)));
  }
  std::vector<IndexItem> items;
  std::vector<int> new_axes;  // positions in the result, ascending
  int out_axis = 0;
  for (const SubscriptTerm& t : terms) {
    switch (t.kind) {
      case Kind::kInteger: {
        const int axis = static_cast<int>(items.size());
        const Index extent = x.shape()[axis];
        if (t.integer < -extent || t.integer >= extent) {
          return Array::FromStatus(OutOfRangeError(
              fmt::format("index: index {} is out of bounds for axis {} with size {}", t.integer,
                          axis, extent)));
        }
        items.emplace_back(t.integer);
        break;
      }
      case Kind::kSlice:
        if (t.slice.step == 0) {
          return Array::FromStatus(InvalidArgumentError("index: slice step cannot be zero"));
        }
        items.emplace_back(t.slice);
        ++out_axis;
        break;
      case Kind::kNewAxis:
        new_axes.push_back(out_axis++);
        break;
      case Kind::kEllipsis:
        for (int k = 0; k < rank - indexed; ++k) {
          items.emplace_back(Slice{});
          ++out_axis;
        }
        break;
    }
  }
  Array out = items.empty() ? x : getitem(x, std::move(items));
  for (int axis : new_axes) out = expand_dims(out, axis);
  return out;
}

Array setitem(const Array& x, const std::vector<SubscriptTerm>& terms, const Array& value_in) {
  if (!x.ok()) return x;
  if (!value_in.ok()) return value_in;
  Result<std::vector<AxisSelection>> sel = Selections(x.shape(), terms);
  if (!sel.ok()) return Array::FromStatus(sel.status());
  auto axes = std::make_shared<const std::vector<AxisSelection>>(*std::move(sel));
  Shape selected;  // the selection's shape (integer axes dropped)
  for (const AxisSelection& a : *axes) {
    if (!a.drop) selected.push_back(a.length);
  }
  // Broadcast value against the selection (numpy's rule).
  const Shape& vs = value_in.shape();
  bool fits = vs.size() <= selected.size();
  for (size_t i = 0; fits && i < vs.size(); ++i) {
    const Index want = selected[selected.size() - vs.size() + i];
    fits = vs[i] == want || vs[i] == 1;
  }
  if (!fits) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("setitem: could not broadcast a value of shape {} into a selection of shape {}",
                    ShapeToString(vs), ShapeToString(selected))));
  }
  const int64_t budget = internal_api::TaskMemoryBudget(*x.spec());
  if (value_in.size() * x.dtype().size() > budget / 4) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "setitem: the value ({} as {}) must fit in a quarter of the task budget ({}); write "
        "large updates with concat or where",
        FormatBytes(value_in.size() * x.dtype().size()), x.dtype().name(), FormatBytes(budget))));
  }
  Array value = value_in.dtype() == x.dtype() ? value_in : astype(value_in, x.dtype());
  Shape whole = value.shape();
  for (Index& d : whole) d = std::max<Index>(d, 1);
  if (value.chunks().num_blocks() != 1) value = rechunk(value, whole);
  if (!value.ok()) return value;

  InputMap xmap = InputMap::IdentityMap(x.chunks().grid_shape());
  InputMap vmap;
  for (int i = 0; i < value.ndim(); ++i) vmap.axes.push_back(AxisMap::Fixed({0}, 1));
  const DType dtype = x.dtype();
  BlockFunction fn = [axes, selected, dtype](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::CopyOf(*r.pool, r.inputs[0][0].view));
    const int rank = static_cast<int>(axes->size());
    Box dst_box{Shape(rank), Shape(rank)}, src_box{Shape(rank), Shape(rank)};
    Shape steps(rank);
    for (int d = 0; d < rank; ++d) {
      const AxisSelection& a = (*axes)[d];
      const Index o = r.box.origin[d];
      auto [t0, t1] = Overlap(a, o, o + r.box.shape[d]);
      if (t1 <= t0) return out;  // nothing of the selection in this block
      const Index n = t1 - t0;
      const Index mag = a.step > 0 ? a.step : -a.step;
      const Index first = a.start + a.step * t0, last = a.start + a.step * (t1 - 1);
      dst_box.origin[d] = std::min(first, last) - o;
      dst_box.shape[d] = (n - 1) * mag + 1;
      steps[d] = a.step;
      src_box.origin[d] = t0;
      src_box.shape[d] = n;
    }
    // The value broadcast to the selection, with the integer axes back in
    // (length 1) so that it lines up with x's axes.
    ConstArrayView v = BroadcastTo(r.inputs[1][0].view, selected);
    Shape vshape, vstrides;
    int k = 0;
    for (int d = 0; d < rank; ++d) {
      if ((*axes)[d].drop) {
        vshape.push_back(1);
        vstrides.push_back(0);
      } else {
        vshape.push_back(v.shape()[k]);
        vstrides.push_back(v.byte_strides()[k]);
        ++k;
      }
    }
    ConstArrayView full(v.data(), dtype, vshape, vstrides);
    CopyArray(full.Slice(src_box), out.view().Stepped(dst_box, steps));
    return out;
  };
  return internal_api::MakeBlockwise("setitem", x.shape(), dtype, x.chunks(), {x, value},
                                     {xmap, vmap}, std::move(fn), 0, x.spec());
}

Array setitem(const Array& x, const std::vector<SubscriptTerm>& terms, Scalar value) {
  if (!x.ok()) return x;
  return setitem(x, terms, internal_api::ScalarArray(value, x.dtype(), x.spec()));
}

}  // namespace strata
