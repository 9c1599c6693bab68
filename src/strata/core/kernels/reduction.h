// Reduction kernels built for a tree: partial -> combine* -> finalize.
//
// A reduction over a chunked array runs in rounds (shared/DESIGN.md): each
// input chunk is reduced to a partial *state* (Partial), states of
// neighbouring chunks are merged (Combine, repeated per split_every round), and
// the last state is turned into the result (Finalize). States are arrays of
// `state_dtype()` with the reduced axes kept at extent 1 per chunk and one
// extra trailing axis of `state_width()` values, e.g. var keeps (count, mean,
// M2) in float64 and merges them with Chan et al.'s parallel formula, so that
// the result is numerically stable and independent of the chunking.
//
// Thread-safety: a ReductionKernel is immutable; its methods are pure.
#ifndef STRATA_CORE_KERNELS_REDUCTION_H_
#define STRATA_CORE_KERNELS_REDUCTION_H_

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/box.h"
#include "strata/core/dtype.h"
#include "strata/core/ndarray.h"

namespace strata {

// clang-format off
enum class ReduceOp {
  kSum, kProd, kMin, kMax, kMean, kVar, kStd, kAll, kAny, kArgmin, kArgmax, kCountNonzero,
  // Number of elements that are not NaN (int64); group-by's "count".
  kCount,
  // NaN-aware (numpy's nan* functions): NaN elements are skipped. For bool
  // and integer inputs they are the plain reductions.
  kNanSum, kNanProd, kNanMin, kNanMax, kNanMean, kNanVar, kNanStd, kNanArgmin, kNanArgmax,
  // The element at the first / last position (positions as argmin's); the
  // Nan variants skip NaN. Group-by's first and last.
  kFirst, kLast, kNanFirst, kNanLast,
};
// clang-format on

std::string_view ReduceOpName(ReduceOp op);

struct ReductionOptions {
  int ddof = 0;  // var/std: divide by count - ddof
  // mean: when positive, the number of elements every final state covers (a
  // reduction over whole axes, not group-by): the state is the sum alone,
  // half the bytes of a (count, sum) tuple, and Finalize divides by it (the
  // same result, bit for bit).
  Index count = 0;
};

class ReductionKernel {
 public:
  virtual ~ReductionKernel() = default;

  ReduceOp op() const { return op_; }
  DType input_dtype() const { return input_dtype_; }
  // The dtype of the final result (Array API: sum of int32 is int64, mean of
  // int is float64, argmin is int64, all/any are bool, ...).
  DType result_dtype() const { return result_dtype_; }
  DType state_dtype() const { return state_dtype_; }
  int state_width() const { return state_width_; }

  // Shape of the state for an input of `in_shape` reduced over `axes`:
  // reduced axes become 1, plus a trailing axis of state_width().
  Shape StateShape(std::span<const Index> in_shape, std::span<const int> axes) const;

  // Reduces `in` over `axes` (sorted, unique) into `state` (StateShape).
  // `in_origin` is the chunk's position in the whole array and `array_shape`
  // the whole array's shape: argmin/argmax record positions in those terms
  // (along the single reduced axis, or flattened C-order over all axes when
  // every axis is reduced).
  virtual void Partial(const ConstArrayView& in, std::span<const int> axes,
                       std::span<const Index> in_origin, std::span<const Index> array_shape,
                       const ArrayView& state) const = 0;

  // True when PartialInto is available: the kernel folds elements into its
  // state one at a time, so a block can be reduced in strips.
  virtual bool folds_in_order() const { return false; }

  // Folds `in` into `state`, which already holds the Partial of the elements
  // before `in` along the first reduced axis (strips of one block, in order;
  // `in_origin` is the strip's). When an axis after that one is kept, the
  // state is bit for bit the one Partial of the whole block gives. Only
  // where folds_in_order().
  virtual void PartialInto(const ConstArrayView& in, std::span<const int> axes,
                           std::span<const Index> in_origin, std::span<const Index> array_shape,
                           const ArrayView& state) const;

  // Merges states along `axes` (the states of several chunks, concatenated
  // along the reduced axes) into `out` (extent 1 on those axes; must not
  // overlap `states`). Any grouping and order of states gives the same result
  // up to floating-point rounding: argmin/argmax states carry whole-array
  // positions and keep the smallest on ties.
  void Combine(const ConstArrayView& states, std::span<const int> axes,
               const ArrayView& out) const {
    CombineImpl(states, axes, out, /*reset=*/true);
  }
  // Merges `states` into the state `acc` already holds, in order: Combine of
  // [s0, s1, ...] equals Combine of [s0] then CombineInto of each next one,
  // bit for bit (a combine tree folded a state at a time).
  void CombineInto(const ConstArrayView& states, std::span<const int> axes,
                   const ArrayView& acc) const {
    CombineImpl(states, axes, acc, /*reset=*/false);
  }

  // Turns states (trailing axis included) into results of result_dtype() with
  // the state's shape minus the trailing axis. An empty state (no element
  // seen) gives NaN for mean/var/std and for min/max of floats, the identity
  // for min/max of integers (min of int32: INT32_MAX), and CHECK-fails for
  // argmin/argmax.
  virtual void Finalize(const ConstArrayView& state, const ArrayView& result) const = 0;

  // Extra bytes a Partial/Combine call needs beyond its input and output views
  // (for memory projections). The built-in kernels need none: they fold into
  // the state in place (a few KiB of stack at most).
  virtual int64_t ScratchBytes(std::span<const Index> in_shape) const { return 0; }

 protected:
  // Combine (reset: `out` starts empty) or CombineInto (it starts as is).
  virtual void CombineImpl(const ConstArrayView& states, std::span<const int> axes,
                           const ArrayView& out, bool reset) const = 0;

  ReduceOp op_;
  DType input_dtype_;
  DType result_dtype_;
  DType state_dtype_;
  int state_width_ = 1;
};

// InvalidArgument when the op is not defined for the dtype (var of complex,
// argmin of complex, bitwise... ), naming both.
Result<std::shared_ptr<const ReductionKernel>> MakeReductionKernel(ReduceOp op, DType input,
                                                                   ReductionOptions options = {});

// Group-by partial reduction (flox's "map-reduce" step): reduces `in` along
// `axis` into per-group states, where labels[i] in [0, num_groups) is the
// group of position i along that axis (negative labels are skipped). `state`
// has in's shape with `axis` replaced by num_groups, plus the trailing state
// axis. Combine/Finalize of the same kernel merge and finish the states.
// Supported ops: sum, mean, min, max, count (InvalidArgument-worthy misuse is
// CHECKed: callers validate the op first with GroupReduceSupported).
//
// Merging the group states of C chunks of the grouped axis: the caller stacks
// them along a new axis, e.g. an array (or view) of shape (C, *S) where S is
// one chunk's group state shape, with chunk c's GroupPartial written to the
// sub-view [c] (its leading axis dropped). Combine(stack, {0}, out) with `out`
// of shape (1, *S) merges them (in any grouping, several rounds if wanted);
// Finalize(out) gives (1, *G), G being in's shape with `axis` replaced by
// num_groups. Empty groups finalize as empty states do (see Finalize): sum 0,
// count 0, mean NaN, min/max NaN for floats and the identity for integers.
//
// Group-by kernels come from MakeGroupReductionKernel, which also covers ops
// whose plain kernel has no group-by (var, std, argmin, argmax, first, last)
// and maps `skip_nan` onto the NaN-aware ops for float and complex inputs.
// argmin/argmax/first/last record positions along `axis` of the whole array:
// `axis_origin` is the position of in's first element along it. Empty (or
// all-NaN, skipping) groups finalize to -1 for argmin/argmax, NaN for
// first/last of floats and var/std, 0 for first/last of other dtypes.
bool GroupReduceSupported(ReduceOp op);
Result<std::shared_ptr<const ReductionKernel>> MakeGroupReductionKernel(
    ReduceOp op, DType input, bool skip_nan, ReductionOptions options = {});
void GroupPartial(const ReductionKernel& kernel, const ConstArrayView& in, int axis,
                  std::span<const int64_t> labels, Index num_groups, const ArrayView& state,
                  Index axis_origin = 0);

}  // namespace strata

#endif  // STRATA_CORE_KERNELS_REDUCTION_H_
