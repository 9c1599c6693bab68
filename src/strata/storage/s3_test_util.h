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
// Thread-safety: Start/Stop from one thread; endpoint() and StoreOptions()
// may be called from any thread while the server runs.
#ifndef STRATA_STORAGE_S3_TEST_UTIL_H_
#define STRATA_STORAGE_S3_TEST_UTIL_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "strata/base/status.h"
#include "strata/base/temp_dir.h"
#include "strata/storage/s3_store.h"

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

// The bucket SharedS3TestServer() creates.
inline constexpr const char* kS3TestBucket = "strata-test";

// One server per test process with kS3TestBucket, started on first use;
// CHECK-fails when it cannot be started.
S3TestServer& SharedS3TestServer();

// A prefix no other call in this process returns ("t17"), so that tests
// sharing a bucket do not see each other's keys.
std::string UniqueS3Prefix();

}  // namespace strata

#endif  // STRATA_STORAGE_S3_TEST_UTIL_H_
