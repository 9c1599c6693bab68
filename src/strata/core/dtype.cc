#include "strata/core/dtype.h"

#include <fmt/format.h>

#include <array>
#include <charconv>

namespace strata {
namespace {

struct DTypeInfo {
  DTypeId id;
  std::string_view name;
  char kind;  // numpy kind letter
  int size;
};

constexpr std::array<DTypeInfo, kNumDTypeIds> kInfo = {{
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
    {DTypeId::kFloat16, "float16", 'f', 2},
    // Sizes of the fixed-length types come from their length.
    {DTypeId::kFixedBytes, "null_terminated_bytes", 'S', 0},
    {DTypeId::kFixedUnicode, "fixed_length_utf32", 'U', 0},
    {DTypeId::kRawBytes, "raw_bytes", 'V', 0},
}};

const DTypeInfo& Info(DTypeId id) { return kInfo[static_cast<int>(id)]; }

}  // namespace

int DType::size() const {
  if (id_ == DTypeId::kFixedUnicode) return 4 * length_;
  if (is_fixed_length()) return length_;
  return Info(id_).size;
}

int DType::component_size() const {
  if (is_complex()) return size() / 2;
  if (id_ == DTypeId::kFixedUnicode) return 4;
  if (is_fixed_length()) return 1;
  return size();
}

bool DType::is_signed_integer() const { return Info(id_).kind == 'i'; }
bool DType::is_unsigned_integer() const { return Info(id_).kind == 'u'; }

std::string_view DType::name() const { return Info(id_).name; }

std::string DType::ToString() const {
  if (!is_fixed_length()) return std::string(name());
  return fmt::format("{}{}", Info(id_).kind, length_);
}

std::string DType::ZarrV2Name(Endian endian) const {
  const DTypeInfo& info = Info(id_);
  if (is_fixed_length()) {
    char order = id_ == DTypeId::kFixedUnicode ? (endian == Endian::kLittle ? '<' : '>') : '|';
    return fmt::format("{}{}{}", order, info.kind, length_);
  }
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
  int64_t size = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return unsupported("expected a typestr such as '<f8'");
    size = size * 10 + (c - '0');
    if (size > DType::kMaxLength) break;
  }
  if (kind == 'S' || kind == 'U' || kind == 'V') {
    if (size < 1 || size > DType::kMaxLength) {
      return unsupported(fmt::format("the length must be 1 to {}", DType::kMaxLength));
    }
    const int length = static_cast<int>(size);
    if (kind == 'U') {
      if (order == '|') return unsupported("unicode types need '<' or '>'");
      return DTypeWithEndian{DType::FixedUnicode(length),
                             order == '>' ? Endian::kBig : Endian::kLittle};
    }
    return DTypeWithEndian{kind == 'S' ? DType::FixedBytes(length) : DType::RawBytes(length),
                           Endian::kLittle};
  }
  for (const DTypeInfo& info : kInfo) {
    if (info.size > 0 && info.kind == kind && info.size == size) {
      Endian endian = order == '>' ? Endian::kBig : Endian::kLittle;
      if (size > 1 && order == '|') return unsupported("multi-byte types need '<' or '>'");
      return DTypeWithEndian{DType(info.id), endian};
    }
  }
  switch (kind) {
    case 'O':
      return unsupported("object types (variable-length strings, Python objects) are not supported");
    case 'M':
    case 'm':
      return unsupported("datetime types are not supported");
  }
  return unsupported("unknown kind or size");
}

Result<DType> ParseDTypeName(std::string_view name) {
  for (const DTypeInfo& info : kInfo) {
    if (info.size > 0 && info.name == name) return DType(info.id);
  }
  if (name.size() >= 2 && (name[0] == 'S' || name[0] == 'U' || name[0] == 'V')) {
    int length = 0;
    auto [end, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), length);
    if (ec == std::errc() && end == name.data() + name.size() && length >= 1 &&
        length <= DType::kMaxLength) {
      if (name[0] == 'S') return DType::FixedBytes(length);
      if (name[0] == 'U') return DType::FixedUnicode(length);
      return DType::RawBytes(length);
    }
  }
  return InvalidArgumentError(fmt::format(
      "unsupported data type '{}' (expected one of bool, int8, int16, int32, int64, uint8, "
      "uint16, uint32, uint64, float16, float32, float64, complex64, complex128, or S<n>, U<n>, "
      "V<n> for fixed-length bytes, unicode and raw bytes)",
      name));
}

}  // namespace strata
