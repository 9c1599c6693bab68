// The libcurl handles of one S3Store: a bounded pool that also bounds how
// many requests are in flight, and the process-wide curl_global_init.
//
// Thread-safety: CurlHandlePool is safe to call concurrently; a
// CurlHandleLease belongs to one thread.
#ifndef STRATA_STORAGE_S3_CURL_HANDLE_POOL_H_
#define STRATA_STORAGE_S3_CURL_HANDLE_POOL_H_

#include <curl/curl.h>

#include <vector>

#include "strata/base/thread_annotations.h"

namespace strata::internal_storage {

// curl_global_init, once per process (before any other libcurl call).
void GlobalInitCurl();

// Owns every curl handle of a store and bounds how many are in use: a request
// holds one for its whole duration (retries included), so at most `max`
// requests are in flight. Handles keep their connections between requests.
class CurlHandlePool {
 public:
  explicit CurlHandlePool(int max) : max_(max) {}
  ~CurlHandlePool();
  CurlHandlePool(const CurlHandlePool&) = delete;
  CurlHandlePool& operator=(const CurlHandlePool&) = delete;

  // A handle, once fewer than `max` are in use (blocks until then).
  CURL* Acquire() STRATA_EXCLUDES(mu_);
  // Gives back a handle from Acquire.
  void Release(CURL* h) STRATA_EXCLUDES(mu_);

 private:
  const int max_;
  Mutex mu_;
  CondVar cv_;  // signalled when a handle is released
  int in_use_ STRATA_GUARDED_BY(mu_) = 0;
  std::vector<CURL*> idle_ STRATA_GUARDED_BY(mu_);
};

// One handle of a pool, held for the lifetime of the lease.
class CurlHandleLease {
 public:
  explicit CurlHandleLease(CurlHandlePool& pool) : pool_(pool), handle_(pool.Acquire()) {}
  ~CurlHandleLease() { pool_.Release(handle_); }
  CurlHandleLease(const CurlHandleLease&) = delete;
  CurlHandleLease& operator=(const CurlHandleLease&) = delete;
  CURL* get() const { return handle_; }

 private:
  CurlHandlePool& pool_;
  CURL* handle_;
};

}  // namespace strata::internal_storage

#endif  // STRATA_STORAGE_S3_CURL_HANDLE_POOL_H_
