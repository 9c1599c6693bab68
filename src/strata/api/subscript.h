// subscript: Python's x[key] for basic indices, as the Array API defines it:
// integers, slices, None (a new axis of length 1) and one Ellipsis, in any
// combination. It lowers to getitem (integers and slices) followed by
// expand_dims for the new axes, so it adds no op of its own.
//
// setitem: x[key] = value as a new array (arrays are immutable values): the
// blocks of x with the selected elements replaced by `value` broadcast to the
// selection, in one blockwise op over x's grid. `value` is read whole by every
// task (it is rechunked into one block), so it must fit in a quarter of the
// task budget; typical values are scalars and small arrays.
//
// Thread-safety: pure functions of immutable Arrays.
#ifndef STRATA_API_SUBSCRIPT_H_
#define STRATA_API_SUBSCRIPT_H_

#include <vector>

#include "strata/api/array.h"
#include "strata/api/indexing.h"

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

// x with x[terms] = value (value cast to x's dtype, broadcast to the
// selection; None terms are ignored). The same index errors as subscript;
// InvalidArgument when value does not broadcast or is too large.
Array setitem(const Array& x, const std::vector<SubscriptTerm>& terms, const Array& value);
Array setitem(const Array& x, const std::vector<SubscriptTerm>& terms, Scalar value);

}  // namespace strata

#endif  // STRATA_API_SUBSCRIPT_H_
