// Callbacks: what a compute tells the world while it runs.
//
// The executor calls OnComputeStart once, OnOpStart when an op's first task
// starts, OnTaskEnd after every task, OnOpEnd when an op's last task is done,
// and OnComputeEnd once with the final status. Progress bars and the history
// file are callbacks; tests use them to assert measured <= projected.
//
// Thread-safety: the executor serialises calls to one callback (they come from
// one thread at a time), so implementations need no locking of their own.
#ifndef STRATA_RUNTIME_CALLBACKS_H_
#define STRATA_RUNTIME_CALLBACKS_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "strata/base/progress.h"
#include "strata/base/status.h"
#include "strata/core/box.h"
#include "strata/plan/planner.h"

namespace strata {

struct TaskEndEvent {
  const PlannedOp* op = nullptr;  // valid only during the callback
  std::string op_name;            // stays valid after the compute
  Shape block;
  double start_seconds = 0;  // since compute start
  double end_seconds = 0;
  int64_t projected_mem = 0;
  int64_t measured_peak = 0;  // peak of the task's MemoryPool
  int64_t worker_rss = 0;     // processes executor: the worker's resident set after the task
  int attempts = 1;
  int worker = 0;
  // A task a resumed run did not run: a store task whose chunks were
  // already complete, or a task all of whose readers were skipped
  // (runtime/pruned_tasks.h). Such a task has attempts 0 and worker -1.
  bool skipped = false;
  bool backup = false;  // the winning attempt was a backup of a straggler
};

struct ComputeSummary {
  double seconds = 0;
  int64_t tasks = 0;
  // Tasks a resumed run skipped (their chunks were complete, or all their
  // readers were skipped); in `tasks`.
  int64_t tasks_skipped = 0;
  int64_t peak_pool_bytes = 0;          // peak of the compute's root pool
  int64_t intermediate_bytes_written = 0;  // to disk/object tiers
  // Stored bytes of Zarr chunks the compute's tasks read (every successful
  // task; a source read once is its stored size).
  int64_t zarr_bytes_read = 0;
  int64_t peak_resident_intermediate_bytes = 0;
  // mpi executor, per rank: the peak of its compute pool, and the memory it
  // may use (its share of total_system_mem). Empty for other executors.
  std::vector<int64_t> rank_peak_pool_bytes;
  std::vector<int64_t> rank_memory_share;
  // mpi executor: block bytes that travelled between ranks.
  int64_t bytes_between_ranks = 0;
  // Backups of stragglers started, and those that finished first.
  int64_t backup_attempts = 0;
  int64_t backups_won = 0;
  // Worker processes killed because they sent no heartbeat in time.
  int64_t hung_workers_killed = 0;
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void OnComputeStart(const Plan& plan) {}
  virtual void OnOpStart(const PlannedOp& op) {}
  virtual void OnTaskEnd(const TaskEndEvent& event) {}
  virtual void OnOpEnd(const PlannedOp& op) {}
  virtual void OnComputeEnd(const Plan& plan, const Status& status,
                            const ComputeSummary& summary) {}
};

// One progress line per op on stderr ("add  [#####.....]  5/10 chunks"),
// shown only on a terminal.
class ProgressCallback : public Callback {
 public:
  void OnOpStart(const PlannedOp& op) override;
  void OnTaskEnd(const TaskEndEvent& event) override;
  void OnOpEnd(const PlannedOp& op) override;

 private:
  std::map<int, std::unique_ptr<ProgressBar>> bars_;
};

// JSON lines: one {"event": "task", ...} per task, one {"event": "op", ...}
// per op with projected and measured peak memory, one {"event": "compute"}.
class HistoryCallback : public Callback {
 public:
  // Appends to `path`; errors opening it are reported by status().
  explicit HistoryCallback(std::string path);
  ~HistoryCallback() override;
  const Status& status() const { return status_; }

  void OnComputeStart(const Plan& plan) override;
  void OnTaskEnd(const TaskEndEvent& event) override;
  void OnOpEnd(const PlannedOp& op) override;
  void OnComputeEnd(const Plan& plan, const Status& status,
                    const ComputeSummary& summary) override;

 private:
  struct OpTotals {
    int64_t tasks = 0;
    int64_t projected = 0;
    int64_t measured_peak = 0;
    double task_seconds = 0;
  };
  std::string path_;
  std::FILE* file_ = nullptr;
  Status status_;
  std::map<int, OpTotals> totals_;
};

}  // namespace strata

#endif  // STRATA_RUNTIME_CALLBACKS_H_
