// The inline executor: every task in the calling thread, one at a time, in
// the scheduler's order (deterministic; for tests and debugging). It is the
// threads dispatcher with one worker that starts no thread.
#include "strata/runtime/thread_dispatcher.h"

namespace strata {

std::unique_ptr<Dispatcher> MakeInlineDispatcher(const Plan& plan, const ComputeOptions& options) {
  return std::make_unique<ThreadDispatcher>(plan, options, /*workers=*/1);
}

}  // namespace strata
