// The HTTP client of S3Store: where response bodies go (BodySink and its
// three kinds) and S3Client, which signs (SigV4 through libcurl), sends and
// retries one request.
//
// Thread-safety: a sink belongs to one request; S3Client is safe to call
// concurrently.
#ifndef STRATA_STORAGE_S3_S3_CLIENT_H_
#define STRATA_STORAGE_S3_S3_CLIENT_H_

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "strata/base/status.h"
#include "strata/core/memory_pool.h"
#include "strata/storage/s3/curl_handle_pool.h"
#include "strata/storage/s3/s3_protocol.h"
#include "strata/storage/s3/s3_store.h"

namespace strata::internal_storage {

inline bool IsHttpOk(long status) { return status >= 200 && status < 300; }

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

// One request to the object store and the response that ended it, sent
// through a bounded pool of curl handles with retries, backoff and a budget
// of time without progress (S3Store::Options).
//
// Thread-safety: Execute may be called concurrently; the pool bounds how many
// requests are in flight.
class S3Client {
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

  // `options` must outlive the client (the store's own).
  explicit S3Client(const S3Store::Options& options);

  const std::string& endpoint() const { return options_.endpoint; }
  int64_t requests_sent() const { return requests_.load(std::memory_order_relaxed); }

  // Sends `request`, retrying transient failures. Returns the final response
  // whatever its HTTP status (the body of a 2xx one went to `sink`); an error
  // when no response came (Unavailable after the retries) or the sink failed.
  Result<Response> Execute(const Request& request, BodySink* sink);

  // The error for a response that is not 2xx, in one line.
  Status HttpError(const Request& request, const Response& response) const;

 private:
  // Sleeps before retry `attempt`, at most `left` seconds; returns the seconds slept.
  double Backoff(int attempt, double left);

  const S3Store::Options& options_;  // the store's, which outlives the client
  CurlHandlePool handles_;
  const std::string sigv4_;
  const bool loopback_;
  std::atomic<int64_t> requests_{0};
};

}  // namespace strata::internal_storage

#endif  // STRATA_STORAGE_S3_S3_CLIENT_H_
