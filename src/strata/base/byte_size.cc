#include "strata/base/byte_size.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace strata {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<int64_t> ParseByteSize(std::string_view text) {
  auto invalid = [&](std::string_view why) {
    return InvalidArgumentError(fmt::format(
        "invalid size '{}': {} (expected a number with an optional unit such as 400MB or 2GiB)",
        text, why));
  };
  std::string_view s = Trim(text);
  if (s.empty()) return invalid("empty");
  size_t split = 0;
  while (split < s.size() && (std::isdigit(static_cast<unsigned char>(s[split])) ||
                              s[split] == '.' || s[split] == 'e' || s[split] == 'E' ||
                              s[split] == '+' || s[split] == '-')) {
    // An 'e' only belongs to the number when digits follow it ("1e9").
    if ((s[split] == 'e' || s[split] == 'E') &&
        (split + 1 >= s.size() || !(std::isdigit(static_cast<unsigned char>(s[split + 1])) ||
                                    s[split + 1] == '+' || s[split + 1] == '-'))) {
      break;
    }
    ++split;
  }
  std::string number(s.substr(0, split));
  std::string unit = Lower(Trim(s.substr(split)));
  if (number.empty()) return invalid("no number");
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || errno != 0 || !std::isfinite(value)) {
    return invalid("not a number");
  }
  if (value < 0) return invalid("negative");
  double multiplier;
  if (unit.empty() || unit == "b") {
    multiplier = 1;
  } else if (unit == "kb" || unit == "k") {
    multiplier = 1e3;
  } else if (unit == "mb" || unit == "m") {
    multiplier = 1e6;
  } else if (unit == "gb" || unit == "g") {
    multiplier = 1e9;
  } else if (unit == "tb" || unit == "t") {
    multiplier = 1e12;
  } else if (unit == "pb") {
    multiplier = 1e15;
  } else if (unit == "kib") {
    multiplier = 1024.0;
  } else if (unit == "mib") {
    multiplier = 1024.0 * 1024;
  } else if (unit == "gib") {
    multiplier = 1024.0 * 1024 * 1024;
  } else if (unit == "tib") {
    multiplier = 1024.0 * 1024 * 1024 * 1024;
  } else if (unit == "pib") {
    multiplier = 1024.0 * 1024 * 1024 * 1024 * 1024;
  } else {
    return invalid(fmt::format("unknown unit '{}'", unit));
  }
  double bytes = value * multiplier;
  if (bytes >= 9.2e18) return invalid("too large");
  double rounded = std::round(bytes);
  if (unit.empty() && rounded != bytes) return invalid("a byte count must be whole");
  return static_cast<int64_t>(rounded);
}

std::string FormatBytes(int64_t bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (std::abs(v) >= 1000 && u < 6) {
    v /= 1000;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  if (std::abs(v) >= 100) return fmt::format("{:.0f} {}", v, units[u]);
  if (std::abs(v) >= 10) return fmt::format("{:.1f} {}", v, units[u]);
  return fmt::format("{:.2f} {}", v, units[u]);
}

}  // namespace strata
