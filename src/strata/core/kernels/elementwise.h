// Elementwise kernels: unary and binary math, comparisons, logic, where, clip
// and casts over strided views, with Array API type promotion and numpy
// broadcasting.
//
// Kernels run on one chunk at a time. Inputs are views broadcast to the
// output's shape (BroadcastTo gives size-1 or missing axes a stride of 0; the
// kernels also broadcast an input of another shape themselves); the output is
// any view of the result dtype. Any strides work, including 0 and negative
// ones. Computation happens in the promoted type of the inputs (see
// BinaryComputeType), so an int8 + float32 adds in float32; an input of
// another dtype is converted a block at a time, so memory use beyond the
// output is a few stack buffers.
//
// Semantics follow numpy where the Array API leaves room: integer overflow
// wraps; integer division and remainder by zero give 0; float division by zero
// gives inf/NaN (IEEE); floor_divide and remainder use Python's sign rules;
// round is half to even; minimum/maximum/clip propagate NaN; sign of NaN is
// NaN, sign of a complex z is z / |z| (the standard's, numpy >= 2.0).
// Departures from numpy: x ** negative integer is 0 for integers other than
// 1 and -1 (numpy raises); casts of NaN/inf/out-of-range floats to integers
// give 0 (numpy: platform-dependent garbage).
//
// Aliasing: an input may be the output itself (same data and strides);
// partially overlapping views are not allowed.
//
// Thread-safety: pure functions.
#ifndef STRATA_CORE_KERNELS_ELEMENTWISE_H_
#define STRATA_CORE_KERNELS_ELEMENTWISE_H_

#include <span>
#include <string_view>

#include "strata/base/status.h"
#include "strata/core/box.h"
#include "strata/core/dtype.h"
#include "strata/core/ndarray.h"

namespace strata {

// clang-format off
enum class UnaryOp {
  kAbs, kNegative, kPositive, kSquare, kSqrt, kExp, kExpm1, kLog, kLog1p, kLog2, kLog10,
  kSin, kCos, kTan, kArcsin, kArccos, kArctan, kSinh, kCosh, kTanh,
  kFloor, kCeil, kRound, kTrunc, kSign,
  kIsnan, kIsinf, kIsfinite, kLogicalNot, kBitwiseInvert, kReal, kImag, kConj,
  kArccosh, kArcsinh, kArctanh, kReciprocal, kSignbit,
};
// clang-format on

// clang-format off
enum class BinaryOp {
  kAdd, kSubtract, kMultiply, kDivide, kFloorDivide, kRemainder, kPow,
  kEqual, kNotEqual, kLess, kLessEqual, kGreater, kGreaterEqual,
  kLogicalAnd, kLogicalOr, kLogicalXor,
  kBitwiseAnd, kBitwiseOr, kBitwiseXor, kBitwiseLeftShift, kBitwiseRightShift,
  kMinimum, kMaximum, kArctan2,
  kCopysign, kHypot, kLogaddexp, kNextafter,
};
// clang-format on

// The Array API name: "abs", "add", "greater_equal", ...
std::string_view UnaryOpName(UnaryOp op);
std::string_view BinaryOpName(BinaryOp op);

// Array API type promotion of two dtypes. Mixed signed/unsigned integers
// promote to the smallest signed type holding both (uint64 with any signed
// integer is an InvalidArgument naming both: the standard leaves it undefined,
// numpy's float64 loses values). Integer with float or complex gives the float
// or complex (the "mixed kind" rule: int32 + float32 is float32, unlike
// numpy's float64). Bool with a number gives the number, as in numpy (the
// standard leaves it undefined); users come from numpy.
Result<DType> PromoteTypes(DType a, DType b);

// The dtype `op` produces for an input of `in`, or InvalidArgument "floor does
// not support complex64" when it is not defined. Math functions (sqrt, exp,
// log*, trig, hyperbolic, reciprocal) of bool and integers give float64
// (numpy's choice, except reciprocal: numpy keeps integers and divides them),
// of floats and complex the same type; signbit gives bool and rejects
// complex; floor/ceil/round/trunc keep bool and integer
// types and reject complex; abs, real and imag of complex give the real type;
// isnan/isinf/isfinite/logical_not give bool; negative, positive, square and
// sign reject bool; bitwise_invert takes only bool and integers.
Result<DType> UnaryResultType(UnaryOp op, DType in);

// The dtype of `a op b`, or InvalidArgument ("subtract does not support bool
// and bool", or the promotion error with the op's name in front).
// Comparisons and logical ops give bool; divide, atan2, copysign, hypot,
// logaddexp and nextafter of bool/integers give float64 (the last four reject
// complex); everything else the promoted type. Bool inputs: add is or,
// multiply is and (numpy); subtract, pow, floor_divide, remainder and shifts
// of two bools are rejected. Ordering (less, minimum, ...), floor_divide,
// remainder and atan2 reject complex; bitwise ops take bool and integers,
// shifts only integers; logical ops take any dtypes (nonzero is true).
Result<DType> BinaryResultType(BinaryOp op, DType a, DType b);

// The dtype the kernel computes in for a binary op (the promoted input type;
// for comparisons the result is bool but computation is in the promoted type;
// true division of integers computes in float64; logical ops compute in bool,
// each input converted with "!= 0", so they need no promotion).
Result<DType> BinaryComputeType(BinaryOp op, DType a, DType b);

// numpy broadcasting: the shape both (all) shapes broadcast to, or
// InvalidArgument "shapes (3, 4) and (5,) cannot be broadcast together".
Result<Shape> BroadcastShapes(std::span<const Shape> shapes);

// `view` seen with `shape` (its rank <= shape's rank; each of its extents 1 or
// equal): stride 0 on broadcast axes. CHECK-fails if incompatible.
ConstArrayView BroadcastTo(const ConstArrayView& view, const Shape& shape);

// out = op(in). `in` has out's shape or broadcasts to it. out's dtype must be
// UnaryResultType(op, in.dtype()) (CHECKed). Integer overflow wraps; math on
// integers is done in float64. Errors: InvalidArgument as UnaryResultType.
Status ApplyUnary(UnaryOp op, const ConstArrayView& in, const ArrayView& out);

// out = a op b, a and b of out's shape or broadcasting to it. out's dtype must
// be BinaryResultType(op, ...) (CHECKed). Integer division or remainder by
// zero gives 0 (as numpy does, without the warning); floor_divide and
// remainder follow Python's sign rules (remainder has the sign of the
// divisor); shifts by a count outside [0, bits) give 0 (or -1 for a right
// shift of a negative value), as numpy. Errors: InvalidArgument as
// BinaryResultType.
Status ApplyBinary(BinaryOp op, const ConstArrayView& a, const ConstArrayView& b,
                   const ArrayView& out);

// out = cond ? a : b, all broadcast to out's shape. cond is normally bool
// (another dtype means "!= 0"); a and b are normally of out's dtype (another
// dtype is cast to it as Cast does). Never fails.
Status ApplyWhere(const ConstArrayView& cond, const ConstArrayView& a, const ConstArrayView& b,
                  const ArrayView& out);

// out = min(max(in, lo), hi) elementwise (NaN-propagating; lo > hi gives hi,
// as np.clip); lo/hi broadcast. Computes in out's dtype (normally the
// promoted dtype of the three), casting inputs of another dtype.
// Errors: InvalidArgument for complex.
Status ApplyClip(const ConstArrayView& in, const ConstArrayView& lo, const ConstArrayView& hi,
                 const ArrayView& out);

// out = in converted to out's dtype (numpy astype with casting="unsafe": float
// to int truncates toward zero; NaN/inf/out-of-range to int is 0 here, not UB;
// int to narrower int wraps; complex to real drops the imaginary part;
// anything to bool is != 0; bool to number is 0/1). `in` may broadcast to
// out's shape. Never fails.
Status Cast(const ConstArrayView& in, const ArrayView& out);

// A rank-0 array holding `value` converted to `dtype` as Cast converts a
// float64 (for scalar operands). Errors: ResourceExhausted from the pool.
Result<NDArray> ScalarArray(MemoryPool& pool, DType dtype, double value);

}  // namespace strata

#endif  // STRATA_CORE_KERNELS_ELEMENTWISE_H_
