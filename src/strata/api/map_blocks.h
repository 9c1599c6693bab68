// map_blocks: a user's C++ function applied to corresponding blocks of one or
// more arrays, as Dask's and Cubed's map_blocks (a function over blocks with
// halos: map_overlap in api/overlap.h; over whole core dimensions:
// apply_gufunc in api/gufunc.h).
//
//   Array kelvin = map_blocks(
//       [](std::span<const ConstArrayView> in, const BlockInfo&, MemoryPool& pool) {
//         return ToKelvin(in[0], pool);
//       },
//       {celsius}, DTypeId::kFloat32);
//
// The inputs broadcast together and their chunkings are unified as for
// elementwise ops, so that output block b reads block b of every input. fn
// runs inside the task with the task's MemoryPool, so what it allocates
// there is measured, and `extra_mem` joins the task's memory projection.
//
// Errors come back as an Array in an error state (api/array.h):
// InvalidArgument for no arrays or no function, a negative extra_mem,
// `chunks` of the wrong rank or block count, and a calling_process_only
// function on the processes or mpi executor. At compute time a block fn
// returns with the wrong shape or dtype is InvalidArgument, and fn's own
// error comes back with the block's coordinates as context.
//
// Thread-safety: fn is called from worker threads, concurrently; it must be
// safe to call that way (and, on the processes and mpi executors, in other
// processes).
#ifndef STRATA_API_MAP_BLOCKS_H_
#define STRATA_API_MAP_BLOCKS_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "strata/api/array.h"
#include "strata/base/status.h"
#include "strata/core/box.h"
#include "strata/core/memory_pool.h"
#include "strata/core/ndarray.h"

namespace strata {

struct BlockInfo {
  std::span<const Index> block;  // output block coordinates
  Box box;                       // its region of the output array
};
using MapBlocksFunction = std::function<Result<NDArray>(std::span<const ConstArrayView> blocks,
                                                        const BlockInfo& info, MemoryPool& pool)>;
// Calls `fn` on corresponding blocks of `arrays` (chunkings are unified) and
// returns an array of `dtype` whose blocks are fn's results. `chunks`, when
// given, is the output's chunk shape (same number of blocks); `extra_mem` is
// the scratch memory fn needs per call.
Array map_blocks(MapBlocksFunction fn, const std::vector<Array>& arrays, DType dtype,
                 Shape chunks = {}, int64_t extra_mem = 0, std::string name = "map_blocks");
// The same with every option named. `calling_process_only`, when set, says
// why fn must run in the calling process (e.g. "calls a Python function"):
// such an op is refused on the processes and mpi executors, here when the
// inputs' spec names one and by the planner otherwise.
struct MapBlocksOptions {
  Shape chunks;
  int64_t extra_mem = 0;
  std::string name = "map_blocks";
  std::string calling_process_only;
};
Array map_blocks(const MapBlocksOptions& options, MapBlocksFunction fn,
                 const std::vector<Array>& arrays, DType dtype);

}  // namespace strata

#endif  // STRATA_API_MAP_BLOCKS_H_
