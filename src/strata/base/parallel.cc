#include "strata/base/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "strata/base/thread_annotations.h"

namespace strata {

Status ParallelFor(int64_t n, int workers, const std::function<Status(int64_t)>& fn) {
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  // The failure of the lowest index, whichever thread saw it.
  struct FirstFailure {
    Mutex mu;
    int64_t index STRATA_GUARDED_BY(mu);
    Status status STRATA_GUARDED_BY(mu);
  } first;
  {
    MutexLock lock(&first.mu);
    first.index = n;
  }
  auto work = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      int64_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) return;
      Status s = fn(i);
      if (!s.ok()) {
        MutexLock lock(&first.mu);
        if (i < first.index) {
          first.index = i;
          first.status = std::move(s);
        }
        failed.store(true, std::memory_order_relaxed);
      }
    }
  };
  int threads = static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(workers, n), 1, 1024));
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  MutexLock lock(&first.mu);
  return first.status;
}

}  // namespace strata
