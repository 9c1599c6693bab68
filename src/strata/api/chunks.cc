#include "strata/api/chunks.h"

#include <fmt/format.h>

#include <algorithm>

#include "strata/api/internal.h"
#include "strata/api/plan_checks.h"

namespace strata {

Result<ChunkGrid> NormalizeChunks(const ChunksRequest& request, const Shape& shape, DType dtype,
                                  const Spec& spec, std::string_view op) {
  const int rank = static_cast<int>(shape.size());
  for (Index d : shape) {
    if (d < 0) {
      return InvalidArgumentError(
          fmt::format("{}: shape {} has a negative extent", op, ShapeToString(shape)));
    }
  }
  STRATA_RETURN_IF_ERROR(CheckedNumElements(shape, fmt::format("{}: shape", op)).status());
  std::vector<AxisChunks> axes = request.axes;
  if (axes.empty()) {
    if (request.all.kind == AxisChunks::Kind::kSizes && rank != 1) {
      return InvalidArgumentError(fmt::format(
          "{}: chunk sizes for one axis given for an array of rank {}", op, rank));
    }
    axes.assign(rank, request.all);
  }
  if (static_cast<int>(axes.size()) != rank) {
    return InvalidArgumentError(fmt::format("{}: chunks for {} axes given for shape {} (rank {})",
                                            op, axes.size(), ShapeToString(shape), rank));
  }
  int64_t target = 0;
  if (request.auto_bytes.is_set()) {
    STRATA_ASSIGN_OR_RETURN(target, request.auto_bytes.Resolve("chunks"));
    if (target < 1) {
      return InvalidArgumentError(fmt::format("{}: chunks of {} bytes are too small", op, target));
    }
  } else {
    int64_t allowed = kDefaultAllowedMem;
    if (spec.allowed_mem.is_set()) {
      Result<int64_t> r = spec.allowed_mem.Resolve("allowed_mem");
      if (r.ok()) allowed = *r;
    }
    target = std::max<int64_t>(allowed / 8, 1 << 20);
  }

  std::vector<std::vector<Index>> sizes(rank);
  Shape block(rank, 1);  // nominal block shape; auto axes filled below
  std::vector<int> auto_axes;
  for (int i = 0; i < rank; ++i) {
    const AxisChunks& a = axes[i];
    const Index extent = shape[i];
    switch (a.kind) {
      case AxisChunks::Kind::kAuto:
        auto_axes.push_back(i);
        block[i] = std::max<Index>(extent, 1);
        break;
      case AxisChunks::Kind::kFull:
        block[i] = std::max<Index>(extent, 1);
        break;
      case AxisChunks::Kind::kSize:
        if (a.size < 1 && !(a.size == 0 && extent == 0)) {
          return InvalidArgumentError(fmt::format(
              "{}: chunk size {} along axis {} must be at least 1 (or -1 for the whole axis)", op,
              a.size, i));
        }
        block[i] = std::max<Index>(1, std::min(a.size, extent));
        break;
      case AxisChunks::Kind::kSizes: {
        Index sum = 0;
        for (Index s : a.sizes) {
          if (s < 1) {
            return InvalidArgumentError(fmt::format(
                "{}: chunk sizes along axis {} must be at least 1, got {}", op, i, s));
          }
          sum += s;
        }
        if (sum != extent) {
          return InvalidArgumentError(fmt::format(
              "{}: chunk sizes along axis {} sum to {}, but the axis has {} elements", op, i, sum,
              extent));
        }
        sizes[i] = a.sizes;
        block[i] = a.sizes.empty() ? 1 : *std::max_element(a.sizes.begin(), a.sizes.end());
        break;
      }
    }
  }
  // Auto axes: the leading ones are split first (C order keeps trailing axes
  // contiguous), as GridFor does.
  for (int i : auto_axes) {
    const int64_t bytes = NumElements(block) * dtype.size();
    if (bytes <= target) break;
    const int64_t rest = bytes / block[i];
    block[i] = std::max<Index>(1, target / std::max<int64_t>(rest, 1));
  }
  for (int i = 0; i < rank; ++i) {
    if (axes[i].kind == AxisChunks::Kind::kSizes) continue;
    const Index extent = shape[i];
    const Index c = std::max<Index>(1, std::min(block[i], extent));
    for (Index start = 0; start < extent; start += c) sizes[i].push_back(std::min(c, extent - start));
  }
  bool explicit_sizes = std::any_of(axes.begin(), axes.end(), [](const AxisChunks& a) {
    return a.kind == AxisChunks::Kind::kSizes;
  });
  if (!explicit_sizes) {
    Shape c(rank);
    for (int i = 0; i < rank; ++i) c[i] = std::max<Index>(1, std::min(block[i], shape[i]));
    return ChunkGrid::Regular(shape, c);
  }
  return internal_api::GridFromSizes(std::move(sizes));
}

Array rechunk(const Array& x, Shape chunks, ByteSize min_mem) {
  if (!x.ok()) return x;
  Result<ChunkGrid> grid = internal_api::GridFor(x.shape(), chunks, x.dtype(), *x.spec(), "rechunk");
  if (!grid.ok()) return Array::FromStatus(grid.status());
  // The exchange's key functions hold an entry per block along each axis.
  Status limits = internal_api::CheckBlockCount(x.chunks(), fmt::format("rechunk: {}", x.name()));
  if (limits.ok()) limits = internal_api::CheckBlockCount(*grid, "rechunk: the target");
  if (!limits.ok()) return Array::FromStatus(limits);
  int64_t min_bytes = -1;
  if (min_mem.is_set()) {
    Result<int64_t> r = min_mem.Resolve("rechunk min_mem");
    if (!r.ok()) return Array::FromStatus(r.status());
    min_bytes = *r;
  }
  return internal_api::RechunkToGrid(x, *grid, min_bytes);
}

Array rechunk(const Array& x, const ChunkGrid& grid) {
  if (!x.ok()) return x;
  if (grid.shape() != x.shape()) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("rechunk: a grid over shape {} given for an array of shape {}",
                    ShapeToString(grid.shape()), ShapeToString(x.shape()))));
  }
  if (grid == x.chunks()) return x;
  return internal_api::RechunkToGrid(x, grid);
}

Array rechunk(const Array& x, const ChunksRequest& request) {
  if (!x.ok()) return x;
  Result<ChunkGrid> grid = NormalizeChunks(request, x.shape(), x.dtype(), *x.spec(), "rechunk");
  if (!grid.ok()) return Array::FromStatus(grid.status());
  return rechunk(x, *grid);
}

}  // namespace strata
