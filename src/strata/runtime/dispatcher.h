// Dispatcher: carries a Plan out on one executor. One subclass per executor,
// each in its own file (inline_dispatcher.cc, thread_dispatcher.cc,
// process_dispatcher.cc, mpi_dispatcher.cc, external_dispatcher.cc for dask
// and ray); adding an executor is one new file and one line in
// MakeDispatcher.
//
// A compute goes through the same steps on every executor (Execute):
//   Prepare     pools and results, the store targets, one tier per
//               intermediate (the memory tier is the executor's own:
//               MakeMemoryTier), the TaskRunner and the Scheduler; on a
//               resumed run or a partial reader, the tasks it need not run (SkipPrunedTasks)
//   RunTasks    worker loops: ask the Scheduler for an attempt, run it
//               (RunAttempt: here, in a worker process, on a rank), report
//               the outcome, erase dead blocks, commit finished stores
//   Finish      the results and the summary
//   Cleanup     every tier's leftovers and the run directory, on success or
//               failure
// and the executor decides how tasks move (RunAttempt, and whether a retry
// waits here or goes back to the queue for another worker) and how the
// memory its intermediates take is counted for admission (CountProduced,
// CountErased): each dispatcher owns its residency accounting.
//
// Stragglers: idle worker loops look for them every kBackupTick while tasks
// run (Scheduler::Stragglers) and queue backups, which the next idle worker
// takes. An attempt that is superseded (its task completed by the other
// attempt) is told so through superseded_board_ and publishes nothing
// (TaskRunner checks before every publish); whatever it still returns, a
// result or an error, changes nothing. Tiers' Puts are publish-once besides,
// for the moment when both attempts publish at once.
//
// Thread-safety: Execute blocks until the compute is over; the worker loops
// share the dispatcher's state under mu_ as marked (STRATA_GUARDED_BY, checked
// by clang: scripts/check-thread-safety.sh).
#ifndef STRATA_RUNTIME_DISPATCHER_H_
#define STRATA_RUNTIME_DISPATCHER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "strata/base/thread_annotations.h"
#include "strata/plan/planner.h"
#include "strata/runtime/callbacks.h"
#include "strata/runtime/executor.h"
#include "strata/runtime/intermediate_store.h"
#include "strata/runtime/pruned_tasks.h"
#include "strata/runtime/run_litter.h"
#include "strata/runtime/scheduler.h"
#include "strata/runtime/task_runner.h"

namespace strata {

class Store;

// How one attempt went, as RunAttempt reports it.
struct AttemptOutcome {
  Status status;
  TaskFigures figures;
  // The worker is gone (a dead process); `status` OK means the task may be
  // retried elsewhere, else it has no attempts left.
  bool worker_lost = false;
  // The attempts actually spent (a dispatcher that retries in place may spend
  // several); 0: just this one.
  int attempts = 0;
};

class Dispatcher {
 public:
  using Clock = std::chrono::steady_clock;

  Dispatcher(const Plan& plan, const ComputeOptions& options);
  virtual ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Runs the compute to the end (see the header comment).
  Result<ComputeResult> Execute();

 protected:
  // --- Steps, overridden where an executor differs ---
  virtual Status Prepare();
  virtual Status RunTasks() = 0;
  // Results into results_ and the figures of `summary`.
  virtual Status Finish(ComputeSummary* summary);
  virtual Status Cleanup();

  // --- What each executor provides ---
  // The tier of a memory-tier op.
  virtual Result<std::unique_ptr<IntermediateStore>> MakeMemoryTier(const PlannedOp& op) = 0;
  // Runs `attempt` on `worker` (in this thread, remotely, ...).
  virtual AttemptOutcome RunAttempt(const Attempt& attempt, int worker) = 0;
  // A retryable failure goes back to the queue for another worker (true), or
  // is retried by the same worker after a short wait (false).
  virtual bool RetryElsewhere() const { return false; }
  // Residency: a task's block was stored (under mu_; `duplicate`: by an
  // attempt that was superseded); a dead block was erased (under mu_, after
  // the erase). Both update scheduler_->SetResident and the peak.
  virtual void CountProduced(const Attempt& attempt, int worker, const TaskFigures& figures,
                             bool duplicate) STRATA_REQUIRES(mu_);
  virtual void CountErased(const DeadBlock& block) STRATA_REQUIRES(mu_);
  // Whether the block a superseded attempt of `op` published is a private
  // copy on its worker that must be erased there (mpi's memory tier), rather
  // than the one shared block (a publish-once Put kept the first).
  virtual bool KeepsPrivateCopies(const PlannedOp& /*op*/) const { return false; }
  // Whether this executor starts backups of stragglers at all.
  virtual bool RunsBackups() const { return true; }
  // Erases a dead block from its tier.
  virtual Status EraseBlock(const DeadBlock& block);
  // The error when every worker is gone with tasks left.
  virtual Status AllWorkersLost() STRATA_REQUIRES(mu_);
  // The Scheduler's options (memory domains, locality).
  virtual SchedulerOptions MakeSchedulerOptions() const;
  // The name of an op's files and objects in shared tiers.
  virtual std::string StoreName(const PlannedOp& op) const { return op.node->name; }

  // --- Shared steps and helpers ---
  // Pools capped at `memory`, the RAM budget of the memory tier, and the
  // results (allocated unless the executor puts them elsewhere). Recycled
  // buffers are limited to `memory` less the reserved_mem of the
  // `task_slots` tasks that run at once within it: reserved_mem is for what
  // is not a chunk buffer (code, stacks, libraries), so chunk buffers, idle
  // ones included, may not take it.
  Status PrepareResults(int64_t memory, int64_t ram_tier, int task_slots,
                        bool allocate_results = true);
  // Creates (or opens, idempotently) every store target; commits empty ones
  // when `commit_empty`.
  Status OpenTargets(bool commit_empty);
  // One tier per op that has one, and the TaskRunner.
  Status MakeTiers();
  // Finds the tasks this run need not run (a resumed run's finished work,
  // blocks nothing reads: PrunedTasks::ForRun; call
  // after OpenTargets, before the first task) and reports each as a skipped
  // task: op start, task end, and for an op none of whose tasks run, its
  // end and (a store) its commit. Sets pruned_ (null: nothing pruned).
  Status SkipPrunedTasks();
  // The run directory under work_dir; created when `create`.
  Status MakeRunDir(bool create);
  // Runs worker loops 1..workers-1 on threads and 0 in this thread; returns
  // the compute's status.
  Status DriveWorkers(int workers);
  // Tells the worker of a superseded attempt (under mu_). Default: through
  // superseded_board_.
  virtual void MarkSuperseded(const Superseded& s) STRATA_REQUIRES(mu_);
  // For TaskRunner::Run: whether attempt `attempt_id` on `worker` was
  // superseded (reads superseded_board_, from any thread or process).
  std::function<bool()> SupersededCheck(int worker, int64_t attempt_id) const;
  // Where each worker's superseded attempt id is written: this process's
  // memory, or (processes) a mapping the workers share. Set before
  // DriveWorkers; workers entries.
  std::atomic<int64_t>* superseded_board_ = nullptr;
  void NotifyTaskEnd(const Attempt& attempt, int worker, int attempts,
                     const TaskFigures& figures);
  Status WithTaskContext(const TaskId& task, Status s, int attempts) const;
  Shape Unravel(const TaskId& task) const;
  int64_t TierBytesWritten() const;
  // Cleanup's parts: each tier's leftovers; the run directory.
  Status CleanupTiers();
  Status RemoveRunDir();
  void Notify(const std::function<void(Callback&)>& fn) STRATA_EXCLUDES(callback_mu_);
  double Seconds(Clock::time_point t) const {
    return std::chrono::duration<double>(t - start_).count();
  }

  const Plan& plan_;
  const ResolvedSpec& spec_;
  const ComputeOptions& options_;
  Clock::time_point start_;
  bool callbacks_here_ = true;  // false on mpi ranks other than 0

  std::shared_ptr<MemoryPool> root_pool_;
  std::shared_ptr<void> held_limit_;  // recycled buffers stay within our memory
  std::shared_ptr<MemoryPool> tier_pool_;
  std::shared_ptr<RamBudget> ram_budget_;
  std::string run_dir_;
  // Holds run_dir_'s lock (run_litter.h) in the process that made it (under
  // mpi, rank 0; the other ranks are told its path).
  std::unique_ptr<RunDirectory> run_directory_;
  bool made_run_dir_ = false;
  bool created_work_dir_ = false;
  // The object tier's store (Spec::object_store_url) and this run's prefix.
  std::shared_ptr<Store> object_store_;
  std::string object_prefix_;
  std::vector<std::unique_ptr<IntermediateStore>> tiers_;  // by op index
  std::vector<std::optional<NDArray>> results_;
  // Where each output slot's blocks are written (into results_, or where the
  // executor chose).
  std::vector<ArrayView> result_views_;
  std::unique_ptr<TaskRunner> runner_;
  // Tasks this run does not run; set by SkipPrunedTasks, then read-only.
  std::shared_ptr<const PrunedTasks> pruned_;

  Mutex mu_;
  CondVar cv_;
  std::unique_ptr<Scheduler> scheduler_ STRATA_GUARDED_BY(mu_);
  SchedulerOptions scheduler_options_;  // set by DriveWorkers
  Status fatal_ STRATA_GUARDED_BY(mu_);
  int64_t peak_resident_ STRATA_GUARDED_BY(mu_) = 0;
  int64_t resident_ STRATA_GUARDED_BY(mu_) = 0;  // threads, processes
  // Reported by other processes.
  int64_t worker_disk_bytes_ STRATA_GUARDED_BY(mu_) = 0;
  int64_t tasks_done_ STRATA_GUARDED_BY(mu_) = 0;
  int64_t tasks_skipped_ STRATA_GUARDED_BY(mu_) = 0;
  int64_t zarr_bytes_read_ STRATA_GUARDED_BY(mu_) = 0;  // by successful tasks
  int64_t hung_workers_killed_ STRATA_GUARDED_BY(mu_) = 0;

  // How often idle workers look for stragglers.
  static constexpr std::chrono::milliseconds kBackupTick{20};

 private:
  void WorkerLoop(int worker) STRATA_EXCLUDES(mu_);
  // Queues backups of the stragglers; true when it queued any.
  bool LaunchBackups() STRATA_REQUIRES(mu_);
  // Erases `dead` from their tiers: releases mu_ (held by the caller) for the
  // erases and takes it back to count them.
  Status EraseDead(const std::vector<DeadBlock>& dead) STRATA_REQUIRES(mu_);
  std::unique_ptr<std::atomic<int64_t>[]> local_board_;
  // One attempt and, when the executor retries in place, its retries.
  AttemptOutcome RunWithRetries(const Attempt& attempt, int worker);
  Mutex callback_mu_;  // one callback at a time, in order
};

// The dispatcher for the plan's executor.
std::unique_ptr<Dispatcher> MakeDispatcher(const Plan& plan, const ComputeOptions& options);

// One per executor (each defined in its own file).
std::unique_ptr<Dispatcher> MakeInlineDispatcher(const Plan& plan, const ComputeOptions& options);
std::unique_ptr<Dispatcher> MakeThreadDispatcher(const Plan& plan, const ComputeOptions& options);
std::unique_ptr<Dispatcher> MakeProcessDispatcher(const Plan& plan,
                                                  const ComputeOptions& options);
std::unique_ptr<Dispatcher> MakeMpiDispatcher(const Plan& plan, const ComputeOptions& options);
// dask and ray: the calling process's half of an ExternalRun.
std::unique_ptr<Dispatcher> MakeExternalDispatcher(const Plan& plan,
                                                   const ComputeOptions& options);

// The resident set of this process, in bytes (0 when unknown).
int64_t CurrentRss();

}  // namespace strata

#endif  // STRATA_RUNTIME_DISPATCHER_H_
