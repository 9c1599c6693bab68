// The documents of the AWS credential chain (s3_credentials_internal.h).
#include "strata/storage/s3/s3_credentials_internal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "strata/storage/s3/credential_sources.h"
#include "strata/storage/s3/s3_protocol.h"

namespace strata::internal_storage {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "http://user@host:port/path" -> "host" ("[::1]" keeps its brackets).
std::string_view UrlHost(std::string_view url) {
  size_t scheme = url.find("://");
  std::string_view host = scheme == std::string_view::npos ? url : url.substr(scheme + 3);
  host = host.substr(0, host.find_first_of("/?#"));
  if (size_t at = host.rfind('@'); at != std::string_view::npos) host.remove_prefix(at + 1);
  if (host.rfind('[', 0) == 0) return host.substr(0, host.find(']') + 1);
  return host.substr(0, host.find(':'));
}

namespace {

int Digits(std::string_view s, size_t pos, size_t n, bool* ok) {
  int v = 0;
  if (pos + n > s.size()) {
    *ok = false;
    return 0;
  }
  for (size_t i = pos; i < pos + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) *ok = false;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

std::string Getenv(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

Result<IniSections> ParseAwsIni(std::string_view text, std::string_view path) {
  IniSections sections;
  std::map<std::string, std::string>* current = nullptr;
  bool in_section = false;
  bool after_key = false;  // the previous line was "key = value": indented lines may follow
  int number = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++number;
    std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    const bool indented = std::isspace(static_cast<unsigned char>(raw.front()));
    if (indented && after_key) continue;  // a nested setting's sub-key
    auto bad = [&](std::string_view why) {
      return InvalidArgumentError(
          fmt::format("{} line {}: {} (expected '[section]' or 'name = value')", path, number,
                      why));
    };
    if (line.front() == '[') {
      if (line.back() != ']') return bad("unterminated section header");
      std::string name(Trim(line.substr(1, line.size() - 2)));
      // "[profile  dev]": the SDKs accept any run of blanks after "profile".
      if (name.rfind("profile", 0) == 0 && name.size() > 7 &&
          std::isspace(static_cast<unsigned char>(name[7]))) {
        name = "profile " + std::string(Trim(std::string_view(name).substr(7)));
      }
      current = &sections[name];
      in_section = true;
      after_key = false;
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return bad("no '='");
    if (!in_section) return bad("a setting before any [section]");
    std::string key = Lower(Trim(line.substr(0, eq)));
    if (key.empty()) return bad("no name before '='");
    std::string_view value = Trim(line.substr(eq + 1));
    // An inline comment needs a blank before it, as in botocore.
    for (std::string_view mark : {" #", " ;", "\t#", "\t;"}) {
      if (size_t c = value.find(mark); c != std::string_view::npos) {
        value = Trim(value.substr(0, c));
      }
    }
    (*current)[key] = std::string(value);
    after_key = true;
  }
  return sections;
}

Result<std::chrono::system_clock::time_point> ParseIso8601(std::string_view text) {
  auto bad = [&] {
    return InvalidArgumentError(
        fmt::format("'{}' is not an ISO 8601 UTC time (like 2026-12-04T21:35:00Z)", text));
  };
  bool ok = true;
  std::tm tm{};
  tm.tm_year = Digits(text, 0, 4, &ok) - 1900;
  tm.tm_mon = Digits(text, 5, 2, &ok) - 1;
  tm.tm_mday = Digits(text, 8, 2, &ok);
  tm.tm_hour = Digits(text, 11, 2, &ok);
  tm.tm_min = Digits(text, 14, 2, &ok);
  tm.tm_sec = Digits(text, 17, 2, &ok);
  if (!ok || text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != ' ') ||
      text[13] != ':' || text[16] != ':' || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 ||
      tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60) {
    return bad();
  }
  std::string_view rest = text.substr(19);
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    if (rest.empty() || !std::isdigit(static_cast<unsigned char>(rest.front()))) return bad();
    while (!rest.empty() && std::isdigit(static_cast<unsigned char>(rest.front()))) {
      rest.remove_prefix(1);
    }
  }
  if (rest != "Z" && rest != "+00:00" && rest != "+0000") return bad();
  return std::chrono::system_clock::from_time_t(::timegm(&tm));
}

std::string FormatIso8601(std::chrono::system_clock::time_point time) {
  const std::time_t t = std::chrono::system_clock::to_time_t(time);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

Result<AwsCredentials> ParseStsCredentials(std::string_view xml) {
  std::vector<std::string_view> found = XmlElements(xml, "Credentials");
  if (found.empty()) {
    return InvalidArgumentError(
        fmt::format("the response has no <Credentials>: '{}'",
                    xml.substr(0, std::min<size_t>(xml.size(), 200))));
  }
  AwsCredentials c;
  for (auto [name, field] : {std::pair{"AccessKeyId", &c.access_key_id},
                             std::pair{"SecretAccessKey", &c.secret_access_key},
                             std::pair{"SessionToken", &c.session_token}}) {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> v, XmlFirst(found.front(), name));
    if (!v || v->empty()) {
      return InvalidArgumentError(fmt::format("the response's <Credentials> has no <{}>", name));
    }
    *field = std::move(*v);
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> expiration,
                          XmlFirst(found.front(), "Expiration"));
  if (expiration) {
    STRATA_ASSIGN_OR_RETURN(c.expiration, ParseIso8601(Trim(*expiration)));
  }
  return c;
}

Result<AwsCredentials> ParseJsonCredentials(std::string_view json) {
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  const std::string head(json.substr(0, std::min<size_t>(json.size(), 200)));
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError(fmt::format("the response is not a JSON object: '{}'", head));
  }
  auto text = [&](const char* name) -> std::optional<std::string> {
    auto it = doc.find(name);
    if (it == doc.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  if (std::optional<std::string> code = text("Code"); code && *code != "Success") {
    std::string message = text("Message").value_or("");
    return InvalidArgumentError(fmt::format("the response says Code {}{}", *code,
                                            message.empty() ? "" : " (" + message + ")"));
  }
  AwsCredentials c;
  for (auto [name, field] : {std::pair{"AccessKeyId", &c.access_key_id},
                             std::pair{"SecretAccessKey", &c.secret_access_key}}) {
    std::optional<std::string> v = text(name);
    if (!v || v->empty()) {
      return InvalidArgumentError(fmt::format("the response has no \"{}\": '{}'", name, head));
    }
    *field = std::move(*v);
  }
  c.session_token = text("Token").value_or("");
  if (std::optional<std::string> expiration = text("Expiration")) {
    STRATA_ASSIGN_OR_RETURN(c.expiration, ParseIso8601(*expiration));
  }
  return c;
}

bool IsLoopbackUrl(std::string_view url) {
  std::string_view host = UrlHost(url);
  if (host.rfind('[', 0) == 0) return host == "[::1]";
  if (host == "localhost") return true;
  // 127.0.0.0/8 as a dotted address, not a name that starts "127." (a
  // proxy must not be skipped for 127.0.0.1.example.com).
  return host.rfind("127.", 0) == 0 && std::all_of(host.begin(), host.end(), [](char c) {
           return c == '.' || std::isdigit(static_cast<unsigned char>(c));
         });
}

bool IsAllowedContainerHost(std::string_view url) {
  std::string_view host = UrlHost(url);
  return IsLoopbackUrl(url) || host == "169.254.170.2" || host == "169.254.170.23" ||
         Lower(host) == "[fd00:ec2::23]";
}

}  // namespace strata::internal_storage
