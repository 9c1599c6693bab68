// S3TestServer: a real S3-compatible server (s3rver, started through
// scripts/s3_test_server.js) on 127.0.0.1, for tests.
//
// Start launches it on a free port with a fresh temporary directory and the
// given buckets, and returns once it accepts requests; Stop (or the
// destructor) terminates it and removes the directory. The server also exits
// by itself when the test process dies (it watches its stdin pipe).
//
// SharedS3TestServer() is one server per test process, started on first use
// and stopped by a gtest Environment at the end of the program.
//
// FakeHttpServer: a small HTTP/1.1 server on 127.0.0.1 that answers with a
// handler and records the requests, to stand in for STS and the container
// and instance metadata services. ScopedEnv sets an environment variable for
// one scope; HermeticAwsEnvironment clears every variable the AWS credential
// chain reads and points its files into a temporary directory.
//
// Thread-safety: Start/Stop from one thread; endpoint() and StoreOptions()
// may be called from any thread while the server runs. FakeHttpServer calls
// its handler on its own thread, one request at a time. ScopedEnv and
// HermeticAwsEnvironment change the process environment: use them only
// where no other thread reads it.
#ifndef STRATA_STORAGE_S3_S3_TEST_UTIL_H_
#define STRATA_STORAGE_S3_S3_TEST_UTIL_H_

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "strata/base/status.h"
#include "strata/base/temp_dir.h"
#include "strata/storage/s3/s3_store.h"

namespace strata {

class S3TestServer {
 public:
  // s3rver's built-in account.
  static constexpr const char* kAccessKeyId = "S3RVER";
  static constexpr const char* kSecretAccessKey = "S3RVER";

  // FailedPrecondition when s3rver is not installed (run
  // scripts/install-deps.sh); Unavailable when it does not come up.
  static Result<std::unique_ptr<S3TestServer>> Start(const std::vector<std::string>& buckets);

  ~S3TestServer();
  S3TestServer(const S3TestServer&) = delete;
  S3TestServer& operator=(const S3TestServer&) = delete;

  // Terminates the server and waits for it; idempotent.
  void Stop();

  // "http://127.0.0.1:PORT".
  const std::string& endpoint() const { return endpoint_; }
  int port() const { return port_; }
  // The server's data directory (buckets are subdirectories).
  const std::string& data_dir() const { return dir_->path(); }

  // Options for a store on this server with the right credentials, small
  // retry counts and backoff (tests must fail fast), and the rest default.
  S3Store::Options StoreOptions(const std::string& bucket, const std::string& prefix) const;

 private:
  S3TestServer() = default;
  std::unique_ptr<TempDir> dir_;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;  // the server exits when this closes
  int stdout_fd_ = -1;
  int port_ = 0;
  std::string endpoint_;
};

class FakeHttpServer {
 public:
  struct Request {
    std::string method;
    std::string target;  // path and query: "/latest/api/token"
    std::map<std::string, std::string> headers;  // names lower-case
    std::string body;
  };
  struct Reply {
    int status = 200;
    std::string body;
    // Keep the connection open and never answer (until the server stops),
    // while serving further connections.
    bool hang = false;
  };
  using Handler = std::function<Reply(const Request&)>;

  explicit FakeHttpServer(Handler handler);
  ~FakeHttpServer();
  FakeHttpServer(const FakeHttpServer&) = delete;
  FakeHttpServer& operator=(const FakeHttpServer&) = delete;

  // "http://127.0.0.1:PORT".
  std::string endpoint() const;
  // The requests so far, in order.
  std::vector<Request> requests() const;
  // A port on 127.0.0.1 that nothing listens on (it refuses connections).
  static int ClosedPort();

 private:
  void Serve();
  Handler handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<Request> requests_;  // guarded by mu_
  std::vector<int> held_;          // connections left unanswered; the serving thread's
  std::thread thread_;
};

class ScopedEnv {
 public:
  // `value` null: unset.
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class HermeticAwsEnvironment {
 public:
  HermeticAwsEnvironment();
  // The directory AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE point into
  // (as "credentials" and "config", which do not exist yet).
  const std::string& dir() const { return dir_.path(); }
  std::string credentials_file() const { return dir() + "/credentials"; }
  std::string config_file() const { return dir() + "/config"; }

 private:
  TempDir dir_;
  std::vector<std::unique_ptr<ScopedEnv>> env_;
};

// The bucket SharedS3TestServer() creates.
inline constexpr const char* kS3TestBucket = "strata-test";

// One server per test process with kS3TestBucket, started on first use;
// CHECK-fails when it cannot be started.
S3TestServer& SharedS3TestServer();

// A prefix no other call in this process returns ("t17"), so that tests
// sharing a bucket do not see each other's keys.
std::string UniqueS3Prefix();

}  // namespace strata

#endif  // STRATA_STORAGE_S3_S3_TEST_UTIL_H_
