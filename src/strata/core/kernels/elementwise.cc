// Type rules, broadcasting, the strided loop driver, where, clip and scalars.
// The unary, binary and cast kernels live in elementwise_unary.cc,
// elementwise_binary.cc and elementwise_cast.cc so that the two cores compile
// them in parallel.
#include "strata/core/kernels/elementwise.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "strata/core/dtype_dispatch.h"
#include "strata/core/kernels/elementwise_internal.h"

namespace strata {

using internal_kernels::ForEachRun;
using internal_kernels::kConvertBlock;
using internal_kernels::kMaxInputs;

std::string_view UnaryOpName(UnaryOp op) {
  switch (op) {
    // clang-format off
    case UnaryOp::kAbs: return "abs";
    case UnaryOp::kNegative: return "negative";
    case UnaryOp::kPositive: return "positive";
    case UnaryOp::kSquare: return "square";
    case UnaryOp::kSqrt: return "sqrt";
    case UnaryOp::kExp: return "exp";
    case UnaryOp::kExpm1: return "expm1";
    case UnaryOp::kLog: return "log";
    case UnaryOp::kLog1p: return "log1p";
    case UnaryOp::kLog2: return "log2";
    case UnaryOp::kLog10: return "log10";
    case UnaryOp::kSin: return "sin";
    case UnaryOp::kCos: return "cos";
    case UnaryOp::kTan: return "tan";
    case UnaryOp::kArcsin: return "asin";
    case UnaryOp::kArccos: return "acos";
    case UnaryOp::kArctan: return "atan";
    case UnaryOp::kSinh: return "sinh";
    case UnaryOp::kCosh: return "cosh";
    case UnaryOp::kTanh: return "tanh";
    case UnaryOp::kFloor: return "floor";
    case UnaryOp::kCeil: return "ceil";
    case UnaryOp::kRound: return "round";
    case UnaryOp::kTrunc: return "trunc";
    case UnaryOp::kSign: return "sign";
    case UnaryOp::kIsnan: return "isnan";
    case UnaryOp::kIsinf: return "isinf";
    case UnaryOp::kIsfinite: return "isfinite";
    case UnaryOp::kLogicalNot: return "logical_not";
    case UnaryOp::kBitwiseInvert: return "bitwise_invert";
    case UnaryOp::kReal: return "real";
    case UnaryOp::kImag: return "imag";
    case UnaryOp::kConj: return "conj";
    case UnaryOp::kArccosh: return "acosh";
    case UnaryOp::kArcsinh: return "asinh";
    case UnaryOp::kArctanh: return "atanh";
    case UnaryOp::kReciprocal: return "reciprocal";
    case UnaryOp::kSignbit: return "signbit";
      // clang-format on
  }
  return "unknown";
}

std::string_view BinaryOpName(BinaryOp op) {
  switch (op) {
    // clang-format off
    case BinaryOp::kAdd: return "add";
    case BinaryOp::kSubtract: return "subtract";
    case BinaryOp::kMultiply: return "multiply";
    case BinaryOp::kDivide: return "divide";
    case BinaryOp::kFloorDivide: return "floor_divide";
    case BinaryOp::kRemainder: return "remainder";
    case BinaryOp::kPow: return "pow";
    case BinaryOp::kEqual: return "equal";
    case BinaryOp::kNotEqual: return "not_equal";
    case BinaryOp::kLess: return "less";
    case BinaryOp::kLessEqual: return "less_equal";
    case BinaryOp::kGreater: return "greater";
    case BinaryOp::kGreaterEqual: return "greater_equal";
    case BinaryOp::kLogicalAnd: return "logical_and";
    case BinaryOp::kLogicalOr: return "logical_or";
    case BinaryOp::kLogicalXor: return "logical_xor";
    case BinaryOp::kBitwiseAnd: return "bitwise_and";
    case BinaryOp::kBitwiseOr: return "bitwise_or";
    case BinaryOp::kBitwiseXor: return "bitwise_xor";
    case BinaryOp::kBitwiseLeftShift: return "bitwise_left_shift";
    case BinaryOp::kBitwiseRightShift: return "bitwise_right_shift";
    case BinaryOp::kMinimum: return "minimum";
    case BinaryOp::kMaximum: return "maximum";
    case BinaryOp::kArctan2: return "atan2";
    case BinaryOp::kCopysign: return "copysign";
    case BinaryOp::kHypot: return "hypot";
    case BinaryOp::kLogaddexp: return "logaddexp";
    case BinaryOp::kNextafter: return "nextafter";
      // clang-format on
  }
  return "unknown";
}

// ---------------------------------------------------------------------------
// Type rules.

namespace {

DType SignedOfSize(int size) {
  switch (size) {
    case 1:
      return DTypeId::kInt8;
    case 2:
      return DTypeId::kInt16;
    case 4:
      return DTypeId::kInt32;
    default:
      return DTypeId::kInt64;
  }
}

bool IsFloatOrComplex(DType t) { return t.is_float() || t.is_complex(); }

// The dtype arithmetic on `t` computes in: float16 computes in float32 (its
// inputs are converted on the fly); fixed-length types are not numbers.
Result<DType> ArithmeticType(DType t, std::string_view what) {
  if (t.is_numeric()) return t;
  if (t.is_float16()) return DType(DTypeId::kFloat32);
  return InvalidArgumentError(fmt::format(
      "{} does not support {}: fixed-length string and bytes arrays can be stored, rechunked, "
      "indexed and compared, not computed with",
      what, t.ToString()));
}

Status UnsupportedUnary(UnaryOp op, DType in) {
  return InvalidArgumentError(fmt::format("{} does not support {}", UnaryOpName(op), in.name()));
}

Status UnsupportedBinary(BinaryOp op, DType a, DType b) {
  return InvalidArgumentError(
      fmt::format("{} does not support {} and {}", BinaryOpName(op), a.name(), b.name()));
}

// Math functions of bool and integers compute (and return) float64.
bool IsMathOp(UnaryOp op) {
  switch (op) {
    case UnaryOp::kSqrt:
    case UnaryOp::kExp:
    case UnaryOp::kExpm1:
    case UnaryOp::kLog:
    case UnaryOp::kLog1p:
    case UnaryOp::kLog2:
    case UnaryOp::kLog10:
    case UnaryOp::kSin:
    case UnaryOp::kCos:
    case UnaryOp::kTan:
    case UnaryOp::kArcsin:
    case UnaryOp::kArccos:
    case UnaryOp::kArctan:
    case UnaryOp::kSinh:
    case UnaryOp::kCosh:
    case UnaryOp::kTanh:
    case UnaryOp::kArccosh:
    case UnaryOp::kArcsinh:
    case UnaryOp::kArctanh:
    case UnaryOp::kReciprocal:
      return true;
    default:
      return false;
  }
}

// Real-valued binary math that computes bool and integers in float64.
bool IsRealMathOp(BinaryOp op) {
  switch (op) {
    case BinaryOp::kArctan2:
    case BinaryOp::kCopysign:
    case BinaryOp::kHypot:
    case BinaryOp::kLogaddexp:
    case BinaryOp::kNextafter:
      return true;
    default:
      return false;
  }
}

bool IsComparison(BinaryOp op) {
  switch (op) {
    case BinaryOp::kEqual:
    case BinaryOp::kNotEqual:
    case BinaryOp::kLess:
    case BinaryOp::kLessEqual:
    case BinaryOp::kGreater:
    case BinaryOp::kGreaterEqual:
      return true;
    default:
      return false;
  }
}

bool IsLogical(BinaryOp op) {
  return op == BinaryOp::kLogicalAnd || op == BinaryOp::kLogicalOr || op == BinaryOp::kLogicalXor;
}

// Whether `op` is defined on two inputs of the (promoted) dtype `t`.
bool BinarySupports(BinaryOp op, DType t) {
  switch (op) {
    case BinaryOp::kAdd:
    case BinaryOp::kMultiply:  // bool: logical or / and, as numpy
    case BinaryOp::kDivide:    // bool and integers divide in float64
    case BinaryOp::kEqual:
    case BinaryOp::kNotEqual:
    case BinaryOp::kLogicalAnd:
    case BinaryOp::kLogicalOr:
    case BinaryOp::kLogicalXor:
      return true;
    case BinaryOp::kSubtract:
    case BinaryOp::kPow:
      return !t.is_bool();
    case BinaryOp::kFloorDivide:
    case BinaryOp::kRemainder:
      return t.is_integer() || t.is_float();
    case BinaryOp::kLess:
    case BinaryOp::kLessEqual:
    case BinaryOp::kGreater:
    case BinaryOp::kGreaterEqual:
    case BinaryOp::kMinimum:
    case BinaryOp::kMaximum:
    case BinaryOp::kArctan2:  // bool and integers in float64
    case BinaryOp::kCopysign:
    case BinaryOp::kHypot:
    case BinaryOp::kLogaddexp:
    case BinaryOp::kNextafter:
      return !t.is_complex();
    case BinaryOp::kBitwiseAnd:
    case BinaryOp::kBitwiseOr:
    case BinaryOp::kBitwiseXor:
      return t.is_bool() || t.is_integer();
    case BinaryOp::kBitwiseLeftShift:
    case BinaryOp::kBitwiseRightShift:
      return t.is_integer();
  }
  return false;
}

}  // namespace

Result<DType> PromoteTypes(DType a, DType b) {
  STRATA_ASSIGN_OR_RETURN(a, ArithmeticType(a, "type promotion"));
  STRATA_ASSIGN_OR_RETURN(b, ArithmeticType(b, "type promotion"));
  if (a == b) return a;
  // numpy's rule, not the standard's (which leaves bool with numbers undefined):
  // bool promotes to any numeric type.
  if (a.is_bool()) return b;
  if (b.is_bool()) return a;
  if (a.is_integer() && b.is_integer()) {
    if (a.is_signed_integer() == b.is_signed_integer()) return a.size() >= b.size() ? a : b;
    DType s = a.is_signed_integer() ? a : b;
    DType u = a.is_signed_integer() ? b : a;
    if (u.size() == 8) {
      return InvalidArgumentError(
          fmt::format("cannot promote {} and {}: no integer type holds both (cast one explicitly)",
                      a.name(), b.name()));
    }
    return SignedOfSize(std::max(s.size(), 2 * u.size()));
  }
  // Integer with float or complex: the float or complex ("mixed kind" rule).
  if (a.is_integer()) return b;
  if (b.is_integer()) return a;
  const int component = std::max(a.component_size(), b.component_size());
  if (a.is_complex() || b.is_complex()) {
    return component == 8 ? DTypeId::kComplex128 : DTypeId::kComplex64;
  }
  return component == 8 ? DTypeId::kFloat64 : DTypeId::kFloat32;
}

Result<DType> UnaryResultType(UnaryOp op, DType in) {
  STRATA_ASSIGN_OR_RETURN(in, ArithmeticType(in, UnaryOpName(op)));
  if (IsMathOp(op)) return IsFloatOrComplex(in) ? in : DType(DTypeId::kFloat64);
  switch (op) {
    case UnaryOp::kAbs:
      if (in.is_complex())
        return in.id() == DTypeId::kComplex64 ? DTypeId::kFloat32 : DTypeId::kFloat64;
      return in;
    case UnaryOp::kNegative:
    case UnaryOp::kPositive:
    case UnaryOp::kSquare:
    case UnaryOp::kSign:
      if (in.is_bool()) return UnsupportedUnary(op, in);
      return in;
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRound:
    case UnaryOp::kTrunc:
      if (in.is_complex()) return UnsupportedUnary(op, in);
      return in;
    case UnaryOp::kIsnan:
    case UnaryOp::kIsinf:
    case UnaryOp::kIsfinite:
    case UnaryOp::kLogicalNot:
      return DType(DTypeId::kBool);
    case UnaryOp::kBitwiseInvert:
      if (!in.is_bool() && !in.is_integer()) return UnsupportedUnary(op, in);
      return in;
    case UnaryOp::kReal:
    case UnaryOp::kImag:
      if (in.is_complex())
        return in.id() == DTypeId::kComplex64 ? DTypeId::kFloat32 : DTypeId::kFloat64;
      return in;
    case UnaryOp::kConj:
      return in;
    case UnaryOp::kSignbit:
      if (in.is_complex()) return UnsupportedUnary(op, in);
      return DType(DTypeId::kBool);
    default:
      break;
  }
  return UnsupportedUnary(op, in);
}

Result<DType> BinaryComputeType(BinaryOp op, DType a, DType b) {
  // Logical ops look only at "nonzero", so any two dtypes work, even ones that
  // do not promote (uint64 and int64).
  if (IsLogical(op)) {
    STRATA_RETURN_IF_ERROR(ArithmeticType(a, BinaryOpName(op)).status());
    STRATA_RETURN_IF_ERROR(ArithmeticType(b, BinaryOpName(op)).status());
    return DType(DTypeId::kBool);
  }
  Result<DType> promoted = PromoteTypes(a, b);
  if (!promoted.ok()) return promoted.status().WithContext(BinaryOpName(op));
  DType t = *promoted;
  if (!BinarySupports(op, t)) return UnsupportedBinary(op, a, b);
  if ((op == BinaryOp::kDivide || IsRealMathOp(op)) && !IsFloatOrComplex(t)) {
    return DType(DTypeId::kFloat64);
  }
  return t;
}

Result<DType> BinaryResultType(BinaryOp op, DType a, DType b) {
  STRATA_ASSIGN_OR_RETURN(DType compute, BinaryComputeType(op, a, b));
  if (IsComparison(op) || IsLogical(op)) return DType(DTypeId::kBool);
  return compute;
}

// ---------------------------------------------------------------------------
// Broadcasting.

Result<Shape> BroadcastShapes(std::span<const Shape> shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape result(rank, 1);
  // Which shape set each result extent (for the error message).
  std::vector<size_t> owner(rank, 0);
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Shape& s = shapes[k];
    const size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      Index& r = result[offset + i];
      if (s[i] == r || s[i] == 1) continue;
      if (r == 1) {
        r = s[i];
        owner[offset + i] = k;
        continue;
      }
      return InvalidArgumentError(fmt::format("shapes {} and {} cannot be broadcast together",
                                              ShapeToString(shapes[owner[offset + i]]),
                                              ShapeToString(s)));
    }
  }
  return result;
}

ConstArrayView BroadcastTo(const ConstArrayView& view, const Shape& shape) {
  STRATA_CHECK(view.rank() <= static_cast<int>(shape.size()))
      << "cannot broadcast " << ShapeToString(view.shape()) << " to " << ShapeToString(shape);
  const size_t offset = shape.size() - view.rank();
  Shape strides(shape.size(), 0);
  for (int i = 0; i < view.rank(); ++i) {
    const Index extent = view.shape()[i];
    if (extent == shape[offset + i]) {
      strides[offset + i] = view.byte_strides()[i];
    } else {
      STRATA_CHECK(extent == 1) << "cannot broadcast " << ShapeToString(view.shape()) << " to "
                                << ShapeToString(shape);
    }
  }
  return ConstArrayView(view.data(), view.dtype(), shape, std::move(strides));
}

// ---------------------------------------------------------------------------
// The loop driver.

namespace internal_kernels {
namespace {

constexpr int kMaxOperands = kMaxInputs + 1;  // operand 0 is the output

struct LoopAxis {
  Index extent;
  std::array<Index, kMaxOperands> strides;
};

}  // namespace

void ForEachRun(std::span<const ConstArrayView* const> inputs, std::span<const DType> compute,
                const ArrayView& out, RunFn fn) {
  const int num_inputs = static_cast<int>(inputs.size());
  STRATA_CHECK(num_inputs <= kMaxInputs && compute.size() == inputs.size());
  const int num_operands = num_inputs + 1;
  const Shape& shape = out.shape();

  std::array<ConstArrayView, kMaxInputs> views;
  for (int k = 0; k < num_inputs; ++k) {
    views[k] = inputs[k]->shape() == shape ? *inputs[k] : BroadcastTo(*inputs[k], shape);
  }
  if (out.num_elements() == 0) return;

  std::array<const std::byte*, kMaxOperands> base{};
  base[0] = out.data();
  for (int k = 0; k < num_inputs; ++k) base[k + 1] = views[k].data();

  // Drop extent-1 axes and make the output's strides non-negative (walking an
  // axis backwards in every operand visits the same element pairs).
  std::vector<LoopAxis> axes;
  axes.reserve(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    LoopAxis axis{shape[d], {}};
    axis.strides[0] = out.byte_strides()[d];
    for (int k = 0; k < num_inputs; ++k) axis.strides[k + 1] = views[k].byte_strides()[d];
    if (axis.strides[0] < 0) {
      for (int k = 0; k < num_operands; ++k) {
        base[k] += (axis.extent - 1) * axis.strides[k];
        axis.strides[k] = -axis.strides[k];
      }
    }
    axes.push_back(axis);
  }
  // Innermost = the output's smallest stride, so that writes are sequential.
  std::stable_sort(axes.begin(), axes.end(), [](const LoopAxis& x, const LoopAxis& y) {
    return x.strides[0] > y.strides[0];
  });
  // Merge an axis into the next inner one when every operand steps through
  // both as one.
  std::vector<LoopAxis> merged;
  for (const LoopAxis& axis : axes) {
    if (!merged.empty()) {
      LoopAxis& outer = merged.back();
      bool mergeable = true;
      for (int k = 0; k < num_operands; ++k) {
        mergeable &= outer.strides[k] == axis.strides[k] * axis.extent;
      }
      if (mergeable) {
        outer.extent *= axis.extent;
        outer.strides = axis.strides;
        continue;
      }
    }
    merged.push_back(axis);
  }
  if (merged.empty()) merged.push_back(LoopAxis{1, {}});

  const LoopAxis inner = merged.back();
  merged.pop_back();

  // When an input walks the inner axis with a larger stride than the next
  // one out (a transposed input into a C-order output), visit the two inner
  // axes in tiles so that the cache lines of that input are reused across
  // rows instead of refetched per element.
  bool tiled = false;
  LoopAxis rows{1, {}};
  if (!merged.empty()) {
    const LoopAxis& next = merged.back();
    for (int k = 1; k < num_operands; ++k) {
      tiled |= next.strides[k] != 0 && std::abs(inner.strides[k]) > std::abs(next.strides[k]);
    }
    if (tiled) {
      rows = next;
      merged.pop_back();
    }
  }
  const std::vector<LoopAxis>& outer = merged;

  std::array<bool, kMaxInputs> convert{};
  std::array<internal_kernels::ConvertRunFn, kMaxInputs> convert_fn{};
  bool any_convert = false;
  for (int k = 0; k < num_inputs; ++k) {
    convert[k] = views[k].dtype() != compute[k];
    if (convert[k]) {
      convert_fn[k] = GetConvertRun(views[k].dtype(), compute[k]);
      any_convert = true;
    }
  }
  std::array<Index, kMaxInputs> in_strides{};
  for (int k = 0; k < num_inputs; ++k) in_strides[k] = inner.strides[k + 1];

  // One run of `length` elements along the inner axis starting at p.
  auto run = [&](const std::array<const std::byte*, kMaxOperands>& p, Index length) {
    std::byte* o = const_cast<std::byte*>(p[0]);
    if (!any_convert) {
      fn(p.data() + 1, in_strides.data(), o, inner.strides[0], length);
      return;
    }
    alignas(64) std::byte buffers[kMaxInputs][kConvertBlock * 16];
    std::array<const std::byte*, kMaxInputs> block_in{};
    std::array<Index, kMaxInputs> block_strides{};
    for (Index start = 0; start < length; start += kConvertBlock) {
      const Index n = std::min(kConvertBlock, length - start);
      for (int k = 0; k < num_inputs; ++k) {
        const std::byte* src = p[k + 1] + start * in_strides[k];
        if (!convert[k]) {
          block_in[k] = src;
          block_strides[k] = in_strides[k];
        } else if (in_strides[k] == 0) {
          if (start == 0) convert_fn[k](src, 0, buffers[k], 0, 1);
          block_in[k] = buffers[k];
          block_strides[k] = 0;
        } else {
          convert_fn[k](src, in_strides[k], buffers[k], compute[k].size(), n);
          block_in[k] = buffers[k];
          block_strides[k] = compute[k].size();
        }
      }
      fn(block_in.data(), block_strides.data(), o + start * inner.strides[0], inner.strides[0], n);
    }
  };

  // All of the inner axis (and of `rows`, tile by tile, when tiled).
  constexpr Index kTileRows = 64;
  constexpr Index kTileColumns = 128;
  auto run_inner = [&](const std::array<const std::byte*, kMaxOperands>& p) {
    if (!tiled) return run(p, inner.extent);
    std::array<const std::byte*, kMaxOperands> q;
    for (Index i0 = 0; i0 < rows.extent; i0 += kTileRows) {
      const Index i_end = std::min(rows.extent, i0 + kTileRows);
      for (Index j0 = 0; j0 < inner.extent; j0 += kTileColumns) {
        const Index length = std::min(kTileColumns, inner.extent - j0);
        for (Index i = i0; i < i_end; ++i) {
          for (int k = 0; k < num_operands; ++k) {
            q[k] = p[k] + i * rows.strides[k] + j0 * inner.strides[k];
          }
          run(q, length);
        }
      }
    }
  };

  std::array<const std::byte*, kMaxOperands> p = base;
  const int num_outer = static_cast<int>(outer.size());
  std::vector<Index> index(num_outer, 0);
  while (true) {
    run_inner(p);
    int d = num_outer - 1;
    for (; d >= 0; --d) {
      if (++index[d] < outer[d].extent) {
        for (int k = 0; k < num_operands; ++k) p[k] += outer[d].strides[k];
        break;
      }
      index[d] = 0;
      for (int k = 0; k < num_operands; ++k) p[k] -= (outer[d].extent - 1) * outer[d].strides[k];
    }
    if (d < 0) break;
  }
}

}  // namespace internal_kernels

// ---------------------------------------------------------------------------
// where, clip, scalars.

namespace {

// Stand-in for a 16-byte element in `where`, which only moves bytes.
struct Bytes16 {
  uint64_t lo, hi;
};

template <int kSize>
struct BytesOfSize;
// clang-format off
template <> struct BytesOfSize<1> { using type = uint8_t; };
template <> struct BytesOfSize<2> { using type = uint16_t; };
template <> struct BytesOfSize<4> { using type = uint32_t; };
template <> struct BytesOfSize<8> { using type = uint64_t; };
template <> struct BytesOfSize<16> { using type = Bytes16; };
// clang-format on

template <typename T>
void WhereRun(const std::byte* const* in, const Index* in_strides, std::byte* out, Index out_stride,
              Index n) {
  internal_kernels::MapTernary<bool, T, T>(in, in_strides, out, out_stride, n,
                                           [](bool c, T x, T y) { return c ? x : y; });
}

// NaN-propagating max then min, as np.clip.
template <typename T>
T ClipValue(T x, T lo, T hi) {
  if constexpr (std::is_floating_point_v<T>) {
    T y = (x > lo || x != x) ? x : lo;
    return (y < hi || y != y) ? y : hi;
  } else if constexpr (std::is_same_v<T, bool>) {
    return (x || lo) && hi;
  } else {
    T y = x > lo ? x : lo;
    return y < hi ? y : hi;
  }
}

}  // namespace

Status ApplyWhere(const ConstArrayView& cond, const ConstArrayView& a, const ConstArrayView& b,
                  const ArrayView& out) {
  const ConstArrayView* inputs[] = {&cond, &a, &b};
  const DType compute[] = {DTypeId::kBool, out.dtype(), out.dtype()};
  auto dispatch = [&]<int kSize>() {
    ForEachRun(inputs, compute, out,
               [](const std::byte* const* p, const Index* s, std::byte* o, Index os, Index n) {
                 WhereRun<typename BytesOfSize<kSize>::type>(p, s, o, os, n);
               });
  };
  switch (out.dtype().size()) {
    case 1:
      dispatch.operator()<1>();
      break;
    case 2:
      dispatch.operator()<2>();
      break;
    case 4:
      dispatch.operator()<4>();
      break;
    case 8:
      dispatch.operator()<8>();
      break;
    case 16:
      dispatch.operator()<16>();
      break;
    default:
      STRATA_CHECK(false) << "unexpected element size " << out.dtype().size();
  }
  return Status::Ok();
}

Status ApplyClip(const ConstArrayView& in, const ConstArrayView& lo, const ConstArrayView& hi,
                 const ArrayView& out) {
  if (out.dtype().is_complex() || in.dtype().is_complex()) {
    return InvalidArgumentError(fmt::format("clip does not support {}", out.dtype().name()));
  }
  const ConstArrayView* inputs[] = {&in, &lo, &hi};
  const DType compute[] = {out.dtype(), out.dtype(), out.dtype()};
  VisitDType(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsComplex<T>) {
      ForEachRun(inputs, compute, out,
                 [](const std::byte* const* p, const Index* s, std::byte* o, Index os, Index n) {
                   internal_kernels::MapTernary<T, T, T>(p, s, o, os, n, ClipValue<T>);
                 });
    }
  });
  return Status::Ok();
}

Result<NDArray> ScalarArray(MemoryPool& pool, DType dtype, double value) {
  STRATA_ASSIGN_OR_RETURN(NDArray a, NDArray::Allocate(pool, dtype, {}));
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    internal_kernels::Store<T>(a.data(), internal_kernels::ConvertValue<T>(value));
  });
  return a;
}

}  // namespace strata
