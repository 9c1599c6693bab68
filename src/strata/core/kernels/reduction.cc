// Op names, state shapes, argument checks, the kernel factory and group-by
// dispatch. The kernels themselves live in reduction_sum.cc (sum, prod, mean),
// reduction_logical.cc (all, any, count_nonzero, count), reduction_minmax.cc,
// reduction_moments.cc (var, std) and reduction_arg.cc (argmin, argmax).
#include "strata/core/kernels/reduction.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "strata/core/kernels/reduction_internal.h"

namespace strata {

std::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMean:
      return "mean";
    case ReduceOp::kVar:
      return "var";
    case ReduceOp::kStd:
      return "std";
    case ReduceOp::kAll:
      return "all";
    case ReduceOp::kAny:
      return "any";
    case ReduceOp::kArgmin:
      return "argmin";
    case ReduceOp::kArgmax:
      return "argmax";
    case ReduceOp::kCountNonzero:
      return "count_nonzero";
    case ReduceOp::kCount:
      return "count";
    case ReduceOp::kNanSum:
      return "nansum";
    case ReduceOp::kNanProd:
      return "nanprod";
    case ReduceOp::kNanMin:
      return "nanmin";
    case ReduceOp::kNanMax:
      return "nanmax";
    case ReduceOp::kNanMean:
      return "nanmean";
    case ReduceOp::kNanVar:
      return "nanvar";
    case ReduceOp::kNanStd:
      return "nanstd";
    case ReduceOp::kNanArgmin:
      return "nanargmin";
    case ReduceOp::kNanArgmax:
      return "nanargmax";
    case ReduceOp::kFirst:
      return "first";
    case ReduceOp::kLast:
      return "last";
    case ReduceOp::kNanFirst:
      return "nanfirst";
    case ReduceOp::kNanLast:
      return "nanlast";
  }
  return "unknown";
}

void ReductionKernel::PartialInto(const ConstArrayView&, std::span<const int>,
                                  std::span<const Index>, std::span<const Index>,
                                  const ArrayView&) const {
  STRATA_CHECK(false) << "PartialInto of a reduction kernel that does not fold in order";
}

Shape ReductionKernel::StateShape(std::span<const Index> in_shape,
                                  std::span<const int> axes) const {
  Shape shape(in_shape.begin(), in_shape.end());
  for (int a : axes) {
    STRATA_CHECK(a >= 0 && a < static_cast<int>(shape.size()))
        << "axis " << a << " of a rank-" << shape.size() << " array";
    shape[a] = 1;
  }
  shape.push_back(state_width_);
  return shape;
}

namespace {

bool IsNanAware(ReduceOp op) { return op >= ReduceOp::kNanSum && op <= ReduceOp::kNanArgmax; }

// The reduction a NaN-aware op is for inputs without NaN.
ReduceOp PlainOf(ReduceOp op) {
  switch (op) {
    case ReduceOp::kNanSum:
      return ReduceOp::kSum;
    case ReduceOp::kNanProd:
      return ReduceOp::kProd;
    case ReduceOp::kNanMin:
      return ReduceOp::kMin;
    case ReduceOp::kNanMax:
      return ReduceOp::kMax;
    case ReduceOp::kNanMean:
      return ReduceOp::kMean;
    case ReduceOp::kNanVar:
      return ReduceOp::kVar;
    case ReduceOp::kNanStd:
      return ReduceOp::kStd;
    case ReduceOp::kNanArgmin:
      return ReduceOp::kArgmin;
    case ReduceOp::kNanArgmax:
      return ReduceOp::kArgmax;
    default:
      return op;
  }
}

}  // namespace

Result<std::shared_ptr<const ReductionKernel>> MakeReductionKernel(ReduceOp op, DType input,
                                                                   ReductionOptions options) {
  using namespace internal_reduction;  // NOLINT
  auto undefined = [&](std::string_view why) {
    return InvalidArgumentError(std::string(ReduceOpName(op)) + " is not defined for " +
                                std::string(input.name()) + " input (" + std::string(why) + ")");
  };
  if (!input.is_numeric()) {
    return InvalidArgumentError(fmt::format(
        "{} is not defined for {} input (a storage type: {})", ReduceOpName(op), input.ToString(),
        input.is_float16() ? "convert it with astype(float32) first"
                           : "fixed-length strings and bytes are not numbers"));
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kProd:
    case ReduceOp::kMean:
      return MakeSumKernel(op, input, options.count);
    case ReduceOp::kAll:
    case ReduceOp::kAny:
    case ReduceOp::kCountNonzero:
    case ReduceOp::kCount:
      return MakeLogicalKernel(op, input);
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      if (input.is_complex()) return undefined("complex numbers are not ordered");
      return MakeMinMaxKernel(op, input);
    case ReduceOp::kVar:
    case ReduceOp::kStd:
      if (input.is_complex()) return undefined("only real numbers have a variance here");
      return MakeMomentsKernel(op, input, options.ddof);
    case ReduceOp::kArgmin:
    case ReduceOp::kArgmax:
      if (input.is_complex()) return undefined("complex numbers are not ordered");
      return MakeArgKernel(op, input);
    case ReduceOp::kFirst:
    case ReduceOp::kLast:
    case ReduceOp::kNanFirst:
    case ReduceOp::kNanLast:
      return MakePositionalKernel(op, input, options.ddof);
    default:
      break;
  }
  if (IsNanAware(op)) {
    const bool floating = input.is_float() || input.is_complex();
    // Integers and bools have no NaN: the plain reduction.
    if (!floating) return MakeReductionKernel(PlainOf(op), input, options);
    const bool complex_ok =
        op == ReduceOp::kNanSum || op == ReduceOp::kNanProd || op == ReduceOp::kNanMean;
    if (input.is_complex() && !complex_ok) {
      return undefined(op == ReduceOp::kNanVar || op == ReduceOp::kNanStd
                           ? "only real numbers have a variance here"
                           : "complex numbers are not ordered");
    }
    return MakeNanKernel(op, input, options.ddof);
  }
  return InvalidArgumentError("unknown reduction op " + std::to_string(static_cast<int>(op)));
}

bool GroupReduceSupported(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
    case ReduceOp::kMin:
    case ReduceOp::kMax:
    case ReduceOp::kCount:
    case ReduceOp::kVar:
    case ReduceOp::kStd:
    case ReduceOp::kArgmin:
    case ReduceOp::kArgmax:
    case ReduceOp::kFirst:
    case ReduceOp::kLast:
    case ReduceOp::kNanSum:
    case ReduceOp::kNanMean:
    case ReduceOp::kNanMin:
    case ReduceOp::kNanMax:
    case ReduceOp::kNanVar:
    case ReduceOp::kNanStd:
    case ReduceOp::kNanArgmin:
    case ReduceOp::kNanArgmax:
    case ReduceOp::kNanFirst:
    case ReduceOp::kNanLast:
      return true;
    default:
      return false;
  }
}

Result<std::shared_ptr<const ReductionKernel>> MakeGroupReductionKernel(ReduceOp op, DType input,
                                                                        bool skip_nan,
                                                                        ReductionOptions options) {
  using namespace internal_reduction;  // NOLINT
  if (!GroupReduceSupported(op)) {
    return InvalidArgumentError(std::string("group-by ") + std::string(ReduceOpName(op)) +
                                " is not supported");
  }
  const bool floating = input.is_float() || input.is_complex();
  if (input.is_complex()) {
    // Refused under the caller's name (min, not the nanmin skipna maps it to).
    switch (op) {
      case ReduceOp::kMin:
      case ReduceOp::kMax:
      case ReduceOp::kArgmin:
      case ReduceOp::kArgmax:
      case ReduceOp::kNanMin:
      case ReduceOp::kNanMax:
      case ReduceOp::kNanArgmin:
      case ReduceOp::kNanArgmax:
        return InvalidArgumentError(std::string(ReduceOpName(op)) + " is not defined for " +
                                    std::string(input.name()) +
                                    " input (complex numbers are not ordered)");
      case ReduceOp::kVar:
      case ReduceOp::kStd:
      case ReduceOp::kNanVar:
      case ReduceOp::kNanStd:
        return InvalidArgumentError(std::string(ReduceOpName(op)) + " is not defined for " +
                                    std::string(input.name()) +
                                    " input (only real numbers have a variance here)");
      default:
        break;
    }
  }
  // An explicitly NaN-aware op skips NaN whatever skip_nan says.
  if (IsNanAware(op)) {
    op = PlainOf(op);
    skip_nan = true;
  }
  if (op == ReduceOp::kNanFirst || op == ReduceOp::kNanLast) {
    op = op == ReduceOp::kNanFirst ? ReduceOp::kFirst : ReduceOp::kLast;
    skip_nan = true;
  }
  if (skip_nan && floating) {
    switch (op) {
      case ReduceOp::kSum:
        op = ReduceOp::kNanSum;
        break;
      case ReduceOp::kMean:
        op = ReduceOp::kNanMean;
        break;
      case ReduceOp::kMin:
        op = ReduceOp::kNanMin;
        break;
      case ReduceOp::kMax:
        op = ReduceOp::kNanMax;
        break;
      case ReduceOp::kVar:
        op = ReduceOp::kNanVar;
        break;
      case ReduceOp::kStd:
        op = ReduceOp::kNanStd;
        break;
      case ReduceOp::kArgmin:
        op = ReduceOp::kNanArgmin;
        break;
      case ReduceOp::kArgmax:
        op = ReduceOp::kNanArgmax;
        break;
      case ReduceOp::kFirst:
        op = ReduceOp::kNanFirst;
        break;
      case ReduceOp::kLast:
        op = ReduceOp::kNanLast;
        break;
      default:
        break;  // count already skips NaN
    }
  }
  switch (op) {
    case ReduceOp::kVar:
    case ReduceOp::kStd:
    case ReduceOp::kArgmin:
    case ReduceOp::kArgmax:
      if (input.is_complex()) {
        return InvalidArgumentError(std::string("group-by ") + std::string(ReduceOpName(op)) +
                                    " is not defined for " + std::string(input.name()));
      }
      return MakePositionalKernel(op, input, options.ddof);
    default:
      return MakeReductionKernel(op, input, options);
  }
}

void GroupPartial(const ReductionKernel& kernel, const ConstArrayView& in, int axis,
                  std::span<const int64_t> labels, Index num_groups, const ArrayView& state,
                  Index axis_origin) {
  STRATA_CHECK(GroupReduceSupported(kernel.op()))
      << "group-by " << ReduceOpName(kernel.op()) << " is not supported";
  const auto* impl = dynamic_cast<const internal_reduction::KernelBase*>(&kernel);
  STRATA_CHECK(impl != nullptr) << "not a built-in reduction kernel";
  STRATA_CHECK(in.dtype() == kernel.input_dtype())
      << in.dtype().name() << " input to a " << kernel.input_dtype().name() << " kernel";
  STRATA_CHECK(axis >= 0 && axis < in.rank()) << "axis " << axis << " of rank " << in.rank();
  STRATA_CHECK(static_cast<Index>(labels.size()) == in.shape()[axis])
      << labels.size() << " labels for extent " << in.shape()[axis];
  STRATA_CHECK(num_groups >= 0);
  Shape expected = in.shape();
  expected[axis] = num_groups;
  expected.push_back(kernel.state_width());
  STRATA_CHECK(state.dtype() == kernel.state_dtype() && state.shape() == expected)
      << "group state " << ShapeToString(state.shape()) << " " << state.dtype().name()
      << ", expected " << ShapeToString(expected) << " " << kernel.state_dtype().name();
  impl->GroupPartialAt(in, axis, labels, num_groups, state, axis_origin);
}

namespace internal_reduction {

ReduceLoop MakeReduceLoop(std::span<const Index> shape, std::span<const Index> in_strides,
                          std::span<const Index> out_strides, std::span<const Index> pos_strides) {
  const int r = static_cast<int>(shape.size());
  std::vector<int> order;
  order.reserve(r);
  for (int i = 0; i < r; ++i) {
    if (shape[i] != 1) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return std::abs(in_strides[a]) > std::abs(in_strides[b]); });
  ReduceLoop loop;
  for (int i : order) {
    const Index n = shape[i];
    const Index ps = pos_strides.empty() ? 0 : pos_strides[i];
    if (!loop.shape.empty() && loop.in_strides.back() == in_strides[i] * n &&
        loop.out_strides.back() == out_strides[i] * n && loop.pos_strides.back() == ps * n) {
      loop.shape.back() *= n;
      loop.in_strides.back() = in_strides[i];
      loop.out_strides.back() = out_strides[i];
      loop.pos_strides.back() = ps;
      continue;
    }
    loop.shape.push_back(n);
    loop.in_strides.push_back(in_strides[i]);
    loop.out_strides.push_back(out_strides[i]);
    loop.pos_strides.push_back(ps);
  }
  return loop;
}

ReduceLoop PartialLoop(const ConstArrayView& in, std::span<const int> axes, const ArrayView& state,
                       std::span<const Index> pos_strides) {
  Shape out_strides(state.byte_strides().begin(), state.byte_strides().end() - 1);
  for (int a : axes) out_strides[a] = 0;
  return MakeReduceLoop(in.shape(), in.byte_strides(), out_strides, pos_strides);
}

ReduceLoop CombineLoop(const ConstArrayView& states, std::span<const int> axes,
                       const ArrayView& out) {
  const auto& ss = states.shape();
  std::span<const Index> shape(ss.data(), ss.size() - 1);
  std::span<const Index> in_strides(states.byte_strides().data(), ss.size() - 1);
  Shape out_strides(out.byte_strides().begin(), out.byte_strides().end() - 1);
  for (int a : axes) out_strides[a] = 0;
  return MakeReduceLoop(shape, in_strides, out_strides);
}

ReduceLoop FinalizeLoop(const ConstArrayView& state, const ArrayView& result) {
  std::span<const Index> in_strides(state.byte_strides().data(), state.byte_strides().size() - 1);
  return MakeReduceLoop(result.shape(), in_strides, result.byte_strides());
}

ReduceLoop TupleLoop(const ArrayView& state) {
  const size_t r = state.shape().size() - 1;
  std::span<const Index> shape(state.shape().data(), r);
  std::span<const Index> strides(state.byte_strides().data(), r);
  return MakeReduceLoop(shape, strides, strides);
}

void ForEachRowIndirect(const ReduceLoop& loop, const std::byte* in, std::byte* out, Index pos,
                        RowCallback row, void* ctx) {
  ForEachRow(loop, in, out, pos,
             [&](const std::byte* i, std::byte* o, Index p, Index n, Index is, Index os, Index ps) {
               row(ctx, i, o, p, n, is, os, ps);
             });
}

Index ReducedCount(std::span<const Index> shape, std::span<const int> axes) {
  Index n = 1;
  for (int a : axes) n *= shape[a];
  return n;
}

GroupSliceLoop MakeGroupSliceLoop(const ConstArrayView& in, int axis, const ArrayView& state) {
  GroupSliceLoop s;
  Shape shape, in_strides, state_strides;
  for (int i = 0; i < in.rank(); ++i) {
    if (i == axis) continue;
    shape.push_back(in.shape()[i]);
    in_strides.push_back(in.byte_strides()[i]);
    state_strides.push_back(state.byte_strides()[i]);
  }
  s.in_axis_stride = in.byte_strides()[axis];
  s.state_axis_stride = state.byte_strides()[axis];
  s.num_elements = in.num_elements() == 0 ? 0 : NumElements(shape);
  s.loop = MakeReduceLoop(shape, in_strides, state_strides);
  if (s.num_elements > 0 && s.num_elements <= kSmallGroupSlice) {
    const std::byte* in_base = in.data();
    std::byte* state_base = state.data();
    ForEachRow(s.loop, in_base, state_base, 0,
               [&](const std::byte* ip, std::byte* op, Index, Index n, Index is, Index os, Index) {
                 for (Index j = 0; j < n; ++j) {
                   s.in_offsets.push_back((ip - in_base) + j * is);
                   s.state_offsets.push_back((op - state_base) + j * os);
                 }
               });
  }
  return s;
}

KernelBase::KernelBase(ReduceOp op, DType input, DType result, DType state, int width) {
  op_ = op;
  input_dtype_ = input;
  result_dtype_ = result;
  state_dtype_ = state;
  state_width_ = width;
}

void KernelBase::GroupPartialImpl(const ConstArrayView&, int, std::span<const int64_t>, Index,
                                  const ArrayView&) const {
  STRATA_CHECK(false) << "group-by " << ReduceOpName(op_) << " is not supported";
}

namespace {

void CheckAxes(std::span<const int> axes, int rank) {
  for (size_t i = 0; i < axes.size(); ++i) {
    STRATA_CHECK(axes[i] >= 0 && axes[i] < rank) << "axis " << axes[i] << " of rank " << rank;
    STRATA_CHECK(i == 0 || axes[i - 1] < axes[i]) << "axes must be sorted and unique";
  }
}

}  // namespace

void KernelBase::CheckPartial(const ConstArrayView& in, std::span<const int> axes,
                              const ArrayView& state) const {
  STRATA_CHECK(in.dtype() == input_dtype_) << ReduceOpName(op_) << ": " << in.dtype().name()
                                           << " input to a " << input_dtype_.name() << " kernel";
  CheckAxes(axes, in.rank());
  STRATA_CHECK(state.dtype() == state_dtype_)
      << ReduceOpName(op_) << ": state of " << state.dtype().name() << ", expected "
      << state_dtype_.name();
  STRATA_CHECK(state.shape() == StateShape(in.shape(), axes))
      << ReduceOpName(op_) << ": state of shape " << ShapeToString(state.shape()) << " for input "
      << ShapeToString(in.shape());
}

void KernelBase::CheckCombine(const ConstArrayView& states, std::span<const int> axes,
                              const ArrayView& out) const {
  STRATA_CHECK(states.dtype() == state_dtype_ && out.dtype() == state_dtype_)
      << ReduceOpName(op_) << ": states of " << states.dtype().name() << " into "
      << out.dtype().name() << ", expected " << state_dtype_.name();
  const int r = states.rank();
  STRATA_CHECK(r >= 1 && out.rank() == r && states.shape()[r - 1] == state_width_ &&
               out.shape()[r - 1] == state_width_)
      << ReduceOpName(op_) << ": combining states " << ShapeToString(states.shape()) << " into "
      << ShapeToString(out.shape());
  CheckAxes(axes, r - 1);
  for (int i = 0; i < r - 1; ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    STRATA_CHECK(reduced ? out.shape()[i] == 1 : out.shape()[i] == states.shape()[i])
        << ReduceOpName(op_) << ": combining states " << ShapeToString(states.shape()) << " into "
        << ShapeToString(out.shape());
  }
}

void KernelBase::CheckFinalize(const ConstArrayView& state, const ArrayView& result) const {
  STRATA_CHECK(state.dtype() == state_dtype_ && result.dtype() == result_dtype_)
      << ReduceOpName(op_) << ": finalizing " << state.dtype().name() << " into "
      << result.dtype().name();
  const int r = state.rank();
  STRATA_CHECK(r >= 1 && state.shape()[r - 1] == state_width_ && result.rank() == r - 1 &&
               std::equal(result.shape().begin(), result.shape().end(), state.shape().begin()))
      << ReduceOpName(op_) << ": finalizing state " << ShapeToString(state.shape()) << " into "
      << ShapeToString(result.shape());
}

}  // namespace internal_reduction
}  // namespace strata
