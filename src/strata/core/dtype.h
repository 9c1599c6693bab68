// DType: the element types Strata stores and computes with, and their Zarr names.
//
// Zarr v2 names carry a byte order ("<f8", ">i4", "|b1"); Zarr v3 names do not
// ("float64"), the byte order lives in the `bytes` codec. In memory Strata
// always holds elements in the machine's (little-endian) order; chunks stored
// big-endian are swapped on read and write.
//
// Two families:
//   numeric  bool, integers, float32/64, complex64/128: the types the kernels
//            compute with (ids 0 .. kNumDTypes - 1, VisitDType's domain).
//   storage  float16 and the fixed-length types (numpy "S", "U", "V"): stored,
//            moved, rechunked, compared and converted (float16 <-> numeric with
//            astype), but not computed with. A fixed-length type carries its
//            length: "|S7" is DType::FixedBytes(7) (7 bytes, null-padded), "<U13"
//            DType::FixedUnicode(13) (13 UTF-32 code points, 52 bytes), "|V8"
//            DType::RawBytes(8).
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
  // Storage types (see the file comment).
  kFloat16,
  kFixedBytes,
  kFixedUnicode,
  kRawBytes,
};

// The numeric dtypes are ids 0 .. kNumDTypes - 1.
inline constexpr int kNumDTypes = 13;
// Every dtype id, storage types included.
inline constexpr int kNumDTypeIds = 17;

enum class Endian : uint8_t { kLittle, kBig };

inline constexpr Endian kNativeEndian = Endian::kLittle;
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "Strata assumes a little-endian host");

class DType {
 public:
  constexpr DType() : id_(DTypeId::kFloat64) {}
  // A type without a length (every type but the fixed-length ones).
  constexpr DType(DTypeId id) : id_(id) {}  // NOLINT: a DTypeId is a DType

  // Fixed-length types; `length` >= 1 (bytes, or code points for unicode).
  static DType FixedBytes(int length) { return DType(DTypeId::kFixedBytes, length); }
  static DType FixedUnicode(int length) { return DType(DTypeId::kFixedUnicode, length); }
  static DType RawBytes(int length) { return DType(DTypeId::kRawBytes, length); }
  // Longest length accepted when parsing metadata (numpy has no limit; 1 MiB
  // elements keep chunk arithmetic far from overflow).
  static constexpr int kMaxLength = 1 << 20;

  constexpr DTypeId id() const { return id_; }
  // Bytes per element.
  int size() const;
  // Bytes per scalar component, the unit of byte swapping: size() for real
  // types, size()/2 for complex, 4 for unicode (UTF-32), 1 for bytes.
  int component_size() const;
  // Length of a fixed-length type (bytes or code points); 0 for the others.
  int length() const { return length_; }

  bool is_bool() const { return id_ == DTypeId::kBool; }
  bool is_signed_integer() const;
  bool is_unsigned_integer() const;
  bool is_integer() const { return is_signed_integer() || is_unsigned_integer(); }
  bool is_float() const { return id_ == DTypeId::kFloat32 || id_ == DTypeId::kFloat64; }
  bool is_complex() const { return id_ == DTypeId::kComplex64 || id_ == DTypeId::kComplex128; }
  // The kernels compute with these (VisitDType's domain).
  bool is_numeric() const { return static_cast<int>(id_) < kNumDTypes; }
  bool is_float16() const { return id_ == DTypeId::kFloat16; }
  // numpy "S", "U" and "V": fixed-length byte strings, unicode and raw bytes.
  bool is_fixed_length() const {
    return id_ == DTypeId::kFixedBytes || id_ == DTypeId::kFixedUnicode ||
           id_ == DTypeId::kRawBytes;
  }

  // The Zarr v3 / Array API name: "bool", "int8", ..., "float64", "complex128",
  // "float16"; for fixed-length types the Zarr v3 extension name without its
  // length ("fixed_length_utf32", "null_terminated_bytes", "raw_bytes").
  std::string_view name() const;
  // For messages: name() for types without a length, numpy's "S7", "U13", "V8"
  // for the others.
  std::string ToString() const;

  // Zarr v2 typestr with the given byte order: "<f8", ">i4", "|b1", "|u1",
  // "<f2", "|S7", "<U13", "|V8".
  std::string ZarrV2Name(Endian endian) const;

  friend constexpr bool operator==(DType a, DType b) {
    return a.id_ == b.id_ && a.length_ == b.length_;
  }

 private:
  constexpr DType(DTypeId id, int length) : id_(id), length_(length) {}
  DTypeId id_;
  int length_ = 0;
};

struct DTypeWithEndian {
  DType dtype;
  Endian endian;
};

// Parses a Zarr v2 typestr ("<f8", ">i2", "|b1", "|i1", "<c16", "<f2", "|S7",
// "<U13", "|V8"). Single-byte types accept any byte-order mark.
// InvalidArgument names unsupported types (objects, datetimes, structured
// dtypes).
Result<DTypeWithEndian> ParseZarrV2DType(std::string_view typestr);

// Parses a data type name as the API takes it (e.g. `--dtype float32`): the
// Zarr v3 names of the numeric types ("bool", "float64", "float16"), and
// numpy's "S7", "U13", "V8" for fixed-length types. Zarr v3 metadata spells
// fixed-length types as objects with a length_bytes instead, and refuses the
// numpy spellings: storage/zarr/v3_metadata.cc (ParseV3DataType) parses it.
// InvalidArgument lists the names taken.
Result<DType> ParseDTypeName(std::string_view name);

std::string_view EndianName(Endian endian);

}  // namespace strata

#endif  // STRATA_CORE_DTYPE_H_
