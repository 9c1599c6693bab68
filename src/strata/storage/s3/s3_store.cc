// S3Store (s3_store.h): options and URLs, Open, and each Store method as
// requests through S3Client.
#include "strata/storage/s3/s3_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "strata/base/byte_size.h"
#include "strata/base/thread_annotations.h"
#include "strata/storage/s3/s3_client.h"
#include "strata/storage/s3/s3_credentials_internal.h"
#include "strata/storage/s3/s3_protocol.h"

namespace strata {

using internal_storage::BufferSink;
using internal_storage::Getenv;
using internal_storage::GlobalInitCurl;
using internal_storage::IsHttpOk;
using internal_storage::S3Client;
using internal_storage::SpanSink;
using internal_storage::StringSink;

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
  S3Client::Request request;
  request.what = store->url();
  request.query = internal_storage::CanonicalQuery(
      {{"list-type", "2"}, {"max-keys", "1"}, {"prefix", store->RootSlash()}});
  StringSink sink;
  STRATA_ASSIGN_OR_RETURN(S3Client::Response response, store->client_->Execute(request, &sink));
  if (response.status == 404 && response.error.code != "NoSuchKey") {
    // Open's own mapping: a missing bucket is NotFound here, not a store gone.
    return NotFoundError(fmt::format("bucket '{}' does not exist at {}", store->options_.bucket,
                                     store->options_.endpoint));
  }
  if (!IsHttpOk(response.status)) return store->client_->HttpError(request, response);
  return store;
}

S3Store::S3Store(Options options)
    : options_(std::move(options)), client_(std::make_unique<S3Client>(options_)) {}

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

// What a 404 for a key means to the method that asked.
enum class MissingKey {
  kNotFound,   // NotFound "<key> not found" (reads)
  kOk,         // nothing to do (Erase)
  kHttpError,  // an error like any other status (writes, listings)
};

// The one mapping of an S3 response to a Status: OK for a 2xx; for a 404,
// FailedPrecondition when the bucket itself is gone (which must not read as
// "absent": a copy would fill the chunk with the fill value), otherwise what
// `missing` says; anything else S3Client::HttpError's one line, after
// `context` when given ("listing").
Status ResponseStatus(const S3Store::Options& options, const S3Client& client,
                      const S3Client::Request& request, const S3Client::Response& response,
                      MissingKey missing, std::string_view context = {}) {
  if (IsHttpOk(response.status)) return Status::Ok();
  if (response.status == 404) {
    if (response.error.code == "NoSuchBucket") {
      return FailedPreconditionError(
          fmt::format("bucket '{}' does not exist at {}", options.bucket, options.endpoint));
    }
    if (missing == MissingKey::kNotFound) {
      return NotFoundError(fmt::format("{} not found", request.what));
    }
    if (missing == MissingKey::kOk) return Status::Ok();
  }
  Status error = client.HttpError(request, response);
  return context.empty() ? error : error.WithContext(context);
}

}  // namespace

Result<Buffer> S3Store::Get(std::string_view key, MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  S3Client::Request request;
  request.object = ObjectKey(key);
  request.what = What(key);
  BufferSink sink(pool, request.what);
  STRATA_ASSIGN_OR_RETURN(S3Client::Response response, client_->Execute(request, &sink));
  STRATA_RETURN_IF_ERROR(
      ResponseStatus(options_, *client_, request, response, MissingKey::kNotFound));
  return sink.Take();
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
  S3Client::Request request;
  request.object = ObjectKey(key);
  request.what = what;
  request.range = {offset, offset + std::min(length, INT64_MAX - offset) - 1};
  BufferSink sink(pool, request.what);
  STRATA_ASSIGN_OR_RETURN(S3Client::Response response, client_->Execute(request, &sink));
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
  STRATA_RETURN_IF_ERROR(
      ResponseStatus(options_, *client_, request, response, MissingKey::kNotFound));
  return client_->HttpError(request, response);  // a 2xx other than 200 and 206
}

Result<Store::Suffix> S3Store::GetSuffix(std::string_view key, int64_t length, MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  const std::string what = What(key);
  if (length < 0) return InvalidArgumentError(fmt::format("invalid suffix length {}", length));
  if (length == 0) return Store::GetSuffix(key, length, pool);
  S3Client::Request request;
  request.object = ObjectKey(key);
  request.what = what;
  request.suffix = length;
  BufferSink sink(pool, request.what);
  STRATA_ASSIGN_OR_RETURN(S3Client::Response response, client_->Execute(request, &sink));
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
  STRATA_RETURN_IF_ERROR(
      ResponseStatus(options_, *client_, request, response, MissingKey::kNotFound));
  return client_->HttpError(request, response);  // a 2xx other than 200 and 206
}

Status S3Store::GetInto(std::string_view key, std::span<std::byte> out) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  S3Client::Request request;
  request.object = ObjectKey(key);
  request.what = What(key);
  SpanSink sink(out, request.what);
  STRATA_ASSIGN_OR_RETURN(S3Client::Response response, client_->Execute(request, &sink));
  return ResponseStatus(options_, *client_, request, response, MissingKey::kNotFound);
}

Result<std::optional<int64_t>> S3Store::Size(std::string_view key) {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  S3Client::Request request;
  request.method = "HEAD";
  request.object = ObjectKey(key);
  request.what = What(key);
  STRATA_ASSIGN_OR_RETURN(S3Client::Response response, client_->Execute(request, nullptr));
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
  S3Client::Request request;
  request.method = "PUT";
  request.object = ObjectKey(key);
  request.what = What(key);
  request.body = value;
  STRATA_ASSIGN_OR_RETURN(S3Client::Response response, client_->Execute(request, nullptr));
  return ResponseStatus(options_, *client_, request, response, MissingKey::kHttpError);
}

Status S3Store::MultipartUpload(std::string_view key, std::span<const std::byte> value) {
  const std::string object = ObjectKey(key);
  const std::string what = What(key);
  S3Client::Request request;
  request.object = object;
  request.what = what;

  // Initiate.
  request.method = "POST";
  request.query = internal_storage::CanonicalQuery({{"uploads", ""}});
  StringSink initiated;
  STRATA_ASSIGN_OR_RETURN(S3Client::Response response, client_->Execute(request, &initiated));
  STRATA_RETURN_IF_ERROR(ResponseStatus(options_, *client_, request, response,
                                        MissingKey::kHttpError, "starting a multipart upload"));
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
      S3Client::Request part;
      part.method = "PUT";
      part.object = object;
      part.what = fmt::format("{} (part {})", what, number);
      part.query = internal_storage::CanonicalQuery(
          {{"partNumber", std::to_string(number)}, {"uploadId", *upload_id}});
      part.body = value.subspan(static_cast<size_t>(offset),
                                static_cast<size_t>(std::min(part_size, size - offset)));
      STRATA_ASSIGN_OR_RETURN(S3Client::Response r, client_->Execute(part, nullptr));
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
    S3Client::Request complete;
    complete.method = "POST";
    complete.object = object;
    complete.what = what;
    complete.query = internal_storage::CanonicalQuery({{"uploadId", *upload_id}});
    complete.body = std::as_bytes(std::span(body.data(), body.size()));
    for (int attempt = 1;; ++attempt) {
      StringSink result;
      STRATA_ASSIGN_OR_RETURN(S3Client::Response r, client_->Execute(complete, &result));
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
    S3Client::Request abort;
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
  S3Client::Request request;
  request.method = "DELETE";
  request.object = ObjectKey(key);
  request.what = What(key);
  STRATA_ASSIGN_OR_RETURN(S3Client::Response response, client_->Execute(request, nullptr));
  return ResponseStatus(options_, *client_, request, response, MissingKey::kOk);
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
    S3Client::Request request;
    request.query = internal_storage::CanonicalQuery(std::move(params));
    request.what = What(prefix);
    StringSink sink;
    STRATA_ASSIGN_OR_RETURN(S3Client::Response response, client_->Execute(request, &sink));
    STRATA_RETURN_IF_ERROR(ResponseStatus(options_, *client_, request, response,
                                          MissingKey::kHttpError, "listing"));
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
  struct FirstError {
    Mutex mu;
    Status status STRATA_GUARDED_BY(mu);
  } first_error;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < keys.size();) {
        Status s = Erase(keys[i]);
        if (!s.ok()) {
          MutexLock lock(&first_error.mu);
          if (first_error.status.ok()) first_error.status = s;
          next = keys.size();  // stop the others
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  MutexLock lock(&first_error.mu);
  return first_error.status;
}

}  // namespace strata

