// Reductions over axes as a tree (shared/DESIGN.md): sum, prod, mean, min,
// max, var, std, all, any, count_nonzero, argmin and argmax, and reduce() for
// any ReduceOp (core/kernels/reduction.h).
//
//   Array climatology = mean(t2m, {0});                 // over time
//   Array spread = std(t2m, {1, 2}, {.ddof = 1});        // over lat, lon
//
// Every block is reduced to a small state, states are merged up to
// split_every at a time per round, and a finalize step turns the last state
// into the result, so no task holds more than a few blocks however long the
// reduced axes are. Result dtypes are numpy's (sum of int32 is int64, mean of
// ints is float64; float16 computes and returns float32). More reductions:
// api/nan_reductions.h (NaN-skipping), api/quantiles.h, api/scans.h
// (cumulative), api/groupby.h (by group label).
//
// Errors come back as an Array in an error state (api/array.h):
// InvalidArgument for an axis out of range or repeated, a dtype the op does
// not support, or an empty reduction with no identity (min, max, argmin,
// argmax over an axis of extent 0).
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_REDUCTION_H_
#define STRATA_API_REDUCTION_H_

#include <optional>
#include <vector>

#include "strata/api/array.h"
#include "strata/core/kernels/reduction.h"

namespace strata {

// `axes` empty means all axes. Negative axes count from the end.
struct ReduceOptions {
  bool keepdims = false;
  // Blocks merged per round of the tree reduction; 0 picks the most that
  // fit in allowed_mem (at least 2).
  int split_every = 0;
  int ddof = 0;  // var, std
};

Array reduce(ReduceOp op, const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array sum(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array prod(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array mean(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array min(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array max(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array var(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array std(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array all(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array any(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
Array count_nonzero(const Array& x, std::vector<int> axes = {}, ReduceOptions options = {});
// One axis, or none for the flat index over the whole array.
Array argmin(const Array& x, std::optional<int> axis = std::nullopt, ReduceOptions options = {});
Array argmax(const Array& x, std::optional<int> axis = std::nullopt, ReduceOptions options = {});

}  // namespace strata

#endif  // STRATA_API_REDUCTION_H_
