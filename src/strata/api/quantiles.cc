// api/quantiles.h. The index arithmetic follows numpy 2's
// numpy/lib/_function_base_impl.py (_quantile, _get_indexes, _lerp and the
// _QuantileMethods table), so that results match numpy's bit for bit where
// numpy's own arithmetic allows.
#include "strata/api/quantiles.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "strata/api/array.h"
#include "strata/api/elementwise.h"
#include "strata/api/internal.h"
#include "strata/core/dtype_dispatch.h"

namespace strata {
namespace {

using internal_api::GridFromSizes;
using internal_api::MakeBlockwise;

struct MethodName {
  std::string_view name;
  QuantileMethod method;
};

constexpr MethodName kMethods[] = {
    {"inverted_cdf", QuantileMethod::kInvertedCdf},
    {"averaged_inverted_cdf", QuantileMethod::kAveragedInvertedCdf},
    {"closest_observation", QuantileMethod::kClosestObservation},
    {"interpolated_inverted_cdf", QuantileMethod::kInterpolatedInvertedCdf},
    {"hazen", QuantileMethod::kHazen},
    {"weibull", QuantileMethod::kWeibull},
    {"linear", QuantileMethod::kLinear},
    {"median_unbiased", QuantileMethod::kMedianUnbiased},
    {"normal_unbiased", QuantileMethod::kNormalUnbiased},
    {"lower", QuantileMethod::kLower},
    {"higher", QuantileMethod::kHigher},
    {"midpoint", QuantileMethod::kMidpoint},
    {"nearest", QuantileMethod::kNearest},
};

// Methods that pick an element (numpy: an integer virtual index).
bool Picks(QuantileMethod m) {
  return m == QuantileMethod::kInvertedCdf || m == QuantileMethod::kClosestObservation ||
         m == QuantileMethod::kLower || m == QuantileMethod::kHigher ||
         m == QuantileMethod::kNearest;
}

// Where the q-quantile of n sorted values lies: elements lo and hi and the
// weight of hi (a picking method has lo == hi).
struct Position {
  Index lo = 0, hi = 0;
  double gamma = 0;
};

Index Clip(double i, Index n) {
  return static_cast<Index>(std::clamp(i, 0.0, static_cast<double>(n - 1)));
}

// numpy's _discret_interpolation_to_boundaries: floor(index), or the next
// element unless `previous` says otherwise.
Index Boundary(double index, bool previous, Index n) {
  const double lo = std::floor(index);
  return Clip(previous ? lo : lo + 1, n);
}

Position PositionOf(QuantileMethod m, Index n, double q) {
  const double dn = static_cast<double>(n);
  auto pick = [](Index i) { return Position{i, i, 0}; };
  switch (m) {
    case QuantileMethod::kLower:
      return pick(Clip(std::floor((dn - 1) * q), n));
    case QuantileMethod::kHigher:
      return pick(Clip(std::ceil((dn - 1) * q), n));
    case QuantileMethod::kNearest:
      return pick(Clip(std::nearbyint((dn - 1) * q), n));  // np.around: half to even
    case QuantileMethod::kInvertedCdf: {
      const double index = dn * q - 1;
      return pick(Boundary(index, index - std::floor(index) == 0, n));
    }
    case QuantileMethod::kClosestObservation: {
      // numpy 2's rule (H&F: the nearest even order statistic at g == 0,
      // 1-based, so an odd 0-based floor keeps the previous element).
      const double index = dn * q - 1 - 0.5;
      const double lo = std::floor(index);
      return pick(Boundary(index, index - lo == 0 && std::fmod(lo, 2.0) != 0, n));
    }
    default:
      break;
  }
  double v = 0;
  auto hyndman_fan = [&](double alpha, double beta) {
    return dn * q + (alpha + q * (1 - alpha - beta)) - 1;
  };
  switch (m) {
    case QuantileMethod::kLinear:
      v = (dn - 1) * q;
      break;
    case QuantileMethod::kMidpoint:
      v = 0.5 * (std::floor((dn - 1) * q) + std::ceil((dn - 1) * q));
      break;
    case QuantileMethod::kAveragedInvertedCdf:
      v = dn * q - 1;
      break;
    case QuantileMethod::kInterpolatedInvertedCdf:
      v = hyndman_fan(0, 1);
      break;
    case QuantileMethod::kHazen:
      v = hyndman_fan(0.5, 0.5);
      break;
    case QuantileMethod::kWeibull:
      v = hyndman_fan(0, 0);
      break;
    case QuantileMethod::kMedianUnbiased:
      v = hyndman_fan(1 / 3.0, 1 / 3.0);
      break;
    case QuantileMethod::kNormalUnbiased:
      v = hyndman_fan(3 / 8.0, 3 / 8.0);
      break;
    default:
      break;
  }
  // _get_indexes: past the ends both neighbours are the end element, held
  // as numpy holds them (-1 for the last), which is what gamma is taken from.
  double lo = std::floor(v);
  Position p;
  p.lo = static_cast<Index>(lo);
  p.hi = p.lo + 1;
  if (v >= dn - 1) {
    lo = -1;
    p.lo = p.hi = n - 1;
  }
  if (v < 0) {
    lo = 0;
    p.lo = p.hi = 0;
  }
  p.gamma = v - lo;
  if (m == QuantileMethod::kMidpoint) p.gamma = std::fmod(v, 1.0) == 0 ? 0.0 : 0.5;
  if (m == QuantileMethod::kAveragedInvertedCdf) p.gamma = p.gamma == 0 ? 0.5 : 1.0;
  return p;
}

template <typename T>
bool IsNan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// numpy's _lerp: the difference in x's dtype, the rest in float64.
template <typename T>
double Lerp(T a, T b, double t) {
  const double diff = static_cast<double>(static_cast<T>(b - a));
  if (t >= 0.5) return static_cast<double>(b) - diff * (1 - t);
  return static_cast<double>(a) + diff * t;
}

// numpy's median of a sorted slice: the mean of its middle one or two
// values, in x's dtype for floats and in float64 for integers.
template <typename T>
auto MiddleMean(const T* v, Index n) {
  if constexpr (std::is_floating_point_v<T>) {
    if (n % 2 == 1) return v[n / 2];
    return static_cast<T>((v[n / 2 - 1] + v[n / 2]) / T{2});
  } else {
    if (n % 2 == 1) return static_cast<double>(v[n / 2]);
    return (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2;
  }
}

struct Reduction {
  bool median = false;    // else the quantiles q (possibly none)
  std::vector<double> q;
  QuantileMethod method = QuantileMethod::kLinear;
  bool skipna = false;
  std::vector<bool> reduced;  // per axis of x
};

// One output block from one input block that is whole along the reduced
// axes: every position on the other axes gathers its slice into `line`,
// sorts it (NaN last) and reads its quantiles off it.
template <typename T, typename Out>
void ReduceBlock(const Reduction& red, const ConstArrayView& in, T* line, Out* out) {
  const int rank = in.rank();
  std::vector<int> kept, cut;
  for (int d = 0; d < rank; ++d) (red.reduced[d] ? cut : kept).push_back(d);
  Index kept_count = 1, line_size = 1;
  for (int d : kept) kept_count *= in.shape()[d];
  for (int d : cut) line_size *= in.shape()[d];
  const std::byte* base = static_cast<const std::byte*>(in.data());
  const size_t nq = red.median ? 1 : red.q.size();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Shape at(rank, 0);
  for (Index k = 0; k < kept_count; ++k) {
    // Gather the slice at `at` (its kept coordinates) in C order.
    int64_t offset = 0;
    for (int d : kept) offset += at[d] * in.byte_strides()[d];
    Shape r(rank, 0);
    Index n = 0;
    bool has_nan = false;
    for (Index i = 0; i < line_size; ++i) {
      int64_t o = offset;
      for (int d : cut) o += r[d] * in.byte_strides()[d];
      const T v = *reinterpret_cast<const T*>(base + o);
      if (IsNan(v)) {
        has_nan = true;
        if (!red.skipna) line[n++] = v;
      } else {
        line[n++] = v;
      }
      for (int j = static_cast<int>(cut.size()) - 1; j >= 0; --j) {
        if (++r[cut[j]] < in.shape()[cut[j]]) break;
        r[cut[j]] = 0;
      }
    }
    const bool undefined = n == 0 || (has_nan && !red.skipna);
    if (!undefined) {
      std::sort(line, line + n, [](T a, T b) { return a < b; });
    }
    for (size_t j = 0; j < nq; ++j) {
      Out& o = out[j * kept_count + k];
      if (undefined) {
        if constexpr (std::is_floating_point_v<Out>) {
          o = static_cast<Out>(nan);
        } else {
          o = Out{};  // unreachable: integer outputs hold no NaN and n > 0
        }
      } else if (red.median) {
        o = static_cast<Out>(MiddleMean(line, n));
      } else {
        const Position p = PositionOf(red.method, n, red.q[j]);
        if (Picks(red.method)) {
          o = static_cast<Out>(line[p.lo]);
        } else {
          o = static_cast<Out>(Lerp(line[p.lo], line[p.hi], p.gamma));
        }
      }
    }
    for (int j = static_cast<int>(kept.size()) - 1; j >= 0; --j) {
      if (++at[kept[j]] < in.shape()[kept[j]]) break;
      at[kept[j]] = 0;
    }
  }
}

Array Reduce(const Array& x_in, Reduction red, std::optional<std::vector<int>> axes_in,
             bool keepdims, bool q_is_scalar, const char* op) {
  if (!x_in.ok()) return x_in;
  auto invalid = [&](std::string message) {
    return Array::FromStatus(InvalidArgumentError(fmt::format("{}: {}", op, message)));
  };
  if (x_in.dtype().is_bool() || x_in.dtype().is_complex() ||
      !(x_in.dtype().is_numeric() || x_in.dtype().is_float16())) {
    return invalid(fmt::format("{} has no quantiles here (real numbers only)",
                               x_in.dtype().name()));
  }
  const Array x = x_in.dtype().is_float16() ? astype(x_in, DTypeId::kFloat32) : x_in;
  if (!x.ok()) return x;
  for (double q : red.q) {
    if (!(q >= 0 && q <= 1)) return invalid(fmt::format("q must be in [0, 1], got {}", q));
  }
  std::vector<int> axes;
  if (axes_in) {
    for (size_t i = 0; i < axes_in->size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        Result<int> a = internal_api::NormalizeAxis((*axes_in)[i], x.ndim(), op);
        Result<int> b = internal_api::NormalizeAxis((*axes_in)[j], x.ndim(), op);
        if (a.ok() && b.ok() && *a == *b) return invalid(fmt::format("axis {} repeats", *a));
      }
    }
    Result<std::vector<int>> normalized =
        internal_api::NormalizeAxes(*axes_in, x.ndim(), op, /*empty_means_all=*/false);
    if (!normalized.ok()) return Array::FromStatus(normalized.status());
    axes = *normalized;
  } else {
    for (int d = 0; d < x.ndim(); ++d) axes.push_back(d);
  }
  red.reduced.assign(x.ndim(), false);
  Index line_size = 1;
  for (int a : axes) {
    red.reduced[a] = true;
    line_size *= x.shape()[a];
  }
  const bool is_median = red.median;
  if (!is_median && line_size == 0) return invalid("the slices along the axes are empty");
  const DType in_dtype = x.dtype();
  DType out_dtype = in_dtype;
  // numpy 2 (NEP 50): an interpolating method keeps a float x's dtype when q
  // is a scalar (a "weak" Python float); q as an array is float64 and
  // promotes the result to it, as integer inputs always are.
  const bool keeps = in_dtype.is_float() && (is_median || q_is_scalar);
  if (!keeps && (is_median || !Picks(red.method))) out_dtype = DTypeId::kFloat64;
  const size_t nq = is_median || q_is_scalar ? 1 : red.q.size();
  const int64_t item = in_dtype.size();
  // Per element a task holds its input block and, at worst, a copy in the
  // slice buffer; the output is nq values per slice.
  const Index n = std::max<Index>(1, line_size);
  const int64_t per_element =
      2 * item + (static_cast<int64_t>(nq) * out_dtype.size() + n - 1) / n;
  Result<Array> whole = internal_api::WholeAlongAxes(x, axes, per_element, op);
  if (!whole.ok()) return Array::FromStatus(whole.status());
  const Array& xs = *whole;

  Shape out_shape;
  std::vector<std::vector<Index>> out_sizes;
  if (!is_median && !q_is_scalar) {
    out_shape.push_back(static_cast<Index>(nq));
    out_sizes.push_back({static_cast<Index>(nq)});
  }
  InputMap map;
  for (int d = 0; d < xs.ndim(); ++d) {
    if (red.reduced[d]) {
      map.axes.push_back(AxisMap::Fixed({0}, 1));
      if (keepdims) {
        out_shape.push_back(1);
        out_sizes.push_back({1});
      }
      continue;
    }
    const std::vector<Index> sizes = xs.chunks().AxisChunkSizes(d);
    map.axes.push_back(
        AxisMap::Identity(static_cast<int>(out_shape.size()), static_cast<Index>(sizes.size())));
    out_shape.push_back(xs.shape()[d]);
    out_sizes.push_back(sizes);
  }
  // A 0-extent axis (an empty q, an empty kept axis) has no chunks.
  for (auto& s : out_sizes) {
    if (std::all_of(s.begin(), s.end(), [](Index v) { return v == 0; })) s.clear();
  }
  if (q_is_scalar && red.q.size() != 1) return invalid("a scalar q holds one value");
  Index block_line = 1;
  for (int a : axes) block_line *= xs.shape()[a];
  BlockFunction fn = [red, in_dtype, out_dtype,
                      block_line](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, out_dtype, r.box.shape));
    if (out.num_elements() == 0) return out;
    STRATA_ASSIGN_OR_RETURN(NDArray line,
                            NDArray::Allocate(*r.pool, in_dtype, {std::max<Index>(1, block_line)}));
    const ConstArrayView& in = r.inputs[0][0].view;
    VisitDType(in_dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!kIsComplex<T> && !std::is_same_v<T, bool>) {
        if (out_dtype == in_dtype) {
          ReduceBlock<T, T>(red, in, line.data_as<T>(), out.data_as<T>());
        } else {
          ReduceBlock<T, double>(red, in, line.data_as<T>(), out.data_as<double>());
        }
      }
    });
    return out;
  };
  Array result = MakeBlockwise(op, out_shape, out_dtype, GridFromSizes(out_sizes), {xs}, {map},
                               std::move(fn), std::max<Index>(1, block_line) * item, xs.spec());
  // float16 was computed in float32; what numpy returns in x's dtype (a
  // median, a picked element) goes back to float16, exactly (numpy's mean
  // of two float16 values is also taken in float32).
  if (x_in.dtype().is_float16() && out_dtype == DTypeId::kFloat32) {
    return astype(result, DTypeId::kFloat16);
  }
  return result;
}

}  // namespace

Result<QuantileMethod> ParseQuantileMethod(std::string_view name) {
  std::vector<std::string_view> names;
  for (const MethodName& m : kMethods) {
    if (m.name == name) return m.method;
    names.push_back(m.name);
  }
  return InvalidArgumentError(fmt::format("quantile: '{}' is not a method; use one of {}", name,
                                          fmt::join(names, ", ")));
}

Array quantile(const Array& x, std::vector<double> q, const QuantileOptions& options,
               bool q_is_scalar) {
  const char* op = options.skipna ? "nanquantile" : "quantile";
  Reduction red;
  red.q = std::move(q);
  red.method = options.method;
  red.skipna = options.skipna;
  return Reduce(x, std::move(red), options.axes, options.keepdims, q_is_scalar, op);
}

Array quantile(const Array& x, double q, const QuantileOptions& options) {
  return quantile(x, std::vector<double>{q}, options, /*q_is_scalar=*/true);
}

Array median(const Array& x, std::optional<std::vector<int>> axes, bool keepdims, bool skipna) {
  Reduction red;
  red.median = true;
  red.skipna = skipna;
  return Reduce(x, std::move(red), std::move(axes), keepdims, false,
                skipna ? "nanmedian" : "median");
}

}  // namespace strata
