// PrunedTasks: the tasks of a plan that a run need not run at all: a
// resumed run's finished work, and blocks that nothing reads (ForRun).
//
// A rerun after an interruption finds some target chunks already complete
// (ZarrTarget::BlockDone): their store tasks have nothing to do. Nor has any
// task every reader of which has nothing to do, transitively, through
// intermediates of every tier: a rechunk stage whose blocks only complete
// target chunks read, and the source reads of that stage. Cubed's resume
// skips whole ops; this prunes task by task.
//
//   - a store task, or any task whose op has no consumers, is pruned when
//     the caller says its block is done (for a store: every target chunk it
//     writes is complete);
//   - a task of an op with consumers is pruned when no unpruned task reads
//     any block it produces. A sibling group's task (plan/fuse.cc) produces
//     the block of every member: it is pruned only when each member's block
//     is unneeded;
//   - an op that is also a result of compute() is never pruned.
// So every block an unpruned task reads is produced by an unpruned task
// (the set of tasks that run is closed under "reads"), and the Scheduler and
// the dask dispatcher count readers over unpruned tasks only: an
// intermediate block is erased when its last *live* reader is done.
//
// Computed once per run, before any task runs, in one pass over the ops in
// reverse dependency order: one bit per task, and the input blocks of each
// task that runs are visited once. Only a resumed run, or a plan where some
// consumer reads part of its producer, pays for it.
//
// Thread-safety: immutable after Compute; read from any thread.
#ifndef STRATA_RUNTIME_PRUNED_TASKS_H_
#define STRATA_RUNTIME_PRUNED_TASKS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "strata/plan/planner.h"

namespace strata {

class PrunedTasks {
 public:
  // `leaf_done(op, block)`: whether the block of a store op, or of an op
  // without consumers that compute() does not return, need not be produced
  // (asked once per such block). Returns null when no task is pruned.
  using LeafDone = std::function<bool(const PlannedOp& op, std::span<const Index> block)>;
  static std::shared_ptr<const PrunedTasks> Compute(const Plan& plan, const LeafDone& leaf_done);

  // The tasks of a resumed run: its store targets' complete chunks are the
  // done leaves. Call after every target is open; null when none resumed.
  static std::shared_ptr<const PrunedTasks> ForResume(const Plan& plan);

  // The tasks of any run that nothing needs: a resumed run's (ForResume),
  // and the blocks of an intermediate that no consumer reads, transitively
  // (a pointwise selection reads a few blocks of the op before it: the
  // rest of that op, and of the elementwise ops that feed it, need not run).
  // The pass runs only when some dependency leaves blocks of its producer
  // unread (a per-axis check); null when nothing is pruned.
  static std::shared_ptr<const PrunedTasks> ForRun(const Plan& plan);

  // Whether task (op, block) is pruned (op: a task-running op's index).
  bool pruned(int op, Index block) const {
    const std::vector<bool>& bits = pruned_[op];
    return !bits.empty() && bits[block];
  }
  // Pruned tasks of `op` (0 for ops that run no tasks), and of the plan.
  int64_t count(int op) const { return count_[op]; }
  int64_t total() const { return total_; }
  // The first unpruned block of `op` at or after `block` (num_tasks if none).
  Index NextLive(int op, Index block) const;

 private:
  PrunedTasks() = default;
  std::vector<std::vector<bool>> pruned_;  // by op; empty: none of its tasks
  std::vector<int64_t> count_;             // by op
  int64_t total_ = 0;
};

}  // namespace strata

#endif  // STRATA_RUNTIME_PRUNED_TASKS_H_
