// Private machinery of the reduction kernels (reduction*.cc).
//
// Every kernel walks its input the same way: MakeReduceLoop normalises the
// iteration space (drops extent-1 axes, orders axes so that the innermost loop
// walks memory in order, merges axes that step as one), and ForEachRow calls a
// row function for each innermost run. The row function sees one of two cases:
//   - out_stride == 0: the run is reduced into one state tuple (a tight,
//     vectorisable loop with several independent accumulators);
//   - out_stride != 0: the run is kept, each element is folded into its own
//     tuple (out[j] = merge(out[j], in[j]): a vectorisable elementwise loop).
// When the innermost axis is kept and reduced axes lie outside it, ForEachRow
// tiles it so that the output tile stays in cache while the reduced rows
// stream through.
//
// Kernels hold their state tuples in place in the caller's state array; slot
// k of a tuple at byte address t is at t + k * trailing_stride.
//
// Thread-safety: pure functions and immutable kernel objects.
#ifndef STRATA_CORE_KERNELS_REDUCTION_INTERNAL_H_
#define STRATA_CORE_KERNELS_REDUCTION_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "strata/core/dtype_dispatch.h"
#include "strata/core/kernels/reduction.h"

namespace strata::internal_reduction {

// ---------------------------------------------------------------------------
// Iteration space.

// A reduction's iteration space after normalisation: extent-1 axes dropped,
// the rest ordered from the largest |input stride| to the smallest, and
// neighbouring axes merged when input, output and positions all step through
// them as one.
struct ReduceLoop {
  Shape shape;
  Shape in_strides;   // bytes
  Shape out_strides;  // bytes; 0 along reduced axes
  Shape pos_strides;  // element positions (argmin/argmax); 0 when unused
  int rank() const { return static_cast<int>(shape.size()); }
};

// `pos_strides` may be empty (all zero). The caller skips empty iteration
// spaces (an extent of 0).
ReduceLoop MakeReduceLoop(std::span<const Index> shape, std::span<const Index> in_strides,
                          std::span<const Index> out_strides,
                          std::span<const Index> pos_strides = {});

// The loop of a Partial: `in` against the state's tuples (the state's strides
// on kept axes, 0 on `axes`).
ReduceLoop PartialLoop(const ConstArrayView& in, std::span<const int> axes, const ArrayView& state,
                       std::span<const Index> pos_strides = {});
// The loop of a Combine: each tuple of `states` against its tuple in `out`.
ReduceLoop CombineLoop(const ConstArrayView& states, std::span<const int> axes,
                       const ArrayView& out);
// The loop of a Finalize: each tuple of `state` against its result element.
ReduceLoop FinalizeLoop(const ConstArrayView& state, const ArrayView& result);
// All tuples of a state array (in and out both walk the tuples).
ReduceLoop TupleLoop(const ArrayView& state);

// Byte distance between consecutive slots of a state tuple.
inline Index TrailingStride(const StridedView<const std::byte>& state) {
  return state.byte_strides().back();
}
inline Index TrailingStride(const ArrayView& state) { return state.byte_strides().back(); }

// Output tiles of a kept innermost axis hold at most this many bytes when
// reduced axes lie outside it: small enough to stay in L2 while the reduced
// rows stream through, large enough that each row segment read is a long
// sequential stream (32 KiB tiles halved the throughput of 80 KB rows).
inline constexpr Index kOutTileBytes = 256 * 1024;

// Calls row(in, out, pos, n, in_stride, out_stride, pos_stride) for every
// innermost run of `loop` starting at `in`, `out` and position `pos`.
template <typename RowFn>
void ForEachRow(const ReduceLoop& loop, const std::byte* in, std::byte* out, Index pos,
                RowFn&& row) {
  const int r = loop.rank();
  if (r == 0) {
    row(in, out, pos, Index{1}, Index{0}, Index{0}, Index{0});
    return;
  }
  const Index n0 = loop.shape[r - 1];
  const Index is0 = loop.in_strides[r - 1];
  const Index os0 = loop.out_strides[r - 1];
  const Index ps0 = loop.pos_strides[r - 1];
  Index tile = n0;
  if (os0 != 0) {
    bool reduced_outside = false;
    for (int i = 0; i < r - 1; ++i) reduced_outside |= loop.out_strides[i] == 0;
    if (reduced_outside) tile = std::max<Index>(64, kOutTileBytes / std::abs(os0));
  }
  if (r == 1) {
    for (Index t = 0; t < n0; t += tile) {
      row(in + t * is0, out + t * os0, pos + t * ps0, std::min(tile, n0 - t), is0, os0, ps0);
    }
    return;
  }
  const Index n1 = loop.shape[r - 2];
  const Index is1 = loop.in_strides[r - 2];
  const Index os1 = loop.out_strides[r - 2];
  const Index ps1 = loop.pos_strides[r - 2];
  const int outer = r - 2;
  Shape idx(outer);
  for (Index t = 0; t < n0; t += tile) {
    const Index nt = std::min(tile, n0 - t);
    // Pointers move by offsets from `in`/`out` rather than stepping pointers
    // past the ends of the arrays.
    Index ioff = t * is0, ooff = t * os0, pp = pos + t * ps0;
    std::fill(idx.begin(), idx.end(), 0);
    while (true) {
      for (Index i = 0; i < n1; ++i) {
        row(in + (ioff + i * is1), out + (ooff + i * os1), pp + i * ps1, nt, is0, os0, ps0);
      }
      int k = outer - 1;
      for (; k >= 0; --k) {
        ioff += loop.in_strides[k];
        ooff += loop.out_strides[k];
        pp += loop.pos_strides[k];
        if (++idx[k] < loop.shape[k]) break;
        ioff -= loop.in_strides[k] * loop.shape[k];
        ooff -= loop.out_strides[k] * loop.shape[k];
        pp -= loop.pos_strides[k] * loop.shape[k];
        idx[k] = 0;
      }
      if (k < 0) break;
    }
  }
}

// ForEachRow with the loop nest compiled once (in reduction.cc) and `row`
// called through a function pointer once per run. For loops over states
// (Combine, Finalize, initialisation): their cost is in the rows, and one
// inlined loop nest per lambda per kernel would cost a third of the compile
// time.
using RowCallback = void (*)(void* ctx, const std::byte* in, std::byte* out, Index pos, Index n,
                             Index in_stride, Index out_stride, Index pos_stride);
void ForEachRowIndirect(const ReduceLoop& loop, const std::byte* in, std::byte* out, Index pos,
                        RowCallback row, void* ctx);

template <typename RowFn>
void ForEachRowOutOfLine(const ReduceLoop& loop, const std::byte* in, std::byte* out, Index pos,
                         RowFn&& row) {
  using F = std::remove_reference_t<RowFn>;
  ForEachRowIndirect(
      loop, in, out, pos,
      [](void* ctx, const std::byte* i, std::byte* o, Index p, Index n, Index is, Index os,
         Index ps) { (*static_cast<F*>(ctx))(i, o, p, n, is, os, ps); },
      const_cast<void*>(static_cast<const void*>(&row)));
}

// Calls fn(tuple) for every state tuple of `state` (trailing axis excluded).
template <typename Fn>
void ForEachTuple(const ArrayView& state, Fn&& fn) {
  if (state.num_elements() == 0) return;
  ForEachRowOutOfLine(
      TupleLoop(state), state.data(), state.data(), 0,
      [&fn](const std::byte*, std::byte* out, Index, Index n, Index, Index os, Index) {
        for (Index j = 0; j < n; ++j) fn(out + j * os);
      });
}

// ---------------------------------------------------------------------------
// Element access.

// The type a kernel computes with for input type T: bools are read as bytes
// (nonzero is true) so that a stray byte value is not undefined behaviour.
template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

template <typename T>
inline T& SlotRef(std::byte* tuple, int slot, Index trailing_stride) {
  return *reinterpret_cast<T*>(tuple + slot * trailing_stride);
}
template <typename T>
inline const T& SlotRef(const std::byte* tuple, int slot, Index trailing_stride) {
  return *reinterpret_cast<const T*>(tuple + slot * trailing_stride);
}

template <typename T>
inline bool IsNan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else if constexpr (kIsComplex<T>) {
    return x.real() != x.real() || x.imag() != x.imag();
  } else {
    return false;
  }
}

// numpy's complex product (no C99 Annex G NaN/inf recovery, and no libgcc call).
template <typename C>
inline C ComplexMul(C a, C b) {
  return C(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
}

// ---------------------------------------------------------------------------
// Vectors.

// 16-byte vectors of T (GCC/Clang vector extensions; SSE2 on x86-64, NEON on
// arm64). GCC does not vectorise a NaN-aware min/max from scalar code.
template <typename T>
struct Vec16 {
  typedef T type __attribute__((vector_size(16)));
};

// The min (kMax false) or max of x[0..m) merged with `init`; for floats NaN
// if any element is NaN. Four independent vector accumulators.
template <typename T, bool kMax>
T VectorExtreme(const T* x, Index m, T init) {
  using V = typename Vec16<T>::type;
  constexpr int kW = 16 / sizeof(T);
  constexpr bool kFloat = std::is_floating_point_v<T>;
  auto better = [](auto a, auto b) {  // a better than b (NaN never is)
    if constexpr (kMax) {
      return a > b;
    } else {
      return a < b;
    }
  };
  V e[4];
  decltype(e[0] != e[0]) nan[4];
  for (int u = 0; u < 4; ++u) {
    for (int k = 0; k < kW; ++k) e[u][k] = init;
    nan[u] = e[u] != e[u];
  }
  Index i = 0;
  for (; i + 4 * kW <= m; i += 4 * kW) {
    for (int u = 0; u < 4; ++u) {
      V v;
      std::memcpy(&v, x + i + u * kW, sizeof(V));
      e[u] = better(v, e[u]) ? v : e[u];
      if constexpr (kFloat) nan[u] |= v != v;
    }
  }
  bool any_nan = false;
  T r = init;
  for (int u = 0; u < 4; ++u) {
    for (int k = 0; k < kW; ++k) {
      r = better(e[u][k], r) ? e[u][k] : r;
      any_nan |= nan[u][k] != 0;
    }
  }
  for (; i < m; ++i) {
    r = better(x[i], r) ? x[i] : r;
    if constexpr (kFloat) any_nan |= x[i] != x[i];
  }
  if constexpr (kFloat) {
    if (any_nan) return std::numeric_limits<T>::quiet_NaN();
  }
  return r;
}

// ---------------------------------------------------------------------------
// Folds: a state slot of type Acc merged with an associative, commutative op.
//
//   struct Fold {
//     using In = ...;   // compute type of the input
//     using Acc = ...;  // state slot type
//     static Acc Identity();
//     static Acc Lift(In x);
//     static Acc Merge(Acc a, Acc b);
//     // Optional: a faster fold of a contiguous block of m >= 1 inputs.
//     static Acc Run(const In* x, Index m);
//     // Optional: true when merging more inputs cannot change `a` (any once
//     // true), so that a run stops early.
//     static bool Decided(Acc a);
//   };

inline constexpr int kFoldLanes = 8;
inline constexpr Index kFoldBlock = 4096;

// Folds a run of n inputs. Contiguous runs use kFoldLanes independent
// accumulators (vectorisable without reassociating a single chain) over blocks
// of kFoldBlock, whose results are added to the total: floating-point sums
// then carry an error of about (n / kFoldBlock + kFoldBlock / kFoldLanes) ulps
// instead of n.
template <typename Fold>
typename Fold::Acc FoldRun(const std::byte* p, Index n, Index stride) {
  using In = typename Fold::In;
  using Acc = typename Fold::Acc;
  Acc total = Fold::Identity();
  if (stride == static_cast<Index>(sizeof(In))) {
    const In* x = reinterpret_cast<const In*>(p);
    for (Index b = 0; b < n; b += kFoldBlock) {
      const Index m = std::min(kFoldBlock, n - b);
      const In* xb = x + b;
      if constexpr (requires { Fold::Decided(total); }) {
        if (Fold::Decided(total)) return total;
      }
      if constexpr (requires { Fold::Run(xb, m); }) {
        total = Fold::Merge(total, Fold::Run(xb, m));
      } else {
        Acc acc[kFoldLanes];
        for (int k = 0; k < kFoldLanes; ++k) acc[k] = Fold::Identity();
        Index i = 0;
        for (; i + kFoldLanes <= m; i += kFoldLanes) {
          for (int k = 0; k < kFoldLanes; ++k) {
            acc[k] = Fold::Merge(acc[k], Fold::Lift(xb[i + k]));
          }
        }
        for (; i < m; ++i) acc[0] = Fold::Merge(acc[0], Fold::Lift(xb[i]));
        for (int w = kFoldLanes / 2; w > 0; w /= 2) {
          for (int k = 0; k < w; ++k) acc[k] = Fold::Merge(acc[k], acc[k + w]);
        }
        total = Fold::Merge(total, acc[0]);
      }
    }
  } else {
    for (Index i = 0; i < n; ++i) {
      total = Fold::Merge(total, Fold::Lift(*reinterpret_cast<const In*>(p + i * stride)));
    }
  }
  return total;
}

// out[j] = Merge(out[j], Lift(in[j])) for j < n.
template <typename Fold>
void FoldRow(const std::byte* in, Index in_stride, std::byte* out, Index out_stride, Index n) {
  using In = typename Fold::In;
  using Acc = typename Fold::Acc;
  constexpr Index kIn = sizeof(In), kAcc = sizeof(Acc);
  if (in_stride == kIn && out_stride == kAcc) {
    const In* __restrict x = reinterpret_cast<const In*>(in);
    Acc* __restrict o = reinterpret_cast<Acc*>(out);
    for (Index j = 0; j < n; ++j) o[j] = Fold::Merge(o[j], Fold::Lift(x[j]));
  } else if (in_stride == kIn && out_stride == 2 * kAcc) {
    // Interleaved two-slot tuples (mean's (count, sum), min/max's (flag, value)).
    const In* __restrict x = reinterpret_cast<const In*>(in);
    Acc* __restrict o = reinterpret_cast<Acc*>(out);
    for (Index j = 0; j < n; ++j) o[2 * j] = Fold::Merge(o[2 * j], Fold::Lift(x[j]));
  } else {
    for (Index j = 0; j < n; ++j) {
      Acc& o = *reinterpret_cast<Acc*>(out + j * out_stride);
      o = Fold::Merge(o, Fold::Lift(*reinterpret_cast<const In*>(in + j * in_stride)));
    }
  }
}

// Folds the run into the slot at `out` (out_stride == 0) or each element into
// its own slot.
template <typename Fold>
inline void FoldInto(const std::byte* in, Index in_stride, std::byte* out, Index out_stride,
                     Index n) {
  if (out_stride == 0) {
    using Acc = typename Fold::Acc;
    Acc& o = *reinterpret_cast<Acc*>(out);
    o = Fold::Merge(o, FoldRun<Fold>(in, n, in_stride));
  } else {
    FoldRow<Fold>(in, in_stride, out, out_stride, n);
  }
}

// min (kMax false) or max of T with NaN propagating (np.min). kBool: T is a
// bool read as uint8_t, whose identity for min is 1, not 255.
template <typename T, bool kMax, bool kBool>
struct MinMaxFold {
  using In = T;
  using Acc = T;
  static T Identity() {
    if constexpr (kBool) {
      return kMax ? 0 : 1;
    } else if constexpr (std::is_floating_point_v<T>) {
      return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    } else {
      return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    }
  }
  static T Lift(T x) { return x; }
  static T Run(const T* x, Index m) { return VectorExtreme<T, kMax>(x, m, Identity()); }
  static T Merge(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return ((kMax ? b > a : b < a) || b != b) ? b : a;
    } else {
      return (kMax ? b > a : b < a) ? b : a;
    }
  }
};

// ---------------------------------------------------------------------------
// Group-by.

// Slices along the group axis with at most this many elements are scattered
// through a precomputed offset list instead of a ForEachRow per slice.
inline constexpr Index kSmallGroupSlice = 64;

struct GroupSliceLoop {
  ReduceLoop loop;     // one slice of `in` against one group's tuples
  Index num_elements;  // per slice
  Index in_axis_stride;
  Index state_axis_stride;
  // For small slices: byte offsets of each element in `in` and of its tuple.
  std::vector<Index> in_offsets, state_offsets;
};
GroupSliceLoop MakeGroupSliceLoop(const ConstArrayView& in, int axis, const ArrayView& state);

// Scatters the elements of `in` along `axis` into group tuples of `state`,
// skipping negative labels (labels are CHECKed to be < num_groups). Small
// slices (one position along `axis`) go element by element through
// update(tuple, element); large ones row by row through
// update_row(in, in_stride, tuples, tuple_stride, n), which folds each element
// into its own tuple. `state` must already hold empty tuples.
template <typename UpdateFn, typename UpdateRowFn>
void GroupScatter(const ConstArrayView& in, int axis, std::span<const int64_t> labels,
                  Index num_groups, const ArrayView& state, UpdateFn&& update,
                  UpdateRowFn&& update_row) {
  GroupSliceLoop s = MakeGroupSliceLoop(in, axis, state);
  if (s.num_elements == 0) return;
  const Index n = in.shape()[axis];
  auto group_of = [&](Index i) {
    const int64_t g = labels[i];
    STRATA_CHECK(g < num_groups) << "label " << g << " at " << i << " with " << num_groups
                                 << " groups";
    return g;
  };
  if (s.in_offsets.size() == 1) {  // one element per position (a 1-d array)
    const std::byte* ip = in.data() + s.in_offsets[0];
    std::byte* op = state.data() + s.state_offsets[0];
    for (Index i = 0; i < n; ++i) {
      const int64_t g = group_of(i);
      if (g >= 0) update(op + g * s.state_axis_stride, ip + i * s.in_axis_stride);
    }
  } else if (!s.in_offsets.empty()) {
    const size_t m = s.in_offsets.size();
    for (Index i = 0; i < n; ++i) {
      const int64_t g = group_of(i);
      if (g < 0) continue;
      const std::byte* ip = in.data() + i * s.in_axis_stride;
      std::byte* op = state.data() + g * s.state_axis_stride;
      for (size_t k = 0; k < m; ++k) update(op + s.state_offsets[k], ip + s.in_offsets[k]);
    }
  } else {
    for (Index i = 0; i < n; ++i) {
      const int64_t g = group_of(i);
      if (g < 0) continue;
      ForEachRow(s.loop, in.data() + i * s.in_axis_stride, state.data() + g * s.state_axis_stride,
                 0,
                 [&](const std::byte* in_row, std::byte* out_row, Index, Index rn, Index is,
                     Index os, Index) { update_row(in_row, is, out_row, os, rn); });
    }
  }
}

// ---------------------------------------------------------------------------
// Kernel base.

// Sets the ReductionKernel fields and checks the arguments of each call.
// Group-by capable kernels override GroupPartialImpl.
class KernelBase : public ReductionKernel {
 public:
  KernelBase(ReduceOp op, DType input, DType result, DType state, int width);

  // The body of GroupPartial (arguments already checked).
  virtual void GroupPartialImpl(const ConstArrayView& in, int axis, std::span<const int64_t> labels,
                                Index num_groups, const ArrayView& state) const;
  // Same, for kernels that record positions along `axis` (first element at
  // `axis_origin`); the others ignore it.
  virtual void GroupPartialAt(const ConstArrayView& in, int axis, std::span<const int64_t> labels,
                              Index num_groups, const ArrayView& state, Index axis_origin) const {
    GroupPartialImpl(in, axis, labels, num_groups, state);
  }

 protected:
  void CheckPartial(const ConstArrayView& in, std::span<const int> axes,
                    const ArrayView& state) const;
  void CheckCombine(const ConstArrayView& states, std::span<const int> axes,
                    const ArrayView& out) const;
  void CheckFinalize(const ConstArrayView& state, const ArrayView& result) const;
};

// Product of the extents of `shape` along `axes`: the elements per state tuple.
Index ReducedCount(std::span<const Index> shape, std::span<const int> axes);

// A kernel whose state tuple is one Fold slot, preceded by a count slot of
// the same type when kHasCount (mean's (count, sum)). R is the C++ type of the
// result; Finalize gives static_cast<R>(acc), or acc / count for mean.
//
// A Fold may declare `static constexpr bool kCountsAll = true` when Lift is
// always 1 (count of a non-float dtype): Partial then writes the element count
// without reading the input. Group-by is compiled in only when kGroupBy (it
// costs as much compile time as the rest of the kernel).
template <typename Fold, typename R, bool kHasCount, bool kGroupBy>
class FoldKernel final : public KernelBase {
 public:
  using In = typename Fold::In;
  using Acc = typename Fold::Acc;
  static constexpr int kAccSlot = kHasCount ? 1 : 0;

  using KernelBase::KernelBase;

  // Without a count slot: Finalize gives acc / count, every state covering
  // `count` elements in the end (mean over whole axes). Before sharing.
  void DivideResultsBy(Index count) { divisor_ = count; }

  void Partial(const ConstArrayView& in, std::span<const int> axes,
               std::span<const Index> in_origin, std::span<const Index> array_shape,
               const ArrayView& state) const override {
    FoldRows(in, axes, state, /*reset=*/true);
  }

  bool folds_in_order() const override { return true; }

  void PartialInto(const ConstArrayView& in, std::span<const int> axes,
                   std::span<const Index> in_origin, std::span<const Index> array_shape,
                   const ArrayView& state) const override {
    FoldRows(in, axes, state, /*reset=*/false);
  }

  // Partial (reset: the state starts empty) or PartialInto (it starts as is:
  // the count grows, the rows fold into the accumulator in C order).
  void FoldRows(const ConstArrayView& in, std::span<const int> axes, const ArrayView& state,
                bool reset) const {
    CheckPartial(in, axes, state);
    const Index ts = TrailingStride(state);
    const Index count = ReducedCount(in.shape(), axes);
    if constexpr (requires { Fold::kCountsAll; }) {
      if constexpr (Fold::kCountsAll) {
        ForEachTuple(state, [&](std::byte* t) {
          Acc& c = SlotRef<Acc>(t, 0, ts);
          c = reset ? Acc(count) : c + Acc(count);
        });
        return;
      }
    }
    if (kHasCount || reset) {  // PartialInto of a state without a count: nothing to set
      ForEachTuple(state, [&](std::byte* t) {
        if constexpr (kHasCount) {
          Acc& c = SlotRef<Acc>(t, 0, ts);
          c = reset ? Acc(count) : c + Acc(count);
        }
        if (reset) SlotRef<Acc>(t, kAccSlot, ts) = Fold::Identity();
      });
    }
    if (in.num_elements() == 0) return;
    ForEachRow(PartialLoop(in, axes, state), in.data(), state.data() + kAccSlot * ts, 0,
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
            std::byte* o = op + j * os;
            if constexpr (kHasCount) SlotRef<Acc>(o, 0, ots) += SlotRef<Acc>(a, 0, its);
            Acc& acc = SlotRef<Acc>(o, kAccSlot, ots);
            acc = Fold::Merge(acc, SlotRef<Acc>(a, kAccSlot, its));
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
            const std::byte* t = ip + j * is;
            R& r = *reinterpret_cast<R*>(op + j * os);
            const Acc acc = SlotRef<Acc>(t, kAccSlot, ts);
            if constexpr (kHasCount) {
              r = static_cast<R>(acc / std::real(SlotRef<Acc>(t, 0, ts)));
            } else if constexpr (std::is_floating_point_v<Acc> || kIsComplex<Acc>) {
              r = static_cast<R>(divisor_ > 0 ? acc / static_cast<double>(divisor_) : acc);
            } else {
              r = static_cast<R>(acc);
            }
          }
        });
  }

  void GroupPartialImpl(const ConstArrayView& in, int axis, std::span<const int64_t> labels,
                        Index num_groups, const ArrayView& state) const override {
    if constexpr (!kGroupBy) {
      KernelBase::GroupPartialImpl(in, axis, labels, num_groups, state);
    } else {
      const Index ts = TrailingStride(state);
      ForEachTuple(state, [&](std::byte* t) { SetEmpty(t, ts); });
      GroupScatter(
          in, axis, labels, num_groups, state,
          [ts](std::byte* t, const std::byte* x) {
            if constexpr (kHasCount) SlotRef<Acc>(t, 0, ts) += Acc(1);
            Acc& acc = SlotRef<Acc>(t, kAccSlot, ts);
            acc = Fold::Merge(acc, Fold::Lift(*reinterpret_cast<const In*>(x)));
          },
          [ts](const std::byte* x, Index is, std::byte* t, Index os, Index n) {
            if constexpr (kHasCount) {
              if (is == sizeof(In) && ts == sizeof(Acc) && os == 2 * sizeof(Acc)) {
                // Dense (count, sum) tuples: one pass.
                const In* __restrict xv = reinterpret_cast<const In*>(x);
                Acc* __restrict o = reinterpret_cast<Acc*>(t);
                for (Index j = 0; j < n; ++j) {
                  o[2 * j] += Acc(1);
                  o[2 * j + 1] = Fold::Merge(o[2 * j + 1], Fold::Lift(xv[j]));
                }
                return;
              }
              for (Index j = 0; j < n; ++j) SlotRef<Acc>(t + j * os, 0, ts) += Acc(1);
            }
            FoldRow<Fold>(x, is, t + kAccSlot * ts, os, n);
          });
    }
  }

 private:
  Index divisor_ = 0;

  static void SetEmpty(std::byte* t, Index ts) {
    if constexpr (kHasCount) SlotRef<Acc>(t, 0, ts) = Acc(0);
    SlotRef<Acc>(t, kAccSlot, ts) = Fold::Identity();
  }
};

// Family factories (one per source file). The op and dtype are valid for the
// family (MakeReductionKernel checks).
// A mean with a positive `count` keeps the sum alone (ReductionOptions::count).
std::shared_ptr<const ReductionKernel> MakeSumKernel(ReduceOp op, DType input, Index count);
std::shared_ptr<const ReductionKernel> MakeLogicalKernel(ReduceOp op, DType input);
std::shared_ptr<const ReductionKernel> MakeMinMaxKernel(ReduceOp op, DType input);
std::shared_ptr<const ReductionKernel> MakeMomentsKernel(ReduceOp op, DType input, int ddof);
std::shared_ptr<const ReductionKernel> MakeArgKernel(ReduceOp op, DType input);
// reduction_nan.cc: the NaN-aware ops for float (and, for nansum, nanprod
// and nanmean, complex) input; and first/last of any dtype, argmin/argmax
// and var/std with group-by support (MakeGroupReductionKernel).
std::shared_ptr<const ReductionKernel> MakeNanKernel(ReduceOp op, DType input, int ddof);
std::shared_ptr<const ReductionKernel> MakePositionalKernel(ReduceOp op, DType input, int ddof);

}  // namespace strata::internal_reduction

#endif  // STRATA_CORE_KERNELS_REDUCTION_INTERNAL_H_
