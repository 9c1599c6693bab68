// Basic indexing: getitem (integers and slices, numpy's x[2, 10:20:2]) and
// take (integer positions along one axis). Integer and boolean array indices,
// Ellipsis and newaxis: api/advanced_indexing.h; Python's x[key] and
// x[key] = value: api/subscript.h.
//
//   Array first_day = getitem(t2m, {0});                          // t2m[0]
//   Array tropics = getitem(t2m, {Slice{}, Slice{300, 421}});     // t2m[:, 300:421]
//
// Both are one blockwise op whose key function is a table per axis from
// output block to the input blocks its positions come from; an output block
// reads no more input blocks than fit in allowed_mem (api/indexing.cc says
// how output blocks are grouped).
//
// Errors come back as an Array in an error state (api/array.h):
// InvalidArgument for more indices than axes, a slice step of zero, an
// integer index out of bounds, an axis out of range.
//
// Thread-safety: Slice and IndexItem are values; the functions are pure
// functions of immutable Array values.
#ifndef STRATA_API_INDEXING_H_
#define STRATA_API_INDEXING_H_

#include <optional>
#include <vector>

#include "strata/api/array.h"

namespace strata {

// One axis of a basic index: an integer (drops the axis) or a slice.
struct Slice {
  std::optional<Index> start, stop;
  Index step = 1;
};
struct IndexItem {
  enum class Kind { kInteger, kSlice };
  Kind kind;
  Index integer = 0;
  Slice slice;
  IndexItem(Index i) : kind(Kind::kInteger), integer(i) {}  // NOLINT
  IndexItem(int i) : kind(Kind::kInteger), integer(i) {}    // NOLINT
  IndexItem(Slice s) : kind(Kind::kSlice), slice(s) {}      // NOLINT
};
// x[items...]; missing trailing items select everything. Integer and boolean
// array indices, Ellipsis and newaxis: index() in api/advanced_indexing.h.
Array getitem(const Array& x, std::vector<IndexItem> items);
// x.take(indices, axis): the elements at `indices` along one axis.
Array take(const Array& x, std::vector<Index> indices, int axis);

}  // namespace strata

#endif  // STRATA_API_INDEXING_H_
