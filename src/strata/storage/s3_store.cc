#include "strata/storage/s3_store.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "strata/base/byte_size.h"
#include "strata/storage/s3_credentials_internal.h"
#include "strata/storage/s3_store_internal.h"

namespace strata {

// ---------------------------------------------------------------------------
// The protocol pieces (s3_store_internal.h).

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

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
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

// ---------------------------------------------------------------------------
// HTTP with libcurl.

namespace {

using internal_storage::S3ErrorBody;

constexpr size_t kMaxErrorBody = 64 << 10;

void GlobalInitCurl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string Getenv(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool IsHttpOk(long status) { return status >= 200 && status < 300; }

// Where the body of a 2xx response goes. Start is called again for every
// attempt of a retried request, so a sink begins afresh there.
class BodySink {
 public:
  virtual ~BodySink() = default;
  // The headers of a 2xx response are in; `length` is its Content-Length.
  virtual Status Start(std::optional<int64_t> length) = 0;
  virtual Status Write(const char* data, size_t n) = 0;
  // The whole body has arrived.
  virtual Status Finish() = 0;
};

class StringSink : public BodySink {
 public:
  Status Start(std::optional<int64_t>) override {
    text_.clear();
    return Status::Ok();
  }
  Status Write(const char* data, size_t n) override {
    text_.append(data, n);
    return Status::Ok();
  }
  Status Finish() override { return Status::Ok(); }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// Receives straight into a buffer from `pool`, sized by Content-Length (S3
// always sends one for objects), so a GET costs no copy.
class BufferSink : public BodySink {
 public:
  BufferSink(MemoryPool& pool, std::string what) : pool_(pool), what_(std::move(what)) {}
  Status Start(std::optional<int64_t> length) override {
    received_ = 0;
    spill_.clear();
    buffer_.Reset();
    length_ = length;
    if (length) {
      STRATA_ASSIGN_OR_RETURN(buffer_, pool_.Allocate(*length));
    }
    return Status::Ok();
  }
  Status Write(const char* data, size_t n) override {
    if (!length_) {
      spill_.append(data, n);
      return Status::Ok();
    }
    if (received_ + static_cast<int64_t>(n) > *length_) {
      return DataLossError(
          fmt::format("{}: the server sent more than its Content-Length of {}", what_, *length_));
    }
    std::memcpy(buffer_.data() + received_, data, n);
    received_ += static_cast<int64_t>(n);
    return Status::Ok();
  }
  Status Finish() override {
    if (!length_) {
      STRATA_ASSIGN_OR_RETURN(buffer_, pool_.Allocate(static_cast<int64_t>(spill_.size())));
      if (!spill_.empty()) std::memcpy(buffer_.data(), spill_.data(), spill_.size());
      spill_.clear();
      return Status::Ok();
    }
    if (received_ != *length_) {
      return DataLossError(fmt::format("{}: received {} of {} bytes", what_, received_, *length_));
    }
    return Status::Ok();
  }
  Buffer Take() { return std::move(buffer_); }

 private:
  MemoryPool& pool_;
  std::string what_;
  std::optional<int64_t> length_;
  int64_t received_ = 0;
  Buffer buffer_;
  std::string spill_;
};

// Receives into a caller's span of exactly the object's size.
class SpanSink : public BodySink {
 public:
  SpanSink(std::span<std::byte> out, std::string what) : out_(out), what_(std::move(what)) {}
  Status Start(std::optional<int64_t> length) override {
    received_ = 0;
    if (length && *length != static_cast<int64_t>(out_.size())) return SizeMismatch(*length);
    return Status::Ok();
  }
  Status Write(const char* data, size_t n) override {
    if (received_ + static_cast<int64_t>(n) > static_cast<int64_t>(out_.size())) {
      return SizeMismatch(received_ + static_cast<int64_t>(n));
    }
    std::memcpy(out_.data() + received_, data, n);
    received_ += static_cast<int64_t>(n);
    return Status::Ok();
  }
  Status Finish() override {
    if (received_ != static_cast<int64_t>(out_.size())) return SizeMismatch(received_);
    return Status::Ok();
  }

 private:
  Status SizeMismatch(int64_t size) const {
    return DataLossError(fmt::format("{} holds {} bytes, expected {}", what_, size, out_.size()));
  }
  std::span<std::byte> out_;
  std::string what_;
  int64_t received_ = 0;
};

// The state of one attempt, shared with libcurl's callbacks.
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

// Owns every curl handle of a store and bounds how many are in use: a request
// holds one for its whole duration (retries included), so at most `max`
// requests are in flight. Handles keep their connections between requests.
class HandlePool {
 public:
  explicit HandlePool(int max) : max_(max) {}
  ~HandlePool() {
    for (CURL* h : idle_) curl_easy_cleanup(h);
  }
  HandlePool(const HandlePool&) = delete;
  HandlePool& operator=(const HandlePool&) = delete;

  CURL* Acquire() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return in_use_ < max_; });
    ++in_use_;
    if (!idle_.empty()) {
      CURL* h = idle_.back();
      idle_.pop_back();
      return h;
    }
    lock.unlock();
    CURL* h = curl_easy_init();
    STRATA_CHECK(h != nullptr) << "curl_easy_init failed";
    return h;
  }

  void Release(CURL* h) {
    {
      std::lock_guard lock(mu_);
      --in_use_;
      idle_.push_back(h);
    }
    cv_.notify_one();
  }

 private:
  const int max_;
  std::mutex mu_;
  std::condition_variable cv_;
  int in_use_ = 0;
  std::vector<CURL*> idle_;
};

class HandleLease {
 public:
  explicit HandleLease(HandlePool& pool) : pool_(pool), handle_(pool.Acquire()) {}
  ~HandleLease() { pool_.Release(handle_); }
  HandleLease(const HandleLease&) = delete;
  HandleLease& operator=(const HandleLease&) = delete;
  CURL* get() const { return handle_; }

 private:
  HandlePool& pool_;
  CURL* handle_;
};

struct CurlHeaders {
  curl_slist* list = nullptr;
  ~CurlHeaders() { curl_slist_free_all(list); }
  void Add(const std::string& header) { list = curl_slist_append(list, header.c_str()); }
};

}  // namespace

// One request to the object store and the response that ended it.
class S3Store::Client {
 public:
  struct Request {
    const char* method = "GET";  // GET, HEAD, PUT, POST, DELETE
    std::string object;          // the object's key in the bucket; empty: the bucket
    std::string query;           // internal_storage::CanonicalQuery
    std::span<const std::byte> body;
    std::optional<std::pair<int64_t, int64_t>> range;  // first and last byte
    std::optional<int64_t> suffix;                       // the last N bytes
    std::string what;                                  // "s3://bucket/prefix/key", for messages
  };
  struct Response {
    long status = 0;
    S3ErrorBody error;
    std::optional<int64_t> content_length;
    std::optional<int64_t> range_total;
    std::string etag;
    std::string bucket_region;
    int attempts = 0;
  };

  explicit Client(const Options& options)
      : options_(options),
        handles_(options.max_concurrency),
        sigv4_(fmt::format("aws:amz:{}:s3", options.region)),
        loopback_(internal_storage::IsLoopbackUrl(options.endpoint)) {}

  const std::string& endpoint() const { return options_.endpoint; }
  int64_t requests_sent() const { return requests_.load(std::memory_order_relaxed); }

  // Sends `request`, retrying transient failures. Returns the final response
  // whatever its HTTP status (the body of a 2xx one went to `sink`); an error
  // when no response came (Unavailable after the retries) or the sink failed.
  Result<Response> Execute(const Request& request, BodySink* sink) {
    std::string url = fmt::format("{}/{}", options_.endpoint, options_.bucket);
    if (!request.object.empty()) {
      url += '/';
      url += internal_storage::UriEncode(request.object, /*keep_slash=*/true);
    }
    if (!request.query.empty()) {
      url += '?';
      url += request.query;
    }
    const int max_attempts = 1 + std::max(0, options_.max_retries);
    HandleLease lease(handles_);
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
      Configure(h, request, url, credentials, t, headers, error_text);
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
        response.error = internal_storage::ParseErrorBody(t.error_body);
        if (internal_storage::IsRetryableResponse(t.status, response.error.code) &&
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

  // The error for a response that is not 2xx, in one line.
  Status HttpError(const Request& request, const Response& response) const {
    std::string message = fmt::format("{}: {} {} returned {}", request.what, request.method,
                                      options_.endpoint, response.status);
    if (!response.error.code.empty()) message += " " + response.error.code;
    if (!response.error.message.empty()) message += " (" + response.error.message + ")";
    if (response.attempts > 1) message += fmt::format(" after {} attempts", response.attempts);
    if (response.status == 301 && !response.bucket_region.empty()) {
      message += fmt::format(": bucket '{}' is in region {}, not {} (set AWS_REGION or ?region=)",
                             options_.bucket, response.bucket_region, options_.region);
    }
    if (internal_storage::IsRetryableResponse(response.status, response.error.code)) {
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

 private:
  // `credentials` (empty: unsigned) must outlive the transfer.
  void Configure(CURL* h, const Request& request, const std::string& url,
                 const AwsCredentials& credentials, Transfer& t, CurlHeaders& headers,
                 char* error_text) {
    curl_easy_reset(h);  // keeps the connection cache
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    // A server on this host is never reached through a proxy (http_proxy and
    // the like apply to everything else, as in every AWS SDK).
    if (loopback_) curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_text);
    curl_easy_setopt(
        h, CURLOPT_CONNECTTIMEOUT_MS,
        static_cast<long>(std::max(1.0, 1000 * std::min(options_.connect_timeout_seconds,
                                                        t.idle_budget - t.idle_before))));
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, OnProgress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(options_.stall_timeout_seconds)));
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 256L << 10);
    curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 1L << 20);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
    if (!credentials.access_key_id.empty()) {
      curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4_.c_str());
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

  // Sleeps before retry `attempt`, at most `left` seconds; returns the seconds slept.
  double Backoff(int attempt, double left) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    double cap = std::min(options_.max_backoff_seconds,
                          options_.initial_backoff_seconds * std::ldexp(1.0, attempt - 1));
    std::uniform_real_distribution<double> jitter(0.0, std::max(0.0, cap));
    const double seconds = std::clamp(jitter(rng), 0.0, std::max(0.0, left));
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return seconds;
  }

  const Options& options_;  // the store's, which outlives the client
  HandlePool handles_;
  const std::string sigv4_;
  const bool loopback_;
  std::atomic<int64_t> requests_{0};
};

// ---------------------------------------------------------------------------
// S3Store.

namespace {

Result<int64_t> ParseIntOption(std::string_view name, std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return InvalidArgumentError(fmt::format("s3 URL option {}={} is not an integer", name, text));
  }
  return v;
}

}  // namespace

S3Store::Options S3Store::OptionsFromEnvironment() {
  Options options;
  options.endpoint = Getenv("AWS_ENDPOINT_URL_S3");
  if (options.endpoint.empty()) options.endpoint = Getenv("AWS_ENDPOINT_URL");
  options.region = ResolveAwsRegion("");
  if (options.region.empty()) options.region = "us-east-1";
  return options;
}

Result<S3Store::Options> S3Store::ParseUrl(std::string_view url) {
  constexpr std::string_view kScheme = "s3://";
  if (url.rfind(kScheme, 0) != 0) {
    return InvalidArgumentError(fmt::format("'{}' is not an s3:// URL", url));
  }
  std::string_view rest = url.substr(kScheme.size());
  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  Options options = OptionsFromEnvironment();
  size_t slash = rest.find('/');
  options.bucket = std::string(rest.substr(0, slash));
  if (options.bucket.empty()) {
    return InvalidArgumentError(
        fmt::format("'{}' names no bucket (expected s3://bucket/prefix)", url));
  }
  if (slash != std::string_view::npos) options.prefix = std::string(rest.substr(slash + 1));
  bool region_given = false;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string_view name = item.substr(0, eq);
    STRATA_ASSIGN_OR_RETURN(
        std::string value,
        internal_storage::UriDecode(
            eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1),
            /*plus_is_space=*/true));
    if (name == "endpoint") {
      options.endpoint = value;
    } else if (name == "region") {
      options.region = value;
      region_given = true;
    } else if (name == "profile") {
      if (value.empty()) return InvalidArgumentError("s3 URL option profile= names no profile");
      options.profile = value;
    } else if (name == "anon") {
      if (value == "true" || value == "1" || value.empty()) {
        options.anonymous = true;
      } else if (value == "false" || value == "0") {
        options.anonymous = false;
      } else {
        return InvalidArgumentError(
            fmt::format("s3 URL option anon={} must be true or false", value));
      }
    } else if (name == "max_concurrency") {
      STRATA_ASSIGN_OR_RETURN(int64_t v, ParseIntOption(name, value));
      options.max_concurrency = static_cast<int>(std::clamp<int64_t>(v, -1, 1 << 20));
    } else if (name == "max_retries") {
      STRATA_ASSIGN_OR_RETURN(int64_t v, ParseIntOption(name, value));
      options.max_retries = static_cast<int>(std::clamp<int64_t>(v, -1, 1000));
    } else if (name == "timeout") {
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size() || !(v > 0) || v > 86400) {
        return InvalidArgumentError(fmt::format(
            "s3 URL option timeout={} must be a number of seconds in (0, 86400]", value));
      }
      options.timeout_seconds = v;
    } else if (name == "list_page_size") {
      STRATA_ASSIGN_OR_RETURN(int64_t v, ParseIntOption(name, value));
      options.list_page_size = static_cast<int>(std::clamp<int64_t>(v, -1, 1 << 20));
    } else if (name == "multipart_threshold" || name == "part_size") {
      Result<int64_t> bytes = ParseByteSize(value);
      if (!bytes.ok()) return bytes.status().WithContext(fmt::format("s3 URL option {}", name));
      (name == "part_size" ? options.part_size : options.multipart_threshold) = *bytes;
    } else {
      return InvalidArgumentError(fmt::format(
          "unknown s3 URL option '{}' in '{}' (known: endpoint, region, profile, anon, "
          "max_concurrency, max_retries, timeout, multipart_threshold, part_size, "
          "list_page_size; credentials come from the AWS credential chain: AWS_ACCESS_KEY_ID, "
          "~/.aws/credentials, web identity, container or instance metadata)",
          name, url));
    }
  }
  // A profile named in the URL brings its region, unless one was given.
  if (!options.profile.empty() && !region_given) {
    std::string region = ResolveAwsRegion(options.profile);
    if (!region.empty()) options.region = std::move(region);
  }
  return options;
}

Result<std::unique_ptr<S3Store>> S3Store::Open(Options options) {
  auto bad = [&](std::string why) {
    return InvalidArgumentError(fmt::format("s3://{}/{}: {}", options.bucket, options.prefix, why));
  };
  if (options.bucket.empty() || options.bucket.find_first_of("/?#% ") != std::string::npos) {
    return bad(fmt::format("invalid bucket name '{}'", options.bucket));
  }
  while (!options.prefix.empty() && options.prefix.back() == '/') options.prefix.pop_back();
  while (!options.prefix.empty() && options.prefix.front() == '/') options.prefix.erase(0, 1);
  if (!options.prefix.empty()) {
    Status s = ValidateKey(options.prefix);
    if (!s.ok()) return bad(std::string(s.message()));
  }
  if (options.region.empty()) options.region = "us-east-1";
  if (options.endpoint.empty()) {
    options.endpoint = fmt::format("https://s3.{}.amazonaws.com", options.region);
  }
  while (!options.endpoint.empty() && options.endpoint.back() == '/') options.endpoint.pop_back();
  if (options.endpoint.rfind("http://", 0) != 0 && options.endpoint.rfind("https://", 0) != 0) {
    return bad(fmt::format("endpoint '{}' must start with http:// or https://", options.endpoint));
  }
  if (options.access_key_id.empty() != options.secret_access_key.empty()) {
    return bad("access_key_id and secret_access_key must be given together");
  }
  if (options.max_concurrency < 1) return bad("max_concurrency must be at least 1");
  if (options.max_retries < 0) return bad("max_retries must not be negative");
  if (options.part_size < (int64_t{5} << 20)) return bad("part_size must be at least 5 MiB");
  if (options.multipart_threshold < 1) return bad("multipart_threshold must be positive");
  if (options.list_page_size < 1 || options.list_page_size > 1000) {
    return bad("list_page_size must be 1..1000");
  }
  GlobalInitCurl();
  if (options.anonymous) {
    options.credentials = nullptr;
  } else if (options.credentials == nullptr) {
    if (!options.access_key_id.empty()) {
      AwsCredentials keys;
      keys.access_key_id = options.access_key_id;
      keys.secret_access_key = options.secret_access_key;
      keys.session_token = options.session_token;
      options.credentials = StaticAwsCredentialProvider(std::move(keys), "options");
    } else {
      AwsCredentialChainOptions chain;
      chain.profile = options.profile;
      chain.region = options.region;
      chain.sts_timeout_seconds = options.timeout_seconds;
      Result<std::shared_ptr<AwsCredentialProvider>> resolved = ResolveAwsCredentialChain(chain);
      if (!resolved.ok()) {
        return resolved.status().WithContext(
            options.prefix.empty() ? fmt::format("s3://{}", options.bucket)
                                   : fmt::format("s3://{}/{}", options.bucket, options.prefix));
      }
      options.credentials = *std::move(resolved);
    }
  }
  std::unique_ptr<S3Store> store(new S3Store(std::move(options)));

  // The bucket must exist: one small listing (HEAD would carry no error code
  // to report, e.g. SignatureDoesNotMatch).
  Client::Request request;
  request.what = store->url();
  request.query = internal_storage::CanonicalQuery(
      {{"list-type", "2"}, {"max-keys", "1"}, {"prefix", store->RootSlash()}});
  StringSink sink;
  STRATA_ASSIGN_OR_RETURN(Client::Response response, store->client_->Execute(request, &sink));
  if (response.status == 404 && response.error.code != "NoSuchKey") {
    return NotFoundError(fmt::format("bucket '{}' does not exist at {}", store->options_.bucket,
                                     store->options_.endpoint));
  }
  if (!IsHttpOk(response.status)) return store->client_->HttpError(request, response);
  return store;
}

S3Store::S3Store(Options options)
    : options_(std::move(options)), client_(std::make_unique<Client>(options_)) {}

S3Store::~S3Store() = default;

std::string S3Store::url() const {
  return options_.prefix.empty() ? fmt::format("s3://{}", options_.bucket)
                                 : fmt::format("s3://{}/{}", options_.bucket, options_.prefix);
}

int64_t S3Store::requests_sent() const { return client_->requests_sent(); }

std::string S3Store::credential_source() const {
  return options_.credentials == nullptr ? "anonymous" : options_.credentials->description();
}

std::string S3Store::RootSlash() const {
  return options_.prefix.empty() ? std::string() : options_.prefix + "/";
}

std::string S3Store::ObjectKey(std::string_view key) const {
  return options_.prefix.empty() ? std::string(key) : JoinKey(options_.prefix, key);
}

std::string S3Store::What(std::string_view key) const { return JoinKey(url(), key); }

namespace {

// A 404 on an object: the key is absent unless the bucket itself is gone,
// which must not read as "absent" (a copy would fill the chunk with the fill
// value), so that is FailedPrecondition.
Status BucketGone(const S3Store::Options& options) {
  return FailedPreconditionError(
      fmt::format("bucket '{}' does not exist at {}", options.bucket, options.endpoint));
}

}  // namespace

Result<Buffer> S3Store::Get(std::string_view key, MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  Client::Request request;
  request.object = ObjectKey(key);
  request.what = What(key);
  BufferSink sink(pool, request.what);
  STRATA_ASSIGN_OR_RETURN(Client::Response response, client_->Execute(request, &sink));
  if (IsHttpOk(response.status)) return sink.Take();
  if (response.status == 404) {
    if (response.error.code == "NoSuchBucket") return BucketGone(options_);
    return NotFoundError(fmt::format("{} not found", request.what));
  }
  return client_->HttpError(request, response);
}

Result<Buffer> S3Store::GetRange(std::string_view key, int64_t offset, int64_t length,
                                 MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(Suffix range, GetRangeAndSize(key, offset, length, pool));
  return std::move(range.bytes);
}

Result<Store::Suffix> S3Store::GetRangeAndSize(std::string_view key, int64_t offset,
                                               int64_t length, MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  const std::string what = What(key);
  if (offset < 0 || length < 0) {
    return InvalidArgumentError(
        fmt::format("invalid byte range {}+{} of {}", offset, length, what));
  }
  // An empty range cannot be asked for in HTTP; a range starting at the end
  // is refused with 416. Both are answered from the size.
  auto from_size = [&]() -> Result<Suffix> {
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> size, Size(key));
    if (!size) return NotFoundError(fmt::format("{} not found", what));
    if (offset > *size) {
      return OutOfRangeError(fmt::format("byte range starts at {} past the end of {} ({} bytes)",
                                         offset, what, *size));
    }
    STRATA_ASSIGN_OR_RETURN(Buffer none, pool.Allocate(0));
    return Suffix{std::move(none), *size};
  };
  if (length == 0) return from_size();
  Client::Request request;
  request.object = ObjectKey(key);
  request.what = what;
  request.range = {offset, offset + std::min(length, INT64_MAX - offset) - 1};
  BufferSink sink(pool, request.what);
  STRATA_ASSIGN_OR_RETURN(Client::Response response, client_->Execute(request, &sink));
  if (response.status == 206) {
    Buffer part = sink.Take();
    if (response.range_total) return Suffix{std::move(part), *response.range_total};
    // No total in the answer: asked for.
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> size, Size(key));
    if (!size) return NotFoundError(fmt::format("{} not found", what));
    return Suffix{std::move(part), *size};
  }
  if (response.status == 200) {
    // The server ignored the range and sent the whole object: cut it out.
    Buffer whole = sink.Take();
    if (offset > whole.size()) {
      return OutOfRangeError(fmt::format("byte range starts at {} past the end of {} ({} bytes)",
                                         offset, what, whole.size()));
    }
    int64_t n = std::min(length, whole.size() - offset);
    STRATA_ASSIGN_OR_RETURN(Buffer part, pool.Allocate(n));
    if (n > 0) std::memcpy(part.data(), whole.data() + offset, static_cast<size_t>(n));
    return Suffix{std::move(part), whole.size()};
  }
  if (response.status == 416) return from_size();
  if (response.status == 404) {
    if (response.error.code == "NoSuchBucket") return BucketGone(options_);
    return NotFoundError(fmt::format("{} not found", what));
  }
  return client_->HttpError(request, response);
}

Result<Store::Suffix> S3Store::GetSuffix(std::string_view key, int64_t length, MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  const std::string what = What(key);
  if (length < 0) return InvalidArgumentError(fmt::format("invalid suffix length {}", length));
  if (length == 0) return Store::GetSuffix(key, length, pool);
  Client::Request request;
  request.object = ObjectKey(key);
  request.what = what;
  request.suffix = length;
  BufferSink sink(pool, request.what);
  STRATA_ASSIGN_OR_RETURN(Client::Response response, client_->Execute(request, &sink));
  if (response.status == 206 && response.range_total) {
    // Some servers (s3rver) answer "bytes=-N" with bytes 0..N: a body that is
    // not the suffix's length is not the suffix.
    Buffer body = sink.Take();
    if (body.size() == std::min(length, *response.range_total)) {
      return Suffix{std::move(body), *response.range_total};
    }
    return Store::GetSuffix(key, length, pool);
  }
  if (response.status == 200) {
    // The whole object (shorter than the suffix, or the server ignores
    // suffix ranges): cut the end out.
    Buffer whole = sink.Take();
    const int64_t n = std::min(length, whole.size());
    STRATA_ASSIGN_OR_RETURN(Buffer part, pool.Allocate(n));
    if (n > 0) std::memcpy(part.data(), whole.data() + whole.size() - n, static_cast<size_t>(n));
    return Suffix{std::move(part), whole.size()};
  }
  if (response.status == 206 || response.status == 416) {
    // No total in the answer, or a server that refuses suffix ranges.
    return Store::GetSuffix(key, length, pool);
  }
  if (response.status == 404) {
    if (response.error.code == "NoSuchBucket") return BucketGone(options_);
    return NotFoundError(fmt::format("{} not found", what));
  }
  return client_->HttpError(request, response);
}

Status S3Store::GetInto(std::string_view key, std::span<std::byte> out) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  Client::Request request;
  request.object = ObjectKey(key);
  request.what = What(key);
  SpanSink sink(out, request.what);
  STRATA_ASSIGN_OR_RETURN(Client::Response response, client_->Execute(request, &sink));
  if (IsHttpOk(response.status)) return Status::Ok();
  if (response.status == 404) {
    if (response.error.code == "NoSuchBucket") return BucketGone(options_);
    return NotFoundError(fmt::format("{} not found", request.what));
  }
  return client_->HttpError(request, response);
}

Result<std::optional<int64_t>> S3Store::Size(std::string_view key) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  Client::Request request;
  request.method = "HEAD";
  request.object = ObjectKey(key);
  request.what = What(key);
  STRATA_ASSIGN_OR_RETURN(Client::Response response, client_->Execute(request, nullptr));
  if (response.status == 404) return std::optional<int64_t>();
  if (!IsHttpOk(response.status)) return client_->HttpError(request, response);
  if (!response.content_length) {
    return UnknownError(
        fmt::format("{}: HEAD {} returned no Content-Length", request.what, options_.endpoint));
  }
  return std::optional<int64_t>(*response.content_length);
}

Status S3Store::Set(std::string_view key, std::span<const std::byte> value) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  if (static_cast<int64_t>(value.size()) > options_.multipart_threshold) {
    return MultipartUpload(key, value);
  }
  Client::Request request;
  request.method = "PUT";
  request.object = ObjectKey(key);
  request.what = What(key);
  request.body = value;
  STRATA_ASSIGN_OR_RETURN(Client::Response response, client_->Execute(request, nullptr));
  if (IsHttpOk(response.status)) return Status::Ok();
  if (response.status == 404 && response.error.code == "NoSuchBucket") return BucketGone(options_);
  return client_->HttpError(request, response);
}

Status S3Store::MultipartUpload(std::string_view key, std::span<const std::byte> value) {
  const std::string object = ObjectKey(key);
  const std::string what = What(key);
  Client::Request request;
  request.object = object;
  request.what = what;

  // Initiate.
  request.method = "POST";
  request.query = internal_storage::CanonicalQuery({{"uploads", ""}});
  StringSink initiated;
  STRATA_ASSIGN_OR_RETURN(Client::Response response, client_->Execute(request, &initiated));
  if (!IsHttpOk(response.status)) {
    if (response.status == 404 && response.error.code == "NoSuchBucket") {
      return BucketGone(options_);
    }
    return client_->HttpError(request, response).WithContext("starting a multipart upload");
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> upload_id,
                          internal_storage::XmlFirst(initiated.text(), "UploadId"));
  if (!upload_id || upload_id->empty()) {
    return UnknownError(fmt::format("{}: POST {} started a multipart upload but sent no UploadId",
                                    what, options_.endpoint));
  }

  auto upload = [&]() -> Status {
    const int64_t size = static_cast<int64_t>(value.size());
    const int64_t part_size = internal_storage::MultipartPartSize(size, options_.part_size);
    std::vector<std::string> etags;
    for (int64_t offset = 0, number = 1; offset < size; offset += part_size, ++number) {
      Client::Request part;
      part.method = "PUT";
      part.object = object;
      part.what = fmt::format("{} (part {})", what, number);
      part.query = internal_storage::CanonicalQuery(
          {{"partNumber", std::to_string(number)}, {"uploadId", *upload_id}});
      part.body = value.subspan(static_cast<size_t>(offset),
                                static_cast<size_t>(std::min(part_size, size - offset)));
      STRATA_ASSIGN_OR_RETURN(Client::Response r, client_->Execute(part, nullptr));
      if (!IsHttpOk(r.status)) return client_->HttpError(part, r);
      if (r.etag.empty()) {
        return UnknownError(
            fmt::format("{}: PUT {} returned no ETag", part.what, options_.endpoint));
      }
      etags.push_back(std::move(r.etag));
    }
    // Complete. S3 may answer 200 and put an error in the body; a transient
    // one is retried like any other.
    const std::string body = internal_storage::CompleteMultipartUploadBody(etags);
    Client::Request complete;
    complete.method = "POST";
    complete.object = object;
    complete.what = what;
    complete.query = internal_storage::CanonicalQuery({{"uploadId", *upload_id}});
    complete.body = std::as_bytes(std::span(body.data(), body.size()));
    for (int attempt = 1;; ++attempt) {
      StringSink result;
      STRATA_ASSIGN_OR_RETURN(Client::Response r, client_->Execute(complete, &result));
      if (!IsHttpOk(r.status)) return client_->HttpError(complete, r);
      if (result.text().find("<Error") == std::string::npos) return Status::Ok();
      r.error = internal_storage::ParseErrorBody(result.text());
      r.status = 200;
      if (!internal_storage::IsRetryableResponse(0, r.error.code) ||
          attempt > options_.max_retries) {
        return client_->HttpError(complete, r);
      }
    }
  };
  Status s = upload();
  if (!s.ok()) {
    // Abort so that the parts do not linger (and cost) in the bucket.
    Client::Request abort;
    abort.method = "DELETE";
    abort.object = object;
    abort.what = what;
    abort.query = internal_storage::CanonicalQuery({{"uploadId", *upload_id}});
    client_->Execute(abort, nullptr).status().IgnoreError();
    return s.WithContext("multipart upload");
  }
  return Status::Ok();
}

Status S3Store::Erase(std::string_view key) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  Client::Request request;
  request.method = "DELETE";
  request.object = ObjectKey(key);
  request.what = What(key);
  STRATA_ASSIGN_OR_RETURN(Client::Response response, client_->Execute(request, nullptr));
  if (IsHttpOk(response.status)) return Status::Ok();
  if (response.status == 404) {
    if (response.error.code == "NoSuchBucket") return BucketGone(options_);
    return Status::Ok();
  }
  return client_->HttpError(request, response);
}

Result<std::vector<std::string>> S3Store::List(std::string_view prefix) {
  const std::string root = RootSlash();
  const std::string full_prefix = root + std::string(prefix);
  std::vector<std::string> keys;
  std::string token;
  for (int page = 1;; ++page) {
    std::vector<std::pair<std::string, std::string>> params = {
        {"list-type", "2"}, {"max-keys", std::to_string(options_.list_page_size)}};
    if (!full_prefix.empty()) params.push_back({"prefix", full_prefix});
    if (!token.empty()) params.push_back({"continuation-token", token});
    Client::Request request;
    request.query = internal_storage::CanonicalQuery(std::move(params));
    request.what = What(prefix);
    StringSink sink;
    STRATA_ASSIGN_OR_RETURN(Client::Response response, client_->Execute(request, &sink));
    if (!IsHttpOk(response.status)) {
      if (response.status == 404 && response.error.code == "NoSuchBucket") {
        return BucketGone(options_);
      }
      return client_->HttpError(request, response).WithContext("listing");
    }
    Result<internal_storage::ListPage> parsed = internal_storage::ParseListObjectsV2(sink.text());
    if (!parsed.ok()) {
      return UnknownError(fmt::format("{}: GET {} (list page {}): {}", request.what,
                                      options_.endpoint, page, parsed.status().message()));
    }
    for (std::string& object : parsed->keys) {
      if (object.compare(0, full_prefix.size(), full_prefix) != 0) continue;
      std::string key = object.substr(root.size());
      if (ValidateKey(key).ok()) keys.push_back(std::move(key));
    }
    if (!parsed->truncated) break;
    if (parsed->next_continuation_token == token) {
      return UnknownError(fmt::format("{}: GET {} returned the same continuation token twice",
                                      request.what, options_.endpoint));
    }
    token = std::move(parsed->next_continuation_token);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

Status S3Store::ErasePrefix(std::string_view prefix) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys, List(prefix));
  const int threads = static_cast<int>(
      std::min<size_t>(keys.size(), static_cast<size_t>(options_.max_concurrency)));
  if (threads <= 1) {
    for (const std::string& key : keys) STRATA_RETURN_IF_ERROR(Erase(key));
    return Status::Ok();
  }
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first_error;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < keys.size();) {
        Status s = Erase(keys[i]);
        if (!s.ok()) {
          std::lock_guard lock(mu);
          if (first_error.ok()) first_error = s;
          next = keys.size();  // stop the others
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  return first_error;
}

}  // namespace strata
