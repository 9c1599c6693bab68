// subscript: Python's x[key] for basic indices, as the Array API defines it:
// integers, slices, None (a new axis of length 1) and one Ellipsis, in any
// combination. It lowers to getitem (integers and slices) followed by
// expand_dims for the new axes, so it adds no op of its own.
//
// Thread-safety: pure functions of immutable Arrays.
#ifndef STRATA_API_SUBSCRIPT_H_
#define STRATA_API_SUBSCRIPT_H_

#include <vector>

#include "strata/api/array.h"
#include "strata/strata.h"

namespace strata {

struct SubscriptTerm {
  enum class Kind { kInteger, kSlice, kNewAxis, kEllipsis };
  Kind kind = Kind::kSlice;
  Index integer = 0;
  Slice slice;
  static SubscriptTerm Integer(Index i) { return {Kind::kInteger, i, {}}; }
  static SubscriptTerm SliceOf(Slice s) { return {Kind::kSlice, 0, s}; }
  static SubscriptTerm NewAxis() { return {Kind::kNewAxis}; }
  static SubscriptTerm Ellipsis() { return {Kind::kEllipsis}; }
};

// x[terms...]. OutOfRange for an integer out of bounds, more indices than
// axes, or two ellipses (Python's IndexError); InvalidArgument for a zero step.
Array subscript(const Array& x, const std::vector<SubscriptTerm>& terms);

}  // namespace strata

#endif  // STRATA_API_SUBSCRIPT_H_
