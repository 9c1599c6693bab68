// api/scans.h: tree scans and diff.
#include "strata/api/scans.h"

#include <fmt/format.h>

#include <algorithm>

#include "strata/api/array.h"
#include "strata/api/creation.h"
#include "strata/api/creation_extras.h"
#include "strata/api/elementwise.h"
#include "strata/api/indexing.h"
#include "strata/api/internal.h"
#include "strata/api/manipulation.h"
#include "strata/core/dtype_dispatch.h"

namespace strata {

using internal_api::GridFromSizes;
using internal_api::MakeBlockwise;

namespace {

struct ScanKind {
  bool product = false;
  bool skip_nan = false;
  const char* name = "cumulative_sum";
};

template <typename T>
bool IsNanValue(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else if constexpr (kIsComplex<T>) {
    return v.real() != v.real() || v.imag() != v.imag();
  } else {
    return false;
  }
}

// a + b or a * b, wrapping for integers (numpy's overflow).
template <typename T>
T Apply(bool product, T a, T b) {
  if constexpr (kIsComplex<T>) {
    // numpy's complex product (no C99 Annex G recovery of infinities).
    if (!product) return a + b;
    return T(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return product ? static_cast<T>(static_cast<U>(a) * static_cast<U>(b))
                   : static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return product ? a * b : a + b;
  }
}

template <typename T>
T Identity(bool product) {
  return product ? T(1) : T(0);
}

struct Lines {
  Index outer = 1, n = 1, inner = 1;
};

Lines LinesOf(const Shape& shape, int axis) {
  Lines l;
  for (int d = 0; d < axis; ++d) l.outer *= shape[d];
  l.n = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d) l.inner *= shape[d];
  return l;
}

// A contiguous view of `v` (a copy from `pool` when it is strided).
Result<ConstArrayView> Dense(const ConstArrayView& v, MemoryPool& pool, NDArray& keep) {
  if (v.is_contiguous()) return v;
  STRATA_ASSIGN_OR_RETURN(keep, NDArray::CopyOf(pool, v));
  return ConstArrayView(keep.view());
}

// One row of a scan: dst[j] = prev[j] (+) x[j] (prev null: x[j] itself), or,
// in place, acc[j] = acc[j] (+) x[j]; NaN taken as the identity when
// skipping. The rows never overlap x, and dst never overlaps prev, so the
// loops vectorise (the per-element branches of a generic loop did not: the
// scan was the largest user-space cost of cumsum over 200 MB blocks).
template <typename T>
T Lifted(T v, ScanKind k) {
  return k.skip_nan && IsNanValue(v) ? Identity<T>(k.product) : v;
}

template <typename T>
void ScanRow(const T* __restrict prev, const T* __restrict x, T* __restrict dst, Index n,
             ScanKind k) {
  if (prev == nullptr) {
    if (k.skip_nan) {
      for (Index j = 0; j < n; ++j) dst[j] = Lifted(x[j], k);
    } else {
      for (Index j = 0; j < n; ++j) dst[j] = x[j];
    }
  } else if (k.skip_nan) {
    for (Index j = 0; j < n; ++j) dst[j] = Apply(k.product, prev[j], Lifted(x[j], k));
  } else if (k.product) {
    for (Index j = 0; j < n; ++j) dst[j] = Apply(true, prev[j], x[j]);
  } else {
    for (Index j = 0; j < n; ++j) dst[j] = Apply(false, prev[j], x[j]);
  }
}

template <typename T>
void FoldRow(T* __restrict acc, const T* __restrict x, Index n, ScanKind k) {
  if (k.skip_nan) {
    for (Index j = 0; j < n; ++j) acc[j] = Apply(k.product, acc[j], Lifted(x[j], k));
  } else if (k.product) {
    for (Index j = 0; j < n; ++j) acc[j] = Apply(true, acc[j], x[j]);
  } else {
    for (Index j = 0; j < n; ++j) acc[j] = Apply(false, acc[j], x[j]);
  }
}

// out[o, 0, j] = x[o, 0, j] (+) carry[o, j] ... along the middle axis; or,
// with `totals`, out[o, j] = fold of x[o, :, j].
template <typename T>
void ScanLines(const T* x, const T* carry, T* out, const Lines& l, ScanKind k, bool totals) {
  for (Index o = 0; o < l.outer; ++o) {
    const T* xo = x + o * l.n * l.inner;
    if (totals) {
      T* row = out + o * l.inner;
      for (Index j = 0; j < l.inner; ++j) row[j] = Identity<T>(k.product);
      for (Index i = 0; i < l.n; ++i) FoldRow(row, xo + i * l.inner, l.inner, k);
      continue;
    }
    for (Index i = 0; i < l.n; ++i) {
      T* dst = out + (o * l.n + i) * l.inner;
      const T* prev =
          i == 0 ? (carry ? carry + o * l.inner : nullptr) : out + (o * l.n + i - 1) * l.inner;
      ScanRow(prev, xo + i * l.inner, dst, l.inner, k);
    }
  }
}

int ChooseSplit(int64_t state_bytes, const Spec& spec) {
  const int64_t budget = internal_api::TaskMemoryBudget(spec);
  return static_cast<int>(
      std::clamp<int64_t>(budget / std::max<int64_t>(1, 3 * state_bytes), 2, 16));
}

Array Scan(const Array& x_in, std::optional<int> axis_in, std::optional<DType> dtype_in,
           bool include_initial, ScanKind kind) {
  if (!x_in.ok()) return x_in;
  Array x = axis_in ? x_in : reshape(x_in, {-1});
  if (!x.ok()) return x;
  Result<int> ax = internal_api::NormalizeAxis(axis_in.value_or(0), x.ndim(), kind.name);
  if (!ax.ok()) return Array::FromStatus(ax.status());
  const int axis = *ax;
  DType t = x.dtype();
  if (t.is_bool() || t.is_signed_integer()) t = DTypeId::kInt64;
  if (t.is_unsigned_integer()) t = DTypeId::kUInt64;
  if (dtype_in) t = *dtype_in;
  if (t.is_bool()) {
    return Array::FromStatus(
        InvalidArgumentError(fmt::format("{}: dtype bool is not supported", kind.name)));
  }
  if (x.dtype() != t) x = astype(x, t);
  Array result;
  const ChunkGrid& grid = x.chunks();
  const Index nb = grid.grid_shape()[axis];
  const int rank = x.ndim();
  const int64_t copy_bytes =
      x.node()->kind == NodeKind::kMemorySource ? x.node()->max_block_bytes() : 0;
  auto other_sizes = [&](const ChunkGrid& g, std::vector<Index> along) {
    std::vector<std::vector<Index>> s(rank);
    for (int d = 0; d < rank; ++d) s[d] = d == axis ? along : g.AxisChunkSizes(d);
    return s;
  };
  auto identity_maps = [&](const ChunkGrid& g) { return InputMap::IdentityMap(g.grid_shape()); };
  Array carry;
  if (nb > 1) {
    // 1. Per-block totals.
    std::vector<std::vector<Index>> tsizes = other_sizes(grid, std::vector<Index>(nb, 1));
    ChunkGrid tgrid = GridFromSizes(tsizes);
    BlockFunction totals = [t, axis, kind](const BlockRequest& r) -> Result<NDArray> {
      STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, t, r.box.shape));
      NDArray keep;
      STRATA_ASSIGN_OR_RETURN(ConstArrayView in, Dense(r.inputs[0][0].view, *r.pool, keep));
      const Lines l = LinesOf(in.shape(), axis);
      VisitDType(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!std::is_same_v<T, bool>) {
          ScanLines<T>(reinterpret_cast<const T*>(in.data()), nullptr, out.data_as<T>(), l, kind,
                       true);
        }
      });
      return out;
    };
    Array level = MakeBlockwise(std::string(kind.name) + "-totals", tgrid.shape(), t, tgrid, {x},
                                {identity_maps(grid)}, std::move(totals), copy_bytes, x.spec());
    // 2. Up-sweep: totals of split consecutive blocks, until one is left.
    const int64_t state_bytes = level.node()->max_block_bytes();
    const int split = ChooseSplit(state_bytes, *x.spec());
    std::vector<Array> levels = {level};
    auto fold_blocks = [t, kind](const std::vector<InputBlock>& blocks, const ArrayView& out,
                                 const ConstArrayView* first) {
      VisitDType(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!std::is_same_v<T, bool>) {
          T* o = reinterpret_cast<T*>(out.data());
          const Index n = out.num_elements();
          if (first) {
            const ConstArrayView dense = *first;
            for (Index j = 0; j < n; ++j) o[j] = reinterpret_cast<const T*>(dense.data())[j];
          } else {
            for (Index j = 0; j < n; ++j) o[j] = Identity<T>(kind.product);
          }
          for (const InputBlock& b : blocks) {
            const T* v = reinterpret_cast<const T*>(b.view.data());
            for (Index j = 0; j < n; ++j) o[j] = Apply(kind.product, o[j], v[j]);
          }
        }
      });
    };
    while (levels.back().chunks().grid_shape()[axis] > 1) {
      const Array& below = levels.back();
      const Index n = below.chunks().grid_shape()[axis];
      const Index groups = (n + split - 1) / split;
      std::vector<std::vector<Index>> table(groups);
      for (Index g = 0; g < groups; ++g) {
        for (Index k = g * split; k < std::min(n, (g + 1) * split); ++k) table[g].push_back(k);
      }
      ChunkGrid g = GridFromSizes(other_sizes(below.chunks(), std::vector<Index>(groups, 1)));
      InputMap map = identity_maps(below.chunks());
      map.axes[axis] = AxisMap::Table(axis, table, n);
      BlockFunction fn = [t, fold_blocks](const BlockRequest& r) -> Result<NDArray> {
        STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, t, r.box.shape));
        fold_blocks(r.inputs[0], out.view(), nullptr);
        return out;
      };
      levels.push_back(MakeBlockwise(fmt::format("{}-up-{}", kind.name, levels.size()), g.shape(),
                                     t, g, {below}, {std::move(map)}, std::move(fn), 0, x.spec()));
    }
    // 3. Down-sweep: the carry into each block of each level.
    const Array& top = levels.back();
    NDArray identity = *NDArray::Allocate(*MemoryPool::Default(), t, {});
    VisitDType(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>) *identity.data_as<T>() = Identity<T>(kind.product);
    });
    auto id_bytes = std::make_shared<NDArray>(std::move(identity));
    carry =
        internal_api::MakeVirtual(std::string(kind.name) + "-carry-top", top.shape(), top.chunks(),
                                  t, x.spec(), [id_bytes](const Box&, const ArrayView& out) {
                                    FillArray(out, id_bytes->bytes());
                                    return Status::Ok();
                                  });
    for (int r = static_cast<int>(levels.size()) - 2; r >= 0; --r) {
      const Array& lv = levels[r];
      const Index n = lv.chunks().grid_shape()[axis];
      std::vector<std::vector<Index>> parent(n), siblings(n);
      for (Index k = 0; k < n; ++k) {
        parent[k] = {k / split};
        for (Index j = (k / split) * split; j < k; ++j) siblings[k].push_back(j);
      }
      InputMap pmap = identity_maps(carry.chunks());
      pmap.axes[axis] = AxisMap::Table(axis, parent, carry.chunks().grid_shape()[axis]);
      InputMap smap = identity_maps(lv.chunks());
      smap.axes[axis] = AxisMap::Table(axis, siblings, n);
      BlockFunction fn = [t, fold_blocks](const BlockRequest& q) -> Result<NDArray> {
        STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*q.pool, t, q.box.shape));
        fold_blocks(q.inputs[1], out.view(), &q.inputs[0][0].view);
        return out;
      };
      carry = MakeBlockwise(fmt::format("{}-down-{}", kind.name, r), lv.shape(), t, lv.chunks(),
                            {carry, lv}, {std::move(pmap), std::move(smap)}, std::move(fn), 0,
                            x.spec());
    }
  }
  // 4. Each block scanned from its carry.
  std::vector<Array> inputs = {x};
  std::vector<InputMap> maps = {identity_maps(grid)};
  if (carry.ok()) {
    inputs.push_back(carry);
    maps.push_back(identity_maps(carry.chunks()));
  }
  BlockFunction fn = [t, axis, kind](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, t, r.box.shape));
    if (out.num_elements() == 0) return out;
    NDArray keep;
    STRATA_ASSIGN_OR_RETURN(ConstArrayView in, Dense(r.inputs[0][0].view, *r.pool, keep));
    // The first block starts the scan itself (numpy's first element is x[0],
    // not identity (+) x[0]: they differ for complex NaN products).
    const std::byte* c =
        r.inputs.size() > 1 && r.block[axis] > 0 ? r.inputs[1][0].view.data() : nullptr;
    const Lines l = LinesOf(in.shape(), axis);
    VisitDType(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>) {
        ScanLines<T>(reinterpret_cast<const T*>(in.data()), reinterpret_cast<const T*>(c),
                     out.data_as<T>(), l, kind, false);
      }
    });
    return out;
  };
  result = MakeBlockwise(kind.name, x.shape(), t, grid, std::move(inputs), std::move(maps),
                         std::move(fn), copy_bytes, x.spec());
  if (!include_initial) return result;
  std::vector<IndexItem> first(rank, IndexItem(Slice{}));
  first[axis] = IndexItem(Slice{0, 1});
  Shape slab_shape = x.shape();
  slab_shape[axis] = 1;
  Array slab = x.shape()[axis] > 0
                   ? full_like(getitem(x, first), Scalar(kind.product ? 1 : 0))
                   : full(slab_shape, Scalar(kind.product ? 1 : 0), {}, t, *x.spec());
  return concat({slab, result}, axis);
}

// One difference along `axis`.
Array DiffOnce(const Array& x, int axis) {
  const Index m = x.shape()[axis];
  Shape shape = x.shape();
  shape[axis] = std::max<Index>(0, m - 1);
  if (NumElements(shape) == 0) return zeros(shape, {}, x.dtype(), *x.spec());
  const ChunkGrid& grid = x.chunks();
  std::vector<Index> sizes = grid.AxisChunkSizes(axis);
  sizes.back() -= 1;
  if (sizes.back() == 0) sizes.pop_back();
  std::vector<std::vector<Index>> table(sizes.size());
  Index o = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    auto [k0, k1] = grid.BlocksIntersecting(axis, o, o + sizes[k] + 1);
    for (Index b = k0; b < k1; ++b) table[k].push_back(b);
    o += sizes[k];
  }
  std::vector<std::vector<Index>> out_sizes(x.ndim());
  InputMap map = InputMap::IdentityMap(grid.grid_shape());
  for (int d = 0; d < x.ndim(); ++d) out_sizes[d] = d == axis ? sizes : grid.AxisChunkSizes(d);
  map.axes[axis] = AxisMap::Table(axis, table, grid.grid_shape()[axis]);
  const DType dtype = x.dtype();
  const BinaryOp op = dtype.is_bool() ? BinaryOp::kNotEqual : BinaryOp::kSubtract;
  // Straight from the input blocks into the output: within a block, its rows
  // 1.. minus its rows ..-1; across a block's end, the next block's first row
  // minus its last. (Assembling the block and a row first cost a copy of the
  // block, a fresh buffer to fault in, per task.)
  BlockFunction fn = [dtype, axis, op](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    const Index o = r.box.origin[axis];
    const Index n = r.box.shape[axis];
    const std::vector<InputBlock>& blocks = r.inputs[0];
    // Rows [from, from + count) (array positions along axis) of a view whose
    // first row is at `origin`.
    auto rows = [axis](const auto& view, Index origin, Index from, Index count) {
      Box box = Box::FromShape(view.shape());
      box.origin[axis] = from - origin;
      box.shape[axis] = count;
      return view.Slice(box);
    };
    const ArrayView dst = out.view();
    for (size_t k = 0; k < blocks.size(); ++k) {
      const InputBlock& b = blocks[k];
      const Index b0 = b.box.origin[axis];
      const Index last = b.box.end(axis) - 1;
      const Index lo = std::max(o, b0);
      const Index hi = std::min(o + n, last);
      if (hi > lo) {
        STRATA_RETURN_IF_ERROR(ApplyBinary(op, rows(b.view, b0, lo + 1, hi - lo),
                                           rows(b.view, b0, lo, hi - lo),
                                           rows(dst, o, lo, hi - lo)));
      }
      if (last >= o && last < o + n) {
        STRATA_CHECK(k + 1 < blocks.size()) << "diff: no block after position " << last;
        const InputBlock& next = blocks[k + 1];
        STRATA_RETURN_IF_ERROR(ApplyBinary(op, rows(next.view, next.box.origin[axis], last + 1, 1),
                                           rows(b.view, b0, last, 1), rows(dst, o, last, 1)));
      }
    }
    return out;
  };
  ChunkGrid g = GridFromSizes(out_sizes);
  return MakeBlockwise("diff", g.shape(), dtype, g, {x}, {std::move(map)}, std::move(fn), 0,
                       x.spec());
}

// prepend/append as an array of x's shape off `axis`.
Result<Array> Edge(const Array& x, const Array& e, int axis, const char* what) {
  if (!e.ok()) return e.status();
  Array v = e.dtype() == x.dtype() ? e : astype(e, x.dtype());
  if (v.ndim() == 0) {
    Shape s = x.shape();
    s[axis] = 1;
    Shape chunks = x.chunksize();
    chunks[axis] = 1;
    Shape one(x.ndim(), 1);
    return broadcast_to(reshape(v, one), s, chunks);
  }
  bool ok = v.ndim() == x.ndim();
  for (int d = 0; d < x.ndim() && ok; ++d) ok = d == axis || v.shape()[d] == x.shape()[d];
  if (!ok) {
    return InvalidArgumentError(fmt::format("diff: {} of shape {} does not match {} off axis {}",
                                            what, ShapeToString(v.shape()),
                                            ShapeToString(x.shape()), axis));
  }
  return v;
}

}  // namespace

Array cumulative_sum(const Array& x, std::optional<int> axis, std::optional<DType> dtype,
                     bool include_initial) {
  return Scan(x, axis, dtype, include_initial, {false, false, "cumulative_sum"});
}

Array cumulative_prod(const Array& x, std::optional<int> axis, std::optional<DType> dtype,
                      bool include_initial) {
  return Scan(x, axis, dtype, include_initial, {true, false, "cumulative_prod"});
}

Array nancumsum(const Array& x, std::optional<int> axis) {
  return Scan(x, axis, std::nullopt, false, {false, true, "nancumsum"});
}

Array nancumprod(const Array& x, std::optional<int> axis) {
  return Scan(x, axis, std::nullopt, false, {true, true, "nancumprod"});
}

Array diff(const Array& x_in, int axis_in, int n, std::optional<Array> prepend,
           std::optional<Array> append) {
  if (!x_in.ok()) return x_in;
  if (n < 0) {
    return Array::FromStatus(InvalidArgumentError(fmt::format("diff: order n={} must be >= 0", n)));
  }
  if (x_in.ndim() == 0) {
    return Array::FromStatus(InvalidArgumentError("diff: the input must have rank >= 1"));
  }
  Result<int> ax = internal_api::NormalizeAxis(axis_in, x_in.ndim(), "diff");
  if (!ax.ok()) return Array::FromStatus(ax.status());
  Array x = x_in;
  if (prepend || append) {
    std::vector<Array> parts;
    if (prepend) {
      Result<Array> p = Edge(x_in, *prepend, *ax, "prepend");
      if (!p.ok()) return Array::FromStatus(p.status());
      parts.push_back(*p);
    }
    parts.push_back(x_in);
    if (append) {
      Result<Array> a = Edge(x_in, *append, *ax, "append");
      if (!a.ok()) return Array::FromStatus(a.status());
      parts.push_back(*a);
    }
    x = concat(parts, *ax);
  }
  for (int i = 0; i < n && x.ok(); ++i) x = DiffOnce(x, *ax);
  return x;
}

}  // namespace strata
