// Private building blocks of the elementwise kernels (elementwise*.cc and
// linalg.cc): the strided loop driver that walks any number of views of one
// shape as a sequence of one-dimensional runs, value conversions with numpy's
// unsafe-cast semantics (made defined where C++ leaves them undefined), and the
// per-run loops that GCC vectorises at -O2.
//
// Why the loops look as they do: at -O2 GCC 12 vectorises only when the
// vector code replaces the scalar loop entirely ("very-cheap" cost model), so a
// loop with an unknown trip count stays scalar. The contiguous loops below run
// an inner loop of a constant kVectorBlock iterations over __restrict pointers,
// which GCC vectorises, followed by a scalar tail.
//
// Thread-safety: pure functions.
#ifndef STRATA_CORE_KERNELS_ELEMENTWISE_INTERNAL_H_
#define STRATA_CORE_KERNELS_ELEMENTWISE_INTERNAL_H_

#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <utility>

#include "strata/core/box.h"
#include "strata/core/dtype.h"
#include "strata/core/dtype_dispatch.h"
#include "strata/core/ndarray.h"

namespace strata::internal_kernels {

// A non-owning reference to a callable (absl::FunctionRef): the loop driver is
// compiled once instead of once per kernel lambda. The callable must outlive
// the call it is passed to.
template <typename Sig>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F,
            typename = std::enable_if_t<!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
                                        std::is_invocable_r_v<R, F&, Args...>>>
  FunctionRef(F&& f)  // NOLINT: implicit like absl::FunctionRef
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

// ---------------------------------------------------------------------------
// Type categories and element access.

template <typename T>
inline constexpr bool kIsBool = std::is_same_v<T, bool>;
template <typename T>
inline constexpr bool kIsInt = std::is_integral_v<T> && !kIsBool<T>;
template <typename T>
inline constexpr bool kIsSignedInt = kIsInt<T>&& std::is_signed_v<T>;
template <typename T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T>;

// The real type of a complex type; T itself otherwise.
template <typename T>
struct RealOf {
  using type = T;
};
template <typename T>
struct RealOf<std::complex<T>> {
  using type = T;
};
template <typename T>
using RealOfT = typename RealOf<T>::type;

// Elements of views may sit at any byte address (a view into a decoded
// buffer); memcpy compiles to a plain load or store.
template <typename T>
inline T Load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
inline void Store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}
template <typename T>
inline bool IsAligned(const std::byte* p) {
  return reinterpret_cast<uintptr_t>(p) % alignof(T) == 0;
}

// Integer arithmetic that wraps like numpy's: computed in an unsigned type at
// least as wide as `unsigned` (so that uint16 * uint16 does not overflow int).
template <typename T>
using WrapT = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
inline T WrapAdd(T x, T y) {
  return static_cast<T>(static_cast<WrapT<T>>(x) + static_cast<WrapT<T>>(y));
}
template <typename T>
inline T WrapSub(T x, T y) {
  return static_cast<T>(static_cast<WrapT<T>>(x) - static_cast<WrapT<T>>(y));
}
template <typename T>
inline T WrapMul(T x, T y) {
  return static_cast<T>(static_cast<WrapT<T>>(x) * static_cast<WrapT<T>>(y));
}
template <typename T>
inline T WrapNeg(T x) {
  return static_cast<T>(WrapT<T>{0} - static_cast<WrapT<T>>(x));
}

// ---------------------------------------------------------------------------
// Value conversion (numpy astype, casting="unsafe").

// Float to integer: truncation toward zero; NaN, infinities and values outside
// the target's range give 0 (C++ leaves them undefined, numpy gives
// platform-dependent garbage).
template <typename I, typename F>
inline I FloatToInt(F x) {
  constexpr int kBits = std::numeric_limits<I>::digits + (std::is_signed_v<I> ? 1 : 0);
  // Exact powers of two: 2^(bits-1) for signed, 2^bits for unsigned.
  constexpr F kHalfRange = static_cast<F>(uint64_t{1} << (kBits - 1));
  if constexpr (std::is_signed_v<I>) {
    // Values in (min - 1, min] truncate to min. Where F cannot tell min - 1
    // from min (int64 from double), no F value lies strictly between them.
    constexpr F kMin = -kHalfRange;
    constexpr F kBelowMin = kMin - 1;
    const bool above = kBelowMin == kMin ? x >= kMin : x > kBelowMin;
    return (above && x < kHalfRange) ? static_cast<I>(x) : I{0};
  } else {
    return (x > F{-1} && x < kHalfRange * 2) ? static_cast<I>(x) : I{0};
  }
}

template <typename To, typename From>
inline To ConvertValue(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (kIsBool<To>) {
    if constexpr (kIsComplex<From>) {
      return x.real() != 0 || x.imag() != 0;
    } else {
      return x != From{0};
    }
  } else if constexpr (kIsComplex<To>) {
    using R = typename To::value_type;
    if constexpr (kIsComplex<From>) {
      return To(static_cast<R>(x.real()), static_cast<R>(x.imag()));
    } else {
      return To(static_cast<R>(x), R{0});
    }
  } else if constexpr (kIsComplex<From>) {
    return ConvertValue<To>(x.real());  // drops the imaginary part, as numpy does
  } else if constexpr (kIsFloat<From> && std::is_integral_v<To>) {
    return FloatToInt<To>(x);
  } else {
    // int -> int is modular in C++20; int/bool -> float rounds to nearest;
    // float64 -> float32 rounds, overflowing to +-inf (IEEE).
    return static_cast<To>(x);
  }
}

// Converts `n` elements of dtype `from` at `src` (stepping `src_stride` bytes)
// into dtype `to` at `dst` (stepping `dst_stride` bytes).
using ConvertRunFn = void (*)(const std::byte* src, Index src_stride, std::byte* dst,
                              Index dst_stride, Index n);
ConvertRunFn GetConvertRun(DType from, DType to);

// ---------------------------------------------------------------------------
// The loop driver.

inline constexpr int kMaxInputs = 3;

// Elements per conversion block: inputs whose dtype differs from the compute
// dtype are converted this many at a time into a stack buffer, so memory
// stays O(1) beyond the output.
inline constexpr Index kConvertBlock = 1024;

// One run: input i starts at in[i] and steps in_strides[i] bytes (already in
// its compute dtype); the output starts at `out` and steps `out_stride`.
using RunFn = FunctionRef<void(const std::byte* const* in, const Index* in_strides, std::byte* out,
                               Index out_stride, Index n)>;

// Calls `fn` for runs covering every element of `out`. Inputs of another
// shape are broadcast to out's shape (CHECK-fails if they cannot be); an input
// whose dtype is not compute[i] is converted block by block. Axes are
// reordered and merged so that runs are as long as possible and the output is
// walked forwards along its smallest stride. An input may alias the output
// exactly (same data and strides); partial overlap is not allowed.
void ForEachRun(std::span<const ConstArrayView* const> inputs, std::span<const DType> compute,
                const ArrayView& out, RunFn fn);

// ---------------------------------------------------------------------------
// Per-run loops. `f` maps input values to an output value; the output type is
// whatever f returns. The dense loops take their pointers as __restrict
// parameters (GCC ignores restrict on pointers loaded from memory) and run a
// 0-based inner loop of constant length, the shape GCC -O2 vectorises.

inline constexpr Index kVectorBlock = 16;

template <typename R, typename T, typename F>
void DenseUnary(const T* __restrict x, R* __restrict o, Index n, F f) {
  Index i = 0;
  for (; i + kVectorBlock <= n; i += kVectorBlock) {
    for (Index j = 0; j < kVectorBlock; ++j) o[i + j] = f(x[i + j]);
  }
  for (; i < n; ++i) o[i] = f(x[i]);
}

template <typename R, typename T, typename F>
void DenseBinary(const T* __restrict x, const T* __restrict y, R* __restrict o, Index n, F f) {
  Index i = 0;
  for (; i + kVectorBlock <= n; i += kVectorBlock) {
    for (Index j = 0; j < kVectorBlock; ++j) o[i + j] = f(x[i + j], y[i + j]);
  }
  for (; i < n; ++i) o[i] = f(x[i], y[i]);
}

// f(x, y[i]) with a broadcast left operand; f(y[i], x) when kSwapped.
template <bool kSwapped, typename R, typename T, typename F>
void ScalarBinary(T x, const T* __restrict y, R* __restrict o, Index n, F f) {
  auto g = [&](T v) { return kSwapped ? f(v, x) : f(x, v); };
  Index i = 0;
  for (; i + kVectorBlock <= n; i += kVectorBlock) {
    for (Index j = 0; j < kVectorBlock; ++j) o[i + j] = g(y[i + j]);
  }
  for (; i < n; ++i) o[i] = g(y[i]);
}

template <typename R, typename T0, typename T1, typename T2, typename F>
void DenseTernary(const T0* __restrict x, const T1* __restrict y, const T2* __restrict z,
                  R* __restrict o, Index n, F f) {
  Index i = 0;
  for (; i + kVectorBlock <= n; i += kVectorBlock) {
    for (Index j = 0; j < kVectorBlock; ++j) o[i + j] = f(x[i + j], y[i + j], z[i + j]);
  }
  for (; i < n; ++i) o[i] = f(x[i], y[i], z[i]);
}

template <typename T, typename F>
inline void MapUnary(const std::byte* in, Index in_stride, std::byte* out, Index out_stride,
                     Index n, F f) {
  using R = decltype(f(std::declval<T>()));
  if (out_stride == Index{sizeof(R)} && IsAligned<R>(out)) {
    R* o = reinterpret_cast<R*>(out);
    if (in_stride == Index{sizeof(T)} && IsAligned<T>(in)) {
      return DenseUnary(reinterpret_cast<const T*>(in), o, n, f);
    }
    if (in_stride == 0) {
      const R v = f(Load<T>(in));
      for (Index i = 0; i < n; ++i) o[i] = v;
      return;
    }
  }
  for (Index i = 0; i < n; ++i) Store<R>(out + i * out_stride, f(Load<T>(in + i * in_stride)));
}

template <typename T, typename F>
inline void MapBinary(const std::byte* a, Index a_stride, const std::byte* b, Index b_stride,
                      std::byte* out, Index out_stride, Index n, F f) {
  using R = decltype(f(std::declval<T>(), std::declval<T>()));
  constexpr Index kT = sizeof(T);
  if (out_stride == Index{sizeof(R)} && IsAligned<R>(out)) {
    R* o = reinterpret_cast<R*>(out);
    const bool a_dense = a_stride == kT && IsAligned<T>(a);
    const bool b_dense = b_stride == kT && IsAligned<T>(b);
    if (a_dense && b_dense) {
      return DenseBinary(reinterpret_cast<const T*>(a), reinterpret_cast<const T*>(b), o, n, f);
    }
    if (a_stride == 0 && b_dense) {
      return ScalarBinary<false>(Load<T>(a), reinterpret_cast<const T*>(b), o, n, f);
    }
    if (b_stride == 0 && a_dense) {
      return ScalarBinary<true>(Load<T>(b), reinterpret_cast<const T*>(a), o, n, f);
    }
  }
  for (Index i = 0; i < n; ++i) {
    Store<R>(out + i * out_stride, f(Load<T>(a + i * a_stride), Load<T>(b + i * b_stride)));
  }
}

template <typename T0, typename T1, typename T2, typename F>
inline void MapTernary(const std::byte* const* in, const Index* in_strides, std::byte* out,
                       Index out_stride, Index n, F f) {
  using R = decltype(f(std::declval<T0>(), std::declval<T1>(), std::declval<T2>()));
  if (out_stride == Index{sizeof(R)} && IsAligned<R>(out) && in_strides[0] == Index{sizeof(T0)} &&
      in_strides[1] == Index{sizeof(T1)} && in_strides[2] == Index{sizeof(T2)} &&
      IsAligned<T0>(in[0]) && IsAligned<T1>(in[1]) && IsAligned<T2>(in[2])) {
    return DenseTernary(reinterpret_cast<const T0*>(in[0]), reinterpret_cast<const T1*>(in[1]),
                        reinterpret_cast<const T2*>(in[2]), reinterpret_cast<R*>(out), n, f);
  }
  for (Index i = 0; i < n; ++i) {
    Store<R>(out + i * out_stride,
             f(Load<T0>(in[0] + i * in_strides[0]), Load<T1>(in[1] + i * in_strides[1]),
               Load<T2>(in[2] + i * in_strides[2])));
  }
}

}  // namespace strata::internal_kernels

#endif  // STRATA_CORE_KERNELS_ELEMENTWISE_INTERNAL_H_
