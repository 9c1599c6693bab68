// Elementwise operations: unary and binary math with broadcasting (the
// functions and the C++ operators over Arrays and Scalars), where, clip and
// astype.
//
//   Array anomaly = (t2m - mean(t2m, {0}, {.keepdims = true})) / 273.15;
//
// Each is one elementwise op: the inputs broadcast together, their chunks are
// unified (an input whose chunks differ is rechunked), and consecutive
// elementwise ops fuse into one task with no memory beyond their input and
// output blocks. Result dtypes follow the Array API's type promotion
// (core/kernels/elementwise.h); a Scalar takes the dtype of the array it
// meets when their kinds agree (api/array.h). More elementwise functions:
// api/math_extras.h.
//
// Errors come back as an Array in an error state (api/array.h):
// InvalidArgument for shapes that do not broadcast, or an op the dtypes do
// not support (bitwise ops on floats, clip of complex).
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_ELEMENTWISE_H_
#define STRATA_API_ELEMENTWISE_H_

#include <optional>

#include "strata/api/array.h"
#include "strata/core/kernels/elementwise.h"

namespace strata {

Array unary(UnaryOp op, const Array& x);
Array binary(BinaryOp op, const Array& a, const Array& b);
Array binary(BinaryOp op, const Array& a, Scalar b);
Array binary(BinaryOp op, Scalar a, const Array& b);

#define STRATA_UNARY(name, op) \
  inline Array name(const Array& x) { return unary(UnaryOp::op, x); }
STRATA_UNARY(abs, kAbs)
STRATA_UNARY(negative, kNegative)
STRATA_UNARY(positive, kPositive)
STRATA_UNARY(square, kSquare)
STRATA_UNARY(sqrt, kSqrt)
STRATA_UNARY(exp, kExp)
STRATA_UNARY(expm1, kExpm1)
STRATA_UNARY(log, kLog)
STRATA_UNARY(log1p, kLog1p)
STRATA_UNARY(log2, kLog2)
STRATA_UNARY(log10, kLog10)
STRATA_UNARY(sin, kSin)
STRATA_UNARY(cos, kCos)
STRATA_UNARY(tan, kTan)
STRATA_UNARY(arcsin, kArcsin)
STRATA_UNARY(arccos, kArccos)
STRATA_UNARY(arctan, kArctan)
STRATA_UNARY(sinh, kSinh)
STRATA_UNARY(cosh, kCosh)
STRATA_UNARY(tanh, kTanh)
STRATA_UNARY(floor, kFloor)
STRATA_UNARY(ceil, kCeil)
STRATA_UNARY(round, kRound)
STRATA_UNARY(trunc, kTrunc)
STRATA_UNARY(sign, kSign)
STRATA_UNARY(isnan, kIsnan)
STRATA_UNARY(isinf, kIsinf)
STRATA_UNARY(isfinite, kIsfinite)
STRATA_UNARY(logical_not, kLogicalNot)
STRATA_UNARY(bitwise_invert, kBitwiseInvert)
STRATA_UNARY(real, kReal)
STRATA_UNARY(imag, kImag)
STRATA_UNARY(conj, kConj)
#undef STRATA_UNARY

#define STRATA_BINARY(name, op)                                                            \
  inline Array name(const Array& a, const Array& b) { return binary(BinaryOp::op, a, b); } \
  inline Array name(const Array& a, Scalar b) { return binary(BinaryOp::op, a, b); }       \
  inline Array name(Scalar a, const Array& b) { return binary(BinaryOp::op, a, b); }
STRATA_BINARY(add, kAdd)
STRATA_BINARY(subtract, kSubtract)
STRATA_BINARY(multiply, kMultiply)
STRATA_BINARY(divide, kDivide)
STRATA_BINARY(floor_divide, kFloorDivide)
STRATA_BINARY(remainder, kRemainder)
STRATA_BINARY(pow, kPow)
STRATA_BINARY(equal, kEqual)
STRATA_BINARY(not_equal, kNotEqual)
STRATA_BINARY(less, kLess)
STRATA_BINARY(less_equal, kLessEqual)
STRATA_BINARY(greater, kGreater)
STRATA_BINARY(greater_equal, kGreaterEqual)
STRATA_BINARY(logical_and, kLogicalAnd)
STRATA_BINARY(logical_or, kLogicalOr)
STRATA_BINARY(logical_xor, kLogicalXor)
STRATA_BINARY(bitwise_and, kBitwiseAnd)
STRATA_BINARY(bitwise_or, kBitwiseOr)
STRATA_BINARY(bitwise_xor, kBitwiseXor)
STRATA_BINARY(bitwise_left_shift, kBitwiseLeftShift)
STRATA_BINARY(bitwise_right_shift, kBitwiseRightShift)
STRATA_BINARY(minimum, kMinimum)
STRATA_BINARY(maximum, kMaximum)
STRATA_BINARY(arctan2, kArctan2)
#undef STRATA_BINARY

#define STRATA_OPERATOR(sym, name)                                                 \
  inline Array operator sym(const Array& a, const Array& b) { return name(a, b); } \
  inline Array operator sym(const Array& a, Scalar b) { return name(a, b); }       \
  inline Array operator sym(Scalar a, const Array& b) { return name(a, b); }
STRATA_OPERATOR(+, add)
STRATA_OPERATOR(-, subtract)
STRATA_OPERATOR(*, multiply)
STRATA_OPERATOR(/, divide)
STRATA_OPERATOR(%, remainder)
STRATA_OPERATOR(==, equal)
STRATA_OPERATOR(!=, not_equal)
STRATA_OPERATOR(<, less)
STRATA_OPERATOR(<=, less_equal)
STRATA_OPERATOR(>, greater)
STRATA_OPERATOR(>=, greater_equal)
STRATA_OPERATOR(&, bitwise_and)
STRATA_OPERATOR(|, bitwise_or)
STRATA_OPERATOR(^, bitwise_xor)
STRATA_OPERATOR(&&, logical_and)
STRATA_OPERATOR(||, logical_or)
STRATA_OPERATOR(<<, bitwise_left_shift)
STRATA_OPERATOR(>>, bitwise_right_shift)
#undef STRATA_OPERATOR
inline Array operator-(const Array& x) { return negative(x); }
inline Array operator+(const Array& x) { return positive(x); }
inline Array operator~(const Array& x) { return bitwise_invert(x); }
inline Array operator!(const Array& x) { return logical_not(x); }

// cond ? a : b, broadcast.
Array where(const Array& cond, const Array& a, const Array& b);
Array where(const Array& cond, const Array& a, Scalar b);
Array where(const Array& cond, Scalar a, const Array& b);
Array where(const Array& cond, Scalar a, Scalar b);
// min(max(x, lo), hi); either bound may be omitted.
Array clip(const Array& x, std::optional<Scalar> lo, std::optional<Scalar> hi);
Array clip(const Array& x, const Array& lo, const Array& hi);
Array astype(const Array& x, DType dtype);

}  // namespace strata

#endif  // STRATA_API_ELEMENTWISE_H_
