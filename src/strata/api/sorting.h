// Sorting along an axis (sort, argsort) and take_along_axis.
//
// A sort needs the whole axis in one task: the array is rechunked so that
// `axis` is one chunk and the other axes' chunks are shrunk until a block
// (with the copies the sort needs) fits in allowed_mem; then each block is
// sorted on its own. When even one slice along the axis (a single position on
// every other axis) does not fit, the array is refused when built, with a
// message naming the axis, its extent and the budget. take_along_axis (the
// usual partner of argsort) reads x the same way: a whole-axis block beside
// each block of indices.
//
// Order: ascending, NaN last (numpy's); descending, NaN first, equal values in
// their original relative order (the standard's stable descending sort,
// array_api_strict's). Bool and real dtypes; complex is refused.
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_SORTING_H_
#define STRATA_API_SORTING_H_

#include "strata/api/array.h"

namespace strata {

Array sort(const Array& x, int axis = -1, bool descending = false, bool stable = true);
// int64 indices that sort x along `axis`.
Array argsort(const Array& x, int axis = -1, bool descending = false, bool stable = true);

// out[..., i, ...] = x[..., indices[..., i, ...], ...] along `axis` (numpy's
// take_along_axis: indices has x's rank and broadcasts with it on the other
// axes). An index out of range fails the compute, naming it.
Array take_along_axis(const Array& x, const Array& indices, int axis = -1);

}  // namespace strata

#endif  // STRATA_API_SORTING_H_
