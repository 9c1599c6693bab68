// The S3 protocol pieces that need no server (s3_protocol.h).
#include "strata/storage/s3/s3_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "strata/base/utf8.h"

namespace strata {

namespace internal_storage {

namespace {

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string UriEncode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c) || (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Result<std::string> UriDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      int hi = i + 2 < text.size() ? HexValue(text[i + 1]) : -1;
      int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return InvalidArgumentError(fmt::format("malformed %-escape in '{}'", text));
      }
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> params) {
  for (auto& [name, value] : params) {
    name = UriEncode(name, false);
    value = UriEncode(value, false);
  }
  std::sort(params.begin(), params.end());
  std::string out;
  for (const auto& [name, value] : params) {
    if (!out.empty()) out += '&';
    out += name;
    out += '=';
    out += value;
  }
  return out;
}

Result<std::string> XmlUnescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out += text[i];
      continue;
    }
    size_t semi = text.find(';', i);
    if (semi == std::string_view::npos || semi - i > 12) {
      return InvalidArgumentError(
          fmt::format("unterminated XML entity in '{}'", text.substr(i, 16)));
    }
    std::string_view entity = text.substr(i + 1, semi - i - 1);
    if (entity == "amp") {
      out += '&';
    } else if (entity == "lt") {
      out += '<';
    } else if (entity == "gt") {
      out += '>';
    } else if (entity == "quot") {
      out += '"';
    } else if (entity == "apos") {
      out += '\'';
    } else if (entity.size() >= 2 && entity[0] == '#') {
      bool hex = entity[1] == 'x' || entity[1] == 'X';
      std::string_view digits = entity.substr(hex ? 2 : 1);
      uint32_t cp = 0;
      auto [end, ec] =
          std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || cp == 0 ||
          cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return InvalidArgumentError(fmt::format("invalid XML character reference '&{};'", entity));
      }
      AppendUtf8(cp, out);
    } else {
      return InvalidArgumentError(fmt::format("unknown XML entity '&{};'", entity));
    }
    i = semi;
  }
  return out;
}

std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view name) {
  std::vector<std::string_view> out;
  const std::string open = fmt::format("<{}", name);
  const std::string close = fmt::format("</{}>", name);
  size_t pos = 0;
  while ((pos = xml.find(open, pos)) != std::string_view::npos) {
    size_t after = pos + open.size();
    if (after >= xml.size()) break;
    char next = xml[after];
    if (next != '>' && next != '/' && next != ' ' && next != '\t' && next != '\n' && next != '\r') {
      pos = after;  // a longer name (<KeyCount> when looking for <Key>)
      continue;
    }
    size_t gt = xml.find('>', after);
    if (gt == std::string_view::npos) break;
    if (xml[gt - 1] == '/') {  // <name/> or <name attr="..."/>
      out.push_back(std::string_view());
      pos = gt + 1;
      continue;
    }
    size_t end = xml.find(close, gt + 1);
    if (end == std::string_view::npos) break;
    out.push_back(xml.substr(gt + 1, end - gt - 1));
    pos = end + close.size();
  }
  return out;
}

Result<std::optional<std::string>> XmlFirst(std::string_view xml, std::string_view name) {
  std::vector<std::string_view> found = XmlElements(xml, name);
  if (found.empty()) return std::optional<std::string>();
  STRATA_ASSIGN_OR_RETURN(std::string text, XmlUnescape(found.front()));
  return std::optional<std::string>(std::move(text));
}

Result<ListPage> ParseListObjectsV2(std::string_view xml) {
  if (xml.find("<ListBucketResult") == std::string_view::npos) {
    return InvalidArgumentError(fmt::format("not a ListObjectsV2 response: '{}'",
                                            xml.substr(0, std::min<size_t>(xml.size(), 200))));
  }
  ListPage page;
  for (std::string_view contents : XmlElements(xml, "Contents")) {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> key, XmlFirst(contents, "Key"));
    if (!key) return InvalidArgumentError("ListObjectsV2 response has <Contents> without <Key>");
    page.keys.push_back(std::move(*key));
  }
  // <IsTruncated> and <NextContinuationToken> are direct children of the
  // result; no <Contents> holds elements of those names.
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> truncated, XmlFirst(xml, "IsTruncated"));
  page.truncated = truncated && *truncated == "true";
  if (page.truncated) {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> token,
                            XmlFirst(xml, "NextContinuationToken"));
    if (!token || token->empty()) {
      return InvalidArgumentError("truncated ListObjectsV2 response has no NextContinuationToken");
    }
    page.next_continuation_token = std::move(*token);
  }
  return page;
}

S3ErrorBody ParseErrorBody(std::string_view xml) {
  S3ErrorBody body;
  std::vector<std::string_view> errors = XmlElements(xml, "Error");
  if (errors.empty()) return body;
  auto text = [&](std::string_view name) {
    Result<std::optional<std::string>> v = XmlFirst(errors.front(), name);
    if (!v.ok()) {
      std::vector<std::string_view> raw = XmlElements(errors.front(), name);
      return raw.empty() ? std::string() : std::string(raw.front());
    }
    return v->value_or("");
  };
  body.code = text("Code");
  body.message = text("Message");
  // A message is one line in our errors.
  std::replace(body.message.begin(), body.message.end(), '\n', ' ');
  return body;
}

bool IsRetryableResponse(long http_status, std::string_view code) {
  if (http_status >= 500 || http_status == 429) return true;
  return code == "SlowDown" || code == "RequestTimeout" || code == "Throttling" ||
         code == "ThrottlingException" || code == "InternalError" || code == "ServiceUnavailable";
}

std::string CompleteMultipartUploadBody(const std::vector<std::string>& etags) {
  std::string out = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    out += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", i + 1,
                       XmlEscape(etags[i]));
  }
  out += "</CompleteMultipartUpload>";
  return out;
}

int64_t MultipartPartSize(int64_t size, int64_t preferred) {
  constexpr int64_t kMinPart = int64_t{5} << 20;
  constexpr int64_t kMaxParts = 10000;
  int64_t part = std::max(preferred, kMinPart);
  return std::max(part, (size + kMaxParts - 1) / kMaxParts);
}

}  // namespace internal_storage

}  // namespace strata
