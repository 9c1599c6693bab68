// The JSON that Strata reads from and writes to storage (metadata documents,
// attributes, the incomplete-array marker): limits checked before any parser
// sees the text, parses that never throw, and the two details nlohmann does
// not handle the way Zarr needs:
//   * zarr-python writes attributes with Python's json module, which emits the
//     non-standard literals NaN, Infinity and -Infinity. ParsePythonJson
//     accepts them by rewriting them into marked strings before parsing, and
//     RestoreRawText puts them back on output.
//   * Python formats floats differently from nlohmann for |x| in [1e15, 1e16)
//     ("1000000000000000.0" vs "1e+15"). UsePythonFloats writes floats as
//     marked strings holding Python's spelling, unquoted after dumping.
// Both use the same mark: a string "\0strata-raw:<text>" (RawString) stands
// for the raw JSON text <text>.
//
// nlohmann::json builds, copies, prints and destroys values recursively, so a
// document nested 50,000 deep (a 100 KB `.zarray`) overflows the stack, and
// printing one nested 10,000 deep with indentation writes hundreds of MB.
// CheckJsonLimits is a linear scan with no recursion: it counts nesting
// outside strings and refuses past kMaxJsonDepth levels or kMaxJsonBytes.
//
// Thread-safety: free functions.
#ifndef STRATA_STORAGE_ZARR_JSON_UTIL_H_
#define STRATA_STORAGE_ZARR_JSON_UTIL_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "strata/base/status.h"

namespace strata::internal_zarr {

// Real metadata nests a handful of levels (CF attributes perhaps ten).
inline constexpr int kMaxJsonDepth = 128;
// Consolidated metadata of a large dataset runs to megabytes; nothing
// legitimate comes near this.
inline constexpr int64_t kMaxJsonBytes = int64_t{64} << 20;

// InvalidArgument naming `doc` ("zarr.json", ".zattrs") when `text` is larger
// than kMaxJsonBytes or nests arrays/objects deeper than kMaxJsonDepth. Says
// nothing about whether the text is otherwise valid JSON.
Status CheckJsonLimits(std::string_view text, std::string_view doc);

// CheckJsonLimits, then a parse that does not throw: InvalidArgument naming
// `doc` for malformed text.
Result<nlohmann::ordered_json> ParseLimitedJson(std::string_view text, std::string_view doc);

// Raw JSON text carried through nlohmann as a marked string.
inline constexpr std::string_view kRawMark("\0strata-raw:", 12);

// A marked string standing for the raw JSON text `raw_text`.
std::string RawString(std::string_view raw_text);

// The raw text of a marked string ("NaN" for a bare NaN literal read by
// ParsePythonJson), or nullopt for an ordinary value.
template <typename J>
std::optional<std::string_view> RawText(const J& value) {
  if (!value.is_string()) return std::nullopt;
  const std::string& s = value.template get_ref<const std::string&>();
  if (std::string_view(s).substr(0, kRawMark.size()) != kRawMark) return std::nullopt;
  return std::string_view(s).substr(kRawMark.size());
}

// Replaces each marked string in text dumped by nlohmann by its raw text.
std::string RestoreRawText(std::string dumped);

// Python's repr() of a float, which json.dumps uses: the shortest digits that
// round-trip, in fixed notation when the decimal exponent is in [-4, 16)
// (always with a fractional part, "100.0"), otherwise "1e+16" / "1.5e-05".
std::string PythonFloatRepr(double value);

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

// CheckJsonLimits, then a parse that accepts Python's NaN, Infinity and
// -Infinity literals (as marked strings, see RawText). InvalidArgument
// naming `doc` for malformed text: "malformed JSON in <doc> at byte N: <what
// the parser expected>", against the text as written.
Result<nlohmann::ordered_json> ParsePythonJson(std::string_view text, std::string_view doc);

// One line, keys in document order, marked strings restored.
std::string DumpCompact(const nlohmann::ordered_json& value);

// As Python's json.dumps(indent=4, sort_keys=True, ensure_ascii=True), which is
// how zarr-python 2 writes every metadata document.
std::string DumpLikeZarrPython(nlohmann::json value);

}  // namespace strata::internal_zarr

#endif  // STRATA_STORAGE_ZARR_JSON_UTIL_H_
