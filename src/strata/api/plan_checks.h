// Checks of a whole graph that plan() runs before planning, so a C++ or
// Python caller is refused before anything is written, as the CLI is:
//   - aliasing (storage/location.h): a computation must not write a Zarr
//     array where it reads one, nor two outputs into one place (to_zarr runs
//     it too);
//   - size: no array of the graph may have more blocks than the planner and
//     runtime keep per-block state for (kMaxBlocksPerArray).
#ifndef STRATA_API_PLAN_CHECKS_H_
#define STRATA_API_PLAN_CHECKS_H_

#include <memory>
#include <vector>

#include "strata/base/status.h"
#include "strata/plan/node.h"

namespace strata::internal_api {

// InvalidArgument when a store node reachable from `roots` writes to the
// location of a Zarr source of the same graph (equal, inside it or around
// it), or to a location another store node writes.
Status CheckNoAliasing(const std::vector<std::shared_ptr<const Node>>& roots);

// The planner and the runtime keep a few bytes per block of every array they
// run (readiness counts, reference counts, producers): 2^28 blocks is a few
// GB of them, and more than any real rechunk needs (Cubed's ERA5 case has
// 11,311). A 2^31 x 2^31 array in 1 x 1 chunks is refused here, not run out
// of memory.
inline constexpr int64_t kMaxBlocksPerArray = int64_t{1} << 28;

// InvalidArgument naming the array, its grid and the limit when an array
// reachable from `roots` has more than kMaxBlocksPerArray blocks.
Status CheckGridLimits(const std::vector<std::shared_ptr<const Node>>& roots);

// The same for one grid, `what` naming it ("array-004 (from_zarr)"). Ops
// whose key functions are built per block along each axis (rechunk) check
// their grids before building them.
Status CheckBlockCount(const ChunkGrid& grid, std::string_view what);

}  // namespace strata::internal_api

#endif  // STRATA_API_PLAN_CHECKS_H_
