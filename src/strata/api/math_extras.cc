// The elementwise functions of api/math_extras.h, as thin wrappers of
// api/elementwise.h's unary()/binary()/clip().
#include "strata/api/math_extras.h"

#include "strata/api/elementwise.h"
#include "strata/api/internal.h"

namespace strata {

Array acosh(const Array& x) { return unary(UnaryOp::kArccosh, x); }
Array asinh(const Array& x) { return unary(UnaryOp::kArcsinh, x); }
Array atanh(const Array& x) { return unary(UnaryOp::kArctanh, x); }
Array reciprocal(const Array& x) { return unary(UnaryOp::kReciprocal, x); }
Array signbit(const Array& x) { return unary(UnaryOp::kSignbit, x); }
Array acos(const Array& x) { return unary(UnaryOp::kArccos, x); }
Array asin(const Array& x) { return unary(UnaryOp::kArcsin, x); }
Array atan(const Array& x) { return unary(UnaryOp::kArctan, x); }

#define STRATA_BINARY_EXTRA(name, op)                                               \
  Array name(const Array& a, const Array& b) { return binary(BinaryOp::op, a, b); } \
  Array name(const Array& a, Scalar b) { return binary(BinaryOp::op, a, b); }       \
  Array name(Scalar a, const Array& b) { return binary(BinaryOp::op, a, b); }
STRATA_BINARY_EXTRA(atan2, kArctan2)
STRATA_BINARY_EXTRA(copysign, kCopysign)
STRATA_BINARY_EXTRA(hypot, kHypot)
STRATA_BINARY_EXTRA(logaddexp, kLogaddexp)
STRATA_BINARY_EXTRA(nextafter, kNextafter)
#undef STRATA_BINARY_EXTRA

Array clip(const Array& x, const std::optional<Array>& lo, const std::optional<Array>& hi) {
  if (!x.ok()) return x;
  if (lo && !lo->ok()) return *lo;
  if (hi && !hi->ok()) return *hi;
  if (lo && hi) return clip(x, *lo, *hi);
  if (x.dtype().is_complex()) {
    return Array::FromStatus(InvalidArgumentError("clip: complex arrays cannot be clipped"));
  }
  // One bound: maximum/minimum with the bound in x's dtype (NaN-propagating,
  // as np.clip), then back to x's shape rules by broadcasting.
  if (lo) return maximum(x, lo->dtype() == x.dtype() ? *lo : astype(*lo, x.dtype()));
  if (hi) return minimum(x, hi->dtype() == x.dtype() ? *hi : astype(*hi, x.dtype()));
  return positive(x);
}

Array clip(const Array& x, const Array& lo, Scalar hi) {
  if (!x.ok()) return x;
  return clip(x, lo, internal_api::ScalarArray(hi, x.dtype(), x.spec()));
}

Array clip(const Array& x, Scalar lo, const Array& hi) {
  if (!x.ok()) return x;
  return clip(x, internal_api::ScalarArray(lo, x.dtype(), x.spec()), hi);
}

}  // namespace strata
