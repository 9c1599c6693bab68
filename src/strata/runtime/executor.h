// Execute: runs a Plan chunk by chunk on its executor (inline, threads,
// processes or mpi) and returns the arrays compute() asked for.
//
// The runtime carries the plan out and decides nothing the plan decided
// (tiers, projections, fusion). It is three parts:
//   Scheduler   (scheduler.h)   readiness at chunk level with no barrier
//                               between ops, memory admission, priorities,
//                               refcounts of intermediate blocks, locality;
//   TaskRunner  (task_runner.h) one task: obtain inputs, compute, exchange,
//                               store;
//   Dispatcher  (dispatcher.h)  one per executor: moves tasks to where they
//                               run and counts the memory its intermediates
//                               hold (inline_dispatcher.cc,
//                               thread_dispatcher.cc, process_dispatcher.cc,
//                               mpi_dispatcher.cc describe each executor).
//
// Memory: each task allocates from its own MemoryPool, capped at allowed_mem,
// under a compute pool capped at total_system_mem (under mpi, the rank's
// share); its peak is reported in TaskEndEvent beside the projection.
//
// Intermediates live in their op's tier and each block is erased when its
// last reader finishes; everything left is removed at the end, on success or
// failure, and the run's directory under work_dir is deleted.
//
// Failures: a retryable error (IsRetryable) reruns the task up to
// spec.retries times; any other error cancels the compute (no new tasks start,
// running ones finish) and is returned with the task named. Stores that did
// not finish stay incomplete (see ZarrArray).
//
// Thread-safety: Execute may be called from any thread; it blocks until done.
#ifndef STRATA_RUNTIME_EXECUTOR_H_
#define STRATA_RUNTIME_EXECUTOR_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/ndarray.h"
#include "strata/plan/planner.h"
#include "strata/runtime/callbacks.h"

namespace strata {

class ExternalRun;

struct ComputeOptions {
  std::vector<std::shared_ptr<Callback>> callbacks;
  // Test hook: called before every attempt of every task (in the worker
  // process for the processes executor); a non-OK status fails that attempt
  // (retryable or not, as the status says).
  std::function<Status(const PlannedOp& op, std::span<const Index> block, int attempt)>
      fault_injector;
  // Cancellation: when it becomes true (set from any thread, e.g. on Ctrl-C)
  // no new task starts, running tasks finish, intermediates are cleaned up as
  // after any failure, and Execute returns Cancelled. Null: not cancellable.
  std::shared_ptr<const std::atomic<bool>> cancel;
  // The dask and ray executors: runs the task graph on a scheduler outside Strata
  // (external_run.h) and returns the first failure, or Ok when every task
  // is done. Required by that executor, ignored by the others.
  std::function<Status(ExternalRun&)> external;
};

struct ComputeResult {
  // One entry per requested array: the values for computed arrays, nullopt
  // for stores (to_zarr).
  std::vector<std::optional<NDArray>> arrays;
  ComputeSummary summary;
};

Result<ComputeResult> Execute(const Plan& plan, const ComputeOptions& options = {});

}  // namespace strata

#endif  // STRATA_RUNTIME_EXECUTOR_H_
