// ChunkGrid: how an array's shape is cut into blocks.
//
// A regular grid has one chunk size per axis; the last block along an axis is
// ragged (smaller) when the size does not divide the extent. A rectilinear grid
// lists every block's size per axis; rechunk intermediates need it. Both answer
// the same questions: how many blocks, where block b lies, which blocks a
// region touches. A zero-size axis has zero blocks.
//
// Thread-safety: immutable after construction; share freely.
#ifndef STRATA_CORE_CHUNK_GRID_H_
#define STRATA_CORE_CHUNK_GRID_H_

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/box.h"

namespace strata {

class ChunkGrid {
 public:
  // A grid of rank 0 over shape ().
  ChunkGrid() = default;

  // InvalidArgument when ranks differ, an extent is negative or a chunk size
  // is < 1.
  static Result<ChunkGrid> Regular(Shape shape, Shape chunk_shape);

  // `chunk_sizes[axis]` lists the blocks' sizes along that axis; they must be
  // >= 1 and sum to shape[axis] (an empty list for a zero-size axis).
  static Result<ChunkGrid> Rectilinear(std::vector<std::vector<Index>> chunk_sizes);

  int rank() const { return static_cast<int>(shape_.size()); }
  const Shape& shape() const { return shape_; }
  bool is_regular() const { return regular_; }

  // For a regular grid, the nominal chunk shape (the size of every block but
  // the ragged last ones). For a rectilinear grid, the largest block per axis.
  const Shape& chunk_shape() const { return chunk_shape_; }

  // Blocks per axis, and their product.
  const Shape& grid_shape() const { return grid_shape_; }
  Index num_blocks() const { return NumElements(grid_shape_); }

  // Start and size of block `b` along `axis`.
  Index block_origin(int axis, Index b) const;
  Index block_size(int axis, Index b) const;

  // The region of array coordinates covered by block `block`.
  Box BlockBox(std::span<const Index> block) const;
  Shape BlockShape(std::span<const Index> block) const;

  // The block along `axis` that holds `position` (0 <= position < shape).
  Index BlockContaining(int axis, Index position) const;

  // Blocks [first, last) along `axis` that intersect [begin, end).
  std::pair<Index, Index> BlocksIntersecting(int axis, Index begin, Index end) const;

  // Per-axis [first, last) block ranges that intersect `box`.
  void BlockRangeOf(const Box& box, Shape& first, Shape& last) const;

  // Sizes of every block along `axis`.
  std::vector<Index> AxisChunkSizes(int axis) const;

  // Largest block in elements (the bound used for memory projections).
  Index max_block_elements() const { return NumElements(chunk_shape_); }

  friend bool operator==(const ChunkGrid& a, const ChunkGrid& b);

  // "(10000, 1000)" for regular grids; "((3, 3, 2), (5,))" for rectilinear.
  std::string ToString() const;

 private:
  Shape shape_;
  Shape chunk_shape_;
  Shape grid_shape_;
  bool regular_ = true;
  // Rectilinear only: per axis, block starts followed by the extent
  // (grid_shape[axis] + 1 entries).
  std::vector<std::vector<Index>> offsets_;
};

}  // namespace strata

#endif  // STRATA_CORE_CHUNK_GRID_H_
