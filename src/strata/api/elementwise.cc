// Elementwise operations: unary and binary math, where, clip, astype.
#include "strata/api/elementwise.h"

#include <fmt/format.h>

#include "strata/api/internal.h"

namespace strata {

using internal_api::MakeElementwise;
using internal_api::ScalarArray;
using internal_api::SpecOf;

Array unary(UnaryOp op, const Array& x) {
  if (!x.ok()) return x;
  Result<DType> out = UnaryResultType(op, x.dtype());
  if (!out.ok()) return Array::FromStatus(out.status());
  return MakeElementwise(std::string(UnaryOpName(op)), {x}, *out,
                         [op](std::span<const ConstArrayView> in, const ArrayView& o) {
                           return ApplyUnary(op, in[0], o);
                         });
}

Array binary(BinaryOp op, const Array& a, const Array& b) {
  if (!a.ok()) return a;
  if (!b.ok()) return b;
  Result<DType> out = BinaryResultType(op, a.dtype(), b.dtype());
  if (!out.ok()) return Array::FromStatus(out.status());
  return MakeElementwise(std::string(BinaryOpName(op)), {a, b}, *out,
                         [op](std::span<const ConstArrayView> in, const ArrayView& o) {
                           return ApplyBinary(op, in[0], in[1], o);
                         });
}

Array binary(BinaryOp op, const Array& a, Scalar b) {
  if (!a.ok()) return a;
  return binary(op, a, ScalarArray(b, b.DTypeBeside(a.dtype()), a.spec()));
}

Array binary(BinaryOp op, Scalar a, const Array& b) {
  if (!b.ok()) return b;
  return binary(op, ScalarArray(a, a.DTypeBeside(b.dtype()), b.spec()), b);
}

Array where(const Array& cond, const Array& a, const Array& b) {
  if (Status s = internal_api::FirstError({&cond, &a, &b}); !s.ok()) return Array::FromStatus(s);
  if (!cond.dtype().is_bool()) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("where: the condition must be bool, got {}", cond.dtype().name())));
  }
  Result<DType> t = PromoteTypes(a.dtype(), b.dtype());
  if (!t.ok()) return Array::FromStatus(t.status().WithContext("where"));
  Array x = a.dtype() == *t ? a : astype(a, *t);
  Array y = b.dtype() == *t ? b : astype(b, *t);
  return MakeElementwise("where", {cond, x, y}, *t,
                         [](std::span<const ConstArrayView> in, const ArrayView& o) {
                           return ApplyWhere(in[0], in[1], in[2], o);
                         });
}

Array where(const Array& cond, const Array& a, Scalar b) {
  if (!a.ok()) return a;
  return where(cond, a, ScalarArray(b, b.DTypeBeside(a.dtype()), a.spec()));
}

Array where(const Array& cond, Scalar a, const Array& b) {
  if (!b.ok()) return b;
  return where(cond, ScalarArray(a, a.DTypeBeside(b.dtype()), b.spec()), b);
}

Array where(const Array& cond, Scalar a, Scalar b) {
  if (!cond.ok()) return cond;
  DType t = a.DefaultDType();
  Result<DType> p = PromoteTypes(a.DefaultDType(), b.DefaultDType());
  if (p.ok()) t = *p;
  return where(cond, ScalarArray(a, t, cond.spec()), ScalarArray(b, t, cond.spec()));
}

Array clip(const Array& x, const Array& lo, const Array& hi) {
  if (Status s = internal_api::FirstError({&x, &lo, &hi}); !s.ok()) return Array::FromStatus(s);
  Array l = lo.dtype() == x.dtype() ? lo : astype(lo, x.dtype());
  Array h = hi.dtype() == x.dtype() ? hi : astype(hi, x.dtype());
  return MakeElementwise("clip", {x, l, h}, x.dtype(),
                         [](std::span<const ConstArrayView> in, const ArrayView& o) {
                           return ApplyClip(in[0], in[1], in[2], o);
                         });
}

Array clip(const Array& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  if (!x.ok()) return x;
  if (x.dtype().is_complex()) {
    return Array::FromStatus(InvalidArgumentError("clip: complex arrays cannot be clipped"));
  }
  Array out = x;
  if (lo) out = maximum(out, ScalarArray(*lo, x.dtype(), x.spec()));
  if (hi) out = minimum(out, ScalarArray(*hi, x.dtype(), x.spec()));
  if (!lo && !hi) out = positive(x);
  return out;
}

Array astype(const Array& x, DType dtype) {
  if (!x.ok()) return x;
  return MakeElementwise(fmt::format("astype[{}]", dtype.name()), {x}, dtype,
                         [](std::span<const ConstArrayView> in, const ArrayView& o) {
                           return Cast(in[0], o);
                         });
}

}  // namespace strata
