// Cumulative sums and products along an axis (cumulative_sum,
// cumulative_prod, nancumsum, nancumprod) and n-th differences (diff).
//
// A scan is built without rechunking the axis:
//   1. totals      one element per block along the axis: each block's sum
//                  (or product) — a blockwise op over x's blocks;
//   2. carries     the exclusive prefix of the totals by a tree (Blelloch's
//                  up-sweep of split_every totals per task, then a
//                  down-sweep), so every task reads at most split_every small
//                  blocks however long the axis;
//   3. the scan    each block scanned on its own, starting from its carry.
// x is read twice (steps 1 and 3, each block once per step); no intermediate
// is as large as x. diff reads each block and the first row of the next one.
//
// dtypes (the standard's): bool and signed integers accumulate in int64,
// unsigned in uint64, floats and complex in their own type; `dtype` overrides
// it. numpy's nancumsum/nancumprod treat NaN as 0/1. With no axis, x is
// flattened (numpy's cumsum; the standard asks for an axis when rank > 1).
// include_initial (the standard's) prepends the identity: the result has one
// more element along the axis.
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_SCANS_H_
#define STRATA_API_SCANS_H_

#include <optional>

#include "strata/api/array.h"

namespace strata {

Array cumulative_sum(const Array& x, std::optional<int> axis = std::nullopt,
                     std::optional<DType> dtype = std::nullopt, bool include_initial = false);
Array cumulative_prod(const Array& x, std::optional<int> axis = std::nullopt,
                      std::optional<DType> dtype = std::nullopt, bool include_initial = false);
Array nancumsum(const Array& x, std::optional<int> axis = std::nullopt);
Array nancumprod(const Array& x, std::optional<int> axis = std::nullopt);

// The n-th discrete difference along `axis` (numpy's diff; for bool input
// the difference is "not equal", as numpy's). prepend/append are
// concatenated along the axis first (0-d values stand for one position).
// InvalidArgument for n < 0, rank 0, or a prepend/append that does not match
// x's shape off the axis.
Array diff(const Array& x, int axis = -1, int n = 1, std::optional<Array> prepend = std::nullopt,
           std::optional<Array> append = std::nullopt);

}  // namespace strata

#endif  // STRATA_API_SCANS_H_
