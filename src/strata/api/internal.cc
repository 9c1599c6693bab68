#include "strata/api/internal.h"

#include <fmt/format.h>

#include <algorithm>

#include "strata/base/byte_size.h"
#include "strata/base/tuning.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata::internal_api {

std::shared_ptr<const Spec> MakeSpec(const Spec& spec) { return std::make_shared<const Spec>(spec); }

std::shared_ptr<const Spec> SpecOf(std::initializer_list<const Array*> arrays) {
  for (const Array* a : arrays) {
    if (a->ok() && a->node()->spec) return a->node()->spec;
  }
  return std::make_shared<const Spec>();
}

std::shared_ptr<const Spec> SpecOf(const std::vector<Array>& arrays) {
  for (const Array& a : arrays) {
    if (a.ok() && a.node()->spec) return a.node()->spec;
  }
  return std::make_shared<const Spec>();
}

Status CheckCallingProcessOnly(std::string_view op, std::string_view reason, const Spec& spec) {
  if (reason.empty()) return Status::Ok();
  if (spec.executor != ExecutorKind::kProcesses && spec.executor != ExecutorKind::kMpi) {
    return Status::Ok();
  }
  return InvalidArgumentError(fmt::format(
      "{}: the function {}, so it cannot run on the {} executor; use the threads or inline "
      "executor",
      op, reason, ExecutorName(spec.executor)));
}

Status FirstError(std::initializer_list<const Array*> arrays) {
  for (const Array* a : arrays) {
    if (!a->ok()) return a->status();
  }
  return Status::Ok();
}

Status FirstError(const std::vector<Array>& arrays) {
  for (const Array& a : arrays) {
    if (!a.ok()) return a.status();
  }
  return Status::Ok();
}

Result<int> NormalizeAxis(int axis, int rank, std::string_view op) {
  int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    return InvalidArgumentError(
        fmt::format("{}: axis {} is out of range for an array of rank {}", op, axis, rank));
  }
  return a;
}

Result<std::vector<int>> NormalizeAxes(const std::vector<int>& axes, int rank, std::string_view op,
                                       bool empty_means_all) {
  std::vector<int> out;
  if (axes.empty() && empty_means_all) {
    for (int i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int axis : axes) {
    STRATA_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, rank, op));
    if (std::find(out.begin(), out.end(), a) != out.end()) {
      return InvalidArgumentError(fmt::format("{}: axis {} is repeated", op, axis));
    }
    out.push_back(a);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<ChunkGrid> GridFor(const Shape& shape, const Shape& chunks, DType dtype, const Spec& spec,
                          std::string_view op) {
  for (Index d : shape) {
    if (d < 0) {
      return InvalidArgumentError(
          fmt::format("{}: shape {} has a negative extent", op, ShapeToString(shape)));
    }
  }
  STRATA_ASSIGN_OR_RETURN(Index elements, CheckedNumElements(shape, fmt::format("{}: shape", op)));
  if (Index bytes; __builtin_mul_overflow(elements, Index{dtype.size()}, &bytes)) {
    return InvalidArgumentError(fmt::format("{}: shape {} of {} holds more bytes than fit in int64",
                                            op, ShapeToString(shape), dtype.name()));
  }
  if (!chunks.empty() || shape.empty()) {
    if (chunks.size() != shape.size()) {
      return InvalidArgumentError(fmt::format("{}: chunks {} do not match the rank of shape {}", op,
                                              ShapeToString(chunks), ShapeToString(shape)));
    }
    Shape clipped = chunks;
    for (size_t i = 0; i < shape.size(); ++i) {
      // A zero-length axis may have a zero chunk (Dask writes chunks=(0,) for it).
      if (chunks[i] < 1 && !(chunks[i] == 0 && shape[i] == 0)) {
        return InvalidArgumentError(fmt::format("{}: chunks {} must be at least 1 along every axis",
                                                op, ShapeToString(chunks)));
      }
      // A chunk larger than the axis is the whole axis (as in Dask).
      clipped[i] = std::max<Index>(1, std::min(chunks[i], shape[i]));
    }
    return ChunkGrid::Regular(shape, clipped);
  }
  // Auto: whole trailing axes, split the leading ones to fit the target.
  const int64_t allowed = ResolveSpecLocally(spec).allowed_mem;
  const int64_t target = std::max<int64_t>(allowed / 8, GetTuning().auto_chunk_min_bytes);
  Shape c = shape;
  for (Index& d : c) d = std::max<Index>(d, 1);
  for (size_t i = 0; i < c.size(); ++i) {
    int64_t bytes = NumElements(c) * dtype.size();
    if (bytes <= target) break;
    int64_t rest = bytes / c[i];
    c[i] = std::max<Index>(1, target / std::max<int64_t>(rest, 1));
  }
  for (size_t i = 0; i < c.size(); ++i) c[i] = std::max<Index>(1, std::min(c[i], shape[i]));
  return ChunkGrid::Regular(shape, c);
}

ChunkGrid GridFromSizes(std::vector<std::vector<Index>> sizes) {
  Shape shape(sizes.size()), chunks(sizes.size());
  bool regular = true;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const auto& s = sizes[i];
    Index total = 0;
    for (Index v : s) total += v;
    shape[i] = total;
    chunks[i] = s.empty() ? 1 : s[0];
    for (size_t k = 0; k + 1 < s.size(); ++k) regular = regular && s[k] == s[0];
    if (!s.empty()) regular = regular && s.back() <= s[0];
  }
  if (regular) return *ChunkGrid::Regular(shape, chunks);
  return *ChunkGrid::Rectilinear(std::move(sizes));
}

Array MakeBlockwise(std::string op, Shape shape, DType dtype, ChunkGrid grid,
                    std::vector<Array> inputs, std::vector<InputMap> maps, BlockFunction fn,
                    int64_t extra_mem, std::shared_ptr<const Spec> spec, NodeKind kind,
                    const std::function<void(Node&)>& decorate) {
  Node node;
  node.op_name = std::move(op);
  node.kind = kind;
  node.shape = std::move(shape);
  node.dtype = dtype;
  node.grid = std::move(grid);
  for (const Array& a : inputs) node.inputs.push_back(a.node());
  node.maps = std::move(maps);
  node.fn = std::move(fn);
  node.extra_mem = extra_mem;
  node.spec = std::move(spec);
  if (decorate) decorate(node);
  return Array(MakeNode(std::move(node)));
}

Array MakeVirtual(std::string op, Shape shape, ChunkGrid grid, DType dtype,
                  std::shared_ptr<const Spec> spec, FillFunction fill) {
  BlockFunction fn = [fill, dtype](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    STRATA_RETURN_IF_ERROR(fill(r.box, out.view()));
    return out;
  };
  return MakeBlockwise(std::move(op), std::move(shape), dtype, std::move(grid), {}, {},
                       std::move(fn), 0, std::move(spec), NodeKind::kVirtual,
                       [&](Node& node) { node.virtual_fill = fill; });
}

Array ScalarArray(const Scalar& value, DType dtype, std::shared_ptr<const Spec> spec) {
  NDArray a = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kComplex128, {});
  *a.data_as<std::complex<double>>() = {value.real(), value.imag()};
  NDArray out = *NDArray::Allocate(*MemoryPool::Default(), dtype, {});
  if (value.kind() == Scalar::Kind::kInt && dtype.is_integer()) {
    // Exact for integers beyond 2^53.
    NDArray i = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt64, {});
    *i.data_as<int64_t>() = value.integer();
    Cast(i.view(), out.view()).IgnoreError();
  } else {
    Cast(a.view(), out.view()).IgnoreError();
  }
  Node node;
  node.op_name = "scalar";
  node.kind = NodeKind::kMemorySource;
  node.dtype = dtype;
  node.grid = *ChunkGrid::Regular({}, {});
  node.data = std::make_shared<const NDArray>(std::move(out));
  node.spec = std::move(spec);
  return Array(MakeNode(std::move(node)));
}

Array RechunkToGrid(const Array& x, const ChunkGrid& grid, int64_t min_mem) {
  if (!x.ok()) return x;
  if (x.chunks() == grid) return x;
  // How the data moves is the planner's decision (plan/lower_rechunk.cc).
  return Array(MakeRechunk(x.node(), grid, min_mem));
}

int64_t TaskMemoryBudget(const Spec& spec) { return ResolveSpecLocally(spec).task_budget(); }

Result<NDArray> Assemble(const BlockRequest& request, int input, const Box& region, DType dtype) {
  const auto& blocks = request.inputs[input];
  // One block covering exactly the region: hand it over without a gather.
  STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*request.pool, dtype, region.shape));
  for (const InputBlock& b : blocks) {
    Box part = Intersect(b.box, region);
    if (part.empty()) continue;
    CopyArray(b.view.Slice(Translate(part, b.box.origin)),
              out.view().Slice(Translate(part, region.origin)));
  }
  return out;
}

Result<NDArray> CombineStates(const BlockRequest& request, const ReductionKernel& kernel,
                              std::span<const int> axes, DType state_dtype) {
  const auto& blocks = request.inputs[0];
  STRATA_ASSIGN_OR_RETURN(NDArray out,
                          NDArray::Allocate(*request.pool, state_dtype, request.box.shape));
  if (blocks.size() == 1) {
    kernel.Combine(blocks[0].view, axes, out.view());
    return out;
  }
  // The region of the state array these blocks cover.
  Box region = blocks[0].box;
  for (const InputBlock& b : blocks) {
    for (int i = 0; i < region.rank(); ++i) {
      const Index lo = std::min(region.origin[i], b.box.origin[i]);
      const Index hi = std::max(region.end(i), b.box.end(i));
      region.origin[i] = lo;
      region.shape[i] = hi - lo;
    }
  }
  STRATA_ASSIGN_OR_RETURN(NDArray gathered, Assemble(request, 0, region, state_dtype));
  kernel.Combine(gathered.view(), axes, out.view());
  return out;
}

Result<UnifiedInputs> UnifyChunks(std::string_view op, const std::vector<Array>& inputs) {
  STRATA_RETURN_IF_ERROR(FirstError(inputs));
  std::vector<Shape> shapes;
  for (const Array& a : inputs) shapes.push_back(a.shape());
  Result<Shape> out_shape = BroadcastShapes(shapes);
  if (!out_shape.ok()) return out_shape.status().WithContext(op);
  UnifiedInputs u;
  u.shape = *out_shape;
  const int rank = static_cast<int>(u.shape.size());
  // Per output axis, the block sizes: from the first input that spans it.
  u.sizes.resize(rank);
  for (int o = 0; o < rank; ++o) {
    const Index extent = u.shape[o];
    bool found = false;
    for (const Array& a : inputs) {
      int i = o - (rank - a.ndim());
      if (i < 0 || a.shape()[i] != extent) continue;
      u.sizes[o] = a.chunks().AxisChunkSizes(i);
      found = true;
      break;
    }
    if (!found) u.sizes[o] = extent == 0 ? std::vector<Index>{} : std::vector<Index>{extent};
  }
  // Inputs whose chunks disagree along a spanned axis are rechunked.
  for (const Array& a : inputs) {
    const int offset = rank - a.ndim();
    std::vector<std::vector<Index>> want(a.ndim());
    bool differs = false;
    for (int i = 0; i < a.ndim(); ++i) {
      if (a.shape()[i] == u.shape[i + offset]) {
        want[i] = u.sizes[i + offset];
      } else {
        want[i] = a.chunks().AxisChunkSizes(i);  // extent 1, broadcast
      }
      differs = differs || want[i] != a.chunks().AxisChunkSizes(i);
    }
    Array b = differs ? RechunkToGrid(a, GridFromSizes(want)) : a;
    InputMap map;
    for (int i = 0; i < a.ndim(); ++i) {
      const int o = i + offset;
      if (a.shape()[i] == u.shape[o]) {
        map.axes.push_back(AxisMap::Identity(o, static_cast<Index>(u.sizes[o].size())));
      } else {
        map.axes.push_back(AxisMap::Fixed({0}, 1));
      }
    }
    u.inputs.push_back(std::move(b));
    u.maps.push_back(std::move(map));
  }
  return u;
}

Array MakeElementwise(std::string op, std::vector<Array> inputs, DType out_dtype,
                      ElementwiseKernel kernel, int64_t extra_mem) {
  Result<UnifiedInputs> u = UnifyChunks(op, inputs);
  if (!u.ok()) return Array::FromStatus(u.status());
  auto spec = SpecOf(inputs);
  BlockFunction fn = [kernel, out_dtype](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, out_dtype, r.box.shape));
    std::vector<ConstArrayView> views;
    views.reserve(r.inputs.size());
    for (const auto& in : r.inputs) views.push_back(BroadcastTo(in[0].view, r.box.shape));
    STRATA_RETURN_IF_ERROR(kernel(views, out.view()));
    return out;
  };
  return MakeBlockwise(std::move(op), u->shape, out_dtype, GridFromSizes(std::move(u->sizes)),
                       std::move(u->inputs), std::move(u->maps), std::move(fn), extra_mem, spec,
                       NodeKind::kBlockwise, [&](Node& node) { node.region_fn = kernel; });
}

Lines LinesOf(const Shape& shape, int axis) {
  Lines l;
  for (int d = 0; d < axis; ++d) l.outer *= shape[d];
  l.n = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d) l.inner *= shape[d];
  return l;
}

}  // namespace strata::internal_api
