// Zarr v2 (.zarray/.zattrs/.zgroup) and v3 (zarr.json) metadata: parsing into
// ArrayMetadata / GroupMetadata and serialisation back.
//
// Parsing is strict about meaning and lenient only where the format allows it:
// every feature Strata does not implement (filters, sharding, unknown codecs,
// extension fields that must be understood) is refused with an error naming
// it. Writing follows zarr-python: a v2 .zarray is byte-identical to what
// zarr-python 2.13 writes for the same array (sorted keys, indent 4, Python's
// float formatting), so that rewriting metadata never causes spurious diffs.
//
// Two JSON details nlohmann does not handle the way Zarr needs:
//   * zarr-python writes attributes with Python's json module, which emits the
//     non-standard literals NaN, Infinity and -Infinity. They are accepted by
//     rewriting them into marked strings before parsing and restored on output.
//   * Python formats floats differently from nlohmann for |x| in [1e15, 1e16)
//     ("1000000000000000.0" vs "1e+15"). Floats are written as marked strings
//     holding Python's spelling, which are unquoted after dumping.
// Both use the same mark: a string "\0strata-raw:<text>" stands for the raw
// JSON text <text>.

#include "strata/storage/zarr/metadata.h"

#include "strata/storage/zarr/base64.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "strata/core/float16.h"
#include <variant>

#include "strata/storage/zarr/json_util.h"

namespace strata {
namespace {

// Keys kept in document order: zarr.json is written in the spec's order and
// attributes keep the user's order.
using OrderedJson = nlohmann::ordered_json;
// Keys sorted: what Python's json.dumps(sort_keys=True) produces, for .zarray,
// .zattrs and .zgroup.
using SortedJson = nlohmann::json;

// ---------------------------------------------------------------------------
// Raw JSON text carried through nlohmann as marked strings.

constexpr std::string_view kRawMark("\0strata-raw:", 12);
// How kRawMark appears in text dumped by nlohmann (control characters are
// escaped as \u00XX).
constexpr std::string_view kDumpedRawMark = "\"\\u0000strata-raw:";

std::string RawString(std::string_view raw_text) {
  std::string s(kRawMark);
  s += raw_text;
  return s;
}

// The raw text of a marked string, or nullopt for an ordinary value.
template <typename J>
std::optional<std::string_view> RawText(const J& value) {
  if (!value.is_string()) return std::nullopt;
  const std::string& s = value.template get_ref<const std::string&>();
  if (std::string_view(s).substr(0, kRawMark.size()) != kRawMark) return std::nullopt;
  return std::string_view(s).substr(kRawMark.size());
}

// Replaces each dumped marked string "\u0000strata-raw:TEXT" by TEXT.
std::string RestoreRawText(std::string dumped) {
  std::string out;
  out.reserve(dumped.size());
  size_t pos = 0;
  while (true) {
    size_t start = dumped.find(kDumpedRawMark, pos);
    if (start == std::string::npos) break;
    size_t text_begin = start + kDumpedRawMark.size();
    size_t close = dumped.find('"', text_begin);
    if (close == std::string::npos) break;  // cannot happen for nlohmann output
    out.append(dumped, pos, start - pos);
    out.append(dumped, text_begin, close - text_begin);
    pos = close + 1;
  }
  out.append(dumped, pos, std::string::npos);
  return out;
}

// Rewrites the literals NaN, Infinity and -Infinity outside strings into
// marked strings so that nlohmann accepts them; nullopt when there are none.
std::optional<std::string> QuoteNonFiniteLiterals(std::string_view text) {
  static constexpr std::string_view kLiterals[] = {"-Infinity", "Infinity", "NaN"};
  std::string out;
  bool changed = false;
  bool in_string = false;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      ++i;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      ++i;
      continue;
    }
    bool replaced = false;
    for (std::string_view literal : kLiterals) {
      if (text.substr(i, literal.size()) == literal) {
        out += "\"\\u0000strata-raw:";
        out += literal;
        out += '"';
        i += literal.size();
        replaced = changed = true;
        break;
      }
    }
    if (!replaced) {
      out += c;
      ++i;
    }
  }
  if (!changed) return std::nullopt;
  return out;
}

// Python's repr() of a float, which json.dumps uses: the shortest digits that
// round-trip, in fixed notation when the decimal exponent is in [-4, 16)
// (always with a fractional part, "100.0"), otherwise "1e+16" / "1.5e-05".
std::string PythonFloatRepr(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string_view sci(buf, end - buf);  // "-1.2345e+17"
  std::string out;
  if (sci.front() == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos)) {
    if (c != '.') digits += c;
  }
  int exponent = 0;
  std::string_view exp_text = sci.substr(e_pos + 1);
  if (exp_text.front() == '+') exp_text.remove_prefix(1);
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exponent);
  int n = static_cast<int>(digits.size());
  if (exponent < -4 || exponent >= 16) {
    out += digits[0];
    if (n > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  } else if (exponent >= 0) {
    if (n <= exponent + 1) {
      out += digits;
      out.append(exponent + 1 - n, '0');
      out += ".0";
    } else {
      out += digits.substr(0, exponent + 1);
      out += '.';
      out += digits.substr(exponent + 1);
    }
  } else {
    out += "0.";
    out.append(-exponent - 1, '0');
    out += digits;
  }
  return out;
}

// Replaces every float in `value` by a marked string holding Python's
// spelling, so that the dumped text matches Python's json.dumps.
template <typename J>
void UsePythonFloats(J& value) {
  if (value.is_number_float()) {
    value = RawString(PythonFloatRepr(value.template get<double>()));
  } else if (value.is_array() || value.is_object()) {
    for (auto& element : value) UsePythonFloats(element);
  }
}

// ---------------------------------------------------------------------------
// Errors.

// A JSON value for an error message, shortened when long.
template <typename J>
std::string Excerpt(const J& value) {
  std::string text =
      RestoreRawText(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  constexpr size_t kMaxExcerpt = 100;
  if (text.size() > kMaxExcerpt) {
    text.resize(kMaxExcerpt);
    text += "...";
  }
  return text;
}

// The document being parsed, for error messages: ".zarray", "zarr.json".
struct Doc {
  std::string_view name;

  template <typename... Args>
  Status Invalid(fmt::format_string<Args...> format, Args&&... args) const {
    return InvalidArgumentError(
        fmt::format("invalid {}: {}", name, fmt::format(format, std::forward<Args>(args)...)));
  }
  Status Missing(std::string_view field) const {
    return Invalid("missing required field '{}'", field);
  }
};

// Parses JSON text; a malformed document gives "malformed JSON in <doc> at
// byte N: <what the parser expected>".
Result<OrderedJson> ParseJson(std::string_view text, const Doc& doc) {
  // Before any parser sees it: nlohmann recurses on nesting (copy, dump, destroy).
  STRATA_RETURN_IF_ERROR(internal_zarr::CheckJsonLimits(text, doc.name));
  auto parse = [](std::string_view t) {
    return OrderedJson::parse(t.begin(), t.end(), /*cb=*/nullptr, /*allow_exceptions=*/true,
                              /*ignore_comments=*/false);
  };
  try {
    return parse(text);
  } catch (const nlohmann::json::parse_error& first_error) {
    // Python's json module writes NaN/Infinity literals (e.g. in attributes);
    // accept them, but report errors against the text as written.
    std::optional<std::string> quoted = QuoteNonFiniteLiterals(text);
    if (quoted.has_value()) {
      try {
        return parse(*quoted);
      } catch (const nlohmann::json::exception&) {
      }
    }
    std::string_view what = first_error.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
    size_t detail = what.find(": ");
    if (detail != std::string_view::npos) what.remove_prefix(detail + 2);
    return InvalidArgumentError(
        fmt::format("malformed JSON in {} at byte {}: {}", doc.name, first_error.byte, what));
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("malformed JSON in {}: {}", doc.name, e.what()));
  }
}

// ---------------------------------------------------------------------------
// Typed field readers. `field` names the member in messages.

const OrderedJson* Find(const OrderedJson& object, std::string_view key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

Result<const OrderedJson*> Require(const OrderedJson& object, std::string_view key,
                                   const Doc& doc) {
  const OrderedJson* value = Find(object, key);
  if (value == nullptr) return doc.Missing(key);
  return value;
}

// The value of an integer JSON number, or nullopt when it is not one (floats,
// even integral ones, are not integers here).
std::optional<int64_t> AsInt64(const OrderedJson& value) {
  if (value.is_number_unsigned()) {
    uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return std::nullopt;
}

Result<int64_t> ReadInt(const OrderedJson& value, std::string_view field, int64_t lo, int64_t hi,
                        const Doc& doc) {
  std::optional<int64_t> v = AsInt64(value);
  if (!v.has_value() || *v < lo || *v > hi) {
    return doc.Invalid("'{}' must be an integer from {} to {}, got {}", field, lo, hi,
                       Excerpt(value));
  }
  return *v;
}

Result<std::string> ReadString(const OrderedJson& value, std::string_view field, const Doc& doc) {
  if (!value.is_string()) {
    return doc.Invalid("'{}' must be a string, got {}", field, Excerpt(value));
  }
  return value.get<std::string>();
}

Result<bool> ReadBool(const OrderedJson& value, std::string_view field, const Doc& doc) {
  if (!value.is_boolean()) {
    return doc.Invalid("'{}' must be true or false, got {}", field, Excerpt(value));
  }
  return value.get<bool>();
}

// A list of integers >= min_value ("shape" 0, chunk shapes 1).
Result<Shape> ReadIndexList(const OrderedJson& value, std::string_view field, Index min_value,
                            const Doc& doc) {
  auto bad = [&] {
    return doc.Invalid("'{}' must be a list of {} integers, got {}", field,
                       min_value == 0 ? "non-negative" : "positive", Excerpt(value));
  };
  if (!value.is_array()) return bad();
  Shape shape;
  for (const OrderedJson& element : value) {
    std::optional<int64_t> v = AsInt64(element);
    if (!v.has_value() || *v < min_value) return bad();
    shape.push_back(*v);
  }
  return shape;
}

// Checks that `object` (a codec configuration, a compressor) has no keys
// outside `known`.
Status CheckKnownKeys(const OrderedJson& object, std::initializer_list<std::string_view> known,
                      std::string_view what, const Doc& doc) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return doc.Invalid("unknown key '{}' in {}", key, what);
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Fill values.

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

std::string EncodeUtf8(std::span<const uint32_t> code_points) {
  std::string out;
  for (uint32_t cp : code_points) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | ((cp >> 18) & 0x07));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
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
      return J(EncodeUtf8(cps));
    }
    case DTypeId::kFixedBytes: {
      // numpy drops trailing NULs of "S" scalars; zarr-python encodes what is left.
      size_t n = static_cast<size_t>(dtype.size());
      while (n > 0 && in[n - 1] == std::byte{0}) --n;
      return J(Base64Encode({in, n}));
    }
    case DTypeId::kRawBytes:
      return J(Base64Encode({in, static_cast<size_t>(dtype.size())}));
    case DTypeId::kBool:
      return J(in[0] != std::byte{0});
    case DTypeId::kInt8:
      return J(int64_t{LoadLittleEndian<int8_t>(in)});
    case DTypeId::kInt16:
      return J(int64_t{LoadLittleEndian<int16_t>(in)});
    case DTypeId::kInt32:
      return J(int64_t{LoadLittleEndian<int32_t>(in)});
    case DTypeId::kInt64:
      return J(LoadLittleEndian<int64_t>(in));
    case DTypeId::kUInt8:
      return J(uint64_t{LoadLittleEndian<uint8_t>(in)});
    case DTypeId::kUInt16:
      return J(uint64_t{LoadLittleEndian<uint16_t>(in)});
    case DTypeId::kUInt32:
      return J(uint64_t{LoadLittleEndian<uint32_t>(in)});
    case DTypeId::kUInt64:
      return J(LoadLittleEndian<uint64_t>(in));
    case DTypeId::kFloat32:
    case DTypeId::kFloat64:
      return FloatComponentToJson<J>(in, dtype.size(), format);
    case DTypeId::kComplex64:
    case DTypeId::kComplex128: {
      int c = dtype.component_size();
      J pair = J::array();
      pair.push_back(FloatComponentToJson<J>(in, c, format));
      pair.push_back(FloatComponentToJson<J>(in + c, c, format));
      return pair;
    }
  }
  return J(nullptr);
}

// ---------------------------------------------------------------------------
// Attributes.

// Checks that `text` is a JSON object; returns it parsed.
Result<OrderedJson> ParseAttributes(std::string_view text, const Doc& doc) {
  STRATA_ASSIGN_OR_RETURN(OrderedJson attributes, ParseJson(text, doc));
  if (!attributes.is_object()) {
    return doc.Invalid("the attributes must be a JSON object, got {}", Excerpt(attributes));
  }
  return attributes;
}

// `attributes_json` parsed; CHECK-fails on text that Validate() refuses.
template <typename J>
J AttributesForEncode(const std::string& attributes_json) {
  Result<OrderedJson> parsed = ParseAttributes(attributes_json, Doc{"attributes"});
  STRATA_CHECK(parsed.ok()) << "Encode() of metadata whose attributes_json is invalid (call "
                               "Validate() first): "
                            << parsed.status().ToString();
  if constexpr (std::is_same_v<J, OrderedJson>) {
    return *parsed;
  } else {
    return J(*parsed);
  }
}

std::string DumpCompact(const OrderedJson& value) {
  return RestoreRawText(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// As Python's json.dumps(indent=4, sort_keys=True, ensure_ascii=True), which is
// how zarr-python 2 writes every metadata document.
std::string DumpLikeZarrPython(SortedJson value) {
  UsePythonFloats(value);
  return RestoreRawText(value.dump(4, ' ', true, nlohmann::json::error_handler_t::replace));
}

// ---------------------------------------------------------------------------
// Zarr v2 compressors.

constexpr std::string_view kBloscCnames[] = {"lz4", "lz4hc", "blosclz", "zstd", "zlib"};

Status CheckBloscCname(const std::string& cname, const Doc& doc) {
  if (std::find(std::begin(kBloscCnames), std::end(kBloscCnames), cname) ==
      std::end(kBloscCnames)) {
    return doc.Invalid("unsupported blosc cname '{}' (expected lz4, lz4hc, blosclz, zstd or zlib)",
                       cname);
  }
  return Status::Ok();
}

// The numcodecs codecs Strata reads (ParseNumcodecsCodec).
constexpr std::string_view kNumcodecsRead[] = {"blosc", "zstd",    "zlib",    "gzip",
                                               "bz2",   "lz4",     "crc32",   "adler32",
                                               "crc32c", "fletcher32", "shuffle"};

bool ReadsNumcodecsCodec(std::string_view id) {
  return std::find(std::begin(kNumcodecsRead), std::end(kNumcodecsRead), id) !=
         std::end(kNumcodecsRead);
}

// A numcodecs codec Strata does not read, refused by its name wherever it
// sits (a v2 compressor or filter, a v3 "numcodecs.<id>" codec of any
// stage), before anything about its place or configuration is checked: the
// message names the codec, not a symptom of it.
// `name`: as the document spells it ("pcodec" in v2, "numcodecs.pcodec" in
// v3); empty: the id.
Status RefuseNumcodecsCodec(std::string_view id, std::string_view field, const Doc& doc,
                            std::string_view name = {}) {
  std::string_view kind = "";
  if (id == "delta" || id == "fixedscaleoffset" || id == "bitround" || id == "quantize" ||
      id == "packbits" || id == "categorize" || id == "astype" || id == "bitshuffle") {
    kind = "an array filter: ";
  } else if (id == "pcodec" || id == "zfpy" || id == "zfp") {
    kind = "a numeric compressor: ";
  }
  return InvalidArgumentError(fmt::format(
      "codec '{}' is not supported ({}{} in {}; Strata reads the numcodecs codecs blosc, zstd, "
      "zlib, gzip, bz2, lz4, crc32, adler32, crc32c, fletcher32 and shuffle)",
      name.empty() ? id : name, kind, field, doc.name));
}

// A numcodecs codec from its configuration object (the v2 "compressor" or a
// "filters" entry, with its "id"; or the configuration of a v3
// "numcodecs.<id>" codec with the id added), with numcodecs' defaults for
// absent keys (numcodecs builds the codec as Codec(**config)). `field` names
// the object in messages ("compressor", "filters[0]", "codecs[1]").
Result<BytesCodecSpec> ParseNumcodecsCodec(const OrderedJson& value, std::string_view field,
                                           const Doc& doc) {
  const OrderedJson* id_value = value.is_object() ? Find(value, "id") : nullptr;
  if (id_value == nullptr || !id_value->is_string()) {
    return doc.Invalid("'{}' must be an object with a string 'id', got {}", field, Excerpt(value));
  }
  const std::string id = id_value->get<std::string>();
  std::string what = fmt::format("{} '{}'", field, id);
  auto read_int = [&](std::string_view key, int64_t lo, int64_t hi,
                      int64_t fallback) -> Result<int64_t> {
    const OrderedJson* v = Find(value, key);
    if (v == nullptr || v->is_null()) return fallback;
    return ReadInt(*v, fmt::format("{}.{}", field, key), lo, hi, doc);
  };
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  constexpr int64_t kIntMin = std::numeric_limits<int>::min();
  if (id == "blosc") {
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(
        value, {"id", "cname", "clevel", "shuffle", "blocksize", "typesize"}, what, doc));
    BloscSpec spec;
    if (const OrderedJson* cname = Find(value, "cname")) {
      STRATA_ASSIGN_OR_RETURN(spec.cname, ReadString(*cname, fmt::format("{}.cname", field), doc));
      STRATA_RETURN_IF_ERROR(CheckBloscCname(spec.cname, doc));
    }
    STRATA_ASSIGN_OR_RETURN(spec.clevel, read_int("clevel", 0, 9, spec.clevel));
    STRATA_ASSIGN_OR_RETURN(spec.shuffle, read_int("shuffle", -1, 2, spec.shuffle));
    STRATA_ASSIGN_OR_RETURN(spec.blocksize, read_int("blocksize", 0, kIntMax, spec.blocksize));
    STRATA_ASSIGN_OR_RETURN(spec.typesize, read_int("typesize", 0, 255, spec.typesize));
    return BytesCodecSpec(spec);
  }
  if (id == "zstd") {
    // numcodecs >= 0.12 also writes "checksum".
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(value, {"id", "level", "checksum"}, what, doc));
    ZstdSpec spec;
    STRATA_ASSIGN_OR_RETURN(spec.level, read_int("level", -131072, 22, spec.level));
    if (const OrderedJson* checksum = Find(value, "checksum")) {
      STRATA_ASSIGN_OR_RETURN(spec.checksum,
                              ReadBool(*checksum, fmt::format("{}.checksum", field), doc));
    }
    return BytesCodecSpec(spec);
  }
  if (id == "zlib" || id == "gzip" || id == "bz2") {
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(value, {"id", "level"}, what, doc));
    if (id == "bz2") {
      Bz2Spec spec;
      STRATA_ASSIGN_OR_RETURN(spec.level, read_int("level", 1, 9, spec.level));
      return BytesCodecSpec(spec);
    }
    ZlibSpec spec;
    STRATA_ASSIGN_OR_RETURN(spec.level, read_int("level", 0, 9, spec.level));
    if (id == "gzip") return BytesCodecSpec(GzipSpec{spec.level});
    return BytesCodecSpec(spec);
  }
  if (id == "lz4") {
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(value, {"id", "acceleration"}, what, doc));
    Lz4Spec spec;
    STRATA_ASSIGN_OR_RETURN(spec.acceleration,
                            read_int("acceleration", kIntMin, kIntMax, spec.acceleration));
    return BytesCodecSpec(spec);
  }
  if (id == "crc32" || id == "adler32" || id == "crc32c" || id == "fletcher32") {
    Checksum32Spec spec;
    spec.kind = id == "crc32"     ? Checksum32Spec::Kind::kCrc32
                : id == "adler32" ? Checksum32Spec::Kind::kAdler32
                : id == "crc32c"  ? Checksum32Spec::Kind::kCrc32c
                                  : Checksum32Spec::Kind::kFletcher32;
    spec.at_start = spec.kind == Checksum32Spec::Kind::kCrc32 ||
                    spec.kind == Checksum32Spec::Kind::kAdler32;
    if (spec.kind == Checksum32Spec::Kind::kFletcher32) {
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(value, {"id"}, what, doc));
      return BytesCodecSpec(spec);
    }
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(value, {"id", "location"}, what, doc));
    if (const OrderedJson* location = Find(value, "location");
        location != nullptr && !location->is_null()) {
      if (*location == "start") {
        spec.at_start = true;
      } else if (*location == "end") {
        spec.at_start = false;
      } else {
        return doc.Invalid("'{}.location' must be \"start\" or \"end\", got {}", field,
                           Excerpt(*location));
      }
    }
    return BytesCodecSpec(spec);
  }
  if (id == "shuffle") {
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(value, {"id", "elementsize"}, what, doc));
    ShuffleSpec spec;
    STRATA_ASSIGN_OR_RETURN(spec.elementsize, read_int("elementsize", 0, 1 << 16, spec.elementsize));
    return BytesCodecSpec(spec);
  }
  return RefuseNumcodecsCodec(id, field, doc);
}

// BloscSpec spells "the element size" as typesize 0, so that the same codec
// read from v2 (where typesize is implicit) and v3 compares equal.
void NormalizeBloscTypesize(ChunkEncoding& encoding) {
  for (BytesCodecSpec& codec : encoding.bytes_codecs) {
    if (auto* blosc = std::get_if<BloscSpec>(&codec);
        blosc != nullptr && blosc->typesize == encoding.dtype.size()) {
      blosc->typesize = 0;
    }
  }
}

Result<std::optional<BytesCodecSpec>> ParseV2Compressor(const OrderedJson& value, const Doc& doc) {
  if (value.is_null()) return std::optional<BytesCodecSpec>();
  if (!value.is_object() || Find(value, "id") == nullptr) {
    return doc.Invalid("'compressor' must be null or an object with a string 'id', got {}",
                       Excerpt(value));
  }
  STRATA_ASSIGN_OR_RETURN(BytesCodecSpec spec, ParseNumcodecsCodec(value, "compressor", doc));
  return std::optional<BytesCodecSpec>(std::move(spec));
}

// The numcodecs configuration of `codec`, "id" included (v2 compressors and
// filters; v3 "numcodecs.*" codecs drop the id).
template <typename J>
J NumcodecsConfigToJson(const BytesCodecSpec& codec) {
  J j = J::object();
  j["id"] = std::string(CodecName(codec));
  std::visit(
      [&](const auto& spec) {
        using T = std::decay_t<decltype(spec)>;
        if constexpr (std::is_same_v<T, BloscSpec>) {
          j["cname"] = spec.cname;
          j["clevel"] = spec.clevel;
          j["shuffle"] = spec.shuffle;
          j["blocksize"] = spec.blocksize;
        } else if constexpr (std::is_same_v<T, ZstdSpec>) {
          j["level"] = spec.level;
          // numcodecs < 0.12 has no checksum argument and would refuse the key.
          if (spec.checksum) j["checksum"] = true;
        } else if constexpr (std::is_same_v<T, ZlibSpec> || std::is_same_v<T, GzipSpec> ||
                             std::is_same_v<T, Bz2Spec>) {
          j["level"] = spec.level;
        } else if constexpr (std::is_same_v<T, Lz4Spec>) {
          j["acceleration"] = spec.acceleration;
        } else if constexpr (std::is_same_v<T, Checksum32Spec>) {
          // numcodecs < 0.13 has no location argument: write it only when it
          // is not the default.
          const bool default_start = spec.kind == Checksum32Spec::Kind::kCrc32 ||
                                     spec.kind == Checksum32Spec::Kind::kAdler32;
          if (spec.kind != Checksum32Spec::Kind::kFletcher32 && spec.at_start != default_start) {
            j["location"] = spec.at_start ? "start" : "end";
          }
        } else if constexpr (std::is_same_v<T, ShuffleSpec>) {
          j["elementsize"] = spec.elementsize;
        } else {
          static_assert(std::is_same_v<T, Crc32cSpec>);
          // numcodecs.CRC32C (numcodecs >= 0.14): the checksum at the end,
          // the same bytes as Zarr v3's crc32c.
        }
      },
      codec);
  return j;
}

// ---------------------------------------------------------------------------
// Zarr v3 codecs and extension objects.

// An extension point value: {"name": ..., "configuration": {...}} or the
// short-hand name string.
struct NamedConfiguration {
  std::string name;
  OrderedJson configuration = OrderedJson::object();
};

Result<NamedConfiguration> ReadNamedConfiguration(const OrderedJson& value, std::string_view field,
                                                  const Doc& doc) {
  NamedConfiguration out;
  if (value.is_string()) {
    out.name = value.get<std::string>();
    return out;
  }
  const OrderedJson* name = value.is_object() ? Find(value, "name") : nullptr;
  if (name == nullptr || !name->is_string()) {
    return doc.Invalid("'{}' must be a name or an object with a string 'name', got {}", field,
                       Excerpt(value));
  }
  out.name = name->get<std::string>();
  for (const auto& [key, member] : value.items()) {
    if (key == "name" || key == "must_understand") continue;
    if (key != "configuration") {
      return doc.Invalid("unknown key '{}' in '{}' {}", key, field, Excerpt(value));
    }
    if (!member.is_object()) {
      return doc.Invalid("'{}.configuration' must be an object, got {}", field, Excerpt(member));
    }
    out.configuration = member;
  }
  return out;
}

// What a variable-length data type holds, by its v3 name (zarr-python 3's
// default for str is "string"; earlier releases wrote
// "variable_length_utf8") or its v2 object codec ("vlen-utf8" ...); empty
// for anything else.
std::string_view VariableLengthKind(std::string_view name) {
  if (name == "string" || name == "variable_length_utf8" || name == "vlen-utf8") {
    return "variable-length UTF-8 strings";
  }
  if (name == "variable_length_bytes" || name == "vlen-bytes") return "variable-length bytes";
  if (name == "vlen-array") return "variable-length arrays";
  if (name == "json2" || name == "pickle" || name == "msgpack2") {
    return "variable-length Python objects";
  }
  return {};
}

// Strata's chunks hold fixed-size elements only: an array of
// variable-length strings (or other objects) is refused in one message that
// names its data type (`dtype`, as the document spells it) and what it holds.
Status RefuseVariableLength(std::string_view dtype, std::string_view what, const Doc& doc) {
  return InvalidArgumentError(fmt::format(
      "unsupported {} in {}: {} are not supported (Strata holds fixed-size elements only; "
      "fixed-length strings, numpy '<U<n>' or '|S<n>', zarr v3 fixed_length_utf32 or "
      "null_terminated_bytes, are)",
      dtype, doc.name, what));
}

// A v3 data_type: a name ("float64", "float16"), or one of zarr-python 3's
// fixed-length types, {"name": "fixed_length_utf32" | "null_terminated_bytes"
// | "raw_bytes", "configuration": {"length_bytes": N}}.
Result<DType> ParseV3DataType(const OrderedJson& value, const Doc& doc) {
  constexpr std::string_view kSupported =
      "Strata supports bool, integers, float16/32/64, complex64/128, fixed_length_utf32, "
      "null_terminated_bytes and raw_bytes";
  if (value.is_string()) {
    const std::string& name = value.get_ref<const std::string&>();
    if (std::string_view what = VariableLengthKind(name); !what.empty()) {
      return RefuseVariableLength(fmt::format("data_type '{}'", name), what, doc);
    }
    // numpy's "S7"/"U13"/"V8" spellings are not v3 names.
    Result<DType> dtype = ParseDTypeName(name);
    if (!dtype.ok() || dtype->is_fixed_length()) {
      return InvalidArgumentError(
          fmt::format("unsupported data_type '{}' in {} ({})", name, doc.name, kSupported));
    }
    return *dtype;
  }
  const OrderedJson* name = value.is_object() ? Find(value, "name") : nullptr;
  if (name == nullptr || !name->is_string()) {
    return doc.Invalid("'data_type' must be a name or an object with a string 'name', got {}",
                       Excerpt(value));
  }
  STRATA_ASSIGN_OR_RETURN(NamedConfiguration type,
                          ReadNamedConfiguration(value, "data_type", doc));
  const bool unicode = type.name == "fixed_length_utf32";
  if (!unicode && type.name != "null_terminated_bytes" && type.name != "raw_bytes") {
    return InvalidArgumentError(fmt::format("unsupported data_type {} in {} ({})", Excerpt(value),
                                            doc.name, kSupported));
  }
  STRATA_RETURN_IF_ERROR(CheckKnownKeys(type.configuration, {"length_bytes"},
                                        "'data_type.configuration'", doc));
  const OrderedJson* length = Find(type.configuration, "length_bytes");
  if (length == nullptr) return doc.Missing("data_type.configuration.length_bytes");
  const int64_t max_bytes = int64_t{DType::kMaxLength} * (unicode ? 4 : 1);
  STRATA_ASSIGN_OR_RETURN(int64_t bytes, ReadInt(*length, "data_type.configuration.length_bytes",
                                                 1, max_bytes, doc));
  if (unicode) {
    if (bytes % 4 != 0) {
      return doc.Invalid("fixed_length_utf32 'length_bytes' {} is not a multiple of 4", bytes);
    }
    return DType::FixedUnicode(static_cast<int>(bytes / 4));
  }
  return type.name == "raw_bytes" ? DType::RawBytes(static_cast<int>(bytes))
                                  : DType::FixedBytes(static_cast<int>(bytes));
}

// The v3 data_type JSON of `dtype`.
OrderedJson V3DataTypeToJson(DType dtype) {
  if (!dtype.is_fixed_length()) return OrderedJson(std::string(dtype.name()));
  return OrderedJson{{"name", std::string(dtype.name())},
                     {"configuration", {{"length_bytes", dtype.size()}}}};
}

constexpr std::string_view kShuffleNames[] = {"noshuffle", "shuffle", "bitshuffle"};

// Parses "codecs" into `encoding` (transpose, endian, bytes codecs).
// Parses "codecs" into `encoding` (transpose, endian, bytes codecs), or, for
// a "sharding_indexed" array -> bytes codec, into `*sharding` (null while
// parsing the inner codecs: nested sharding is refused). `where` is the
// field path for messages ("codecs", "codecs[0].configuration.codecs").
Status ParseV3Codecs(const OrderedJson& value, int rank, ChunkEncoding& encoding, const Doc& doc,
                     std::optional<ShardingSpec>* sharding = nullptr,
                     std::string_view where = "codecs");

Status ParseShardingCodec(const OrderedJson& config, std::string_view field, int rank,
                          DType dtype, const Doc& doc, ShardingSpec& out) {
  STRATA_RETURN_IF_ERROR(CheckKnownKeys(
      config, {"chunk_shape", "codecs", "index_codecs", "index_location"},
      "the configuration of codec 'sharding_indexed'", doc));
  const OrderedJson* chunk_shape = Find(config, "chunk_shape");
  if (chunk_shape == nullptr) return doc.Missing(fmt::format("{}.configuration.chunk_shape", field));
  STRATA_ASSIGN_OR_RETURN(
      out.inner_chunk_shape,
      ReadIndexList(*chunk_shape, "sharding_indexed.chunk_shape", 1, doc));
  if (static_cast<int>(out.inner_chunk_shape.size()) != rank) {
    return doc.Invalid("'sharding_indexed.chunk_shape' {} has {} axes, the array has {}",
                       Excerpt(*chunk_shape), out.inner_chunk_shape.size(), rank);
  }
  const OrderedJson* codecs = Find(config, "codecs");
  if (codecs == nullptr) return doc.Missing(fmt::format("{}.configuration.codecs", field));
  out.inner_encoding = ChunkEncoding{};
  out.inner_encoding.dtype = dtype;
  STRATA_RETURN_IF_ERROR(ParseV3Codecs(*codecs, rank, out.inner_encoding, doc, nullptr,
                                       fmt::format("{}.configuration.codecs", field)));
  // The index: uint64 (offset, nbytes) pairs through "bytes", optionally a
  // crc32c. (Compressing it is forbidden by the spec; anything else is not
  // something any writer produces.) Absent: zarr-python's default.
  out.index_endian = Endian::kLittle;
  out.index_crc32c = true;
  if (const OrderedJson* index_codecs = Find(config, "index_codecs")) {
    ChunkEncoding index;
    index.dtype = DTypeId::kUInt64;
    STRATA_RETURN_IF_ERROR(ParseV3Codecs(*index_codecs, rank + 1, index, doc, nullptr,
                                         fmt::format("{}.configuration.index_codecs", field)));
    const bool crc = index.bytes_codecs.size() == 1 &&
                     (std::holds_alternative<Crc32cSpec>(index.bytes_codecs[0]) ||
                      index.bytes_codecs[0] == BytesCodecSpec(Checksum32Spec{
                                                   Checksum32Spec::Kind::kCrc32c, false}));
    if (!index.transpose.empty() || !(index.bytes_codecs.empty() || crc)) {
      return InvalidArgumentError(fmt::format(
          "unsupported 'sharding_indexed.index_codecs' {} in {} (Strata reads a \"bytes\" "
          "index, optionally followed by \"crc32c\")",
          Excerpt(*index_codecs), doc.name));
    }
    out.index_endian = index.endian;
    out.index_crc32c = crc;
  }
  out.index_at_end = true;
  if (const OrderedJson* location = Find(config, "index_location")) {
    if (*location == "start") {
      out.index_at_end = false;
    } else if (*location != "end") {
      return doc.Invalid("'sharding_indexed.index_location' must be \"start\" or \"end\", got {}",
                         Excerpt(*location));
    }
  }
  return Status::Ok();
}

Status ParseV3Codecs(const OrderedJson& value, int rank, ChunkEncoding& encoding, const Doc& doc,
                     std::optional<ShardingSpec>* sharding, std::string_view where) {
  if (!value.is_array()) return doc.Invalid("'{}' must be a list, got {}", where, Excerpt(value));
  enum class Stage { kArrayToArray, kBytesToBytes };
  Stage stage = Stage::kArrayToArray;
  bool have_transpose = false;
  bool sharded = false;
  for (size_t i = 0; i < value.size(); ++i) {
    std::string field = fmt::format("{}[{}]", where, i);
    STRATA_ASSIGN_OR_RETURN(NamedConfiguration codec, ReadNamedConfiguration(value[i], field, doc));
    const OrderedJson& config = codec.configuration;
    const std::string what = fmt::format("the configuration of codec '{}'", codec.name);
    auto require = [&](std::string_view key) -> Result<const OrderedJson*> {
      const OrderedJson* v = Find(config, key);
      if (v == nullptr) {
        return doc.Invalid("codec '{}' is missing its configuration '{}'", codec.name, key);
      }
      return v;
    };
    auto key_name = [&](std::string_view key) { return fmt::format("{}.{}", codec.name, key); };
    auto must_follow_bytes = [&]() -> Status {
      if (stage != Stage::kBytesToBytes) {
        return doc.Invalid("codec '{}' must come after the 'bytes' codec", codec.name);
      }
      if (sharded) {
        // A codec over the whole shard would hide its index from partial reads.
        return InvalidArgumentError(fmt::format(
            "unsupported codec '{}' after 'sharding_indexed' in {} (Strata reads shards whose "
            "index and inner chunks are stored as they are)",
            codec.name, doc.name));
      }
      return Status::Ok();
    };
    if (codec.name == "transpose") {
      if (stage != Stage::kArrayToArray) {
        return doc.Invalid("codec 'transpose' must come before the 'bytes' codec");
      }
      if (have_transpose) return doc.Invalid("Strata supports at most one 'transpose' codec");
      have_transpose = true;
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(config, {"order"}, what, doc));
      STRATA_ASSIGN_OR_RETURN(const OrderedJson* order, require("order"));
      std::vector<int> permutation;
      std::vector<bool> seen(rank, false);
      if (*order == "C" || *order == "F") {
        // An early draft of the transpose codec (zarrita, zarr-python 3
        // alphas) spelled the two classic orders as "C" and "F".
        if (*order == "F") {
          for (int i = rank - 1; i >= 0; --i) permutation.push_back(i);
        }
        encoding.transpose = std::move(permutation);
        continue;
      }
      bool ok = order->is_array() && static_cast<int>(order->size()) == rank;
      if (ok) {
        for (const OrderedJson& axis : *order) {
          std::optional<int64_t> a = AsInt64(axis);
          if (!a.has_value() || *a < 0 || *a >= rank || seen[*a]) {
            ok = false;
            break;
          }
          seen[*a] = true;
          permutation.push_back(static_cast<int>(*a));
        }
      }
      if (!ok) {
        return doc.Invalid("'transpose.order' must be a permutation of the {} axes [0, {}), got {}",
                           rank, rank, Excerpt(*order));
      }
      encoding.transpose = std::move(permutation);
    } else if (codec.name == "sharding_indexed") {
      if (sharding == nullptr) {
        return InvalidArgumentError(fmt::format(
            "unsupported nested 'sharding_indexed' in {} of {} (Strata reads one level of "
            "sharding)",
            where, doc.name));
      }
      if (stage != Stage::kArrayToArray) {
        return doc.Invalid("'codecs' must contain exactly one array -> bytes codec, found "
                           "'sharding_indexed' after another");
      }
      if (have_transpose) {
        return InvalidArgumentError(fmt::format(
            "unsupported 'transpose' before 'sharding_indexed' in {} (put it in the inner codecs)",
            doc.name));
      }
      stage = Stage::kBytesToBytes;
      sharded = true;
      ShardingSpec spec;
      STRATA_RETURN_IF_ERROR(
          ParseShardingCodec(codec.configuration, field, rank, encoding.dtype, doc, spec));
      *sharding = std::move(spec);
    } else if (codec.name == "bytes") {
      if (stage != Stage::kArrayToArray) {
        return doc.Invalid("'codecs' must contain exactly one 'bytes' codec, found a second one");
      }
      stage = Stage::kBytesToBytes;
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(config, {"endian"}, what, doc));
      if (const OrderedJson* endian = Find(config, "endian")) {
        STRATA_ASSIGN_OR_RETURN(std::string e, ReadString(*endian, "bytes.endian", doc));
        if (e == "little") {
          encoding.endian = Endian::kLittle;
        } else if (e == "big") {
          encoding.endian = Endian::kBig;
        } else {
          return doc.Invalid("'bytes.endian' must be \"little\" or \"big\", got {}",
                             Excerpt(*endian));
        }
      } else if (encoding.dtype.component_size() > 1) {
        return doc.Invalid("codec 'bytes' needs 'endian' for the multi-byte data type {}",
                           encoding.dtype.ToString());
      }
    } else if (codec.name == "blosc") {
      STRATA_RETURN_IF_ERROR(must_follow_bytes());
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(
          config, {"cname", "clevel", "shuffle", "typesize", "blocksize"}, what, doc));
      BloscSpec spec;
      STRATA_ASSIGN_OR_RETURN(const OrderedJson* cname, require("cname"));
      STRATA_ASSIGN_OR_RETURN(spec.cname, ReadString(*cname, "blosc.cname", doc));
      STRATA_RETURN_IF_ERROR(CheckBloscCname(spec.cname, doc));
      STRATA_ASSIGN_OR_RETURN(const OrderedJson* clevel, require("clevel"));
      STRATA_ASSIGN_OR_RETURN(spec.clevel, ReadInt(*clevel, "blosc.clevel", 0, 9, doc));
      STRATA_ASSIGN_OR_RETURN(const OrderedJson* shuffle, require("shuffle"));
      auto shuffle_it = shuffle->is_string()
                            ? std::find(std::begin(kShuffleNames), std::end(kShuffleNames),
                                        shuffle->get_ref<const std::string&>())
                            : std::end(kShuffleNames);
      if (shuffle_it == std::end(kShuffleNames)) {
        return doc.Invalid(
            "'blosc.shuffle' must be \"noshuffle\", \"shuffle\" or \"bitshuffle\", got {}",
            Excerpt(*shuffle));
      }
      spec.shuffle = static_cast<int>(shuffle_it - std::begin(kShuffleNames));
      if (const OrderedJson* typesize = Find(config, "typesize")) {
        STRATA_ASSIGN_OR_RETURN(spec.typesize, ReadInt(*typesize, "blosc.typesize", 1, 255, doc));
        // BloscSpec spells "the element size" as 0, so that the same codec
        // read from v2 (where typesize is implicit) and v3 compares equal.
        if (spec.typesize == encoding.dtype.size()) spec.typesize = 0;
      } else if (spec.shuffle != 0) {
        return doc.Invalid("codec 'blosc' needs 'typesize' unless shuffle is \"noshuffle\"");
      }
      if (const OrderedJson* blocksize = Find(config, "blocksize")) {
        STRATA_ASSIGN_OR_RETURN(spec.blocksize, ReadInt(*blocksize, "blosc.blocksize", 0,
                                                        std::numeric_limits<int>::max(), doc));
      }
      encoding.bytes_codecs.push_back(spec);
    } else if (codec.name == "gzip") {
      STRATA_RETURN_IF_ERROR(must_follow_bytes());
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(config, {"level"}, what, doc));
      GzipSpec spec;
      STRATA_ASSIGN_OR_RETURN(const OrderedJson* level, require("level"));
      STRATA_ASSIGN_OR_RETURN(spec.level, ReadInt(*level, key_name("level"), 0, 9, doc));
      encoding.bytes_codecs.push_back(spec);
    } else if (codec.name == "zstd") {
      STRATA_RETURN_IF_ERROR(must_follow_bytes());
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(config, {"level", "checksum"}, what, doc));
      ZstdSpec spec;
      STRATA_ASSIGN_OR_RETURN(const OrderedJson* level, require("level"));
      STRATA_ASSIGN_OR_RETURN(spec.level, ReadInt(*level, key_name("level"), -131072, 22, doc));
      if (const OrderedJson* checksum = Find(config, "checksum")) {
        STRATA_ASSIGN_OR_RETURN(spec.checksum, ReadBool(*checksum, key_name("checksum"), doc));
      }
      encoding.bytes_codecs.push_back(spec);
    } else if (codec.name == "crc32c") {
      STRATA_RETURN_IF_ERROR(must_follow_bytes());
      STRATA_RETURN_IF_ERROR(CheckKnownKeys(config, {}, what, doc));
      encoding.bytes_codecs.push_back(Crc32cSpec{});
    } else if (codec.name.rfind("numcodecs.", 0) == 0) {
      // zarr-python 3's numcodecs adapters: {"name": "numcodecs.zlib",
      // "configuration": {"level": 1}}, the configuration being numcodecs'
      // own minus its id. Only bytes -> bytes ones exist here.
      const std::string id = codec.name.substr(std::string_view("numcodecs.").size());
      // pcodec and zfpy stand where 'bytes' does, delta before it: their
      // name is the error, not their place.
      if (!ReadsNumcodecsCodec(id)) return RefuseNumcodecsCodec(id, field, doc, codec.name);
      STRATA_RETURN_IF_ERROR(must_follow_bytes());
      OrderedJson numcodecs_config = config;
      if (const OrderedJson* given = Find(config, "id"); given != nullptr && *given != id) {
        return doc.Invalid("codec '{}' has a configuration 'id' {}", codec.name, Excerpt(*given));
      }
      numcodecs_config["id"] = id;
      STRATA_ASSIGN_OR_RETURN(BytesCodecSpec spec,
                              ParseNumcodecsCodec(numcodecs_config, field, doc));
      encoding.bytes_codecs.push_back(std::move(spec));
    } else {
      return InvalidArgumentError(fmt::format(
          "codec '{}' is not supported ({} in {}; Strata supports transpose, bytes, blosc, "
          "gzip, zstd, crc32c, sharding_indexed and numcodecs.{{blosc, zstd, zlib, gzip, bz2, "
          "lz4, crc32, adler32, crc32c, fletcher32, shuffle}})",
          codec.name, field, doc.name));
    }
  }
  if (stage != Stage::kBytesToBytes) {
    return doc.Invalid(
        "'{}' must contain exactly one 'bytes' codec (the array -> bytes "
        "codec), got {}",
        where, Excerpt(value));
  }
  return Status::Ok();
}

// The blosc shuffle Zarr v3 can spell: numcodecs' AUTOSHUFFLE (-1) resolved
// the way numcodecs resolves it.
int ResolvedShuffle(const BloscSpec& spec, int typesize) {
  if (spec.shuffle >= 0) return spec.shuffle;
  return typesize == 1 ? 2 : 1;
}

OrderedJson V3CodecToJson(const BytesCodecSpec& codec, DType dtype) {
  OrderedJson j = OrderedJson::object();
  OrderedJson config = OrderedJson::object();
  std::visit(
      [&](const auto& spec) {
        using T = std::decay_t<decltype(spec)>;
        if constexpr (std::is_same_v<T, BloscSpec>) {
          int typesize = spec.typesize > 0 ? spec.typesize : dtype.size();
          j["name"] = "blosc";
          config["cname"] = spec.cname;
          config["clevel"] = spec.clevel;
          config["shuffle"] = kShuffleNames[ResolvedShuffle(spec, typesize)];
          config["typesize"] = typesize;
          config["blocksize"] = spec.blocksize;
        } else if constexpr (std::is_same_v<T, ZstdSpec>) {
          j["name"] = "zstd";
          config["level"] = spec.level;
          config["checksum"] = spec.checksum;
        } else if constexpr (std::is_same_v<T, GzipSpec>) {
          j["name"] = "gzip";
          config["level"] = spec.level;
        } else if constexpr (std::is_same_v<T, Crc32cSpec>) {
          j["name"] = "crc32c";
        } else {
          // The codecs the v3 core spec does not define are written the way
          // zarr-python 3 writes them: "numcodecs.<id>" with numcodecs'
          // configuration minus its id.
          j["name"] = fmt::format("numcodecs.{}", CodecName(codec));
          config = NumcodecsConfigToJson<OrderedJson>(codec);
          config.erase("id");
          j["configuration"] = std::move(config);
          config = OrderedJson::object();
        }
      },
      codec);
  if (!config.empty()) j["configuration"] = std::move(config);
  return j;
}

// The v3 "codecs" list of `encoding`: transpose, bytes, bytes -> bytes codecs.
OrderedJson V3CodecsToJson(const ChunkEncoding& encoding) {
  OrderedJson codecs = OrderedJson::array();
  if (!encoding.transpose.empty()) {
    codecs.push_back({{"name", "transpose"}, {"configuration", {{"order", encoding.transpose}}}});
  }
  OrderedJson bytes = {{"name", "bytes"}};
  if (encoding.dtype.component_size() > 1) {
    bytes["configuration"] = {{"endian", std::string(EndianName(encoding.endian))}};
  }
  codecs.push_back(std::move(bytes));
  for (const BytesCodecSpec& codec : encoding.bytes_codecs) {
    codecs.push_back(V3CodecToJson(codec, encoding.dtype));
  }
  return codecs;
}

// An unknown top-level key is allowed only as an object saying
// "must_understand": false (v3 core, "Extensions").
Status CheckV3ExtensionField(const std::string& key, const OrderedJson& value, const Doc& doc) {
  if (value.is_object()) {
    const OrderedJson* must_understand = Find(value, "must_understand");
    if (must_understand != nullptr && must_understand->is_boolean() &&
        !must_understand->get<bool>()) {
      return Status::Ok();
    }
  }
  return InvalidArgumentError(fmt::format(
      "unsupported field '{}' in {}: unknown fields must be objects with \"must_understand\": "
      "false",
      key, doc.name));
}

// zarr_format and node_type of a v3 document; `expected_node_type` decides
// which of "array"/"group" is a FailedPrecondition.
Status CheckV3Header(const OrderedJson& root, std::string_view expected_node_type, const Doc& doc) {
  if (!root.is_object()) return doc.Invalid("expected a JSON object, got {}", Excerpt(root));
  STRATA_ASSIGN_OR_RETURN(const OrderedJson* zarr_format, Require(root, "zarr_format", doc));
  if (AsInt64(*zarr_format) != 3) {
    return doc.Invalid("'zarr_format' must be 3, got {}", Excerpt(*zarr_format));
  }
  STRATA_ASSIGN_OR_RETURN(const OrderedJson* node_type_value, Require(root, "node_type", doc));
  STRATA_ASSIGN_OR_RETURN(std::string node_type, ReadString(*node_type_value, "node_type", doc));
  if (node_type != "array" && node_type != "group") {
    return doc.Invalid("'node_type' must be \"array\" or \"group\", got {}",
                       Excerpt(*node_type_value));
  }
  if (node_type != expected_node_type) {
    return FailedPreconditionError(fmt::format("{} describes {}, not {}", doc.name,
                                               node_type == "group" ? "a group" : "an array",
                                               node_type == "group" ? "an array" : "a group"));
  }
  return Status::Ok();
}

Result<std::string> ReadV3Attributes(const OrderedJson& root, const Doc& doc) {
  const OrderedJson* attributes = Find(root, "attributes");
  if (attributes == nullptr) return std::string("{}");
  if (!attributes->is_object()) {
    return doc.Invalid("'attributes' must be an object, got {}", Excerpt(*attributes));
  }
  return DumpCompact(*attributes);
}

// Runs `body`, turning any exception that escapes it (there should be none)
// into an error, so that nothing throws out of this file.
template <typename T, typename F>
Result<T> NoThrow(std::string_view doc_name, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("invalid {}: {}", doc_name, e.what()));
  }
}

bool ParseChunkIndex(std::string_view text, Index& out) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

std::string DescribeTranspose(const std::vector<int>& order) {
  return fmt::format("transpose({})", fmt::join(order, ","));
}

}  // namespace

// ---------------------------------------------------------------------------
// Fill values.

FillValue ZeroFillValue(DType dtype) {
  FillValue fill;
  fill.bytes.assign(dtype.size(), std::byte{0});
  return fill;
}

FillValue MakeFillValue(DType dtype, double value) {
  FillValue fill = ZeroFillValue(dtype);
  std::byte* out = fill.bytes.data();
  // numpy's cast for in-range values: truncation toward zero; NaN and
  // out-of-range values (undefined in numpy) saturate here, NaN becomes 0.
  auto to_integer = [&](auto type_tag) {
    using T = decltype(type_tag);
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
  };
  auto to_float = [&](std::byte* dst) {
    if (std::isnan(value)) {
      StoreLittleEndian(kCanonicalNaN32, dst);
    } else if (std::fabs(value) > std::numeric_limits<float>::max()) {
      constexpr float kInf = std::numeric_limits<float>::infinity();
      StoreLittleEndian(value > 0 ? kInf : -kInf, dst);
    } else {
      StoreLittleEndian(static_cast<float>(value), dst);
    }
  };
  auto to_double = [&](std::byte* dst) {
    StoreLittleEndian(std::isnan(value) ? std::bit_cast<double>(kCanonicalNaN64) : value, dst);
  };
  switch (dtype.id()) {
    case DTypeId::kBool:
      out[0] = std::byte{value != 0 ? uint8_t{1} : uint8_t{0}};  // bool(nan) is True
      break;
    case DTypeId::kInt8:
      to_integer(int8_t{});
      break;
    case DTypeId::kInt16:
      to_integer(int16_t{});
      break;
    case DTypeId::kInt32:
      to_integer(int32_t{});
      break;
    case DTypeId::kInt64:
      to_integer(int64_t{});
      break;
    case DTypeId::kUInt8:
      to_integer(uint8_t{});
      break;
    case DTypeId::kUInt16:
      to_integer(uint16_t{});
      break;
    case DTypeId::kUInt32:
      to_integer(uint32_t{});
      break;
    case DTypeId::kUInt64:
      to_integer(uint64_t{});
      break;
    case DTypeId::kFloat32:
    case DTypeId::kComplex64:
      to_float(out);  // the imaginary part stays 0
      break;
    case DTypeId::kFloat64:
    case DTypeId::kComplex128:
      to_double(out);
      break;
    case DTypeId::kFloat16:
      StoreLittleEndian(DoubleToHalf(value), out);
      break;
    case DTypeId::kFixedBytes:
    case DTypeId::kFixedUnicode:
    case DTypeId::kRawBytes:
      break;  // only the empty element: zeros
  }
  return fill;
}

// ---------------------------------------------------------------------------
// ArrayMetadata.

std::string ArrayMetadata::ChunkKey(std::span<const Index> block) const {
  STRATA_DCHECK(static_cast<int>(block.size()) == rank())
      << "block rank " << block.size() << " for an array of rank " << rank();
  const char sep = chunk_key_encoding.separator;
  if (chunk_key_encoding.kind == ChunkKeyEncoding::Kind::kV2) {
    return JoinIndices(block, sep);  // "0" for rank 0
  }
  std::string key = "c";
  for (Index i : block) {
    key += sep;
    key += std::to_string(i);
  }
  return key;
}

bool ArrayMetadata::ParseChunkKey(std::string_view key, Shape& block) const {
  const char sep = chunk_key_encoding.separator;
  const int n = rank();
  if (chunk_key_encoding.kind == ChunkKeyEncoding::Kind::kDefault) {
    if (key.empty() || key[0] != 'c') return false;
    key.remove_prefix(1);
    if (n == 0) {
      if (!key.empty()) return false;
      block.clear();
      return true;
    }
    if (key.empty() || key[0] != sep) return false;
    key.remove_prefix(1);
  } else if (n == 0) {
    if (key != "0") return false;
    block.clear();
    return true;
  }
  Shape parsed(n);
  for (int axis = 0; axis < n; ++axis) {
    size_t end = axis + 1 < n ? key.find(sep) : key.size();
    if (end == std::string_view::npos) return false;
    if (!ParseChunkIndex(key.substr(0, end), parsed[axis])) return false;
    key.remove_prefix(axis + 1 < n ? end + 1 : end);
  }
  if (!key.empty()) return false;
  block = std::move(parsed);
  return true;
}

// The most dimensions an array may have (numpy's limit).
constexpr int kMaxRank = 32;

Status ArrayMetadata::Validate() const {
  auto invalid = [](std::string message) { return InvalidArgumentError(std::move(message)); };
  const int n = rank();
  if (static_cast<int>(chunk_shape.size()) != n) {
    return invalid(fmt::format("chunk shape {} has rank {} but the array shape {} has rank {}",
                               ShapeToString(chunk_shape), chunk_shape.size(), ShapeToString(shape),
                               n));
  }
  for (Index d : shape) {
    if (d < 0) return invalid(fmt::format("shape {} has a negative extent", ShapeToString(shape)));
  }
  for (Index d : chunk_shape) {
    if (d < 1) {
      return invalid(
          fmt::format("chunk shape {} has an extent below 1", ShapeToString(chunk_shape)));
    }
  }
  if (n > kMaxRank) {
    return invalid(
        fmt::format("rank {} is more than the {} dimensions Strata supports", n, kMaxRank));
  }
  STRATA_ASSIGN_OR_RETURN(Index elements, CheckedNumElements(shape, "shape"));
  if (Index total; __builtin_mul_overflow(elements, Index{dtype().size()}, &total)) {
    return invalid(fmt::format("shape {} of {} holds more bytes than fit in int64 (2^63)",
                               ShapeToString(shape), dtype().name()));
  }
  STRATA_ASSIGN_OR_RETURN(Index chunk_elements, CheckedNumElements(chunk_shape, "chunk shape"));
  Index chunk_bytes;
  if (__builtin_mul_overflow(chunk_elements, Index{dtype().size()}, &chunk_bytes)) {
    return invalid(fmt::format("chunk shape {} of {} has more bytes than fit in int64",
                               ShapeToString(chunk_shape), dtype().name()));
  }
  if (fill_value.bytes.size() != static_cast<size_t>(dtype().size()) &&
      !(fill_value.is_null && fill_value.bytes.empty())) {
    return invalid(fmt::format("fill value has {} bytes but {} elements have {}",
                               fill_value.bytes.size(), dtype().name(), dtype().size()));
  }
  const std::vector<int>& transpose = encoding.transpose;
  if (!transpose.empty()) {
    std::vector<bool> seen(n, false);
    bool is_permutation = static_cast<int>(transpose.size()) == n;
    for (int axis : transpose) {
      if (!is_permutation) break;
      if (axis < 0 || axis >= n || seen[axis]) {
        is_permutation = false;
      } else {
        seen[axis] = true;
      }
    }
    if (!is_permutation) {
      return invalid(fmt::format("transpose ({}) is not a permutation of the {} axes",
                                 fmt::join(transpose, ","), n));
    }
  }
  const char sep = chunk_key_encoding.separator;
  if (sep != '.' && sep != '/') {
    return invalid(fmt::format("chunk key separator '{}' must be '.' or '/'", sep));
  }
  if (dimension_names.has_value() && static_cast<int>(dimension_names->size()) != n) {
    return invalid(
        fmt::format("{} dimension names for an array of rank {}", dimension_names->size(), n));
  }
  if (zarr_format == ZarrFormat::kV2) {
    if (chunk_key_encoding.kind != ChunkKeyEncoding::Kind::kV2) {
      return invalid("Zarr v2 arrays use the v2 chunk key encoding (\"0.1\"), not \"c/0/1\"");
    }
    if (!transpose.empty()) {
      for (int i = 0; i < n; ++i) {
        if (transpose[i] != n - 1 - i) {
          return invalid(
              fmt::format("Zarr v2 stores chunks in C or F order only, not transpose ({})",
                          fmt::join(transpose, ",")));
        }
      }
    }
    // Several bytes codecs are written as filters plus a compressor.
    for (const BytesCodecSpec& codec : encoding.bytes_codecs) {
      if (const auto* blosc = std::get_if<BloscSpec>(&codec);
          blosc != nullptr && blosc->typesize != 0 && blosc->typesize != dtype().size()) {
        return invalid(
            fmt::format("Zarr v2 blosc shuffles by the element size ({}), not typesize {}",
                        dtype().size(), blosc->typesize));
      }
    }
  }
  if (sharding) {
    const Shape& inner = sharding->inner_chunk_shape;
    if (zarr_format != ZarrFormat::kV3) return invalid("sharding needs Zarr v3");
    if (static_cast<int>(inner.size()) != n) {
      return invalid(fmt::format("inner chunk shape {} has rank {}, the array {}",
                                 ShapeToString(inner), inner.size(), n));
    }
    for (int i = 0; i < n; ++i) {
      if (inner[i] < 1 || chunk_shape[i] % inner[i] != 0) {
        return invalid(fmt::format("the inner chunk shape {} must divide the shard shape {}",
                                   ShapeToString(inner), ShapeToString(chunk_shape)));
      }
    }
    if (sharding->inner_encoding.dtype != dtype()) {
      return invalid("the inner chunks of a shard have the array's data type");
    }
    if (!encoding.transpose.empty() || !encoding.bytes_codecs.empty()) {
      return invalid("a sharded array keeps its codecs inside the sharding codec");
    }
    const std::vector<int>& inner_transpose = sharding->inner_encoding.transpose;
    if (!inner_transpose.empty()) {
      std::vector<bool> seen(n, false);
      bool ok = static_cast<int>(inner_transpose.size()) == n;
      for (int axis : inner_transpose) {
        ok = ok && axis >= 0 && axis < n && !seen[axis];
        if (ok) seen[axis] = true;
      }
      if (!ok) return invalid("the inner transpose is not a permutation of the axes");
    }
    // Shards with more inner chunks than this make an index larger than a
    // task should hold (16 bytes each).
    STRATA_ASSIGN_OR_RETURN(Index per_shard, CheckedNumElements(chunk_shape, "shard shape"));
    Index inner_elements = NumElements(inner);
    if (per_shard / inner_elements > (Index{1} << 26)) {
      return invalid(fmt::format("shards of {} hold {} inner chunks of {}, more than 2^26",
                                 ShapeToString(chunk_shape), per_shard / inner_elements,
                                 ShapeToString(inner)));
    }
  }
  Result<OrderedJson> attributes = ParseAttributes(attributes_json, Doc{"attributes"});
  if (!attributes.ok()) return attributes.status();
  return Status::Ok();
}

std::vector<std::pair<std::string, std::string>> ArrayMetadata::Encode() const {
  std::vector<std::pair<std::string, std::string>> documents;
  if (zarr_format == ZarrFormat::kV2) {
    // Exactly the keys zarr-python 2.13 writes; "dimension_separator" only
    // when it is not the default, as zarr.create(...) does.
    SortedJson zarray = SortedJson::object();
    zarray["zarr_format"] = 2;
    zarray["shape"] = shape;
    zarray["chunks"] = chunk_shape;
    zarray["dtype"] = dtype().ZarrV2Name(encoding.endian);
    // The last bytes codec is the compressor, the others filters (see parsing).
    zarray["compressor"] = encoding.bytes_codecs.empty()
                               ? SortedJson(nullptr)
                               : NumcodecsConfigToJson<SortedJson>(encoding.bytes_codecs.back());
    zarray["fill_value"] = FillValueToJson<SortedJson>(fill_value, dtype(), zarr_format);
    if (encoding.bytes_codecs.size() > 1) {
      SortedJson filters = SortedJson::array();
      for (size_t i = 0; i + 1 < encoding.bytes_codecs.size(); ++i) {
        filters.push_back(NumcodecsConfigToJson<SortedJson>(encoding.bytes_codecs[i]));
      }
      zarray["filters"] = std::move(filters);
    } else {
      zarray["filters"] = nullptr;
    }
    zarray["order"] = encoding.transpose.empty() ? "C" : "F";
    if (chunk_key_encoding.separator == '/') zarray["dimension_separator"] = "/";
    documents.emplace_back(std::string(kZarrayKey), DumpLikeZarrPython(std::move(zarray)));
    SortedJson attributes = AttributesForEncode<SortedJson>(attributes_json);
    if (!attributes.empty()) {
      documents.emplace_back(std::string(kZattrsKey), DumpLikeZarrPython(std::move(attributes)));
    }
    return documents;
  }
  OrderedJson zarr = OrderedJson::object();
  zarr["zarr_format"] = 3;
  zarr["node_type"] = "array";
  zarr["shape"] = shape;
  zarr["data_type"] = V3DataTypeToJson(dtype());
  zarr["chunk_grid"] = {{"name", "regular"}, {"configuration", {{"chunk_shape", chunk_shape}}}};
  const bool default_keys = chunk_key_encoding.kind == ChunkKeyEncoding::Kind::kDefault;
  zarr["chunk_key_encoding"] = {
      {"name", default_keys ? "default" : "v2"},
      {"configuration", {{"separator", std::string(1, chunk_key_encoding.separator)}}}};
  // v3 has no null fill value; Strata reads v2's null as zeros, so zero it is.
  zarr["fill_value"] = FillValueToJson<OrderedJson>(fill_value, dtype(), zarr_format);
  if (sharding) {
    OrderedJson index_codecs = OrderedJson::array();
    index_codecs.push_back(
        {{"name", "bytes"},
         {"configuration", {{"endian", std::string(EndianName(sharding->index_endian))}}}});
    if (sharding->index_crc32c) index_codecs.push_back({{"name", "crc32c"}});
    OrderedJson config = {{"chunk_shape", sharding->inner_chunk_shape},
                          {"codecs", V3CodecsToJson(sharding->inner_encoding)},
                          {"index_codecs", std::move(index_codecs)},
                          {"index_location", sharding->index_at_end ? "end" : "start"}};
    OrderedJson codecs = OrderedJson::array();
    codecs.push_back({{"name", "sharding_indexed"}, {"configuration", std::move(config)}});
    zarr["codecs"] = std::move(codecs);
  } else {
    zarr["codecs"] = V3CodecsToJson(encoding);
  }
  zarr["attributes"] = AttributesForEncode<OrderedJson>(attributes_json);
  if (dimension_names.has_value()) {
    OrderedJson names = OrderedJson::array();
    for (const std::optional<std::string>& name : *dimension_names) {
      names.push_back(name.has_value() ? OrderedJson(*name) : OrderedJson(nullptr));
    }
    zarr["dimension_names"] = std::move(names);
  }
  documents.emplace_back(
      std::string(kZarrJsonKey),
      RestoreRawText(zarr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)));
  return documents;
}

// ---------------------------------------------------------------------------
// Parsing.

Result<ArrayMetadata> ParseZarrV2ArrayMetadata(std::string_view zarray_json,
                                               std::string_view zattrs_json) {
  const Doc doc{kZarrayKey};
  return NoThrow<ArrayMetadata>(doc.name, [&]() -> Result<ArrayMetadata> {
    STRATA_ASSIGN_OR_RETURN(OrderedJson root, ParseJson(zarray_json, doc));
    if (!root.is_object()) return doc.Invalid("expected a JSON object, got {}", Excerpt(root));
    ArrayMetadata metadata;
    metadata.zarr_format = ZarrFormat::kV2;

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* zarr_format, Require(root, "zarr_format", doc));
    if (AsInt64(*zarr_format) != 2) {
      return doc.Invalid("'zarr_format' must be 2, got {}", Excerpt(*zarr_format));
    }
    STRATA_ASSIGN_OR_RETURN(const OrderedJson* shape, Require(root, "shape", doc));
    STRATA_ASSIGN_OR_RETURN(metadata.shape, ReadIndexList(*shape, "shape", 0, doc));
    STRATA_ASSIGN_OR_RETURN(const OrderedJson* chunks, Require(root, "chunks", doc));
    STRATA_ASSIGN_OR_RETURN(metadata.chunk_shape, ReadIndexList(*chunks, "chunks", 1, doc));
    if (metadata.chunk_shape.size() != metadata.shape.size()) {
      return doc.Invalid("'chunks' {} and 'shape' {} have different lengths", Excerpt(*chunks),
                         Excerpt(*shape));
    }

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* dtype_value, Require(root, "dtype", doc));
    if (dtype_value->is_array()) {
      return InvalidArgumentError(
          fmt::format("unsupported Zarr v2 dtype {} in {}: structured data types are not supported",
                      Excerpt(*dtype_value), doc.name));
    }
    if (!dtype_value->is_string()) {
      return doc.Invalid("'dtype' must be a typestr such as \"<f8\", got {}",
                         Excerpt(*dtype_value));
    }
    const std::string& typestr = dtype_value->get_ref<const std::string&>();
    if (typestr.size() >= 2 && typestr[1] == 'O') {
      // numpy's object dtype: what the objects are is the first filter's id
      // (zarr-python writes vlen-utf8 for str, vlen-bytes, json2, ...).
      std::string_view what = "variable-length Python objects";
      const OrderedJson* filters = Find(root, "filters");
      if (filters != nullptr && filters->is_array() && !filters->empty() &&
          (*filters)[0].is_object()) {
        const OrderedJson* id = Find((*filters)[0], "id");
        if (id != nullptr && id->is_string()) {
          std::string_view kind = VariableLengthKind(id->get_ref<const std::string&>());
          if (!kind.empty()) what = kind;
        }
      }
      return RefuseVariableLength(fmt::format("Zarr v2 dtype '{}'", typestr), what, doc);
    }
    Result<DTypeWithEndian> dtype = ParseZarrV2DType(typestr);
    if (!dtype.ok()) return dtype.status().WithContext(fmt::format("invalid {}", doc.name));
    metadata.encoding.dtype = dtype->dtype;
    metadata.encoding.endian = dtype->endian;

    // Filters run before the compressor on write: the bytes codecs are the
    // filters in order, then the compressor. Strata supports the filters
    // that act on bytes (checksums, shuffle, compressors); array filters
    // (delta, fixedscaleoffset, ...) are refused by name.
    STRATA_ASSIGN_OR_RETURN(const OrderedJson* filters, Require(root, "filters", doc));
    if (!filters->is_null()) {
      if (!filters->is_array()) {
        return doc.Invalid("'filters' must be null or a list, got {}", Excerpt(*filters));
      }
      for (size_t i = 0; i < filters->size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(
            BytesCodecSpec filter,
            ParseNumcodecsCodec((*filters)[i], fmt::format("filters[{}]", i), doc));
        metadata.encoding.bytes_codecs.push_back(std::move(filter));
      }
    }
    STRATA_ASSIGN_OR_RETURN(const OrderedJson* compressor, Require(root, "compressor", doc));
    STRATA_ASSIGN_OR_RETURN(std::optional<BytesCodecSpec> codec,
                            ParseV2Compressor(*compressor, doc));
    if (codec.has_value()) metadata.encoding.bytes_codecs.push_back(std::move(*codec));
    NormalizeBloscTypesize(metadata.encoding);

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* order_value, Require(root, "order", doc));
    if (*order_value == "F") {
      const int n = static_cast<int>(metadata.shape.size());
      for (int i = n - 1; i >= 0; --i) metadata.encoding.transpose.push_back(i);
    } else if (*order_value != "C") {
      return doc.Invalid("'order' must be \"C\" or \"F\", got {}", Excerpt(*order_value));
    }

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* fill, Require(root, "fill_value", doc));
    STRATA_ASSIGN_OR_RETURN(metadata.fill_value,
                            ParseFillValue(*fill, metadata.dtype(), ZarrFormat::kV2, doc));

    metadata.chunk_key_encoding = {ChunkKeyEncoding::Kind::kV2, '.'};
    if (const OrderedJson* sep = Find(root, "dimension_separator"); sep != nullptr) {
      if (*sep == "/") {
        metadata.chunk_key_encoding.separator = '/';
      } else if (*sep != "." && !sep->is_null()) {
        return doc.Invalid("'dimension_separator' must be \".\" or \"/\", got {}", Excerpt(*sep));
      }
    }
    // Other keys are ignored, as the v2 spec asks.

    if (!zattrs_json.empty()) {
      STRATA_RETURN_IF_ERROR(ParseAttributes(zattrs_json, Doc{kZattrsKey}).status());
      metadata.attributes_json = std::string(zattrs_json);
    }
    STRATA_RETURN_IF_ERROR(metadata.Validate().WithContext(fmt::format("invalid {}", doc.name)));
    return metadata;
  });
}

Result<ArrayMetadata> ParseZarrV3ArrayMetadata(std::string_view zarr_json) {
  const Doc doc{kZarrJsonKey};
  return NoThrow<ArrayMetadata>(doc.name, [&]() -> Result<ArrayMetadata> {
    STRATA_ASSIGN_OR_RETURN(OrderedJson root, ParseJson(zarr_json, doc));
    STRATA_RETURN_IF_ERROR(CheckV3Header(root, "array", doc));
    static constexpr std::string_view kKnown[] = {
        "zarr_format",        "node_type",  "shape",  "data_type",  "chunk_grid",
        "chunk_key_encoding", "fill_value", "codecs", "attributes", "storage_transformers",
        "dimension_names"};
    for (const auto& [key, value] : root.items()) {
      if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
        STRATA_RETURN_IF_ERROR(CheckV3ExtensionField(key, value, doc));
      }
    }
    ArrayMetadata metadata;
    metadata.zarr_format = ZarrFormat::kV3;

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* shape, Require(root, "shape", doc));
    STRATA_ASSIGN_OR_RETURN(metadata.shape, ReadIndexList(*shape, "shape", 0, doc));
    const int rank = static_cast<int>(metadata.shape.size());

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* data_type, Require(root, "data_type", doc));
    STRATA_ASSIGN_OR_RETURN(metadata.encoding.dtype, ParseV3DataType(*data_type, doc));

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* grid_value, Require(root, "chunk_grid", doc));
    STRATA_ASSIGN_OR_RETURN(NamedConfiguration grid,
                            ReadNamedConfiguration(*grid_value, "chunk_grid", doc));
    if (grid.name != "regular") {
      return InvalidArgumentError(fmt::format(
          "unsupported chunk_grid '{}' in {} (Strata supports \"regular\")", grid.name, doc.name));
    }
    STRATA_RETURN_IF_ERROR(
        CheckKnownKeys(grid.configuration, {"chunk_shape"}, "'chunk_grid.configuration'", doc));
    const OrderedJson* chunk_shape = Find(grid.configuration, "chunk_shape");
    if (chunk_shape == nullptr) return doc.Missing("chunk_grid.configuration.chunk_shape");
    STRATA_ASSIGN_OR_RETURN(
        metadata.chunk_shape,
        ReadIndexList(*chunk_shape, "chunk_grid.configuration.chunk_shape", 1, doc));
    if (static_cast<int>(metadata.chunk_shape.size()) != rank) {
      return doc.Invalid("'chunk_shape' {} and 'shape' {} have different lengths",
                         Excerpt(*chunk_shape), Excerpt(*shape));
    }

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* keys_value,
                            Require(root, "chunk_key_encoding", doc));
    STRATA_ASSIGN_OR_RETURN(NamedConfiguration keys,
                            ReadNamedConfiguration(*keys_value, "chunk_key_encoding", doc));
    if (keys.name == "default") {
      metadata.chunk_key_encoding = {ChunkKeyEncoding::Kind::kDefault, '/'};
    } else if (keys.name == "v2") {
      metadata.chunk_key_encoding = {ChunkKeyEncoding::Kind::kV2, '.'};
    } else {
      return InvalidArgumentError(fmt::format(
          "unsupported chunk_key_encoding '{}' in {} (Strata supports \"default\" and \"v2\")",
          keys.name, doc.name));
    }
    STRATA_RETURN_IF_ERROR(CheckKnownKeys(keys.configuration, {"separator"},
                                          "'chunk_key_encoding.configuration'", doc));
    if (const OrderedJson* sep = Find(keys.configuration, "separator")) {
      if (*sep == "/" || *sep == ".") {
        metadata.chunk_key_encoding.separator = sep->get_ref<const std::string&>()[0];
      } else {
        return doc.Invalid(
            "'chunk_key_encoding.configuration.separator' must be \".\" or "
            "\"/\", got {}",
            Excerpt(*sep));
      }
    }

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* fill, Require(root, "fill_value", doc));
    STRATA_ASSIGN_OR_RETURN(metadata.fill_value,
                            ParseFillValue(*fill, metadata.dtype(), ZarrFormat::kV3, doc));

    STRATA_ASSIGN_OR_RETURN(const OrderedJson* codecs, Require(root, "codecs", doc));
    STRATA_RETURN_IF_ERROR(
        ParseV3Codecs(*codecs, rank, metadata.encoding, doc, &metadata.sharding));
    NormalizeBloscTypesize(metadata.encoding);
    if (metadata.sharding) NormalizeBloscTypesize(metadata.sharding->inner_encoding);

    STRATA_ASSIGN_OR_RETURN(metadata.attributes_json, ReadV3Attributes(root, doc));

    if (const OrderedJson* transformers = Find(root, "storage_transformers")) {
      if (!transformers->is_array()) {
        return doc.Invalid("'storage_transformers' must be a list, got {}", Excerpt(*transformers));
      }
      if (!transformers->empty()) {
        const OrderedJson& first = (*transformers)[0];
        const OrderedJson* name = first.is_object() ? Find(first, "name") : &first;
        return InvalidArgumentError(fmt::format("unsupported storage transformer {} in {}",
                                                name != nullptr && name->is_string()
                                                    ? fmt::format("'{}'", name->get<std::string>())
                                                    : Excerpt(first),
                                                doc.name));
      }
    }

    if (const OrderedJson* names = Find(root, "dimension_names");
        names != nullptr && !names->is_null()) {
      auto bad = [&] {
        return doc.Invalid("'dimension_names' must be a list of {} strings or nulls, got {}", rank,
                           Excerpt(*names));
      };
      if (!names->is_array() || static_cast<int>(names->size()) != rank) return bad();
      std::vector<std::optional<std::string>> parsed;
      for (const OrderedJson& name : *names) {
        if (name.is_null()) {
          parsed.emplace_back();
        } else if (name.is_string()) {
          parsed.emplace_back(name.get<std::string>());
        } else {
          return bad();
        }
      }
      metadata.dimension_names = std::move(parsed);
    }

    STRATA_RETURN_IF_ERROR(metadata.Validate().WithContext(fmt::format("invalid {}", doc.name)));
    return metadata;
  });
}

// ---------------------------------------------------------------------------
// Groups.

std::vector<std::pair<std::string, std::string>> GroupMetadata::Encode() const {
  std::vector<std::pair<std::string, std::string>> documents;
  if (zarr_format == ZarrFormat::kV2) {
    documents.emplace_back(std::string(kZgroupKey),
                           DumpLikeZarrPython(SortedJson{{"zarr_format", 2}}));
    SortedJson attributes = AttributesForEncode<SortedJson>(attributes_json);
    if (!attributes.empty()) {
      documents.emplace_back(std::string(kZattrsKey), DumpLikeZarrPython(std::move(attributes)));
    }
    return documents;
  }
  OrderedJson zarr = OrderedJson::object();
  zarr["zarr_format"] = 3;
  zarr["node_type"] = "group";
  zarr["attributes"] = AttributesForEncode<OrderedJson>(attributes_json);
  documents.emplace_back(
      std::string(kZarrJsonKey),
      RestoreRawText(zarr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)));
  return documents;
}

Result<GroupMetadata> ParseZarrV2GroupMetadata(std::string_view zgroup_json,
                                               std::string_view zattrs_json) {
  const Doc doc{kZgroupKey};
  return NoThrow<GroupMetadata>(doc.name, [&]() -> Result<GroupMetadata> {
    STRATA_ASSIGN_OR_RETURN(OrderedJson root, ParseJson(zgroup_json, doc));
    if (!root.is_object()) return doc.Invalid("expected a JSON object, got {}", Excerpt(root));
    STRATA_ASSIGN_OR_RETURN(const OrderedJson* zarr_format, Require(root, "zarr_format", doc));
    if (AsInt64(*zarr_format) != 2) {
      return doc.Invalid("'zarr_format' must be 2, got {}", Excerpt(*zarr_format));
    }
    GroupMetadata group;
    group.zarr_format = ZarrFormat::kV2;
    if (!zattrs_json.empty()) {
      STRATA_RETURN_IF_ERROR(ParseAttributes(zattrs_json, Doc{kZattrsKey}).status());
      group.attributes_json = std::string(zattrs_json);
    }
    return group;
  });
}

Result<GroupMetadata> ParseZarrV3GroupMetadata(std::string_view zarr_json) {
  const Doc doc{kZarrJsonKey};
  return NoThrow<GroupMetadata>(doc.name, [&]() -> Result<GroupMetadata> {
    STRATA_ASSIGN_OR_RETURN(OrderedJson root, ParseJson(zarr_json, doc));
    STRATA_RETURN_IF_ERROR(CheckV3Header(root, "group", doc));
    for (const auto& [key, value] : root.items()) {
      if (key == "zarr_format" || key == "node_type" || key == "attributes") continue;
      // zarr-python 3 writes "consolidated_metadata": null into every group;
      // it is a cache of the children's metadata that Strata does not need.
      if (key == "consolidated_metadata" && (value.is_null() || value.is_object())) continue;
      STRATA_RETURN_IF_ERROR(CheckV3ExtensionField(key, value, doc));
    }
    GroupMetadata group;
    group.zarr_format = ZarrFormat::kV3;
    STRATA_ASSIGN_OR_RETURN(group.attributes_json, ReadV3Attributes(root, doc));
    return group;
  });
}

// ---------------------------------------------------------------------------

namespace {

std::string DescribeChunkEncoding(const ArrayMetadata& metadata, const ChunkEncoding& encoding) {
  std::vector<std::string> parts;
  if (!encoding.transpose.empty()) parts.push_back(DescribeTranspose(encoding.transpose));
  // v3 always names its array -> bytes codec; v2 only when it is not the
  // native byte order.
  if (metadata.zarr_format == ZarrFormat::kV3 ||
      (encoding.endian == Endian::kBig && metadata.dtype().component_size() > 1)) {
    parts.push_back(fmt::format("bytes({})", EndianName(encoding.endian)));
  }
  for (const BytesCodecSpec& codec : encoding.bytes_codecs) parts.push_back(DescribeCodec(codec));
  if (parts.empty()) return "none";
  return fmt::format("{}", fmt::join(parts, " -> "));
}

}  // namespace

std::string DescribeEncoding(const ArrayMetadata& metadata) {
  if (!metadata.sharding) return DescribeChunkEncoding(metadata, metadata.encoding);
  const ShardingSpec& s = *metadata.sharding;
  return fmt::format("sharding_indexed(inner chunks {}: {}; index at {}{}{})",
                     ShapeToString(s.inner_chunk_shape),
                     DescribeChunkEncoding(metadata, s.inner_encoding),
                     s.index_at_end ? "end" : "start", s.index_crc32c ? ", crc32c" : "",
                     s.index_endian == Endian::kBig ? ", big-endian" : "");
}

// ---------------------------------------------------------------------------
// Consolidated metadata.

Result<std::optional<std::vector<std::pair<std::string, std::string>>>> ParseConsolidatedMetadata(
    std::string_view text, ZarrFormat format) {
  using Documents = std::vector<std::pair<std::string, std::string>>;
  const Doc doc{format == ZarrFormat::kV2 ? kZmetadataKey : kZarrJsonKey};
  return NoThrow<std::optional<Documents>>(doc.name, [&]() -> Result<std::optional<Documents>> {
    STRATA_ASSIGN_OR_RETURN(OrderedJson root, ParseJson(text, doc));
    if (!root.is_object()) return doc.Invalid("expected a JSON object, got {}", Excerpt(root));
    const OrderedJson* metadata = nullptr;
    if (format == ZarrFormat::kV2) {
      metadata = Find(root, "metadata");
      if (metadata == nullptr) return doc.Missing("metadata");
    } else {
      const OrderedJson* consolidated = Find(root, "consolidated_metadata");
      if (consolidated == nullptr || consolidated->is_null()) return std::optional<Documents>();
      if (!consolidated->is_object()) {
        return doc.Invalid("'consolidated_metadata' must be an object, got {}",
                           Excerpt(*consolidated));
      }
      metadata = Find(*consolidated, "metadata");
      if (metadata == nullptr) return doc.Missing("consolidated_metadata.metadata");
    }
    if (!metadata->is_object()) {
      return doc.Invalid("the consolidated 'metadata' must be an object, got {}",
                         Excerpt(*metadata));
    }
    Documents out;
    for (const auto& [key, value] : metadata->items()) {
      if (!value.is_object()) {
        return doc.Invalid("consolidated document '{}' must be an object, got {}", key,
                           Excerpt(value));
      }
      out.emplace_back(key, RestoreRawText(value.dump(-1, ' ', false,
                                                      nlohmann::json::error_handler_t::replace)));
    }
    return std::optional<Documents>(std::move(out));
  });
}

std::string EncodeConsolidatedV2(const std::vector<std::pair<std::string, std::string>>& documents) {
  SortedJson metadata = SortedJson::object();
  for (const auto& [key, text] : documents) {
    Result<OrderedJson> parsed = ParseJson(text, Doc{key});
    STRATA_CHECK(parsed.ok()) << "EncodeConsolidatedV2 of an invalid document " << key;
    metadata[key] = SortedJson(*parsed);
  }
  SortedJson root = {{"metadata", std::move(metadata)}, {"zarr_consolidated_format", 1}};
  return DumpLikeZarrPython(std::move(root));
}

std::string EncodeConsolidatedV3(const GroupMetadata& group,
                                 const std::vector<std::pair<std::string, std::string>>& members) {
  OrderedJson zarr = OrderedJson::object();
  zarr["zarr_format"] = 3;
  zarr["node_type"] = "group";
  zarr["attributes"] = AttributesForEncode<OrderedJson>(group.attributes_json);
  OrderedJson metadata = OrderedJson::object();
  for (const auto& [path, text] : members) {
    Result<OrderedJson> parsed = ParseJson(text, Doc{path});
    STRATA_CHECK(parsed.ok()) << "EncodeConsolidatedV3 of an invalid document " << path;
    metadata[path] = *parsed;
  }
  zarr["consolidated_metadata"] = {
      {"kind", "inline"}, {"must_understand", false}, {"metadata", std::move(metadata)}};
  return RestoreRawText(zarr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

Result<std::string> EditAttributes(std::string_view attributes_json, std::string_view key,
                                   std::optional<std::string_view> value_json) {
  return NoThrow<std::string>("attributes", [&]() -> Result<std::string> {
    STRATA_ASSIGN_OR_RETURN(OrderedJson attributes,
                            ParseAttributes(attributes_json, Doc{"attributes"}));
    if (value_json) {
      STRATA_ASSIGN_OR_RETURN(OrderedJson value, ParseJson(*value_json, Doc{"attribute value"}));
      attributes[std::string(key)] = std::move(value);
    } else {
      attributes.erase(std::string(key));
    }
    return DumpCompact(attributes);
  });
}

}  // namespace strata
