// Linear algebra: tensordot and matmul, built as Cubed builds them so that
// every task stays within allowed_mem however long the contracted axes are.
//
//   1. The chunks of each pair of contracted axes (and of shared batch axes)
//      are unified: the operand whose chunks differ is rechunked.
//   2. One blockwise "partial products" op computes, for every combination of
//      output block and block l along the contracted axes, a_block(l) @
//      b_block(l). Its output has the output's axes plus one axis per
//      contracted axis that spans several blocks, of chunk size 1 and extent
//      the number of blocks along it.
//   3. Those extra axes are summed by the tree reduction (reduce(kSum)),
//      which merges a few partial products per task.
//
// When the partial products of the operands' chunks would not fit in
// allowed_mem (a large output block from thin operands, say), the chunks are
// halved, largest saving first, until they do (FitChunksToBudget).
#include "strata/api/linalg.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <tuple>
#include <utility>

#include "strata/api/batch_element.h"
#include "strata/api/creation.h"
#include "strata/api/elementwise.h"
#include "strata/api/internal.h"
#include "strata/api/reduction.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/core/kernels/linalg.h"
#include "strata/plan/memory_model.h"

namespace strata {

using internal_api::BatchElement;
using internal_api::GridFromSizes;
using internal_api::MakeBlockwise;
using internal_api::NormalizeAxis;

namespace {

// One operand of a contraction: where its axes go.
struct Operand {
  Array array;
  // Per output batch axis: the operand's axis, or -1 when it has none there
  // (matmul of a 2-D matrix with a stack of matrices).
  std::vector<int> batch;
  std::vector<int> free;        // its uncontracted axes, in output order
  std::vector<int> contracted;  // paired in order with the other operand's
};

// out[batch..., a.free..., b.free...] = sum over the contracted axes of
// a * b, with batch axes broadcast (an operand's extent 1 against another's n).
struct Contraction {
  std::string op;
  Operand a, b;
  Shape batch_shape;
};

// The sizes of blocks of a regular grid of `chunk` over `extent`.
std::vector<Index> RegularSizes(Index extent, Index chunk) {
  std::vector<Index> s;
  for (Index left = extent; left > 0; left -= chunk) s.push_back(std::min(left, chunk));
  return s;
}

Index MaxOf(const std::vector<Index>& sizes) {
  Index m = 1;
  for (Index s : sizes) m = std::max(m, s);
  return m;
}

// The block's axes arranged as (batch..., free..., contracted...): batch axes
// the operand lacks get extent 1 and stride 0.
ConstArrayView Arrange(const ConstArrayView& v, const Operand& op) {
  Shape shape, strides;
  for (int ax : op.batch) {
    shape.push_back(ax < 0 ? 1 : v.shape()[ax]);
    strides.push_back(ax < 0 ? 0 : v.byte_strides()[ax]);
  }
  for (int ax : op.free) {
    shape.push_back(v.shape()[ax]);
    strides.push_back(v.byte_strides()[ax]);
  }
  for (int ax : op.contracted) {
    shape.push_back(v.shape()[ax]);
    strides.push_back(v.byte_strides()[ax]);
  }
  return ConstArrayView(v.data(), v.dtype(), std::move(shape), std::move(strides));
}

// Axes [begin, end) of `v` merged into one (extent, stride), if their strides
// allow it without a copy.
bool MergeAxes(const ConstArrayView& v, int begin, int end, Index& extent, Index& stride) {
  extent = 1;
  stride = 0;
  int last = -1;
  for (int i = begin; i < end; ++i) {
    if (v.shape()[i] == 0) {
      extent = 0;
      return true;
    }
    if (v.shape()[i] == 1) continue;
    if (last >= 0 && v.byte_strides()[last] != v.byte_strides()[i] * v.shape()[i]) return false;
    extent *= v.shape()[i];
    stride = v.byte_strides()[i];
    last = i;
  }
  return true;
}

// The matrix (rows = axes [begin, split), columns = [split, end)) of `v`, or
// false when the axes do not merge.
bool AsMatrix(const ConstArrayView& v, int begin, int split, int end, ConstArrayView& out) {
  Index m, sm, n, sn;
  if (!MergeAxes(v, begin, split, m, sm) || !MergeAxes(v, split, end, n, sn)) return false;
  out = ConstArrayView(v.data(), v.dtype(), {m, n}, {sm, sn});
  return true;
}

// Computes one block of the partial products.
class PartialProducts {
 public:
  PartialProducts(const Contraction& c, DType dtype)
      : a_(StripArray(c.a)), b_(StripArray(c.b)), dtype_(dtype),
        num_batch_(static_cast<int>(c.batch_shape.size())) {}

  Result<NDArray> operator()(const BlockRequest& r) const {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Zeros(*r.pool, dtype_, r.box.shape));
    const int nb = num_batch_;
    const int fa = static_cast<int>(a_.free.size()), fb = static_cast<int>(b_.free.size());
    const int nk = static_cast<int>(a_.contracted.size());
    // a as (batch, free_a, k), b as (batch, k, free_b): copies in the result
    // dtype when the dtype differs or the axes do not merge into a matrix.
    NDArray a_copy, b_copy;
    ConstArrayView av = Arrange(r.inputs[0][0].view, a_);
    ConstArrayView bv = Arrange(r.inputs[1][0].view, b_);
    {
      std::vector<int> perm(nb + nk + fb);
      std::iota(perm.begin(), perm.begin() + nb, 0);
      for (int i = 0; i < nk; ++i) perm[nb + i] = nb + fb + i;
      for (int i = 0; i < fb; ++i) perm[nb + nk + i] = nb + i;
      bv = bv.Transpose(perm);
    }
    ConstArrayView probe;
    if (av.dtype() != dtype_ || !AsMatrix(av, nb, nb + fa, nb + fa + nk, probe)) {
      STRATA_ASSIGN_OR_RETURN(a_copy, CopyAs(av, r.pool));
      av = std::as_const(a_copy).view();
    }
    if (bv.dtype() != dtype_ || !AsMatrix(bv, nb, nb + nk, nb + nk + fb, probe)) {
      STRATA_ASSIGN_OR_RETURN(b_copy, CopyAs(bv, r.pool));
      bv = std::as_const(b_copy).view();
    }
    // One matrix product per batch element (broadcast operands repeat).
    Shape batch(r.box.shape.begin(), r.box.shape.begin() + nb);
    Shape out_matrix(r.box.shape.begin() + nb, r.box.shape.begin() + nb + fa + fb);
    const Index m = NumElements(Shape(out_matrix.begin(), out_matrix.begin() + fa));
    const Index n = NumElements(Shape(out_matrix.begin() + fa, out_matrix.end()));
    const Index out_step = m * n * dtype_.size();
    Shape idx(nb, 0);
    Index linear = 0;
    do {
      ConstArrayView a2, b2;
      STRATA_CHECK(AsMatrix(BatchElement(av, idx), 0, fa, fa + nk, a2));
      STRATA_CHECK(AsMatrix(BatchElement(bv, idx), 0, nk, nk + fb, b2));
      ArrayView o2 = ArrayView::Contiguous(out.data() + linear * out_step, dtype_, {m, n});
      STRATA_RETURN_IF_ERROR(MatMulAccumulate(a2, b2, o2));
      ++linear;
    } while (NextIndex(idx, batch));
    return out;
  }

 private:
  // The operand without its Array (the function must not keep nodes alive).
  static Operand StripArray(const Operand& o) { return Operand{Array(), o.batch, o.free, o.contracted}; }

  Result<NDArray> CopyAs(const ConstArrayView& v, MemoryPool* pool) const {
    STRATA_ASSIGN_OR_RETURN(NDArray c, NDArray::Allocate(*pool, dtype_, v.shape()));
    if (v.dtype() == dtype_) {
      CopyArray(v, c.view());
    } else {
      STRATA_RETURN_IF_ERROR(Cast(v, c.view()));
    }
    return c;
  }

  Operand a_, b_;
  DType dtype_;
  int num_batch_;
};

// Chunk sizes chosen for every axis of both operands.
struct ContractionChunks {
  std::vector<std::vector<Index>> a, b;
};

// Bytes of one partial-products task and of the reduction's tasks after it,
// for nominal chunk sizes (the planner's model, shared/DESIGN.md).
struct ChunkModel {
  const Contraction& c;
  DType dtype;
  bool copy_a, copy_b;

  int64_t Project(const Shape& batch, const Shape& free_a, const Shape& free_b,
                  const Shape& contracted) const {
    const Index k = NumElements(contracted);
    Index a_batch = 1, b_batch = 1;
    for (size_t j = 0; j < batch.size(); ++j) {
      if (Spans(c.a, j)) a_batch *= batch[j];
      if (Spans(c.b, j)) b_batch *= batch[j];
    }
    const int64_t a_elems = a_batch * NumElements(free_a) * k;
    const int64_t b_elems = b_batch * NumElements(free_b) * k;
    const int64_t out_elems = NumElements(batch) * NumElements(free_a) * NumElements(free_b);
    int64_t task = a_elems * c.a.array.dtype().size() + b_elems * c.b.array.dtype().size() +
                   (copy_a ? a_elems * dtype.size() : 0) + (copy_b ? b_elems * dtype.size() : 0) +
                   out_elems * dtype.size();
    // The tree reduction: a combine task holds 2 states per reduced axis,
    // their gathered copy and its output (reduction.cc with split_every 2).
    int reduced = 0;
    for (size_t i = 0; i < contracted.size(); ++i) {
      reduced += contracted[i] < c.a.array.shape()[c.a.contracted[i]];
    }
    if (reduced > 0) {
      const int64_t state = out_elems * (dtype.is_complex() ? 16 : 8);
      task = std::max(task, ((int64_t{2} << reduced) + 1) * state);
    }
    return task;
  }

  bool Spans(const Operand& o, size_t j) const {
    return o.batch[j] >= 0 && o.array.shape()[o.batch[j]] == c.batch_shape[j];
  }
};

// Unifies the chunks of contracted (and shared batch) axes, taking the
// smaller chunk where the operands differ, then halves chunks until a task
// fits in the budget (FitChunksToBudget, over the roles' chunks).
ContractionChunks ChooseChunks(const Contraction& c, DType dtype, bool copy_a, bool copy_b) {
  const Array& a = c.a.array;
  const Array& b = c.b.array;
  auto unify = [](const Array& x, int xa, const Array& y, int ya) {
    std::vector<Index> sx = x.chunks().AxisChunkSizes(xa), sy = y.chunks().AxisChunkSizes(ya);
    if (sx == sy) return sx;
    Index chunk = std::min(x.chunksize()[xa], y.chunksize()[ya]);
    return RegularSizes(x.shape()[xa], chunk);
  };
  ChunkModel model{c, dtype, copy_a, copy_b};
  ContractionChunks out;
  for (int i = 0; i < a.ndim(); ++i) out.a.push_back(a.chunks().AxisChunkSizes(i));
  for (int i = 0; i < b.ndim(); ++i) out.b.push_back(b.chunks().AxisChunkSizes(i));
  const size_t nb = c.batch_shape.size();
  for (size_t j = 0; j < nb; ++j) {
    const bool sa = model.Spans(c.a, j), sb = model.Spans(c.b, j);
    if (sa && sb) {
      out.a[c.a.batch[j]] = out.b[c.b.batch[j]] = unify(a, c.a.batch[j], b, c.b.batch[j]);
    }
  }
  for (size_t i = 0; i < c.a.contracted.size(); ++i) {
    out.a[c.a.contracted[i]] = out.b[c.b.contracted[i]] =
        unify(a, c.a.contracted[i], b, c.b.contracted[i]);
  }

  // Nominal chunks per role, fitted to the budget (FitChunksToBudget).
  Shape batch(nb), free_a, free_b, contracted;
  for (size_t j = 0; j < nb; ++j) {
    batch[j] = model.Spans(c.a, j) ? MaxOf(out.a[c.a.batch[j]])
               : model.Spans(c.b, j) ? MaxOf(out.b[c.b.batch[j]])
                                     : 1;
  }
  for (int ax : c.a.free) free_a.push_back(MaxOf(out.a[ax]));
  for (int ax : c.b.free) free_b.push_back(MaxOf(out.b[ax]));
  for (int ax : c.a.contracted) contracted.push_back(MaxOf(out.a[ax]));
  const int64_t budget = internal_api::TaskMemoryBudget(*internal_api::SpecOf({&a, &b}));
  // The roles' chunks side by side, as FitChunksToBudget halves them.
  auto split = [&](const Shape& all) {
    auto at = all.begin();
    for (Shape* s : {&batch, &free_a, &free_b, &contracted}) {
      std::copy(at, at + static_cast<std::ptrdiff_t>(s->size()), s->begin());
      at += static_cast<std::ptrdiff_t>(s->size());
    }
  };
  Shape all;
  for (const Shape* s : {&batch, &free_a, &free_b, &contracted}) {
    all.insert(all.end(), s->begin(), s->end());
  }
  const Shape nominal = all;
  all = FitChunksToBudget(
            std::move(all), {},
            [&](const Shape& chunks) {
              split(chunks);
              return model.Project(batch, free_a, free_b, contracted);
            },
            budget)
            .chunks;
  if (all == nominal) return out;
  split(all);
  auto resize = [](std::vector<Index>& sizes, Index extent, Index chunk) {
    if (MaxOf(sizes) > chunk) sizes = RegularSizes(extent, chunk);
  };
  for (size_t j = 0; j < nb; ++j) {
    if (model.Spans(c.a, j)) resize(out.a[c.a.batch[j]], c.batch_shape[j], batch[j]);
    if (model.Spans(c.b, j)) resize(out.b[c.b.batch[j]], c.batch_shape[j], batch[j]);
  }
  for (size_t i = 0; i < c.a.free.size(); ++i) {
    resize(out.a[c.a.free[i]], a.shape()[c.a.free[i]], free_a[i]);
  }
  for (size_t i = 0; i < c.b.free.size(); ++i) {
    resize(out.b[c.b.free[i]], b.shape()[c.b.free[i]], free_b[i]);
  }
  for (size_t i = 0; i < c.a.contracted.size(); ++i) {
    resize(out.a[c.a.contracted[i]], a.shape()[c.a.contracted[i]], contracted[i]);
    resize(out.b[c.b.contracted[i]], b.shape()[c.b.contracted[i]], contracted[i]);
  }
  return out;
}

Array Contract(Contraction c) {
  const Array& a0 = c.a.array;
  const Array& b0 = c.b.array;
  if (a0.dtype().is_bool() || b0.dtype().is_bool()) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("{}: operands must be numeric, got {} and {}", c.op, a0.dtype().name(),
                    b0.dtype().name())));
  }
  Result<DType> promoted = PromoteTypes(a0.dtype(), b0.dtype());
  if (!promoted.ok()) return Array::FromStatus(promoted.status().WithContext(c.op));
  const DType dtype = *promoted;
  for (size_t i = 0; i < c.a.contracted.size(); ++i) {
    const int ia = c.a.contracted[i], ib = c.b.contracted[i];
    if (a0.shape()[ia] != b0.shape()[ib]) {
      return Array::FromStatus(InvalidArgumentError(fmt::format(
          "{}: shapes {} and {} are not aligned: {} (axis {} of a) != {} (axis {} of b)", c.op,
          ShapeToString(a0.shape()), ShapeToString(b0.shape()), a0.shape()[ia], ia,
          b0.shape()[ib], ib)));
    }
  }
  const int nb = static_cast<int>(c.batch_shape.size());
  Shape out_shape = c.batch_shape;
  for (int ax : c.a.free) out_shape.push_back(a0.shape()[ax]);
  for (int ax : c.b.free) out_shape.push_back(b0.shape()[ax]);
  auto spec = internal_api::SpecOf({&a0, &b0});

  Index k_total = 1;
  for (int ax : c.a.contracted) k_total *= a0.shape()[ax];
  if (NumElements(out_shape) == 0 || k_total == 0) {
    // Nothing to multiply: zeros (of nothing, or an empty sum).
    Shape chunks;
    for (int j = 0; j < nb; ++j) {
      const Operand& o = c.a.batch[j] >= 0 && a0.shape()[c.a.batch[j]] == c.batch_shape[j] ? c.a : c.b;
      chunks.push_back(o.array.chunksize()[o.batch[j]]);
    }
    for (int ax : c.a.free) chunks.push_back(a0.chunksize()[ax]);
    for (int ax : c.b.free) chunks.push_back(b0.chunksize()[ax]);
    return zeros(out_shape, chunks, dtype, *spec);
  }

  // A copy is needed when the dtype changes or several axes flatten into one
  // (the planner needs the bound; at run time it is skipped when not needed).
  const bool copy_a = a0.dtype() != dtype || c.a.free.size() > 1 || c.a.contracted.size() > 1;
  const bool copy_b = b0.dtype() != dtype || c.b.free.size() > 1 || c.b.contracted.size() > 1;
  ContractionChunks chunks = ChooseChunks(c, dtype, copy_a, copy_b);
  Array a = internal_api::RechunkToGrid(a0, GridFromSizes(chunks.a));
  Array b = internal_api::RechunkToGrid(b0, GridFromSizes(chunks.b));

  // Output grid: batch, free_a, free_b, then one size-1-chunk axis per
  // contracted axis that spans several blocks.
  std::vector<std::vector<Index>> sizes;
  for (int j = 0; j < nb; ++j) {
    const bool sa = c.a.batch[j] >= 0 && a.shape()[c.a.batch[j]] == c.batch_shape[j];
    sizes.push_back(sa ? chunks.a[c.a.batch[j]] : chunks.b[c.b.batch[j]]);
  }
  for (int ax : c.a.free) sizes.push_back(chunks.a[ax]);
  for (int ax : c.b.free) sizes.push_back(chunks.b[ax]);
  std::vector<int> k_axis(c.a.contracted.size(), -1);  // output axis of each, or -1
  std::vector<int> reduced;
  for (size_t i = 0; i < c.a.contracted.size(); ++i) {
    const Index blocks = static_cast<Index>(chunks.a[c.a.contracted[i]].size());
    if (blocks > 1) {
      k_axis[i] = static_cast<int>(sizes.size());
      reduced.push_back(k_axis[i]);
      sizes.push_back(std::vector<Index>(blocks, 1));
    }
  }
  auto map_for = [&](const Operand& o, const Array& x, int free_offset) {
    InputMap map;
    map.axes.resize(x.ndim(), AxisMap::Fixed({0}, 1));
    const Shape& grid = x.chunks().grid_shape();
    for (int j = 0; j < nb; ++j) {
      const int ax = o.batch[j];
      if (ax >= 0 && x.shape()[ax] == c.batch_shape[j]) map.axes[ax] = AxisMap::Identity(j, grid[ax]);
    }
    for (size_t i = 0; i < o.free.size(); ++i) {
      map.axes[o.free[i]] = AxisMap::Identity(free_offset + static_cast<int>(i), grid[o.free[i]]);
    }
    for (size_t i = 0; i < o.contracted.size(); ++i) {
      if (k_axis[i] >= 0) map.axes[o.contracted[i]] = AxisMap::Identity(k_axis[i], grid[o.contracted[i]]);
    }
    return map;
  };
  std::vector<InputMap> maps = {map_for(c.a, a, nb),
                                map_for(c.b, b, nb + static_cast<int>(c.a.free.size()))};
  const int64_t extra = (copy_a ? a.chunks().max_block_elements() * dtype.size() : 0) +
                        (copy_b ? b.chunks().max_block_elements() * dtype.size() : 0);
  ChunkGrid grid = GridFromSizes(sizes);
  Shape partial_shape = grid.shape();
  Array products =
      MakeBlockwise(reduced.empty() ? c.op : c.op + "-partial", partial_shape, dtype, grid,
                    {a, b}, std::move(maps), PartialProducts(c, dtype), extra, spec);
  if (reduced.empty()) return products;
  // Sum in the tree; the sum of small integers widens, so cast back.
  Array summed = reduce(ReduceOp::kSum, products, reduced);
  return summed.ok() && summed.dtype() != dtype ? astype(summed, dtype) : summed;
}

}  // namespace

Array tensordot(const Array& a, const Array& b, std::vector<int> a_axes, std::vector<int> b_axes) {
  if (Status s = internal_api::FirstError({&a, &b}); !s.ok()) return Array::FromStatus(s);
  if (a_axes.size() != b_axes.size()) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "tensordot: {} axes of a but {} axes of b given", a_axes.size(), b_axes.size())));
  }
  Contraction c;
  c.op = "tensordot";
  c.a.array = a;
  c.b.array = b;
  for (auto [x, axes, operand] : {std::tuple{&a, &a_axes, &c.a}, std::tuple{&b, &b_axes, &c.b}}) {
    std::vector<bool> used(x->ndim(), false);
    for (int axis : *axes) {
      Result<int> ax = NormalizeAxis(axis, x->ndim(), "tensordot");
      if (!ax.ok()) return Array::FromStatus(ax.status());
      if (used[*ax]) {
        return Array::FromStatus(
            InvalidArgumentError(fmt::format("tensordot: axis {} is repeated", axis)));
      }
      used[*ax] = true;
      operand->contracted.push_back(*ax);
    }
    for (int i = 0; i < x->ndim(); ++i) {
      if (!used[i]) operand->free.push_back(i);
    }
  }
  return Contract(std::move(c));
}

Array tensordot(const Array& a, const Array& b, int n_axes) {
  if (Status s = internal_api::FirstError({&a, &b}); !s.ok()) return Array::FromStatus(s);
  if (n_axes < 0 || n_axes > a.ndim() || n_axes > b.ndim()) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "tensordot: cannot contract {} axes of shapes {} and {}", n_axes, ShapeToString(a.shape()),
        ShapeToString(b.shape()))));
  }
  std::vector<int> a_axes, b_axes;
  for (int i = 0; i < n_axes; ++i) {
    a_axes.push_back(a.ndim() - n_axes + i);
    b_axes.push_back(i);
  }
  return tensordot(a, b, std::move(a_axes), std::move(b_axes));
}

Array matmul(const Array& a, const Array& b) {
  if (Status s = internal_api::FirstError({&a, &b}); !s.ok()) return Array::FromStatus(s);
  if (a.ndim() == 0 || b.ndim() == 0) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("matmul: operands must have rank >= 1, got shapes {} and {}",
                    ShapeToString(a.shape()), ShapeToString(b.shape()))));
  }
  // A 1-D operand is a row (a) or column (b) vector whose added axis is then
  // dropped: here it simply has no free axis.
  const int ra = a.ndim(), rb = b.ndim();
  const int a_batch = std::max(0, ra - 2), b_batch = std::max(0, rb - 2);
  Result<Shape> batch = BroadcastShapes(std::vector<Shape>{
      Shape(a.shape().begin(), a.shape().begin() + a_batch),
      Shape(b.shape().begin(), b.shape().begin() + b_batch)});
  if (!batch.ok()) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "matmul: the batch axes of shapes {} and {} do not broadcast", ShapeToString(a.shape()),
        ShapeToString(b.shape()))));
  }
  Contraction c;
  c.op = "matmul";
  c.batch_shape = *batch;
  c.a.array = a;
  c.b.array = b;
  const int nb = static_cast<int>(batch->size());
  for (int j = 0; j < nb; ++j) {
    const int ia = j - (nb - a_batch), ib = j - (nb - b_batch);
    c.a.batch.push_back(ia >= 0 ? ia : -1);
    c.b.batch.push_back(ib >= 0 ? ib : -1);
  }
  if (ra >= 2) c.a.free.push_back(ra - 2);
  c.a.contracted.push_back(ra - 1);
  c.b.contracted.push_back(rb >= 2 ? rb - 2 : 0);
  if (rb >= 2) c.b.free.push_back(rb - 1);
  return Contract(std::move(c));
}

}  // namespace strata
