// Index, Shape and Box: the integer vocabulary of N-dimensional regions.
//
// Every shape, index, stride and chunk coordinate is an Index (int64_t); no
// unsigned arithmetic on shapes. A Box is a half-open hyperrectangle
// [origin, origin + shape) in array coordinates.
#ifndef STRATA_CORE_BOX_H_
#define STRATA_CORE_BOX_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "strata/base/status.h"

namespace strata {

using Index = int64_t;
using Shape = std::vector<Index>;

// Product of the extents; 1 for rank 0. CHECK-fails on overflow.
Index NumElements(std::span<const Index> shape);

// Product of the extents, or InvalidArgument naming `what` when it overflows
// int64 or an extent is negative.
Result<Index> CheckedNumElements(std::span<const Index> shape, std::string_view what);

// "(10000, 1000)".
std::string ShapeToString(std::span<const Index> shape);

// "3.7" style block coordinates, joined by `separator`.
std::string JoinIndices(std::span<const Index> indices, char separator);

// Parses "10000,1000" or "(10000, 1000)" into a shape; InvalidArgument names
// `what` on a malformed list or a negative extent.
Result<Shape> ParseShape(std::string_view text, std::string_view what);

struct Box {
  Shape origin;
  Shape shape;

  Box() = default;
  Box(Shape origin_in, Shape shape_in) : origin(std::move(origin_in)), shape(std::move(shape_in)) {}
  // The box [0, shape).
  static Box FromShape(Shape shape) {
    Shape origin(shape.size(), 0);
    return Box(std::move(origin), std::move(shape));
  }

  int rank() const { return static_cast<int>(shape.size()); }
  Index num_elements() const { return NumElements(shape); }
  bool empty() const;
  Index end(int axis) const { return origin[axis] + shape[axis]; }
  bool Contains(const Box& other) const;

  friend bool operator==(const Box& a, const Box& b) {
    return a.origin == b.origin && a.shape == b.shape;
  }
  std::string ToString() const;
};

// The intersection of two boxes of equal rank (possibly empty).
Box Intersect(const Box& a, const Box& b);

// `box` shifted so that `new_origin` becomes 0: the same region in the
// coordinates of an array whose origin is `new_origin`.
Box Translate(const Box& box, std::span<const Index> new_origin);

// Row-major (C order) linear index of `indices` in a grid of `shape`, and back.
Index LinearIndex(std::span<const Index> indices, std::span<const Index> shape);
void UnravelIndex(Index linear, std::span<const Index> shape, std::span<Index> out);

// Advances `indices` to the next position in C order within `shape`; returns
// false after the last one.
bool NextIndex(std::span<Index> indices, std::span<const Index> shape);
// Same, within [begin, end) per axis.
bool NextIndexInRange(std::span<Index> indices, std::span<const Index> begin,
                      std::span<const Index> end);

}  // namespace strata

#endif  // STRATA_CORE_BOX_H_
