// Reductions as a tree (shared/DESIGN.md): a partial reduce of every block into
// a small state, combine rounds that merge up to split_every states per axis,
// and a finalize step that turns the last state into the result.
#include "strata/api/reduction.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "strata/api/elementwise.h"
#include "strata/api/internal.h"
#include "strata/base/tuning.h"

namespace strata {

using internal_api::MakeBlockwise;
using internal_api::NormalizeAxes;

namespace {

bool NeedsIdentity(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin:
    case ReduceOp::kMax:
    case ReduceOp::kArgmin:
    case ReduceOp::kArgmax:
    case ReduceOp::kNanMin:
    case ReduceOp::kNanMax:
    case ReduceOp::kNanArgmin:
    case ReduceOp::kNanArgmax:
    case ReduceOp::kFirst:
    case ReduceOp::kLast:
    case ReduceOp::kNanFirst:
    case ReduceOp::kNanLast:
      return true;
    default:
      return false;
  }
}

// Ops whose finalized -1 means "every element of the slice was NaN".
bool FailsOnAllNan(ReduceOp op) { return op == ReduceOp::kNanArgmin || op == ReduceOp::kNanArgmax; }

// Blocks merged per round along each reduced axis, so that one combine task's
// states fit in the budget with room for its output. (Not by the worker
// count: the tree, and so the rounding of a sum, is the same on any
// executor; the fuse pass keeps the first round even across the workers.)
int ChooseSplitEvery(int requested, int64_t state_block_bytes, int num_axes, const Spec& spec) {
  if (requested >= 2) return requested;
  const int64_t budget = internal_api::TaskMemoryBudget(spec);
  // Three states per input (the inputs, the output, and room for as much
  // again: a combine round once gathered a copy of its inputs; it merges
  // them in place now, and the factor stays so that the trees, and so the
  // sums' rounding, are what they were), and at most
  // max_combine_state_bytes of inputs. (A mean over time of 21 blocks of
  // (24, 721, 1440) float64 merged 16 states of 16.6 MB at once, so all 21
  // were live, each a fresh buffer: peak RSS 1.48-1.55 GB; merged 3 at a
  // time, 1.15-1.16 GB.)
  const Tuning& tuning = GetTuning();
  int64_t fit = std::min(budget / std::max<int64_t>(1, 3 * state_block_bytes),
                         tuning.max_combine_state_bytes / std::max<int64_t>(1, state_block_bytes));
  double per_axis = std::pow(static_cast<double>(std::max<int64_t>(fit, 2)), 1.0 / std::max(1, num_axes));
  return std::clamp(static_cast<int>(per_axis), 2, tuning.max_split_every);
}

}  // namespace

Array reduce(ReduceOp op, const Array& x_in, std::vector<int> axes_in, ReduceOptions options) {
  if (!x_in.ok()) return x_in;
  // float16 is a storage type: its reductions compute (and return) float32.
  const Array x = x_in.dtype().is_float16() ? astype(x_in, DTypeId::kFloat32) : x_in;
  const std::string name(ReduceOpName(op));
  Result<std::vector<int>> axes_r = NormalizeAxes(axes_in, x.ndim(), name);
  if (!axes_r.ok()) return Array::FromStatus(axes_r.status());
  const std::vector<int> axes = *axes_r;
  ReductionOptions ropts;
  ropts.ddof = options.ddof;
  if (op == ReduceOp::kMean) {
    // Every final state covers the reduced axes whole: no count per element.
    ropts.count = 1;
    for (int a : axes) ropts.count *= x.shape()[a];
  }
  Result<std::shared_ptr<const ReductionKernel>> kernel_r =
      MakeReductionKernel(op, x.dtype(), ropts);
  if (!kernel_r.ok()) return Array::FromStatus(kernel_r.status());
  std::shared_ptr<const ReductionKernel> kernel = *kernel_r;
  const int rank = x.ndim();
  auto is_reduced = [&](int a) { return std::find(axes.begin(), axes.end(), a) != axes.end(); };
  bool empty_reduction = false;
  for (int a : axes) empty_reduction = empty_reduction || x.shape()[a] == 0;
  if (empty_reduction && NeedsIdentity(op)) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "{}: zero-size reduction over an axis of extent 0 has no identity", name)));
  }
  const int W = kernel->state_width();
  const DType sdt = kernel->state_dtype();

  // Partial: one state per input block. Reduced axes get one element per
  // block, plus a trailing state axis.
  std::vector<std::vector<Index>> psizes(rank + 1);
  Shape pshape(rank + 1);
  for (int a = 0; a < rank; ++a) {
    if (is_reduced(a)) {
      Index nb = empty_reduction ? 1 : x.chunks().grid_shape()[a];
      psizes[a].assign(nb, 1);
    } else {
      psizes[a] = x.chunks().AxisChunkSizes(a);
    }
  }
  psizes[rank] = {W};
  ChunkGrid pgrid = internal_api::GridFromSizes(psizes);
  Array state;
  if (empty_reduction) {
    // No input blocks along a reduced axis: the identity state, computed from
    // an empty view.
    Shape in_shape = x.shape();
    state = internal_api::MakeVirtual(
        name + "-empty", pgrid.shape(), pgrid, sdt, x.spec(),
        [kernel, axes, in_shape](const Box& box, const ArrayView& out) {
          Shape empty_shape(box.shape.begin(), box.shape.end() - 1);
          for (int a : axes) empty_shape[a] = 0;
          NDArray dummy = *NDArray::Allocate(*MemoryPool::Default(), kernel->input_dtype(), empty_shape);
          Shape origin(empty_shape.size(), 0);
          kernel->Partial(dummy.view(), axes, origin, in_shape, out);
          return Status::Ok();
        });
  } else {
    InputMap map;
    for (int a = 0; a < rank; ++a) {
      map.axes.push_back(AxisMap::Identity(a, x.chunks().grid_shape()[a]));
    }
    Shape array_shape = x.shape();
    // When x is a fused elementwise chain, the runtime lets this op compute it
    // strip by strip (BlockRequest::compute_region): strips along the first
    // kept axis, about Tuning::stream_strip_bytes each, so x's block is never
    // whole.
    const Shape nominal = x.chunksize();
    int strip_axis = -1;
    for (int a = 0; a < rank; ++a) {
      if (!is_reduced(a) && nominal[a] > 1) {
        strip_axis = a;
        break;
      }
    }
    Index strip_rows = 0;
    int64_t strip_elements = NumElements(nominal);
    if (strip_axis >= 0) {
      const Index row = NumElements(nominal) / nominal[strip_axis];
      const int64_t strip_bytes = GetTuning().stream_strip_bytes;
      strip_rows = std::clamp<Index>(strip_bytes / (16 * std::max<Index>(row, 1)), 1,
                                     nominal[strip_axis]);
      strip_elements = strip_rows * row;
    }
    // Where x's leaves are big Zarr chunks, the runtime reads them a strip
    // at a time instead and folds each strip in (Node::fold_strip): strips
    // along the outermost axis longer than 1, about Tuning::stream_part_bytes
    // each, so a strip is a few contiguous runs of a chunk's stored blocks.
    // Along a reduced axis, strips fold into the state in order
    // (PartialInto), the whole block's state bit for bit when a later axis is
    // kept.
    int part_axis = -1;
    for (int a = 0; a < rank && part_axis < 0; ++a) {
      if (nominal[a] > 1) part_axis = a;
    }
    Shape part_strip, part_piece;
    if (part_axis >= 0) {
      bool later_kept = false;
      for (int a = part_axis + 1; a < rank; ++a) later_kept |= !is_reduced(a);
      const bool folds = !is_reduced(part_axis) || (kernel->folds_in_order() && later_kept);
      const int64_t per_index =
          NumElements(nominal) / nominal[part_axis] * static_cast<int64_t>(x.dtype().size());
      const Index part_rows = std::clamp<Index>(
          GetTuning().stream_part_bytes / std::max<int64_t>(per_index, 1), 1, nominal[part_axis]);
      if (folds && part_rows < nominal[part_axis]) {
        part_strip = nominal;
        part_strip[part_axis] = part_rows;
        // Pieces along the first kept axis the strip spans, each a
        // disjoint part of the state.
        part_piece = part_strip;
        for (int a = 0; a < rank; ++a) {
          if (is_reduced(a) || part_strip[a] == 1) continue;
          const int64_t row = NumElements(part_strip) / part_strip[a] * x.dtype().size();
          part_piece[a] = std::clamp<Index>(GetTuning().stream_strip_bytes / std::max<int64_t>(row, 1),
                                            1, part_strip[a]);
          break;
        }
      }
    }
    const bool part_axis_reduced = part_axis >= 0 && is_reduced(part_axis);
    const DType idt = x.dtype();
    StripFoldFunction fold_strip;
    if (!part_strip.empty()) {
      std::vector<bool> reduced(rank);
      for (int a = 0; a < rank; ++a) reduced[a] = is_reduced(a);
      fold_strip = [kernel, axes, array_shape, part_axis_reduced, reduced](
                       const ConstArrayView& values, std::span<const Index> origin,
                       const Box& piece, bool first, const ArrayView& state) {
        // The piece's part of the state: its extent on the kept axes.
        Box state_part = Box::FromShape(state.shape());
        for (int a = 0; a < piece.rank(); ++a) {
          if (reduced[a]) continue;
          state_part.origin[a] = piece.origin[a];
          state_part.shape[a] = piece.shape[a];
        }
        if (part_axis_reduced && !first) {
          kernel->PartialInto(values, axes, origin, array_shape, state.Slice(state_part));
        } else {
          kernel->Partial(values, axes, origin, array_shape, state.Slice(state_part));
        }
      };
    }
    BlockFunction fn = [kernel, axes, array_shape, sdt, idt, strip_axis,
                        strip_rows](const BlockRequest& r) -> Result<NDArray> {
      STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, sdt, r.box.shape));
      const InputBlock& in = r.inputs[0][0];
      if (!r.compute_region) {
        kernel->Partial(in.view, axes, in.box.origin, array_shape, out.view());
        return out;
      }
      const Shape& bshape = in.box.shape;
      if (strip_axis < 0 || NumElements(bshape) == 0) {
        STRATA_ASSIGN_OR_RETURN(NDArray whole, NDArray::Allocate(*r.pool, idt, bshape));
        STRATA_RETURN_IF_ERROR(r.compute_region(Box::FromShape(bshape), whole.view()));
        kernel->Partial(whole.view(), axes, in.box.origin, array_shape, out.view());
        return out;
      }
      Shape strip_shape = bshape;
      strip_shape[strip_axis] = std::min(strip_rows, bshape[strip_axis]);
      STRATA_ASSIGN_OR_RETURN(NDArray scratch, NDArray::Allocate(*r.pool, idt, strip_shape));
      Shape state_shape = out.shape();
      for (Index start = 0; start < bshape[strip_axis]; start += strip_rows) {
        const Index rows = std::min(strip_rows, bshape[strip_axis] - start);
        Box strip = Box::FromShape(bshape);
        strip.origin[strip_axis] = start;
        strip.shape[strip_axis] = rows;
        Box scratch_part = Box::FromShape(strip_shape);
        scratch_part.shape[strip_axis] = rows;
        ArrayView piece = scratch.view().Slice(scratch_part);
        STRATA_RETURN_IF_ERROR(r.compute_region(strip, piece));
        Box state_part = Box::FromShape(state_shape);
        state_part.origin[strip_axis] = start;
        state_part.shape[strip_axis] = rows;
        Shape origin = in.box.origin;
        origin[strip_axis] += start;
        kernel->Partial(piece, axes, origin, array_shape, out.view().Slice(state_part));
      }
      return out;
    };
    const int64_t scratch = kernel->ScratchBytes(x.chunksize());
    state = MakeBlockwise(name + "-partial", pgrid.shape(), sdt, pgrid, {x}, {std::move(map)},
                          std::move(fn), scratch, x.spec(), NodeKind::kBlockwise,
                          [&](Node& node) {
                            node.streams_input = true;
                            node.stream_strip_elements = strip_elements;
                            node.stream_part_strip = part_strip;
                            node.stream_part_piece = part_piece;
                            node.fold_strip = fold_strip;
                          });
  }

  // Combine rounds until one state remains along every reduced axis.
  int64_t state_block_bytes = state.chunks().max_block_elements() * sdt.size();
  const int split = ChooseSplitEvery(options.split_every, state_block_bytes,
                                     static_cast<int>(axes.size()), *x.spec());
  int round = 0;
  while (true) {
    bool done = true;
    for (int a : axes) done = done && state.shape()[a] <= 1;
    if (done) break;
    ++round;
    std::vector<std::vector<Index>> sizes(rank + 1);
    InputMap map;
    for (int a = 0; a <= rank; ++a) {
      const Index n = state.chunks().grid_shape()[a];
      if (a < rank && is_reduced(a) && state.shape()[a] > 1) {
        const Index groups = (n + split - 1) / split;
        sizes[a].assign(groups, 1);
        map.axes.push_back(AxisMap::Grouped(a, split, n));
      } else {
        sizes[a] = state.chunks().AxisChunkSizes(a);
        map.axes.push_back(AxisMap::Identity(a, n));
      }
    }
    ChunkGrid grid = internal_api::GridFromSizes(sizes);
    // A block combines its first input state alone, then merges each next
    // one in place (ReductionKernel::CombineInto: the same bits as combining
    // them gathered), never holding a copy of its inputs; TaskRunner::
    // FoldGroup folds a fused tree with the same two functions.
    FoldFunction fold = [kernel, axes, sdt](const ConstArrayView& one,
                                            MemoryPool& pool) -> Result<NDArray> {
      Shape combined = one.shape();
      for (int ax : axes) combined[ax] = 1;
      STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(pool, sdt, combined));
      kernel->Combine(one, axes, out.view());
      return out;
    };
    MergeFunction merge = [kernel, axes](const ConstArrayView& one, const ArrayView& acc) {
      kernel->CombineInto(one, axes, acc);
    };
    BlockFunction fn = [fold, merge](const BlockRequest& r) -> Result<NDArray> {
      const auto& blocks = r.inputs[0];
      STRATA_ASSIGN_OR_RETURN(NDArray out, fold(blocks[0].view, *r.pool));
      for (size_t i = 1; i < blocks.size(); ++i) merge(blocks[i].view, out.view());
      return out;
    };
    state = MakeBlockwise(fmt::format("{}-combine-{}", name, round), grid.shape(), sdt, grid,
                          {state}, {std::move(map)}, std::move(fn), /*extra_mem=*/0, x.spec(),
                          NodeKind::kBlockwise, [&](Node& node) {
                            node.fold_states = std::move(fold);
                            node.merge_state = std::move(merge);
                          });
  }

  // Finalize: drop the state axis (and the reduced axes unless keepdims).
  Shape out_shape;
  std::vector<std::vector<Index>> out_sizes;
  InputMap map;
  int out_axis = 0;
  for (int a = 0; a < rank; ++a) {
    if (is_reduced(a)) {
      if (options.keepdims) {
        out_shape.push_back(1);
        out_sizes.push_back({1});
        map.axes.push_back(AxisMap::Identity(out_axis++, 1));
      } else {
        map.axes.push_back(AxisMap::Fixed({0}, 1));
      }
    } else {
      out_shape.push_back(x.shape()[a]);
      out_sizes.push_back(state.chunks().AxisChunkSizes(a));
      map.axes.push_back(AxisMap::Identity(out_axis++, state.chunks().grid_shape()[a]));
    }
  }
  map.axes.push_back(AxisMap::Fixed({0}, 1));
  const DType rdt = kernel->result_dtype();
  const bool check_all_nan = FailsOnAllNan(op) && (x.dtype().is_float() || x.dtype().is_complex());
  BlockFunction fn = [kernel, rdt, check_all_nan, name](const BlockRequest& r) -> Result<NDArray> {
    const ConstArrayView& st = r.inputs[0][0].view;
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, rdt, r.box.shape));
    Shape kept(st.shape().begin(), st.shape().end() - 1);
    kernel->Finalize(st, out.view().Reshaped(kept));
    if (check_all_nan) {
      for (int64_t p : out.values<int64_t>()) {
        if (p < 0) return InvalidArgumentError(name + ": All-NaN slice encountered");
      }
    }
    return out;
  };
  return MakeBlockwise(name, out_shape, rdt, internal_api::GridFromSizes(out_sizes), {state},
                       {std::move(map)}, std::move(fn), 0, x.spec());
}

Array sum(const Array& x, std::vector<int> axes, ReduceOptions o) { return reduce(ReduceOp::kSum, x, std::move(axes), o); }
Array prod(const Array& x, std::vector<int> axes, ReduceOptions o) { return reduce(ReduceOp::kProd, x, std::move(axes), o); }
Array mean(const Array& x, std::vector<int> axes, ReduceOptions o) { return reduce(ReduceOp::kMean, x, std::move(axes), o); }
Array min(const Array& x, std::vector<int> axes, ReduceOptions o) { return reduce(ReduceOp::kMin, x, std::move(axes), o); }
Array max(const Array& x, std::vector<int> axes, ReduceOptions o) { return reduce(ReduceOp::kMax, x, std::move(axes), o); }
Array var(const Array& x, std::vector<int> axes, ReduceOptions o) { return reduce(ReduceOp::kVar, x, std::move(axes), o); }
Array std(const Array& x, std::vector<int> axes, ReduceOptions o) { return reduce(ReduceOp::kStd, x, std::move(axes), o); }
Array all(const Array& x, std::vector<int> axes, ReduceOptions o) { return reduce(ReduceOp::kAll, x, std::move(axes), o); }
Array any(const Array& x, std::vector<int> axes, ReduceOptions o) { return reduce(ReduceOp::kAny, x, std::move(axes), o); }
Array count_nonzero(const Array& x, std::vector<int> axes, ReduceOptions o) {
  return reduce(ReduceOp::kCountNonzero, x, std::move(axes), o);
}

Array argmin(const Array& x, std::optional<int> axis, ReduceOptions o) {
  return reduce(ReduceOp::kArgmin, x, axis ? std::vector<int>{*axis} : std::vector<int>{}, o);
}
Array argmax(const Array& x, std::optional<int> axis, ReduceOptions o) {
  return reduce(ReduceOp::kArgmax, x, axis ? std::vector<int>{*axis} : std::vector<int>{}, o);
}

}  // namespace strata
