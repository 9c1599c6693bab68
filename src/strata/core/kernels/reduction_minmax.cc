// min and max (real dtypes and bool; complex numbers are not ordered).
//
// State: 2 slots of the input dtype, (has_value, value). has_value is 0 or 1
// and tells an empty reduction (a zero-size chunk, an empty group) apart from
// one whose value happens to be the identity. While has_value is 0 the value
// holds the identity (+inf / the dtype's largest value for min), so that
// folding elements in needs no branch. NaN propagates (numpy's np.min).
//
// Finalize of an empty state gives NaN for float dtypes and the identity for
// integers and bool (min: the dtype's largest value / true; max: its smallest
// value / false), as np.min(x, initial=...) would: the planner refuses empty
// min/max reductions before they get here, and group-by results of empty
// groups are masked by the caller with a count.
#include "strata/core/kernels/reduction_internal.h"

namespace strata::internal_reduction {
namespace {

template <typename T, bool kMax, bool kBool>
class MinMaxKernel final : public KernelBase {
  using Fold = MinMaxFold<T, kMax, kBool>;

 public:
  using KernelBase::KernelBase;

  void Partial(const ConstArrayView& in, std::span<const int> axes,
               std::span<const Index> in_origin, std::span<const Index> array_shape,
               const ArrayView& state) const override {
    CheckPartial(in, axes, state);
    const Index ts = TrailingStride(state);
    const T has_value = ReducedCount(in.shape(), axes) > 0 ? 1 : 0;
    ForEachTuple(state, [&](std::byte* t) {
      SlotRef<T>(t, 0, ts) = has_value;
      SlotRef<T>(t, 1, ts) = Fold::Identity();
    });
    if (in.num_elements() == 0) return;
    ForEachRow(PartialLoop(in, axes, state), in.data(), state.data() + ts, 0,
               [](const std::byte* ip, std::byte* op, Index, Index n, Index is, Index os, Index) {
                 FoldInto<Fold>(ip, is, op, os, n);
               });
  }

  void CombineImpl(const ConstArrayView& states, std::span<const int> axes,
                   const ArrayView& out, bool reset) const override {
    CheckCombine(states, axes, out);
    const Index ots = TrailingStride(out);
    const Index its = TrailingStride(states);
    if (reset) ForEachTuple(out, [&](std::byte* t) { SetEmpty(t, ots); });
    if (states.num_elements() == 0) return;
    ForEachRowOutOfLine(
        CombineLoop(states, axes, out), states.data(), out.data(), 0,
        [&](const std::byte* ip, std::byte* op, Index, Index n, Index is, Index os, Index) {
          for (Index j = 0; j < n; ++j) {
            const std::byte* a = ip + j * is;
            if (SlotRef<T>(a, 0, its) == 0) continue;
            std::byte* o = op + j * os;
            SlotRef<T>(o, 0, ots) = 1;
            T& v = SlotRef<T>(o, 1, ots);
            v = Fold::Merge(v, SlotRef<T>(a, 1, its));
          }
        });
  }

  void Finalize(const ConstArrayView& state, const ArrayView& result) const override {
    CheckFinalize(state, result);
    if (result.num_elements() == 0) return;
    const Index ts = TrailingStride(state);
    T empty = Fold::Identity();
    if constexpr (std::is_floating_point_v<T>) empty = std::numeric_limits<T>::quiet_NaN();
    ForEachRowOutOfLine(
        FinalizeLoop(state, result), state.data(), result.data(), 0,
        [&](const std::byte* ip, std::byte* op, Index, Index n, Index is, Index os, Index) {
          for (Index j = 0; j < n; ++j) {
            const std::byte* t = ip + j * is;
            *reinterpret_cast<T*>(op + j * os) =
                SlotRef<T>(t, 0, ts) != 0 ? SlotRef<T>(t, 1, ts) : empty;
          }
        });
  }

  void GroupPartialImpl(const ConstArrayView& in, int axis, std::span<const int64_t> labels,
                        Index num_groups, const ArrayView& state) const override {
    const Index ts = TrailingStride(state);
    ForEachTuple(state, [&](std::byte* t) { SetEmpty(t, ts); });
    GroupScatter(
        in, axis, labels, num_groups, state,
        [ts](std::byte* t, const std::byte* x) {
          SlotRef<T>(t, 0, ts) = 1;
          T& v = SlotRef<T>(t, 1, ts);
          v = Fold::Merge(v, *reinterpret_cast<const T*>(x));
        },
        [ts](const std::byte* x, Index is, std::byte* t, Index os, Index n) {
          if (is == sizeof(T) && ts == sizeof(T) && os == 2 * sizeof(T)) {
            // Dense (has_value, value) tuples: one pass.
            const T* __restrict xv = reinterpret_cast<const T*>(x);
            T* __restrict o = reinterpret_cast<T*>(t);
            for (Index j = 0; j < n; ++j) {
              o[2 * j] = 1;
              o[2 * j + 1] = Fold::Merge(o[2 * j + 1], xv[j]);
            }
            return;
          }
          FoldRow<Fold>(x, is, t + ts, os, n);
          for (Index j = 0; j < n; ++j) SlotRef<T>(t + j * os, 0, ts) = 1;
        });
  }

 private:
  static void SetEmpty(std::byte* t, Index ts) {
    SlotRef<T>(t, 0, ts) = 0;
    SlotRef<T>(t, 1, ts) = Fold::Identity();
  }
};

}  // namespace

std::shared_ptr<const ReductionKernel> MakeMinMaxKernel(ReduceOp op, DType input) {
  return VisitDType(input, [&](auto tag) -> std::shared_ptr<const ReductionKernel> {
    using T = typename decltype(tag)::type;
    if constexpr (kIsComplex<T>) {
      STRATA_CHECK(false) << "min/max of complex";
      return nullptr;
    } else {
      using C = ComputeType<T>;
      constexpr bool kBool = std::is_same_v<T, bool>;
      if (op == ReduceOp::kMax) {
        return std::make_shared<MinMaxKernel<C, true, kBool>>(op, input, input, input, 2);
      }
      STRATA_CHECK(op == ReduceOp::kMin) << ReduceOpName(op);
      return std::make_shared<MinMaxKernel<C, false, kBool>>(op, input, input, input, 2);
    }
  });
}

}  // namespace strata::internal_reduction
