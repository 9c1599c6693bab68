// api/manipulation_extras.h.
#include "strata/api/manipulation_extras.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "strata/api/array.h"
#include "strata/api/compute.h"
#include "strata/api/creation.h"
#include "strata/api/elementwise.h"
#include "strata/api/gather_internal.h"
#include "strata/api/indexing.h"
#include "strata/api/internal.h"
#include "strata/api/manipulation.h"
#include "strata/api/reduction.h"
#include "strata/core/kernels/elementwise.h"

namespace strata {

using internal_api::AxisRun;
using internal_api::AxisSource;
using internal_api::GridFromSizes;
using internal_api::MakeBlockwise;
using internal_api::NormalizeAxis;

Result<Shape> broadcast_shapes(const std::vector<Shape>& shapes) {
  Result<Shape> s = BroadcastShapes(shapes);
  if (!s.ok()) return s.status().WithContext("broadcast_shapes");
  return s;
}

std::vector<Array> broadcast_arrays(const std::vector<Array>& arrays) {
  Result<internal_api::UnifiedInputs> u = internal_api::UnifyChunks("broadcast_arrays", arrays);
  if (!u.ok()) return std::vector<Array>(arrays.size(), Array::FromStatus(u.status()));
  ChunkGrid grid = GridFromSizes(u->sizes);
  std::vector<Array> out;
  for (size_t i = 0; i < arrays.size(); ++i) {
    const Array& in = u->inputs[i];
    if (in.shape() == u->shape && in.chunks() == grid) {
      out.push_back(in);
      continue;
    }
    const DType dtype = in.dtype();
    BlockFunction fn = [dtype](const BlockRequest& r) -> Result<NDArray> {
      STRATA_ASSIGN_OR_RETURN(NDArray o, NDArray::Allocate(*r.pool, dtype, r.box.shape));
      CopyArray(BroadcastTo(r.inputs[0][0].view, r.box.shape), o.view());
      return o;
    };
    out.push_back(MakeBlockwise("broadcast_to", u->shape, dtype, grid, {in}, {u->maps[i]},
                                std::move(fn), 0, in.spec()));
  }
  return out;
}

Array moveaxis(const Array& x, std::vector<int> source, std::vector<int> destination) {
  if (!x.ok()) return x;
  const int rank = x.ndim();
  if (source.size() != destination.size()) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "moveaxis: {} source axes but {} destinations", source.size(), destination.size())));
  }
  std::vector<int> src, dst;
  for (size_t i = 0; i < source.size(); ++i) {
    Result<int> s = NormalizeAxis(source[i], rank, "moveaxis");
    if (!s.ok()) return Array::FromStatus(s.status());
    Result<int> d = NormalizeAxis(destination[i], rank, "moveaxis");
    if (!d.ok()) return Array::FromStatus(d.status());
    if (std::find(src.begin(), src.end(), *s) != src.end() ||
        std::find(dst.begin(), dst.end(), *d) != dst.end()) {
      return Array::FromStatus(InvalidArgumentError("moveaxis: repeated axis"));
    }
    src.push_back(*s);
    dst.push_back(*d);
  }
  std::vector<int> rest;
  for (int a = 0; a < rank; ++a) {
    if (std::find(src.begin(), src.end(), a) == src.end()) rest.push_back(a);
  }
  std::vector<int> perm(rank, -1);
  for (size_t i = 0; i < src.size(); ++i) perm[dst[i]] = src[i];
  size_t k = 0;
  for (int& p : perm) {
    if (p < 0) p = rest[k++];
  }
  return permute_dims(x, perm);
}

Array moveaxis(const Array& x, int source, int destination) {
  return moveaxis(x, std::vector<int>{source}, std::vector<int>{destination});
}

Array matrix_transpose(const Array& x) {
  if (!x.ok()) return x;
  if (x.ndim() < 2) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("matrix_transpose: the input must have rank >= 2, got shape {}",
                    ShapeToString(x.shape()))));
  }
  std::vector<int> perm(x.ndim());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[x.ndim() - 1], perm[x.ndim() - 2]);
  return permute_dims(x, perm);
}

// ------------------------------------------------------------------- repeat

namespace {

// Where input positions start in the output along the repeated axis:
// cum(p) = p * count, or the prefix sums of per-element counts.
struct RepeatPlan {
  Index count = 0;         // every element; 0 when `cum` is used
  std::vector<Index> cum;  // size n + 1
  Index Start(Index p) const { return cum.empty() ? p * count : cum[p]; }
  // The input position output position `q` comes from.
  Index Source(Index q) const {
    if (cum.empty()) return q / count;
    return static_cast<Index>(std::upper_bound(cum.begin(), cum.end(), q) - cum.begin()) - 1;
  }
};

Array RepeatAlong(const Array& x, int axis, std::shared_ptr<const RepeatPlan> plan) {
  const Index n = x.shape()[axis];
  const Index total = plan->Start(n);
  Shape shape = x.shape();
  shape[axis] = total;
  if (NumElements(shape) == 0) return zeros(shape, {}, x.dtype(), *x.spec());
  const ChunkGrid& grid = x.chunks();
  // Output blocks: each input block's repeats, split to at most the nominal
  // chunk along the axis (a large count does not make huge blocks).
  std::vector<Index> out_sizes;
  const Index nominal = std::max<Index>(1, grid.chunk_shape()[axis]);
  for (Index k = 0; k < grid.grid_shape()[axis]; ++k) {
    const Index o = grid.block_origin(axis, k), e = o + grid.block_size(axis, k);
    for (Index s : internal_api::SplitExtent(plan->Start(e) - plan->Start(o), nominal)) {
      out_sizes.push_back(s);
    }
  }
  std::vector<std::vector<Index>> table(out_sizes.size());
  Index q = 0;
  for (size_t j = 0; j < out_sizes.size(); ++j) {
    const Index first = plan->Source(q), last = plan->Source(q + out_sizes[j] - 1);
    auto [k0, k1] = grid.BlocksIntersecting(axis, first, last + 1);
    for (Index k = k0; k < k1; ++k) table[j].push_back(k);
    q += out_sizes[j];
  }
  std::vector<std::vector<Index>> sizes(x.ndim());
  InputMap map;
  for (int d = 0; d < x.ndim(); ++d) {
    if (d == axis) {
      sizes[d] = out_sizes;
      map.axes.push_back(AxisMap::Table(d, table, grid.grid_shape()[d]));
    } else {
      sizes[d] = grid.AxisChunkSizes(d);
      map.axes.push_back(AxisMap::Identity(d, grid.grid_shape()[d]));
    }
  }
  const DType dtype = x.dtype();
  BlockFunction fn = [plan, axis, dtype](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    const Index begin = r.box.origin[axis], end = r.box.end(axis);
    for (const InputBlock& b : r.inputs[0]) {
      const Index p0 = std::max(b.box.origin[axis], plan->Source(begin));
      const Index p1 = std::min(b.box.end(axis), plan->Source(end - 1) + 1);
      for (Index p = p0; p < p1; ++p) {
        const Index lo = std::max(begin, plan->Start(p)), hi = std::min(end, plan->Start(p + 1));
        if (hi <= lo) continue;
        // Hyperplane p of the input block, broadcast over [lo, hi).
        Box src = Box::FromShape(b.box.shape);
        src.origin[axis] = p - b.box.origin[axis];
        src.shape[axis] = 1;
        ConstArrayView v = b.view.Slice(src);
        Shape strides = v.byte_strides();
        Shape vshape = v.shape();
        strides[axis] = 0;
        vshape[axis] = hi - lo;
        Box dst = Box::FromShape(r.box.shape);
        dst.origin[axis] = lo - begin;
        dst.shape[axis] = hi - lo;
        CopyArray(ConstArrayView(v.data(), dtype, vshape, strides), out.view().Slice(dst));
      }
    }
    return out;
  };
  ChunkGrid out_grid = GridFromSizes(sizes);
  return MakeBlockwise("repeat", out_grid.shape(), dtype, out_grid, {x}, {std::move(map)},
                       std::move(fn), 0, x.spec());
}

// x flattened when no axis is given; the axis, normalized.
Result<std::pair<Array, int>> RepeatTarget(const Array& x, std::optional<int> axis) {
  if (!axis) return std::make_pair(reshape(x, {-1}), 0);
  STRATA_ASSIGN_OR_RETURN(int a, NormalizeAxis(*axis, x.ndim(), "repeat"));
  return std::make_pair(x, a);
}

}  // namespace

Array repeat(const Array& x, Index repeats, std::optional<int> axis) {
  if (!x.ok()) return x;
  if (repeats < 0) {
    return Array::FromStatus(
        InvalidArgumentError(fmt::format("repeat: repeats {} is negative", repeats)));
  }
  Result<std::pair<Array, int>> t = RepeatTarget(x, axis);
  if (!t.ok()) return Array::FromStatus(t.status());
  if (!t->first.ok()) return t->first;
  auto plan = std::make_shared<RepeatPlan>();
  plan->count = repeats;
  if (repeats == 0) plan->cum.assign(t->first.shape()[t->second] + 1, 0);
  return RepeatAlong(t->first, t->second, std::move(plan));
}

Array repeat(const Array& x, const std::vector<Index>& repeats, std::optional<int> axis) {
  if (!x.ok()) return x;
  Result<std::pair<Array, int>> t = RepeatTarget(x, axis);
  if (!t.ok()) return Array::FromStatus(t.status());
  if (!t->first.ok()) return t->first;
  const Index n = t->first.shape()[t->second];
  if (repeats.size() == 1) return repeat(x, repeats[0], axis);
  if (static_cast<Index>(repeats.size()) != n) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("repeat: {} counts given for an axis of extent {}", repeats.size(), n)));
  }
  auto plan = std::make_shared<RepeatPlan>();
  plan->cum.assign(n + 1, 0);
  for (Index i = 0; i < n; ++i) {
    if (repeats[i] < 0) {
      return Array::FromStatus(InvalidArgumentError(
          fmt::format("repeat: count {} at position {} is negative", repeats[i], i)));
    }
    plan->cum[i + 1] = plan->cum[i] + repeats[i];
  }
  return RepeatAlong(t->first, t->second, std::move(plan));
}

Array repeat(const Array& x, const Array& repeats, std::optional<int> axis) {
  if (!x.ok()) return x;
  if (!repeats.ok()) return repeats;
  if (!repeats.dtype().is_integer() || repeats.ndim() > 1) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("repeat: counts must be a 0-d or 1-d integer array, got {} of shape {}",
                    repeats.dtype().name(), ShapeToString(repeats.shape()))));
  }
  // The counts decide the output's shape: computed first.
  Result<NDArray> counts = compute(astype(repeats, DTypeId::kInt64));
  if (!counts.ok()) return Array::FromStatus(counts.status().WithContext("repeat: the counts"));
  std::span<const int64_t> c = counts->values<int64_t>();
  return repeat(x, std::vector<Index>(c.begin(), c.end()), axis);
}

// ----------------------------------------------------------------- roll, tile

Array roll(const Array& x, std::vector<Index> shifts, std::vector<int> axes) {
  if (!x.ok()) return x;
  if (axes.empty()) {
    if (shifts.size() != 1) {
      return Array::FromStatus(InvalidArgumentError("roll: one shift is needed without axes"));
    }
    return reshape(roll(reshape(x, {-1}), shifts, {0}), x.shape());
  }
  if (shifts.size() != axes.size()) {
    if (shifts.size() != 1) {
      return Array::FromStatus(InvalidArgumentError(
          fmt::format("roll: {} shifts for {} axes", shifts.size(), axes.size())));
    }
    shifts.assign(axes.size(), shifts[0]);
  }
  std::vector<Index> total(x.ndim(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    Result<int> a = NormalizeAxis(axes[i], x.ndim(), "roll");
    if (!a.ok()) return Array::FromStatus(a.status());
    total[*a] += shifts[i];  // numpy adds shifts of a repeated axis
  }
  std::vector<AxisSource> sources;
  bool identity = true;
  for (int d = 0; d < x.ndim(); ++d) {
    AxisSource s = internal_api::IdentityAxis(x, d);
    const Index n = x.shape()[d];
    const Index k = n == 0 ? 0 : ((total[d] % n) + n) % n;
    if (k != 0) {
      identity = false;
      s.runs = {{0, k, n - k, 1}, {k, n - k, 0, 1}};
    }
    sources.push_back(std::move(s));
  }
  if (identity) return x;
  return internal_api::OrthogonalGather("roll", x, std::move(sources));
}

Array roll(const Array& x, Index shift, std::optional<int> axis) {
  return roll(x, std::vector<Index>{shift}, axis ? std::vector<int>{*axis} : std::vector<int>{});
}

Array tile(const Array& x_in, std::vector<Index> reps) {
  if (!x_in.ok()) return x_in;
  for (Index r : reps) {
    if (r < 0) {
      return Array::FromStatus(
          InvalidArgumentError(fmt::format("tile: repetition {} is negative", r)));
    }
  }
  Array x = x_in;
  while (x.ndim() < static_cast<int>(reps.size())) x = expand_dims(x, 0);
  while (static_cast<int>(reps.size()) < x.ndim()) reps.insert(reps.begin(), 1);
  std::vector<AxisSource> sources;
  bool identity = true;
  for (int d = 0; d < x.ndim(); ++d) {
    AxisSource s;
    const Index n = x.shape()[d];
    const std::vector<Index> chunks = x.chunks().AxisChunkSizes(d);
    for (Index k = 0; k < reps[d]; ++k) {
      if (n > 0) s.runs.push_back({k * n, n, 0, 1});
      s.out_chunks.insert(s.out_chunks.end(), chunks.begin(), chunks.end());
    }
    identity = identity && reps[d] == 1;
    sources.push_back(std::move(s));
  }
  if (identity) return x;
  Shape shape = x.shape();
  for (int d = 0; d < x.ndim(); ++d) shape[d] *= reps[d];
  if (NumElements(shape) == 0) return zeros(shape, {}, x.dtype(), *x.spec());
  return internal_api::OrthogonalGather("tile", x, std::move(sources));
}

std::vector<Array> unstack(const Array& x, int axis) {
  if (!x.ok()) return {x};
  Result<int> a = NormalizeAxis(axis, x.ndim(), "unstack");
  if (!a.ok()) return {Array::FromStatus(a.status())};
  std::vector<Array> out;
  for (Index i = 0; i < x.shape()[*a]; ++i) {
    std::vector<IndexItem> items(x.ndim(), IndexItem(Slice{}));
    items[*a] = IndexItem(i);
    out.push_back(getitem(x, items));
  }
  return out;
}

Array vecdot(const Array& a, const Array& b, int axis) {
  if (Status s = internal_api::FirstError({&a, &b}); !s.ok()) return Array::FromStatus(s);
  const int rank = std::max(a.ndim(), b.ndim());
  Result<int> ax = NormalizeAxis(axis, rank, "vecdot");
  if (!ax.ok()) return Array::FromStatus(ax.status());
  const int ia = *ax - (rank - a.ndim()), ib = *ax - (rank - b.ndim());
  if (ia < 0 || ib < 0 || a.shape()[ia] != b.shape()[ib]) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("vecdot: shapes {} and {} differ along the contracted axis {}",
                    ShapeToString(a.shape()), ShapeToString(b.shape()), axis)));
  }
  Result<DType> t = PromoteTypes(a.dtype(), b.dtype());
  if (!t.ok()) return Array::FromStatus(t.status().WithContext("vecdot"));
  Array product = t->is_complex() ? conj(a) * b : a * b;
  Array s = sum(product, {*ax});
  return s.ok() && s.dtype() != *t ? astype(s, *t) : s;
}

}  // namespace strata
