#include "strata/storage/zarr/json_util.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace strata::internal_zarr {
namespace {

// How kRawMark appears in text dumped by nlohmann (control characters are
// escaped as \u00XX).
constexpr std::string_view kDumpedRawMark = "\"\\u0000strata-raw:";

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


}  // namespace

std::string RawString(std::string_view raw_text) {
  std::string s(kRawMark);
  s += raw_text;
  return s;
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



Status CheckJsonLimits(std::string_view text, std::string_view doc) {
  if (static_cast<int64_t>(text.size()) > kMaxJsonBytes) {
    return InvalidArgumentError(fmt::format("{} is {} bytes, more than the {} MiB Strata reads",
                                            doc, text.size(), kMaxJsonBytes >> 20));
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return InvalidArgumentError(
            fmt::format("{} nests JSON deeper than {} levels (at byte {}); refusing to read it",
                        doc, kMaxJsonDepth, i));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status::Ok();
}

Result<nlohmann::ordered_json> ParseLimitedJson(std::string_view text, std::string_view doc) {
  STRATA_RETURN_IF_ERROR(CheckJsonLimits(text, doc));
  try {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr,
                                                             /*allow_exceptions=*/false);
    if (j.is_discarded()) return InvalidArgumentError(fmt::format("malformed JSON in {}", doc));
    return j;
  } catch (const std::exception& e) {  // allocation failure; nothing else throws here
    return InvalidArgumentError(fmt::format("malformed JSON in {}: {}", doc, e.what()));
  }
}

Result<nlohmann::ordered_json> ParsePythonJson(std::string_view text, std::string_view doc) {
  // Before any parser sees it: nlohmann recurses on nesting (copy, dump, destroy).
  STRATA_RETURN_IF_ERROR(CheckJsonLimits(text, doc));
  auto parse = [](std::string_view t) {
    return nlohmann::ordered_json::parse(t.begin(), t.end(), /*cb=*/nullptr, /*allow_exceptions=*/true,
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
        fmt::format("malformed JSON in {} at byte {}: {}", doc, first_error.byte, what));
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("malformed JSON in {}: {}", doc, e.what()));
  }
}

std::string DumpCompact(const nlohmann::ordered_json& value) {
  return RestoreRawText(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string DumpLikeZarrPython(nlohmann::json value) {
  UsePythonFloats(value);
  return RestoreRawText(value.dump(4, ' ', true, nlohmann::json::error_handler_t::replace));
}

}  // namespace strata::internal_zarr
