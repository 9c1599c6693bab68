// groupby_reduce with options: NaN skipping (xarray's skipna), the
// statistics beyond api/groupby.h's (var, std, first, last, argmin, argmax) and
// labels given as a chunked Strata array.
//
//   GroupbyOptions o;  o.num_groups = 12;         // skipna: floats skip NaN
//   Array monthly = groupby_reduce(t2m, month_labels, /*axis=*/0, ReduceOp::kMean, o);
//
// Ops: kSum, kMean, kCount, kMin, kMax, kVar, kStd (ddof), kArgmin, kArgmax,
// kFirst, kLast, and the kNan* forms (which always skip NaN). With skipna
// (the default for float and complex x, as in xarray) NaN elements are left
// out of their group: a group mean over data with NaN is the mean of the
// rest. An empty (or all-NaN, skipping) group gives sum 0, count 0, NaN for
// mean/var/std/min/max/first/last of floats, -1 for argmin/argmax, and for
// integer dtypes min/max their identity and first/last 0. argmin/argmax give
// positions along `axis` in the whole array (not within the group).
//
// Labels as an Array (1-d, integer dtype, one per position along `axis`)
// are rechunked to x's blocks along the axis and read by the partial tasks
// beside x's blocks; without num_groups their maximum is computed first (one
// eager pass over the labels: the number of groups is the output's shape).
// A label at or above num_groups fails the compute, naming label and
// position; negative labels are skipped.
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_GROUPBY_EXTRAS_H_
#define STRATA_API_GROUPBY_EXTRAS_H_

#include <optional>
#include <vector>

#include "strata/api/array.h"
#include "strata/api/groupby.h"
#include "strata/core/kernels/reduction.h"

namespace strata {

struct GroupbyOptions {
  // 0: the largest label + 1.
  Index num_groups = 0;
  // Skip NaN; default: true for float and complex x (xarray), false otherwise.
  std::optional<bool> skipna;
  int ddof = 0;  // var, std
  // Group states merged per combine round (>= 2; 0 picks the most that fit).
  int split_every = 0;
};

Array groupby_reduce(const Array& x, std::vector<int64_t> labels, int axis, ReduceOp op,
                     const GroupbyOptions& options);
// (No default for `options`: a braced label list must keep choosing the
// host-labels overload of api/groupby.h.)
Array groupby_reduce(const Array& x, const Array& labels, int axis, ReduceOp op,
                     const GroupbyOptions& options);

}  // namespace strata

#endif  // STRATA_API_GROUPBY_EXTRAS_H_
