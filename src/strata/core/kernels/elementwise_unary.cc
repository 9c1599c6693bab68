// ApplyUnary: one kernel per compute dtype, with the switch over the op
// outside the per-run loop.
#include <cmath>
#include <complex>
#include <numbers>

#include "strata/core/dtype_dispatch.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/core/kernels/elementwise_internal.h"

namespace strata {
namespace {

using namespace internal_kernels;  // NOLINT: this file is the kernels' implementation

// numpy's complex expm1: accurate for small |z|, unlike exp(z) - 1. On the
// real axis it is the real expm1 (numpy gives inf+nanj for inf+0j).
template <typename R>
std::complex<R> Expm1(std::complex<R> z) {
  if (z.imag() == 0) return {std::expm1(z.real()), z.imag()};
  const R s = std::sin(z.imag() / 2);
  return {std::expm1(z.real()) * std::cos(z.imag()) - 2 * s * s,
          std::exp(z.real()) * std::sin(z.imag())};
}

// numpy's complex log1p.
template <typename R>
std::complex<R> Log1p(std::complex<R> z) {
  const R x = z.real() + 1;
  return {std::log(std::hypot(x, z.imag())), std::atan2(z.imag(), x)};
}

template <typename R>
std::complex<R> Log2(std::complex<R> z) {
  return std::log(z) * std::numbers::log2e_v<R>;
}

template <typename T>
T Sign(T x) {
  if constexpr (kIsComplex<T>) {
    // The Array API's z / |z| (numpy >= 2.0); NaN in, NaN out.
    if (x == T(0)) return T(0);
    return x / std::abs(x);
  } else if constexpr (kIsFloat<T>) {
    return x > 0 ? T(1) : (x < 0 ? T(-1) : (x == 0 ? T(0) : x));
  } else if constexpr (kIsSignedInt<T>) {
    return static_cast<T>((x > 0) - (x < 0));
  } else {
    return static_cast<T>(x > 0);
  }
}

template <typename T>
bool IsNan(T x) {
  if constexpr (kIsComplex<T>) {
    return std::isnan(x.real()) || std::isnan(x.imag());
  } else if constexpr (kIsFloat<T>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

template <typename T>
bool IsInf(T x) {
  if constexpr (kIsComplex<T>) {
    return std::isinf(x.real()) || std::isinf(x.imag());
  } else if constexpr (kIsFloat<T>) {
    return std::isinf(x);
  } else {
    return false;
  }
}

template <typename T>
bool IsFinite(T x) {
  if constexpr (kIsComplex<T>) {
    return std::isfinite(x.real()) && std::isfinite(x.imag());
  } else if constexpr (kIsFloat<T>) {
    return std::isfinite(x);
  } else {
    return true;
  }
}

// The kernel for one run of compute dtype T. Op/dtype pairs that
// UnaryResultType rejects never get here.
template <typename T>
void UnaryRun(UnaryOp op, const std::byte* in, Index is, std::byte* out, Index os, Index n) {
  auto map = [&](auto f) { MapUnary<T>(in, is, out, os, n, f); };
  constexpr bool kFloating = kIsFloat<T> || kIsComplex<T>;
  switch (op) {
    case UnaryOp::kAbs:
      if constexpr (kIsComplex<T>) return map([](T x) { return std::abs(x); });
      if constexpr (kIsFloat<T>) return map([](T x) { return std::fabs(x); });
      if constexpr (kIsSignedInt<T>) return map([](T x) { return x < 0 ? WrapNeg(x) : x; });
      return map([](T x) { return x; });
    case UnaryOp::kNegative:
      if constexpr (kIsInt<T>) return map([](T x) { return WrapNeg(x); });
      if constexpr (kFloating) return map([](T x) { return -x; });
      break;
    case UnaryOp::kPositive:
      return map([](T x) { return x; });
    case UnaryOp::kSquare:
      if constexpr (kIsInt<T>) return map([](T x) { return WrapMul(x, x); });
      if constexpr (kFloating) return map([](T x) { return x * x; });
      break;
#define STRATA_MATH_CASE(op, fn)                                    \
  case UnaryOp::op:                                                 \
    if constexpr (kFloating) return map([](T x) { return fn(x); }); \
    break;
      STRATA_MATH_CASE(kSqrt, std::sqrt)
      STRATA_MATH_CASE(kExp, std::exp)
      STRATA_MATH_CASE(kLog, std::log)
      STRATA_MATH_CASE(kLog10, std::log10)
      STRATA_MATH_CASE(kSin, std::sin)
      STRATA_MATH_CASE(kCos, std::cos)
      STRATA_MATH_CASE(kTan, std::tan)
      STRATA_MATH_CASE(kArcsin, std::asin)
      STRATA_MATH_CASE(kArccos, std::acos)
      STRATA_MATH_CASE(kArctan, std::atan)
      STRATA_MATH_CASE(kSinh, std::sinh)
      STRATA_MATH_CASE(kCosh, std::cosh)
      STRATA_MATH_CASE(kTanh, std::tanh)
      STRATA_MATH_CASE(kArccosh, std::acosh)
      STRATA_MATH_CASE(kArcsinh, std::asinh)
      STRATA_MATH_CASE(kArctanh, std::atanh)
#undef STRATA_MATH_CASE
    case UnaryOp::kReciprocal:
      if constexpr (kFloating) return map([](T x) { return T(1) / x; });
      break;
    case UnaryOp::kSignbit:
      if constexpr (kIsFloat<T>) return map([](T x) { return static_cast<bool>(std::signbit(x)); });
      if constexpr (kIsSignedInt<T>) return map([](T x) { return x < 0; });
      if constexpr (!kIsComplex<T>) return map([](T) { return false; });
      break;
    case UnaryOp::kExpm1:
      if constexpr (kIsComplex<T>) return map([](T x) { return Expm1(x); });
      if constexpr (kIsFloat<T>) return map([](T x) { return std::expm1(x); });
      break;
    case UnaryOp::kLog1p:
      if constexpr (kIsComplex<T>) return map([](T x) { return Log1p(x); });
      if constexpr (kIsFloat<T>) return map([](T x) { return std::log1p(x); });
      break;
    case UnaryOp::kLog2:
      if constexpr (kIsComplex<T>) return map([](T x) { return Log2(x); });
      if constexpr (kIsFloat<T>) return map([](T x) { return std::log2(x); });
      break;
    case UnaryOp::kFloor:
      if constexpr (kIsFloat<T>) return map([](T x) { return std::floor(x); });
      if constexpr (!kIsComplex<T>) return map([](T x) { return x; });
      break;
    case UnaryOp::kCeil:
      if constexpr (kIsFloat<T>) return map([](T x) { return std::ceil(x); });
      if constexpr (!kIsComplex<T>) return map([](T x) { return x; });
      break;
    case UnaryOp::kRound:
      // Half to even in the default rounding mode, as np.round.
      if constexpr (kIsFloat<T>) return map([](T x) { return std::nearbyint(x); });
      if constexpr (!kIsComplex<T>) return map([](T x) { return x; });
      break;
    case UnaryOp::kTrunc:
      if constexpr (kIsFloat<T>) return map([](T x) { return std::trunc(x); });
      if constexpr (!kIsComplex<T>) return map([](T x) { return x; });
      break;
    case UnaryOp::kSign:
      if constexpr (!kIsBool<T>) return map([](T x) { return Sign(x); });
      break;
    case UnaryOp::kIsnan:
      return map([](T x) { return IsNan(x); });
    case UnaryOp::kIsinf:
      return map([](T x) { return IsInf(x); });
    case UnaryOp::kIsfinite:
      return map([](T x) { return IsFinite(x); });
    case UnaryOp::kLogicalNot:
      return map([](T x) { return x == T(0); });
    case UnaryOp::kBitwiseInvert:
      if constexpr (kIsBool<T>) return map([](T x) { return !x; });
      if constexpr (kIsInt<T>) return map([](T x) { return static_cast<T>(~x); });
      break;
    case UnaryOp::kReal:
      if constexpr (kIsComplex<T>) return map([](T x) { return x.real(); });
      return map([](T x) { return x; });
    case UnaryOp::kImag:
      if constexpr (kIsComplex<T>) return map([](T x) { return x.imag(); });
      return map([](T) { return T(0); });
    case UnaryOp::kConj:
      if constexpr (kIsComplex<T>) return map([](T x) { return std::conj(x); });
      return map([](T x) { return x; });
  }
  STRATA_CHECK(false) << UnaryOpName(op) << " reached the kernel for " << DTypeOf<T>().name();
}

// Ops that return their input unchanged for dtype `t` (a plain copy).
bool IsIdentity(UnaryOp op, DType t) {
  switch (op) {
    case UnaryOp::kPositive:
      return true;
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRound:
    case UnaryOp::kTrunc:
      return t.is_bool() || t.is_integer();
    case UnaryOp::kAbs:
      return t.is_bool() || t.is_unsigned_integer();
    case UnaryOp::kReal:
    case UnaryOp::kConj:
      return !t.is_complex();
    default:
      return false;
  }
}

}  // namespace

Status ApplyUnary(UnaryOp op, const ConstArrayView& in, const ArrayView& out) {
  STRATA_ASSIGN_OR_RETURN(DType result, UnaryResultType(op, in.dtype()));
  STRATA_CHECK(out.dtype() == result) << UnaryOpName(op) << " of " << in.dtype().name() << " gives "
                                      << result.name() << ", not " << out.dtype().name();
  if (in.dtype() == result && IsIdentity(op, in.dtype())) {
    CopyArray(in.shape() == out.shape() ? in : BroadcastTo(in, out.shape()), out);
    return Status::Ok();
  }
  // Math on bool and integers computes in float64 (the result dtype).
  const bool exact_input = in.dtype().is_bool() || in.dtype().is_integer();
  // float16 computes in float32.
  const DType in_type = in.dtype().is_float16() ? DType(DTypeId::kFloat32) : in.dtype();
  const DType compute = exact_input && result.is_float() ? result : in_type;
  const ConstArrayView* inputs[] = {&in};
  const DType computes[] = {compute};
  VisitDType(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ForEachRun(inputs, computes, out,
               [op](const std::byte* const* p, const Index* s, std::byte* o, Index os, Index n) {
                 UnaryRun<T>(op, p[0], s[0], o, os, n);
               });
  });
  return Status::Ok();
}

}  // namespace strata
