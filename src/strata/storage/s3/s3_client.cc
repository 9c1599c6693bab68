#include "strata/storage/s3/s3_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "strata/storage/s3/s3_credentials_internal.h"

namespace strata::internal_storage {
namespace {

constexpr size_t kMaxErrorBody = 64 << 10;

struct Transfer {
  BodySink* sink = nullptr;  // null: the body of a 2xx response is dropped
  long status = 0;
  std::optional<int64_t> content_length;
  std::optional<int64_t> range_total;  // the "/total" of a Content-Range
  std::string etag;
  std::string bucket_region;
  std::string error_body;
  Status sink_status;  // the first failure of the sink; aborts the transfer
  std::span<const std::byte> upload;
  int64_t upload_offset = 0;
  // The request's budget of time without progress (Options::timeout_seconds):
  // spent by earlier attempts and backoff, the total, and when this attempt
  // last moved a byte. The progress callback aborts the attempt once spent.
  double idle_before = 0;
  double idle_budget = 0;
  std::chrono::steady_clock::time_point last_progress;
  curl_off_t last_moved = 0;
  bool budget_spent = false;
};

int OnProgress(void* user, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t ulnow) {
  auto* t = static_cast<Transfer*>(user);
  const auto now = std::chrono::steady_clock::now();
  if (dlnow + ulnow != t->last_moved) {
    t->last_moved = dlnow + ulnow;
    t->last_progress = now;
    return 0;
  }
  const double idle =
      t->idle_before + std::chrono::duration<double>(now - t->last_progress).count();
  if (idle >= t->idle_budget) {
    t->budget_spent = true;
    return 1;  // CURLE_ABORTED_BY_CALLBACK
  }
  return 0;
}

// "2.5", "30": seconds for messages.
std::string FormatSeconds(double s) { return fmt::format("{:g}", std::round(s * 10) / 10); }

bool HeaderIs(std::string_view line, std::string_view name, std::string_view* value) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  }
  std::string_view v = line.substr(name.size() + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) {
    v.remove_suffix(1);
  }
  *value = v;
  return true;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  std::string_view line(data, n);
  std::string_view value;
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response (after a 100 Continue, say): forget the previous one's.
    t->status = 0;
    size_t space = line.find(' ');
    if (space != std::string_view::npos) {
      std::from_chars(line.data() + space + 1, line.data() + line.size(), t->status);
    }
    t->content_length.reset();
    t->range_total.reset();
    t->etag.clear();
    t->bucket_region.clear();
  } else if (line == "\r\n" || line == "\n") {
    if (IsHttpOk(t->status) && t->sink != nullptr) {
      t->sink_status = t->sink->Start(t->content_length);
      if (!t->sink_status.ok()) return 0;  // aborts the transfer
    }
  } else if (HeaderIs(line, "content-length", &value)) {
    int64_t length = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
    if (ec == std::errc() && length >= 0) t->content_length = length;
  } else if (HeaderIs(line, "content-range", &value)) {
    // "bytes 900-967/968"
    size_t slash = value.rfind('/');
    int64_t total = 0;
    if (slash != std::string_view::npos) {
      auto [end, ec] = std::from_chars(value.data() + slash + 1, value.data() + value.size(), total);
      if (ec == std::errc() && total >= 0) t->range_total = total;
    }
  } else if (HeaderIs(line, "etag", &value)) {
    t->etag = std::string(value);
  } else if (HeaderIs(line, "x-amz-bucket-region", &value)) {
    t->bucket_region = std::string(value);
  }
  return n;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (!IsHttpOk(t->status)) {
    if (t->error_body.size() < kMaxErrorBody) t->error_body.append(data, n);
    return n;
  }
  if (t->sink == nullptr) return n;
  t->sink_status = t->sink->Write(data, n);
  return t->sink_status.ok() ? n : 0;
}

size_t OnUploadRead(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const int64_t left = static_cast<int64_t>(t->upload.size()) - t->upload_offset;
  const size_t n = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(size * count)));
  if (n > 0) std::memcpy(buffer, t->upload.data() + t->upload_offset, n);
  t->upload_offset += static_cast<int64_t>(n);
  return n;
}

int OnUploadSeek(void* user, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(user);
  if (origin != SEEK_SET || offset < 0 || offset > static_cast<curl_off_t>(t->upload.size())) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  t->upload_offset = offset;
  return CURL_SEEKFUNC_OK;
}

// Connection-level failures worth a retry.
bool IsTransientCurlError(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

struct CurlHeaders {
  curl_slist* list = nullptr;
  ~CurlHeaders() { curl_slist_free_all(list); }
  void Add(const std::string& header) { list = curl_slist_append(list, header.c_str()); }
};

// `credentials` (empty: unsigned) must outlive the transfer.
void Configure(CURL* h, const S3Client::Request& request, const std::string& url,
               const AwsCredentials& credentials, Transfer& t, CurlHeaders& headers,
               char* error_text, const S3Store::Options& options, const std::string& sigv4,
               bool loopback) {
  curl_easy_reset(h);  // keeps the connection cache
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  // A server on this host is never reached through a proxy (http_proxy and
  // the like apply to everything else, as in every AWS SDK).
  if (loopback) curl_easy_setopt(h, CURLOPT_PROXY, "");
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(
      h, CURLOPT_CONNECTTIMEOUT_MS,
      static_cast<long>(std::max(1.0, 1000 * std::min(options.connect_timeout_seconds,
                                                      t.idle_budget - t.idle_before))));
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
                   std::max(1L, static_cast<long>(options.stall_timeout_seconds)));
  curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 256L << 10);
  curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 1L << 20);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  if (!credentials.access_key_id.empty()) {
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(h, CURLOPT_USERNAME, credentials.access_key_id.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, credentials.secret_access_key.c_str());
  }
  // libcurl signs this header's value as the payload hash. (No "Expect:" to
  // turn off 100-continue: libcurl 7.88 would sign the header it removes.)
  headers.Add("x-amz-content-sha256: UNSIGNED-PAYLOAD");
  if (!credentials.session_token.empty()) {
    headers.Add("x-amz-security-token: " + credentials.session_token);
  }
  if (request.range) {
    headers.Add(fmt::format("Range: bytes={}-{}", request.range->first, request.range->second));
  } else if (request.suffix) {
    headers.Add(fmt::format("Range: bytes=-{}", *request.suffix));
  }
  std::string_view method = request.method;
  if (method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (method == "PUT") {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, OnUploadRead);
    curl_easy_setopt(h, CURLOPT_READDATA, &t);
    curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, OnUploadSeek);
    curl_easy_setopt(h, CURLOPT_SEEKDATA, &t);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else if (method == "POST") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
    headers.Add("Content-Type: application/xml");
  } else if (method == "DELETE") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.list);
}

}  // namespace

S3Client::S3Client(const S3Store::Options& options)
    : options_(options),
      handles_(options.max_concurrency),
      sigv4_(fmt::format("aws:amz:{}:s3", options.region)),
      loopback_(IsLoopbackUrl(options.endpoint)) {}

Result<S3Client::Response> S3Client::Execute(const Request& request, BodySink* sink) {
  std::string url = fmt::format("{}/{}", options_.endpoint, options_.bucket);
  if (!request.object.empty()) {
    url += '/';
    url += UriEncode(request.object, /*keep_slash=*/true);
  }
  if (!request.query.empty()) {
    url += '?';
    url += request.query;
  }
  const int max_attempts = 1 + std::max(0, options_.max_retries);
  CurlHandleLease lease(handles_);
  CURL* h = lease.get();
  double idle = 0;  // seconds of this request's timeout budget spent
  auto out_of_time = [&](int attempts) {
    return UnknownError(fmt::format(
        "{}: {} {} timed out: no progress for {} s over {} attempt{} (timeout={}; raise it "
        "with ?timeout=SECONDS on the s3:// URL)",
        request.what, request.method, options_.endpoint, FormatSeconds(idle), attempts,
        attempts == 1 ? "" : "s", FormatSeconds(options_.timeout_seconds)));
  };
  for (int attempt = 1;; ++attempt) {
    // Asked for at every attempt: a long retry may outlive the credentials.
    AwsCredentials credentials;
    if (options_.credentials != nullptr) {
      Result<AwsCredentials> current = options_.credentials->Get();
      if (!current.ok()) {
        return current.status().WithContext(fmt::format("{}: credentials", request.what));
      }
      credentials = *std::move(current);
    }
    Transfer t;
    t.sink = sink;
    t.upload = request.body;
    t.idle_before = idle;
    t.idle_budget = options_.timeout_seconds;
    t.last_progress = std::chrono::steady_clock::now();
    char error_text[CURL_ERROR_SIZE] = {0};
    CurlHeaders headers;
    Configure(h, request, url, credentials, t, headers, error_text, options_, sigv4_, loopback_);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_reset(h);  // no pointers to this attempt's state stay in the handle
    requests_.fetch_add(1, std::memory_order_relaxed);
    idle +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t.last_progress).count();
    if (!t.sink_status.ok()) return t.sink_status;  // not transient: a full pool, a bad size
    if (rc != CURLE_OK && (t.budget_spent || idle >= options_.timeout_seconds)) {
      return out_of_time(attempt);
    }
    if (rc == CURLE_OK) {
      Response response;
      response.status = t.status;
      response.content_length = t.content_length;
      response.range_total = t.range_total;
      response.etag = std::move(t.etag);
      response.bucket_region = std::move(t.bucket_region);
      response.attempts = attempt;
      if (IsHttpOk(t.status)) {
        if (sink != nullptr) STRATA_RETURN_IF_ERROR(sink->Finish());
        return response;
      }
      response.error = ParseErrorBody(t.error_body);
      if (IsRetryableResponse(t.status, response.error.code) &&
          attempt < max_attempts && idle < options_.timeout_seconds) {
        idle += Backoff(attempt, options_.timeout_seconds - idle);
        continue;
      }
      return response;
    }
    if (IsTransientCurlError(rc) && attempt < max_attempts) {
      idle += Backoff(attempt, options_.timeout_seconds - idle);
      if (idle >= options_.timeout_seconds) return out_of_time(attempt);
      continue;
    }
    // libcurl's error buffer says more than its code's text, when it says anything.
    std::string detail = error_text[0] != '\0' ? error_text : curl_easy_strerror(rc);
    std::string message =
        fmt::format("{}: {} {} failed after {} attempt{}: {}", request.what, request.method,
                    options_.endpoint, attempt, attempt == 1 ? "" : "s", detail);
    if (IsTransientCurlError(rc)) return UnavailableError(std::move(message));
    return UnknownError(std::move(message));
  }
}

Status S3Client::HttpError(const Request& request, const Response& response) const {
  std::string message = fmt::format("{}: {} {} returned {}", request.what, request.method,
                                    options_.endpoint, response.status);
  if (!response.error.code.empty()) message += " " + response.error.code;
  if (!response.error.message.empty()) message += " (" + response.error.message + ")";
  if (response.attempts > 1) message += fmt::format(" after {} attempts", response.attempts);
  if (response.status == 301 && !response.bucket_region.empty()) {
    message += fmt::format(": bucket '{}' is in region {}, not {} (set AWS_REGION or ?region=)",
                           options_.bucket, response.bucket_region, options_.region);
  }
  if (IsRetryableResponse(response.status, response.error.code)) {
    return UnavailableError(std::move(message));
  }
  switch (response.status) {
    case 400:
      return InvalidArgumentError(std::move(message));
    case 401:
    case 403:
      return PermissionDeniedError(std::move(message));
    case 404:
      return NotFoundError(std::move(message));
    case 409:
      return AbortedError(std::move(message));
    case 412:
      return FailedPreconditionError(std::move(message));
    case 416:
      return OutOfRangeError(std::move(message));
    default:
      return UnknownError(std::move(message));
  }
}

double S3Client::Backoff(int attempt, double left) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  double cap = std::min(options_.max_backoff_seconds,
                        options_.initial_backoff_seconds * std::ldexp(1.0, attempt - 1));
  std::uniform_real_distribution<double> jitter(0.0, std::max(0.0, cap));
  const double seconds = std::clamp(jitter(rng), 0.0, std::max(0.0, left));
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return seconds;
}

}  // namespace strata::internal_storage
