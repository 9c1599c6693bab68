// Zarr fill values, v2 and v3: parsing into one element's bytes, writing them
// back as zarr-python does, and MakeFillValue (metadata.h).
#include "strata/storage/zarr/metadata_internal.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <type_traits>

#include "strata/base/utf8.h"
#include "strata/core/dtype_dispatch.h"
#include "strata/core/float16.h"
#include "strata/storage/zarr/base64.h"

namespace strata::internal_zarr {
namespace {

// The component type of a float or complex element type.
template <typename T>
struct RealOf {
  using type = T;
};
template <typename T>
struct RealOf<std::complex<T>> {
  using type = T;
};

constexpr uint32_t kCanonicalNaN32 = 0x7fc00000u;
constexpr uint64_t kCanonicalNaN64 = 0x7ff8000000000000ull;

template <typename T>
void StoreLittleEndian(T value, std::byte* out) {
  std::memcpy(out, &value, sizeof(T));  // the host is little-endian (dtype.h)
}

template <typename T>
T LoadLittleEndian(const std::byte* in) {
  T value;
  std::memcpy(&value, in, sizeof(T));
  return value;
}

// Parses one IEEE float (a real fill value or a complex component) of
// `size` bytes into `out`. v3 also accepts "0x..." giving the raw bits.
Status ParseFloatComponent(const OrderedJson& value, int size, ZarrFormat format,
                           std::string_view field, const Doc& doc, std::byte* out) {
  std::optional<std::string_view> text;
  if (std::optional<std::string_view> raw = RawText(value)) {
    text = raw;  // a bare NaN/Infinity literal
  } else if (value.is_string()) {
    text = value.get_ref<const std::string&>();
  }
  if (text.has_value()) {
    double special = 0;
    if (*text == "NaN") {
      if (size == 4) {
        StoreLittleEndian(kCanonicalNaN32, out);
      } else {
        StoreLittleEndian(kCanonicalNaN64, out);
      }
      return Status::Ok();
    } else if (*text == "Infinity") {
      special = std::numeric_limits<double>::infinity();
    } else if (*text == "-Infinity") {
      special = -std::numeric_limits<double>::infinity();
    } else if (format == ZarrFormat::kV3 && text->size() == 2 + 2 * static_cast<size_t>(size) &&
               (text->substr(0, 2) == "0x" || text->substr(0, 2) == "0X")) {
      uint64_t bits = 0;
      std::string_view hex = text->substr(2);
      auto [ptr, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), bits, 16);
      if (ec == std::errc() && ptr == hex.data() + hex.size()) {
        if (size == 4) {
          StoreLittleEndian(static_cast<uint32_t>(bits), out);
        } else {
          StoreLittleEndian(bits, out);
        }
        return Status::Ok();
      }
      return doc.Invalid("'{}' {} is not a valid hexadecimal float", field, Excerpt(value));
    } else {
      return doc.Invalid("'{}' must be a number, \"NaN\", \"Infinity\" or \"-Infinity\"{}, got {}",
                         field,
                         format == ZarrFormat::kV3 ? " or a hex string such as \"0x7fc00000\"" : "",
                         Excerpt(value));
    }
    if (size == 4) {
      StoreLittleEndian(static_cast<float>(special), out);
    } else {
      StoreLittleEndian(special, out);
    }
    return Status::Ok();
  }
  if (!value.is_number()) {
    return doc.Invalid("'{}' must be a number, \"NaN\", \"Infinity\" or \"-Infinity\", got {}",
                       field, Excerpt(value));
  }
  double d = value.get<double>();
  if (size == 4) {
    if (std::fabs(d) > std::numeric_limits<float>::max()) {
      return doc.Invalid("'{}' {} is out of range for a 32-bit float", field, Excerpt(value));
    }
    StoreLittleEndian(static_cast<float>(d), out);
  } else {
    StoreLittleEndian(d, out);
  }
  return Status::Ok();
}

// Decodes UTF-8 into code points; nullopt when malformed.
std::optional<std::vector<uint32_t>> DecodeUtf8(std::string_view text) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const int extra =
        c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (extra < 0) return std::nullopt;
    uint32_t cp = extra == 0 ? c : c & (0x3f >> extra);
    for (int k = 1; k <= extra; ++k) {
      if (i + k >= text.size()) return std::nullopt;
      const auto d = static_cast<unsigned char>(text[i + k]);
      if ((d >> 6) != 2) return std::nullopt;
      cp = (cp << 6) | (d & 0x3f);
    }
    out.push_back(cp);
    i += extra + 1;
  }
  return out;
}

// A float16 fill value: a number, "NaN", "Infinity", "-Infinity", or in v3
// "0x7e00" (the raw bits).
Status ParseHalfFill(const OrderedJson& value, ZarrFormat format, const Doc& doc,
                     std::byte* out) {
  if (format == ZarrFormat::kV3 && value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text.size() == 6 && (text.substr(0, 2) == "0x" || text.substr(0, 2) == "0X")) {
      uint32_t bits = 0;
      auto [ptr, ec] = std::from_chars(text.data() + 2, text.data() + text.size(), bits, 16);
      if (ec != std::errc() || ptr != text.data() + text.size()) {
        return doc.Invalid("'fill_value' {} is not a valid hexadecimal float", Excerpt(value));
      }
      StoreLittleEndian(static_cast<uint16_t>(bits), out);
      return Status::Ok();
    }
  }
  // Through float64, then numpy's rounding to float16.
  std::byte wide[8];
  STRATA_RETURN_IF_ERROR(ParseFloatComponent(value, 8, format, "fill_value", doc, wide));
  StoreLittleEndian(DoubleToHalf(LoadLittleEndian<double>(wide)), out);
  return Status::Ok();
}

// A fill value of a fixed-length type: unicode as the string itself; bytes
// and raw bytes as base64 (what zarr-python writes in v2 and v3). 0 means the
// all-zero element too (zarr-python 2 writes it for arrays created with the
// default fill value).
Status ParseFixedLengthFill(const OrderedJson& value, DType dtype, const Doc& doc,
                            std::byte* out) {
  const size_t size = static_cast<size_t>(dtype.size());
  std::memset(out, 0, size);
  if (AsInt64(value) == 0) return Status::Ok();
  if (!value.is_string()) {
    return doc.Invalid("'fill_value' must be a string for data type {}, got {}", dtype.ToString(),
                       Excerpt(value));
  }
  const std::string& text = value.get_ref<const std::string&>();
  if (dtype.id() == DTypeId::kFixedUnicode) {
    std::optional<std::vector<uint32_t>> cps = DecodeUtf8(text);
    if (!cps.has_value()) return doc.Invalid("'fill_value' {} is not valid UTF-8", Excerpt(value));
    if (static_cast<int>(cps->size()) > dtype.length()) {
      return doc.Invalid("'fill_value' {} is longer than {} characters", Excerpt(value),
                         dtype.length());
    }
    if (!cps->empty()) std::memcpy(out, cps->data(), cps->size() * 4);
    return Status::Ok();
  }
  std::optional<std::vector<std::byte>> bytes = Base64Decode(text);
  if (!bytes.has_value()) {
    return doc.Invalid("'fill_value' {} is not base64 (the encoding of {} fill values)",
                       Excerpt(value), dtype.ToString());
  }
  if (bytes->size() > size) {
    return doc.Invalid("'fill_value' {} decodes to {} bytes, more than the {} of {}",
                       Excerpt(value), bytes->size(), size, dtype.ToString());
  }
  if (!bytes->empty()) std::memcpy(out, bytes->data(), bytes->size());
  return Status::Ok();
}

// Parses an integer fill value, checking it fits `dtype`. Integral floats
// ("0.0") are accepted since numpy would read them the same way.
Status ParseIntegerFill(const OrderedJson& value, DType dtype, std::string_view field,
                        const Doc& doc, std::byte* out) {
  const int bits = 8 * dtype.size();
  const bool is_signed = dtype.is_signed_integer();
  // Range as [min, max] in the wider of int64/uint64.
  const int64_t min_value =
      is_signed ? (bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1)))
                : 0;
  const uint64_t max_value =
      is_signed ? (uint64_t{1} << (bits - 1)) - 1
                : (bits == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << bits) - 1);
  auto out_of_range = [&] {
    return doc.Invalid("'{}' {} is out of range for {} [{}, {}]", field, Excerpt(value),
                       dtype.name(), min_value, max_value);
  };
  bool negative = false;
  uint64_t magnitude_or_value = 0;  // the value when non-negative
  int64_t signed_value = 0;         // the value when negative
  if (value.is_number_unsigned()) {
    magnitude_or_value = value.get<uint64_t>();
  } else if (value.is_number_integer()) {
    signed_value = value.get<int64_t>();
    negative = signed_value < 0;
    if (!negative) magnitude_or_value = static_cast<uint64_t>(signed_value);
  } else if (value.is_number_float()) {
    double d = value.get<double>();
    if (!std::isfinite(d) || d != std::trunc(d)) {
      return doc.Invalid("'{}' must be an integer for data type {}, got {}", field, dtype.name(),
                         Excerpt(value));
    }
    // 2^63 and 2^64 are exact doubles; the comparisons below are exact.
    if (d < 0) {
      if (d < -9223372036854775808.0) return out_of_range();
      negative = true;
      signed_value = static_cast<int64_t>(d);
    } else {
      if (d >= 18446744073709551616.0) return out_of_range();
      magnitude_or_value = static_cast<uint64_t>(d);
    }
  } else {
    return doc.Invalid("'{}' must be an integer for data type {}, got {}", field, dtype.name(),
                       Excerpt(value));
  }
  if (negative) {
    if (signed_value < min_value) return out_of_range();
    uint64_t twos_complement = static_cast<uint64_t>(signed_value);
    std::memcpy(out, &twos_complement, dtype.size());
  } else {
    if (magnitude_or_value > max_value) return out_of_range();
    std::memcpy(out, &magnitude_or_value, dtype.size());
  }
  return Status::Ok();
}

// JSON for one float component: Python-formatted numbers and the spellings of
// non-finite values. In v3 a NaN other than the canonical one is written as
// its hex bits, which is the only way to keep its payload; v2 has no such
// form and zarr-python writes every NaN as "NaN".
template <typename J>
J FloatComponentToJson(const std::byte* in, int size, ZarrFormat format) {
  double d;
  uint64_t bits;
  bool canonical_nan;
  if (size == 4) {
    uint32_t b = LoadLittleEndian<uint32_t>(in);
    bits = b;
    canonical_nan = b == kCanonicalNaN32;
    d = static_cast<double>(std::bit_cast<float>(b));
  } else {
    bits = LoadLittleEndian<uint64_t>(in);
    canonical_nan = bits == kCanonicalNaN64;
    d = std::bit_cast<double>(bits);
  }
  if (std::isnan(d)) {
    if (format == ZarrFormat::kV2 || canonical_nan) return J("NaN");
    return J(fmt::format("0x{:0{}x}", bits, 2 * size));
  }
  if (std::isinf(d)) return J(d > 0 ? "Infinity" : "-Infinity");
  return J(RawString(PythonFloatRepr(d)));
}

}  // namespace

Result<FillValue> ParseFillValue(const OrderedJson& value, DType dtype, ZarrFormat format,
                                 const Doc& doc) {
  constexpr std::string_view kField = "fill_value";
  FillValue fill = ZeroFillValue(dtype);
  if (value.is_null()) {
    if (format == ZarrFormat::kV3) {
      return doc.Invalid("'fill_value' must not be null for data type {}", dtype.name());
    }
    fill.is_null = true;
    return fill;
  }
  std::byte* out = fill.bytes.data();
  if (dtype.is_fixed_length()) {
    STRATA_RETURN_IF_ERROR(ParseFixedLengthFill(value, dtype, doc, out));
  } else if (dtype.is_float16()) {
    STRATA_RETURN_IF_ERROR(ParseHalfFill(value, format, doc, out));
  } else if (dtype.is_bool()) {
    if (value.is_boolean()) {
      out[0] = std::byte{value.get<bool>() ? uint8_t{1} : uint8_t{0}};
    } else if (AsInt64(value).has_value() && (*AsInt64(value) == 0 || *AsInt64(value) == 1)) {
      // zarr-python writes 0/1 for bool fill values in v2, and some v3
      // writers do too.
      out[0] = std::byte{static_cast<uint8_t>(*AsInt64(value))};
    } else {
      return doc.Invalid("'fill_value' must be true or false for data type bool, got {}",
                         Excerpt(value));
    }
  } else if (dtype.is_integer()) {
    STRATA_RETURN_IF_ERROR(ParseIntegerFill(value, dtype, kField, doc, out));
  } else if (dtype.is_float()) {
    STRATA_RETURN_IF_ERROR(ParseFloatComponent(value, dtype.size(), format, kField, doc, out));
  } else {
    STRATA_DCHECK(dtype.is_complex());
    if (!value.is_array() || value.size() != 2) {
      return doc.Invalid("'fill_value' must be a list [real, imaginary] for data type {}, got {}",
                         dtype.name(), Excerpt(value));
    }
    const int component = dtype.component_size();
    STRATA_RETURN_IF_ERROR(
        ParseFloatComponent(value[0], component, format, "fill_value[0]", doc, out));
    STRATA_RETURN_IF_ERROR(
        ParseFloatComponent(value[1], component, format, "fill_value[1]", doc, out + component));
  }
  return fill;
}

template <typename J>
J FillValueToJson(const FillValue& fill, DType dtype, ZarrFormat format) {
  if (fill.is_null && format == ZarrFormat::kV2) return J(nullptr);
  // A fill value of the wrong size (refused by Validate()) is written as zero.
  const FillValue zero = ZeroFillValue(dtype);
  const std::byte* in = fill.bytes.size() == static_cast<size_t>(dtype.size()) ? fill.bytes.data()
                                                                               : zero.bytes.data();
  switch (dtype.id()) {
    case DTypeId::kFloat16: {
      const uint16_t bits = LoadLittleEndian<uint16_t>(in);
      const double d = HalfToDouble(bits);
      if (std::isnan(d)) {
        if (format == ZarrFormat::kV2 || bits == 0x7e00) return J("NaN");
        return J(fmt::format("0x{:04x}", bits));
      }
      if (std::isinf(d)) return J(d > 0 ? "Infinity" : "-Infinity");
      return J(RawString(PythonFloatRepr(d)));
    }
    case DTypeId::kFixedUnicode: {
      std::vector<uint32_t> cps(static_cast<size_t>(dtype.length()));
      std::memcpy(cps.data(), in, cps.size() * 4);
      while (!cps.empty() && cps.back() == 0) cps.pop_back();
      std::string text;
      // A value past U+10FFFF is no character: U+FFFD stands for it, as a
      // decoder replaces what it cannot read.
      for (uint32_t cp : cps) {
        if (!AppendUtf8(cp, text)) AppendUtf8(0xfffd, text);
      }
      return J(std::move(text));
    }
    case DTypeId::kFixedBytes: {
      // numpy drops trailing NULs of "S" scalars; zarr-python encodes what is left.
      size_t n = static_cast<size_t>(dtype.size());
      while (n > 0 && in[n - 1] == std::byte{0}) --n;
      return J(Base64Encode({in, n}));
    }
    case DTypeId::kRawBytes:
      return J(Base64Encode({in, static_cast<size_t>(dtype.size())}));
    default:
      break;
  }
  // The numeric types.
  return VisitDType(dtype, [&](auto tag) -> J {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return J(in[0] != std::byte{0});
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      return J(int64_t{LoadLittleEndian<T>(in)});
    } else if constexpr (std::is_integral_v<T>) {
      return J(uint64_t{LoadLittleEndian<T>(in)});
    } else if constexpr (kIsComplex<T>) {
      constexpr int c = sizeof(typename T::value_type);
      J pair = J::array();
      pair.push_back(FloatComponentToJson<J>(in, c, format));
      pair.push_back(FloatComponentToJson<J>(in + c, c, format));
      return pair;
    } else {
      return FloatComponentToJson<J>(in, sizeof(T), format);
    }
  });
}

template OrderedJson FillValueToJson<OrderedJson>(const FillValue&, DType, ZarrFormat);
template SortedJson FillValueToJson<SortedJson>(const FillValue&, DType, ZarrFormat);

}  // namespace strata::internal_zarr

namespace strata {

using internal_zarr::kCanonicalNaN32;
using internal_zarr::kCanonicalNaN64;
using internal_zarr::RealOf;
using internal_zarr::StoreLittleEndian;

FillValue ZeroFillValue(DType dtype) {
  FillValue fill;
  fill.bytes.assign(dtype.size(), std::byte{0});
  return fill;
}

FillValue MakeFillValue(DType dtype, double value) {
  FillValue fill = ZeroFillValue(dtype);
  std::byte* out = fill.bytes.data();
  if (dtype.is_fixed_length()) return fill;  // only the empty element: zeros
  if (dtype.is_float16()) {
    StoreLittleEndian(DoubleToHalf(value), out);
    return fill;
  }
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      out[0] = std::byte{value != 0 ? uint8_t{1} : uint8_t{0}};  // bool(nan) is True
    } else if constexpr (std::is_integral_v<T>) {
      // numpy's cast for in-range values: truncation toward zero; NaN and
      // out-of-range values (undefined in numpy) saturate here, NaN becomes 0.
      T v = 0;
      if (std::isnan(value)) {
        v = 0;
      } else if (value <= static_cast<double>(std::numeric_limits<T>::min())) {
        v = std::numeric_limits<T>::min();
      } else if (value >= static_cast<double>(std::numeric_limits<T>::max())) {
        v = std::numeric_limits<T>::max();
      } else {
        v = static_cast<T>(value);
      }
      StoreLittleEndian(v, out);
    } else {
      // A float, or the real part of a complex number (the imaginary part
      // stays 0); NaN is the canonical one.
      using Real = typename RealOf<T>::type;
      if constexpr (std::is_same_v<Real, float>) {
        if (std::isnan(value)) {
          StoreLittleEndian(kCanonicalNaN32, out);
        } else if (std::fabs(value) > std::numeric_limits<float>::max()) {
          constexpr float kInf = std::numeric_limits<float>::infinity();
          StoreLittleEndian(value > 0 ? kInf : -kInf, out);
        } else {
          StoreLittleEndian(static_cast<float>(value), out);
        }
      } else {
        StoreLittleEndian(std::isnan(value) ? std::bit_cast<double>(kCanonicalNaN64) : value, out);
      }
    }
  });
  return fill;
}

}  // namespace strata
