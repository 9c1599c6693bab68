// The Array API's data type functions: can_cast, finfo, iinfo, isdtype and
// result_type (astype is in api/elementwise.h).
//
// They answer from the same type rules the elementwise ops use
// (PromoteTypes in core/kernels/elementwise.h), so result_type(a, b) is the
// dtype a + b has, and can_cast(from, to) is true exactly when promoting
// `from` with `to` gives `to` (the standard's "safe" casting).
//
// Thread-safety: pure functions.
#ifndef STRATA_API_DTYPE_INFO_H_
#define STRATA_API_DTYPE_INFO_H_

#include <string_view>
#include <variant>
#include <vector>

#include "strata/api/array.h"
#include "strata/base/status.h"
#include "strata/core/dtype.h"

namespace strata {

// Machine limits of a floating-point dtype (for complex dtypes, of their real
// components, as the standard says).
struct FloatInfo {
  int bits = 0;
  double eps = 0;              // 1.0's distance to the next larger value
  double max = 0;              // largest finite value
  double min = 0;              // most negative finite value (-max)
  double smallest_normal = 0;  // smallest positive normal value
  DType dtype;                 // float32 or float64
};

// Limits of an integer dtype.
struct IntInfo {
  int bits = 0;
  int64_t max = 0;  // uint64's max does not fit: see max_unsigned
  int64_t min = 0;
  uint64_t max_unsigned = 0;  // the max of any integer dtype, as unsigned
  DType dtype;
};

// InvalidArgument for bool and integer dtypes ("finfo: int32 is not a
// floating-point dtype").
Result<FloatInfo> finfo(DType dtype);
// InvalidArgument for bool, floating-point and complex dtypes.
Result<IntInfo> iinfo(DType dtype);

// True when `from` promotes with `to` to `to` (no value lost, as the
// standard's type promotion table allows).
bool can_cast(DType from, DType to);

// isdtype(dtype, kind): kind is a dtype (equality), one of the standard's
// kind names ("bool", "signed integer", "unsigned integer", "integral",
// "real floating", "complex floating", "numeric"), or several of either
// (any matches). InvalidArgument for an unknown kind name.
using DTypeKind = std::variant<DType, std::string_view>;
Result<bool> isdtype(DType dtype, DTypeKind kind);
Result<bool> isdtype(DType dtype, const std::vector<DTypeKind>& kinds);

// The dtype the standard's promotion gives for arrays, dtypes and scalars
// together (a scalar takes the dtype of the arrays it meets, as in
// elementwise ops). InvalidArgument when nothing is given, when two dtypes do
// not promote (uint64 with a signed integer), or when an array is in an error
// state (its status).
using TypeOperand = std::variant<DType, Array, Scalar>;
Result<DType> result_type(const std::vector<TypeOperand>& operands);

}  // namespace strata

#endif  // STRATA_API_DTYPE_INFO_H_
