// sum, prod and mean.
//
// States (width, dtype):
//   sum, prod  1 slot  int64 (bool, signed ints), uint64 (unsigned ints),
//                      float64 (float32, float64), complex128 (complex)
//   mean       2 slots (count, sum): float64 for real input, complex128 for
//                      complex input (the count in the real part)
// Integers accumulate in uint64 so that overflow wraps (two's complement) as
// numpy's int64 does, without undefined behaviour. float32 and complex64
// accumulate in double precision and round once in Finalize.
#include "strata/core/kernels/reduction_internal.h"

namespace strata::internal_reduction {
namespace {

template <typename InT, typename AccT>
struct SumFold {
  using In = InT;
  using Acc = AccT;
  static Acc Identity() { return Acc(0); }
  static Acc Lift(In x) { return static_cast<Acc>(x); }
  static Acc Merge(Acc a, Acc b) { return a + b; }
};

template <typename InT, typename AccT>
struct ProdFold {
  using In = InT;
  using Acc = AccT;
  static Acc Identity() { return Acc(1); }
  static Acc Lift(In x) { return static_cast<Acc>(x); }
  static Acc Merge(Acc a, Acc b) {
    if constexpr (kIsComplex<Acc>) {
      return ComplexMul(a, b);
    } else {
      return a * b;
    }
  }
};

}  // namespace

std::shared_ptr<const ReductionKernel> MakeSumKernel(ReduceOp op, DType input, Index count) {
  return VisitDType(input, [&](auto tag) -> std::shared_ptr<const ReductionKernel> {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    // Accumulator and result of sum/prod.
    using Acc =
        std::conditional_t<kIsComplex<T>, std::complex<double>,
                           std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>>;
    using R = std::conditional_t<
        kIsComplex<T> || std::is_floating_point_v<T>, T,
        std::conditional_t<std::is_unsigned_v<T> && !std::is_same_v<T, bool>, uint64_t, int64_t>>;
    const DType state = std::is_same_v<Acc, uint64_t> ? DTypeOf<R>() : DTypeOf<Acc>();
    switch (op) {
      case ReduceOp::kSum:
        return std::make_shared<FoldKernel<SumFold<C, Acc>, R, false, true>>(
            op, input, DTypeOf<R>(), state, 1);
      case ReduceOp::kProd:
        return std::make_shared<FoldKernel<ProdFold<C, Acc>, R, false, false>>(
            op, input, DTypeOf<R>(), state, 1);
      case ReduceOp::kMean: {
        using MeanAcc = std::conditional_t<kIsComplex<T>, std::complex<double>, double>;
        using MeanR = std::conditional_t<kIsComplex<T> || std::is_floating_point_v<T>, T, double>;
        if (count > 0) {
          auto sum = std::make_shared<FoldKernel<SumFold<C, MeanAcc>, MeanR, false, false>>(
              op, input, DTypeOf<MeanR>(), DTypeOf<MeanAcc>(), 1);
          sum->DivideResultsBy(count);
          return sum;
        }
        return std::make_shared<FoldKernel<SumFold<C, MeanAcc>, MeanR, true, true>>(
            op, input, DTypeOf<MeanR>(), DTypeOf<MeanAcc>(), 2);
      }
      default:
        STRATA_CHECK(false) << "not a sum-family op: " << ReduceOpName(op);
        return nullptr;
    }
  });
}

}  // namespace strata::internal_reduction
