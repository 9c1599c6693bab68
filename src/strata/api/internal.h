// Helpers shared by the API's .cc files: building nodes, checking axes,
// choosing and unifying chunks. Not part of the public API.
#ifndef STRATA_API_INTERNAL_H_
#define STRATA_API_INTERNAL_H_

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "strata/api/array.h"
#include "strata/api/groupby_extras.h"
#include "strata/core/kernels/reduction.h"
#include "strata/plan/node.h"

namespace strata::internal_api {

// The spec of the first non-error array (defaults when there is none).
std::shared_ptr<const Spec> SpecOf(std::initializer_list<const Array*> arrays);
std::shared_ptr<const Spec> SpecOf(const std::vector<Array>& arrays);
std::shared_ptr<const Spec> MakeSpec(const Spec& spec);

// The first error among `arrays`, or OK.
Status FirstError(std::initializer_list<const Array*> arrays);
Status FirstError(const std::vector<Array>& arrays);

// A negative axis counts from the end. InvalidArgument:
// "sum: axis 3 is out of range for an array of rank 2".
Result<int> NormalizeAxis(int axis, int rank, std::string_view op);
// Sorted, unique; empty means every axis.
Result<std::vector<int>> NormalizeAxes(const std::vector<int>& axes, int rank,
                                       std::string_view op, bool empty_means_all = true);

// Chunks for `shape`: `chunks` validated (rank, >= 1), or, when empty, "auto"
// chunks of at most allowed_mem / 8 bytes splitting the leading axes.
Result<ChunkGrid> GridFor(const Shape& shape, const Shape& chunks, DType dtype, const Spec& spec,
                          std::string_view op);

// A regular grid when every axis's sizes are regular (equal but a smaller
// last one), else rectilinear.
ChunkGrid GridFromSizes(std::vector<std::vector<Index>> sizes);

// A virtual array: `fill(box, out)` writes the values of any `box`.
Array MakeVirtual(std::string op, Shape shape, ChunkGrid grid, DType dtype,
                  std::shared_ptr<const Spec> spec, FillFunction fill);

// A rank-0 in-memory array holding `value` as `dtype`.
Array ScalarArray(const Scalar& value, DType dtype, std::shared_ptr<const Spec> spec);

// Inputs broadcast together on one block grid (elementwise, map_blocks): the
// broadcast shape, its block sizes per axis (taken, per axis, from the first
// input spanning it), the inputs rechunked where their chunks disagree with
// those sizes, and each input's key function (identity on spanned axes, block
// 0 on broadcast ones). InvalidArgument (with `op` as context) when the
// shapes do not broadcast.
struct UnifiedInputs {
  Shape shape;
  std::vector<std::vector<Index>> sizes;
  std::vector<Array> inputs;
  std::vector<InputMap> maps;
};
Result<UnifiedInputs> UnifyChunks(std::string_view op, const std::vector<Array>& inputs);

// Elementwise over `inputs` broadcast together: chunks are unified
// (UnifyChunks), and `kernel` gets each input's block as a view broadcast to
// the output block's shape.
using ElementwiseKernel =
    std::function<Status(std::span<const ConstArrayView> inputs, const ArrayView& out)>;
Array MakeElementwise(std::string op, std::vector<Array> inputs, DType out_dtype,
                      ElementwiseKernel kernel, int64_t extra_mem = 0);

// Rechunks to an exact grid (possibly rectilinear): a logical rechunk node
// the planner lowers. `min_mem` as Node::rechunk_min_mem.
Array RechunkToGrid(const Array& x, const ChunkGrid& grid, int64_t min_mem = -1);

// x rechunked so that each of `axes` (normalized) is one chunk and a block,
// at `bytes_per_element` for all a task holds per element, fits in the task
// budget (the other axes' chunks halved by FitChunksToBudget); InvalidArgument,
// naming the axes and the budget, when one slice along them does not fit
// (api/sorting.cc; sort, argsort, take_along_axis, quantiles).
Result<Array> WholeAlongAxes(const Array& x, const std::vector<int>& axes,
                             int64_t bytes_per_element, std::string_view op);
Result<Array> WholeAlongAxis(const Array& x, int axis, int64_t bytes_per_element,
                             std::string_view op);

// An op whose function must run in the calling process (`reason`, e.g.
// "calls a Python function"; empty: any process will do) is refused here when
// `spec` names the processes or mpi executor (InvalidArgument naming `op` and
// the executor); the planner refuses it too, for a spec that changes later
// (Node::calling_process_only). map_blocks, map_overlap and apply_gufunc.
Status CheckCallingProcessOnly(std::string_view op, std::string_view reason, const Spec& spec);

// A blockwise node from parts (fills id and name). `decorate` may set the
// node's optional fields (region_fn, virtual_fill, streams_input) first.
Array MakeBlockwise(std::string op, Shape shape, DType dtype, ChunkGrid grid,
                    std::vector<Array> inputs, std::vector<InputMap> maps, BlockFunction fn,
                    int64_t extra_mem, std::shared_ptr<const Spec> spec,
                    NodeKind kind = NodeKind::kBlockwise,
                    const std::function<void(Node&)>& decorate = nullptr);

// Bytes one task may use for chunks and scratch: ResolvedSpec::task_budget of `spec`
// resolved locally (the defaults' when it does not resolve; plan() reports
// that).
int64_t TaskMemoryBudget(const Spec& spec);

// Copies the input blocks of `request.inputs[input]` into one contiguous
// array covering `region` of that input (for gathers over several blocks).
Result<NDArray> Assemble(const BlockRequest& request, int input, const Box& region, DType dtype);

// One task of a combine round (reductions, groupby): the state blocks of
// `request.inputs[0]`, gathered over the region they cover when there are
// several, combined over `axes` by `kernel` into a block of request.box.
Result<NDArray> CombineStates(const BlockRequest& request, const ReductionKernel& kernel,
                              std::span<const int> axes, DType state_dtype);

// groupby_reduce (api/groupby.h) with the number of states merged per combine
// round fixed (>= 2; 0 picks the most that fit in allowed_mem), so tests can
// force many rounds. InvalidArgument for split_every 1 or negative.
// `sparse` false keeps the dense group states (G per block) even where blocks
// name fewer groups (tests of the dense tree).
Array GroupbyReduce(const Array& x, std::vector<int64_t> labels, int axis, ReduceOp op,
                    Index num_groups, int split_every, bool sparse = true);

// Group labels on the host or as an array (exactly one is used: `array` when
// set).
struct GroupLabels {
  std::vector<int64_t> host;
  std::optional<Array> array;
  // Labels known when the plan is built (host, or an in-memory array) may use
  // sparse group states: block j holds states only for the groups it names.
  bool sparse = true;
};
Array GroupbyReduce(const Array& x, const GroupLabels& labels, int axis, ReduceOp op,
                    const GroupbyOptions& options);

// The lines of a contiguous block of `shape` along `axis` (sorting, scans):
// `outer` lines before the axis times `inner` after it, `n` elements each;
// line (o, j) starts at Base(o, j) with stride `inner`.
struct Lines {
  Index outer = 1, n = 1, inner = 1;
  Index Base(Index o, Index j) const { return o * n * inner + j; }
};
Lines LinesOf(const Shape& shape, int axis);

// numpy's sort order: NaN after every number (sort, searchsorted).
template <typename T>
bool NanLastLess(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a < b || (b != b && a == a);
  } else {
    return a < b;
  }
}

}  // namespace strata::internal_api

#endif  // STRATA_API_INTERNAL_H_
