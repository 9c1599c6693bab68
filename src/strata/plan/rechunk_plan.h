// The rechunk planner: how a rechunk from one chunk shape to another moves
// its data, and through which intermediate chunk shapes.
//
// Two strategies (shared/DESIGN.md, "Rechunk and tiers"):
//   exchange    one stage: source blocks are published to a tier whole, and
//               each target block gathers exactly the slices it needs. Right
//               for RAM (and RAM that spills per chunk at the boundary).
//   multistage  rechunker's algorithm as Cubed uses it, for the disk and
//               object tiers: consolidate read and write chunks up to
//               max_mem, interpolate intermediate chunk shapes geometrically,
//               and take the fewest stages whose smallest intermediate chunk
//               is at least min_mem, stopping when IO operations rise.
//
// Everything here is arithmetic on shapes: planning never touches data, so
// the plan of a petabyte rechunk is printed in microseconds.
#ifndef STRATA_PLAN_RECHUNK_PLAN_H_
#define STRATA_PLAN_RECHUNK_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/box.h"

namespace strata {

// One rechunker stage: read blocks of `read` from the previous array, store
// them in an intermediate with chunks `intermediate`, and read that back in
// blocks of `write`.
struct RechunkStage {
  Shape read;
  Shape intermediate;
  Shape write;
};

// Grows `chunks` by whole multiples, last axis first, while a block stays
// within `max_mem` bytes and within `limits` (0: the axis's extent).
// InvalidArgument when one chunk is already over max_mem.
Result<Shape> ConsolidateChunks(const Shape& shape, const Shape& chunks, int64_t itemsize,
                                int64_t max_mem, const Shape& limits = {});

// Pieces a direct copy from `in` to `out` chunks cuts the array into: the IO
// operations one stage costs.
int64_t SingleStageIoOps(const Shape& shape, const Shape& in, const Shape& out);

// Chunk shapes between `read` and `write` interpolated geometrically for
// `stages` stages (stages - 1 shapes).
std::vector<Shape> InterpolateStageChunks(const Shape& read, const Shape& write, int stages);

inline constexpr int kMaxRechunkStages = 100;

struct MultistagePlan {
  std::vector<RechunkStage> stages;
  int64_t io_ops = 0;
  // Why this number of stages ("1 stage: smallest intermediate 8 MB >= min_mem 4.8 MB").
  std::string reason;
};

// rechunker's multistage plan. max_mem bounds every read, write and
// intermediate chunk; min_mem is the smallest intermediate chunk worth having.
Result<MultistagePlan> PlanMultistage(const Shape& shape, const Shape& source, const Shape& target,
                                      int64_t itemsize, int64_t min_mem, int64_t max_mem);

// The chunk shapes a multistage rechunk stores, in order, between the
// published source and the target: the interpolated shapes (Strata's stage
// tasks gather slices with partial reads, so a stage needs no separate
// consolidated read/write array). Duplicates and the endpoints removed.
std::vector<Shape> IntermediateChunkShapes(const MultistagePlan& plan, const Shape& source,
                                           const Shape& target);

// Number of (source block, target block) intersections: the pieces a
// one-stage exchange moves.
int64_t ExchangePieces(const Shape& shape, const Shape& source, const Shape& target);

}  // namespace strata

#endif  // STRATA_PLAN_RECHUNK_PLAN_H_
