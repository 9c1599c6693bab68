// CF encodings of dataset variables: how the numbers a Zarr array stores map
// to the values a reader sees, as xarray writes and reads them (the netCDF
// Climate and Forecast conventions).
//
//   stored --Decode--> values
//     packed numbers   value = stored * scale_factor + add_offset
//     masked numbers   stored == _FillValue or a missing_value -> NaN
//     times            "<unit> since <epoch>" + calendar -> nanoseconds since
//                      1970-01-01 (numpy's datetime64[ns]); missing -> NaT
//     timedeltas       a "dtype": "timedelta64[..]" attribute + "<unit>" ->
//                      nanoseconds
//   values --Encode--> stored: the inverse, refusing (InvalidArgument, naming
//   the value) what the stored type cannot hold: a value outside the packed
//   range or one that would store as the _FillValue, a fraction into an
//   integer type, a time that is not a whole number of the units, a time
//   before an unsigned type's epoch, a missing value where there is no
//   _FillValue. Nothing wraps.
//
// Where the _FillValue is: Zarr v3 arrays written by xarray carry it as the
// `_FillValue` attribute (a number, "NaN", or the base64 of a float64's bytes
// for float types); v2 arrays as the array's fill_value (null: no mask).
// Calendars: standard, gregorian (dates from 1582-10-15 on: earlier ones are
// Julian and refused) and proleptic_gregorian; others are refused. Values are
// datetime64[ns] (1677 .. 2262), and so must the epoch be.
//
// A CfConverter moves stored elements of one variable (a patch's) into the
// encoding of another (an archive's): decode with the source's encoding,
// encode with the target's; when the two encodings are equal (proven field by
// field) the stored bytes are copied as they are.
//
// Thread-safety: plain values and const methods.
#ifndef STRATA_TOOLS_CF_ENCODING_H_
#define STRATA_TOOLS_CF_ENCODING_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/dtype.h"
#include "strata/storage/zarr/metadata.h"

namespace strata {

// numpy's NaT: a missing time or timedelta.
inline constexpr int64_t kNaT = std::numeric_limits<int64_t>::min();

enum class CfKind { kNumber, kTime, kTimedelta };

struct CfEncoding {
  DType dtype;  // the stored type
  CfKind kind = CfKind::kNumber;
  std::optional<double> scale_factor;
  std::optional<double> add_offset;
  // Stored values meaning "missing": the _FillValue first (what Encode writes
  // for a missing value), then each missing_value. May hold NaN.
  std::vector<double> missing;
  bool has_fill = false;  // missing.front() is a _FillValue
  std::string units;      // verbatim ("" when none)
  // Times: "standard" or "proleptic_gregorian" ("gregorian" and a missing
  // calendar are "standard").
  std::string calendar;
  int64_t unit_ns = 0;   // times and timedeltas: nanoseconds per unit
  int64_t epoch_ns = 0;  // times: the epoch, nanoseconds since 1970-01-01
  // Any CF attribute was found (scale_factor, add_offset, _FillValue,
  // missing_value, time or timedelta units): not only a dtype and a Zarr
  // fill value. Not part of SameAs.
  bool from_attributes = false;

  // Equal encodings store equal values identically (NaN equals NaN).
  bool SameAs(const CfEncoding& other) const;
  // "int16, scale_factor 0.01, add_offset 273.15, _FillValue -32767".
  std::string ToString() const;
};

// The encoding of an array from its metadata and attributes. InvalidArgument
// (naming `name` and the attribute) for attributes of the wrong type, time
// units that do not parse, or an unsupported calendar.
Result<CfEncoding> ParseCfEncoding(const ArrayMetadata& metadata, std::string_view name);

// "hours since 2000-01-01 06:00:00" -> (nanoseconds per hour, the epoch in
// nanoseconds since 1970-01-01). Units: days, hours, minutes, seconds,
// milliseconds, microseconds, nanoseconds (and their singulars and xarray's
// short forms d, h, min, s, ms, us, ns). The epoch: YYYY-MM-DD, optionally
// followed by [T ]hh:mm[:ss[.fff]] and a zone (Z, UTC, +hh:mm).
struct CfTimeUnits {
  int64_t unit_ns = 0;
  int64_t epoch_ns = 0;     // when epoch_in_ns_range
  int64_t epoch_days = 0;   // the epoch's day (proleptic Gregorian), since 1970-01-01
  bool epoch_in_ns_range = true;
};
Result<CfTimeUnits> ParseCfTimeUnits(std::string_view units);
// Nanoseconds per unit for a bare unit ("hours"), or nullopt.
std::optional<int64_t> CfUnitNanoseconds(std::string_view unit);
// "2020-01-01T06:30:00" (fractions of a second when there are any), for messages.
std::string FormatTimeNs(int64_t ns_since_1970);

// Decode/Encode of `n` contiguous stored elements (native byte order). Numbers
// decode to double (missing -> NaN), times and timedeltas to nanoseconds
// (missing -> kNaT). InvalidArgument names `name` and the first bad value.
Status DecodeNumbers(const CfEncoding& e, const std::byte* stored, int64_t n, double* values,
                     std::string_view name);
Status EncodeNumbers(const CfEncoding& e, const double* values, int64_t n, std::byte* stored,
                     std::string_view name);
Status DecodeTimes(const CfEncoding& e, const std::byte* stored, int64_t n, int64_t* ns,
                   std::string_view name);
Status EncodeTimes(const CfEncoding& e, const int64_t* ns, int64_t n, std::byte* stored,
                   std::string_view name);

// Moves stored elements of encoding `from` into encoding `to`.
class CfConverter {
 public:
  // InvalidArgument when the two cannot be converted: a time into a number
  // (or back), different physical units, a dtype that has no numeric value
  // (strings, complex) unless the encodings are the same.
  static Result<CfConverter> Make(const CfEncoding& from, const CfEncoding& to,
                                  std::string name);
  // True when the encodings are equal: Convert copies bytes.
  bool copies_bytes() const { return copies_; }
  // Converts `n` contiguous elements; InvalidArgument for a value `to`
  // cannot hold (nothing is guaranteed about `dst` then).
  Status Convert(const std::byte* src, std::byte* dst, int64_t n) const;

 private:
  CfConverter() = default;
  CfEncoding from_, to_;
  std::string name_;
  bool copies_ = false;
};

}  // namespace strata

#endif  // STRATA_TOOLS_CF_ENCODING_H_
