// CF encodings: parsing, decoding, encoding, converting (cf_encoding.h).
#include "strata/tools/cf_encoding.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "strata/core/dtype_dispatch.h"
#include "strata/storage/zarr/base64.h"
#include "strata/storage/zarr/json_util.h"

namespace strata {
namespace {

using Json = nlohmann::ordered_json;

// The attributes of `name` as a JSON object. Python's bare NaN/Infinity
// literals are read as json_util.h's marked strings (RawText).
Result<Json> ParseAttributes(const std::string& text, std::string_view name) {
  STRATA_ASSIGN_OR_RETURN(Json j, internal_zarr::ParsePythonJson(
                                      text, fmt::format("the attributes of {}", name)));
  if (!j.is_object()) {
    return InvalidArgumentError(fmt::format("{}: the attributes are not a JSON object", name));
  }
  return j;
}

// A number attribute: a JSON number, "NaN"/"Infinity"/"-Infinity", or (as
// xarray writes a float _FillValue in Zarr v3) the base64 of a float64.
Result<double> AttributeNumber(const Json& v, std::string_view name, std::string_view attribute) {
  if (v.is_number()) return v.get<double>();
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  std::optional<std::string_view> text = internal_zarr::RawText(v);  // a bare NaN literal
  if (!text && v.is_string()) text = v.get_ref<const std::string&>();
  if (text) {
    const std::string_view s = *text;
    if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
    std::optional<std::vector<std::byte>> bytes = Base64Decode(s);
    if (bytes && bytes->size() == 8) {
      double d;
      std::memcpy(&d, bytes->data(), 8);
      return d;
    }
    if (bytes && bytes->size() == 4) {
      float f;
      std::memcpy(&f, bytes->data(), 4);
      return static_cast<double>(f);
    }
  }
  if (v.is_array() && v.size() == 1) return AttributeNumber(v[0], name, attribute);
  return InvalidArgumentError(fmt::format("{}: attribute {} is {}, not a number", name, attribute,
                                          internal_zarr::Excerpt(v)));
}

bool IsIntegerId(DTypeId id) { return DType(id).is_integer(); }

bool IsConvertible(DType d) { return d.is_integer() || d.is_float(); }

// Calls f(TypeTag<T>) with the element type of a dtype the conversions know
// (bool, the integers, float32, float64); returns `otherwise` for any other
// (complex, float16, fixed-length), which VisitDType would not take.
template <typename R, typename F>
R VisitConvertible(DTypeId id, R otherwise, F&& f) {
  const DType d(id);
  if (!d.is_bool() && !IsConvertible(d)) return otherwise;
  return VisitDType(d, [&](auto tag) -> R {
    using T = typename decltype(tag)::type;
    if constexpr (kIsComplex<T>) {
      return otherwise;
    } else {
      return f(tag);
    }
  });
}

template <typename T>
T LoadElement(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// One stored element as a double (exact for integers up to 2^53).
double LoadNumber(DTypeId id, const std::byte* p) {
  return VisitConvertible(id, std::numeric_limits<double>::quiet_NaN(), [p](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return std::to_integer<uint8_t>(*p) != 0 ? 1.0 : 0.0;  // any nonzero byte is true
    } else {
      return static_cast<double>(LoadElement<T>(p));
    }
  });
}

// The range of an integer dtype, as doubles: [lo, hi_exclusive), both
// powers of two and so exact; (-inf, inf) for the others.
void IntegerRange(DTypeId id, double& lo, double& hi_exclusive) {
  lo = -INFINITY;
  hi_exclusive = INFINITY;
  if (!IsIntegerId(id)) return;
  VisitConvertible(id, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    hi_exclusive = std::ldexp(1.0, std::numeric_limits<T>::digits);
    lo = std::is_signed_v<T> ? -hi_exclusive : 0.0;
    return 0;
  });
}

// Stores `v` (already checked to fit) as dtype `id` (not bool).
void StoreNumber(DTypeId id, double v, std::byte* p) {
  VisitConvertible(id, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T x = static_cast<T>(v);
      std::memcpy(p, &x, sizeof(T));
    }
    return 0;
  });
}

// Integer elements as int64 exactly (uint64 past int64's range: nullopt).
std::optional<int64_t> LoadInteger(DTypeId id, const std::byte* p) {
  if (!IsIntegerId(id)) return std::nullopt;
  return VisitConvertible(id, std::optional<int64_t>(), [p](auto tag) -> std::optional<int64_t> {
    using T = typename decltype(tag)::type;
    const T v = LoadElement<T>(p);
    if constexpr (std::is_same_v<T, uint64_t>) {
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    }
    return static_cast<int64_t>(v);
  });
}

// Whether the integer `q` fits dtype `id` (an integer dtype).
bool IntegerFits(DTypeId id, int64_t q) {
  if (!IsIntegerId(id)) return false;
  return VisitConvertible(id, false, [q](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_signed_v<T>) {
      return q >= std::numeric_limits<T>::min() && q <= std::numeric_limits<T>::max();
    } else {
      return q >= 0 && static_cast<uint64_t>(q) <= std::numeric_limits<T>::max();
    }
  });
}

// Stores the integer `q` (already checked to fit) as integer dtype `id`.
void StoreInteger(DTypeId id, int64_t q, std::byte* p) {
  if (!IsIntegerId(id)) return;
  VisitConvertible(id, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T x = static_cast<T>(q);
    std::memcpy(p, &x, sizeof(T));
    return 0;
  });
}

bool SameNumber(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

bool IsMissing(const CfEncoding& e, double stored) {
  for (double m : e.missing) {
    if (SameNumber(m, stored)) return true;
  }
  return false;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t& y, int64_t& m, int64_t& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = yoe + era * 400;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

constexpr int64_t kNsPerSecond = 1'000'000'000;
constexpr int64_t kNsPerDay = 86400 * kNsPerSecond;
// 1582-10-15, the first Gregorian day of the standard calendar: earlier
// dates in it are Julian. (datetime64[ns] starts in 1677, so only an epoch
// can be earlier.)
const int64_t kGregorianStartDays = DaysFromCivil(1582, 10, 15);
// datetime64[ns]'s range in days: 1677-09-22 .. 2262-04-10 (whole days).
constexpr int64_t kMinNsDays = -106751;
constexpr int64_t kMaxNsDays = 106750;

std::string UnitName(int64_t unit_ns) {
  switch (unit_ns) {
    case kNsPerDay: return "days";
    case 3600 * kNsPerSecond: return "hours";
    case 60 * kNsPerSecond: return "minutes";
    case kNsPerSecond: return "seconds";
    case 1'000'000: return "milliseconds";
    case 1'000: return "microseconds";
    case 1: return "nanoseconds";
    default: return fmt::format("units of {} ns", unit_ns);
  }
}

std::string FormatDuration(int64_t ns) {
  if (ns == kNaT) return "NaT";
  if (ns % kNsPerSecond == 0) return fmt::format("{} s", ns / kNsPerSecond);
  return fmt::format("{} ns", ns);
}

std::string FormatNumber(double v) { return fmt::format("{}", v); }
// A range's bound: 600.82, not 600.8199999999999.
std::string FormatBound(double v) { return fmt::format("{:.10g}", v); }

}  // namespace

std::optional<int64_t> CfUnitNanoseconds(std::string_view unit) {
  struct Entry {
    std::string_view names[4];
    int64_t ns;
  };
  static constexpr Entry kUnits[] = {
      {{"days", "day", "d", ""}, kNsPerDay},
      {{"hours", "hour", "h", "hr"}, 3600 * kNsPerSecond},
      {{"minutes", "minute", "min", ""}, 60 * kNsPerSecond},
      {{"seconds", "second", "s", "sec"}, kNsPerSecond},
      {{"milliseconds", "millisecond", "ms", ""}, 1'000'000},
      {{"microseconds", "microsecond", "us", ""}, 1'000},
      {{"nanoseconds", "nanosecond", "ns", ""}, 1},
  };
  for (const Entry& e : kUnits) {
    for (std::string_view n : e.names) {
      if (!n.empty() && n == unit) return e.ns;
    }
  }
  return std::nullopt;
}

Result<CfTimeUnits> ParseCfTimeUnits(std::string_view units) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(fmt::format(
        "time units '{}' do not parse ({}; expected e.g. 'hours since 2000-01-01 00:00:00')",
        units, why));
  };
  const size_t since = units.find(" since ");
  if (since == std::string_view::npos) return bad("no ' since '");
  std::string_view unit = units.substr(0, since);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  std::optional<int64_t> unit_ns = CfUnitNanoseconds(unit);
  if (!unit_ns) return bad(fmt::format("unknown unit '{}'", unit));
  std::string_view rest = units.substr(since + 7);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
  size_t pos = 0;
  auto number = [&](int max_digits, int64_t& out) {
    size_t start = pos;
    out = 0;
    while (pos < rest.size() && pos - start < static_cast<size_t>(max_digits) &&
           rest[pos] >= '0' && rest[pos] <= '9') {
      out = out * 10 + (rest[pos++] - '0');
    }
    return pos > start;
  };
  bool negative_year = false;
  if (pos < rest.size() && rest[pos] == '-') {
    negative_year = true;
    ++pos;
  }
  int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, frac_ns = 0;
  if (!number(6, year) || pos >= rest.size() || rest[pos++] != '-' || !number(2, month) ||
      pos >= rest.size() || rest[pos++] != '-' || !number(2, day)) {
    return bad("the epoch is not YYYY-MM-DD");
  }
  if (negative_year) year = -year;
  if (month < 1 || month > 12 || day < 1 || day > 31) return bad("the epoch's date is invalid");
  if (pos < rest.size() && (rest[pos] == ' ' || rest[pos] == 'T')) {
    ++pos;
    if (!number(2, hour) || pos >= rest.size() || rest[pos++] != ':' || !number(2, minute)) {
      return bad("the epoch's time is not hh:mm[:ss]");
    }
    if (pos < rest.size() && rest[pos] == ':') {
      ++pos;
      if (!number(2, second)) return bad("the epoch's seconds");
      if (pos < rest.size() && rest[pos] == '.') {
        ++pos;
        int digits = 0;
        while (pos < rest.size() && rest[pos] >= '0' && rest[pos] <= '9') {
          if (digits < 9) frac_ns = frac_ns * 10 + (rest[pos] - '0');
          ++digits;
          ++pos;
        }
        for (int i = digits; i < 9; ++i) frac_ns *= 10;
      }
    }
    if (hour > 23 || minute > 59 || second > 60) return bad("the epoch's time is invalid");
  }
  int64_t offset_ns = 0;
  while (pos < rest.size() && rest[pos] == ' ') ++pos;
  if (pos < rest.size()) {
    std::string_view zone = rest.substr(pos);
    if (zone == "Z" || zone == "UTC" || zone == "utc" || zone == "GMT") {
      // UTC
    } else if (zone[0] == '+' || zone[0] == '-') {
      const int sign = zone[0] == '-' ? -1 : 1;
      ++pos;
      int64_t zh = 0, zm = 0;
      if (!number(2, zh)) return bad("the epoch's zone");
      if (pos < rest.size() && rest[pos] == ':') ++pos;
      if (pos < rest.size() && !number(2, zm)) return bad("the epoch's zone");
      if (pos != rest.size()) return bad("text after the epoch's zone");
      // "2000-01-01 00:00 +02:00" is 1999-12-31 22:00 UTC.
      offset_ns = -sign * (zh * 3600 + zm * 60) * kNsPerSecond;
    } else {
      return bad(fmt::format("unexpected '{}' after the epoch", zone));
    }
  }
  const int64_t days = DaysFromCivil(year, month, day);
  CfTimeUnits out;
  out.unit_ns = *unit_ns;
  out.epoch_days = days;
  // An epoch beyond datetime64[ns] (1677 .. 2262) has no epoch_ns.
  out.epoch_in_ns_range = days >= kMinNsDays && days <= kMaxNsDays;
  if (out.epoch_in_ns_range) {
    out.epoch_ns = days * kNsPerDay + (hour * 3600 + minute * 60 + second) * kNsPerSecond +
                   frac_ns + offset_ns;
  }
  return out;
}

std::string FormatTimeNs(int64_t ns) {
  if (ns == kNaT) return "NaT";
  int64_t days = ns / kNsPerDay;
  int64_t rem = ns % kNsPerDay;
  if (rem < 0) {
    rem += kNsPerDay;
    --days;
  }
  int64_t y, m, d;
  CivilFromDays(days, y, m, d);
  const int64_t secs = rem / kNsPerSecond, frac = rem % kNsPerSecond;
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", y, m, d, secs / 3600,
                                secs / 60 % 60, secs % 60);
  if (frac != 0) out += fmt::format(".{:09}", frac);
  return out;
}

bool CfEncoding::SameAs(const CfEncoding& o) const {
  if (!(dtype == o.dtype) || kind != o.kind || scale_factor != o.scale_factor ||
      add_offset != o.add_offset || has_fill != o.has_fill ||
      missing.size() != o.missing.size() || units != o.units || calendar != o.calendar ||
      unit_ns != o.unit_ns || epoch_ns != o.epoch_ns) {
    return false;
  }
  for (size_t i = 0; i < missing.size(); ++i) {
    if (!SameNumber(missing[i], o.missing[i])) return false;
  }
  return true;
}

std::string CfEncoding::ToString() const {
  std::string out = dtype.ToString();
  if (scale_factor) out += fmt::format(", scale_factor {}", *scale_factor);
  if (add_offset) out += fmt::format(", add_offset {}", *add_offset);
  for (size_t i = 0; i < missing.size(); ++i) {
    out += fmt::format(", {} {}", i == 0 && has_fill ? "_FillValue" : "missing_value",
                       missing[i]);
  }
  if (!units.empty()) out += fmt::format(", units '{}'", units);
  if (!calendar.empty()) out += fmt::format(", calendar {}", calendar);
  return out;
}

Result<CfEncoding> ParseCfEncoding(const ArrayMetadata& metadata, std::string_view name) {
  STRATA_ASSIGN_OR_RETURN(Json attrs, ParseAttributes(metadata.attributes_json, name));
  CfEncoding e;
  e.dtype = metadata.dtype();
  auto number = [&](const char* key) -> Result<std::optional<double>> {
    if (!attrs.contains(key)) return std::optional<double>();
    STRATA_ASSIGN_OR_RETURN(double v, AttributeNumber(attrs[key], name, key));
    return std::optional<double>(v);
  };
  STRATA_ASSIGN_OR_RETURN(e.scale_factor, number("scale_factor"));
  STRATA_ASSIGN_OR_RETURN(e.add_offset, number("add_offset"));
  if ((e.scale_factor && (!std::isfinite(*e.scale_factor) || *e.scale_factor == 0.0)) ||
      (e.add_offset && !std::isfinite(*e.add_offset))) {
    return InvalidArgumentError(fmt::format(
        "{}: scale_factor must be finite and non-zero and add_offset finite", name));
  }
  // The _FillValue: the attribute (Zarr v3 as xarray writes it), else a v2
  // array's fill_value.
  STRATA_ASSIGN_OR_RETURN(std::optional<double> fill, number("_FillValue"));
  if (!fill && metadata.zarr_format == ZarrFormat::kV2 && !metadata.fill_value.is_null &&
      metadata.fill_value.bytes.size() == static_cast<size_t>(e.dtype.size()) &&
      (IsIntegerId(e.dtype.id()) || e.dtype.is_float())) {
    fill = LoadNumber(e.dtype.id(), metadata.fill_value.bytes.data());
  }
  if (fill) {
    e.missing.push_back(*fill);
    e.has_fill = true;
  }
  if (attrs.contains("missing_value")) {
    const Json& mv = attrs["missing_value"];
    std::vector<Json> items = mv.is_array() ? mv.get<std::vector<Json>>() : std::vector<Json>{mv};
    for (const Json& item : items) {
      STRATA_ASSIGN_OR_RETURN(double v, AttributeNumber(item, name, "missing_value"));
      if (!IsMissing(e, v)) e.missing.push_back(v);
    }
  }
  if (attrs.contains("units")) {
    if (!attrs["units"].is_string()) {
      return InvalidArgumentError(fmt::format("{}: attribute units is not a string", name));
    }
    e.units = attrs["units"].get<std::string>();
  }
  const bool timedelta = attrs.contains("dtype") && attrs["dtype"].is_string() &&
                         attrs["dtype"].get<std::string>().starts_with("timedelta64");
  if (e.units.find(" since ") != std::string::npos) {
    e.kind = CfKind::kTime;
    Result<CfTimeUnits> u = ParseCfTimeUnits(e.units);
    if (!u.ok()) return u.status().WithContext(std::string(name));
    e.unit_ns = u->unit_ns;
    e.epoch_ns = u->epoch_ns;
    std::string calendar = "standard";
    if (attrs.contains("calendar")) {
      if (!attrs["calendar"].is_string()) {
        return InvalidArgumentError(fmt::format("{}: attribute calendar is not a string", name));
      }
      calendar = attrs["calendar"].get<std::string>();
      for (char& c : calendar) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (calendar == "gregorian") calendar = "standard";
    if (calendar != "standard" && calendar != "proleptic_gregorian") {
      return InvalidArgumentError(fmt::format(
          "{}: calendar '{}' is not supported (standard, gregorian and proleptic_gregorian are)",
          name, calendar));
    }
    e.calendar = calendar;
    if (calendar == "standard" && u->epoch_days < kGregorianStartDays) {
      return InvalidArgumentError(fmt::format(
          "{}: the epoch of '{}' is before 1582-10-15, where the standard calendar is Julian "
          "(not supported)",
          name, e.units));
    }
    if (!u->epoch_in_ns_range) {
      return InvalidArgumentError(fmt::format(
          "{}: the epoch of '{}' is outside datetime64[ns] (1677-09-22 .. 2262-04-10; not "
          "supported)",
          name, e.units));
    }
  } else if (timedelta) {
    std::optional<int64_t> unit_ns = CfUnitNanoseconds(e.units);
    if (!unit_ns) {
      return InvalidArgumentError(fmt::format(
          "{}: a timedelta with units '{}' (expected days, hours, minutes, seconds, ...)", name,
          e.units));
    }
    e.kind = CfKind::kTimedelta;
    e.unit_ns = *unit_ns;
  }
  e.from_attributes = e.scale_factor || e.add_offset || attrs.contains("_FillValue") ||
                      attrs.contains("missing_value") || e.kind != CfKind::kNumber;
  if (e.kind != CfKind::kNumber && (e.scale_factor || e.add_offset)) {
    return InvalidArgumentError(
        fmt::format("{}: times with scale_factor or add_offset are not supported", name));
  }
  return e;
}

Status DecodeNumbers(const CfEncoding& e, const std::byte* stored, int64_t n, double* values,
                     std::string_view name) {
  if (!IsConvertible(e.dtype)) {
    return InvalidArgumentError(
        fmt::format("{}: dtype {} has no numeric value to convert", name, e.dtype.ToString()));
  }
  const DTypeId id = e.dtype.id();
  const int size = e.dtype.size();
  const double scale = e.scale_factor.value_or(1.0), offset = e.add_offset.value_or(0.0);
  const bool packed = e.scale_factor || e.add_offset;
  const bool wide = id == DTypeId::kInt64 || id == DTypeId::kUInt64;
  for (int64_t i = 0; i < n; ++i) {
    const double s = LoadNumber(id, stored + i * size);
    if (IsMissing(e, s) || std::isnan(s)) {
      values[i] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    if (wide && !packed && std::fabs(s) > 9007199254740992.0) {
      return InvalidArgumentError(fmt::format(
          "{}: stored value {} is past 2^53 and cannot be converted exactly", name,
          FormatNumber(s)));
    }
    values[i] = packed ? s * scale + offset : s;
  }
  return Status::Ok();
}

Status EncodeNumbers(const CfEncoding& e, const double* values, int64_t n, std::byte* stored,
                     std::string_view name) {
  if (!IsConvertible(e.dtype)) {
    return InvalidArgumentError(
        fmt::format("{}: dtype {} has no numeric value to convert", name, e.dtype.ToString()));
  }
  const DTypeId id = e.dtype.id();
  const int size = e.dtype.size();
  const bool integer = IsIntegerId(id);
  const bool packed = e.scale_factor || e.add_offset;
  const double scale = e.scale_factor.value_or(1.0), offset = e.add_offset.value_or(0.0);
  double lo = 0, hi = 0;
  IntegerRange(id, lo, hi);
  for (int64_t i = 0; i < n; ++i) {
    const double v = values[i];
    std::byte* out = stored + i * size;
    if (std::isnan(v)) {
      if (e.has_fill) {
        StoreNumber(id, e.missing.front(), out);
      } else if (!integer) {
        StoreNumber(id, v, out);
      } else {
        return InvalidArgumentError(fmt::format(
            "{}: a missing value (NaN) cannot be stored: the target ({}) has no _FillValue", name,
            e.ToString()));
      }
      continue;
    }
    double s = packed ? (v - offset) / scale : v;
    if (integer) {
      if (packed) {
        s = std::nearbyint(s);  // round half to even, as numpy's around
      } else if (s != std::floor(s)) {
        return InvalidArgumentError(fmt::format(
            "{}: value {} is not an integer and the target is {}", name, FormatNumber(v),
            e.ToString()));
      }
      if (!(s >= lo && s < hi)) {
        return InvalidArgumentError(fmt::format(
            "{}: value {} is outside what the target ({}) can hold ({} .. {})", name,
            FormatNumber(v), e.ToString(), FormatBound(packed ? lo * scale + offset : lo),
            FormatBound(packed ? (hi - 1) * scale + offset : hi - 1)));
      }
    } else if (id == DTypeId::kFloat32 && std::isfinite(s) &&
               std::fabs(s) > static_cast<double>(std::numeric_limits<float>::max())) {
      return InvalidArgumentError(fmt::format(
          "{}: value {} is outside what the target ({}) can hold", name, FormatNumber(v),
          e.ToString()));
    }
    const double as_stored = integer ? s : static_cast<double>(id == DTypeId::kFloat32
                                                                   ? static_cast<float>(s)
                                                                   : s);
    if (IsMissing(e, as_stored)) {
      return InvalidArgumentError(fmt::format(
          "{}: value {} would be stored as {}, the target's missing value ({}): it would read "
          "back as missing",
          name, FormatNumber(v), FormatNumber(as_stored), e.ToString()));
    }
    StoreNumber(id, s, out);
  }
  return Status::Ok();
}

Status DecodeTimes(const CfEncoding& e, const std::byte* stored, int64_t n, int64_t* ns,
                   std::string_view name) {
  const DTypeId id = e.dtype.id();
  const int size = e.dtype.size();
  const char* what = e.kind == CfKind::kTime ? "time" : "timedelta";
  const int64_t epoch = e.kind == CfKind::kTime ? e.epoch_ns : 0;
  if (!IsConvertible(e.dtype)) {
    return InvalidArgumentError(
        fmt::format("{}: {}s stored as {} are not supported", name, what, e.dtype.ToString()));
  }
  for (int64_t i = 0; i < n; ++i) {
    const std::byte* p = stored + i * size;
    const double d = LoadNumber(id, p);
    if (std::isnan(d) || IsMissing(e, d)) {
      ns[i] = kNaT;
      continue;
    }
    int64_t out = 0;
    bool overflow = false;
    if (IsIntegerId(id)) {
      std::optional<int64_t> q = LoadInteger(id, p);
      int64_t scaled = 0;
      overflow = !q || __builtin_mul_overflow(*q, e.unit_ns, &scaled) ||
                 __builtin_add_overflow(scaled, epoch, &out);
    } else {
      const double scaled = std::nearbyint(d * static_cast<double>(e.unit_ns));
      overflow = !(std::fabs(scaled) < 9.2e18);
      if (!overflow) overflow = __builtin_add_overflow(static_cast<int64_t>(scaled), epoch, &out);
    }
    if (overflow || out == kNaT) {
      return InvalidArgumentError(fmt::format(
          "{}: stored {} {} ({}) is outside datetime64[ns]", name, what, FormatNumber(d),
          e.units));
    }
    ns[i] = out;
  }
  return Status::Ok();
}

Status EncodeTimes(const CfEncoding& e, const int64_t* ns, int64_t n, std::byte* stored,
                   std::string_view name) {
  const DTypeId id = e.dtype.id();
  const int size = e.dtype.size();
  const bool time = e.kind == CfKind::kTime;
  const int64_t epoch = time ? e.epoch_ns : 0;
  auto show = [&](int64_t v) { return time ? FormatTimeNs(v) : FormatDuration(v); };
  if (!IsConvertible(e.dtype)) {
    return InvalidArgumentError(fmt::format("{}: times stored as {} are not supported", name,
                                            e.dtype.ToString()));
  }
  for (int64_t i = 0; i < n; ++i) {
    std::byte* out = stored + i * size;
    if (ns[i] == kNaT) {
      if (e.has_fill) {
        StoreNumber(id, e.missing.front(), out);
      } else if (!IsIntegerId(id)) {
        StoreNumber(id, std::numeric_limits<double>::quiet_NaN(), out);
      } else {
        return InvalidArgumentError(fmt::format(
            "{}: a missing time (NaT) cannot be stored: the target ({}) has no _FillValue", name,
            e.ToString()));
      }
      continue;
    }
    int64_t delta = 0;
    if (__builtin_sub_overflow(ns[i], epoch, &delta)) {
      return InvalidArgumentError(fmt::format("{}: time {} is too far from the epoch of '{}'",
                                              name, show(ns[i]), e.units));
    }
    if (IsIntegerId(id)) {
      if (delta % e.unit_ns != 0) {
        return InvalidArgumentError(fmt::format(
            "{}: {} is not a whole number of {} {}'{}' (stored as {}): it cannot be represented "
            "at that resolution",
            name, show(ns[i]), UnitName(e.unit_ns), time ? "since the epoch of " : "in ",
            e.units, e.dtype.ToString()));
      }
      const int64_t q = delta / e.unit_ns;
      if (!IntegerFits(id, q)) {
        if (q < 0 && e.dtype.is_unsigned_integer()) {
          return InvalidArgumentError(fmt::format(
              "{}: {} is before the epoch of '{}' and the target stores {} (unsigned)", name,
              show(ns[i]), e.units, e.dtype.ToString()));
        }
        return InvalidArgumentError(fmt::format("{}: {} in '{}' does not fit {}", name,
                                                show(ns[i]), e.units, e.dtype.ToString()));
      }
      if (IsMissing(e, static_cast<double>(q))) {
        return InvalidArgumentError(fmt::format(
            "{}: {} would be stored as {}, the target's missing value: it would read back as "
            "NaT",
            name, show(ns[i]), q));
      }
      StoreInteger(id, q, out);
    } else {
      const double q = static_cast<double>(delta) / static_cast<double>(e.unit_ns);
      StoreNumber(id, q, out);
    }
  }
  return Status::Ok();
}

Result<CfConverter> CfConverter::Make(const CfEncoding& from, const CfEncoding& to,
                                      std::string name) {
  CfConverter c;
  c.from_ = from;
  c.to_ = to;
  c.name_ = std::move(name);
  c.copies_ = from.SameAs(to);
  if (c.copies_) return c;
  auto kind_name = [](const CfEncoding& e) {
    switch (e.kind) {
      case CfKind::kTime: return fmt::format("times ('{}')", e.units);
      case CfKind::kTimedelta: return fmt::format("timedeltas ('{}')", e.units);
      default: return std::string("numbers");
    }
  };
  if (from.kind != to.kind) {
    return InvalidArgumentError(fmt::format("{}: SRC holds {}, DST {}: they cannot be converted",
                                            c.name_, kind_name(from), kind_name(to)));
  }
  if (from.kind == CfKind::kNumber && !from.units.empty() && !to.units.empty() &&
      from.units != to.units) {
    return InvalidArgumentError(fmt::format(
        "{}: SRC is in '{}', DST in '{}': strata does not convert physical units", c.name_,
        from.units, to.units));
  }
  for (const CfEncoding* e : {&from, &to}) {
    if (!IsConvertible(e->dtype)) {
      return InvalidArgumentError(fmt::format(
          "{}: the encodings differ (SRC {}; DST {}) and {} values cannot be converted", c.name_,
          from.ToString(), to.ToString(), e->dtype.ToString()));
    }
  }
  return c;
}

Status CfConverter::Convert(const std::byte* src, std::byte* dst, int64_t n) const {
  if (copies_) {
    std::memcpy(dst, src, static_cast<size_t>(n * from_.dtype.size()));
    return Status::Ok();
  }
  // In pieces, so the decoded values stay small whatever n is.
  constexpr int64_t kPiece = 4096;
  if (from_.kind == CfKind::kNumber) {
    std::array<double, kPiece> values;
    for (int64_t i = 0; i < n; i += kPiece) {
      const int64_t m = std::min(kPiece, n - i);
      STRATA_RETURN_IF_ERROR(
          DecodeNumbers(from_, src + i * from_.dtype.size(), m, values.data(), name_));
      STRATA_RETURN_IF_ERROR(
          EncodeNumbers(to_, values.data(), m, dst + i * to_.dtype.size(), name_));
    }
  } else {
    std::array<int64_t, kPiece> ns;
    for (int64_t i = 0; i < n; i += kPiece) {
      const int64_t m = std::min(kPiece, n - i);
      STRATA_RETURN_IF_ERROR(DecodeTimes(from_, src + i * from_.dtype.size(), m, ns.data(), name_));
      STRATA_RETURN_IF_ERROR(EncodeTimes(to_, ns.data(), m, dst + i * to_.dtype.size(), name_));
    }
  }
  return Status::Ok();
}

}  // namespace strata
