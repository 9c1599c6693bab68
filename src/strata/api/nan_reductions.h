// NaN-aware reductions with numpy's semantics: nansum, nanprod, nanmean,
// nanvar, nanstd, nanmin, nanmax, nanargmin, nanargmax.
//
// Each is a reduction built like sum (partial reduce of every block, tree of
// combines, finalize: see api/reduction.h's ReduceOptions): one pass over the input,
// carrying the count of non-NaN elements beside the sum (nanmean), the
// moments (nanvar/nanstd, Chan's merge) or the extreme and its position. A
// fused elementwise chain in front streams strip by strip like any partial
// reduction, so nanmean(x * y) never materialises x * y.
//
// Results as numpy 1.24 gives them, without its warnings:
//   nansum / nanprod  NaN counts as 0 / 1; an all-NaN slice gives 0 / 1
//   nanmean           NaN for an all-NaN slice
//   nanvar / nanstd   NaN when (non-NaN count) - ddof <= 0
//   nanmin / nanmax   NaN for an all-NaN slice
//   nanargmin/argmax  compute() fails with InvalidArgument "nanargmin:
//                     All-NaN slice encountered" (numpy raises ValueError)
// Dtypes: for bool and integer inputs each is the plain reduction (sum, ...);
// complex works for nansum, nanprod and nanmean (an element is NaN when
// either part is); nanvar, nanstd, nanmin, nanmax and nan*arg* reject it.
// Errors when built: an axis out of range; nanmin/nanmax/nanarg* over an axis
// of extent 0 (no identity, as numpy).
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_NAN_REDUCTIONS_H_
#define STRATA_API_NAN_REDUCTIONS_H_

#include <optional>
#include <vector>

#include "strata/api/array.h"
#include "strata/api/reduction.h"

namespace strata {

Array nansum(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array nanprod(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array nanmean(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array nanvar(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array nanstd(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array nanmin(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array nanmax(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
// One axis, or none for the flat C-order index over the whole array.
Array nanargmin(const Array& x, std::optional<int> axis = std::nullopt, ReduceOptions options = {});
Array nanargmax(const Array& x, std::optional<int> axis = std::nullopt, ReduceOptions options = {});

}  // namespace strata

#endif  // STRATA_API_NAN_REDUCTIONS_H_
