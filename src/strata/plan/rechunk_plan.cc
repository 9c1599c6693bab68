#include "strata/plan/rechunk_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "strata/base/byte_size.h"

namespace strata {
namespace {

int64_t Product(const Shape& s) {
  int64_t p = 1;
  for (Index v : s) p *= v;
  return p;
}

// Chunks no larger than the array (a chunk of 0 on an empty axis becomes 1).
Shape Clip(const Shape& shape, const Shape& chunks) {
  Shape out(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    out[i] = std::max<Index>(1, std::min(chunks[i], std::max<Index>(1, shape[i])));
  }
  return out;
}

// Pieces one axis is cut into when chunks of `in` are copied into chunks of
// `out` along an axis of `size`.
int64_t AxisSplits(Index in, Index out, Index size) {
  if (size == 0) return 0;
  const Index lcm = std::lcm(in, out);
  const Index per_lcm = lcm / in + lcm / out - 1;
  const Index whole = size / lcm;
  const Index rest = size % lcm;
  Index splits = whole * per_lcm;
  if (rest > 0) splits += (rest + in - 1) / in + (rest + out - 1) / out - 1;
  return splits;
}

}  // namespace

Result<Shape> ConsolidateChunks(const Shape& shape, const Shape& chunks, int64_t itemsize,
                                int64_t max_mem, const Shape& limits) {
  Shape grown = Clip(shape, chunks);
  const int64_t mem = itemsize * Product(grown);
  if (mem > max_mem) {
    return InvalidArgumentError(fmt::format("a chunk {} of {} exceeds the rechunk's max_mem {}",
                                            ShapeToString(grown), FormatBytes(mem),
                                            FormatBytes(max_mem)));
  }
  for (int n = static_cast<int>(shape.size()) - 1; n >= 0; --n) {
    const Index extent = std::max<Index>(1, shape[n]);
    const Index limit =
        limits.empty() || limits[n] <= 0 ? extent : std::min<Index>(limits[n], extent);
    if (grown[n] >= limit) continue;
    Shape others = grown;
    others[n] = 1;
    const int64_t room = max_mem / (itemsize * Product(others));  // elements along n
    const Index cap = std::min<Index>(limit, room);
    if (cap >= extent) {
      grown[n] = extent;
    } else {
      grown[n] = std::max(grown[n], cap / grown[n] * grown[n]);
    }
  }
  return grown;
}

int64_t SingleStageIoOps(const Shape& shape, const Shape& in, const Shape& out) {
  int64_t ops = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    ops *= AxisSplits(std::max<Index>(1, in[i]), std::max<Index>(1, out[i]), shape[i]);
  }
  return ops;
}

int64_t ExchangePieces(const Shape& shape, const Shape& source, const Shape& target) {
  return SingleStageIoOps(shape, Clip(shape, source), Clip(shape, target));
}

std::vector<Shape> InterpolateStageChunks(const Shape& read, const Shape& write, int stages) {
  std::vector<Shape> out;
  for (int s = 1; s < stages; ++s) {
    const double p = static_cast<double>(s) / stages;
    Shape c(read.size());
    for (size_t i = 0; i < read.size(); ++i) {
      double v = std::pow(static_cast<double>(read[i]), 1 - p) *
                 std::pow(static_cast<double>(write[i]), p);
      c[i] = std::max<Index>(1, static_cast<Index>(std::floor(v + 1e-9)));
    }
    out.push_back(std::move(c));
  }
  return out;
}

Result<MultistagePlan> PlanMultistage(const Shape& shape, const Shape& source, const Shape& target,
                                      int64_t itemsize, int64_t min_mem, int64_t max_mem) {
  if (source.size() != shape.size() || target.size() != shape.size()) {
    return InvalidArgumentError("rechunk: source and target chunks must match the array's rank");
  }
  if (max_mem < min_mem) {
    return InvalidArgumentError(fmt::format("rechunk: max_mem {} is below min_mem {}",
                                            FormatBytes(max_mem), FormatBytes(min_mem)));
  }
  const Shape src = Clip(shape, source);
  const Shape dst = Clip(shape, target);
  // Reads grow towards the target along axes where the target's chunks are
  // larger; writes grow towards the reads where the reads are larger.
  Shape read_limits(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) read_limits[i] = std::max(src[i], dst[i]);
  STRATA_ASSIGN_OR_RETURN(Shape read, ConsolidateChunks(shape, src, itemsize, max_mem, read_limits));
  STRATA_ASSIGN_OR_RETURN(Shape write, ConsolidateChunks(shape, dst, itemsize, max_mem, read));

  MultistagePlan previous;
  for (int count = 1; count <= kMaxRechunkStages; ++count) {
    std::vector<Shape> between = InterpolateStageChunks(read, write, count);
    std::vector<Shape> pre = {read};
    pre.insert(pre.end(), between.begin(), between.end());
    std::vector<Shape> post = between;
    post.push_back(write);
    MultistagePlan plan;
    int64_t smallest = INT64_MAX;
    for (int s = 0; s < count; ++s) {
      Shape shared(shape.size());
      for (size_t i = 0; i < shape.size(); ++i) shared[i] = std::min(pre[s][i], post[s][i]);
      smallest = std::min(smallest, itemsize * Product(shared));
      plan.io_ops += SingleStageIoOps(shape, pre[s], post[s]);
      plan.stages.push_back({pre[s], std::move(shared), post[s]});
    }
    if (smallest >= min_mem) {
      plan.reason = fmt::format("{} stage{}: smallest intermediate chunk {} >= min_mem {}", count,
                                count == 1 ? "" : "s", FormatBytes(smallest), FormatBytes(min_mem));
      return plan;
    }
    if (count > 1 && plan.io_ops > previous.io_ops) {
      previous.reason = fmt::format(
          "{} stage{}: {} stages would raise IO operations from {} to {}", count - 1,
          count == 2 ? "" : "s", count, previous.io_ops, plan.io_ops);
      return previous;
    }
    plan.reason = fmt::format("{} stages: the most allowed", count);
    previous = std::move(plan);
  }
  return previous;
}

std::vector<Shape> IntermediateChunkShapes(const MultistagePlan& plan, const Shape& source,
                                           const Shape& target) {
  // Stage s > 0 reads the array stage s - 1 wrote: the interpolated shapes.
  std::vector<Shape> out;
  for (size_t s = 1; s < plan.stages.size(); ++s) {
    const Shape& c = plan.stages[s].read;
    if (c == source || c == target) continue;
    if (!out.empty() && out.back() == c) continue;
    out.push_back(c);
  }
  return out;
}

}  // namespace strata
