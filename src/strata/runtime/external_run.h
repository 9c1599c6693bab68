// Running a plan on a scheduler that is not Strata's (the `dask` executor:
// a distributed.Client; the `ray` executor: a Ray cluster), in two halves.
//
//   ExternalRun  the calling process's half: a Dispatcher (external_dispatcher.cc)
//                that prepares the run as every executor does (results,
//                store targets, the run directory under work_dir, the
//                object-tier prefix), hands the chunk-level task graph to
//                ComputeOptions::external, and takes back what each task
//                came to: result blocks (copied into the results), figures
//                (callbacks), failures (named as every executor names them).
//                It commits each store once its last task is done, erases a
//                disk or object block once its last reader is done, and
//                cleans up at the end, on success or failure.
//   TaskHost     a worker process's half: the same plan, built there from
//                the same arrays, and the tiers opened where the run keeps
//                them. Run computes one task through the TaskRunner. A
//                memory-tier block is never stored: the task's block is
//                returned to the caller (Dask keeps it in the worker's memory
//                and moves it to readers on other workers; Ray puts it in
//                its object store, where readers map it), and a task is
//                given the memory-tier blocks it reads (Lend) for the length
//                of its run. Disk and object blocks go to the run's shared
//                directory or prefix, which only the calling process removes.
//
// Thread-safety: ExternalRun's methods are called from the thread running
// ComputeOptions::external, one at a time. TaskHost::Run may be called
// concurrently from any number of threads.
#ifndef STRATA_RUNTIME_EXTERNAL_RUN_H_
#define STRATA_RUNTIME_EXTERNAL_RUN_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "strata/core/memory_pool.h"
#include "strata/core/ndarray.h"
#include "strata/plan/planner.h"
#include "strata/runtime/executor.h"
#include "strata/runtime/intermediate_store.h"
#include "strata/runtime/scheduler.h"
#include "strata/runtime/task_runner.h"

namespace strata {

// One task of the graph handed to an external scheduler.
struct ExternalTask {
  TaskId id;
  std::vector<TaskId> inputs;  // the tasks whose blocks it reads
  int64_t projected_mem = 0;
  // The task's block travels with its result (KeepsBlock): it is read by
  // other tasks from the memory tier, or it is a block of compute()'s
  // results.
  bool returns_block = false;
};

class ExternalRun {
 public:
  virtual ~ExternalRun() = default;
  virtual const Plan& plan() const = 0;
  // Where the run keeps disk-tier blocks ("" when no op has the disk tier)
  // and the object tier's prefix in spec.object_store_url ("" when none).
  virtual const std::string& run_dir() const = 0;
  virtual const std::string& object_prefix() const = 0;
  // Every task, each after the tasks it reads.
  virtual const std::vector<ExternalTask>& tasks() const = 0;
  // Task `task` succeeded after `attempts` attempts on worker `worker` (a
  // number the caller gives its workers, for callbacks); `block` is its
  // block when it returns one (it is copied). Notifies callbacks, fills the
  // results, commits a finished store, erases dead disk and object blocks.
  // A task reported twice counts once. InvalidArgument for an unknown task;
  // Internal for a result block of the wrong shape or dtype.
  virtual Status TaskDone(const TaskId& task, int attempts, int worker,
                          const TaskFigures& figures, const ConstArrayView* block) = 0;
  // Task `task` failed: `error` with the task named (as every executor
  // names it); the run's status.
  virtual Status TaskFailed(const TaskId& task, const Status& error, int attempts) = 0;
  // Seconds since the compute started (the clock of TaskEndEvent).
  virtual double seconds() const = 0;
  // True once the compute is cancelled (Ctrl-C): stop and return.
  virtual bool cancelled() const = 0;
};

class TaskHost {
 public:
  // Opens the tiers of `plan` where the calling process's ExternalRun keeps
  // them (`run_dir`, `object_prefix`) and the store targets (created by the
  // calling process; opened, never created or committed, here).
  static Result<std::unique_ptr<TaskHost>> Open(std::shared_ptr<const Plan> plan,
                                                std::string run_dir, std::string object_prefix);
  ~TaskHost();

  const Plan& plan() const { return *plan_; }

  // A memory-tier block given to a task (an input that Dask moved here).
  struct Input {
    TaskId task;
    std::shared_ptr<const NDArray> block;
  };
  // Runs attempt `attempt` of `task` with `inputs` lent to it. Returns the
  // task's block when ExternalTask::returns_block says it travels, else
  // nullopt. Errors as TaskRunner::Run gives them.
  Result<std::optional<NDArray>> Run(const TaskId& task, int attempt,
                                     const std::vector<Input>& inputs, TaskFigures* figures);

 private:
  class LentBlocks;
  TaskHost() = default;

  std::shared_ptr<const Plan> plan_;
  ComputeOptions options_;
  std::shared_ptr<MemoryPool> pool_;
  std::shared_ptr<Store> object_store_;
  std::vector<std::unique_ptr<IntermediateStore>> tiers_;  // by op index
  std::vector<LentBlocks*> lent_;                          // by op index: the memory tiers
  std::unique_ptr<TaskRunner> runner_;
};

// What names an op's blocks in the run's shared directory and prefix, in the
// calling process and on every worker alike (array names count the arrays a
// process made, so they differ between processes).
std::string ExternalStoreName(const PlannedOp& op);

}  // namespace strata

#endif  // STRATA_RUNTIME_EXTERNAL_RUN_H_
