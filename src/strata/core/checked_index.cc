#include "strata/core/checked_index.h"

#include <fmt/format.h>

namespace strata {

Result<Index> CheckedAdd(Index a, Index b, std::string_view what) {
  Index out;
  if (__builtin_add_overflow(a, b, &out)) {
    return InvalidArgumentError(fmt::format("{}: {} + {} overflows int64", what, a, b));
  }
  return out;
}

Result<Index> CheckedMul(Index a, Index b, std::string_view what) {
  Index out;
  if (__builtin_mul_overflow(a, b, &out)) {
    return InvalidArgumentError(fmt::format("{}: {} * {} overflows int64", what, a, b));
  }
  return out;
}

Status CheckBox(const Box& box, std::string_view what) {
  if (box.origin.size() != box.shape.size()) {
    return InvalidArgumentError(fmt::format("{} at {} of shape {}: the ranks differ", what,
                                            ShapeToString(box.origin), ShapeToString(box.shape)));
  }
  for (int i = 0; i < box.rank(); ++i) {
    if (box.origin[i] < 0 || box.shape[i] < 0) {
      return InvalidArgumentError(fmt::format("{} at {} of shape {} has a negative {} on axis {}",
                                              what, ShapeToString(box.origin),
                                              ShapeToString(box.shape),
                                              box.origin[i] < 0 ? "origin" : "extent", i));
    }
    Index stop;
    if (__builtin_add_overflow(box.origin[i], box.shape[i], &stop)) {
      return InvalidArgumentError(fmt::format(
          "{} at {} of shape {} ends past the largest index (origin + extent overflows int64 on "
          "axis {})",
          what, ShapeToString(box.origin), ShapeToString(box.shape), i));
    }
  }
  return Status::Ok();
}

}  // namespace strata
