// ApplyBinary: one kernel per compute dtype (13), with the switch over the op
// outside the per-run loop. Inputs of another dtype are converted to the
// compute dtype block by block by the loop driver, so no kernel is
// instantiated per pair of input dtypes.
#include <cmath>
#include <complex>
#include <limits>
#include <numbers>

#include "strata/core/dtype_dispatch.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/core/kernels/elementwise_internal.h"

namespace strata {
namespace {

using namespace internal_kernels;  // NOLINT: this file is the kernels' implementation

// Python's floor division for integers; division by zero gives 0 (numpy,
// without its warning) and INT_MIN // -1 wraps to INT_MIN.
template <typename T>
T FloorDivide(T x, T y) {
  if (y == 0) return T{0};
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return WrapNeg(x);
    T q = static_cast<T>(x / y);
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
    return q;
  } else {
    return static_cast<T>(x / y);
  }
}

// Python's remainder for integers: the sign of the divisor; by zero gives 0.
template <typename T>
T Remainder(T x, T y) {
  if (y == 0) return T{0};
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return T{0};
    T r = static_cast<T>(x % y);
    if (r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
    return r;
  } else {
    return static_cast<T>(x % y);
  }
}

// numpy's npy_floor_divide for floats (via npy_divmod): the quotient is
// snapped to the nearest integer so that x == floor_divide * y + remainder as
// closely as rounding allows; division by zero gives inf or NaN.
template <typename T>
T FloorDivideFloat(T a, T b) {
  if (b == 0) return a / b;
  const T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return std::copysign(T{0}, a / b);
  T floor_div = std::floor(div);
  if (div - floor_div > T{0.5}) floor_div += 1;
  return floor_div;
}

// numpy's npy_remainder for floats: the sign of the divisor.
template <typename T>
T RemainderFloat(T a, T b) {
  T mod = std::fmod(a, b);
  if (b == 0) return mod;  // NaN
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(T{0}, b);
  }
  return mod;
}

// Integer power by repeated squaring, wrapping on overflow. A negative
// exponent gives 0, except for bases 1 and -1 (the truncated value of the
// real result; numpy raises an error instead).
template <typename T>
T IntPow(T base, T exponent) {
  if constexpr (std::is_signed_v<T>) {
    if (exponent < 0) {
      if (base == 1) return T{1};
      if (base == -1) return (exponent & 1) ? T{-1} : T{1};
      return T{0};
    }
  }
  using W = WrapT<T>;
  W result = 1;
  W b = static_cast<W>(base);
  auto e = static_cast<std::make_unsigned_t<T>>(exponent);
  while (e != 0) {
    if (e & 1) result *= b;
    e >>= 1;
    if (e != 0) b *= b;
  }
  return static_cast<T>(result);
}

// numpy's nc_pow: exact special cases for zero and small integer exponents
// (repeated multiplication), std::pow otherwise.
template <typename R>
std::complex<R> ComplexPow(std::complex<R> a, std::complex<R> b) {
  using C = std::complex<R>;
  if (b.real() == 0 && b.imag() == 0) return C(1, 0);
  if (a.real() == 0 && a.imag() == 0) {
    if (b.real() > 0 && b.imag() == 0) return C(0, 0);
    return C(std::numeric_limits<R>::quiet_NaN(), std::numeric_limits<R>::quiet_NaN());
  }
  if (b.imag() == 0 && std::fabs(b.real()) < 100 && b.real() == std::trunc(b.real())) {
    int n = static_cast<int>(b.real());
    if (n == 1) return a;
    if (n == 2) return a * a;
    if (n == 3) return a * a * a;
    if (n < 0) n = -n;
    C result(1, 0);
    C p = a;
    while (true) {
      if (n & 1) result *= p;
      n >>= 1;
      if (n == 0) break;
      p *= p;
    }
    return b.real() < 0 ? C(1, 0) / result : result;
  }
  return std::pow(a, b);
}

// numpy's shifts: a count outside [0, bits) shifts everything out.
template <typename T>
T ShiftLeft(T x, T count) {
  if (static_cast<std::make_unsigned_t<T>>(count) >= sizeof(T) * 8) return T{0};
  return static_cast<T>(static_cast<WrapT<T>>(x) << count);
}

template <typename T>
T ShiftRight(T x, T count) {
  if (static_cast<std::make_unsigned_t<T>>(count) >= sizeof(T) * 8) {
    return x < 0 ? static_cast<T>(-1) : T{0};
  }
  return static_cast<T>(x >> count);  // arithmetic for signed (C++20)
}

// numpy's npy_logaddexp: log(exp(x) + exp(y)) without overflow; equal
// arguments (infinities included) give x + log(2).
template <typename T>
T LogAddExp(T x, T y) {
  if (x == y) return x + std::numbers::ln2_v<T>;
  const T d = x - y;
  if (d > 0) return x + std::log1p(std::exp(-d));
  if (d <= 0) return y + std::log1p(std::exp(d));
  return d;  // NaN
}

// The kernel for one run of compute dtype T. Op/dtype pairs that
// BinaryComputeType rejects never get here.
template <typename T>
void BinaryRun(BinaryOp op, const std::byte* a, Index sa, const std::byte* b, Index sb,
               std::byte* out, Index so, Index n) {
  auto map = [&](auto f) { MapBinary<T>(a, sa, b, sb, out, so, n, f); };
  constexpr bool kFloating = kIsFloat<T> || kIsComplex<T>;
  switch (op) {
    case BinaryOp::kAdd:
      if constexpr (kIsBool<T>) return map([](T x, T y) { return x || y; });
      if constexpr (kIsInt<T>) return map([](T x, T y) { return WrapAdd(x, y); });
      if constexpr (kFloating) return map([](T x, T y) { return x + y; });
      break;
    case BinaryOp::kSubtract:
      if constexpr (kIsInt<T>) return map([](T x, T y) { return WrapSub(x, y); });
      if constexpr (kFloating) return map([](T x, T y) { return x - y; });
      break;
    case BinaryOp::kMultiply:
      if constexpr (kIsBool<T>) return map([](T x, T y) { return x && y; });
      if constexpr (kIsInt<T>) return map([](T x, T y) { return WrapMul(x, y); });
      if constexpr (kFloating) return map([](T x, T y) { return x * y; });
      break;
    case BinaryOp::kDivide:
      if constexpr (kFloating) return map([](T x, T y) { return x / y; });
      break;
    case BinaryOp::kFloorDivide:
      if constexpr (kIsInt<T>) return map([](T x, T y) { return FloorDivide(x, y); });
      if constexpr (kIsFloat<T>) return map([](T x, T y) { return FloorDivideFloat(x, y); });
      break;
    case BinaryOp::kRemainder:
      if constexpr (kIsInt<T>) return map([](T x, T y) { return Remainder(x, y); });
      if constexpr (kIsFloat<T>) return map([](T x, T y) { return RemainderFloat(x, y); });
      break;
    case BinaryOp::kPow:
      if constexpr (kIsInt<T>) return map([](T x, T y) { return IntPow(x, y); });
      if constexpr (kIsFloat<T>) return map([](T x, T y) { return std::pow(x, y); });
      if constexpr (kIsComplex<T>) return map([](T x, T y) { return ComplexPow(x, y); });
      break;
    case BinaryOp::kEqual:
      return map([](T x, T y) { return x == y; });
    case BinaryOp::kNotEqual:
      return map([](T x, T y) { return x != y; });
    case BinaryOp::kLess:
      if constexpr (!kIsComplex<T>) return map([](T x, T y) { return x < y; });
      break;
    case BinaryOp::kLessEqual:
      if constexpr (!kIsComplex<T>) return map([](T x, T y) { return x <= y; });
      break;
    case BinaryOp::kGreater:
      if constexpr (!kIsComplex<T>) return map([](T x, T y) { return x > y; });
      break;
    case BinaryOp::kGreaterEqual:
      if constexpr (!kIsComplex<T>) return map([](T x, T y) { return x >= y; });
      break;
    // Logical ops compute in bool: the driver converts inputs with "!= 0".
    case BinaryOp::kLogicalAnd:
      if constexpr (kIsBool<T>) return map([](T x, T y) { return x && y; });
      break;
    case BinaryOp::kLogicalOr:
      if constexpr (kIsBool<T>) return map([](T x, T y) { return x || y; });
      break;
    case BinaryOp::kLogicalXor:
      if constexpr (kIsBool<T>) return map([](T x, T y) { return x != y; });
      break;
    case BinaryOp::kBitwiseAnd:
      if constexpr (std::is_integral_v<T>)
        return map([](T x, T y) { return static_cast<T>(x & y); });
      break;
    case BinaryOp::kBitwiseOr:
      if constexpr (std::is_integral_v<T>)
        return map([](T x, T y) { return static_cast<T>(x | y); });
      break;
    case BinaryOp::kBitwiseXor:
      if constexpr (std::is_integral_v<T>)
        return map([](T x, T y) { return static_cast<T>(x ^ y); });
      break;
    case BinaryOp::kBitwiseLeftShift:
      if constexpr (kIsInt<T>) return map([](T x, T y) { return ShiftLeft(x, y); });
      break;
    case BinaryOp::kBitwiseRightShift:
      if constexpr (kIsInt<T>) return map([](T x, T y) { return ShiftRight(x, y); });
      break;
    // NaN-propagating, as np.minimum / np.maximum.
    case BinaryOp::kMinimum:
      if constexpr (kIsBool<T>) return map([](T x, T y) { return x && y; });
      if constexpr (kIsInt<T>) return map([](T x, T y) { return x < y ? x : y; });
      if constexpr (kIsFloat<T>) return map([](T x, T y) { return (x < y || x != x) ? x : y; });
      break;
    case BinaryOp::kMaximum:
      if constexpr (kIsBool<T>) return map([](T x, T y) { return x || y; });
      if constexpr (kIsInt<T>) return map([](T x, T y) { return x > y ? x : y; });
      if constexpr (kIsFloat<T>) return map([](T x, T y) { return (x > y || x != x) ? x : y; });
      break;
    case BinaryOp::kArctan2:
      if constexpr (kIsFloat<T>) return map([](T x, T y) { return std::atan2(x, y); });
      break;
    case BinaryOp::kCopysign:
      if constexpr (kIsFloat<T>) return map([](T x, T y) { return std::copysign(x, y); });
      break;
    case BinaryOp::kHypot:
      if constexpr (kIsFloat<T>) return map([](T x, T y) { return std::hypot(x, y); });
      break;
    case BinaryOp::kLogaddexp:
      if constexpr (kIsFloat<T>) return map([](T x, T y) { return LogAddExp(x, y); });
      break;
    case BinaryOp::kNextafter:
      if constexpr (kIsFloat<T>) return map([](T x, T y) { return std::nextafter(x, y); });
      break;
  }
  STRATA_CHECK(false) << BinaryOpName(op) << " reached the kernel for " << DTypeOf<T>().name();
}

}  // namespace

Status ApplyBinary(BinaryOp op, const ConstArrayView& a, const ConstArrayView& b,
                   const ArrayView& out) {
  STRATA_ASSIGN_OR_RETURN(DType result, BinaryResultType(op, a.dtype(), b.dtype()));
  STRATA_CHECK(out.dtype() == result)
      << BinaryOpName(op) << " of " << a.dtype().name() << " and " << b.dtype().name() << " gives "
      << result.name() << ", not " << out.dtype().name();
  const DType compute = *BinaryComputeType(op, a.dtype(), b.dtype());
  const ConstArrayView* inputs[] = {&a, &b};
  const DType computes[] = {compute, compute};
  VisitDType(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ForEachRun(inputs, computes, out,
               [op](const std::byte* const* p, const Index* s, std::byte* o, Index os, Index n) {
                 BinaryRun<T>(op, p[0], s[0], p[1], s[1], o, os, n);
               });
  });
  return Status::Ok();
}

}  // namespace strata
