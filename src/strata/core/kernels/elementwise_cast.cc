// Cast: one conversion loop per (from, to) dtype pair, 13 x 13 in all. The
// same loops convert mixed-dtype inputs of the other kernels to their compute
// dtype (GetConvertRun).
#include <array>

#include "strata/core/dtype_dispatch.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/core/kernels/elementwise_internal.h"

namespace strata {
namespace internal_kernels {
namespace {

template <typename To, typename From>
void ConvertRun(const std::byte* src, Index src_stride, std::byte* dst, Index dst_stride, Index n) {
  MapUnary<From>(src, src_stride, dst, dst_stride, n, [](From x) { return ConvertValue<To>(x); });
}

}  // namespace

ConvertRunFn GetConvertRun(DType from, DType to) {
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
  internal_kernels::ConvertRunFn convert = internal_kernels::GetConvertRun(in.dtype(), out.dtype());
  const ConstArrayView* inputs[] = {&in};
  const DType compute[] = {in.dtype()};
  internal_kernels::ForEachRun(inputs, compute, out,
                               [convert](const std::byte* const* p, const Index* s, std::byte* o,
                                         Index os, Index n) { convert(p[0], s[0], o, os, n); });
  return Status::Ok();
}

}  // namespace strata
