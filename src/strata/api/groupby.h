// groupby_reduce: a reduction along one axis by integer group labels (flox's
// "map-reduce" strategy, xarray's groupby(...).reduce), built as a tree like
// the reductions of api/reduction.h (api/groupby.cc draws it).
//
//   // monthly means of daily data: labels[t] = month of day t, 0..11
//   Array monthly = groupby_reduce(t2m, month_of_day, /*axis=*/0, ReduceOp::kMean, 12);
//
// Options (NaN skipping, ddof, split_every), more statistics (var, std,
// first, last, argmin, argmax) and labels given as a chunked array:
// api/groupby_extras.h.
//
// Errors come back as an Array in an error state (api/array.h):
// InvalidArgument for labels whose count is not the axis's extent, a label
// at or past num_groups, an op groupby does not support, an axis out of
// range, and group states too large for allowed_mem.
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_GROUPBY_H_
#define STRATA_API_GROUPBY_H_

#include <cstdint>
#include <vector>

#include "strata/api/array.h"
#include "strata/core/kernels/reduction.h"

namespace strata {

// Reduces `x` along `axis` by integer group `labels` (one per position along
// the axis, in [0, num_groups); negative labels are skipped). The result has
// `axis` replaced by num_groups (default: max label + 1). Float data skips
// NaN (xarray's skipna default); more ops and options: api/groupby_extras.h.
Array groupby_reduce(const Array& x, std::vector<int64_t> labels, int axis, ReduceOp op,
                     Index num_groups = 0);

}  // namespace strata

#endif  // STRATA_API_GROUPBY_H_
