// all, any, count_nonzero and count.
//
// States (width 1): all/any bool; count_nonzero/count int64. An element is
// nonzero when it compares unequal to zero (NaN is nonzero, -0.0 is zero; a
// complex number is nonzero when either part is). count counts the elements
// that are not NaN (a complex number is NaN when either part is); for
// non-float dtypes it is the number of elements and reads no input.
//
// Integers of one width share a kernel: nonzero-ness depends only on the bits.
#include "strata/core/kernels/reduction_internal.h"

namespace strata::internal_reduction {
namespace {

// all (kAll) or any of x[0..m) != 0 for a real T, stopping at the first
// element that decides it (within kStep elements).
template <typename T, bool kAll>
uint8_t VectorAllAny(const T* x, Index m) {
  using V = typename Vec16<T>::type;
  constexpr int kW = 16 / sizeof(T);
  constexpr Index kStep = 256;
  constexpr uint8_t kDecided = kAll ? 0 : 1;
  Index i = 0;
  while (i + kStep <= m) {
    // Lanes are all-ones where an element decides the result.
    decltype(V{} != V{}) hit = {};
    for (Index end = i + kStep; i < end; i += kW) {
      V v;
      std::memcpy(&v, x + i, sizeof(V));
      if constexpr (kAll) {
        hit |= v == 0;
      } else {
        hit |= v != 0;
      }
    }
    for (int k = 0; k < kW; ++k) {
      if (hit[k] != 0) return kDecided;
    }
  }
  for (; i < m; ++i) {
    if ((x[i] != T(0)) != kAll) return kDecided;
  }
  return 1 - kDecided;
}

template <typename InT, bool kAll>
struct AllAnyFold {
  using In = InT;
  using Acc = uint8_t;
  static Acc Identity() { return kAll ? 1 : 0; }
  static Acc Lift(In x) { return x != In(0) ? 1 : 0; }
  static Acc Merge(Acc a, Acc b) { return kAll ? (a & b) : (a | b); }
  static bool Decided(Acc a) { return a == (kAll ? 0 : 1); }
  // A complex number is nonzero when either part is: any over the parts is any
  // over the numbers, all is not.
  static Acc Run(const In* x, Index m) requires(!kIsComplex<In> || !kAll) {
    if constexpr (kIsComplex<In>) {
      using F = typename In::value_type;
      return VectorAllAny<F, kAll>(reinterpret_cast<const F*>(x), 2 * m);
    } else {
      return VectorAllAny<In, kAll>(x, m);
    }
  }
};

template <typename InT>
struct CountNonzeroFold {
  using In = InT;
  using Acc = int64_t;
  static Acc Identity() { return 0; }
  static Acc Lift(In x) { return x != In(0) ? 1 : 0; }
  static Acc Merge(Acc a, Acc b) { return a + b; }
};

template <typename InT>
struct CountFold {
  using In = InT;
  using Acc = int64_t;
  static constexpr bool kCountsAll = !std::is_floating_point_v<In> && !kIsComplex<In>;
  static Acc Identity() { return 0; }
  static Acc Lift(In x) { return IsNan(x) ? 0 : 1; }
  static Acc Merge(Acc a, Acc b) { return a + b; }
};

// The type whose nonzero test matches T's: unsigned integers of T's width for
// bool and integers, T itself for floats and complex.
template <typename T>
using NonzeroType = std::conditional_t<
    std::is_floating_point_v<T> || kIsComplex<T>, T,
    std::conditional_t<sizeof(T) == 1, uint8_t,
                       std::conditional_t<sizeof(T) == 2, uint16_t,
                                          std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>>;

}  // namespace

std::shared_ptr<const ReductionKernel> MakeLogicalKernel(ReduceOp op, DType input) {
  return VisitDType(input, [&](auto tag) -> std::shared_ptr<const ReductionKernel> {
    using T = typename decltype(tag)::type;
    using N = NonzeroType<T>;
    const DType kBool = DTypeId::kBool, kInt64 = DTypeId::kInt64;
    switch (op) {
      case ReduceOp::kAll:
        return std::make_shared<FoldKernel<AllAnyFold<N, true>, bool, false, false>>(
            op, input, kBool, kBool, 1);
      case ReduceOp::kAny:
        return std::make_shared<FoldKernel<AllAnyFold<N, false>, bool, false, false>>(
            op, input, kBool, kBool, 1);
      case ReduceOp::kCountNonzero:
        return std::make_shared<FoldKernel<CountNonzeroFold<N>, int64_t, false, false>>(
            op, input, kInt64, kInt64, 1);
      case ReduceOp::kCount: {
        // Every non-float dtype shares one kernel that reads no input.
        using CountIn =
            std::conditional_t<std::is_floating_point_v<T> || kIsComplex<T>, T, uint8_t>;
        return std::make_shared<FoldKernel<CountFold<CountIn>, int64_t, false, true>>(
            op, input, kInt64, kInt64, 1);
      }
      default:
        STRATA_CHECK(false) << "not a logical op: " << ReduceOpName(op);
        return nullptr;
    }
  });
}

}  // namespace strata::internal_reduction
