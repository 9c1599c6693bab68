// Environment, files and HTTP for the credential sources (credential_sources.h).
#include "strata/storage/s3/credential_sources.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "strata/storage/s3/curl_handle_pool.h"

namespace strata::internal_storage {

bool EnvIsTrue(const char* name) { return Lower(Trim(Getenv(name))) == "true"; }

namespace {

std::string HomeDir() {
  std::string home = Getenv("HOME");
  if (!home.empty()) return home;
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) {
    return pw->pw_dir;
  }
  return std::string();
}

}  // namespace

// "~/x" -> "$HOME/x", as the SDKs expand the file variables.
std::string ExpandUser(std::string path) {
  if (path == "~" || path.rfind("~/", 0) == 0) return HomeDir() + path.substr(1);
  return path;
}

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

namespace {

constexpr size_t kMaxReplyBody = 1 << 20;

size_t OnReplyBody(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  const size_t n = size * count;
  if (body->size() + n > kMaxReplyBody) return 0;  // aborts: no credential document is this big
  body->append(data, n);
  return n;
}

bool IsLinkLocal(std::string_view url) {
  std::string_view host = UrlHost(url);
  return host.rfind("169.254.", 0) == 0 || Lower(host).rfind("[fd00:ec2::", 0) == 0;
}

}  // namespace

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
  if (IsLoopbackUrl(call.url) || IsLinkLocal(call.url)) curl_easy_setopt(h, CURLOPT_PROXY, "");
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

std::string BodyHead(std::string_view body) {
  std::string head(Trim(body.substr(0, std::min<size_t>(body.size(), 200))));
  std::replace(head.begin(), head.end(), '\n', ' ');
  std::replace(head.begin(), head.end(), '\r', ' ');
  return head;
}

}  // namespace strata::internal_storage
