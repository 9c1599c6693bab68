// Manipulation: permute_dims, expand_dims, squeeze, broadcast_to, concat,
// stack, flip, reshape. Each is one blockwise op with per-axis key functions;
// reshape rechunks first when its blocks would not map onto whole blocks.
#include "strata/api/manipulation.h"

#include <fmt/format.h>

#include <numeric>

#include "strata/api/creation.h"
#include "strata/api/elementwise.h"
#include "strata/api/internal.h"
#include "strata/core/kernels/elementwise.h"

namespace strata {

using internal_api::GridFromSizes;
using internal_api::MakeBlockwise;
using internal_api::NormalizeAxis;

namespace {

BlockFunction CopyWith(DType dtype, std::function<ConstArrayView(const InputBlock&, const Box&)> view) {
  return [dtype, view = std::move(view)](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    for (const auto& blocks : r.inputs) {
      for (const InputBlock& b : blocks) CopyArray(view(b, r.box), out.view());
    }
    return out;
  };
}

}  // namespace

Array permute_dims(const Array& x, std::vector<int> axes) {
  if (!x.ok()) return x;
  const int rank = x.ndim();
  if (static_cast<int>(axes.size()) != rank) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "permute_dims: {} axes given for an array of rank {}", axes.size(), rank)));
  }
  std::vector<int> perm(rank), inverse(rank, -1);
  for (int i = 0; i < rank; ++i) {
    Result<int> a = NormalizeAxis(axes[i], rank, "permute_dims");
    if (!a.ok()) return Array::FromStatus(a.status());
    if (inverse[*a] >= 0) {
      return Array::FromStatus(
          InvalidArgumentError(fmt::format("permute_dims: axis {} is repeated", axes[i])));
    }
    perm[i] = *a;
    inverse[*a] = i;
  }
  Shape shape(rank);
  std::vector<std::vector<Index>> sizes(rank);
  for (int i = 0; i < rank; ++i) {
    shape[i] = x.shape()[perm[i]];
    sizes[i] = x.chunks().AxisChunkSizes(perm[i]);
  }
  InputMap map;
  for (int j = 0; j < rank; ++j) {
    map.axes.push_back(AxisMap::Identity(inverse[j], x.chunks().grid_shape()[j]));
  }
  return MakeBlockwise("permute_dims", shape, x.dtype(), GridFromSizes(sizes), {x}, {map},
                       CopyWith(x.dtype(), [perm](const InputBlock& b, const Box&) {
                         return b.view.Transpose(perm);
                       }),
                       0, x.spec());
}

Array transpose(const Array& x) {
  if (!x.ok()) return x;
  std::vector<int> axes(x.ndim());
  std::iota(axes.rbegin(), axes.rend(), 0);
  return permute_dims(x, axes);
}

Array expand_dims(const Array& x, int axis) {
  if (!x.ok()) return x;
  const int rank = x.ndim();
  Result<int> a = NormalizeAxis(axis, rank + 1, "expand_dims");
  if (!a.ok()) return Array::FromStatus(a.status());
  const int at = *a;
  Shape shape = x.shape();
  shape.insert(shape.begin() + at, 1);
  std::vector<std::vector<Index>> sizes;
  for (int i = 0; i < rank; ++i) sizes.push_back(x.chunks().AxisChunkSizes(i));
  sizes.insert(sizes.begin() + at, std::vector<Index>{1});
  InputMap map;
  for (int j = 0; j < rank; ++j) {
    map.axes.push_back(AxisMap::Identity(j < at ? j : j + 1, x.chunks().grid_shape()[j]));
  }
  return MakeBlockwise("expand_dims", shape, x.dtype(), GridFromSizes(sizes), {x}, {map},
                       CopyWith(x.dtype(), [at](const InputBlock& b, const Box&) {
                         Shape s = b.view.shape(), st = b.view.byte_strides();
                         s.insert(s.begin() + at, 1);
                         st.insert(st.begin() + at, 0);
                         return ConstArrayView(b.view.data(), b.view.dtype(), s, st);
                       }),
                       0, x.spec());
}

Array squeeze(const Array& x, std::vector<int> axes_in) {
  if (!x.ok()) return x;
  const int rank = x.ndim();
  std::vector<int> axes;
  if (axes_in.empty()) {
    for (int i = 0; i < rank; ++i)
      if (x.shape()[i] == 1) axes.push_back(i);
  } else {
    Result<std::vector<int>> r = internal_api::NormalizeAxes(axes_in, rank, "squeeze");
    if (!r.ok()) return Array::FromStatus(r.status());
    axes = *r;
    for (int a : axes) {
      if (x.shape()[a] != 1) {
        return Array::FromStatus(InvalidArgumentError(fmt::format(
            "squeeze: axis {} has extent {}, not 1", a, x.shape()[a])));
      }
    }
  }
  if (axes.empty()) return x;
  auto squeezed = [&](int a) { return std::find(axes.begin(), axes.end(), a) != axes.end(); };
  Shape shape;
  std::vector<std::vector<Index>> sizes;
  InputMap map;
  for (int j = 0; j < rank; ++j) {
    if (squeezed(j)) {
      map.axes.push_back(AxisMap::Fixed({0}, 1));
    } else {
      map.axes.push_back(AxisMap::Identity(static_cast<int>(shape.size()), x.chunks().grid_shape()[j]));
      shape.push_back(x.shape()[j]);
      sizes.push_back(x.chunks().AxisChunkSizes(j));
    }
  }
  return MakeBlockwise("squeeze", shape, x.dtype(), GridFromSizes(sizes), {x}, {map},
                       CopyWith(x.dtype(), [axes](const InputBlock& b, const Box&) {
                         Shape s, st;
                         for (int i = 0; i < b.view.rank(); ++i) {
                           if (std::find(axes.begin(), axes.end(), i) != axes.end()) continue;
                           s.push_back(b.view.shape()[i]);
                           st.push_back(b.view.byte_strides()[i]);
                         }
                         return ConstArrayView(b.view.data(), b.view.dtype(), s, st);
                       }),
                       0, x.spec());
}

Array broadcast_to(const Array& x, Shape shape, Shape chunks) {
  if (!x.ok()) return x;
  Result<Shape> out = BroadcastShapes(std::vector<Shape>{x.shape(), shape});
  if (!out.ok() || *out != shape) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "broadcast_to: shape {} cannot be broadcast to {}", ShapeToString(x.shape()),
        ShapeToString(shape))));
  }
  const int rank = static_cast<int>(shape.size());
  const int offset = rank - x.ndim();
  if (!chunks.empty() && static_cast<int>(chunks.size()) != rank) {
    return Array::FromStatus(InvalidArgumentError("broadcast_to: chunks do not match the shape"));
  }
  // Broadcast axes: the given chunks, else whole axes shrunk to fit allowed_mem / 8.
  Result<ChunkGrid> auto_grid =
      internal_api::GridFor(shape, chunks, x.dtype(), *x.spec(), "broadcast_to");
  if (!auto_grid.ok()) return Array::FromStatus(auto_grid.status());
  std::vector<std::vector<Index>> sizes(rank);
  InputMap map;
  for (int o = 0; o < rank; ++o) {
    int i = o - offset;
    if (i >= 0 && x.shape()[i] == shape[o]) {
      sizes[o] = x.chunks().AxisChunkSizes(i);
    } else {
      sizes[o] = auto_grid->AxisChunkSizes(o);
    }
  }
  for (int i = 0; i < x.ndim(); ++i) {
    if (x.shape()[i] == shape[i + offset]) {
      map.axes.push_back(AxisMap::Identity(i + offset, x.chunks().grid_shape()[i]));
    } else {
      map.axes.push_back(AxisMap::Fixed({0}, 1));
    }
  }
  return MakeBlockwise("broadcast_to", shape, x.dtype(), GridFromSizes(sizes), {x}, {map},
                       CopyWith(x.dtype(), [](const InputBlock& b, const Box& box) {
                         return BroadcastTo(b.view, box.shape);
                       }),
                       0, x.spec());
}

Array concat(const std::vector<Array>& arrays_in, int axis) {
  if (Status s = internal_api::FirstError(arrays_in); !s.ok()) return Array::FromStatus(s);
  if (arrays_in.empty()) return Array::FromStatus(InvalidArgumentError("concat: no arrays given"));
  const Array& first = arrays_in[0];
  const int rank = first.ndim();
  if (rank == 0) return Array::FromStatus(InvalidArgumentError("concat: arrays must have rank >= 1"));
  Result<int> ax = NormalizeAxis(axis, rank, "concat");
  if (!ax.ok()) return Array::FromStatus(ax.status());
  const int a = *ax;
  DType dtype = first.dtype();
  for (const Array& x : arrays_in) {
    if (x.ndim() != rank) {
      return Array::FromStatus(InvalidArgumentError(fmt::format(
          "concat: all arrays need rank {}, got {}", rank, ShapeToString(x.shape()))));
    }
    for (int i = 0; i < rank; ++i) {
      if (i != a && x.shape()[i] != first.shape()[i]) {
        return Array::FromStatus(InvalidArgumentError(fmt::format(
            "concat: shapes {} and {} differ outside axis {}", ShapeToString(first.shape()),
            ShapeToString(x.shape()), a)));
      }
    }
    Result<DType> t = PromoteTypes(dtype, x.dtype());
    if (!t.ok()) return Array::FromStatus(t.status().WithContext("concat"));
    dtype = *t;
  }
  if (arrays_in.size() == 1) return first.dtype() == dtype ? first : astype(first, dtype);
  std::vector<Array> arrays;
  std::vector<std::vector<Index>> sizes(rank);
  for (int i = 0; i < rank; ++i) {
    if (i != a) sizes[i] = first.chunks().AxisChunkSizes(i);
  }
  for (const Array& x : arrays_in) {
    Array y = x.dtype() == dtype ? x : astype(x, dtype);
    std::vector<std::vector<Index>> want(rank);
    for (int i = 0; i < rank; ++i) want[i] = i == a ? y.chunks().AxisChunkSizes(i) : sizes[i];
    y = internal_api::RechunkToGrid(y, GridFromSizes(want));
    for (Index s : y.chunks().AxisChunkSizes(a)) sizes[a].push_back(s);
    arrays.push_back(std::move(y));
  }
  ChunkGrid grid = GridFromSizes(sizes);
  const Index n_out = grid.grid_shape()[a];
  std::vector<InputMap> maps;
  Index offset = 0;
  for (const Array& y : arrays) {
    const Index nb = y.chunks().grid_shape()[a];
    std::vector<std::vector<Index>> table(n_out);
    for (Index k = 0; k < nb; ++k) table[offset + k] = {k};
    InputMap map;
    for (int i = 0; i < rank; ++i) {
      map.axes.push_back(i == a ? AxisMap::Table(a, table, nb)
                                : AxisMap::Identity(i, y.chunks().grid_shape()[i]));
    }
    maps.push_back(std::move(map));
    offset += nb;
  }
  Shape shape = grid.shape();
  return MakeBlockwise("concat", shape, dtype, grid, arrays, maps,
                       CopyWith(dtype, [](const InputBlock& b, const Box&) { return b.view; }), 0,
                       internal_api::SpecOf(arrays_in));
}

Array stack(const std::vector<Array>& arrays, int axis) {
  if (Status s = internal_api::FirstError(arrays); !s.ok()) return Array::FromStatus(s);
  if (arrays.empty()) return Array::FromStatus(InvalidArgumentError("stack: no arrays given"));
  for (const Array& x : arrays) {
    if (x.shape() != arrays[0].shape()) {
      return Array::FromStatus(InvalidArgumentError(fmt::format(
          "stack: shapes {} and {} differ", ShapeToString(arrays[0].shape()),
          ShapeToString(x.shape()))));
    }
  }
  Result<int> a = NormalizeAxis(axis, arrays[0].ndim() + 1, "stack");
  if (!a.ok()) return Array::FromStatus(a.status());
  std::vector<Array> expanded;
  for (const Array& x : arrays) expanded.push_back(expand_dims(x, *a));
  return concat(expanded, *a);
}

Array flip(const Array& x, std::vector<int> axes_in) {
  if (!x.ok()) return x;
  Result<std::vector<int>> axes = internal_api::NormalizeAxes(axes_in, x.ndim(), "flip");
  if (!axes.ok()) return Array::FromStatus(axes.status());
  const int rank = x.ndim();
  std::vector<std::vector<Index>> sizes(rank);
  InputMap map;
  Shape steps(rank, 1);
  for (int i = 0; i < rank; ++i) {
    sizes[i] = x.chunks().AxisChunkSizes(i);
    const Index n = x.chunks().grid_shape()[i];
    if (std::find(axes->begin(), axes->end(), i) != axes->end()) {
      std::reverse(sizes[i].begin(), sizes[i].end());
      std::vector<std::vector<Index>> table(n);
      for (Index j = 0; j < n; ++j) table[j] = {n - 1 - j};
      map.axes.push_back(AxisMap::Table(i, table, n));
      steps[i] = -1;
    } else {
      map.axes.push_back(AxisMap::Identity(i, n));
    }
  }
  return MakeBlockwise("flip", x.shape(), x.dtype(), GridFromSizes(sizes), {x}, {map},
                       CopyWith(x.dtype(), [steps](const InputBlock& b, const Box&) {
                         return b.view.Stepped(Box::FromShape(b.view.shape()), steps);
                       }),
                       0, x.spec());
}

Array reshape(const Array& x, Shape shape_in) {
  if (!x.ok()) return x;
  // Resolve one -1.
  Shape shape = shape_in;
  int unknown = -1;
  Index known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && unknown < 0) {
      unknown = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return Array::FromStatus(
          InvalidArgumentError(fmt::format("reshape: invalid shape {}", ShapeToString(shape_in))));
    } else {
      known *= shape[i];
    }
  }
  const Index total = x.size();
  if (unknown >= 0) {
    if (known == 0 || total % known != 0) {
      return Array::FromStatus(InvalidArgumentError(fmt::format(
          "reshape: cannot reshape {} into {}", ShapeToString(x.shape()), ShapeToString(shape_in))));
    }
    shape[unknown] = total / known;
  }
  if (NumElements(shape) != total) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "reshape: cannot reshape {} ({} elements) into {}", ShapeToString(x.shape()), total,
        ShapeToString(shape_in))));
  }
  if (shape == x.shape()) return x;
  if (total == 0) return zeros(shape, {}, x.dtype(), *x.spec());
  // Group axes: in[i0, i1) <-> out[j0, j1) with equal products.
  const Shape& in = x.shape();
  const int rin = x.ndim(), rout = static_cast<int>(shape.size());
  struct Group {
    int i0, i1, j0, j1;
  };
  std::vector<Group> groups;
  int i = 0, j = 0;
  while (i < rin || j < rout) {
    Group g{i, i, j, j};
    Index pin = 1, pout = 1;
    if (i < rin) pin = in[i++];
    if (j < rout) pout = shape[j++];
    while (pin != pout) {
      if (pin < pout && i < rin) {
        pin *= in[i++];
      } else if (j < rout) {
        pout *= shape[j++];
      } else {
        pin *= in[i++];
      }
    }
    // Absorb trailing extent-1 axes into this group.
    while (i < rin && in[i] == 1 && (j >= rout || shape[j] != 1)) ++i;
    while (j < rout && shape[j] == 1 && (i >= rin || in[i] != 1)) ++j;
    g.i1 = i;
    g.j1 = j;
    groups.push_back(g);
  }
  // Within each group only the first input axis may be chunked, by a multiple
  // of the unit that makes output blocks whole.
  Shape want_chunks(rin, 1);
  std::vector<std::vector<Index>> out_sizes(rout);
  InputMap map;
  map.axes.resize(rin, AxisMap::Fixed({0}, 1));
  for (const Group& g : groups) {
    if (g.i0 == g.i1) {  // output axes of extent 1 only
      for (int o = g.j0; o < g.j1; ++o) out_sizes[o] = {1};
      continue;
    }
    Index r_in = 1, r_out = 1;
    for (int k = g.i0 + 1; k < g.i1; ++k) r_in *= in[k];
    for (int k = g.j0 + 1; k < g.j1; ++k) r_out *= shape[k];
    const Index unit = r_out / std::gcd(r_out, r_in);
    Index c = x.chunksize()[g.i0];
    c = std::max(unit, c / unit * unit);
    c = std::min(c, in[g.i0]);
    want_chunks[g.i0] = std::max<Index>(1, c);
    for (int k = g.i0 + 1; k < g.i1; ++k) want_chunks[k] = std::max<Index>(1, in[k]);
    if (g.j0 < g.j1) {
      const Index out_chunk = std::max<Index>(1, c * r_in / r_out);
      std::vector<Index> s;
      for (Index left = shape[g.j0]; left > 0; left -= out_chunk) s.push_back(std::min(left, out_chunk));
      out_sizes[g.j0] = s;
      for (int k = g.j0 + 1; k < g.j1; ++k) out_sizes[k] = {shape[k]};
    }
  }
  Array src = internal_api::RechunkToGrid(x, *ChunkGrid::Regular(in, want_chunks));
  for (const Group& g : groups) {
    // A group without output axes (extent-1 input axes reshaped away, as in
    // (1, 1) -> ()) is one block: it keeps the fixed map to block 0.
    if (g.i0 == g.i1 || g.j0 == g.j1) continue;
    map.axes[g.i0] = AxisMap::Identity(g.j0, src.chunks().grid_shape()[g.i0]);
  }
  const DType dtype = x.dtype();
  BlockFunction fn = [dtype](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    const InputBlock& b = r.inputs[0][0];
    CopyArray(b.view, out.view().Reshaped(b.view.shape()));
    return out;
  };
  return MakeBlockwise("reshape", shape, dtype, GridFromSizes(out_sizes), {src}, {map},
                       std::move(fn), 0, x.spec());
}

}  // namespace strata
