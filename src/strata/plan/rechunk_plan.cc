#include "strata/plan/rechunk_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

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
// `out` along an axis of `size` (rechunker's _count_intermediate_chunks).
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
                                int64_t max_mem, const ChunkLimits& limits) {
  const int rank = static_cast<int>(shape.size());
  const Shape base = Clip(shape, chunks);
  // The axes that may grow, and how far.
  std::vector<std::optional<Index>> upper(rank);
  for (int n = 0; n < rank; ++n) {
    const Index extent = std::max<Index>(1, shape[n]);
    if (limits.empty()) {
      upper[n] = extent;
      continue;
    }
    if (!limits[n]) continue;
    const Index limit = *limits[n];
    if (limit == kUpToExtent || limit > extent) {
      upper[n] = extent;
    } else if (limit >= base[n]) {
      upper[n] = limit;
    } else {
      return InvalidArgumentError(fmt::format("chunk limit {} is below the chunk {} on axis {}",
                                              limit, base[n], n));
    }
  }
  const int64_t mem = itemsize * Product(base);
  if (mem > max_mem) {
    return InvalidArgumentError(fmt::format("a chunk {} of {} exceeds the rechunk's max_mem {}",
                                            ShapeToString(base), FormatBytes(mem),
                                            FormatBytes(max_mem)));
  }
  double headroom = static_cast<double>(max_mem) / static_cast<double>(mem);
  Shape grown = base;
  for (int n = rank - 1; n >= 0; --n) {
    if (!upper[n]) continue;
    // Try the whole way to the limit.
    grown[n] = *upper[n];
    int64_t now = itemsize * Product(grown);
    const double at_limit = static_cast<double>(max_mem) / static_cast<double>(now);
    if (at_limit > 1) {
      headroom = at_limit;
      continue;
    }
    // Else grow by the whole multiple of the chunk the headroom allows.
    const Index larger = base[n] * static_cast<Index>(headroom);
    grown[n] = std::min(larger, *upper[n]);
    now = itemsize * Product(grown);
    headroom = static_cast<double>(max_mem) / static_cast<double>(now);
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
  // numpy.geomspace(read, write, stages + 1): 10 ** linspace(log10(read),
  // log10(write)), computed the way numpy computes it, so that the floored
  // values are the ones rechunker gets.
  std::vector<Shape> out;
  const int num = stages + 1;
  for (int s = 1; s < stages; ++s) {
    Shape c(read.size());
    for (size_t i = 0; i < read.size(); ++i) {
      const double lo = std::log10(static_cast<double>(read[i]));
      const double hi = std::log10(static_cast<double>(write[i]));
      const double step = (hi - lo) / (num - 1);
      const double y = (step == 0 ? 0.0 : s * step) + lo;
      c[i] = std::max<Index>(1, static_cast<Index>(std::floor(std::pow(10.0, y))));
    }
    out.push_back(std::move(c));
  }
  return out;
}

Result<MultistagePlan> PlanMultistage(const Shape& shape, const Shape& source, const Shape& target,
                                      int64_t itemsize, int64_t min_mem, int64_t max_mem) {
  const size_t rank = shape.size();
  if (source.size() != rank || target.size() != rank) {
    return InvalidArgumentError("rechunk: source and target chunks must match the array's rank");
  }
  if (max_mem < min_mem) {
    return InvalidArgumentError(fmt::format("rechunk: max_mem {} is below min_mem {}",
                                            FormatBytes(max_mem), FormatBytes(min_mem)));
  }
  const Shape src = Clip(shape, source);
  const Shape dst = Clip(shape, target);
  for (const Shape* ends : {&src, &dst}) {
    if (itemsize * Product(*ends) > max_mem) {
      return InvalidArgumentError(fmt::format(
          "rechunk: the {} chunk {} takes {}, over max_mem {}", ends == &src ? "source" : "target",
          ShapeToString(*ends), FormatBytes(itemsize * Product(*ends)), FormatBytes(max_mem)));
    }
  }
  // Writes grow over every axis; reads only where the writes are larger, up
  // to them.
  STRATA_ASSIGN_OR_RETURN(Shape write, ConsolidateChunks(shape, dst, itemsize, max_mem));
  ChunkLimits read_limits(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (write[i] > src[i]) read_limits[i] = write[i];
  }
  STRATA_ASSIGN_OR_RETURN(Shape read,
                          ConsolidateChunks(shape, src, itemsize, max_mem, read_limits));

  MultistagePlan previous;
  for (int count = 1; count < kMaxRechunkStages; ++count) {
    std::vector<Shape> between = InterpolateStageChunks(read, write, count);
    std::vector<Shape> pre = {read};
    pre.insert(pre.end(), between.begin(), between.end());
    std::vector<Shape> post = between;
    post.push_back(write);
    MultistagePlan plan;
    int64_t smallest = INT64_MAX;
    for (int s = 0; s < count; ++s) {
      Shape shared(rank);
      for (size_t i = 0; i < rank; ++i) shared[i] = std::min(pre[s][i], post[s][i]);
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
          "{} stage{}: {} stages would raise IO operations from {} to {} (smallest "
          "intermediate chunk below min_mem {})",
          count - 1, count == 2 ? "" : "s", count, previous.io_ops, plan.io_ops,
          FormatBytes(min_mem));
      return previous;
    }
    plan.reason = fmt::format("{} stages: the most allowed", count);
    previous = std::move(plan);
  }
  return previous;
}

std::vector<RechunkCopy> CopyOperations(const MultistagePlan& plan, const Shape& target) {
  std::vector<RechunkCopy> ops;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const RechunkStage& s = plan.stages[i];
    const bool last = i + 1 == plan.stages.size();
    if (s.read == s.write) {
      ops.push_back({s.read, last ? target : s.write});
      continue;
    }
    ops.push_back({s.read, s.intermediate});
    if (last) ops.push_back({s.write, target});
  }
  return ops;
}

std::vector<Index> SplitChunkSizes(Index extent, Index a, Index b) {
  std::vector<Index> sizes;
  if (extent <= 0) return sizes;
  a = std::max<Index>(1, a);
  b = std::max<Index>(1, b);
  Index at = 0;
  while (at < extent) {
    const Index next = std::min({(at / a + 1) * a, (at / b + 1) * b, extent});
    sizes.push_back(next - at);
    at = next;
  }
  return sizes;
}

ChunkGrid SplitGrid(const Shape& shape, const Shape& a, const Shape& b) {
  std::vector<std::vector<Index>> sizes(shape.size());
  bool regular = true;
  Shape chunks(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    sizes[i] = SplitChunkSizes(shape[i], a[i], b[i]);
    chunks[i] = sizes[i].empty() ? 1 : sizes[i][0];
    for (size_t k = 0; k + 1 < sizes[i].size(); ++k) regular = regular && sizes[i][k] == chunks[i];
    if (!sizes[i].empty()) regular = regular && sizes[i].back() <= chunks[i];
  }
  if (regular) return *ChunkGrid::Regular(shape, chunks);
  return *ChunkGrid::Rectilinear(std::move(sizes));
}

}  // namespace strata

namespace strata {

double PartialReadAmplification(const Shape& shape, const Shape& source, const Shape& target,
                                int64_t itemsize, int64_t unit) {
  constexpr double kTooMany = 1e6;
  constexpr Index kRunsCountedOneByOne = 64;
  const int rank = static_cast<int>(shape.size());
  if (rank == 0 || unit <= 0 || itemsize <= 0) return HUGE_VAL;
  // The pieces of the first source chunk: per axis, the target blocks it meets.
  std::vector<std::vector<std::pair<Index, Index>>> axis_pieces(rank);
  double pieces = 1;
  for (int i = 0; i < rank; ++i) {
    const Index extent = std::min(source[i], shape[i]);
    if (extent <= 0 || target[i] <= 0) return 1.0;  // nothing to read
    for (Index lo = 0; lo < extent;) {
      const Index hi = std::min(extent, (lo / target[i] + 1) * target[i]);
      axis_pieces[i].push_back({lo, hi - lo});
      lo = hi;
    }
    pieces *= static_cast<double>(axis_pieces[i].size());
    if (pieces > kTooMany) return HUGE_VAL;
  }
  std::vector<int64_t> strides(rank);
  int64_t stride = itemsize;
  for (int i = rank - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= source[i];
  }
  const int64_t chunk_bytes = stride;
  double decoded = 0;
  Shape at(rank, 0), counts(rank);
  for (int i = 0; i < rank; ++i) counts[i] = static_cast<Index>(axis_pieces[i].size());
  do {
    Shape origin(rank), extent(rank);
    for (int i = 0; i < rank; ++i) std::tie(origin[i], extent[i]) = axis_pieces[i][at[i]];
    // C-order runs: trailing axes the piece covers whole merge into one.
    int m = rank - 1;
    int64_t run = extent[m] * itemsize;
    while (m > 0 && extent[m] == source[m]) {
      --m;
      run *= extent[m];
    }
    int64_t base = 0;
    for (int i = 0; i < rank; ++i) base += origin[i] * strides[i];
    Index runs = 1;
    for (int i = 0; i < m; ++i) runs *= extent[i];
    int64_t touched = 0;
    if (runs <= kRunsCountedOneByOne) {
      const Shape outer(extent.begin(), extent.begin() + m);
      Shape idx(m, 0);
      int64_t last = -1;  // the last unit counted (runs come in increasing order)
      do {
        int64_t offset = base;
        for (int i = 0; i < m; ++i) offset += idx[i] * strides[i];
        const int64_t first_unit = std::max(offset / unit, last + 1);
        const int64_t last_unit = (offset + run - 1) / unit;
        if (last_unit >= first_unit) touched += last_unit - first_unit + 1;
        last = std::max(last, last_unit);
      } while (NextIndex(idx, outer));
    } else {
      int64_t end = base + run;
      for (int i = 0; i < m; ++i) end += (extent[i] - 1) * strides[i];
      const int64_t spanned = (end - 1) / unit - base / unit + 1;
      touched = std::min<int64_t>(spanned, runs * ((run - 1) / unit + 2));
    }
    decoded += static_cast<double>(std::min(touched * unit, chunk_bytes));
  } while (NextIndex(at, counts));
  return decoded / static_cast<double>(chunk_bytes);
}

}  // namespace strata
