// Overflow-checked index arithmetic: the one home of every sum and product of
// indices that come from outside (a region's origin + extent, an array grown
// by an append, rectilinear chunk sizes summed into an extent, a product of
// extents or strides). A region near 2^63 once wrapped to a negative end that
// passed every bound check and was written at row 0.
//
// Each function returns InvalidArgument naming `what` when the result leaves
// int64. Stateless; safe from any thread.
#ifndef STRATA_CORE_CHECKED_INDEX_H_
#define STRATA_CORE_CHECKED_INDEX_H_

#include <string_view>

#include "strata/base/status.h"
#include "strata/core/box.h"

namespace strata {

// a + b and a * b.
Result<Index> CheckedAdd(Index a, Index b, std::string_view what);
Result<Index> CheckedMul(Index a, Index b, std::string_view what);

// OK when every origin and extent of `box` is >= 0 and every origin + extent
// fits in int64: what Box's methods (end, Intersect, ToString) assume of a
// box. A box made from outside input (a region to read or write) is checked
// with this before anything else is done with it. The message names `what`,
// the box's origin and shape, and the axis at fault.
Status CheckBox(const Box& box, std::string_view what);

}  // namespace strata

#endif  // STRATA_CORE_CHECKED_INDEX_H_
