// Test helpers for reduction_test.cc and groupby_test.cc: random arrays, a
// brute-force reference reduction and a tolerant comparison. Header-only so
// that the kernels' source glob does not pick it up into the library.
#ifndef STRATA_CORE_KERNELS_REDUCTION_TEST_UTIL_H_
#define STRATA_CORE_KERNELS_REDUCTION_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <span>
#include <sstream>
#include <type_traits>
#include <vector>

#include "strata/core/dtype_dispatch.h"
#include "strata/core/kernels/reduction.h"
#include "strata/core/ndarray.h"

namespace strata::reduction_test {

class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), n > 0.
  Index Below(Index n) { return static_cast<Index>(Next() % static_cast<uint64_t>(n)); }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

enum class Values {
  kTies,     // floats: multiples of 0.25 in [-4, 4] (many ties, exact sums)
  kUniform,  // floats: uniform in [-10, 10)
  kProduct,  // floats: from {-1.5, -1, -0.5, 0.5, 1, 2} (products neither 0 nor huge)
};
// Integers are uniform in [-50, 50] (signed) or [0, 100] (unsigned) for every
// flavour: sums and products of a few hundred of them wrap.

inline double RandomReal(SplitMix& rng, Values values) {
  switch (values) {
    case Values::kTies:
      return static_cast<double>(rng.Below(33) - 16) * 0.25;
    case Values::kUniform:
      return rng.Uniform() * 20 - 10;
    case Values::kProduct: {
      static constexpr double kChoices[] = {-1.5, -1, -0.5, 0.5, 1, 2};
      return kChoices[rng.Below(6)];
    }
  }
  return 0;
}

template <typename T>
T RandomValue(SplitMix& rng, Values values) {
  if constexpr (std::is_same_v<T, bool>) {
    return rng.Below(2) == 1;
  } else if constexpr (std::is_integral_v<T>) {
    Index v = rng.Below(101);
    if constexpr (std::is_signed_v<T>) v -= 50;
    return static_cast<T>(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(RandomReal(rng, values));
  } else {
    using F = typename T::value_type;
    const F re = static_cast<F>(RandomReal(rng, values));
    return T(re, static_cast<F>(RandomReal(rng, values)));
  }
}

inline NDArray Alloc(DType dtype, Shape shape) {
  auto a = NDArray::Allocate(*MemoryPool::Default(), dtype, std::move(shape));
  STRATA_CHECK(a.ok()) << a.status().ToString();
  return std::move(a).value();
}

inline NDArray RandomArray(DType dtype, const Shape& shape, SplitMix& rng, Values values) {
  NDArray a = Alloc(dtype, shape);
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = a.data_as<T>();
    for (Index i = 0; i < a.num_elements(); ++i) p[i] = RandomValue<T>(rng, values);
  });
  return a;
}

inline bool IsArg(ReduceOp op) { return op == ReduceOp::kArgmin || op == ReduceOp::kArgmax; }

// Finalizes a state array (shape (..., width)) into a new result array.
inline NDArray Finish(const ReductionKernel& k, const NDArray& state) {
  Shape shape(state.shape().begin(), state.shape().end() - 1);
  NDArray result = Alloc(k.result_dtype(), shape);
  k.Finalize(state.view(), result.view());
  return result;
}

// Partial over the whole of `in` (origin 0), then Finalize.
inline NDArray DirectReduce(const ReductionKernel& k, const ConstArrayView& in,
                            std::span<const int> axes) {
  NDArray state = Alloc(k.state_dtype(), k.StateShape(in.shape(), axes));
  Shape origin(in.rank(), 0);
  k.Partial(in, axes, origin, in.shape(), state.view());
  return Finish(k, state);
}

// A reference result: integers as two's-complement bits, floats as long
// double complex numbers.
struct RefValue {
  uint64_t bits = 0;
  std::complex<long double> f;
};

template <typename T>
std::complex<long double> ToComplex(T x) {
  if constexpr (kIsComplex<T>) {
    return {static_cast<long double>(x.real()), static_cast<long double>(x.imag())};
  } else {
    return {static_cast<long double>(x), 0.0L};
  }
}

template <typename T>
bool RefIsNan(T x) {
  if constexpr (kIsComplex<T>) {
    return std::isnan(x.real()) || std::isnan(x.imag());
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

// The reduction of `v` (in C order; `pos` the positions argmin/argmax report)
// computed the obvious way.
template <typename T>
RefValue ReferenceOf(ReduceOp op, const std::vector<T>& v, const std::vector<Index>& pos,
                     int ddof) {
  constexpr bool kFloat = std::is_floating_point_v<T> || kIsComplex<T>;
  constexpr long double kNan = std::numeric_limits<long double>::quiet_NaN();
  RefValue r;
  const size_t n = v.size();
  auto bits_of = [](T x) -> uint64_t {
    if constexpr (kFloat) {
      return 0;
    } else if constexpr (std::is_signed_v<T>) {
      return static_cast<uint64_t>(static_cast<int64_t>(x));
    } else {
      return static_cast<uint64_t>(x);
    }
  };
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kProd: {
      const bool sum = op == ReduceOp::kSum;
      if constexpr (kFloat) {
        std::complex<long double> acc(sum ? 0 : 1);
        for (T x : v) {
          const auto c = ToComplex(x);
          acc = sum ? acc + c
                    : std::complex<long double>(acc.real() * c.real() - acc.imag() * c.imag(),
                                                acc.real() * c.imag() + acc.imag() * c.real());
        }
        r.f = acc;
      } else {
        uint64_t acc = sum ? 0 : 1;
        for (T x : v) acc = sum ? acc + bits_of(x) : acc * bits_of(x);
        r.bits = acc;
      }
      break;
    }
    case ReduceOp::kMin:
    case ReduceOp::kMax: {
      if constexpr (!kIsComplex<T>) {
        const bool is_max = op == ReduceOp::kMax;
        if (n == 0) {
          if constexpr (kFloat) {
            r.f = kNan;
          } else if constexpr (std::is_same_v<T, bool>) {
            r.bits = is_max ? 0 : 1;
          } else {
            r.bits =
                bits_of(is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
          }
          break;
        }
        T best = v[0];
        for (T x : v) {
          if (RefIsNan(best)) break;
          if (RefIsNan(x) || (is_max ? x > best : x < best)) best = x;
        }
        if constexpr (kFloat) {
          r.f = static_cast<long double>(best);
        } else {
          r.bits = bits_of(best);
        }
      }
      break;
    }
    case ReduceOp::kMean: {
      std::complex<long double> s = 0;
      for (T x : v) s += ToComplex(x);
      r.f = n == 0 ? std::complex<long double>(kNan, kNan) : s / static_cast<long double>(n);
      if (n == 0 && !kIsComplex<T>) r.f = kNan;
      break;
    }
    case ReduceOp::kVar:
    case ReduceOp::kStd: {
      long double s = 0, q = 0;
      for (T x : v) s += ToComplex(x).real();
      const long double mean = s / static_cast<long double>(n);
      for (T x : v) q += (ToComplex(x).real() - mean) * (ToComplex(x).real() - mean);
      const long double denom = static_cast<long double>(n) - ddof;
      long double var = n > 0 && denom > 0 ? q / denom : kNan;
      r.f = op == ReduceOp::kStd ? std::sqrt(var) : var;
      break;
    }
    case ReduceOp::kAll:
    case ReduceOp::kAny: {
      bool all = true, any = false;
      for (T x : v) {
        const bool nz = ToComplex(x) != std::complex<long double>(0);
        all = all && nz;
        any = any || nz;
      }
      r.bits = op == ReduceOp::kAll ? all : any;
      break;
    }
    case ReduceOp::kArgmin:
    case ReduceOp::kArgmax: {
      if constexpr (!kIsComplex<T>) {
        const bool is_max = op == ReduceOp::kArgmax;
        size_t best = 0;
        for (size_t i = 0; i < n; ++i) {
          if (RefIsNan(v[best])) break;
          if (RefIsNan(v[i]) || (is_max ? v[i] > v[best] : v[i] < v[best])) best = i;
        }
        r.bits = static_cast<uint64_t>(pos[best]);
      }
      break;
    }
    case ReduceOp::kCountNonzero:
      for (T x : v) r.bits += ToComplex(x) != std::complex<long double>(0);
      break;
    case ReduceOp::kCount:
      for (T x : v) r.bits += !RefIsNan(x);
      break;
    default:
      // The NaN-skipping and first/last reductions are checked against
      // references of their own (nan_reductions_test, groupby_test).
      ADD_FAILURE() << "ReferenceOf has no reference for ReduceOp " << static_cast<int>(op);
      break;
  }
  return r;
}

// Stores a reference value as element `i` of `out` (of any result dtype).
inline void SetRef(NDArray& out, Index i, const RefValue& r) {
  VisitDType(out.dtype(), [&](auto tag) {
    using R = typename decltype(tag)::type;
    R* p = out.data_as<R>();
    if constexpr (std::is_same_v<R, bool>) {
      p[i] = r.bits != 0;
    } else if constexpr (std::is_integral_v<R>) {
      p[i] = static_cast<R>(r.bits);
    } else if constexpr (std::is_floating_point_v<R>) {
      p[i] = static_cast<R>(r.f.real());
    } else {
      using F = typename R::value_type;
      p[i] = R(static_cast<F>(r.f.real()), static_cast<F>(r.f.imag()));
    }
  });
}

// The reduction of contiguous `a` over `axes` (result shape: reduced axes 1).
inline NDArray ReferenceReduce(ReduceOp op, const NDArray& a, std::span<const int> axes, int ddof,
                               DType result_dtype) {
  Shape out_shape = a.shape();
  for (int ax : axes) out_shape[ax] = 1;
  NDArray out = Alloc(result_dtype, out_shape);
  VisitDType(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Index out_n = NumElements(out_shape);
    std::vector<std::vector<T>> vals(out_n);
    std::vector<std::vector<Index>> poss(out_n);
    const bool flat = static_cast<int>(axes.size()) == a.rank();
    // Element strides of the output, 0 along reduced axes.
    Shape out_strides(a.rank(), 0);
    Index stride = 1;
    for (int i = a.rank() - 1; i >= 0; --i) {
      out_strides[i] = stride;
      stride *= out_shape[i];
    }
    for (int ax : axes) out_strides[ax] = 0;
    if (a.num_elements() > 0) {
      Shape idx(a.rank(), 0);
      Index i = 0;
      do {
        Index o = 0;
        for (int d = 0; d < a.rank(); ++d) o += idx[d] * out_strides[d];
        vals[o].push_back(a.data_as<T>()[i]);
        poss[o].push_back(flat ? i : (axes.size() == 1 ? idx[axes[0]] : -1));
        ++i;
      } while (NextIndex(idx, a.shape()));
    }
    for (Index o = 0; o < out_n; ++o) SetRef(out, o, ReferenceOf(op, vals[o], poss[o], ddof));
  });
  return out;
}

// Equal dtypes and shapes, integers and bools equal, floats within `tol`
// relative to max(1, |expected|) (NaN matches NaN).
inline ::testing::AssertionResult Near(const NDArray& actual, const NDArray& expected, double tol) {
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure()
           << "got " << actual.dtype().name() << ShapeToString(actual.shape()) << ", expected "
           << expected.dtype().name() << ShapeToString(expected.shape());
  }
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  VisitDType(actual.dtype(), [&](auto tag) {
    using R = typename decltype(tag)::type;
    auto close = [tol](auto a, auto e) {
      if (std::isnan(a) && std::isnan(e)) return true;
      if (a == e) return true;
      return std::abs(static_cast<double>(a) - static_cast<double>(e)) <=
             tol * std::max(1.0, std::abs(static_cast<double>(e)));
    };
    for (Index i = 0; i < actual.num_elements(); ++i) {
      const R a = actual.data_as<R>()[i];
      const R e = expected.data_as<R>()[i];
      bool ok;
      if constexpr (kIsComplex<R>) {
        ok = close(a.real(), e.real()) && close(a.imag(), e.imag());
      } else if constexpr (std::is_floating_point_v<R>) {
        ok = close(a, e);
      } else {
        ok = a == e;
      }
      if (!ok) {
        std::ostringstream os;
        if constexpr (std::is_integral_v<R>) {
          os << "element " << i << ": got " << +a << ", expected " << +e;
        } else {
          os << "element " << i << ": got " << a << ", expected " << e;
        }
        result = ::testing::AssertionFailure() << os.str();
        return;
      }
    }
  });
  return result;
}

}  // namespace strata::reduction_test

#endif  // STRATA_CORE_KERNELS_REDUCTION_TEST_UTIL_H_
