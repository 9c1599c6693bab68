// VisitDType: calls a generic lambda with the C++ element type of a DType.
//
//   VisitDType(dtype, [&](auto tag) { using T = typename decltype(tag)::type; ... });
//
// Kept out of dtype.h so that only the files instantiating kernels pay for it.
// Only numeric dtypes (DType::is_numeric) may be visited.
#ifndef STRATA_CORE_DTYPE_DISPATCH_H_
#define STRATA_CORE_DTYPE_DISPATCH_H_

#include <complex>
#include <cstdint>

#include "strata/core/dtype.h"

namespace strata {

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename F>
decltype(auto) VisitDType(DType dtype, F&& f) {
  switch (dtype.id()) {
    case DTypeId::kBool: return f(TypeTag<bool>{});
    case DTypeId::kInt8: return f(TypeTag<int8_t>{});
    case DTypeId::kInt16: return f(TypeTag<int16_t>{});
    case DTypeId::kInt32: return f(TypeTag<int32_t>{});
    case DTypeId::kInt64: return f(TypeTag<int64_t>{});
    case DTypeId::kUInt8: return f(TypeTag<uint8_t>{});
    case DTypeId::kUInt16: return f(TypeTag<uint16_t>{});
    case DTypeId::kUInt32: return f(TypeTag<uint32_t>{});
    case DTypeId::kUInt64: return f(TypeTag<uint64_t>{});
    case DTypeId::kFloat32: return f(TypeTag<float>{});
    case DTypeId::kFloat64: return f(TypeTag<double>{});
    case DTypeId::kComplex64: return f(TypeTag<std::complex<float>>{});
    case DTypeId::kComplex128: return f(TypeTag<std::complex<double>>{});
    default:
      break;
  }
  // Storage types (float16, fixed-length) never reach the kernels: the API
  // refuses them (or converts float16) before dispatching.
  STRATA_CHECK(false) << "VisitDType of the storage type " << dtype.ToString();
  __builtin_unreachable();
}

template <typename T>
struct IsComplex : std::false_type {};
template <typename T>
struct IsComplex<std::complex<T>> : std::true_type {};
template <typename T>
inline constexpr bool kIsComplex = IsComplex<T>::value;

template <typename T>
DType DTypeOf();
template <> inline DType DTypeOf<bool>() { return DTypeId::kBool; }
template <> inline DType DTypeOf<int8_t>() { return DTypeId::kInt8; }
template <> inline DType DTypeOf<int16_t>() { return DTypeId::kInt16; }
template <> inline DType DTypeOf<int32_t>() { return DTypeId::kInt32; }
template <> inline DType DTypeOf<int64_t>() { return DTypeId::kInt64; }
template <> inline DType DTypeOf<uint8_t>() { return DTypeId::kUInt8; }
template <> inline DType DTypeOf<uint16_t>() { return DTypeId::kUInt16; }
template <> inline DType DTypeOf<uint32_t>() { return DTypeId::kUInt32; }
template <> inline DType DTypeOf<uint64_t>() { return DTypeId::kUInt64; }
template <> inline DType DTypeOf<float>() { return DTypeId::kFloat32; }
template <> inline DType DTypeOf<double>() { return DTypeId::kFloat64; }
template <> inline DType DTypeOf<std::complex<float>>() { return DTypeId::kComplex64; }
template <> inline DType DTypeOf<std::complex<double>>() { return DTypeId::kComplex128; }

}  // namespace strata

#endif  // STRATA_CORE_DTYPE_DISPATCH_H_
