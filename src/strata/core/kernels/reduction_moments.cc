// var and std (real dtypes and bool; float32 gives float32, the rest float64).
//
// State: 3 float64 slots (count, mean, M2), M2 being the sum of squared
// deviations from the mean. States merge with Chan, Golub and LeVeque's
// parallel formula
//   delta = mean_b - mean_a,  n = n_a + n_b,
//   mean = mean_a + delta * n_b / n,  M2 = M2_a + M2_b + delta^2 n_a n_b / n,
// which never subtracts large sums from each other, so the result does not
// depend on the chunking beyond rounding and stays accurate for data far from
// zero (1e9 + small noise).
//
// Within a chunk, a reduced contiguous run is taken in blocks of kMomentsBlock
// elements: a two-pass mean and M2 per block (the second pass reads the block
// from L1), merged into the running state with the same formula. A kept
// innermost axis (reducing over outer axes) uses Welford's update, which is the
// same formula with n_b = 1, vectorised across the row.
//
// Finalize: M2 / (count - ddof), NaN when count - ddof <= 0 (the Array API's
// rule); std is its square root.
#include "strata/core/kernels/reduction_internal.h"

namespace strata::internal_reduction {
namespace {

struct Moments {
  double n = 0;
  double mean = 0;
  double m2 = 0;
};

inline void MergeMoments(Moments& a, const Moments& b) {
  if (b.n == 0) return;
  if (a.n == 0) {
    a = b;
    return;
  }
  const double n = a.n + b.n;
  const double delta = b.mean - a.mean;
  a.mean += delta * (b.n / n);
  a.m2 += b.m2 + delta * delta * (a.n * (b.n / n));
  a.n = n;
}

inline Moments LoadMoments(const std::byte* t, Index ts) {
  return {SlotRef<double>(t, 0, ts), SlotRef<double>(t, 1, ts), SlotRef<double>(t, 2, ts)};
}
inline void StoreMoments(std::byte* t, Index ts, const Moments& m) {
  SlotRef<double>(t, 0, ts) = m.n;
  SlotRef<double>(t, 1, ts) = m.mean;
  SlotRef<double>(t, 2, ts) = m.m2;
}

constexpr Index kMomentsBlock = 1024;

// Two-pass moments of x[0..m), m >= 1. The second pass also sums the
// deviations, which corrects the mean's rounding (the "corrected two-pass
// algorithm" of Chan, Golub and LeVeque). Explicit vectors: GCC does not pack
// the second pass's two accumulators on its own.
inline Moments BlockMoments(const double* x, Index m) {
  using V = Vec16<double>::type;
  constexpr int kW = 2, kU = 4;
  V s[kU] = {};
  Index i = 0;
  for (; i + kU * kW <= m; i += kU * kW) {
    for (int u = 0; u < kU; ++u) {
      V v;
      std::memcpy(&v, x + i + u * kW, sizeof(V));
      s[u] += v;
    }
  }
  double sum = 0;
  for (int u = 0; u < kU; ++u) sum += s[u][0] + s[u][1];
  for (Index j = i; j < m; ++j) sum += x[j];
  const double dm = static_cast<double>(m);
  const double mean = sum / dm;
  V d[kU] = {}, q[kU] = {};
  for (i = 0; i + kU * kW <= m; i += kU * kW) {
    for (int u = 0; u < kU; ++u) {
      V v;
      std::memcpy(&v, x + i + u * kW, sizeof(V));
      v -= mean;
      d[u] += v;
      q[u] += v * v;
    }
  }
  double dsum = 0, qsum = 0;
  for (int u = 0; u < kU; ++u) {
    dsum += d[u][0] + d[u][1];
    qsum += q[u][0] + q[u][1];
  }
  for (Index j = i; j < m; ++j) {
    const double dx = x[j] - mean;
    dsum += dx;
    qsum += dx * dx;
  }
  // Rounding can take M2 a hair below zero; clamp it, but keep a NaN (a NaN
  // element makes the variance NaN, as in numpy; std::max would drop it).
  const double m2 = qsum - dsum * dsum / dm;
  return {dm, mean + dsum / dm, m2 < 0 ? 0.0 : m2};
}

// Moments of a run, block by block: blocks of other types or strides are
// first converted into a double buffer that stays in L1.
template <typename T>
Moments RunMoments(const std::byte* p, Index n, Index stride) {
  Moments total;
  alignas(16) double buf[kMomentsBlock];
  for (Index b = 0; b < n; b += kMomentsBlock) {
    const Index m = std::min(kMomentsBlock, n - b);
    const double* xb = buf;
    if (std::is_same_v<T, double> && stride == static_cast<Index>(sizeof(T))) {
      xb = reinterpret_cast<const double*>(p) + b;
    } else if (stride == static_cast<Index>(sizeof(T))) {
      const T* x = reinterpret_cast<const T*>(p) + b;
      for (Index i = 0; i < m; ++i) buf[i] = static_cast<double>(x[i]);
    } else {
      const std::byte* q = p + b * stride;
      for (Index i = 0; i < m; ++i) {
        buf[i] = static_cast<double>(*reinterpret_cast<const T*>(q + i * stride));
      }
    }
    MergeMoments(total, BlockMoments(xb, m));
  }
  return total;
}

// Welford's update of the n tuples at out (stride os) with one element each.
// All tuples of a row have seen the same number of elements (ForEachRow visits
// a row's tuples together), so only the row's first tuple keeps the count
// while Partial runs; Partial sets every count at the end. That saves a store
// per element.
template <typename T>
void RowMoments(const std::byte* in, Index is, std::byte* out, Index os, Index ts, Index n) {
  double& row_count = SlotRef<double>(out, 0, ts);
  const double count = row_count + 1;
  const double inv = 1.0 / count;
  row_count = count;
  if (is == static_cast<Index>(sizeof(T)) && ts == 8 && os == 24) {
    const T* __restrict x = reinterpret_cast<const T*>(in);
    double* __restrict o = reinterpret_cast<double*>(out);
    for (Index j = 0; j < n; ++j) {
      const double v = static_cast<double>(x[j]);
      const double delta = v - o[3 * j + 1];
      const double mean = o[3 * j + 1] + delta * inv;
      o[3 * j + 1] = mean;
      o[3 * j + 2] += delta * (v - mean);
    }
    return;
  }
  for (Index j = 0; j < n; ++j) {
    std::byte* t = out + j * os;
    const double v = static_cast<double>(*reinterpret_cast<const T*>(in + j * is));
    double& mean = SlotRef<double>(t, 1, ts);
    const double delta = v - mean;
    mean += delta * inv;
    SlotRef<double>(t, 2, ts) += delta * (v - mean);
  }
}

template <typename T, typename R>
class MomentsKernel final : public KernelBase {
 public:
  MomentsKernel(ReduceOp op, DType input, DType result, int ddof)
      : KernelBase(op, input, result, DTypeId::kFloat64, 3), ddof_(ddof) {}

  void Partial(const ConstArrayView& in, std::span<const int> axes,
               std::span<const Index> in_origin, std::span<const Index> array_shape,
               const ArrayView& state) const override {
    CheckPartial(in, axes, state);
    const Index ts = TrailingStride(state);
    ForEachTuple(state, [&](std::byte* t) { StoreMoments(t, ts, Moments{}); });
    if (in.num_elements() == 0) return;
    ForEachRow(PartialLoop(in, axes, state), in.data(), state.data(), 0,
               [ts](const std::byte* ip, std::byte* op, Index, Index n, Index is, Index os, Index) {
                 if (os == 0) {
                   Moments m = LoadMoments(op, ts);
                   MergeMoments(m, RunMoments<T>(ip, n, is));
                   StoreMoments(op, ts, m);
                 } else {
                   RowMoments<T>(ip, is, op, os, ts, n);
                 }
               });
    // Every tuple has seen the same elements; RowMoments counted only the
    // first of each row.
    const double count = static_cast<double>(ReducedCount(in.shape(), axes));
    ForEachTuple(state, [&](std::byte* t) { SlotRef<double>(t, 0, ts) = count; });
  }

  void CombineImpl(const ConstArrayView& states, std::span<const int> axes,
                   const ArrayView& out, bool reset) const override {
    CheckCombine(states, axes, out);
    const Index ots = TrailingStride(out);
    const Index its = TrailingStride(states);
    if (reset) ForEachTuple(out, [&](std::byte* t) { StoreMoments(t, ots, Moments{}); });
    if (states.num_elements() == 0) return;
    ForEachRowOutOfLine(
        CombineLoop(states, axes, out), states.data(), out.data(), 0,
        [&](const std::byte* ip, std::byte* op, Index, Index n, Index is, Index os, Index) {
          for (Index j = 0; j < n; ++j) {
            std::byte* o = op + j * os;
            Moments m = LoadMoments(o, ots);
            MergeMoments(m, LoadMoments(ip + j * is, its));
            StoreMoments(o, ots, m);
          }
        });
  }

  void Finalize(const ConstArrayView& state, const ArrayView& result) const override {
    CheckFinalize(state, result);
    if (result.num_elements() == 0) return;
    const Index ts = TrailingStride(state);
    const bool is_std = op_ == ReduceOp::kStd;
    const double ddof = ddof_;
    ForEachRowOutOfLine(
        FinalizeLoop(state, result), state.data(), result.data(), 0,
        [&](const std::byte* ip, std::byte* op, Index, Index n, Index is, Index os, Index) {
          for (Index j = 0; j < n; ++j) {
            const Moments m = LoadMoments(ip + j * is, ts);
            const double denom = m.n - ddof;
            double v = denom > 0 ? m.m2 / denom : std::numeric_limits<double>::quiet_NaN();
            if (is_std) v = std::sqrt(v);
            *reinterpret_cast<R*>(op + j * os) = static_cast<R>(v);
          }
        });
  }

 private:
  int ddof_;
};

}  // namespace

std::shared_ptr<const ReductionKernel> MakeMomentsKernel(ReduceOp op, DType input, int ddof) {
  STRATA_CHECK(op == ReduceOp::kVar || op == ReduceOp::kStd) << ReduceOpName(op);
  return VisitDType(input, [&](auto tag) -> std::shared_ptr<const ReductionKernel> {
    using T = typename decltype(tag)::type;
    if constexpr (kIsComplex<T>) {
      STRATA_CHECK(false) << "var/std of complex";
      return nullptr;
    } else {
      using R = std::conditional_t<std::is_same_v<T, float>, float, double>;
      return std::make_shared<MomentsKernel<ComputeType<T>, R>>(op, input, DTypeOf<R>(), ddof);
    }
  });
}

}  // namespace strata::internal_reduction
