#include "strata/api/subscript.h"

#include <fmt/format.h>

namespace strata {

Array subscript(const Array& x, const std::vector<SubscriptTerm>& terms) {
  using Kind = SubscriptTerm::Kind;
  if (!x.ok()) return x;
  const int rank = x.ndim();
  int indexed = 0, ellipses = 0;
  for (const SubscriptTerm& t : terms) {
    if (t.kind == Kind::kInteger || t.kind == Kind::kSlice) ++indexed;
    if (t.kind == Kind::kEllipsis) ++ellipses;
  }
  if (ellipses > 1) {
    return Array::FromStatus(
        OutOfRangeError("index: an index can only have a single ellipsis ('...')"));
  }
  if (indexed > rank) {
    return Array::FromStatus(OutOfRangeError(
        fmt::format("index: too many indices for array: array is {}-dimensional, but {} were "
                    "indexed",
                    rank, indexed)));
  }
  std::vector<IndexItem> items;
  std::vector<int> new_axes;  // positions in the result, ascending
  int out_axis = 0;
  for (const SubscriptTerm& t : terms) {
    switch (t.kind) {
      case Kind::kInteger: {
        const int axis = static_cast<int>(items.size());
        const Index extent = x.shape()[axis];
        if (t.integer < -extent || t.integer >= extent) {
          return Array::FromStatus(OutOfRangeError(
              fmt::format("index: index {} is out of bounds for axis {} with size {}", t.integer,
                          axis, extent)));
        }
        items.emplace_back(t.integer);
        break;
      }
      case Kind::kSlice:
        if (t.slice.step == 0) {
          return Array::FromStatus(InvalidArgumentError("index: slice step cannot be zero"));
        }
        items.emplace_back(t.slice);
        ++out_axis;
        break;
      case Kind::kNewAxis:
        new_axes.push_back(out_axis++);
        break;
      case Kind::kEllipsis:
        for (int k = 0; k < rank - indexed; ++k) {
          items.emplace_back(Slice{});
          ++out_axis;
        }
        break;
    }
  }
  Array out = items.empty() ? x : getitem(x, std::move(items));
  for (int axis : new_axes) out = expand_dims(out, axis);
  return out;
}

}  // namespace strata
