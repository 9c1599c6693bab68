#include "strata/api/dtype_info.h"

#include <fmt/format.h>

#include <limits>

#include "strata/core/kernels/elementwise.h"

namespace strata {

Result<FloatInfo> finfo(DType dtype) {
  FloatInfo info;
  auto fill = [&](auto v) {
    using T = decltype(v);
    info.bits = 8 * static_cast<int>(sizeof(T));
    info.eps = std::numeric_limits<T>::epsilon();
    info.max = std::numeric_limits<T>::max();
    info.min = std::numeric_limits<T>::lowest();
    info.smallest_normal = std::numeric_limits<T>::min();
  };
  switch (dtype.id()) {
    case DTypeId::kFloat32:
    case DTypeId::kComplex64:
      fill(float{});
      info.dtype = DTypeId::kFloat32;
      return info;
    case DTypeId::kFloat64:
    case DTypeId::kComplex128:
      fill(double{});
      info.dtype = DTypeId::kFloat64;
      return info;
    default:
      return InvalidArgumentError(
          fmt::format("finfo: {} is not a floating-point dtype", dtype.name()));
  }
}

Result<IntInfo> iinfo(DType dtype) {
  IntInfo info;
  info.dtype = dtype;
  auto fill = [&](auto v) {
    using T = decltype(v);
    info.bits = 8 * static_cast<int>(sizeof(T));
    info.min = static_cast<int64_t>(std::numeric_limits<T>::min());
    info.max_unsigned = static_cast<uint64_t>(std::numeric_limits<T>::max());
    info.max = info.max_unsigned > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                   ? std::numeric_limits<int64_t>::max()
                   : static_cast<int64_t>(info.max_unsigned);
  };
  switch (dtype.id()) {
    case DTypeId::kInt8:
      fill(int8_t{});
      return info;
    case DTypeId::kInt16:
      fill(int16_t{});
      return info;
    case DTypeId::kInt32:
      fill(int32_t{});
      return info;
    case DTypeId::kInt64:
      fill(int64_t{});
      return info;
    case DTypeId::kUInt8:
      fill(uint8_t{});
      return info;
    case DTypeId::kUInt16:
      fill(uint16_t{});
      return info;
    case DTypeId::kUInt32:
      fill(uint32_t{});
      return info;
    case DTypeId::kUInt64:
      fill(uint64_t{});
      return info;
    default:
      return InvalidArgumentError(fmt::format("iinfo: {} is not an integer dtype", dtype.name()));
  }
}

bool can_cast(DType from, DType to) {
  if (from == to) return true;
  // Bool promotes to numbers in PromoteTypes (numpy's rule), and numbers to
  // bool never.
  if (to.is_bool()) return false;
  Result<DType> p = PromoteTypes(from, to);
  return p.ok() && *p == to;
}

namespace {

Result<bool> MatchesKind(DType dtype, const DTypeKind& kind) {
  if (const DType* d = std::get_if<DType>(&kind)) return *d == dtype;
  const std::string_view name = std::get<std::string_view>(kind);
  if (name == "bool") return dtype.is_bool();
  if (name == "signed integer") return dtype.is_signed_integer();
  if (name == "unsigned integer") return dtype.is_unsigned_integer();
  if (name == "integral") return dtype.is_integer();
  if (name == "real floating") return dtype.is_float();
  if (name == "complex floating") return dtype.is_complex();
  if (name == "numeric") return !dtype.is_bool();
  return InvalidArgumentError(fmt::format(
      "isdtype: unknown kind '{}' (bool, signed integer, unsigned integer, integral, real "
      "floating, complex floating, numeric)",
      name));
}

}  // namespace

Result<bool> isdtype(DType dtype, DTypeKind kind) { return MatchesKind(dtype, kind); }

Result<bool> isdtype(DType dtype, const std::vector<DTypeKind>& kinds) {
  bool any = false;
  for (const DTypeKind& k : kinds) {
    STRATA_ASSIGN_OR_RETURN(bool m, MatchesKind(dtype, k));
    any = any || m;
  }
  return any;
}

Result<DType> result_type(const std::vector<TypeOperand>& operands) {
  if (operands.empty()) {
    return InvalidArgumentError("result_type: at least one array or dtype is needed");
  }
  std::optional<DType> t;
  std::vector<Scalar> scalars;
  for (const TypeOperand& o : operands) {
    DType d;
    if (const Scalar* s = std::get_if<Scalar>(&o)) {
      scalars.push_back(*s);
      continue;
    }
    if (const Array* a = std::get_if<Array>(&o)) {
      if (!a->ok()) return a->status();
      d = a->dtype();
    } else {
      d = std::get<DType>(o);
    }
    if (!t) {
      t = d;
      continue;
    }
    Result<DType> p = PromoteTypes(*t, d);
    if (!p.ok()) return p.status().WithContext("result_type");
    t = *p;
  }
  // Scalars alone promote among their default dtypes; beside arrays they take
  // the arrays' dtype when their kinds agree (Scalar::DTypeBeside).
  for (const Scalar& s : scalars) {
    if (!t) {
      t = s.DefaultDType();
      continue;
    }
    Result<DType> p = PromoteTypes(*t, s.DTypeBeside(*t));
    if (!p.ok()) return p.status().WithContext("result_type");
    t = *p;
  }
  return *t;
}

}  // namespace strata
