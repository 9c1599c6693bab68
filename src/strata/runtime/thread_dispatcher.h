// The threads executor's dispatcher (the default): tasks run on worker
// threads of this process, intermediates in this process's RAM
// (MemoryIntermediateStore, spilling per block past the plan's RAM for
// intermediates), on local disk or in the object store. Residency for
// admission is the memory tiers' resident bytes, counted from each Put and
// Erase. A retryable failure is retried on the same thread after a short
// wait. The inline executor is this with one worker: the calling thread.
//
// Thread-safety: see Dispatcher.
#ifndef STRATA_RUNTIME_THREAD_DISPATCHER_H_
#define STRATA_RUNTIME_THREAD_DISPATCHER_H_

#include "strata/runtime/dispatcher.h"

namespace strata {

class ThreadDispatcher : public Dispatcher {
 public:
  ThreadDispatcher(const Plan& plan, const ComputeOptions& options, int workers)
      : Dispatcher(plan, options), workers_(workers) {}

 protected:
  Status RunTasks() override { return DriveWorkers(workers_); }
  Result<std::unique_ptr<IntermediateStore>> MakeMemoryTier(const PlannedOp& op) override;
  AttemptOutcome RunAttempt(const Attempt& attempt, int worker) override;

 private:
  int workers_;
};

}  // namespace strata

#endif  // STRATA_RUNTIME_THREAD_DISPATCHER_H_
