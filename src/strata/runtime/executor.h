// Execute: runs a Plan chunk by chunk on the inline, threads or processes
// executor.
//
// Scheduling is at chunk level with no barrier between ops: a task (op,
// block) becomes ready the moment the blocks it reads exist. Readiness and
// readers are found through the key functions (plan/block_map.h): the executor
// keeps one counter per task and one reader count per produced intermediate
// block, never edge lists.
//
// Admission: a ready task starts only while
//   sum(projected memory of running tasks) + resident intermediate bytes
//     <= total_system_mem
// (a task always starts when nothing else runs, so a plan always progresses).
// Among ready tasks the deepest op wins (depth first), which consumes
// intermediates soon after they appear.
//
// Memory: each task allocates from its own MemoryPool, capped at allowed_mem,
// under a compute pool capped at total_system_mem; its peak is reported in
// TaskEndEvent beside the projection.
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
// Processes (spec.executor == kProcesses): after the plan's tiers exist and
// before any thread starts, the calling process (the coordinator) forks
// spec.workers worker processes, which inherit the plan, its closures and the
// tiers. The coordinator keeps the scheduler above; one proxy thread per
// worker sends it (op, block, attempt) over a socketpair and waits for a
// fixed-size reply (status, times, the task pool's peak, bytes written to
// disk, the worker's RSS). Workers run tasks exactly as threads do and never
// call callbacks. Memory-tier intermediates live in one ShmStore created
// before the fork (ShmIntermediateStore: readers get pinned zero-copy views);
// disk-tier ones in files; results of compute() in a shared mapping the
// workers write and the coordinator copies out at the end. No other chunk
// data passes through the coordinator. A ready task prefers the worker that
// produced its inputs. A worker that dies (kill -9, crash) is reaped, its
// pins and unsealed objects reclaimed, and its task retried on another
// worker (one attempt spent); workers are not replaced, and the compute fails
// with Unavailable only when all of them are dead. Workers exit when the
// compute ends (their socket closes) or their coordinator dies
// (PR_SET_PDEATHSIG). The fork happens in the calling thread: other threads
// of the caller's process must not hold locks the workers need (malloc's are
// safe under glibc).
//
// MPI (spec.executor == kMpi): SPMD. Every rank of an mpirun/srun job builds
// the same plan and calls Execute, which is then collective (a plan that
// differs between ranks is an error on every rank). Rank 0 schedules with
// the loop above, one task at a time per rank: worker w is rank w (rank 0
// runs its tasks on a thread of its own), and tasks go out over MPI with the
// ranks holding each input block. Admission is per rank: a task starts on a
// rank while its projection plus the memory-tier blocks that rank holds fit
// in the rank's share of total_system_mem (its host's part, split between
// the ranks on that host). Memory-tier blocks stay on the rank that made
// them (spilling per block past its share of the tier) and travel to their
// readers as MPI messages through each rank's BlockServer (mpi_tier.h); disk
// and object tiers must be visible to every rank (work_dir on a shared
// filesystem, or the object store). A retryable failure sends the task back
// to the queue for another rank. Callbacks run on rank 0 only; every rank
// returns the same status, summary and results. A rank that dies cannot be
// recovered from (MPI ends the job); stores stay incomplete.
//
// Thread-safety: Execute may be called from any thread; it blocks until done.
#ifndef STRATA_RUNTIME_EXECUTOR_H_
#define STRATA_RUNTIME_EXECUTOR_H_

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

struct ComputeOptions {
  std::vector<std::shared_ptr<Callback>> callbacks;
  // Test hook: called before every attempt of every task (in the worker
  // process for the processes executor); a non-OK status fails that attempt
  // (retryable or not, as the status says).
  std::function<Status(const PlannedOp& op, std::span<const Index> block, int attempt)>
      fault_injector;
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
