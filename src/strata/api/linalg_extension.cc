// api/linalg_extension.h.
#include "strata/api/linalg_extension.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>

#include "strata/api/array.h"
#include "strata/api/batch_element.h"
#include "strata/api/creation.h"
#include "strata/api/elementwise.h"
#include "strata/api/indexing.h"
#include "strata/api/internal.h"
#include "strata/api/linalg.h"
#include "strata/api/manipulation.h"
#include "strata/api/manipulation_extras.h"
#include "strata/api/reduction.h"
#include "strata/base/byte_size.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/core/kernels/lapack.h"
#include "strata/core/kernels/linalg.h"
#include "strata/plan/memory_model.h"

namespace strata::linalg {

using internal_api::BatchElement;
using internal_api::GridFromSizes;
using internal_api::MakeBlockwise;

namespace {

Array Fail(Status s) { return Array::FromStatus(std::move(s)); }

Array Invalid(std::string message) { return Fail(InvalidArgumentError(std::move(message))); }

std::vector<Index> RegularSizes(Index extent, Index chunk) {
  std::vector<Index> s;
  chunk = std::max<Index>(1, chunk);
  for (Index left = extent; left > 0; left -= chunk) s.push_back(std::min(left, chunk));
  if (s.empty()) s.push_back(0);
  return s;
}

// The float dtype a decomposition computes in: float32 stays float32,
// everything else numeric becomes float64; bool and complex are refused.
Result<DType> DecompositionDType(std::string_view op, DType d) {
  if (d.is_bool()) {
    return InvalidArgumentError(fmt::format("{}: expected a floating-point array, got bool", op));
  }
  if (d.is_complex()) {
    return InvalidArgumentError(fmt::format(
        "{}: complex input ({}) is not supported (only float32 and float64)", op, d.name()));
  }
  return d == DType(DTypeId::kFloat32) ? DType(DTypeId::kFloat32) : DType(DTypeId::kFloat64);
}

Status CheckMatrix(std::string_view op, const Array& x, bool square) {
  if (x.ndim() < 2) {
    return InvalidArgumentError(fmt::format(
        "{}: expected an array of rank >= 2 (a matrix or a stack of them), got shape {}", op,
        ShapeToString(x.shape())));
  }
  const Index m = x.shape()[x.ndim() - 2], n = x.shape()[x.ndim() - 1];
  if (square && m != n) {
    return InvalidArgumentError(fmt::format(
        "{}: the last two axes must be square, got shape {}", op, ShapeToString(x.shape())));
  }
  return Status::Ok();
}

// -------------------------------------------------- whole-matrix blockwise

// One input of a whole-matrix op: its trailing `core_rank` axes are one
// chunk; the axes before are the batch axes, broadcast across inputs.
struct CoreOperand {
  Array array;
  int core_rank;
};

// Computes one output core (row-major float64) from the input cores
// (row-major float64), allocating scratch from `pool`.
using CoreFunction =
    std::function<Status(std::span<const double* const> in, double* out, MemoryPool& pool)>;

struct CoreOp {
  std::string op;
  std::vector<CoreOperand> inputs;
  Shape out_core;
  DType out_dtype;
  int64_t scratch_per_matrix = 0;  // the function's own allocations
  CoreFunction fn;
};

std::string CoreString(const Shape& core) {
  if (core.size() == 2) return fmt::format("{}x{}", core[0], core[1]);
  return ShapeToString(core);
}

// Runs the op on one empty-batch-free set of cores at build time (cores
// with no elements: det of 0x0 is 1, the SVD of 0xN has Vh = I).
Result<NDArray> EvaluateEmpty(const CoreOp& c) {
  MemoryPool& pool = *MemoryPool::Default();
  std::vector<NDArray> ins;
  std::vector<const double*> ptrs;
  for (const CoreOperand& in : c.inputs) {
    Shape core(in.array.shape().end() - in.core_rank, in.array.shape().end());
    STRATA_ASSIGN_OR_RETURN(NDArray a, NDArray::Zeros(pool, DTypeId::kFloat64, core));
    ptrs.push_back(a.data_as<double>());
    ins.push_back(std::move(a));
  }
  STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Zeros(pool, DTypeId::kFloat64, c.out_core));
  STRATA_RETURN_IF_ERROR(c.fn(ptrs, out.data_as<double>(), pool));
  STRATA_ASSIGN_OR_RETURN(NDArray cast, NDArray::Allocate(pool, c.out_dtype, c.out_core));
  STRATA_RETURN_IF_ERROR(Cast(std::as_const(out).view(), cast.view()));
  return cast;
}

// Builds the op: inputs broadcast on their batch axes, rechunked to whole
// cores and batch chunks that fit the task budget, one LAPACK call per
// matrix. InvalidArgument when one matrix does not fit.
Array MakeCoreOp(CoreOp c) {
  std::vector<Shape> batches;
  for (const CoreOperand& in : c.inputs) {
    if (!in.array.ok()) return in.array;
    batches.emplace_back(in.array.shape().begin(), in.array.shape().end() - in.core_rank);
  }
  Result<Shape> batch = BroadcastShapes(batches);
  if (!batch.ok()) {
    std::string shapes;
    for (const CoreOperand& in : c.inputs) {
      shapes += (shapes.empty() ? "" : " and ") + ShapeToString(in.array.shape());
    }
    return Invalid(fmt::format("{}: the batch axes of shapes {} do not broadcast", c.op, shapes));
  }
  const int nb = static_cast<int>(batch->size());
  auto spec = c.inputs[0].array.spec();
  Shape out_shape = *batch;
  out_shape.insert(out_shape.end(), c.out_core.begin(), c.out_core.end());
  if (NumElements(out_shape) == 0) return zeros(out_shape, {}, c.out_dtype, *spec);

  // Bytes per matrix: input and output blocks, their float64 copies, and the
  // kernel's scratch.
  int64_t per_matrix = 0, scratch = c.scratch_per_matrix;
  bool empty_core = false;
  std::vector<Shape> cores;
  for (const CoreOperand& in : c.inputs) {
    Shape core(in.array.shape().end() - in.core_rank, in.array.shape().end());
    const Index e = NumElements(core);
    empty_core = empty_core || e == 0;
    per_matrix += e * in.array.dtype().size();
    scratch += std::max<Index>(e, 1) * 8;
    cores.push_back(std::move(core));
  }
  const Index out_e = NumElements(c.out_core);
  per_matrix += out_e * c.out_dtype.size();
  scratch += std::max<Index>(out_e, 1) * 8;
  if (empty_core) {
    // Nothing to read: every matrix has the same result.
    Result<NDArray> one = EvaluateEmpty(c);
    if (!one.ok()) return Fail(one.status().WithContext(c.op));
    Shape ones_shape(nb, 1);
    ones_shape.insert(ones_shape.end(), c.out_core.begin(), c.out_core.end());
    one->Reshape(ones_shape);
    return broadcast_to(asarray(std::move(*one), {}, *spec), out_shape);
  }
  const int64_t budget = internal_api::TaskMemoryBudget(*spec);
  if (per_matrix + scratch > budget) {
    return Invalid(fmt::format(
        "{}: a {} {} matrix must be in one chunk, and one matrix needs {} in a task (with its "
        "float64 copies and LAPACK's workspace), over allowed_mem less reserved_mem ({}); raise "
        "allowed_mem",
        c.op, CoreString(cores[0]), c.inputs[0].array.dtype().name(),
        FormatBytes(per_matrix + scratch), FormatBytes(budget)));
  }
  // Batch chunks: the smallest any input has, halved to fit (FitChunksToBudget).
  Shape chunks(nb, 0);
  for (int d = 0; d < nb; ++d) {
    chunks[d] = (*batch)[d];
    for (const CoreOperand& in : c.inputs) {
      const int ax = d - (nb - (in.array.ndim() - in.core_rank));
      if (ax >= 0 && in.array.shape()[ax] == (*batch)[d]) {
        chunks[d] = std::min(chunks[d], in.array.chunksize()[ax]);
      }
    }
    chunks[d] = std::max<Index>(1, chunks[d]);
  }
  auto task_bytes = [&](const Shape& sizes) {
    return NumElements(sizes) * per_matrix + scratch;
  };
  chunks = FitChunksToBudget(std::move(chunks), {}, task_bytes, budget).chunks;
  std::vector<std::vector<Index>> batch_sizes(nb);
  for (int d = 0; d < nb; ++d) batch_sizes[d] = RegularSizes((*batch)[d], chunks[d]);

  std::vector<Array> inputs;
  std::vector<InputMap> maps;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Array& x = c.inputs[i].array;
    const int xb = x.ndim() - c.inputs[i].core_rank;
    std::vector<std::vector<Index>> sizes;
    InputMap map;
    for (int ax = 0; ax < xb; ++ax) {
      const int d = ax + (nb - xb);
      if (x.shape()[ax] == (*batch)[d]) {
        sizes.push_back(batch_sizes[d]);
        map.axes.push_back(AxisMap::Identity(d, static_cast<Index>(batch_sizes[d].size())));
      } else {
        sizes.push_back({x.shape()[ax]});  // extent 1, broadcast
        map.axes.push_back(AxisMap::Fixed({0}, 1));
      }
    }
    for (Index e : cores[i]) {
      sizes.push_back({e});
      map.axes.push_back(AxisMap::Fixed({0}, 1));
    }
    inputs.push_back(internal_api::RechunkToGrid(x, GridFromSizes(std::move(sizes))));
    maps.push_back(std::move(map));
  }
  std::vector<std::vector<Index>> out_sizes = batch_sizes;
  for (Index e : c.out_core) out_sizes.push_back({e});

  const DType out_dtype = c.out_dtype;
  const Shape out_core = c.out_core;
  CoreFunction fn = c.fn;
  const std::string op = c.op;
  BlockFunction block_fn = [nb, cores, out_core, out_dtype, fn,
                            op](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, out_dtype, r.box.shape));
    if (out.num_elements() == 0) return out;
    std::vector<NDArray> in_copies;
    std::vector<const double*> in_ptrs;
    for (const Shape& core : cores) {
      STRATA_ASSIGN_OR_RETURN(NDArray a, NDArray::Allocate(*r.pool, DTypeId::kFloat64, core));
      in_ptrs.push_back(a.data_as<double>());
      in_copies.push_back(std::move(a));
    }
    STRATA_ASSIGN_OR_RETURN(NDArray o, NDArray::Allocate(*r.pool, DTypeId::kFloat64, out_core));
    Shape batch(r.box.shape.begin(), r.box.shape.begin() + nb);
    const Index out_step = NumElements(out_core) * out_dtype.size();
    Shape idx(nb, 0);
    Index linear = 0;
    do {
      for (size_t i = 0; i < cores.size(); ++i) {
        const ConstArrayView& v = r.inputs[i][0].view;
        // The input may lack leading batch axes (it broadcasts).
        const int xb = v.rank() - static_cast<int>(cores[i].size());
        Shape sub(idx.end() - xb, idx.end());
        STRATA_RETURN_IF_ERROR(Cast(BatchElement(v, sub), in_copies[i].view()));
      }
      Status s = fn(in_ptrs, o.data_as<double>(), *r.pool);
      if (!s.ok()) {
        Shape at = idx;
        for (int d = 0; d < nb; ++d) at[d] += r.box.origin[d];
        return nb == 0 ? s : s.WithContext(fmt::format("matrix {} of the batch", ShapeToString(at)));
      }
      ArrayView dst = ArrayView::Contiguous(out.data() + linear * out_step, out_dtype, out_core);
      STRATA_RETURN_IF_ERROR(Cast(std::as_const(o).view(), dst));
      ++linear;
    } while (NextIndex(idx, batch));
    return out;
  };
  return MakeBlockwise(c.op, out_shape, out_dtype, GridFromSizes(std::move(out_sizes)),
                       std::move(inputs), std::move(maps), std::move(block_fn), scratch, spec);
}

// x[..., rows, cols] for a packed core (slices of the last two axes).
Array Unpack2(const Array& packed, Index r0, Index r1, Index c0, Index c1) {
  std::vector<IndexItem> items;
  for (int d = 0; d < packed.ndim() - 2; ++d) items.push_back(Slice{});
  items.push_back(Slice{r0, r1, 1});
  items.push_back(Slice{c0, c1, 1});
  return getitem(packed, std::move(items));
}

// x[..., row, cols]: one row of a packed core.
Array UnpackRow(const Array& packed, Index row, Index c0, Index c1) {
  std::vector<IndexItem> items;
  for (int d = 0; d < packed.ndim() - 2; ++d) items.push_back(Slice{});
  items.push_back(row);
  items.push_back(Slice{c0, c1, 1});
  return getitem(packed, std::move(items));
}

// x[..., i] of the last axis.
Array UnpackLast(const Array& packed, Index i) {
  std::vector<IndexItem> items;
  for (int d = 0; d < packed.ndim() - 1; ++d) items.push_back(Slice{});
  items.push_back(i);
  return getitem(packed, std::move(items));
}

Index Rows(const Array& x) { return x.shape()[x.ndim() - 2]; }
Index Cols(const Array& x) { return x.shape()[x.ndim() - 1]; }

// Validates a matrix input and gives its decomposition dtype.
Result<DType> MatrixInput(std::string_view op, const Array& x, bool square) {
  if (!x.ok()) return x.status();
  STRATA_RETURN_IF_ERROR(CheckMatrix(op, x, square));
  return DecompositionDType(op, x.dtype());
}

double Epsilon(DType d) {
  return d == DType(DTypeId::kFloat32) ? std::numeric_limits<float>::epsilon()
                                       : std::numeric_limits<double>::epsilon();
}

// Singular values of the matrices of x (whole cores).
Array SvdvalsCore(const Array& x, DType dtype) {
  const Index m = Rows(x), n = Cols(x), k = std::min(m, n);
  CoreOp c{"linalg.svdvals", {{x, 2}}, {k}, dtype,
           lapack::SvdScratchBytes(m, n, false, false),
           [m, n](std::span<const double* const> in, double* out, MemoryPool& pool) {
             return lapack::Svd("linalg.svdvals", in[0], m, n, false, false, nullptr, out,
                                nullptr, pool);
           }};
  return MakeCoreOp(std::move(c));
}

// ------------------------------------------------------------------ TSQR

// Whether x (2-D, M >= N) should be factored by TSQR: it spans several row
// blocks, or the whole matrix does not fit one task. The rows are then
// chunked (at least N per block, so that the R factors stack small) with
// the whole of the last axis per block.
bool UseTsqr(const Array& x) {
  if (x.ndim() != 2) return false;
  const Index m = x.shape()[0], n = x.shape()[1];
  if (m < n || n == 0 || m == 0) return false;
  if (x.chunks().grid_shape()[0] > 1) return true;
  const int64_t whole = m * n * (x.dtype().size() + 8) * 3 + lapack::QrScratchBytes(m, n, false);
  return whole > internal_api::TaskMemoryBudget(*x.spec());
}

struct TsqrFactors {
  Array Q, R;
};

// Q (M x N) and R (N x N) of x by one level of TSQR; Q only when `want_q`.
Result<TsqrFactors> Tsqr(std::string_view op, const Array& x_in, DType dtype, bool want_q) {
  const Index m = x_in.shape()[0], n = x_in.shape()[1];
  auto spec = x_in.spec();
  const int64_t budget = internal_api::TaskMemoryBudget(*spec);
  // Row blocks: the input's row chunks, shrunk until a block's task fits.
  const int64_t item = dtype.size();
  auto block_bytes = [&](Index rows) {
    const Index k = std::min(rows, n);
    return rows * n * (x_in.dtype().size() + 8) + (rows + n) * n * (item + 8) + k * n * 8 +
           lapack::QrScratchBytes(rows, n, false);
  };
  const Index min_rows[] = {n};
  const ChunkFit fit = FitChunksToBudget({std::max<Index>(x_in.chunksize()[0], n)}, min_rows,
                                         [&](const Shape& r) { return block_bytes(r[0]); }, budget);
  const Index rows = fit.chunks[0];
  if (!fit.fits) {
    return InvalidArgumentError(fmt::format(
        "{}: TSQR needs row blocks of at least {} rows x {} columns, and one needs {} in a task, "
        "over allowed_mem less reserved_mem ({}); raise allowed_mem",
        op, n, n, FormatBytes(block_bytes(rows)), FormatBytes(budget)));
  }
  // The input's row blocks when they already are at least N rows and fit
  // (ragged ones too); otherwise regular blocks of `rows`.
  std::vector<Index> row_sizes = x_in.chunksize()[0] == rows ? x_in.chunks().AxisChunkSizes(0)
                                                             : RegularSizes(m, rows);
  Array x = internal_api::RechunkToGrid(x_in, GridFromSizes({row_sizes, {n}}));
  const Index nblocks = static_cast<Index>(row_sizes.size());
  const Index max_rows = *std::max_element(row_sizes.begin(), row_sizes.end());

  // 1. Per row block (m_i rows): packed [Q_i (m_i x N, zero columns past
  //    k_i); R_i (N x N, zero rows past k_i)].
  std::vector<Index> packed_rows;
  for (Index r : row_sizes) packed_rows.push_back(r + n);
  const std::string name(op);
  BlockFunction qr_block = [n, dtype, name](const BlockRequest& r) -> Result<NDArray> {
    const Index mi = r.box.shape[0] - n, k = std::min(mi, n);
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Zeros(*r.pool, dtype, r.box.shape));
    STRATA_ASSIGN_OR_RETURN(NDArray a, NDArray::Allocate(*r.pool, DTypeId::kFloat64, {mi, n}));
    STRATA_RETURN_IF_ERROR(Cast(r.inputs[0][0].view, a.view()));
    STRATA_ASSIGN_OR_RETURN(NDArray q, NDArray::Allocate(*r.pool, DTypeId::kFloat64, {mi, k}));
    STRATA_ASSIGN_OR_RETURN(NDArray rr, NDArray::Allocate(*r.pool, DTypeId::kFloat64, {k, n}));
    STRATA_RETURN_IF_ERROR(lapack::Qr(name, a.data_as<double>(), mi, n, false, q.data_as<double>(),
                                      rr.data_as<double>(), *r.pool));
    ArrayView o = out.view();
    STRATA_RETURN_IF_ERROR(Cast(std::as_const(q).view(), o.Slice(Box{{0, 0}, {mi, k}})));
    STRATA_RETURN_IF_ERROR(Cast(std::as_const(rr).view(), o.Slice(Box{{mi, 0}, {k, n}})));
    return out;
  };
  const Index kmax = std::min(max_rows, n);
  const int64_t qr_extra = max_rows * n * 8 + max_rows * kmax * 8 + kmax * n * 8 +
                           lapack::QrScratchBytes(max_rows, n, false);
  Array packed = MakeBlockwise(
      name + "-tsqr-blocks", {m + nblocks * n, n}, dtype, GridFromSizes({packed_rows, {n}}), {x},
      {InputMap{{AxisMap::Identity(0, nblocks), AxisMap::Identity(1, 1)}}}, std::move(qr_block),
      qr_extra, spec);
  if (!packed.ok()) return packed.status();

  // 2. The R factors, one N x N block each, gathered into one chunk and
  //    factored again: packed [Q2 (nblocks N x N); R (N x N)].
  BlockFunction take_r = [n, dtype](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    const ConstArrayView& v = r.inputs[0][0].view;
    const Index mi = v.shape()[0] - n;
    CopyArray(v.Slice(Box{{mi, 0}, {n, n}}), out.view());
    return out;
  };
  Array r_blocks = MakeBlockwise(
      name + "-tsqr-r", {nblocks * n, n}, dtype,
      GridFromSizes({std::vector<Index>(nblocks, n), {n}}), {packed},
      {InputMap{{AxisMap::Identity(0, nblocks), AxisMap::Identity(1, 1)}}}, std::move(take_r), 0,
      spec);
  const Index stacked = nblocks * n;
  CoreOp second{name + "-tsqr-r-qr", {{r_blocks, 2}}, {stacked + n, n}, dtype,
                lapack::QrScratchBytes(stacked, n, false),
                [stacked, n, name](std::span<const double* const> in, double* out,
                                   MemoryPool& pool) {
                  return lapack::Qr(name, in[0], stacked, n, false, out, out + stacked * n, pool);
                }};
  Array q2r = MakeCoreOp(std::move(second));
  if (!q2r.ok()) return q2r.status();
  TsqrFactors f;
  f.R = Unpack2(q2r, stacked, stacked + n, 0, n);
  if (!want_q) return f;

  // 3. Q_i = Q_i(block) @ Q2[i N : (i + 1) N].
  BlockFunction q_block = [n, dtype](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Zeros(*r.pool, dtype, r.box.shape));
    const ConstArrayView& p = r.inputs[0][0].view;
    const ConstArrayView& q2 = r.inputs[1][0].view;
    const Index mi = r.box.shape[0];
    const Index i = r.block[0];
    STRATA_RETURN_IF_ERROR(MatMulAccumulate(p.Slice(Box{{0, 0}, {mi, n}}),
                                            q2.Slice(Box{{i * n, 0}, {n, n}}), out.view()));
    return out;
  };
  // MatMulAccumulate's blocking scratch (from the default pool, 512 KiB).
  constexpr int64_t kMatMulScratch = int64_t{512} << 10;
  f.Q = MakeBlockwise(name + "-tsqr-q", {m, n}, dtype, GridFromSizes({row_sizes, {n}}),
                      {packed, q2r},
                      {InputMap{{AxisMap::Identity(0, nblocks), AxisMap::Identity(1, 1)}},
                       InputMap{{AxisMap::Fixed({0}, 1), AxisMap::Fixed({0}, 1)}}},
                      std::move(q_block), kMatMulScratch, spec);
  return f;
}

// ------------------------------------------------------------- diagonal

Array DiagonalImpl(const Array& x, Index offset) {
  const int rank = x.ndim();
  const int ra = rank - 2, ca = rank - 1;
  const Index m = x.shape()[ra], n = x.shape()[ca];
  const Index r0 = std::max<Index>(0, -offset), c0 = std::max<Index>(0, offset);
  const Index len = std::max<Index>(0, std::min(m - r0, n - c0));
  Shape out_shape(x.shape().begin(), x.shape().end() - 2);
  out_shape.push_back(len);
  if (NumElements(out_shape) == 0) {
    Shape chunks(x.chunksize().begin(), x.chunksize().end() - 2);
    chunks.push_back(1);
    return zeros(out_shape, chunks, x.dtype(), *x.spec());
  }
  // Output blocks along the diagonal no longer than the smaller chunk of the
  // two axes, so each reads at most 2 x 2 blocks of them.
  const Index chunk = std::max<Index>(1, std::min(x.chunksize()[ra], x.chunksize()[ca]));
  std::vector<Index> diag_sizes = RegularSizes(len, chunk);
  auto starts = [](const std::vector<Index>& sizes) {
    std::vector<Index> s(sizes.size() + 1, 0);
    for (size_t i = 0; i < sizes.size(); ++i) s[i + 1] = s[i] + sizes[i];
    return s;
  };
  const std::vector<Index> row_starts = starts(x.chunks().AxisChunkSizes(ra));
  const std::vector<Index> col_starts = starts(x.chunks().AxisChunkSizes(ca));
  auto blocks_of = [](const std::vector<Index>& s, Index lo, Index hi) {
    std::vector<Index> out;
    for (size_t b = 0; b + 1 < s.size(); ++b) {
      if (s[b] < hi && s[b + 1] > lo) out.push_back(static_cast<Index>(b));
    }
    return out;
  };
  std::vector<std::vector<Index>> row_table, col_table;
  Index t = 0;
  for (Index size : diag_sizes) {
    row_table.push_back(blocks_of(row_starts, t + r0, t + r0 + size));
    col_table.push_back(blocks_of(col_starts, t + c0, t + c0 + size));
    t += size;
  }
  std::vector<std::vector<Index>> out_sizes;
  InputMap map;
  for (int d = 0; d < ra; ++d) {
    out_sizes.push_back(x.chunks().AxisChunkSizes(d));
    map.axes.push_back(AxisMap::Identity(d, x.chunks().grid_shape()[d]));
  }
  out_sizes.push_back(diag_sizes);
  map.axes.push_back(AxisMap::Table(ra, row_table, x.chunks().grid_shape()[ra]));
  map.axes.push_back(AxisMap::Table(ra, col_table, x.chunks().grid_shape()[ca]));
  const DType dtype = x.dtype();
  BlockFunction fn = [ra, r0, c0, dtype](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    const Index s = r.box.origin[ra], e = s + r.box.shape[ra];
    ArrayView o = out.view();
    for (const InputBlock& in : r.inputs[0]) {
      const Index rlo = in.box.origin[ra], rhi = rlo + in.box.shape[ra];
      const Index clo = in.box.origin[ra + 1], chi = clo + in.box.shape[ra + 1];
      const Index lo = std::max({s, rlo - r0, clo - c0});
      const Index hi = std::min({e, rhi - r0, chi - c0});
      for (Index i = lo; i < hi; ++i) {
        // The batch slab at diagonal position i.
        Shape shape(in.view.shape().begin(), in.view.shape().end() - 2);
        Shape strides(in.view.byte_strides().begin(), in.view.byte_strides().end() - 2);
        const std::byte* p = in.view.data() + (i + r0 - rlo) * in.view.byte_strides()[ra] +
                             (i + c0 - clo) * in.view.byte_strides()[ra + 1];
        Shape oshape(o.shape().begin(), o.shape().end() - 1);
        Shape ostrides(o.byte_strides().begin(), o.byte_strides().end() - 1);
        std::byte* q = o.data() + (i - s) * o.byte_strides()[ra];
        CopyArray(ConstArrayView(p, dtype, shape, strides), ArrayView(q, dtype, oshape, ostrides));
      }
    }
    return out;
  };
  return MakeBlockwise("linalg.diagonal", out_shape, dtype, GridFromSizes(std::move(out_sizes)),
                       {x}, {std::move(map)}, std::move(fn), 0, x.spec());
}

// The identity of x's shape (batch and matrix), in x's chunks.
Array IdentityLike(const Array& x, DType dtype) {
  const Index n = Cols(x);
  Shape core_chunks(x.chunksize().end() - 2, x.chunksize().end());
  Array eye1 = eye(n, n, 0, {std::max<Index>(1, core_chunks[0]), std::max<Index>(1, core_chunks[1])},
                   dtype, *x.spec());
  return broadcast_to(eye1, x.shape(), x.chunksize());
}

Array AbsOf(const Array& x) {
  Array a = unary(UnaryOp::kAbs, x);
  // Norms of integers are floats (numpy's).
  if (a.ok() && !a.dtype().is_float()) a = astype(a, DTypeId::kFloat64);
  return a;
}

}  // namespace

// ============================================================ chunked ops

Array cross(const Array& a, const Array& b, int axis) {
  if (Status s = internal_api::FirstError({&a, &b}); !s.ok()) return Fail(s);
  if (a.ndim() == 0 || b.ndim() == 0) {
    return Invalid("linalg.cross: the inputs must have rank >= 1");
  }
  const int rank = std::max(a.ndim(), b.ndim());
  if (axis >= 0) {
    // Unambiguous only when the ranks agree (no broadcast of leading axes).
    if (a.ndim() != b.ndim() || axis >= rank) {
      return Invalid(fmt::format(
          "linalg.cross: axis {} is out of range for shapes {} and {} (a non-negative axis needs "
          "inputs of one rank)",
          axis, ShapeToString(a.shape()), ShapeToString(b.shape())));
    }
    axis -= rank;
  }
  if (-axis > std::min(a.ndim(), b.ndim())) {
    return Invalid(fmt::format("linalg.cross: axis {} is out of range for shapes {} and {}", axis,
                               ShapeToString(a.shape()), ShapeToString(b.shape())));
  }
  const int ia = a.ndim() + axis, ib = b.ndim() + axis;
  if (a.shape()[ia] != 3 || b.shape()[ib] != 3) {
    return Invalid(fmt::format(
        "linalg.cross: axis {} must have extent 3 in both inputs, got shapes {} and {}", axis,
        ShapeToString(a.shape()), ShapeToString(b.shape())));
  }
  if (a.dtype().is_bool() || b.dtype().is_bool()) {
    return Invalid("linalg.cross: the inputs must be numeric, not bool");
  }
  auto component = [](const Array& x, int ax, Index i) {
    std::vector<IndexItem> items;
    for (int d = 0; d < ax; ++d) items.push_back(Slice{});
    items.push_back(i);
    return getitem(x, std::move(items));
  };
  Array a0 = component(a, ia, 0), a1 = component(a, ia, 1), a2 = component(a, ia, 2);
  Array b0 = component(b, ib, 0), b1 = component(b, ib, 1), b2 = component(b, ib, 2);
  auto term = [](const Array& p, const Array& q, const Array& r, const Array& s) {
    return binary(BinaryOp::kSubtract, binary(BinaryOp::kMultiply, p, q),
                  binary(BinaryOp::kMultiply, r, s));
  };
  std::vector<Array> parts = {term(a1, b2, a2, b1), term(a2, b0, a0, b2), term(a0, b1, a1, b0)};
  for (const Array& p : parts) {
    if (!p.ok()) return Fail(p.status().WithContext("linalg.cross"));
  }
  return stack(parts, rank + axis);
}

Array diagonal(const Array& x, Index offset) {
  if (!x.ok()) return x;
  if (Status s = CheckMatrix("linalg.diagonal", x, false); !s.ok()) return Fail(s);
  return DiagonalImpl(x, offset);
}

Array trace(const Array& x, Index offset, std::optional<DType> dtype) {
  if (!x.ok()) return x;
  if (Status s = CheckMatrix("linalg.trace", x, false); !s.ok()) return Fail(s);
  if (x.dtype().is_bool()) return Invalid("linalg.trace: the input must be numeric, not bool");
  Array d = DiagonalImpl(x, offset);
  if (dtype) d = astype(d, *dtype);
  Array s = sum(d, {-1});
  if (s.ok() && dtype && s.dtype() != *dtype) s = astype(s, *dtype);
  return s;
}

Array outer(const Array& a, const Array& b) {
  if (Status s = internal_api::FirstError({&a, &b}); !s.ok()) return Fail(s);
  if (a.ndim() != 1 || b.ndim() != 1) {
    return Invalid(fmt::format("linalg.outer: the inputs must be 1-D, got shapes {} and {}",
                               ShapeToString(a.shape()), ShapeToString(b.shape())));
  }
  return tensordot(a, b, 0);
}

Array vector_norm(const Array& x, std::optional<std::vector<int>> axes_in, bool keepdims,
                  double ord) {
  if (!x.ok()) return x;
  if (x.dtype().is_bool()) return Invalid("linalg.vector_norm: the input must be numeric, not bool");
  if (std::isnan(ord)) return Invalid("linalg.vector_norm: ord must not be NaN");
  std::vector<int> all(x.ndim());
  std::iota(all.begin(), all.end(), 0);
  const std::vector<int>& axes = axes_in ? *axes_in : all;
  std::vector<int> sorted;
  for (int v : axes) {
    Result<int> a = internal_api::NormalizeAxis(v, x.ndim(), "linalg.vector_norm");
    if (!a.ok()) return Fail(a.status());
    sorted.push_back(*a);
  }
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return Invalid("linalg.vector_norm: axis has repeated entries");
  }
  Array a = AbsOf(x);
  if (!a.ok()) return a;
  if (sorted.empty()) {
    // No axis: the norm of each one-element vector.
    return ord == 0 ? astype(binary(BinaryOp::kNotEqual, a, Scalar(0.0)), a.dtype()) : a;
  }
  ReduceOptions o;
  o.keepdims = keepdims;
  const double inf = std::numeric_limits<double>::infinity();
  if (ord == inf) return max(a, sorted, o);
  if (ord == -inf) return min(a, sorted, o);
  if (ord == 0) {
    return astype(sum(astype(binary(BinaryOp::kNotEqual, a, Scalar(0.0)), a.dtype()), sorted, o),
                  a.dtype());
  }
  if (ord == 1) return sum(a, sorted, o);
  if (ord == 2) return unary(UnaryOp::kSqrt, sum(binary(BinaryOp::kMultiply, a, a), sorted, o));
  return binary(BinaryOp::kPow, sum(binary(BinaryOp::kPow, a, Scalar(ord)), sorted, o),
                Scalar(1.0 / ord));
}

Array matrix_norm(const Array& x, std::string_view ord, bool keepdims) {
  if (!x.ok()) return x;
  if (Status s = CheckMatrix("linalg.matrix_norm", x, false); !s.ok()) return Fail(s);
  if (x.dtype().is_bool()) return Invalid("linalg.matrix_norm: the input must be numeric, not bool");
  const int r = x.ndim();
  ReduceOptions keep;
  keep.keepdims = true;
  auto finish = [&](Array y) {  // y has the two axes kept as extent 1
    return keepdims ? y : squeeze(y, {r - 2, r - 1});
  };
  if (ord == "fro") {
    Array a = AbsOf(x);
    return finish(unary(UnaryOp::kSqrt, sum(binary(BinaryOp::kMultiply, a, a), {r - 2, r - 1}, keep)));
  }
  if (ord == "1" || ord == "-1" || ord == "inf" || ord == "-inf") {
    const bool columns = ord == "1" || ord == "-1";
    const bool largest = ord == "1" || ord == "inf";
    Array sums = sum(AbsOf(x), {columns ? r - 2 : r - 1}, keep);
    return finish(largest ? max(sums, {columns ? r - 1 : r - 2}, keep)
                          : min(sums, {columns ? r - 1 : r - 2}, keep));
  }
  if (ord == "nuc" || ord == "2" || ord == "-2") {
    Array s = svdvals(x);
    if (!s.ok()) return Fail(s.status());
    ReduceOptions o;
    o.keepdims = false;
    Array y = ord == "nuc" ? sum(s, {-1}, o) : ord == "2" ? max(s, {-1}, o) : min(s, {-1}, o);
    if (keepdims && y.ok()) y = expand_dims(expand_dims(y, -1), -1);
    return y;
  }
  return Invalid(fmt::format(
      "linalg.matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {}", ord));
}

Array matrix_power(const Array& x, int64_t n) {
  Result<DType> dt = MatrixInput("linalg.matrix_power", x, true);
  if (!dt.ok()) return Fail(dt.status());
  if (n == 0) {
    const DType d = x.dtype().is_bool() ? *dt : x.dtype();
    return IdentityLike(x, d);
  }
  Array base = n < 0 ? inv(x) : x;
  if (!base.ok()) return base;
  uint64_t p = n < 0 ? static_cast<uint64_t>(-(n + 1)) + 1 : static_cast<uint64_t>(n);
  std::optional<Array> result;
  while (p > 0) {
    if (p & 1) result = result ? matmul(*result, base) : base;
    p >>= 1;
    if (p > 0) base = matmul(base, base);
    if (!base.ok()) return base;
  }
  return *result;
}

// ====================================================== whole-matrix ops

Array cholesky(const Array& x, bool upper) {
  Result<DType> dt = MatrixInput("linalg.cholesky", x, true);
  if (!dt.ok()) return Fail(dt.status());
  const Index n = Cols(x);
  return MakeCoreOp({"linalg.cholesky", {{x, 2}}, {n, n}, *dt, lapack::CholeskyScratchBytes(n),
                     [n, upper](std::span<const double* const> in, double* out, MemoryPool& pool) {
                       return lapack::Cholesky("linalg.cholesky", in[0], n, upper, out, pool);
                     }});
}

Array det(const Array& x) {
  Result<DType> dt = MatrixInput("linalg.det", x, true);
  if (!dt.ok()) return Fail(dt.status());
  const Index n = Cols(x);
  return MakeCoreOp({"linalg.det", {{x, 2}}, {}, *dt, lapack::SlogDetScratchBytes(n),
                     [n](std::span<const double* const> in, double* out, MemoryPool& pool) {
                       double sign, logabs;
                       return lapack::SlogDet(in[0], n, &sign, &logabs, out, pool);
                     }});
}

SlogdetResult slogdet(const Array& x) {
  Result<DType> dt = MatrixInput("linalg.slogdet", x, true);
  if (!dt.ok()) return {Fail(dt.status()), Fail(dt.status())};
  const Index n = Cols(x);
  Array packed = MakeCoreOp(
      {"linalg.slogdet", {{x, 2}}, {2}, *dt, lapack::SlogDetScratchBytes(n),
       [n](std::span<const double* const> in, double* out, MemoryPool& pool) {
         return lapack::SlogDet(in[0], n, &out[0], &out[1], nullptr, pool);
       }});
  if (!packed.ok()) return {packed, packed};
  return {UnpackLast(packed, 0), UnpackLast(packed, 1)};
}

EighResult eigh(const Array& x) {
  Result<DType> dt = MatrixInput("linalg.eigh", x, true);
  if (!dt.ok()) return {Fail(dt.status()), Fail(dt.status())};
  const Index n = Cols(x);
  // Packed: [V | w] as n x (n + 1), eigenvalue j in row j of the last column.
  Array packed = MakeCoreOp(
      {"linalg.eigh", {{x, 2}}, {n, n + 1}, *dt,
       lapack::SymmetricEigenScratchBytes(n, true) + 2 * n * n * 8 + n * 8,
       [n](std::span<const double* const> in, double* out, MemoryPool& pool) -> Status {
         STRATA_ASSIGN_OR_RETURN(Buffer vb, pool.Allocate(std::max<Index>(1, n * n) * 8));
         STRATA_ASSIGN_OR_RETURN(Buffer wb, pool.Allocate(std::max<Index>(1, n) * 8));
         double* v = reinterpret_cast<double*>(vb.data());
         double* w = reinterpret_cast<double*>(wb.data());
         STRATA_RETURN_IF_ERROR(lapack::SymmetricEigen("linalg.eigh", in[0], n, w, v, pool));
         for (Index i = 0; i < n; ++i) {
           std::memcpy(out + i * (n + 1), v + i * n, n * sizeof(double));
           out[i * (n + 1) + n] = w[i];
         }
         return Status::Ok();
       }});
  if (!packed.ok()) return {packed, packed};
  std::vector<IndexItem> items;
  for (int d = 0; d < packed.ndim() - 1; ++d) items.push_back(Slice{});
  items.push_back(n);
  return {getitem(packed, items), Unpack2(packed, 0, n, 0, n)};
}

Array eigvalsh(const Array& x) {
  Result<DType> dt = MatrixInput("linalg.eigvalsh", x, true);
  if (!dt.ok()) return Fail(dt.status());
  const Index n = Cols(x);
  return MakeCoreOp({"linalg.eigvalsh", {{x, 2}}, {n}, *dt,
                     lapack::SymmetricEigenScratchBytes(n, false),
                     [n](std::span<const double* const> in, double* out, MemoryPool& pool) {
                       return lapack::SymmetricEigen("linalg.eigvalsh", in[0], n, out, nullptr,
                                                     pool);
                     }});
}

Array inv(const Array& x) {
  Result<DType> dt = MatrixInput("linalg.inv", x, true);
  if (!dt.ok()) return Fail(dt.status());
  const Index n = Cols(x);
  return MakeCoreOp({"linalg.inv", {{x, 2}}, {n, n}, *dt, lapack::InverseScratchBytes(n),
                     [n](std::span<const double* const> in, double* out, MemoryPool& pool) {
                       return lapack::Inverse("linalg.inv", in[0], n, out, pool);
                     }});
}

namespace {

// The singular values and vectors (reduced) of one matrix, into scratch
// from `pool`; then `use(u, s, vh)`.
Status WithReducedSvd(std::string_view op, const double* a, Index m, Index n, MemoryPool& pool,
                      const std::function<void(const double*, const double*, const double*)>& use) {
  const Index k = std::min(m, n);
  STRATA_ASSIGN_OR_RETURN(Buffer ub, pool.Allocate(std::max<Index>(1, m * k) * 8));
  STRATA_ASSIGN_OR_RETURN(Buffer sb, pool.Allocate(std::max<Index>(1, k) * 8));
  STRATA_ASSIGN_OR_RETURN(Buffer vb, pool.Allocate(std::max<Index>(1, k * n) * 8));
  double* u = reinterpret_cast<double*>(ub.data());
  double* s = reinterpret_cast<double*>(sb.data());
  double* vh = reinterpret_cast<double*>(vb.data());
  STRATA_RETURN_IF_ERROR(lapack::Svd(op, a, m, n, true, false, u, s, vh, pool));
  use(u, s, vh);
  return Status::Ok();
}

int64_t ReducedSvdBytes(Index m, Index n) {
  const Index k = std::min(m, n);
  return (std::max<Index>(1, m * k) + std::max<Index>(1, k) + std::max<Index>(1, k * n)) * 8 +
         lapack::SvdScratchBytes(m, n, true, false);
}

}  // namespace

namespace {

// pinv and matrix_rank with a tolerance per matrix: `rtol` (an array
// broadcast against the batch axes) when given, else `tol` for all.
struct Toleranced {
  DType dtype;
  Index m, n, k;
  double tol;  // when not per matrix
  bool per_matrix;
  std::vector<CoreOperand> inputs;  // x, then rtol when given
};

Result<Toleranced> TolerancedInput(const char* op, const Array& x,
                                   const std::optional<Array>& rtol,
                                   std::optional<double> tol_in) {
  STRATA_ASSIGN_OR_RETURN(DType dt, MatrixInput(op, x, false));
  Toleranced t{dt, Rows(x), Cols(x), 0, 0, rtol.has_value(), {{x, 2}}};
  t.k = std::min(t.m, t.n);
  t.tol = tol_in ? *tol_in : static_cast<double>(std::max(t.m, t.n)) * Epsilon(dt);
  if (rtol) t.inputs.push_back({*rtol, 0});
  return t;
}

Array PinvImpl(const Array& x, const std::optional<Array>& rtol, std::optional<double> tol_in) {
  Result<Toleranced> in_or = TolerancedInput("linalg.pinv", x, rtol, tol_in);
  if (!in_or.ok()) return Fail(in_or.status());
  auto [dt, m, n, k, tol, per_matrix, inputs] = std::move(*in_or);
  return MakeCoreOp(
      {"linalg.pinv", std::move(inputs), {n, m}, dt, ReducedSvdBytes(m, n),
       // Init-captures: clang before 16 cannot capture structured bindings.
       [m = m, n = n, k = k, tol = tol, per_matrix = per_matrix](
           std::span<const double* const> in, double* out, MemoryPool& pool) {
         const double t = per_matrix ? in[1][0] : tol;
         return WithReducedSvd("linalg.pinv", in[0], m, n, pool,
                               [&](const double* u, const double* s, const double* vh) {
                                 const double cut = k > 0 ? t * s[0] : 0;
                                 // out = vhᵀ diag(1/s) uᵀ over s > cut.
                                 std::fill(out, out + n * m, 0.0);
                                 for (Index l = 0; l < k; ++l) {
                                   if (!(s[l] > cut)) continue;
                                   const double inv_s = 1.0 / s[l];
                                   for (Index i = 0; i < n; ++i) {
                                     const double vi = vh[l * n + i] * inv_s;
                                     for (Index j = 0; j < m; ++j) out[i * m + j] += vi * u[j * k + l];
                                   }
                                 }
                               });
       }});
}

Array MatrixRankImpl(const Array& x, const std::optional<Array>& rtol,
                     std::optional<double> tol_in) {
  Result<Toleranced> in_or = TolerancedInput("linalg.matrix_rank", x, rtol, tol_in);
  if (!in_or.ok()) return Fail(in_or.status());
  auto [dt, m, n, k, tol, per_matrix, inputs] = std::move(*in_or);
  return MakeCoreOp(
      {"linalg.matrix_rank", std::move(inputs), {}, DTypeId::kInt64,
       lapack::SvdScratchBytes(m, n, false, false) + std::max<Index>(1, k) * 8,
       // Init-captures: clang before 16 cannot capture structured bindings.
       [m = m, n = n, k = k, tol = tol, per_matrix = per_matrix](
           std::span<const double* const> in, double* out, MemoryPool& pool) -> Status {
         const double t = per_matrix ? in[1][0] : tol;
         STRATA_ASSIGN_OR_RETURN(Buffer sb, pool.Allocate(std::max<Index>(1, k) * 8));
         double* s = reinterpret_cast<double*>(sb.data());
         STRATA_RETURN_IF_ERROR(
             lapack::Svd("linalg.matrix_rank", in[0], m, n, false, false, nullptr, s, nullptr, pool));
         const double cut = k > 0 ? t * s[0] : 0;
         Index rank = 0;
         for (Index l = 0; l < k; ++l) rank += s[l] > cut;
         *out = static_cast<double>(rank);
         return Status::Ok();
       }});
}

Status CheckRtol(std::string_view op, const Array& rtol) {
  if (!rtol.ok()) return rtol.status();
  if (!rtol.dtype().is_float() && !rtol.dtype().is_integer()) {
    return InvalidArgumentError(
        fmt::format("{}: rtol must be a real number or array, got {}", op, rtol.dtype().name()));
  }
  return Status::Ok();
}

}  // namespace

Array pinv(const Array& x, std::optional<double> rtol) { return PinvImpl(x, std::nullopt, rtol); }

Array pinv(const Array& x, const Array& rtol) {
  if (Status s = CheckRtol("linalg.pinv", rtol); !s.ok()) return Fail(s);
  return PinvImpl(x, rtol, std::nullopt);
}

Array matrix_rank(const Array& x, std::optional<double> rtol) {
  return MatrixRankImpl(x, std::nullopt, rtol);
}

Array matrix_rank(const Array& x, const Array& rtol) {
  if (Status s = CheckRtol("linalg.matrix_rank", rtol); !s.ok()) return Fail(s);
  return MatrixRankImpl(x, rtol, std::nullopt);
}

QrResult qr(const Array& x, std::string_view mode) {
  Result<DType> dt = MatrixInput("linalg.qr", x, false);
  if (!dt.ok()) return {Fail(dt.status()), Fail(dt.status())};
  if (mode != "reduced" && mode != "complete") {
    Array e = Invalid(fmt::format("linalg.qr: mode must be 'reduced' or 'complete', got '{}'", mode));
    return {e, e};
  }
  const bool complete = mode == "complete";
  if (!complete && UseTsqr(x)) {
    Result<TsqrFactors> f = Tsqr("linalg.qr", x, *dt, true);
    if (!f.ok()) return {Fail(f.status()), Fail(f.status())};
    return {f->Q, f->R};
  }
  const Index m = Rows(x), n = Cols(x), k = std::min(m, n);
  const Index qc = complete ? m : k, rr = complete ? m : k;
  // Packed: [Q (m x qc) | R ᵀ... ] as (m + rr) x max(qc, n): Q in the top
  // rows, R below.
  const Index width = std::max(qc, n);
  Array packed = MakeCoreOp(
      {"linalg.qr", {{x, 2}}, {m + rr, width}, *dt,
       lapack::QrScratchBytes(m, n, complete) + (m * qc + rr * n) * 8,
       [m, n, qc, rr, width, complete](std::span<const double* const> in, double* out,
                                       MemoryPool& pool) -> Status {
         STRATA_ASSIGN_OR_RETURN(Buffer qb, pool.Allocate(std::max<Index>(1, m * qc) * 8));
         STRATA_ASSIGN_OR_RETURN(Buffer rb, pool.Allocate(std::max<Index>(1, rr * n) * 8));
         double* q = reinterpret_cast<double*>(qb.data());
         double* r = reinterpret_cast<double*>(rb.data());
         STRATA_RETURN_IF_ERROR(lapack::Qr("linalg.qr", in[0], m, n, complete, q, r, pool));
         std::fill(out, out + (m + rr) * width, 0.0);
         for (Index i = 0; i < m; ++i) std::memcpy(out + i * width, q + i * qc, qc * 8);
         for (Index i = 0; i < rr; ++i) std::memcpy(out + (m + i) * width, r + i * n, n * 8);
         return Status::Ok();
       }});
  if (!packed.ok()) return {packed, packed};
  return {Unpack2(packed, 0, m, 0, qc), Unpack2(packed, m, m + rr, 0, n)};
}

Array solve(const Array& a, const Array& b) {
  Result<DType> dt = MatrixInput("linalg.solve", a, true);
  if (!dt.ok()) return Fail(dt.status());
  if (!b.ok()) return b;
  Result<DType> dtb = DecompositionDType("linalg.solve", b.dtype());
  if (!dtb.ok()) return Fail(dtb.status());
  const DType dtype = *dt == *dtb ? *dt : DType(DTypeId::kFloat64);
  const Index n = Cols(a);
  const bool vector = b.ndim() == 1;
  if (b.ndim() == 0 || b.shape()[vector ? 0 : b.ndim() - 2] != n) {
    return Invalid(fmt::format(
        "linalg.solve: b of shape {} does not match a of shape {} (b must be (M,) or (..., M, K) "
        "with M = {})",
        ShapeToString(b.shape()), ShapeToString(a.shape()), n));
  }
  const Index k = vector ? 1 : Cols(b);
  Array bm = vector ? expand_dims(b, -1) : b;
  Array x = MakeCoreOp({"linalg.solve", {{a, 2}, {bm, 2}}, {n, k}, dtype,
                        lapack::SolveScratchBytes(n, k),
                        [n, k](std::span<const double* const> in, double* out, MemoryPool& pool) {
                          return lapack::Solve("linalg.solve", in[0], in[1], n, k, out, pool);
                        }});
  if (!x.ok() || !vector) return x;
  return squeeze(x, {x.ndim() - 1});
}

SvdResult svd(const Array& x, bool full_matrices) {
  Result<DType> dt = MatrixInput("linalg.svd", x, false);
  if (!dt.ok()) return {Fail(dt.status()), Fail(dt.status()), Fail(dt.status())};
  const Index m = Rows(x), n = Cols(x), k = std::min(m, n);
  if (!full_matrices && UseTsqr(x)) {
    // x = Q R and R = U_r S Vh, so U = Q U_r.
    Result<TsqrFactors> f = Tsqr("linalg.svd", x, *dt, true);
    if (!f.ok()) return {Fail(f.status()), Fail(f.status()), Fail(f.status())};
    SvdResult r = svd(f->R, false);
    r.U = matmul(f->Q, r.U);
    return r;
  }
  const Index uc = full_matrices ? m : k, vr = full_matrices ? n : k;
  // Packed: U (m x uc) on top, Vh (vr x n) below, S in the last row.
  const Index width = std::max(uc, n);
  const Index rows = m + vr + 1;
  Array packed = MakeCoreOp(
      {"linalg.svd", {{x, 2}}, {rows, width}, *dt,
       lapack::SvdScratchBytes(m, n, true, full_matrices) +
           (std::max<Index>(1, m * uc) + std::max<Index>(1, vr * n) + std::max<Index>(1, k)) * 8,
       [m, n, k, uc, vr, width, rows, full_matrices](std::span<const double* const> in,
                                                     double* out, MemoryPool& pool) -> Status {
         STRATA_ASSIGN_OR_RETURN(Buffer ub, pool.Allocate(std::max<Index>(1, m * uc) * 8));
         STRATA_ASSIGN_OR_RETURN(Buffer vb, pool.Allocate(std::max<Index>(1, vr * n) * 8));
         STRATA_ASSIGN_OR_RETURN(Buffer sb, pool.Allocate(std::max<Index>(1, k) * 8));
         double* u = reinterpret_cast<double*>(ub.data());
         double* vh = reinterpret_cast<double*>(vb.data());
         double* s = reinterpret_cast<double*>(sb.data());
         STRATA_RETURN_IF_ERROR(
             lapack::Svd("linalg.svd", in[0], m, n, true, full_matrices, u, s, vh, pool));
         std::fill(out, out + rows * width, 0.0);
         for (Index i = 0; i < m; ++i) std::memcpy(out + i * width, u + i * uc, uc * 8);
         for (Index i = 0; i < vr; ++i) std::memcpy(out + (m + i) * width, vh + i * n, n * 8);
         std::memcpy(out + (m + vr) * width, s, k * 8);
         return Status::Ok();
       }});
  if (!packed.ok()) return {packed, packed, packed};
  return {Unpack2(packed, 0, m, 0, uc), UnpackRow(packed, m + vr, 0, k),
          Unpack2(packed, m, m + vr, 0, n)};
}

Array svdvals(const Array& x) {
  Result<DType> dt = MatrixInput("linalg.svdvals", x, false);
  if (!dt.ok()) return Fail(dt.status());
  if (UseTsqr(x)) {
    // The singular values of x are those of its R factor.
    Result<TsqrFactors> f = Tsqr("linalg.svdvals", x, *dt, false);
    if (!f.ok()) return Fail(f.status());
    return SvdvalsCore(f->R, *dt);
  }
  return SvdvalsCore(x, *dt);
}

}  // namespace strata::linalg
