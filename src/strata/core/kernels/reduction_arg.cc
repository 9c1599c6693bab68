// argmin and argmax (real dtypes and bool) with numpy's ties and NaNs: the
// first occurrence wins, and the first NaN wins over every number.
//
// State: 2 int64 slots, (position, value). value holds the input element's
// bytes (bit-cast, zero-padded to 8 bytes). position is -1 while no element
// has been seen (zero-size chunks); value then holds the identity (-inf or the
// dtype's smallest value for argmax), so that most elements are rejected by a
// single comparison. Positions are whole-array coordinates:
// along the single reduced axis (in_origin[axis] + local index), or the C-order
// flat index over array_shape when every axis is reduced. Because states carry
// their positions, merging prefers the smaller position on equal values, and
// Combine gives the same answer in any grouping or order.
//
// A reduced contiguous run is taken in blocks: a vectorised NaN-propagating
// extreme of the block, then, only when it beats the best so far, a scan for
// its first occurrence (from L1). Nothing beats an earlier NaN, so a run stops
// at its first NaN.
//
// Finalize of an empty state (no element seen) CHECK-fails: the planner refuses
// an argmin over zero elements (numpy raises ValueError) before it gets here.
#include "strata/core/kernels/reduction_internal.h"

namespace strata::internal_reduction {
namespace {

template <typename T, bool kMax>
struct ArgOrder {
  // True when x wins over y whatever their positions.
  static bool Before(T x, T y) {
    if constexpr (std::is_floating_point_v<T>) {
      if (y != y) return false;
      if (x != x) return true;
    }
    return kMax ? x > y : x < y;
  }
  static bool Same(T x, T y) {
    if constexpr (std::is_floating_point_v<T>) {
      return x == y || (x != x && y != y);
    } else {
      return x == y;
    }
  }
};

template <typename T>
inline T LoadValue(const std::byte* t, Index ts) {
  T v;
  std::memcpy(&v, t + ts, sizeof(T));
  return v;
}

template <typename T>
inline void StoreValue(std::byte* t, Index ts, T v) {
  int64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  SlotRef<int64_t>(t, 1, ts) = bits;
}

// Offers (x, position p) to the tuple at t.
template <typename T, bool kMax>
inline void Take(std::byte* t, Index ts, T x, Index p) {
  const T y = LoadValue<T>(t, ts);
  // The common case, and false whenever a NaN is involved or the tuple is
  // empty (y is the identity).
  if (kMax ? x < y : x > y) return;
  int64_t& q = SlotRef<int64_t>(t, 0, ts);
  if (q >= 0 && !(ArgOrder<T, kMax>::Before(x, y) || (ArgOrder<T, kMax>::Same(x, y) && p < q))) {
    return;
  }
  q = p;
  StoreValue(t, ts, x);
}

constexpr Index kBlock = 1024;

// Offers the best element of a run (positions pos + i * ps, ps >= 0) to the
// tuple at t.
template <typename T, bool kMax>
void TakeRun(std::byte* t, Index ts, const std::byte* p, Index n, Index stride, Index pos,
             Index ps) {
  using Order = ArgOrder<T, kMax>;
  T best{};
  Index best_i = -1;
  if (stride == static_cast<Index>(sizeof(T))) {
    const T* x = reinterpret_cast<const T*>(p);
    for (Index b = 0; b < n; b += kBlock) {
      const Index m = std::min(kBlock, n - b);
      const T* xb = x + b;
      const T ext = MinMaxFold<T, kMax, false>::Run(xb, m);
      if (best_i >= 0 && !Order::Before(ext, best)) continue;
      Index hit = 0;
      if (IsNan(ext)) {
        while (!IsNan(xb[hit])) ++hit;
      } else {
        while (xb[hit] != ext) ++hit;
      }
      best = xb[hit];
      best_i = b + hit;
      if (IsNan(best)) break;
    }
  } else {
    for (Index i = 0; i < n; ++i) {
      const T v = *reinterpret_cast<const T*>(p + i * stride);
      if (best_i < 0 || Order::Before(v, best)) {
        best = v;
        best_i = i;
        if (IsNan(best)) break;
      }
    }
  }
  if (best_i >= 0) Take<T, kMax>(t, ts, best, pos + best_i * ps);
}

template <typename T, bool kMax>
class ArgKernel final : public KernelBase {
 public:
  using KernelBase::KernelBase;

  void Partial(const ConstArrayView& in, std::span<const int> axes,
               std::span<const Index> in_origin, std::span<const Index> array_shape,
               const ArrayView& state) const override {
    CheckPartial(in, axes, state);
    const int r = in.rank();
    STRATA_CHECK(static_cast<int>(in_origin.size()) == r &&
                 static_cast<int>(array_shape.size()) == r)
        << ReduceOpName(op_) << ": origin and array shape must have the input's rank " << r;
    Shape pos_strides(r, 0);
    Index pos0 = 0;
    if (static_cast<int>(axes.size()) == r) {
      Index s = 1;
      for (int i = r - 1; i >= 0; --i) {
        STRATA_DCHECK(in_origin[i] >= 0 && in_origin[i] + in.shape()[i] <= array_shape[i]);
        pos_strides[i] = s;
        pos0 += in_origin[i] * s;
        s *= array_shape[i];
      }
    } else {
      STRATA_CHECK(axes.size() == 1) << ReduceOpName(op_) << " reduces one axis or all axes, not "
                                     << axes.size() << " of " << r;
      pos_strides[axes[0]] = 1;
      pos0 = in_origin[axes[0]];
    }
    const Index ts = TrailingStride(state);
    ForEachTuple(state, [&](std::byte* t) { SetEmpty(t, ts); });
    if (in.num_elements() == 0) return;
    ForEachRow(
        PartialLoop(in, axes, state, pos_strides), in.data(), state.data(), pos0,
        [ts](const std::byte* ip, std::byte* op, Index pos, Index n, Index is, Index os, Index ps) {
          if (os == 0) {
            TakeRun<T, kMax>(op, ts, ip, n, is, pos, ps);
          } else {
            for (Index j = 0; j < n; ++j) {
              Take<T, kMax>(op + j * os, ts, *reinterpret_cast<const T*>(ip + j * is),
                            pos + j * ps);
            }
          }
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
            const int64_t p = SlotRef<int64_t>(a, 0, its);
            if (p >= 0) Take<T, kMax>(op + j * os, ots, LoadValue<T>(a, its), p);
          }
        });
  }

  void Finalize(const ConstArrayView& state, const ArrayView& result) const override {
    CheckFinalize(state, result);
    if (result.num_elements() == 0) return;
    const Index ts = TrailingStride(state);
    ForEachRowOutOfLine(
        FinalizeLoop(state, result), state.data(), result.data(), 0,
        [&](const std::byte* ip, std::byte* op, Index, Index n, Index is, Index os, Index) {
          for (Index j = 0; j < n; ++j) {
            const int64_t p = SlotRef<int64_t>(ip + j * is, 0, ts);
            STRATA_CHECK(p >= 0) << ReduceOpName(op_) << " of an empty reduction";
            *reinterpret_cast<int64_t*>(op + j * os) = p;
          }
        });
  }

 private:
  static void SetEmpty(std::byte* t, Index ts) {
    SlotRef<int64_t>(t, 0, ts) = -1;
    StoreValue(t, ts, MinMaxFold<T, kMax, false>::Identity());
  }
};

}  // namespace

std::shared_ptr<const ReductionKernel> MakeArgKernel(ReduceOp op, DType input) {
  return VisitDType(input, [&](auto tag) -> std::shared_ptr<const ReductionKernel> {
    using T = typename decltype(tag)::type;
    if constexpr (kIsComplex<T>) {
      STRATA_CHECK(false) << "argmin/argmax of complex";
      return nullptr;
    } else {
      using C = ComputeType<T>;
      const DType kInt64 = DTypeId::kInt64;
      if (op == ReduceOp::kArgmax) {
        return std::make_shared<ArgKernel<C, true>>(op, input, kInt64, kInt64, 2);
      }
      STRATA_CHECK(op == ReduceOp::kArgmin) << ReduceOpName(op);
      return std::make_shared<ArgKernel<C, false>>(op, input, kInt64, kInt64, 2);
    }
  });
}

}  // namespace strata::internal_reduction
