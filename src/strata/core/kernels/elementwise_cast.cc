// Cast: one conversion loop per (from, to) dtype pair, 13 x 13 in all, plus
// float16 to and from each of them (through double, which holds every
// float16 and every value numpy rounds to one exactly). The same loops convert
// mixed-dtype inputs of the other kernels to their compute dtype
// (GetConvertRun): that is how arithmetic on float16 computes in float32.
#include <fmt/format.h>

#include <array>

#include "strata/core/dtype_dispatch.h"
#include "strata/core/float16.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/core/kernels/elementwise_internal.h"

namespace strata {
namespace internal_kernels {
namespace {

template <typename To, typename From>
void ConvertRun(const std::byte* src, Index src_stride, std::byte* dst, Index dst_stride, Index n) {
  MapUnary<From>(src, src_stride, dst, dst_stride, n, [](From x) { return ConvertValue<To>(x); });
}

// float16 -> To: the exact double value, then numpy's conversion of a double.
template <typename To>
void FromHalfRun(const std::byte* src, Index src_stride, std::byte* dst, Index dst_stride,
                 Index n) {
  MapUnary<uint16_t>(src, src_stride, dst, dst_stride, n,
                     [](uint16_t h) { return ConvertValue<To>(HalfToDouble(h)); });
}

// From -> float16: numpy casts a complex to its real part and a bool or an
// integer to the nearest float16 (integers past 65504 overflow to infinity).
template <typename From>
void ToHalfRun(const std::byte* src, Index src_stride, std::byte* dst, Index dst_stride,
               Index n) {
  MapUnary<From>(src, src_stride, dst, dst_stride, n, [](From x) -> uint16_t {
    if constexpr (std::is_same_v<From, float>) {
      return FloatToHalf(x);
    } else {
      return DoubleToHalf(ConvertValue<double>(x));
    }
  });
}

void HalfToHalfRun(const std::byte* src, Index src_stride, std::byte* dst, Index dst_stride,
                   Index n) {
  MapUnary<uint16_t>(src, src_stride, dst, dst_stride, n, [](uint16_t h) { return h; });
}

}  // namespace

ConvertRunFn GetConvertRun(DType from, DType to) {
  STRATA_CHECK((from.is_numeric() || from.is_float16()) && (to.is_numeric() || to.is_float16()))
      << "no conversion from " << from.ToString() << " to " << to.ToString();
  if (from.is_float16() && to.is_float16()) return &HalfToHalfRun;
  if (from.is_float16()) {
    return VisitDType(to, [&](auto to_tag) -> ConvertRunFn {
      return &FromHalfRun<typename decltype(to_tag)::type>;
    });
  }
  if (to.is_float16()) {
    return VisitDType(from, [&](auto from_tag) -> ConvertRunFn {
      return &ToHalfRun<typename decltype(from_tag)::type>;
    });
  }
  return VisitDType(from, [&](auto from_tag) -> ConvertRunFn {
    using From = typename decltype(from_tag)::type;
    return VisitDType(to, [&](auto to_tag) -> ConvertRunFn {
      using To = typename decltype(to_tag)::type;
      return &ConvertRun<To, From>;
    });
  });
}

}  // namespace internal_kernels

Status Cast(const ConstArrayView& in, const ArrayView& out) {
  if (in.dtype() == out.dtype()) {
    CopyArray(in.shape() == out.shape() ? in : BroadcastTo(in, out.shape()), out);
    return Status::Ok();
  }
  auto convertible = [](DType t) { return t.is_numeric() || t.is_float16(); };
  if (!convertible(in.dtype()) || !convertible(out.dtype())) {
    return InvalidArgumentError(fmt::format("cannot convert {} to {}: fixed-length string and "
                                            "bytes types convert only to themselves",
                                            in.dtype().ToString(), out.dtype().ToString()));
  }
  internal_kernels::ConvertRunFn convert = internal_kernels::GetConvertRun(in.dtype(), out.dtype());
  const ConstArrayView* inputs[] = {&in};
  const DType compute[] = {in.dtype()};
  internal_kernels::ForEachRun(inputs, compute, out,
                               [convert](const std::byte* const* p, const Index* s, std::byte* o,
                                         Index os, Index n) { convert(p[0], s[0], o, os, n); });
  return Status::Ok();
}

}  // namespace strata
