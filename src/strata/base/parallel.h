// ParallelFor: run independent work items on a few threads, stopping at the
// first error. For simple chunk-parallel loops in tools and tests; the engine's
// scheduler (runtime/) is what plans and admits real work.
#ifndef STRATA_BASE_PARALLEL_H_
#define STRATA_BASE_PARALLEL_H_

#include <cstdint>
#include <functional>

#include "strata/base/status.h"

namespace strata {

// Calls fn(i) for every i in [0, n) from up to `workers` threads (the calling
// thread is one of them). After an item fails, no new items start; returns the
// error of the lowest-numbered failed item.
Status ParallelFor(int64_t n, int workers, const std::function<Status(int64_t)>& fn);

}  // namespace strata

#endif  // STRATA_BASE_PARALLEL_H_
