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

using internal_api::Lines;
using internal_api::LinesOf;

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

// Rows of a scan (FoldRow below, ScanRowInPlace): NaN taken as the identity
// when skipping. The rows never overlap each other, so the loops vectorise
// (the per-element branches of a generic loop did not: the scan was the
// largest user-space cost of cumsum over 200 MB blocks).
template <typename T>
T Lifted(T v, ScanKind k) {
  return k.skip_nan && IsNanValue(v) ? Identity<T>(k.product) : v;
}

// acc[j] = acc[j] (+) x[j].
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

// acc[j] = prev[j] (+) acc[j] (prev null: acc[j] itself), NaN taken as the
// identity when skipping: ScanRow with x the destination itself, the
// operands in the same order (so the same bits).
template <typename T>
void ScanRowInPlace(const T* __restrict prev, T* __restrict acc, Index n, ScanKind k) {
  if (prev == nullptr) {
    if (k.skip_nan) {
      for (Index j = 0; j < n; ++j) acc[j] = Lifted(acc[j], k);
    }
  } else if (k.skip_nan) {
    for (Index j = 0; j < n; ++j) acc[j] = Apply(k.product, prev[j], Lifted(acc[j], k));
  } else if (k.product) {
    for (Index j = 0; j < n; ++j) acc[j] = Apply(true, prev[j], acc[j]);
  } else {
    for (Index j = 0; j < n; ++j) acc[j] = Apply(false, prev[j], acc[j]);
  }
}

// The scan of x along the middle axis of `l`, in place: x[o, i, j] becomes
// x[o, i - 1, j] (+) x[o, i, j], the row before the first being carry[o, j]
// (null: none).
template <typename T>
void ScanLinesInPlace(T* x, const T* carry, const Lines& l, ScanKind k) {
  for (Index o = 0; o < l.outer; ++o) {
    T* xo = x + o * l.n * l.inner;
    for (Index i = 0; i < l.n; ++i) {
      const T* prev = i == 0 ? (carry ? carry + o * l.inner : nullptr) : xo + (i - 1) * l.inner;
      ScanRowInPlace(prev, xo + i * l.inner, l.inner, k);
    }
  }
}

// out[o, j] = fold of x[o, :, j]: the total of each line of a block.
template <typename T>
void TotalLines(const T* x, T* out, const Lines& l, ScanKind k) {
  for (Index o = 0; o < l.outer; ++o) {
    const T* xo = x + o * l.n * l.inner;
    T* row = out + o * l.inner;
    for (Index j = 0; j < l.inner; ++j) row[j] = Identity<T>(k.product);
    for (Index i = 0; i < l.n; ++i) FoldRow(row, xo + i * l.inner, l.inner, k);
  }
}

// The most bytes of a block one step of its totals reads (a strip along its
// first axis; one index of that axis at least).
constexpr int64_t kTotalsStripBytes = int64_t{32} << 20;

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
    // A block's totals are folded strip by strip (along its first axis)
    // from its input read in parts: a Zarr chunk's blosc blocks a few at a
    // time, never the block decoded whole (it is read whole again, into the
    // output, by the final pass).
    Index slab_elements = 1;  // of one index along the first axis, at most
    for (int d = 1; d < rank; ++d) {
      const std::vector<Index> s = grid.AxisChunkSizes(d);
      slab_elements *= s.empty() ? 0 : *std::max_element(s.begin(), s.end());
    }
    const int64_t slab_bytes = std::max<int64_t>(1, slab_elements * t.size());
    const Index strip_rows = std::max<Index>(1, kTotalsStripBytes / slab_bytes);
    const int64_t strip_bytes =
        std::min(x.node()->max_block_bytes(), strip_rows * slab_elements * t.size());
    BlockFunction totals = [t, axis, kind, strip_rows](const BlockRequest& r) -> Result<NDArray> {
      STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, t, r.box.shape));
      const InputBlock& b = r.inputs[0][0];
      const Index rows = b.box.shape[0];
      const Index step = std::min(strip_rows, rows);
      Shape strip_shape = b.box.shape;
      strip_shape[0] = step;
      NDArray strip;
      if (step > 0) {
        STRATA_ASSIGN_OR_RETURN(strip, NDArray::Allocate(*r.pool, t, strip_shape));
      }
      // Along the first axis the strips fold into one accumulator, in the
      // order of a fold over the whole block (so the same bits).
      VisitDType(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!std::is_same_v<T, bool>) {
          if (axis == 0)
            std::fill_n(out.data_as<T>(), out.num_elements(), Identity<T>(kind.product));
        }
      });
      for (Index i0 = 0; i0 < rows; i0 += step) {
        Box part = b.box;
        part.origin[0] += i0;
        part.shape[0] = std::min(step, rows - i0);
        const ArrayView sv = strip.view().Slice(Box::FromShape(part.shape));
        STRATA_RETURN_IF_ERROR(r.read_part(0, b, part, sv));
        const Lines l = LinesOf(part.shape, axis);
        VisitDType(t, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (!std::is_same_v<T, bool>) {
            const T* in = reinterpret_cast<const T*>(sv.data());
            if (axis == 0) {
              for (Index i = 0; i < l.n; ++i)
                FoldRow(out.data_as<T>(), in + i * l.inner, l.inner, kind);
            } else {
              TotalLines<T>(in, out.data_as<T>() + i0 * (out.num_elements() / rows), l, kind);
            }
          }
        });
      }
      return out;
    };
    Array level =
        MakeBlockwise(std::string(kind.name) + "-totals", tgrid.shape(), t, tgrid, {x},
                      {identity_maps(grid)}, std::move(totals), strip_bytes, x.spec(),
                      NodeKind::kBlockwise, [](Node& node) { node.partial_inputs = {true}; });
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
  // The block is read straight into the output (its input is a partial
  // input read whole: a Zarr chunk decodes into it) and scanned in place:
  // no second block per task, and no fresh one to fault in.
  BlockFunction fn = [t, axis, kind](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, t, r.box.shape));
    if (out.num_elements() == 0) return out;
    STRATA_RETURN_IF_ERROR(r.read_part(0, r.inputs[0][0], r.inputs[0][0].box, out.view()));
    // The first block starts the scan itself (numpy's first element is x[0],
    // not identity (+) x[0]: they differ for complex NaN products).
    const std::byte* c =
        r.inputs.size() > 1 && r.block[axis] > 0 ? r.inputs[1][0].view.data() : nullptr;
    const Lines l = LinesOf(out.shape(), axis);
    VisitDType(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>) {
        ScanLinesInPlace<T>(out.data_as<T>(), reinterpret_cast<const T*>(c), l, kind);
      }
    });
    return out;
  };
  result = MakeBlockwise(kind.name, x.shape(), t, grid, std::move(inputs), std::move(maps),
                         std::move(fn), 0, x.spec(), NodeKind::kBlockwise,
                         [](Node& node) { node.partial_inputs = {true}; });
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
  // Output block k (rows [o, o + n)) reads rows [o, o + n + 1): rows
  // [o, o + n) of input block k, and row o + n, of the same block (the last)
  // or the first of block k + 1. Both are read as parts
  // (Node::partial_inputs): rows [o, o + n) straight into the output, which
  // is then differenced in place, and the one row from the next block, not
  // that block decoded whole. (Obtaining both blocks whole decoded twice the
  // input of a diff along a chunked axis and held three blocks per task.)
  std::vector<std::vector<Index>> own(sizes.size()), next(sizes.size());
  for (size_t k = 0; k < sizes.size(); ++k) {
    own[k] = {static_cast<Index>(k)};
    if (grid.block_size(axis, static_cast<Index>(k)) == sizes[k]) {
      next[k] = {static_cast<Index>(k) + 1};
    }
  }
  std::vector<std::vector<Index>> out_sizes(x.ndim());
  for (int d = 0; d < x.ndim(); ++d) out_sizes[d] = d == axis ? sizes : grid.AxisChunkSizes(d);
  InputMap own_map = InputMap::IdentityMap(grid.grid_shape());
  own_map.axes[axis] = AxisMap::Table(axis, own, grid.grid_shape()[axis]);
  InputMap next_map = InputMap::IdentityMap(grid.grid_shape());
  next_map.axes[axis] = AxisMap::Table(axis, next, grid.grid_shape()[axis]);
  const DType dtype = x.dtype();
  const BinaryOp op = dtype.is_bool() ? BinaryOp::kNotEqual : BinaryOp::kSubtract;
  BlockFunction fn = [dtype, axis, op](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    const Index n = r.box.shape[axis];
    // Rows [from, from + count) of `view` (positions in the view).
    auto rows = [axis](const auto& view, Index from, Index count) {
      Box box = Box::FromShape(view.shape());
      box.origin[axis] = from;
      box.shape[axis] = count;
      return view.Slice(box);
    };
    const InputBlock& own = r.inputs[0][0];
    Box part = own.box;
    part.shape[axis] = n;
    STRATA_RETURN_IF_ERROR(r.read_part(0, own, part, out.view()));
    // Row o + n.
    const bool in_next = !r.inputs[1].empty();
    const InputBlock& holder = in_next ? r.inputs[1][0] : own;
    part = holder.box;
    part.origin[axis] = own.box.origin[axis] + n;
    part.shape[axis] = 1;
    STRATA_ASSIGN_OR_RETURN(NDArray row, NDArray::Allocate(*r.pool, dtype, part.shape));
    STRATA_RETURN_IF_ERROR(r.read_part(in_next ? 1 : 0, holder, part, row.view()));
    // Row i becomes row i + 1 minus row i, in increasing i: row i + 1 is
    // still the input's when row i is written. (An input may be the output
    // itself, not a view overlapping it partly: one row at a time.)
    const ArrayView dst = out.view();
    for (Index i = 0; i + 1 < n; ++i) {
      STRATA_RETURN_IF_ERROR(
          ApplyBinary(op, rows(dst, i + 1, 1), rows(dst, i, 1), rows(dst, i, 1)));
    }
    STRATA_RETURN_IF_ERROR(ApplyBinary(op, row.view(), rows(dst, n - 1, 1), rows(dst, n - 1, 1)));
    return out;
  };
  ChunkGrid g = GridFromSizes(out_sizes);
  // The row o + n.
  int64_t row_bytes = dtype.size();
  for (int d = 0; d < x.ndim(); ++d) {
    if (d == axis) continue;
    const std::vector<Index> s = grid.AxisChunkSizes(d);
    row_bytes *= s.empty() ? 0 : *std::max_element(s.begin(), s.end());
  }
  return MakeBlockwise("diff", g.shape(), dtype, g, {x, x},
                       {std::move(own_map), std::move(next_map)}, std::move(fn), row_bytes,
                       x.spec(), NodeKind::kBlockwise, [](Node& node) {
                         node.partial_inputs = {true, true};
                       });
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
