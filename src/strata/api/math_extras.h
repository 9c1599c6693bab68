// The Array API 2024.12 elementwise functions api/elementwise.h does not declare:
// inverse hyperbolic functions, reciprocal, signbit, copysign, hypot,
// logaddexp, nextafter, the standard's spellings of the inverse
// trigonometric functions (acos, asin, atan, atan2: the same ops as arccos,
// arcsin, arctan, arctan2), and clip with bounds mixing arrays, scalars and
// "no bound".
//
// Each is one elementwise op (broadcasting, Array API type promotion, chunk
// unification as in api/elementwise.h), fused like every other elementwise op and with
// no memory beyond its input and output blocks. Type rules
// (core/kernels/elementwise.h): functions of bool and integer inputs compute
// in float64, except signbit, which gives bool for every real dtype; the
// binary functions and signbit reject complex inputs.
//
// Departures from numpy: reciprocal of an integer array is float64 (numpy
// divides in integers: 1 // x); copysign/hypot/logaddexp/nextafter of two
// bools are float64 (numpy: float16, a dtype Strata does not have).
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_MATH_EXTRAS_H_
#define STRATA_API_MATH_EXTRAS_H_

#include <optional>

#include "strata/api/array.h"

namespace strata {

Array acosh(const Array& x);
Array asinh(const Array& x);
Array atanh(const Array& x);
Array reciprocal(const Array& x);
// True where the sign bit is set (-0.0 and -NaN included); bool result.
Array signbit(const Array& x);
// The Array API names of arccos, arcsin, arctan and arctan2.
Array acos(const Array& x);
Array asin(const Array& x);
Array atan(const Array& x);
Array atan2(const Array& a, const Array& b);
Array atan2(const Array& a, Scalar b);
Array atan2(Scalar a, const Array& b);

// |a| with the sign of b.
Array copysign(const Array& a, const Array& b);
Array copysign(const Array& a, Scalar b);
Array copysign(Scalar a, const Array& b);
// sqrt(a^2 + b^2) without overflow or underflow.
Array hypot(const Array& a, const Array& b);
Array hypot(const Array& a, Scalar b);
Array hypot(Scalar a, const Array& b);
// log(exp(a) + exp(b)) without overflow.
Array logaddexp(const Array& a, const Array& b);
Array logaddexp(const Array& a, Scalar b);
Array logaddexp(Scalar a, const Array& b);
// The next representable value after a towards b.
Array nextafter(const Array& a, const Array& b);
Array nextafter(const Array& a, Scalar b);
Array nextafter(Scalar a, const Array& b);

// clip with array bounds that may be missing (std::nullopt) or mixed with a
// scalar. Bounds are cast to x's dtype (the result's, as the standard asks)
// and broadcast with x; NaN propagates, lo > hi gives hi (np.clip).
Array clip(const Array& x, const std::optional<Array>& lo, const std::optional<Array>& hi);
Array clip(const Array& x, const Array& lo, Scalar hi);
Array clip(const Array& x, Scalar lo, const Array& hi);

}  // namespace strata

#endif  // STRATA_API_MATH_EXTRAS_H_
