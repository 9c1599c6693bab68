// groupby_reduce: a reduction along one axis by integer group labels, with
// flox's "map-reduce" strategy built as a tree like reduction.cc:
//
//   x                 shape S, `axis` in nb blocks
//   <op>-partial      (nb, S with axis -> G, W): block (j, ...) holds the
//                     group states (GroupPartial) of x's blocks j along axis;
//                     chunks (1, x's chunks, G, W)
//   <op>-combine-k    the leading "blocks" axis merged split_every at a time
//                     (ReductionKernel::Combine over axis 0), until one is left
//   groupby-<op>      Finalize: the blocks and state axes dropped; shape S
//                     with axis -> G, x's chunks on the other axes, G whole
//
// where G = num_groups and W the kernel's state width. When the labels are
// known as the plan is built (host labels, or an in-memory label array) and
// blocks name fewer than G groups each (months on blocks of days), the partial
// holds states only for the groups each block names and they are merged per
// group (SparseGroupbyReduce below). One group state per
// block of x is (x's block over the other axes) x G x W values, so the budget
// bounds G times the other axes' chunk size; states that cannot fit (one per
// partial task, 5 per combine task) are refused when the array is built.
#include "strata/api/groupby.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>

#include "strata/api/compute.h"
#include "strata/api/elementwise.h"
#include "strata/api/internal.h"
#include "strata/api/reduction.h"
#include "strata/base/byte_size.h"
#include "strata/base/tuning.h"

namespace strata {
namespace internal_api {
namespace {

// The most of x's block a group-by partial reads at once.
constexpr int64_t kStripBytes = int64_t{32} << 20;

// The view without its leading axis (of extent 1).
ArrayView DropLeadingAxis(const ArrayView& v) {
  STRATA_DCHECK(v.rank() >= 1 && v.shape()[0] == 1);
  return ArrayView(v.data(), v.dtype(), Shape(v.shape().begin() + 1, v.shape().end()),
                   Shape(v.byte_strides().begin() + 1, v.byte_strides().end()));
}

// Blocks merged per combine round: as many states as fit in the budget with
// their gathered copy and the output ((2 s + 1) states), 2..16.
int ChooseGroupSplitEvery(int64_t state_block_bytes, const Spec& spec) {
  const int64_t budget = internal_api::TaskMemoryBudget(spec);
  const int64_t fit = (budget / std::max<int64_t>(1, state_block_bytes) - 1) / 2;
  return static_cast<int>(std::clamp<int64_t>(fit, 2, GetTuning().max_split_every));
}

// Group labels known when the plan is built, with the groups each block of x
// along the axis names (sorted, without negative labels) and each position's
// slot among its block's groups (-1 for a negative label).
struct BlockGroups {
  std::vector<std::vector<int64_t>> groups;  // per block
  std::vector<int64_t> slot;                 // per position along the axis
  int64_t total_slots = 0;                   // sum over blocks of max(1, groups)
};

BlockGroups GroupsPerBlock(const std::vector<int64_t>& labels, const std::vector<Index>& sizes) {
  BlockGroups b;
  b.slot.assign(labels.size(), -1);
  Index o = 0;
  for (Index n : sizes) {
    std::vector<int64_t> g;
    for (Index i = o; i < o + n; ++i) {
      if (labels[i] >= 0) g.push_back(labels[i]);
    }
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
    for (Index i = o; i < o + n; ++i) {
      if (labels[i] >= 0) b.slot[i] = std::lower_bound(g.begin(), g.end(), labels[i]) - g.begin();
    }
    b.total_slots += std::max<int64_t>(1, static_cast<int64_t>(g.size()));
    b.groups.push_back(std::move(g));
    o += n;
  }
  return b;
}

// The sparse form of the map-reduce (used when the labels are known when the
// plan is built and blocks name fewer groups than G, as months do on blocks
// of days): block j's partial holds states only for the n_j groups its labels
// name, so the partials of a time axis hold about one state per block instead
// of G. Then, per group, the states of the blocks naming it are merged
// split_every at a time (at least one round, so that every group ends in a
// block of its own), and one finalize task assembles the G groups.
//
//   <op>-partial      x's shape with axis -> sum_j n_j (chunks n_j), plus W
//   <op>-combine-k    axis -> one chunk (extent 1) per merged run of a group
//   groupby-<op>      x's shape with axis -> G (whole), as the dense form
Array SparseGroupbyReduce(const Array& x, int axis, const BlockGroups& bg, Index G,
                          std::shared_ptr<const ReductionKernel> kernel, int split_every,
                          const std::string& name, const Shape& out_shape) {
  const int rank = x.ndim();
  const int W = kernel->state_width();
  const DType sdt = kernel->state_dtype();
  const Index nb = x.chunks().grid_shape()[axis];
  const DType idt = x.dtype();

  // Partial.
  std::vector<std::vector<Index>> psizes(rank + 1);
  for (int a = 0; a < rank; ++a) psizes[a] = x.chunks().AxisChunkSizes(a);
  psizes[axis].clear();
  for (const auto& g : bg.groups) {
    psizes[axis].push_back(std::max<Index>(1, static_cast<Index>(g.size())));
  }
  psizes[rank] = {W};
  ChunkGrid pgrid = GridFromSizes(psizes);
  InputMap pmap;
  for (int a = 0; a < rank; ++a)
    pmap.axes.push_back(AxisMap::Identity(a, x.chunks().grid_shape()[a]));
  auto slots = std::make_shared<const std::vector<int64_t>>(bg.slot);
  // x's block is read in strips along the first other axis (a Zarr chunk's
  // blosc blocks a few at a time), each reduced into its slice of the
  // states: never the block decoded whole beside its states. (Read whole, a
  // (24, 721, 1440) block of days took 200 MB per task for 33 MB of states.)
  int strip_axis = -1;
  for (int a = 0; a < rank && strip_axis < 0; ++a) {
    if (a != axis) strip_axis = a;
  }
  int64_t strip_bytes = x.node()->max_block_bytes();
  Index strip_step = 0;  // indices along strip_axis per strip; 0: the whole block
  if (strip_axis >= 0) {
    const Index along = x.chunksize()[strip_axis];
    const int64_t per_index = std::max<int64_t>(1, x.node()->max_block_bytes() /
                                                       std::max<Index>(1, along));
    strip_step = std::clamp<Index>(kStripBytes / per_index, 1, std::max<Index>(1, along));
    strip_bytes = std::min(strip_bytes, strip_step * per_index);
  }
  BlockFunction pfn = [kernel, slots, axis, sdt, idt, strip_axis,
                       strip_step](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, sdt, r.box.shape));
    const InputBlock& in = r.inputs[0][0];
    std::span<const int64_t> block_slots =
        std::span<const int64_t>(*slots).subspan(in.box.origin[axis], in.box.shape[axis]);
    const Index along = strip_axis < 0 ? 1 : in.box.shape[strip_axis];
    const Index step = strip_axis < 0 ? 1 : std::min(strip_step, along);
    Shape strip_shape = in.box.shape;
    if (strip_axis >= 0) strip_shape[strip_axis] = step;
    STRATA_ASSIGN_OR_RETURN(NDArray strip, NDArray::Allocate(*r.pool, idt, strip_shape));
    if (along == 0) {  // no element: every state empty
      GroupPartial(*kernel, strip.view(), axis, block_slots, r.box.shape[axis], out.view(),
                   in.box.origin[axis]);
      return out;
    }
    for (Index i0 = 0; i0 < along; i0 += step) {
      Box part = in.box;
      Box states = Box::FromShape(out.shape());
      if (strip_axis >= 0) {
        part.origin[strip_axis] += i0;
        part.shape[strip_axis] = std::min(step, along - i0);
        states.origin[strip_axis] = i0;
        states.shape[strip_axis] = part.shape[strip_axis];
      }
      const ArrayView sv = strip.view().Slice(Box::FromShape(part.shape));
      STRATA_RETURN_IF_ERROR(r.read_part(0, in, part, sv));
      GroupPartial(*kernel, sv, axis, block_slots, r.box.shape[axis], out.view().Slice(states),
                   in.box.origin[axis]);
    }
    return out;
  };
  // A block naming two groups is read by two combine tasks: computing the
  // partial inside them would read and reduce x's block twice.
  Array state = MakeBlockwise(name + "-partial", pgrid.shape(), sdt, pgrid, {x},
                              {std::move(pmap)}, std::move(pfn),
                              strip_bytes + kernel->ScratchBytes(x.chunksize()), x.spec(),
                              NodeKind::kBlockwise, [](Node& node) {
                                node.keep_materialized = true;
                                node.partial_inputs = {true};
                              });

  // refs[g]: the (chunk along axis, slot in it) of group g's states.
  std::vector<std::vector<std::pair<Index, Index>>> refs(G);
  Index max_slots = 1;
  for (Index j = 0; j < nb; ++j) {
    const auto& g = bg.groups[j];
    max_slots = std::max<Index>(max_slots, static_cast<Index>(g.size()));
    for (size_t s = 0; s < g.size(); ++s) refs[g[s]].push_back({j, static_cast<Index>(s)});
  }
  // One group's state on one block of the other axes.
  Shape slot_shape = x.chunksize();
  slot_shape[axis] = 1;
  slot_shape.push_back(W);
  const int64_t slot_bytes = NumElements(slot_shape) * sdt.size();
  int split = split_every;
  if (split < 2) {
    // Inputs (a block of up to max_slots states each), their gathered copy
    // and the output.
    const int64_t budget = TaskMemoryBudget(*x.spec());
    const int64_t fit = (budget / std::max<int64_t>(1, slot_bytes) - 1) / (max_slots + 1);
    split = static_cast<int>(std::clamp<int64_t>(fit, 2, GetTuning().max_split_every));
  }
  for (int round = 1;; ++round) {
    bool last = true;
    std::vector<std::vector<Index>> table;
    auto runs = std::make_shared<std::vector<std::vector<std::pair<Index, Index>>>>();
    std::vector<std::vector<std::pair<Index, Index>>> next(G);
    for (Index g = 0; g < G; ++g) {
      const auto& list = refs[g];
      for (size_t k = 0; k < list.size(); k += split) {
        const size_t end = std::min(list.size(), k + split);
        runs->emplace_back(list.begin() + k, list.begin() + end);
        table.emplace_back();
        for (size_t i = k; i < end; ++i) table.back().push_back(list[i].first);
        next[g].push_back({static_cast<Index>(table.size()) - 1, 0});
      }
      last = last && next[g].size() <= 1;
    }
    const Index items = static_cast<Index>(table.size());
    std::vector<std::vector<Index>> sizes(rank + 1);
    InputMap map;
    for (int a = 0; a <= rank; ++a) {
      const Index n = state.chunks().grid_shape()[a];
      if (a == axis) {
        sizes[a].assign(items, 1);
        map.axes.push_back(AxisMap::Table(a, table, n));
      } else {
        sizes[a] = state.chunks().AxisChunkSizes(a);
        map.axes.push_back(AxisMap::Identity(a, n));
      }
    }
    BlockFunction fn = [kernel, sdt, axis, runs](const BlockRequest& r) -> Result<NDArray> {
      const auto& run = (*runs)[r.block[axis]];
      const auto& blocks = r.inputs[0];
      STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, sdt, r.box.shape));
      Shape gshape = r.box.shape;
      gshape[axis] = static_cast<Index>(blocks.size());
      STRATA_ASSIGN_OR_RETURN(NDArray gathered, NDArray::Allocate(*r.pool, sdt, gshape));
      for (size_t i = 0; i < blocks.size(); ++i) {
        const Index chunk = blocks[i].block[axis];
        auto it = std::find_if(run.begin(), run.end(),
                               [chunk](const auto& ref) { return ref.first == chunk; });
        STRATA_CHECK(it != run.end()) << "block " << chunk << " is not in its run";
        Box from = Box::FromShape(blocks[i].view.shape());
        from.origin[axis] = it->second;
        from.shape[axis] = 1;
        Box to = Box::FromShape(gshape);
        to.origin[axis] = static_cast<Index>(i);
        to.shape[axis] = 1;
        CopyArray(blocks[i].view.Slice(from), gathered.view().Slice(to));
      }
      const int axes[] = {axis};
      kernel->Combine(gathered.view(), axes, out.view());
      return out;
    };
    const int64_t gathered = static_cast<int64_t>(split) * slot_bytes;
    ChunkGrid grid = GridFromSizes(sizes);
    state = MakeBlockwise(fmt::format("{}-combine-{}", name, round), grid.shape(), sdt, grid,
                          {state}, {std::move(map)}, std::move(fn), gathered, x.spec());
    refs = std::move(next);
    if (last) break;
  }

  // Finalize: the G groups' states in one dense state (empty where a group
  // has no element), then the kernel's Finalize.
  std::vector<Index> present;  // the block of each present group's state
  auto group_of = std::make_shared<std::vector<Index>>(state.chunks().grid_shape()[axis], -1);
  for (Index g = 0; g < G; ++g) {
    if (refs[g].empty()) continue;
    present.push_back(refs[g][0].first);
    (*group_of)[refs[g][0].first] = g;
  }
  std::vector<std::vector<Index>> out_sizes(rank);
  InputMap map;
  for (int a = 0; a < rank; ++a) {
    const Index n = state.chunks().grid_shape()[a];
    if (a == axis) {
      out_sizes[a] = {G};
      map.axes.push_back(AxisMap::Table(a, {present}, n));
    } else {
      out_sizes[a] = state.chunks().AxisChunkSizes(a);
      map.axes.push_back(AxisMap::Identity(a, n));
    }
  }
  map.axes.push_back(AxisMap::Fixed({0}, 1));
  const DType rdt = kernel->result_dtype();
  // Each group's state finalizes straight into its slice of the output; the
  // groups no block names, from one empty state. (A dense copy of all G
  // states first took G states beside the inputs: 200 MB for 12 months of
  // (721, 1440) maps.)
  BlockFunction fn = [kernel, rdt, sdt, idt, axis, G,
                      group_of](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, rdt, r.box.shape));
    auto group_slice = [&](Index g) {
      Box to = Box::FromShape(out.shape());
      to.origin[axis] = g;
      to.shape[axis] = 1;
      return out.view().Slice(to);
    };
    std::vector<bool> done(G, false);
    for (const InputBlock& b : r.inputs[0]) {
      const Index g = (*group_of)[b.block[axis]];
      STRATA_CHECK(g >= 0) << "block " << b.block[axis] << " holds no group";
      kernel->Finalize(b.view, group_slice(g));
      done[g] = true;
    }
    if (std::find(done.begin(), done.end(), false) == done.end()) return out;
    Shape one_shape = r.box.shape;
    one_shape[axis] = 1;
    one_shape.push_back(kernel->state_width());
    STRATA_ASSIGN_OR_RETURN(NDArray one, NDArray::Allocate(*r.pool, sdt, one_shape));
    Shape empty_shape = r.box.shape;
    empty_shape[axis] = 0;
    STRATA_ASSIGN_OR_RETURN(NDArray empty, NDArray::Allocate(*r.pool, idt, empty_shape));
    GroupPartial(*kernel, empty.view(), axis, {}, 1, one.view());
    for (Index g = 0; g < G; ++g) {
      if (!done[g]) kernel->Finalize(one.view(), group_slice(g));
    }
    return out;
  };
  // One group's empty state, for the groups no block names.
  Shape one_block = x.chunksize();
  one_block[axis] = 1;
  one_block.push_back(W);
  return MakeBlockwise(name, out_shape, rdt, GridFromSizes(out_sizes), {state}, {std::move(map)},
                       std::move(fn), NumElements(one_block) * sdt.size(), x.spec());
}
}  // namespace

Array GroupbyReduce(const Array& x, const GroupLabels& labels_in, int axis_in, ReduceOp op,
                    const GroupbyOptions& options) {
  if (!x.ok()) return x;
  if (labels_in.array && !labels_in.array->ok()) return *labels_in.array;
  const std::string op_name(ReduceOpName(op));
  const std::string name = "groupby-" + op_name;
  auto fail = [&](std::string message) {
    return Array::FromStatus(InvalidArgumentError(fmt::format("groupby_reduce: {}", message)));
  };
  if (!GroupReduceSupported(op)) {
    return fail(fmt::format(
        "op '{}' is not supported (sum, mean, count, min, max, var, std, argmin, argmax, first, "
        "last and their nan* forms are)",
        op_name));
  }
  Result<int> axis_r = NormalizeAxis(axis_in, x.ndim(), "groupby_reduce");
  if (!axis_r.ok()) return Array::FromStatus(axis_r.status());
  const int axis = *axis_r;
  const Index extent = x.shape()[axis];
  const Index num_groups = options.num_groups;
  const int split_every = options.split_every;
  if (num_groups < 0) return fail(fmt::format("num_groups {} is negative", num_groups));
  Index G = num_groups;
  std::shared_ptr<const std::vector<int64_t>> labels;
  Array label_array;
  GroupLabels host_labels;
  if (labels_in.array && labels_in.array->node()->kind == NodeKind::kMemorySource &&
      labels_in.array->ndim() == 1 && labels_in.array->shape()[0] == extent &&
      labels_in.array->dtype().is_integer() && labels_in.array->node()->data) {
    // Labels already in memory (asarray of a host array) are read here, as
    // host labels: the plan can then use the groups each block names.
    const NDArray& data = *labels_in.array->node()->data;
    Result<NDArray> as64 = NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt64, {extent});
    if (!as64.ok()) return Array::FromStatus(as64.status());
    Status cast = Cast(data.view(), as64->view());
    if (!cast.ok()) return Array::FromStatus(cast.WithContext("groupby_reduce: the labels"));
    host_labels.host.assign(as64->values<int64_t>().begin(), as64->values<int64_t>().end());
  }
  const GroupLabels& labels_given = host_labels.host.empty() ? labels_in : host_labels;
  if (labels_given.array) {
    // Labels as a (chunked, lazy) array: one per position along the axis.
    label_array = *labels_given.array;
    if (label_array.ndim() != 1 || label_array.shape()[0] != extent) {
      return fail(fmt::format("labels of shape {} given for axis {} of extent {}",
                              ShapeToString(label_array.shape()), axis, extent));
    }
    if (!label_array.dtype().is_integer()) {
      return fail(
          fmt::format("labels must have an integer dtype, not {}", label_array.dtype().name()));
    }
    if (label_array.dtype() != DType(DTypeId::kInt64))
      label_array = astype(label_array, DTypeId::kInt64);
    if (G == 0 && extent > 0) {
      // The number of groups decides the output's shape: computed first.
      Result<NDArray> most = compute(max(label_array));
      if (!most.ok()) {
        return Array::FromStatus(most.status().WithContext("groupby_reduce: the largest label"));
      }
      G = std::max<int64_t>(0, most->data_as<int64_t>()[0] + 1);
    }
    // The labels' blocks line up with x's along the axis.
    label_array = RechunkToGrid(label_array, GridFromSizes({x.chunks().AxisChunkSizes(axis)}));
  } else {
    if (static_cast<Index>(labels_given.host.size()) != extent) {
      return fail(fmt::format("{} labels given for axis {} of extent {}", labels_given.host.size(),
                              axis, extent));
    }
    int64_t max_label = -1;
    for (size_t i = 0; i < labels_given.host.size(); ++i) {
      const int64_t l = labels_given.host[i];
      if (num_groups > 0 && l >= num_groups) {
        return fail(
            fmt::format("label {} at position {} is not below num_groups {}", l, i, num_groups));
      }
      max_label = std::max(max_label, l);
    }
    if (G == 0) G = max_label + 1;
    labels = std::make_shared<const std::vector<int64_t>>(labels_given.host);
  }
  if (split_every == 1 || split_every < 0) {
    return fail(fmt::format("split_every {} must be at least 2 (or 0 for automatic)", split_every));
  }
  const bool skip_nan = options.skipna.value_or(x.dtype().is_float() || x.dtype().is_complex());
  ReductionOptions ropts;
  ropts.ddof = options.ddof;
  Result<std::shared_ptr<const ReductionKernel>> kernel_r =
      MakeGroupReductionKernel(op, x.dtype(), skip_nan, ropts);
  if (!kernel_r.ok()) return Array::FromStatus(kernel_r.status().WithContext("groupby_reduce"));
  std::shared_ptr<const ReductionKernel> kernel = *kernel_r;
  const int rank = x.ndim();
  const int W = kernel->state_width();
  const DType sdt = kernel->state_dtype();
  const Index nb = x.chunks().grid_shape()[axis];

  // One block of group states: x's block on the other axes, G groups, W
  // values each. A huge G (a stray label) must give an error, not overflow.
  Shape other = x.chunksize();
  other.erase(other.begin() + axis);
  Shape state_block = x.chunksize();
  state_block[axis] = G;
  state_block.push_back(W);
  Shape out_shape = x.shape();
  out_shape[axis] = G;
  const Result<Index> state_elements =
      CheckedNumElements(state_block, "groupby_reduce: the group states of one block");
  if (!state_elements.ok()) return Array::FromStatus(state_elements.status());
  const Result<Index> out_elements = CheckedNumElements(out_shape, "groupby_reduce: the result");
  if (!out_elements.ok()) return Array::FromStatus(out_elements.status());
  // One state per partial task; a combine round holds at least 5 (2 states,
  // their gathered copy and the result). Refused here, naming the groups,
  // rather than by the planner naming an op.
  const int states_at_once = nb > 1 ? 5 : 1;
  const int64_t max_bytes = std::numeric_limits<int64_t>::max() / (5 * sdt.size());
  const int64_t state_block_bytes =
      *state_elements > max_bytes ? std::numeric_limits<int64_t>::max() / 5
                                  : *state_elements * sdt.size();
  {
    const ResolvedSpec spec = ResolveSpecLocally(*x.spec());
    const int64_t budget = spec.task_budget();
    if (states_at_once * state_block_bytes > budget) {
      const std::string merge =
          states_at_once > 1
              ? fmt::format("; merging them needs {} at once ({})", states_at_once,
                            FormatBytes(states_at_once * state_block_bytes))
              : "";
      return fail(fmt::format(
          "the group states of one block ({} values per group x {} groups x {} {}) take {}{}, "
          "over allowed_mem {} less reserved_mem {}; use smaller chunks along the other axes "
          "(now {}) or fewer groups",
          NumElements(other), G, W, sdt.name(), FormatBytes(state_block_bytes), merge,
          FormatBytes(spec.allowed_mem), FormatBytes(spec.reserved_mem), ShapeToString(other)));
    }
  }

  // Labels known now: blocks that name fewer groups than G get the sparse
  // form (fewer, smaller states).
  if (labels && labels_in.sparse && nb > 0 && G > 0) {
    const BlockGroups bg = GroupsPerBlock(*labels, x.chunks().AxisChunkSizes(axis));
    bool any_group = false;
    for (const auto& g : bg.groups) any_group = any_group || !g.empty();
    if (any_group && bg.total_slots < nb * G) {
      return SparseGroupbyReduce(x, axis, bg, G, kernel, split_every, name, out_shape);
    }
  }

  // Partial: state axis s + 1 holds x's axis s, except axis + 1 (the groups).
  std::vector<std::vector<Index>> psizes(rank + 2);
  psizes[0].assign(std::max<Index>(nb, 1), 1);
  for (int a = 0; a < rank; ++a) {
    if (a == axis) {
      psizes[a + 1] = G == 0 ? std::vector<Index>{} : std::vector<Index>{G};
    } else {
      psizes[a + 1] = x.chunks().AxisChunkSizes(a);
    }
  }
  psizes[rank + 1] = {W};
  ChunkGrid pgrid = GridFromSizes(psizes);

  Array state;
  if (nb == 0) {
    // No blocks along the grouped axis: every group is empty. One empty state,
    // from GroupPartial over an empty input.
    state = MakeVirtual(
        name + "-empty", pgrid.shape(), pgrid, sdt, x.spec(),
        [kernel, axis](const Box& box, const ArrayView& out) {
          Shape in_shape(box.shape.begin() + 1, box.shape.end() - 1);
          const Index groups = in_shape[axis];
          in_shape[axis] = 0;
          STRATA_ASSIGN_OR_RETURN(
              NDArray empty,
              NDArray::Allocate(*MemoryPool::Default(), kernel->input_dtype(), in_shape));
          GroupPartial(*kernel, empty.view(), axis, {}, groups, DropLeadingAxis(out));
          return Status::Ok();
        });
  } else {
    InputMap map;
    for (int a = 0; a < rank; ++a) {
      map.axes.push_back(
          AxisMap::Identity(a == axis ? 0 : a + 1, x.chunks().grid_shape()[a]));
    }
    std::vector<Array> inputs = {x};
    std::vector<InputMap> maps = {std::move(map)};
    if (label_array.ok()) {
      inputs.push_back(label_array);
      InputMap lmap;
      lmap.axes.push_back(AxisMap::Identity(0, nb));
      maps.push_back(std::move(lmap));
    }
    BlockFunction fn = [kernel, labels, axis, G, sdt](const BlockRequest& r) -> Result<NDArray> {
      STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, sdt, r.box.shape));
      const InputBlock& in = r.inputs[0][0];
      std::span<const int64_t> block_labels;
      NDArray copy;
      if (labels) {
        block_labels =
            std::span<const int64_t>(*labels).subspan(in.box.origin[axis], in.box.shape[axis]);
      } else {
        const ConstArrayView& lv = r.inputs[1][0].view;
        if (!lv.is_contiguous()) {
          STRATA_ASSIGN_OR_RETURN(copy, NDArray::CopyOf(*r.pool, lv));
          block_labels = copy.values<int64_t>();
        } else {
          block_labels = {reinterpret_cast<const int64_t*>(lv.data()),
                          static_cast<size_t>(lv.num_elements())};
        }
        for (size_t i = 0; i < block_labels.size(); ++i) {
          if (block_labels[i] >= G) {
            return InvalidArgumentError(
                fmt::format("groupby_reduce: label {} at position {} is not below num_groups {}",
                            block_labels[i], in.box.origin[axis] + static_cast<Index>(i), G));
          }
        }
      }
      GroupPartial(*kernel, in.view, axis, block_labels, G, DropLeadingAxis(out.view()),
                   in.box.origin[axis]);
      return out;
    };
    const int64_t scratch = kernel->ScratchBytes(x.chunksize());
    state = MakeBlockwise(name + "-partial", pgrid.shape(), sdt, pgrid, std::move(inputs),
                          std::move(maps), std::move(fn), scratch, x.spec());
  }

  // Combine rounds over the blocks axis until one state is left.
  const int split =
      split_every >= 2 ? split_every : ChooseGroupSplitEvery(state_block_bytes, *x.spec());
  const int axes0[] = {0};
  for (int round = 1; state.shape()[0] > 1; ++round) {
    const Index n = state.shape()[0];
    const Index merged = (n + split - 1) / split;
    std::vector<std::vector<Index>> table(merged);
    for (Index j = 0; j < merged; ++j) {
      for (Index k = j * split; k < std::min(n, (j + 1) * split); ++k) table[j].push_back(k);
    }
    std::vector<std::vector<Index>> sizes(rank + 2);
    InputMap map;
    sizes[0].assign(merged, 1);
    map.axes.push_back(AxisMap::Table(0, table, n));
    for (int a = 1; a < rank + 2; ++a) {
      sizes[a] = state.chunks().AxisChunkSizes(a);
      map.axes.push_back(AxisMap::Identity(a, state.chunks().grid_shape()[a]));
    }
    BlockFunction fn = [kernel, sdt, axes0](const BlockRequest& r) -> Result<NDArray> {
      return CombineStates(r, *kernel, axes0, sdt);
    };
    const int64_t gathered = std::min<Index>(split, n) * state_block_bytes;
    state = MakeBlockwise(fmt::format("{}-combine-{}", name, round), GridFromSizes(sizes).shape(),
                          sdt, GridFromSizes(sizes), {state}, {std::move(map)}, std::move(fn),
                          gathered, x.spec());
  }

  // Finalize: drop the blocks axis and the state axis.
  std::vector<std::vector<Index>> out_sizes(rank);
  InputMap map;
  map.axes.push_back(AxisMap::Fixed({0}, 1));
  for (int a = 0; a < rank; ++a) {
    out_sizes[a] = state.chunks().AxisChunkSizes(a + 1);
    map.axes.push_back(AxisMap::Identity(a, state.chunks().grid_shape()[a + 1]));
  }
  map.axes.push_back(AxisMap::Fixed({0}, 1));
  const DType rdt = kernel->result_dtype();
  BlockFunction fn = [kernel, rdt](const BlockRequest& r) -> Result<NDArray> {
    const ConstArrayView& st = r.inputs[0][0].view;
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, rdt, r.box.shape));
    Shape with_blocks_axis = r.box.shape;
    with_blocks_axis.insert(with_blocks_axis.begin(), 1);
    kernel->Finalize(st, out.view().Reshaped(with_blocks_axis));
    return out;
  };
  return MakeBlockwise(name, out_shape, rdt, GridFromSizes(out_sizes), {state}, {std::move(map)},
                       std::move(fn), 0, x.spec());
}

Array GroupbyReduce(const Array& x, std::vector<int64_t> labels, int axis, ReduceOp op,
                    Index num_groups, int split_every, bool sparse) {
  GroupbyOptions options;
  options.num_groups = num_groups;
  options.split_every = split_every;
  return GroupbyReduce(x, GroupLabels{std::move(labels), std::nullopt, sparse}, axis, op, options);
}

}  // namespace internal_api

Array groupby_reduce(const Array& x, std::vector<int64_t> labels, int axis, ReduceOp op,
                     Index num_groups) {
  return internal_api::GroupbyReduce(x, std::move(labels), axis, op, num_groups, 0);
}

Array groupby_reduce(const Array& x, std::vector<int64_t> labels, int axis, ReduceOp op,
                     const GroupbyOptions& options) {
  return internal_api::GroupbyReduce(x, internal_api::GroupLabels{std::move(labels), std::nullopt},
                                     axis, op, options);
}

Array groupby_reduce(const Array& x, const Array& labels, int axis, ReduceOp op,
                     const GroupbyOptions& options) {
  return internal_api::GroupbyReduce(x, internal_api::GroupLabels{{}, labels}, axis, op, options);
}

}  // namespace strata
