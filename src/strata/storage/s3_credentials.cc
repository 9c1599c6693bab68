#include "strata/storage/s3_credentials.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "strata/storage/s3_credentials_internal.h"
#include "strata/storage/s3_store_internal.h"

namespace strata {

// ---------------------------------------------------------------------------
// The pure pieces (s3_credentials_internal.h).

namespace internal_storage {

namespace {

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

}  // namespace internal_storage

// ---------------------------------------------------------------------------
// The chain.

namespace {

namespace is = internal_storage;
using Clock = std::chrono::system_clock;

std::string Getenv(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool EnvIsTrue(const char* name) { return is::Lower(is::Trim(Getenv(name))) == "true"; }

std::string HomeDir() {
  std::string home = Getenv("HOME");
  if (!home.empty()) return home;
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) {
    return pw->pw_dir;
  }
  return std::string();
}

// "~/x" -> "$HOME/x", as the SDKs expand the file variables.
std::string ExpandUser(std::string path) {
  if (path == "~" || path.rfind("~/", 0) == 0) return HomeDir() + path.substr(1);
  return path;
}

// The file's text, nullopt when it does not exist; an error naming `what`
// when it exists but cannot be read.
Result<std::optional<std::string>> ReadFileIfExists(const std::string& path,
                                                    std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>();
    return ErrnoToStatus(errno, fmt::format("{}: cannot read {}", what, path));
  }
  std::string text;
  char buf[8192];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return ErrnoToStatus(error, fmt::format("{}: cannot read {}", what, path));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return std::optional<std::string>(std::move(text));
}

// ---------------------------------------------------------------------------
// HTTP for the credential services: small bodies, a hard timeout per attempt.

void GlobalInitCurl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct HttpCall {
  const char* method = "GET";
  std::string url;
  std::vector<std::string> headers;
  std::string body;
  double timeout_seconds = 1;
};

struct HttpReply {
  long status = 0;
  std::string body;
};

constexpr size_t kMaxReplyBody = 1 << 20;

size_t OnReplyBody(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  const size_t n = size * count;
  if (body->size() + n > kMaxReplyBody) return 0;  // aborts: no credential document is this big
  body->append(data, n);
  return n;
}

bool IsLinkLocal(std::string_view url) {
  std::string_view host = is::UrlHost(url);
  return host.rfind("169.254.", 0) == 0 || is::Lower(host).rfind("[fd00:ec2::", 0) == 0;
}

// One attempt. Unavailable "URL: <libcurl's reason>" when no response came.
Result<HttpReply> HttpSend(const HttpCall& call) {
  GlobalInitCurl();
  CURL* h = curl_easy_init();
  if (h == nullptr) return InternalError("curl_easy_init failed");
  char error_text[CURL_ERROR_SIZE] = {0};
  HttpReply reply;
  curl_slist* headers = nullptr;
  for (const std::string& header : call.headers) {
    headers = curl_slist_append(headers, header.c_str());
  }
  const long timeout_ms = static_cast<long>(std::max(1.0, std::ceil(call.timeout_seconds * 1000)));
  curl_easy_setopt(h, CURLOPT_URL, call.url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
  // The metadata services are never behind a proxy; nor is this host.
  if (is::IsLoopbackUrl(call.url) || IsLinkLocal(call.url)) curl_easy_setopt(h, CURLOPT_PROXY, "");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnReplyBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  std::string_view method = call.method;
  if (method == "POST") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, call.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.body.size()));
  } else if (method == "PUT") {
    // A PUT without a body (the IMDSv2 token request).
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
  }
  CURLcode rc = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &reply.status);
  curl_easy_cleanup(h);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    std::string detail = error_text[0] != '\0' ? error_text : curl_easy_strerror(rc);
    return UnavailableError(fmt::format("{}: {}", call.url, detail));
  }
  return reply;
}

// The start of a body, on one line, for messages.
std::string BodyHead(std::string_view body) {
  std::string head(is::Trim(body.substr(0, std::min<size_t>(body.size(), 200))));
  std::replace(head.begin(), head.end(), '\n', ' ');
  std::replace(head.begin(), head.end(), '\r', ' ');
  return head;
}

// ---------------------------------------------------------------------------
// Providers.

class StaticProvider : public AwsCredentialProvider {
 public:
  StaticProvider(AwsCredentials credentials, std::string description)
      : credentials_(std::move(credentials)), description_(std::move(description)) {}
  Result<AwsCredentials> Get() override { return credentials_; }
  std::string description() const override { return description_; }

 private:
  const AwsCredentials credentials_;
  const std::string description_;
};

// Fetches credentials with `fetch` when those it has expire within the
// refresh window; keeps using them while still valid if a fetch fails.
class RefreshingProvider : public AwsCredentialProvider {
 public:
  using Fetch = std::function<Result<AwsCredentials>()>;
  RefreshingProvider(std::string description, Fetch fetch, AwsCredentials first)
      : description_(std::move(description)), fetch_(std::move(fetch)), cached_(std::move(first)) {}

  Result<AwsCredentials> Get() override {
    std::lock_guard lock(mu_);
    const Clock::time_point now = Clock::now();
    if (!cached_.expiration || now < *cached_.expiration - kAwsCredentialRefreshWindow) {
      return cached_;
    }
    Result<AwsCredentials> fresh = fetch_();
    if (fresh.ok()) {
      cached_ = *fresh;
      return cached_;
    }
    if (now < *cached_.expiration) return cached_;
    return fresh.status().WithContext(
        fmt::format("refreshing the credentials that expired at {}",
                    is::FormatIso8601(*cached_.expiration)));
  }
  std::string description() const override { return description_; }

 private:
  const std::string description_;
  const Fetch fetch_;
  std::mutex mu_;
  AwsCredentials cached_;  // guarded by mu_
};

// Runs `attempt` up to `attempts` times while it fails transiently and
// `budget_seconds` lasts, passing each try the time left; sleeps 0.1, 0.2,
// 0.4 s between tries.
template <typename F>
auto WithRetries(int attempts, double budget_seconds, F attempt) -> decltype(attempt(1.0)) {
  const auto start = std::chrono::steady_clock::now();
  for (int k = 1;; ++k) {
    const double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto result = attempt(std::max(0.05, budget_seconds - spent));
    if (result.ok() || result.status().code() != StatusCode::kUnavailable || k >= attempts) {
      return result;
    }
    const double pause = 0.1 * std::ldexp(1.0, k - 1);
    const double now_spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (now_spent + pause >= budget_seconds) return result;
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
  }
}

// ---------------------------------------------------------------------------
// Web identity: STS AssumeRoleWithWebIdentity.

struct WebIdentityConfig {
  std::string token_file;
  std::string role_arn;
  std::string session_name;
  std::string sts_endpoint;
  double timeout_seconds = 30;
};

std::string StsEndpoint(const std::string& region) {
  std::string endpoint = Getenv("AWS_ENDPOINT_URL_STS");
  if (endpoint.empty()) endpoint = Getenv("AWS_ENDPOINT_URL");
  if (endpoint.empty()) {
    const bool legacy = is::Lower(Getenv("AWS_STS_REGIONAL_ENDPOINTS")) == "legacy";
    endpoint = region.empty() || legacy ? "https://sts.amazonaws.com"
                                        : fmt::format("https://sts.{}.amazonaws.com", region);
  }
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  return endpoint;
}

Status StsError(const WebIdentityConfig& config, const HttpReply& reply, int attempts) {
  is::S3ErrorBody error = is::ParseErrorBody(reply.body);
  std::string message =
      fmt::format("web identity: STS at {} answered {}", config.sts_endpoint, reply.status);
  if (!error.code.empty()) message += " " + error.code;
  if (!error.message.empty()) {
    message += " (" + error.message + ")";
  } else if (error.code.empty() && !reply.body.empty()) {
    message += ": " + BodyHead(reply.body);
  }
  if (attempts > 1) message += fmt::format(" after {} attempts", attempts);
  if (reply.status >= 500 || reply.status == 429 || error.code == "IDPCommunicationError" ||
      error.code == "Throttling") {
    return UnavailableError(std::move(message));
  }
  if (reply.status == 401 || reply.status == 403 || error.code == "AccessDenied" ||
      error.code == "InvalidIdentityToken" || error.code == "ExpiredTokenException" ||
      error.code == "IDPRejectedClaim") {
    return PermissionDeniedError(std::move(message));
  }
  if (reply.status == 400) return InvalidArgumentError(std::move(message));
  return UnknownError(std::move(message));
}

Result<AwsCredentials> AssumeRoleWithWebIdentity(const WebIdentityConfig& config) {
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> token,
                          ReadFileIfExists(config.token_file, "web identity"));
  if (!token) {
    return FailedPreconditionError(
        fmt::format("web identity: the token file {} does not exist", config.token_file));
  }
  const std::string_view trimmed = is::Trim(*token);
  if (trimmed.empty()) {
    return FailedPreconditionError(
        fmt::format("web identity: the token file {} is empty", config.token_file));
  }
  HttpCall call;
  call.method = "POST";
  call.url = config.sts_endpoint + "/";
  // No "Expect: 100-continue" (libcurl adds it to bodies over 1 KiB, and a
  // token is about that): a server that does not answer it would cost a
  // second per call.
  call.headers = {"Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                  "Accept: application/xml", "Expect:"};
  call.body = is::CanonicalQuery({{"Action", "AssumeRoleWithWebIdentity"},
                                  {"Version", "2011-06-15"},
                                  {"RoleArn", config.role_arn},
                                  {"RoleSessionName", config.session_name},
                                  {"WebIdentityToken", std::string(trimmed)}});
  int attempts = 0;
  return WithRetries(3, config.timeout_seconds, [&](double left) -> Result<AwsCredentials> {
    ++attempts;
    call.timeout_seconds = left;
    Result<HttpReply> reply = HttpSend(call);
    if (!reply.ok()) {
      return UnavailableError(fmt::format("web identity: STS at {} could not be reached{}: {}",
                                          config.sts_endpoint,
                                          attempts > 1 ? fmt::format(" ({} attempts)", attempts)
                                                       : std::string(),
                                          reply.status().message()));
    }
    if (reply->status != 200) return StsError(config, *reply, attempts);
    Result<AwsCredentials> parsed = is::ParseStsCredentials(reply->body);
    if (!parsed.ok()) {
      return UnknownError(fmt::format("web identity: STS at {}: {}", config.sts_endpoint,
                                      parsed.status().message()));
    }
    return parsed;
  });
}

std::string DefaultSessionName() {
  return fmt::format("strata-{}", std::chrono::duration_cast<std::chrono::seconds>(
                                      Clock::now().time_since_epoch())
                                      .count());
}

Result<std::shared_ptr<AwsCredentialProvider>> WebIdentityProvider(WebIdentityConfig config) {
  STRATA_ASSIGN_OR_RETURN(AwsCredentials first, AssumeRoleWithWebIdentity(config));
  std::string description = fmt::format("web identity (role {})", config.role_arn);
  return std::shared_ptr<AwsCredentialProvider>(std::make_shared<RefreshingProvider>(
      std::move(description), [config] { return AssumeRoleWithWebIdentity(config); },
      std::move(first)));
}

// ---------------------------------------------------------------------------
// Container credentials (ECS, EKS Pod Identity).

struct ContainerConfig {
  std::string url;
  std::string token_file;  // read at every fetch; wins over `token`
  std::string token;
};

Result<AwsCredentials> FetchContainerCredentials(const ContainerConfig& config) {
  HttpCall call;
  call.url = config.url;
  call.timeout_seconds = 2;  // botocore's
  std::string token = config.token;
  if (!config.token_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> text,
                            ReadFileIfExists(config.token_file, "container credentials"));
    if (!text) {
      return FailedPreconditionError(fmt::format(
          "container credentials: AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {} does not exist",
          config.token_file));
    }
    token = std::string(is::Trim(*text));
  }
  if (token.find_first_of("\r\n") != std::string::npos) {
    return InvalidArgumentError(
        "container credentials: the authorization token contains a line break");
  }
  if (!token.empty()) call.headers.push_back("Authorization: " + token);
  call.headers.push_back("Accept: application/json");
  int attempts = 0;
  return WithRetries(3, 10, [&](double left) -> Result<AwsCredentials> {
    ++attempts;
    call.timeout_seconds = std::min(2.0, left);
    Result<HttpReply> reply = HttpSend(call);
    if (!reply.ok()) {
      return UnavailableError(fmt::format("container credentials: {} could not be reached: {}",
                                          config.url, reply.status().message()));
    }
    if (reply->status != 200) {
      std::string message = fmt::format("container credentials: {} answered {}{}", config.url,
                                        reply->status,
                                        reply->body.empty() ? "" : ": " + BodyHead(reply->body));
      if (reply->status >= 500 || reply->status == 429) return UnavailableError(message);
      if (reply->status == 401 || reply->status == 403) return PermissionDeniedError(message);
      return UnknownError(message);
    }
    Result<AwsCredentials> parsed = is::ParseJsonCredentials(reply->body);
    if (!parsed.ok()) {
      return UnknownError(fmt::format("container credentials: {}: {}", config.url,
                                      parsed.status().message()));
    }
    return parsed;
  });
}

// ---------------------------------------------------------------------------
// Instance metadata (IMDS).

struct ImdsConfig {
  std::string endpoint;
  double timeout_seconds = 1;
  int attempts = 1;
  bool v1_disabled = false;
};

// What an IMDS walk found: credentials, or why the service is not there.
struct ImdsOutcome {
  std::optional<AwsCredentials> credentials;
  std::string absent;  // "unreachable: ...", "no IAM role attached"
};

constexpr const char* kImdsCredentialsPath = "/latest/meta-data/iam/security-credentials/";

Result<ImdsOutcome> FetchImds(const ImdsConfig& config) {
  auto send = [&](HttpCall call) {
    call.timeout_seconds = config.timeout_seconds;
    return WithRetries(config.attempts, config.timeout_seconds * config.attempts + 1,
                       [&](double) { return HttpSend(call); });
  };
  auto failed = [&](const HttpCall& call, const HttpReply& reply) {
    std::string message = fmt::format("instance metadata: {} {} answered {}{}", call.method,
                                      call.url, reply.status,
                                      reply.body.empty() ? "" : ": " + BodyHead(reply.body));
    return reply.status >= 500 ? UnavailableError(message) : UnknownError(message);
  };

  // IMDSv2: a session token first.
  std::vector<std::string> auth;
  HttpCall token_call;
  token_call.method = "PUT";
  token_call.url = config.endpoint + "/latest/api/token";
  token_call.headers = {"x-aws-ec2-metadata-token-ttl-seconds: 21600"};
  Result<HttpReply> token = send(token_call);
  if (!token.ok()) {
    return ImdsOutcome{std::nullopt, fmt::format("unreachable: {}", token.status().message())};
  }
  if (token->status == 200 && !is::Trim(token->body).empty()) {
    auth.push_back(fmt::format("x-aws-ec2-metadata-token: {}", is::Trim(token->body)));
  } else if (token->status == 403 || token->status == 404 || token->status == 405) {
    // IMDSv1 only (or a proxy in the way): the SDKs go on without a token.
    if (config.v1_disabled) {
      return UnknownError(fmt::format(
          "instance metadata: PUT {} answered {} and AWS_EC2_METADATA_V1_DISABLED is true",
          token_call.url, token->status));
    }
  } else {
    return failed(token_call, *token);
  }

  HttpCall role_call;
  role_call.url = config.endpoint + kImdsCredentialsPath;
  role_call.headers = auth;
  Result<HttpReply> role = send(role_call);
  if (!role.ok()) {
    return ImdsOutcome{std::nullopt, fmt::format("unreachable: {}", role.status().message())};
  }
  if (role->status == 404) return ImdsOutcome{std::nullopt, "no IAM role attached"};
  if (role->status != 200) return failed(role_call, *role);
  std::string_view name = is::Trim(role->body);
  name = is::Trim(name.substr(0, name.find('\n')));
  if (name.empty()) return ImdsOutcome{std::nullopt, "no IAM role attached"};

  HttpCall credentials_call;
  credentials_call.url = role_call.url + is::UriEncode(name, /*keep_slash=*/false);
  credentials_call.headers = auth;
  Result<HttpReply> reply = send(credentials_call);
  if (!reply.ok()) {
    return UnavailableError(fmt::format("instance metadata: {}", reply.status().message()));
  }
  if (reply->status != 200) return failed(credentials_call, *reply);
  Result<AwsCredentials> parsed = is::ParseJsonCredentials(reply->body);
  if (!parsed.ok()) {
    return UnknownError(fmt::format("instance metadata: {}: {}", credentials_call.url,
                                    parsed.status().message()));
  }
  return ImdsOutcome{*std::move(parsed), ""};
}

Result<AwsCredentials> RefreshImds(const ImdsConfig& config) {
  STRATA_ASSIGN_OR_RETURN(ImdsOutcome outcome, FetchImds(config));
  if (!outcome.credentials) {
    return UnavailableError(
        fmt::format("instance metadata: {}: {}", config.endpoint, outcome.absent));
  }
  return *std::move(outcome.credentials);
}

Result<double> PositiveNumberFromEnv(const char* name, double fallback) {
  const std::string text = Getenv(name);
  if (text.empty()) return fallback;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !(v > 0) || v > 3600) {
    return InvalidArgumentError(fmt::format("{}={} is not a positive number", name, text));
  }
  return v;
}

// ---------------------------------------------------------------------------
// Shared files.

std::string ProfileName(const std::string& explicit_profile) {
  if (!explicit_profile.empty()) return explicit_profile;
  std::string name = Getenv("AWS_PROFILE");
  if (name.empty()) name = Getenv("AWS_DEFAULT_PROFILE");
  return name.empty() ? "default" : name;
}

std::string CredentialsFilePath() {
  std::string path = Getenv("AWS_SHARED_CREDENTIALS_FILE");
  return ExpandUser(path.empty() ? "~/.aws/credentials" : path);
}

std::string ConfigFilePath() {
  std::string path = Getenv("AWS_CONFIG_FILE");
  return ExpandUser(path.empty() ? "~/.aws/config" : path);
}

// One profile's settings from both files.
struct Profile {
  std::string name;
  std::string credentials_path;
  std::string config_path;
  std::optional<std::map<std::string, std::string>> credentials;  // from the credentials file
  std::optional<std::map<std::string, std::string>> config;       // from the config file
};

Result<Profile> LoadProfile(const std::string& name) {
  Profile p;
  p.name = name;
  p.credentials_path = CredentialsFilePath();
  p.config_path = ConfigFilePath();
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> credentials_text,
                          ReadFileIfExists(p.credentials_path, "shared credentials file"));
  if (credentials_text) {
    STRATA_ASSIGN_OR_RETURN(is::IniSections sections,
                            is::ParseAwsIni(*credentials_text, p.credentials_path));
    if (auto it = sections.find(name); it != sections.end()) p.credentials = it->second;
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> config_text,
                          ReadFileIfExists(p.config_path, "config file"));
  if (config_text) {
    STRATA_ASSIGN_OR_RETURN(is::IniSections sections, is::ParseAwsIni(*config_text, p.config_path));
    auto it = sections.find("profile " + name);
    if (it == sections.end() && name == "default") it = sections.find("default");
    if (it != sections.end()) p.config = it->second;
  }
  return p;
}

std::string Setting(const std::optional<std::map<std::string, std::string>>& section,
                    const char* key) {
  if (!section) return std::string();
  auto it = section->find(key);
  return it == section->end() ? std::string() : it->second;
}

// ---------------------------------------------------------------------------
// The sources, in the chain's order. Each returns its provider, nothing when
// it is not configured (noting in `looked` where it looked), or the error of
// a configured source that fails.

using MaybeProvider = std::optional<std::shared_ptr<AwsCredentialProvider>>;

struct ChainContext {
  const AwsCredentialChainOptions& options;
  std::string region;  // for the regional STS endpoint
  std::vector<std::string> looked;
};

Result<MaybeProvider> FromEnvironment(ChainContext& chain) {
  // A profile named in the options wins, as boto3.Session(profile_name=...).
  if (!chain.options.profile.empty()) {
    chain.looked.push_back(
        fmt::format("environment (skipped: profile '{}' asked for)", chain.options.profile));
    return MaybeProvider();
  }
  const std::string key = Getenv("AWS_ACCESS_KEY_ID");
  const std::string secret = Getenv("AWS_SECRET_ACCESS_KEY");
  if (key.empty() && secret.empty()) {
    chain.looked.push_back("environment (AWS_ACCESS_KEY_ID unset)");
    return MaybeProvider();
  }
  if (key.empty() || secret.empty()) {
    return InvalidArgumentError(fmt::format(
        "environment: {} is set but {} is not",
        key.empty() ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID",
        key.empty() ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY"));
  }
  AwsCredentials c;
  c.access_key_id = key;
  c.secret_access_key = secret;
  c.session_token = Getenv("AWS_SESSION_TOKEN");
  return MaybeProvider(StaticAwsCredentialProvider(std::move(c), "environment"));
}

Result<MaybeProvider> WebIdentitySource(WebIdentityConfig config, const ChainContext& chain) {
  if (config.session_name.empty()) config.session_name = DefaultSessionName();
  config.token_file = ExpandUser(config.token_file);
  config.sts_endpoint = StsEndpoint(chain.region);
  config.timeout_seconds = chain.options.sts_timeout_seconds;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<AwsCredentialProvider> p, WebIdentityProvider(config));
  return MaybeProvider(std::move(p));
}

Result<MaybeProvider> FromSharedFiles(ChainContext& chain) {
  const std::string name = ProfileName(chain.options.profile);
  STRATA_ASSIGN_OR_RETURN(Profile profile, LoadProfile(name));
  const std::string where = fmt::format("profile '{}' in {} and {}", name,
                                        profile.credentials_path, profile.config_path);
  if (!profile.credentials && !profile.config) {
    // A profile named other than "default" must exist; "default" may not.
    if (name != "default") {
      return InvalidArgumentError(fmt::format("shared files: profile '{}' is in neither {} nor {}",
                                              name, profile.credentials_path,
                                              profile.config_path));
    }
    chain.looked.push_back(fmt::format("shared files ({}: absent)", where));
    return MaybeProvider();
  }
  // Keys: the credentials file's section, else the config file's.
  for (const auto* section : {&profile.credentials, &profile.config}) {
    const std::string key = Setting(*section, "aws_access_key_id");
    const std::string secret = Setting(*section, "aws_secret_access_key");
    if (key.empty() && secret.empty()) continue;
    const std::string& path =
        section == &profile.credentials ? profile.credentials_path : profile.config_path;
    if (key.empty() || secret.empty()) {
      return InvalidArgumentError(
          fmt::format("shared files: profile '{}' in {} has {} but not {}", name, path,
                      key.empty() ? "aws_secret_access_key" : "aws_access_key_id",
                      key.empty() ? "aws_access_key_id" : "aws_secret_access_key"));
    }
    AwsCredentials c;
    c.access_key_id = key;
    c.secret_access_key = secret;
    c.session_token = Setting(*section, "aws_session_token");
    return MaybeProvider(StaticAwsCredentialProvider(
        std::move(c), fmt::format("shared files (profile '{}' in {})", name, path)));
  }
  // Web identity configured in the profile.
  WebIdentityConfig config;
  config.token_file = Setting(profile.config, "web_identity_token_file");
  config.role_arn = Setting(profile.config, "role_arn");
  config.session_name = Setting(profile.config, "role_session_name");
  if (!config.token_file.empty()) {
    if (config.role_arn.empty()) {
      return InvalidArgumentError(fmt::format(
          "shared files: profile '{}' in {} has web_identity_token_file but no role_arn", name,
          profile.config_path));
    }
    return WebIdentitySource(std::move(config), chain);
  }
  // What the SDKs can do and this chain cannot: say so rather than skip.
  for (const char* unsupported : {"credential_process", "source_profile", "credential_source",
                                  "sso_session", "sso_start_url"}) {
    if (!Setting(profile.config, unsupported).empty()) {
      return UnimplementedError(fmt::format(
          "shared files: profile '{}' in {} uses {}, which strata does not support (give the "
          "profile aws_access_key_id/aws_secret_access_key, or web_identity_token_file and "
          "role_arn)",
          name, profile.config_path, unsupported));
    }
  }
  chain.looked.push_back(fmt::format("shared files ({}: no credentials in it)", where));
  return MaybeProvider();
}

Result<MaybeProvider> FromWebIdentity(ChainContext& chain) {
  WebIdentityConfig config;
  config.token_file = Getenv("AWS_WEB_IDENTITY_TOKEN_FILE");
  config.role_arn = Getenv("AWS_ROLE_ARN");
  config.session_name = Getenv("AWS_ROLE_SESSION_NAME");
  if (config.token_file.empty() && config.role_arn.empty()) {
    chain.looked.push_back("web identity (AWS_WEB_IDENTITY_TOKEN_FILE unset)");
    return MaybeProvider();
  }
  if (config.token_file.empty() || config.role_arn.empty()) {
    const bool no_file = config.token_file.empty();
    return InvalidArgumentError(fmt::format(
        "web identity: {} is set but {} is not",
        no_file ? "AWS_ROLE_ARN" : "AWS_WEB_IDENTITY_TOKEN_FILE",
        no_file ? "AWS_WEB_IDENTITY_TOKEN_FILE" : "AWS_ROLE_ARN"));
  }
  return WebIdentitySource(std::move(config), chain);
}

Result<MaybeProvider> FromContainer(ChainContext& chain) {
  const std::string relative = Getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  const std::string full = Getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (relative.empty() && full.empty()) {
    chain.looked.push_back("container (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/_FULL_URI unset)");
    return MaybeProvider();
  }
  ContainerConfig config;
  if (!relative.empty()) {
    config.url = "http://169.254.170.2" + (relative.front() == '/' ? relative : "/" + relative);
  } else {
    config.url = full;
    const bool https = full.rfind("https://", 0) == 0;
    const bool http = full.rfind("http://", 0) == 0;
    if (!https && !(http && is::IsAllowedContainerHost(full))) {
      return InvalidArgumentError(fmt::format(
          "container credentials: AWS_CONTAINER_CREDENTIALS_FULL_URI {} must be https:// or "
          "http:// to a loopback address, 169.254.170.2, 169.254.170.23 or [fd00:ec2::23]",
          full));
    }
  }
  config.token_file = Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  config.token = Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN");
  STRATA_ASSIGN_OR_RETURN(AwsCredentials first, FetchContainerCredentials(config));
  return MaybeProvider(std::make_shared<RefreshingProvider>(
      fmt::format("container credentials ({})", config.url),
      [config] { return FetchContainerCredentials(config); }, std::move(first)));
}

Result<MaybeProvider> FromInstanceMetadata(ChainContext& chain) {
  if (EnvIsTrue("AWS_EC2_METADATA_DISABLED")) {
    chain.looked.push_back("instance metadata (AWS_EC2_METADATA_DISABLED=true)");
    return MaybeProvider();
  }
  ImdsConfig config;
  config.endpoint = Getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  if (config.endpoint.empty()) {
    const std::string mode = Getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");
    if (is::Lower(mode) == "ipv6") {
      config.endpoint = "http://[fd00:ec2::254]";
    } else if (mode.empty() || is::Lower(mode) == "ipv4") {
      config.endpoint = "http://169.254.169.254";
    } else {
      return InvalidArgumentError(fmt::format(
          "instance metadata: AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE={} is not IPv4 or IPv6",
          mode));
    }
  }
  while (!config.endpoint.empty() && config.endpoint.back() == '/') config.endpoint.pop_back();
  STRATA_ASSIGN_OR_RETURN(config.timeout_seconds,
                          PositiveNumberFromEnv("AWS_METADATA_SERVICE_TIMEOUT", 1));
  STRATA_ASSIGN_OR_RETURN(double attempts,
                          PositiveNumberFromEnv("AWS_METADATA_SERVICE_NUM_ATTEMPTS", 1));
  config.attempts = std::max(1, static_cast<int>(attempts));
  config.v1_disabled = EnvIsTrue("AWS_EC2_METADATA_V1_DISABLED");
  STRATA_ASSIGN_OR_RETURN(ImdsOutcome outcome, FetchImds(config));
  if (!outcome.credentials) {
    chain.looked.push_back(
        fmt::format("instance metadata {} ({})", config.endpoint, outcome.absent));
    return MaybeProvider();
  }
  return MaybeProvider(std::make_shared<RefreshingProvider>(
      fmt::format("instance metadata ({})", config.endpoint),
      [config] { return RefreshImds(config); }, *std::move(outcome.credentials)));
}

using Source = Result<MaybeProvider> (*)(ChainContext&);
constexpr Source kChain[] = {FromEnvironment, FromSharedFiles, FromWebIdentity, FromContainer,
                             FromInstanceMetadata};

// ---------------------------------------------------------------------------
// Resolved providers, shared between stores of one configuration (so that
// opening many stores costs one STS or metadata call, not one each).

// Every variable the chain reads.
constexpr const char* kChainVariables[] = {
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "HOME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL",
    "AWS_STS_REGIONAL_ENDPOINTS",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
    "AWS_EC2_METADATA_V1_DISABLED",
    "AWS_METADATA_SERVICE_TIMEOUT",
    "AWS_METADATA_SERVICE_NUM_ATTEMPTS",
};

// The configuration the chain resolves from: the options, the variables and
// the shared files' contents (a file edited in place is a new configuration).
std::string ConfigurationKey(const AwsCredentialChainOptions& options, const std::string& region) {
  std::string key = fmt::format("profile={}\nregion={}\ntimeout={}\n", options.profile, region,
                                options.sts_timeout_seconds);
  for (const char* name : kChainVariables) key += fmt::format("{}={}\n", name, Getenv(name));
  for (const std::string& path : {CredentialsFilePath(), ConfigFilePath()}) {
    Result<std::optional<std::string>> text = ReadFileIfExists(path, "");
    key += fmt::format("{}:{}\n", path, text.ok() ? text->value_or("(absent)") : "(unreadable)");
  }
  return key;
}

std::mutex cache_mu;
// Never destroyed: stores on other threads may still use their providers
// while the process exits.
std::map<std::string, std::shared_ptr<AwsCredentialProvider>>& ProviderCache() {
  static auto* cache = new std::map<std::string, std::shared_ptr<AwsCredentialProvider>>();
  return *cache;  // guarded by cache_mu
}

}  // namespace

std::shared_ptr<AwsCredentialProvider> StaticAwsCredentialProvider(AwsCredentials credentials,
                                                                   std::string description) {
  return std::make_shared<StaticProvider>(std::move(credentials), std::move(description));
}

std::string ResolveAwsRegion(std::string_view profile) {
  std::string region = Getenv("AWS_REGION");
  if (region.empty()) region = Getenv("AWS_DEFAULT_REGION");
  if (!region.empty()) return region;
  // A malformed file is reported by the credential chain, which reads it too.
  Result<Profile> p = LoadProfile(ProfileName(std::string(profile)));
  return p.ok() ? Setting(p->config, "region") : std::string();
}

Result<std::shared_ptr<AwsCredentialProvider>> ResolveAwsCredentialChain(
    const AwsCredentialChainOptions& options) {
  ChainContext chain{options,
                     options.region.empty() ? ResolveAwsRegion(options.profile) : options.region,
                     {}};
  const std::string key = ConfigurationKey(options, chain.region);
  {
    std::lock_guard lock(cache_mu);
    auto it = ProviderCache().find(key);
    if (it != ProviderCache().end()) return it->second;
  }
  for (Source source : kChain) {
    STRATA_ASSIGN_OR_RETURN(MaybeProvider provider, source(chain));
    if (!provider) continue;
    std::lock_guard lock(cache_mu);
    // Another thread may have resolved the same configuration meanwhile: keep one.
    return ProviderCache().emplace(key, *std::move(provider)).first->second;
  }
  std::string list;
  for (const std::string& place : chain.looked) list += (list.empty() ? "" : "; ") + place;
  return PermissionDeniedError(fmt::format(
      "no AWS credentials found (looked at: {}); for a public bucket add ?anon=true to the "
      "s3:// URL",
      list));
}

}  // namespace strata
