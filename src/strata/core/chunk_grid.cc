#include "strata/core/chunk_grid.h"

#include <fmt/format.h>

#include <algorithm>

#include "strata/core/checked_index.h"

namespace strata {

Result<ChunkGrid> ChunkGrid::Regular(Shape shape, Shape chunk_shape) {
  if (shape.size() != chunk_shape.size()) {
    return InvalidArgumentError(fmt::format("chunks {} do not match the rank of shape {}",
                                            ShapeToString(chunk_shape), ShapeToString(shape)));
  }
  ChunkGrid grid;
  grid.grid_shape_.resize(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return InvalidArgumentError(
          fmt::format("shape {} has a negative extent", ShapeToString(shape)));
    }
    if (chunk_shape[i] < 1) {
      return InvalidArgumentError(
          fmt::format("chunks {} must be at least 1 along every axis", ShapeToString(chunk_shape)));
    }
    // Rounded up without shape + chunk - 1, which overflows near 2^63.
    grid.grid_shape_[i] = shape[i] / chunk_shape[i] + (shape[i] % chunk_shape[i] != 0 ? 1 : 0);
  }
  STRATA_RETURN_IF_ERROR(CheckedNumElements(chunk_shape, "chunk shape"));
  STRATA_RETURN_IF_ERROR(CheckedNumElements(shape, "shape"));
  grid.shape_ = std::move(shape);
  grid.chunk_shape_ = std::move(chunk_shape);
  return grid;
}

Result<ChunkGrid> ChunkGrid::Rectilinear(std::vector<std::vector<Index>> chunk_sizes) {
  ChunkGrid grid;
  grid.regular_ = false;
  int rank = static_cast<int>(chunk_sizes.size());
  grid.shape_.resize(rank);
  grid.chunk_shape_.resize(rank);
  grid.grid_shape_.resize(rank);
  grid.offsets_.resize(rank);
  for (int i = 0; i < rank; ++i) {
    std::vector<Index>& offsets = grid.offsets_[i];
    offsets.reserve(chunk_sizes[i].size() + 1);
    offsets.push_back(0);
    Index max_size = 1;
    for (Index s : chunk_sizes[i]) {
      if (s < 1) {
        return InvalidArgumentError(
            fmt::format("rectilinear chunk sizes along axis {} must be at least 1, got {}", i, s));
      }
      STRATA_ASSIGN_OR_RETURN(
          Index end, CheckedAdd(offsets.back(), s,
                                fmt::format("rectilinear chunk sizes along axis {}", i)));
      offsets.push_back(end);
      max_size = std::max(max_size, s);
    }
    grid.shape_[i] = offsets.back();
    grid.chunk_shape_[i] = max_size;
    grid.grid_shape_[i] = static_cast<Index>(chunk_sizes[i].size());
  }
  STRATA_RETURN_IF_ERROR(CheckedNumElements(grid.shape_, "shape"));
  return grid;
}

Index ChunkGrid::block_origin(int axis, Index b) const {
  if (regular_) return b * chunk_shape_[axis];
  return offsets_[axis][b];
}

Index ChunkGrid::block_size(int axis, Index b) const {
  if (regular_) {
    return std::min(chunk_shape_[axis], shape_[axis] - b * chunk_shape_[axis]);
  }
  return offsets_[axis][b + 1] - offsets_[axis][b];
}

Box ChunkGrid::BlockBox(std::span<const Index> block) const {
  Box box;
  box.origin.resize(rank());
  box.shape.resize(rank());
  for (int i = 0; i < rank(); ++i) {
    box.origin[i] = block_origin(i, block[i]);
    box.shape[i] = block_size(i, block[i]);
  }
  return box;
}

Shape ChunkGrid::BlockShape(std::span<const Index> block) const {
  Shape shape(rank());
  for (int i = 0; i < rank(); ++i) shape[i] = block_size(i, block[i]);
  return shape;
}

Index ChunkGrid::BlockContaining(int axis, Index position) const {
  if (regular_) return position / chunk_shape_[axis];
  const std::vector<Index>& offsets = offsets_[axis];
  // The last start <= position.
  auto it = std::upper_bound(offsets.begin(), offsets.end() - 1, position);
  return static_cast<Index>(it - offsets.begin()) - 1;
}

std::pair<Index, Index> ChunkGrid::BlocksIntersecting(int axis, Index begin, Index end) const {
  if (begin >= end) return {0, 0};
  return {BlockContaining(axis, begin), BlockContaining(axis, end - 1) + 1};
}

void ChunkGrid::BlockRangeOf(const Box& box, Shape& first, Shape& last) const {
  first.resize(rank());
  last.resize(rank());
  for (int i = 0; i < rank(); ++i) {
    auto [f, l] = BlocksIntersecting(i, box.origin[i], box.end(i));
    first[i] = f;
    last[i] = l;
  }
}

std::vector<Index> ChunkGrid::AxisChunkSizes(int axis) const {
  std::vector<Index> sizes(grid_shape_[axis]);
  for (Index b = 0; b < grid_shape_[axis]; ++b) sizes[b] = block_size(axis, b);
  return sizes;
}

bool operator==(const ChunkGrid& a, const ChunkGrid& b) {
  if (a.shape_ != b.shape_ || a.grid_shape_ != b.grid_shape_) return false;
  for (int i = 0; i < a.rank(); ++i) {
    for (Index k = 0; k < a.grid_shape_[i]; ++k) {
      if (a.block_size(i, k) != b.block_size(i, k)) return false;
    }
  }
  return true;
}

std::string ChunkGrid::ToString() const {
  if (regular_) return ShapeToString(chunk_shape_);
  std::string out = "(";
  for (int i = 0; i < rank(); ++i) {
    if (i) out += ", ";
    std::vector<Index> sizes = AxisChunkSizes(i);
    if (sizes.size() > 6) {
      out += fmt::format("({}, ..., {} blocks)", fmt::join(sizes.begin(), sizes.begin() + 3, ", "),
                         sizes.size());
    } else {
      out += ShapeToString(sizes);
    }
  }
  return out + ")";
}

}  // namespace strata
