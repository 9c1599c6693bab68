// DType: the element types Strata stores and computes with, and their Zarr names.
//
// Zarr v2 names carry a byte order ("<f8", ">i4", "|b1"); Zarr v3 names do not
// ("float64"), the byte order lives in the `bytes` codec. In memory Strata
// always holds elements in the machine's (little-endian) order; chunks stored
// big-endian are swapped on read and write.
#ifndef STRATA_CORE_DTYPE_H_
#define STRATA_CORE_DTYPE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/base/status.h"

namespace strata {

enum class DTypeId : uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat32,
  kFloat64,
  kComplex64,
  kComplex128,
};

inline constexpr int kNumDTypes = 13;

enum class Endian : uint8_t { kLittle, kBig };

inline constexpr Endian kNativeEndian = Endian::kLittle;
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "Strata assumes a little-endian host");

class DType {
 public:
  constexpr DType() : id_(DTypeId::kFloat64) {}
  constexpr DType(DTypeId id) : id_(id) {}  // NOLINT: a DTypeId is a DType

  constexpr DTypeId id() const { return id_; }
  // Bytes per element.
  int size() const;
  // Bytes per scalar component: size() for real types, size()/2 for complex.
  int component_size() const { return is_complex() ? size() / 2 : size(); }

  bool is_bool() const { return id_ == DTypeId::kBool; }
  bool is_signed_integer() const;
  bool is_unsigned_integer() const;
  bool is_integer() const { return is_signed_integer() || is_unsigned_integer(); }
  bool is_float() const { return id_ == DTypeId::kFloat32 || id_ == DTypeId::kFloat64; }
  bool is_complex() const { return id_ == DTypeId::kComplex64 || id_ == DTypeId::kComplex128; }

  // The Zarr v3 / Array API name: "bool", "int8", ..., "float64", "complex128".
  std::string_view name() const;

  // Zarr v2 typestr with the given byte order: "<f8", ">i4", "|b1", "|u1".
  std::string ZarrV2Name(Endian endian) const;

  friend constexpr bool operator==(DType a, DType b) { return a.id_ == b.id_; }

 private:
  DTypeId id_;
};

struct DTypeWithEndian {
  DType dtype;
  Endian endian;
};

// Parses a Zarr v2 typestr ("<f8", ">i2", "|b1", "|i1", "<c16"). Single-byte
// types accept any byte-order mark. InvalidArgument names unsupported types
// (strings, datetimes, structured dtypes).
Result<DTypeWithEndian> ParseZarrV2DType(std::string_view typestr);

// Parses a Zarr v3 data type name ("float64"). Also accepts the same names in
// the API (e.g. `--dtype float32`).
Result<DType> ParseDTypeName(std::string_view name);

std::string_view EndianName(Endian endian);

}  // namespace strata

#endif  // STRATA_CORE_DTYPE_H_
