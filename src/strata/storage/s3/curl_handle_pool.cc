#include "strata/storage/s3/curl_handle_pool.h"

#include <mutex>

#include "strata/base/status.h"

namespace strata::internal_storage {

void GlobalInitCurl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

CurlHandlePool::~CurlHandlePool() {
  for (CURL* h : idle_) curl_easy_cleanup(h);
}

CURL* CurlHandlePool::Acquire() {
  MutexLock lock(&mu_);
  while (in_use_ >= max_) cv_.Wait(&mu_);
  ++in_use_;
  if (!idle_.empty()) {
    CURL* h = idle_.back();
    idle_.pop_back();
    return h;
  }
  lock.Unlock();
  CURL* h = curl_easy_init();
  STRATA_CHECK(h != nullptr) << "curl_easy_init failed";
  return h;
}

void CurlHandlePool::Release(CURL* h) {
  {
    MutexLock lock(&mu_);
    --in_use_;
    idle_.push_back(h);
  }
  cv_.Signal();
}

}  // namespace strata::internal_storage
