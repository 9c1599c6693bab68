// NaN-aware reductions (nansum, nanprod, nanmean, nanvar, nanstd, nanmin,
// nanmax, nanargmin, nanargmax) and the positional group-by statistics
// (first, last, argmin, argmax, with or without skipping NaN; var and std
// for group-by), all in one pass over the input.
//
// nansum and nanprod are FoldKernels whose Lift maps NaN to the identity
// (vectorised like sum). The others are AccumulateKernels: a Policy says how
// one element is added to a state tuple, how two tuples merge and how a tuple
// finishes; the kernel walks the input (ForEachRow, with whole-array
// positions for the positional ops, as ArgKernel does) and the group-by
// scatter. States (dtype, width):
//   nanmean        2 float64 (count, sum)     complex: complex128, count real
//   nanvar/std     3 float64 (count, mean, M2), Welford per element, Chan's
//                  merge (reduction_moments.cc); var/std for group-by alike
//                  without the NaN test (a NaN then poisons its tuple)
//   nanmin/max     2 of the input dtype (has_value, value)
//   (nan)arg*      2 int64 (position, value bits): position -1 while empty
//   first/last     1 + ceil(size / 8) int64 (position, value bytes)
// Finalize of an empty or all-NaN tuple: nanmean/nanvar/nanmin/nanmax NaN
// (numpy's result, without its warning); nanvar/nanstd NaN when
// count - ddof <= 0; arg* -1 (the caller turns it into numpy's "All-NaN
// slice encountered" error); first/last NaN for floats, 0 for other dtypes.
#include "strata/core/kernels/reduction_internal.h"

namespace strata::internal_reduction {
namespace {

// ------------------------------------------------------------- folds

template <typename InT, typename AccT>
struct NanSumFold {
  using In = InT;
  using Acc = AccT;
  static Acc Identity() { return Acc(0); }
  static Acc Lift(In x) { return IsNan(x) ? Acc(0) : static_cast<Acc>(x); }
  static Acc Merge(Acc a, Acc b) { return a + b; }
};

template <typename InT, typename AccT>
struct NanProdFold {
  using In = InT;
  using Acc = AccT;
  static Acc Identity() { return Acc(1); }
  static Acc Lift(In x) { return IsNan(x) ? Acc(1) : static_cast<Acc>(x); }
  static Acc Merge(Acc a, Acc b) {
    if constexpr (kIsComplex<Acc>) {
      return ComplexMul(a, b);
    } else {
      return a * b;
    }
  }
};

// ------------------------------------------------------------- policies
//
//   struct Policy {
//     using In;                      // compute type of the input
//     using R;                       // result element type
//     static constexpr bool kPositions;  // Add needs element positions
//     static void Empty(std::byte* t, Index ts);
//     static void Add(std::byte* t, Index ts, In x, Index pos);
//     static void Merge(std::byte* t, Index ts, const std::byte* a, Index ats);
//     static R Final(const std::byte* t, Index ts, int ddof, bool root);
//   };
// `root` is true for sqrt-finishing (std) policies' flag, unused otherwise.

template <typename T, typename AccT>
struct NanMeanPolicy {
  using In = T;
  using Acc = AccT;  // double or complex<double>
  using R = std::conditional_t<kIsComplex<T> || std::is_floating_point_v<T>, T, double>;
  static constexpr bool kPositions = false;
  static void Empty(std::byte* t, Index ts) {
    SlotRef<Acc>(t, 0, ts) = Acc(0);
    SlotRef<Acc>(t, 1, ts) = Acc(0);
  }
  static void Add(std::byte* t, Index ts, In x, Index) {
    if (IsNan(x)) return;
    SlotRef<Acc>(t, 0, ts) += Acc(1);
    SlotRef<Acc>(t, 1, ts) += static_cast<Acc>(x);
  }
  // A dense kept row of (count, sum) tuples (reducing over outer axes: the
  // climate case of a mean over time): branch-free so that it vectorises.
  static bool AddRow(const std::byte* in, Index is, std::byte* out, Index os, Index ts, Index n) {
    if constexpr (std::is_same_v<Acc, double> && std::is_floating_point_v<T>) {
      if (is == static_cast<Index>(sizeof(T)) && ts == 8 && os == 16) {
        const T* __restrict x = reinterpret_cast<const T*>(in);
        double* __restrict o = reinterpret_cast<double*>(out);
        for (Index j = 0; j < n; ++j) {
          const double v = static_cast<double>(x[j]);
          const bool ok = v == v;
          o[2 * j] += ok ? 1.0 : 0.0;
          o[2 * j + 1] += ok ? v : 0.0;
        }
        return true;
      }
    }
    return false;
  }
  // A reduced contiguous run into one tuple, in registers.
  static bool AddRun(const std::byte* in, Index is, std::byte* t, Index ts, Index n) {
    if constexpr (std::is_same_v<Acc, double> && std::is_floating_point_v<T>) {
      if (is == static_cast<Index>(sizeof(T))) {
        const T* x = reinterpret_cast<const T*>(in);
        constexpr int kL = 8;
        double c[kL] = {}, s[kL] = {};
        Index i = 0;
        for (; i + kL <= n; i += kL) {
          for (int k = 0; k < kL; ++k) {
            const double v = static_cast<double>(x[i + k]);
            const bool ok = v == v;
            c[k] += ok ? 1.0 : 0.0;
            s[k] += ok ? v : 0.0;
          }
        }
        for (; i < n; ++i) {
          const double v = static_cast<double>(x[i]);
          if (v == v) {
            c[0] += 1;
            s[0] += v;
          }
        }
        double cs = 0, ss = 0;
        for (int k = 0; k < kL; ++k) {
          cs += c[k];
          ss += s[k];
        }
        SlotRef<double>(t, 0, ts) += cs;
        SlotRef<double>(t, 1, ts) += ss;
        return true;
      }
    }
    return false;
  }
  static void Merge(std::byte* t, Index ts, const std::byte* a, Index ats) {
    SlotRef<Acc>(t, 0, ts) += SlotRef<Acc>(a, 0, ats);
    SlotRef<Acc>(t, 1, ts) += SlotRef<Acc>(a, 1, ats);
  }
  static R Final(const std::byte* t, Index ts, int, bool) {
    const double n = std::real(SlotRef<Acc>(t, 0, ts));
    if (n == 0) {
      if constexpr (kIsComplex<R>) {
        using C = typename R::value_type;
        return R(std::numeric_limits<C>::quiet_NaN(), std::numeric_limits<C>::quiet_NaN());
      } else {
        return std::numeric_limits<R>::quiet_NaN();
      }
    }
    return static_cast<R>(SlotRef<Acc>(t, 1, ts) / n);
  }
};

template <typename T, bool kSkipNan>
struct MomentsPolicy {
  using In = T;
  using R = std::conditional_t<std::is_same_v<T, float>, float, double>;
  static constexpr bool kPositions = false;
  static void Empty(std::byte* t, Index ts) {
    SlotRef<double>(t, 0, ts) = 0;
    SlotRef<double>(t, 1, ts) = 0;
    SlotRef<double>(t, 2, ts) = 0;
  }
  static void Add(std::byte* t, Index ts, In x, Index) {
    if constexpr (kSkipNan) {
      if (IsNan(x)) return;
    }
    const double v = static_cast<double>(x);
    double& n = SlotRef<double>(t, 0, ts);
    double& mean = SlotRef<double>(t, 1, ts);
    n += 1;
    const double delta = v - mean;
    mean += delta / n;
    SlotRef<double>(t, 2, ts) += delta * (v - mean);
  }
  static bool AddRow(const std::byte*, Index, std::byte*, Index, Index, Index) { return false; }
  static bool AddRun(const std::byte*, Index, std::byte*, Index, Index) { return false; }
  static void Merge(std::byte* t, Index ts, const std::byte* a, Index ats) {
    const double nb = SlotRef<double>(a, 0, ats);
    if (nb == 0) return;
    double& na = SlotRef<double>(t, 0, ts);
    double& ma = SlotRef<double>(t, 1, ts);
    double& qa = SlotRef<double>(t, 2, ts);
    const double mb = SlotRef<double>(a, 1, ats), qb = SlotRef<double>(a, 2, ats);
    if (na == 0) {
      na = nb;
      ma = mb;
      qa = qb;
      return;
    }
    const double n = na + nb;
    const double delta = mb - ma;
    ma += delta * (nb / n);
    qa += qb + delta * delta * (na * (nb / n));
    na = n;
  }
  static R Final(const std::byte* t, Index ts, int ddof, bool root) {
    const double denom = SlotRef<double>(t, 0, ts) - ddof;
    double v =
        denom > 0 ? SlotRef<double>(t, 2, ts) / denom : std::numeric_limits<double>::quiet_NaN();
    if (root) v = std::sqrt(v);
    return static_cast<R>(v);
  }
};

template <typename T, bool kMax>
struct NanExtremePolicy {
  using In = T;
  using R = T;
  static constexpr bool kPositions = false;
  static T Identity() { return MinMaxFold<T, kMax, false>::Identity(); }
  static void Empty(std::byte* t, Index ts) {
    SlotRef<T>(t, 0, ts) = 0;
    SlotRef<T>(t, 1, ts) = Identity();
  }
  static void Add(std::byte* t, Index ts, In x, Index) {
    if (x != x) return;
    SlotRef<T>(t, 0, ts) = 1;
    T& v = SlotRef<T>(t, 1, ts);
    if (kMax ? x > v : x < v) v = x;
  }
  static bool AddRow(const std::byte* in, Index is, std::byte* out, Index os, Index ts, Index n) {
    if (is == static_cast<Index>(sizeof(T)) && ts == static_cast<Index>(sizeof(T)) &&
        os == static_cast<Index>(2 * sizeof(T))) {
      const T* __restrict x = reinterpret_cast<const T*>(in);
      T* __restrict o = reinterpret_cast<T*>(out);
      for (Index j = 0; j < n; ++j) {
        const T v = x[j];
        const bool ok = v == v;
        o[2 * j] = ok ? T(1) : o[2 * j];
        o[2 * j + 1] = (ok && (kMax ? v > o[2 * j + 1] : v < o[2 * j + 1])) ? v : o[2 * j + 1];
      }
      return true;
    }
    return false;
  }
  static bool AddRun(const std::byte*, Index, std::byte*, Index, Index) { return false; }
  static void Merge(std::byte* t, Index ts, const std::byte* a, Index ats) {
    if (SlotRef<T>(a, 0, ats) == 0) return;
    SlotRef<T>(t, 0, ts) = 1;
    const T x = SlotRef<T>(a, 1, ats);
    T& v = SlotRef<T>(t, 1, ts);
    if (kMax ? x > v : x < v) v = x;
  }
  static R Final(const std::byte* t, Index ts, int, bool) {
    return SlotRef<T>(t, 0, ts) != 0 ? SlotRef<T>(t, 1, ts) : std::numeric_limits<T>::quiet_NaN();
  }
};

template <typename T>
inline T LoadBits(const std::byte* t, Index ts, int slot) {
  T v;
  if constexpr (sizeof(T) <= 8) {
    std::memcpy(static_cast<void*>(&v), t + slot * ts, sizeof(T));
  } else {
    std::byte bytes[sizeof(T)];
    std::memcpy(bytes, t + slot * ts, 8);
    std::memcpy(bytes + 8, t + (slot + 1) * ts, sizeof(T) - 8);
    std::memcpy(static_cast<void*>(&v), bytes, sizeof(T));
  }
  return v;
}

template <typename T>
inline void StoreBits(std::byte* t, Index ts, int slot, T v) {
  int64_t words[2] = {0, 0};
  std::memcpy(words, &v, sizeof(T));
  SlotRef<int64_t>(t, slot, ts) = words[0];
  if constexpr (sizeof(T) > 8) SlotRef<int64_t>(t, slot + 1, ts) = words[1];
}

// argmin/argmax with or without skipping NaN. Without, numpy's order: the
// first NaN wins over every number; ties go to the smaller position.
template <typename T, bool kMax, bool kSkipNan>
struct ArgPolicy {
  using In = T;
  using R = int64_t;
  static constexpr bool kPositions = true;
  static void Empty(std::byte* t, Index ts) {
    SlotRef<int64_t>(t, 0, ts) = -1;
    StoreBits<T>(t, ts, 1, T{});
  }
  static bool Before(T x, T y) {
    if constexpr (std::is_floating_point_v<T>) {
      if (y != y) return false;
      if (x != x) return true;
    }
    return kMax ? x > y : x < y;
  }
  static bool Same(T x, T y) {
    if constexpr (std::is_floating_point_v<T>) return x == y || (x != x && y != y);
    return x == y;
  }
  static void Offer(std::byte* t, Index ts, T x, Index p) {
    int64_t& q = SlotRef<int64_t>(t, 0, ts);
    if (q >= 0) {
      const T y = LoadBits<T>(t, ts, 1);
      if (!(Before(x, y) || (Same(x, y) && p < q))) return;
    }
    q = p;
    StoreBits<T>(t, ts, 1, x);
  }
  static void Add(std::byte* t, Index ts, In x, Index pos) {
    if constexpr (kSkipNan) {
      if (IsNan(x)) return;
    }
    Offer(t, ts, x, pos);
  }
  static bool AddRow(const std::byte*, Index, std::byte*, Index, Index, Index) { return false; }
  static bool AddRun(const std::byte*, Index, std::byte*, Index, Index) { return false; }
  static void Merge(std::byte* t, Index ts, const std::byte* a, Index ats) {
    const int64_t p = SlotRef<int64_t>(a, 0, ats);
    if (p >= 0) Offer(t, ts, LoadBits<T>(a, ats, 1), p);
  }
  static R Final(const std::byte* t, Index ts, int, bool) { return SlotRef<int64_t>(t, 0, ts); }
};

// The element at the smallest (first) or largest (last) position, optionally
// among the non-NaN ones.
template <typename T, bool kLast, bool kSkipNan>
struct PickPolicy {
  using In = T;
  using R = T;
  static constexpr bool kPositions = true;
  static void Empty(std::byte* t, Index ts) {
    SlotRef<int64_t>(t, 0, ts) = -1;
    StoreBits<T>(t, ts, 1, T{});
  }
  static void Offer(std::byte* t, Index ts, T x, Index p) {
    int64_t& q = SlotRef<int64_t>(t, 0, ts);
    if (q >= 0 && (kLast ? p < q : p > q)) return;
    q = p;
    StoreBits<T>(t, ts, 1, x);
  }
  static void Add(std::byte* t, Index ts, In x, Index pos) {
    if constexpr (kSkipNan) {
      if (IsNan(x)) return;
    }
    Offer(t, ts, x, pos);
  }
  static bool AddRow(const std::byte*, Index, std::byte*, Index, Index, Index) { return false; }
  static bool AddRun(const std::byte*, Index, std::byte*, Index, Index) { return false; }
  static void Merge(std::byte* t, Index ts, const std::byte* a, Index ats) {
    const int64_t p = SlotRef<int64_t>(a, 0, ats);
    if (p >= 0) Offer(t, ts, LoadBits<T>(a, ats, 1), p);
  }
  static R Final(const std::byte* t, Index ts, int, bool) {
    if (SlotRef<int64_t>(t, 0, ts) < 0) {
      if constexpr (std::is_floating_point_v<T>) {
        return std::numeric_limits<T>::quiet_NaN();
      } else if constexpr (kIsComplex<T>) {
        using C = typename T::value_type;
        return T(std::numeric_limits<C>::quiet_NaN(), std::numeric_limits<C>::quiet_NaN());
      } else {
        return T{};
      }
    }
    return LoadBits<T>(t, ts, 1);
  }
};

// ------------------------------------------------------------- the kernel

template <typename Policy>
class AccumulateKernel final : public KernelBase {
  using In = typename Policy::In;
  using R = typename Policy::R;

 public:
  AccumulateKernel(ReduceOp op, DType input, DType result, DType state, int width, int ddof,
                   bool root)
      : KernelBase(op, input, result, state, width), ddof_(ddof), root_(root) {}

  void Partial(const ConstArrayView& in, std::span<const int> axes,
               std::span<const Index> in_origin, std::span<const Index> array_shape,
               const ArrayView& state) const override {
    CheckPartial(in, axes, state);
    const int r = in.rank();
    Shape pos_strides(r, 0);
    Index pos0 = 0;
    if constexpr (Policy::kPositions) {
      STRATA_CHECK(static_cast<int>(in_origin.size()) == r &&
                   static_cast<int>(array_shape.size()) == r)
          << ReduceOpName(op_) << ": origin and array shape must have the input's rank " << r;
      if (static_cast<int>(axes.size()) == r) {
        Index s = 1;
        for (int i = r - 1; i >= 0; --i) {
          pos_strides[i] = s;
          pos0 += in_origin[i] * s;
          s *= array_shape[i];
        }
      } else {
        STRATA_CHECK(axes.size() == 1)
            << ReduceOpName(op_) << " reduces one axis or all axes, not " << axes.size();
        pos_strides[axes[0]] = 1;
        pos0 = in_origin[axes[0]];
      }
    }
    const Index ts = TrailingStride(state);
    ForEachTuple(state, [&](std::byte* t) { Policy::Empty(t, ts); });
    if (in.num_elements() == 0) return;
    ForEachRow(
        PartialLoop(in, axes, state, pos_strides), in.data(), state.data(), pos0,
        [ts](const std::byte* ip, std::byte* op, Index pos, Index n, Index is, Index os, Index ps) {
          if (os == 0) {
            if (Policy::AddRun(ip, is, op, ts, n)) return;
            for (Index i = 0; i < n; ++i) {
              Policy::Add(op, ts, *reinterpret_cast<const In*>(ip + i * is), pos + i * ps);
            }
          } else {
            if (Policy::AddRow(ip, is, op, os, ts, n)) return;
            for (Index j = 0; j < n; ++j) {
              Policy::Add(op + j * os, ts, *reinterpret_cast<const In*>(ip + j * is), pos + j * ps);
            }
          }
        });
  }

  void CombineImpl(const ConstArrayView& states, std::span<const int> axes,
                   const ArrayView& out, bool reset) const override {
    CheckCombine(states, axes, out);
    const Index ots = TrailingStride(out);
    const Index its = TrailingStride(states);
    if (reset) ForEachTuple(out, [&](std::byte* t) { Policy::Empty(t, ots); });
    if (states.num_elements() == 0) return;
    ForEachRowOutOfLine(
        CombineLoop(states, axes, out), states.data(), out.data(), 0,
        [&](const std::byte* ip, std::byte* op, Index, Index n, Index is, Index os, Index) {
          for (Index j = 0; j < n; ++j) Policy::Merge(op + j * os, ots, ip + j * is, its);
        });
  }

  void Finalize(const ConstArrayView& state, const ArrayView& result) const override {
    CheckFinalize(state, result);
    if (result.num_elements() == 0) return;
    const Index ts = TrailingStride(state);
    const int ddof = ddof_;
    const bool root = root_;
    ForEachRowOutOfLine(
        FinalizeLoop(state, result), state.data(), result.data(), 0,
        [&](const std::byte* ip, std::byte* op, Index, Index n, Index is, Index os, Index) {
          for (Index j = 0; j < n; ++j) {
            const R v = Policy::Final(ip + j * is, ts, ddof, root);
            std::memcpy(op + j * os, &v, sizeof(R));
          }
        });
  }

  void GroupPartialImpl(const ConstArrayView& in, int axis, std::span<const int64_t> labels,
                        Index num_groups, const ArrayView& state) const override {
    GroupPartialAt(in, axis, labels, num_groups, state, 0);
  }

  void GroupPartialAt(const ConstArrayView& in, int axis, std::span<const int64_t> labels,
                      Index num_groups, const ArrayView& state, Index axis_origin) const override {
    const Index ts = TrailingStride(state);
    ForEachTuple(state, [&](std::byte* t) { Policy::Empty(t, ts); });
    GroupSliceLoop s = MakeGroupSliceLoop(in, axis, state);
    if (s.num_elements == 0) return;
    const Index n = in.shape()[axis];
    for (Index i = 0; i < n; ++i) {
      const int64_t g = labels[i];
      if (g < 0) continue;
      STRATA_CHECK(g < num_groups)
          << "label " << g << " at " << i << " with " << num_groups << " groups";
      const Index pos = axis_origin + i;
      ForEachRow(s.loop, in.data() + i * s.in_axis_stride, state.data() + g * s.state_axis_stride,
                 0,
                 [ts, pos](const std::byte* ip, std::byte* op, Index, Index rn, Index is, Index os,
                           Index) {
                   if (os != 0 && Policy::AddRow(ip, is, op, os, ts, rn)) return;
                   for (Index j = 0; j < rn; ++j) {
                     Policy::Add(op + j * os, ts, *reinterpret_cast<const In*>(ip + j * is), pos);
                   }
                 });
    }
  }

 private:
  int ddof_;
  bool root_;
};

// A kernel of `result` dtype (Policy::R is its C++ type, uint8_t for bool).
template <typename Policy>
std::shared_ptr<const ReductionKernel> Make(ReduceOp op, DType input, DType result, DType state,
                                            int width, int ddof = 0, bool root = false) {
  return std::make_shared<AccumulateKernel<Policy>>(op, input, result, state, width, ddof, root);
}

// Slots of a PickPolicy / ArgPolicy tuple for T: a position and T's bytes.
template <typename T>
constexpr int BitsWidth() {
  return 1 + static_cast<int>((sizeof(T) + 7) / 8);
}

}  // namespace

std::shared_ptr<const ReductionKernel> MakeNanKernel(ReduceOp op, DType input, int ddof) {
  return VisitDType(input, [&](auto tag) -> std::shared_ptr<const ReductionKernel> {
    using T = typename decltype(tag)::type;
    constexpr bool kFloat = std::is_floating_point_v<T>;
    constexpr bool kComplex = kIsComplex<T>;
    if constexpr (!kFloat && !kComplex) {
      STRATA_CHECK(false) << ReduceOpName(op) << " of " << input.name()
                          << " is the plain reduction (MakeReductionKernel maps it)";
      return nullptr;
    } else {
      using Acc = std::conditional_t<kComplex, std::complex<double>, double>;
      const DType acc = DTypeOf<Acc>();
      const DType i64 = DTypeId::kInt64;
      switch (op) {
        case ReduceOp::kNanSum:
          return std::make_shared<FoldKernel<NanSumFold<T, Acc>, T, false, true>>(op, input, input,
                                                                                  acc, 1);
        case ReduceOp::kNanProd:
          return std::make_shared<FoldKernel<NanProdFold<T, Acc>, T, false, false>>(op, input,
                                                                                    input, acc, 1);
        case ReduceOp::kNanMean:
          return Make<NanMeanPolicy<T, Acc>>(op, input, input, acc, 2);
        default:
          break;
      }
      if constexpr (kFloat) {
        switch (op) {
          case ReduceOp::kNanVar:
          case ReduceOp::kNanStd:
            return Make<MomentsPolicy<T, true>>(op, input, input, DTypeId::kFloat64, 3, ddof,
                                                op == ReduceOp::kNanStd);
          case ReduceOp::kNanMin:
            return Make<NanExtremePolicy<T, false>>(op, input, input, input, 2);
          case ReduceOp::kNanMax:
            return Make<NanExtremePolicy<T, true>>(op, input, input, input, 2);
          case ReduceOp::kNanArgmin:
            return Make<ArgPolicy<T, false, true>>(op, input, i64, i64, 2);
          case ReduceOp::kNanArgmax:
            return Make<ArgPolicy<T, true, true>>(op, input, i64, i64, 2);
          default:
            break;
        }
      }
      STRATA_CHECK(false) << "not a NaN-aware op for " << input.name() << ": " << ReduceOpName(op);
      return nullptr;
    }
  });
}

std::shared_ptr<const ReductionKernel> MakePositionalKernel(ReduceOp op, DType input, int ddof) {
  return VisitDType(input, [&](auto tag) -> std::shared_ptr<const ReductionKernel> {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    constexpr bool kFloat = std::is_floating_point_v<T> || kIsComplex<T>;
    const DType i64 = DTypeId::kInt64;
    switch (op) {
      case ReduceOp::kFirst:
        return Make<PickPolicy<C, false, false>>(op, input, input, i64, BitsWidth<T>());
      case ReduceOp::kLast:
        return Make<PickPolicy<C, true, false>>(op, input, input, i64, BitsWidth<T>());
      case ReduceOp::kNanFirst:
        return Make<PickPolicy<C, false, kFloat>>(op, input, input, i64, BitsWidth<T>());
      case ReduceOp::kNanLast:
        return Make<PickPolicy<C, true, kFloat>>(op, input, input, i64, BitsWidth<T>());
      default:
        break;
    }
    if constexpr (!kIsComplex<T>) {
      switch (op) {
        case ReduceOp::kArgmin:
          return Make<ArgPolicy<C, false, false>>(op, input, i64, i64, 2);
        case ReduceOp::kArgmax:
          return Make<ArgPolicy<C, true, false>>(op, input, i64, i64, 2);
        case ReduceOp::kVar:
        case ReduceOp::kStd:
          return Make<MomentsPolicy<C, false>>(op, input,
                                               DTypeOf<typename MomentsPolicy<C, false>::R>(),
                                               DTypeId::kFloat64, 3, ddof, op == ReduceOp::kStd);
        default:
          break;
      }
    }
    STRATA_CHECK(false) << "no positional kernel for " << ReduceOpName(op) << " of "
                        << input.name();
    return nullptr;
  });
}

}  // namespace strata::internal_reduction
