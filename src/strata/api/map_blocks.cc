// map_blocks: a user's C++ function applied to corresponding blocks of one or
// more arrays, as Dask's and Cubed's map_blocks.
//
// The inputs are broadcast together and their chunkings unified exactly as
// for elementwise ops (internal_api::UnifyChunks), so that output block b
// reads block b of every input (block 0 along broadcast axes). The output
// keeps that grid, or, with explicit `chunks`, has blocks of exactly that
// shape, as many per axis as the inputs have. The function runs inside the
// task with the task's MemoryPool, so what it allocates there is measured, and
// `extra_mem` joins the task's memory projection.
#include "strata/api/map_blocks.h"

#include <fmt/format.h>

#include "strata/api/internal.h"
#include "strata/core/kernels/elementwise.h"

namespace strata {
namespace {

Array MapBlocks(MapBlocksFunction fn, const std::vector<Array>& arrays, DType dtype, Shape chunks,
                int64_t extra_mem, std::string name, const std::string& calling_process_only) {
  if (Status s = internal_api::FirstError(arrays); !s.ok()) return Array::FromStatus(s);
  if (arrays.empty()) {
    return Array::FromStatus(
        InvalidArgumentError(fmt::format("{}: no arrays given (the output shape comes from "
                                         "the inputs' blocks)",
                                         name)));
  }
  if (!fn) {
    return Array::FromStatus(InvalidArgumentError(fmt::format("{}: no function given", name)));
  }
  if (extra_mem < 0) {
    return Array::FromStatus(
        InvalidArgumentError(fmt::format("{}: extra_mem {} is negative", name, extra_mem)));
  }
  Result<internal_api::UnifiedInputs> u = internal_api::UnifyChunks(name, arrays);
  if (!u.ok()) return Array::FromStatus(u.status());
  const int rank = static_cast<int>(u->shape.size());

  Shape shape = u->shape;
  ChunkGrid grid = internal_api::GridFromSizes(u->sizes);
  const bool custom = !chunks.empty();
  if (custom) {
    // Blocks of exactly `chunks`, one per input block: the output extent along
    // each axis is (input blocks) x (chunk size), as in Dask.
    if (static_cast<int>(chunks.size()) != rank) {
      return Array::FromStatus(InvalidArgumentError(fmt::format(
          "{}: chunks {} have rank {} but the inputs' blocks have rank {} (grid {})", name,
          ShapeToString(chunks), chunks.size(), rank, ShapeToString(grid.grid_shape()))));
    }
    for (int i = 0; i < rank; ++i) {
      if (chunks[i] < 1) {
        return Array::FromStatus(InvalidArgumentError(fmt::format(
            "{}: chunks {} must be at least 1 along every axis", name, ShapeToString(chunks))));
      }
      shape[i] = grid.grid_shape()[i] * chunks[i];
    }
    Result<Index> n = CheckedNumElements(shape, fmt::format("{}: output shape", name));
    if (!n.ok()) return Array::FromStatus(n.status());
    Result<ChunkGrid> g = ChunkGrid::Regular(shape, chunks);
    if (!g.ok()) return Array::FromStatus(g.status().WithContext(name));
    if (g->grid_shape() != grid.grid_shape()) {
      return Array::FromStatus(InvalidArgumentError(fmt::format(
          "{}: chunks {} give {} blocks but the inputs have {}", name, ShapeToString(chunks),
          ShapeToString(g->grid_shape()), ShapeToString(grid.grid_shape()))));
    }
    grid = *std::move(g);
  }

  BlockFunction block_fn = [fn = std::move(fn), dtype, custom,
                            name](const BlockRequest& r) -> Result<NDArray> {
    std::vector<ConstArrayView> views;
    views.reserve(r.inputs.size());
    for (const auto& in : r.inputs) {
      // Same block shape as the output: broadcast (the elementwise view).
      // A custom output chunking: the input blocks as they are.
      views.push_back(custom ? in[0].view : BroadcastTo(in[0].view, r.box.shape));
    }
    const BlockInfo info{r.block, r.box};
    Result<NDArray> out = fn(views, info, *r.pool);
    if (!out.ok()) {
      return out.status().WithContext(fmt::format("{}: block {}", name, JoinIndices(r.block, '.')));
    }
    if (out->shape() != r.box.shape || out->dtype() != dtype) {
      return InvalidArgumentError(fmt::format(
          "{}: the function returned a {} block of shape {} for block {}, expected {} of shape {}",
          name, out->dtype().name(), ShapeToString(out->shape()), JoinIndices(r.block, '.'),
          dtype.name(), ShapeToString(r.box.shape)));
    }
    return out;
  };
  auto spec = internal_api::SpecOf(arrays);
  return internal_api::MakeBlockwise(std::move(name), std::move(shape), dtype, std::move(grid),
                                     std::move(u->inputs), std::move(u->maps), std::move(block_fn),
                                     extra_mem, std::move(spec), NodeKind::kBlockwise,
                                     [&](Node& node) {
                                       node.calling_process_only = calling_process_only;
                                     });
}

}  // namespace

Array map_blocks(MapBlocksFunction fn, const std::vector<Array>& arrays, DType dtype, Shape chunks,
                 int64_t extra_mem, std::string name) {
  return MapBlocks(std::move(fn), arrays, dtype, std::move(chunks), extra_mem, std::move(name), "");
}

Array map_blocks(const MapBlocksOptions& options, MapBlocksFunction fn,
                 const std::vector<Array>& arrays, DType dtype) {
  if (Status s = internal_api::FirstError(arrays); !s.ok()) return Array::FromStatus(s);
  if (Status s = internal_api::CheckCallingProcessOnly(
          options.name, options.calling_process_only, *internal_api::SpecOf(arrays));
      !s.ok()) {
    return Array::FromStatus(s);
  }
  return MapBlocks(std::move(fn), arrays, dtype, options.chunks, options.extra_mem, options.name,
                   options.calling_process_only);
}

}  // namespace strata
