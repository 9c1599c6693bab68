#include "strata/core/dtype.h"

#include <fmt/format.h>

#include <array>

namespace strata {
namespace {

struct DTypeInfo {
  DTypeId id;
  std::string_view name;
  char kind;  // numpy kind letter
  int size;
};

constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {DTypeId::kBool, "bool", 'b', 1},
    {DTypeId::kInt8, "int8", 'i', 1},
    {DTypeId::kInt16, "int16", 'i', 2},
    {DTypeId::kInt32, "int32", 'i', 4},
    {DTypeId::kInt64, "int64", 'i', 8},
    {DTypeId::kUInt8, "uint8", 'u', 1},
    {DTypeId::kUInt16, "uint16", 'u', 2},
    {DTypeId::kUInt32, "uint32", 'u', 4},
    {DTypeId::kUInt64, "uint64", 'u', 8},
    {DTypeId::kFloat32, "float32", 'f', 4},
    {DTypeId::kFloat64, "float64", 'f', 8},
    {DTypeId::kComplex64, "complex64", 'c', 8},
    {DTypeId::kComplex128, "complex128", 'c', 16},
}};

const DTypeInfo& Info(DTypeId id) { return kInfo[static_cast<int>(id)]; }

}  // namespace

int DType::size() const { return Info(id_).size; }

bool DType::is_signed_integer() const { return Info(id_).kind == 'i'; }
bool DType::is_unsigned_integer() const { return Info(id_).kind == 'u'; }

std::string_view DType::name() const { return Info(id_).name; }

std::string DType::ZarrV2Name(Endian endian) const {
  const DTypeInfo& info = Info(id_);
  char order = info.size == 1 ? '|' : (endian == Endian::kLittle ? '<' : '>');
  return fmt::format("{}{}{}", order, info.kind, info.size);
}

std::string_view EndianName(Endian endian) { return endian == Endian::kLittle ? "little" : "big"; }

Result<DTypeWithEndian> ParseZarrV2DType(std::string_view typestr) {
  auto unsupported = [&](std::string_view why) {
    return InvalidArgumentError(fmt::format("unsupported Zarr v2 dtype '{}': {}", typestr, why));
  };
  if (typestr.size() < 3) return unsupported("expected a typestr such as '<f8'");
  char order = typestr[0];
  char kind = typestr[1];
  std::string_view digits = typestr.substr(2);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    return unsupported("the byte order must be '<', '>' or '|'");
  }
  int size = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return unsupported("expected a typestr such as '<f8'");
    size = size * 10 + (c - '0');
    if (size > 1000) break;
  }
  for (const DTypeInfo& info : kInfo) {
    if (info.kind == kind && info.size == size) {
      Endian endian = order == '>' ? Endian::kBig : Endian::kLittle;
      if (size > 1 && order == '|') return unsupported("multi-byte types need '<' or '>'");
      return DTypeWithEndian{DType(info.id), endian};
    }
  }
  switch (kind) {
    case 'S':
    case 'U':
    case 'O':
      return unsupported("string and object types are not supported");
    case 'M':
    case 'm':
      return unsupported("datetime types are not supported");
    case 'V':
      return unsupported("structured and void types are not supported");
    case 'f':
      if (size == 2) return unsupported("float16 is not supported");
      break;
  }
  return unsupported("unknown kind or size");
}

Result<DType> ParseDTypeName(std::string_view name) {
  for (const DTypeInfo& info : kInfo) {
    if (info.name == name) return DType(info.id);
  }
  return InvalidArgumentError(fmt::format(
      "unsupported data type '{}' (expected one of bool, int8, int16, int32, int64, uint8, "
      "uint16, uint32, uint64, float32, float64, complex64, complex128)",
      name));
}

}  // namespace strata
