// The rechunk planner's arithmetic: rechunker's multistage algorithm as Cubed
// uses it, and the copy operations Cubed turns it into. Pure shape math: no
// data, no spec, so the plan of a petabyte rechunk takes microseconds. Which
// strategy a rechunk uses (one exchange through RAM, or these stages on disk
// or an object store), and with what memory, is decided by the
// lower_rechunk pass (plan/lower_rechunk.cc).
//
// The algorithm (rechunker/algorithm.py, cubed/core/ops.py `_rechunk_plan`):
//   - write chunks: the target chunks consolidated (grown by whole multiples,
//     last axis first) up to max_mem;
//   - read chunks: the source chunks consolidated, only along axes where the
//     write chunks are larger, up to the write chunks;
//   - for 1, 2, ... stages: intermediate chunk shapes interpolated
//     geometrically between read and write (numpy.geomspace, floored); each
//     stage reads `read` and writes `write` blocks and stores chunks that fit
//     both (their minimum); take the fewest stages whose smallest stored chunk
//     is at least min_mem, or stop when one more stage would raise the IO
//     operations.
//   - copy operations: each stage is one op whose tasks copy a block of its
//     read chunks into stored chunks (split to fit both grids); the last
//     stage adds one op copying write chunks into the target chunks.
//
// Thread-safety: free functions on values.
#ifndef STRATA_PLAN_RECHUNK_PLAN_H_
#define STRATA_PLAN_RECHUNK_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/box.h"
#include "strata/core/chunk_grid.h"

namespace strata {

// One rechunker stage: read blocks of `read` from the previous array, store
// them in chunks of `intermediate`, read that back in blocks of `write`.
struct RechunkStage {
  Shape read;
  Shape intermediate;
  Shape write;
  friend bool operator==(const RechunkStage&, const RechunkStage&) = default;
};

// A limit per axis for ConsolidateChunks: nullopt leaves the axis alone,
// kUpToExtent lets it grow to the array's extent.
inline constexpr Index kUpToExtent = -1;
using ChunkLimits = std::vector<std::optional<Index>>;

// rechunker's consolidate_chunks: grows each axis allowed by `limits` (empty:
// every axis, up to its extent), last axis first, to its limit if the block
// stays within max_mem, else by the whole multiple of its chunk that the
// headroom left allows. InvalidArgument when one chunk is over max_mem or a
// limit is below the chunk.
Result<Shape> ConsolidateChunks(const Shape& shape, const Shape& chunks, int64_t itemsize,
                                int64_t max_mem, const ChunkLimits& limits = {});

// Pieces a direct copy from `in` to `out` chunks cuts the array into: the IO
// operations one stage costs (rechunker's calculate_single_stage_io_ops).
int64_t SingleStageIoOps(const Shape& shape, const Shape& in, const Shape& out);

// The stages - 1 chunk shapes between `read` and `write`, geometrically
// spaced (numpy.geomspace, floored), as rechunker's calculate_stage_chunks.
std::vector<Shape> InterpolateStageChunks(const Shape& read, const Shape& write, int stages);

inline constexpr int kMaxRechunkStages = 100;

struct MultistagePlan {
  std::vector<RechunkStage> stages;
  int64_t io_ops = 0;
  // Why this number of stages ("3 stages: smallest intermediate chunk 25.5
  // MB >= min_mem 24.8 MB").
  std::string reason;
};

// rechunker's multistage_rechunking_plan. InvalidArgument when ranks differ,
// max_mem < min_mem, or the source or target chunk is over max_mem.
Result<MultistagePlan> PlanMultistage(const Shape& shape, const Shape& source, const Shape& target,
                                      int64_t itemsize, int64_t min_mem, int64_t max_mem);

// One copy operation (one op of the lowered rechunk): tasks copy blocks of
// `copy` chunks from the previous array and store them in `store` chunks.
struct RechunkCopy {
  Shape copy;
  Shape store;
  friend bool operator==(const RechunkCopy&, const RechunkCopy&) = default;
};

// Cubed's copy operations for a multistage plan ending in `target` chunks:
// per stage, (read, intermediate), or (read, write) when they are equal; the
// last stage adds (write, target) when its read and write differ.
std::vector<RechunkCopy> CopyOperations(const MultistagePlan& plan, const Shape& target);

// The sizes along an axis of `extent` that fit into chunks of both `a` and
// `b`: the blocks between the union of their boundaries (Cubed's
// split_chunksizes).
std::vector<Index> SplitChunkSizes(Index extent, Index a, Index b);

// The grid of chunks that fit into both `a` and `b` chunks of `shape`:
// regular when every axis is, else rectilinear.
ChunkGrid SplitGrid(const Shape& shape, const Shape& a, const Shape& b);

// Number of (source block, target block) intersections: the pieces a
// one-stage exchange moves.
int64_t ExchangePieces(const Shape& shape, const Shape& source, const Shape& target);

// Reading a rechunk's input in place, each target block decoding only the
// parts of the source chunks it needs (ZarrArray::ReadChunkPart): the bytes
// decoded per byte of the source, when a partial read decodes whole units of
// `unit` bytes of a chunk's C-order bytes (blosc's blocks) covering the runs
// it wants. Estimated on the first source chunk (a regular grid repeats its
// pattern); infinity when its pieces are too many to count (more than a
// million). 1 means each source byte is decoded once, as a decode that is
// published for all readers does.
double PartialReadAmplification(const Shape& shape, const Shape& source, const Shape& target,
                                int64_t itemsize, int64_t unit);

}  // namespace strata

#endif  // STRATA_PLAN_RECHUNK_PLAN_H_
