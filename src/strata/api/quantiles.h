// Quantiles and medians along axes, with numpy's results: quantile,
// nanquantile, median, nanmedian (numpy 2's methods and dtypes).
//
// Like sort, a quantile needs every value of a slice in one task: x is
// rechunked so that the reduced axes are one chunk and the other axes'
// chunks are shrunk until a block fits in allowed_mem; each block then
// yields its part of the result on its own. When even one slice (a single
// position on every other axis) does not fit, the array is refused when
// built, with a message naming the axes and the budget (Dask's nanmedian
// also asks for the axis in one chunk).
//
//   // the 10th, 50th and 90th percentiles of each grid point over time:
//   Array p = quantile(t2m, {0.1, 0.5, 0.9}, {.axes = {{0}}, .skipna = true});
//
// Results: quantile's shape is q's (none for a scalar q, else one axis of
// len(q)) followed by x's shape without the reduced axes (kept as 1 with
// keepdims). Interpolating methods return float64 (numpy promotes x with
// q's float64); the methods that pick an element (lower, higher, nearest,
// inverted_cdf, closest_observation) return x's dtype. median returns x's
// dtype for floats and float64 for integers; float16 is computed in
// float32 (and what is returned in x's dtype is cast back). A slice holding a
// NaN gives NaN, unless skipna (the nan-functions): then NaNs are left out,
// and a slice of NaN only gives NaN. Bool and complex are refused by name.
//
// Errors (InvalidArgument when built): a q outside [0, 1] or NaN, an axis
// out of range or repeated, quantiles of empty slices (numpy: IndexError), a
// slice too large for the budget. An empty q list gives a q axis of 0.
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_QUANTILES_H_
#define STRATA_API_QUANTILES_H_

#include <optional>
#include <string_view>
#include <vector>

#include "strata/api/array.h"
#include "strata/base/status.h"

namespace strata {

// numpy's quantile methods (the Hyndman and Fan estimators and four others).
enum class QuantileMethod {
  kInvertedCdf,
  kAveragedInvertedCdf,
  kClosestObservation,
  kInterpolatedInvertedCdf,
  kHazen,
  kWeibull,
  kLinear,
  kMedianUnbiased,
  kNormalUnbiased,
  kLower,
  kHigher,
  kMidpoint,
  kNearest,
};

// numpy's name of a method ("linear", "median_unbiased", ...); InvalidArgument
// listing the names for any other.
Result<QuantileMethod> ParseQuantileMethod(std::string_view name);

struct QuantileOptions {
  // The axes reduced (negative ones count from the end); nullopt: every axis.
  std::optional<std::vector<int>> axes;
  QuantileMethod method = QuantileMethod::kLinear;
  bool keepdims = false;
  bool skipna = false;  // nanquantile
};

// The q-quantiles of x (q in [0, 1]). With `q_is_scalar` q holds one value
// and the result has no q axis.
Array quantile(const Array& x, std::vector<double> q, const QuantileOptions& options = {},
               bool q_is_scalar = false);
Array quantile(const Array& x, double q, const QuantileOptions& options = {});

// numpy's median (the mean of the two middle values of an even count).
Array median(const Array& x, std::optional<std::vector<int>> axes = std::nullopt,
             bool keepdims = false, bool skipna = false);

}  // namespace strata

#endif  // STRATA_API_QUANTILES_H_
