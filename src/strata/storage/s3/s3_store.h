// S3Store: a Store over an S3-compatible object store (AWS S3, MinIO, s3rver,
// moto), spoken to over HTTP with libcurl.
//
// A store is rooted at `s3://bucket/prefix`: key "a.zarr/0.0" is the object
// "prefix/a.zarr/0.0" in the bucket. Requests are path-style
// (ENDPOINT/bucket/key) and signed with AWS Signature V4 with credentials
// from the standard AWS credential chain (s3_credentials.h: environment,
// shared files and profiles, web identity, container and instance metadata,
// refreshed before they expire), or unsigned when `anonymous` is asked for
// (`?anon=true`). Get and Size are GET and HEAD, GetRange a GET
// with a byte range, Set a PUT (a multipart upload above
// `multipart_threshold`), Erase a DELETE, List a ListObjectsV2 walk over its
// continuation tokens.
//
// Lifecycle: Open resolves the credentials (failing with one line that lists
// where it looked when there are none), checks that the bucket exists (one
// small listing) and returns the store; every call after that is a
// self-contained request or sequence of requests. Set returns only once the
// server has acknowledged the whole object, and an S3 PUT (or a completed
// multipart upload) replaces an object atomically, so readers never see a
// torn value.
//
// Failures: 5xx, 429 and throttling codes (SlowDown, RequestTimeout),
// connection failures and timeouts are retried `max_retries` times with
// exponential backoff and jitter. Every error is one line naming the object
// (`s3://bucket/prefix/key`), the method, the endpoint and the HTTP status and
// S3 error code: "s3://b/p/a.zarr/0.0: PUT http://127.0.0.1:4568 returned 403
// SignatureDoesNotMatch (...)". A server that cannot be reached after the
// retries is Unavailable; a missing bucket is NotFound at Open. A request
// whose time without progress (all attempts together) passes
// `timeout_seconds` fails at once, naming the timeout; it is not retried
// further by the executor either (the budget was the request's whole).
//
// Thread-safety: every method may be called from many threads at once. At
// most `max_concurrency` requests are in flight per store; further calls wait
// for a slot. Connections are kept alive and reused across calls.
#ifndef STRATA_STORAGE_S3_S3_STORE_H_
#define STRATA_STORAGE_S3_S3_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "strata/storage/s3/s3_credentials.h"
#include "strata/storage/store.h"

namespace strata {

namespace internal_storage {
class S3Client;  // s3_client.h
}  // namespace internal_storage

class S3Store : public Store {
 public:
  struct Options {
    std::string bucket;
    // Key prefix of the store's root within the bucket ("" or "a/b", no
    // leading or trailing '/').
    std::string prefix;
    // "http://127.0.0.1:4568"; empty: https://s3.REGION.amazonaws.com.
    std::string endpoint;
    std::string region = "us-east-1";

    // Credentials, the first of these that applies:
    //   `anonymous`: unsigned requests (public buckets; URL option anon=true);
    //   `credentials`: this provider;
    //   `access_key_id` and `secret_access_key` (with `session_token`, sent as
    //   x-amz-security-token): these keys;
    //   otherwise the AWS credential chain (s3_credentials.h) with `profile`
    //   (empty: AWS_PROFILE, else "default"; URL option profile=NAME).
    bool anonymous = false;
    std::shared_ptr<AwsCredentialProvider> credentials;
    std::string access_key_id;
    std::string secret_access_key;
    std::string session_token;
    std::string profile;

    // Requests in flight at once (a pool of this many connections).
    int max_concurrency = 16;
    // Retries after the first attempt of a request that failed transiently.
    int max_retries = 5;
    // Backoff before retry k (from 1) is uniform in [0, min(max, initial * 2^(k-1))].
    double initial_backoff_seconds = 0.2;
    double max_backoff_seconds = 10.0;
    double connect_timeout_seconds = 10.0;
    // An attempt that moves no byte for this long is abandoned (and retried).
    double stall_timeout_seconds = 10.0;
    // The whole budget of one request, retries and backoff included: the
    // time it may spend with no byte moving (waiting for a connection, an
    // answer, or the rest of a body). Time spent moving data does not count,
    // so a large transfer over a slow link is not cut short, while a server
    // that accepts and never answers, or stalls mid-body, fails after this
    // long with an error naming the timeout. URL option `timeout=SECONDS`.
    double timeout_seconds = 30.0;

    // Values larger than this are uploaded in parts of `part_size` bytes.
    int64_t multipart_threshold = int64_t{64} << 20;
    // At least 5 MiB (S3's minimum for all parts but the last); raised when a
    // value would need more than 10,000 parts.
    int64_t part_size = int64_t{16} << 20;
    // Keys per ListObjectsV2 page (1..1000).
    int list_page_size = 1000;
  };

  // Options from the environment: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL;
  // AWS_REGION, AWS_DEFAULT_REGION or the profile's region in the AWS config
  // file (default us-east-1). Bucket and prefix stay empty, and so do the
  // credentials: Open resolves them through the credential chain.
  static Options OptionsFromEnvironment();

  // Options for "s3://bucket/prefix?endpoint=...&region=...": the environment
  // first, then the URL's query options, which take precedence. Options:
  // endpoint, region, profile (an AWS shared-file profile; its region too
  // unless region= or AWS_REGION says otherwise), anon (true/false: unsigned
  // requests), max_concurrency, max_retries, timeout (seconds),
  // multipart_threshold, part_size, list_page_size. Credentials are never
  // taken from a URL (URLs end up in messages and plan dumps).
  // InvalidArgument for a malformed URL or an unknown option.
  static Result<Options> ParseUrl(std::string_view url);

  // Checks the options, resolves the credentials and checks that the bucket
  // exists. InvalidArgument for bad options; the credential chain's error
  // (PermissionDenied "no AWS credentials found (looked at: ...)" when there
  // are none), prefixed with the store's URL; NotFound "bucket 'x' does not
  // exist at ENDPOINT"; Unavailable when the endpoint cannot be reached after
  // the retries; PermissionDenied when the credentials are refused.
  static Result<std::unique_ptr<S3Store>> Open(Options options);

  ~S3Store() override;

  Result<Buffer> Get(std::string_view key, MemoryPool& pool) override;
  Result<Buffer> GetRange(std::string_view key, int64_t offset, int64_t length,
                          MemoryPool& pool) override;
  Status GetInto(std::string_view key, std::span<std::byte> out) override;
  // One GET with "Range: bytes=-length".
  Result<Suffix> GetSuffix(std::string_view key, int64_t length, MemoryPool& pool) override;
  Result<Suffix> GetRangeAndSize(std::string_view key, int64_t offset, int64_t length,
                                 MemoryPool& pool) override;
  Result<std::optional<int64_t>> Size(std::string_view key) override;
  Status Set(std::string_view key, std::span<const std::byte> value) override;
  using Store::Set;
  Status Erase(std::string_view key) override;
  // Keys that are not valid store keys (e.g. "dir/" markers other tools
  // create) are skipped.
  Result<std::vector<std::string>> List(std::string_view prefix) override;
  // Lists, then deletes with up to max_concurrency requests in flight.
  Status ErasePrefix(std::string_view prefix) override;
  // "s3://bucket/prefix" (never credentials or query options).
  std::string url() const override;
  bool cheap_ranged_reads() const override { return false; }

  const Options& options() const { return options_; }
  // Where the credentials come from ("environment", "web identity (role
  // ...)", "anonymous"), for messages and tests.
  std::string credential_source() const;

  // Requests sent so far, retries included (for tests and benchmarks).
  int64_t requests_sent() const;

 private:
  explicit S3Store(Options options);

  // The object key of store key `key`, and the store key's URL for messages.
  std::string ObjectKey(std::string_view key) const;
  std::string What(std::string_view key) const;
  // The root prefix with a trailing '/', or "" for a store at the bucket root.
  std::string RootSlash() const;
  Status MultipartUpload(std::string_view key, std::span<const std::byte> value);

  Options options_;
  std::unique_ptr<internal_storage::S3Client> client_;  // refers to options_
};

}  // namespace strata

#endif  // STRATA_STORAGE_S3_S3_STORE_H_
