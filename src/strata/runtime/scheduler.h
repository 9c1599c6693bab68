// Scheduler: which task runs next, where, and when, for one compute. Pure
// bookkeeping: no threads, no clocks, no I/O, so it is tested step by step
// (scheduler_test.cc) and every executor shares it through its Dispatcher.
//
// Readiness is at chunk level with no barrier between ops: a task (op,
// block) becomes ready the moment the blocks it reads exist. Readiness and
// readers come from the plan's key functions (plan/block_map.h), never from
// edge lists, and per-task state is created lazily:
//   - an op without dependencies hands out its blocks in order from a cursor
//     (no state per task at all);
//   - a task of an op with dependencies gets a counter only when the first of
//     its input blocks appears, and loses it when it becomes ready;
//   - a produced intermediate block gets a reader count (and the worker that
//     made it) only while it is alive in its tier.
// So the memory of a compute grows with what is in flight, not with the
// number of blocks of its arrays: a copy of 10^8 chunks keeps no per-chunk
// state, and a rechunk keeps state for the blocks between producers and
// readers.
//
// Priorities: the deepest op first (it consumes intermediates soon after they
// appear), then the lower op index, then the lower block. With `locality`,
// among the first few ready tasks of the best depth the one whose inputs the
// asking worker produced goes first.
//
// Admission: workers belong to memory domains (the host for threads and
// processes, one rank each for mpi). A task starts on a worker only while
//   running projections in its domain + the task's projection
//     + the domain's resident intermediate bytes <= the domain's capacity,
// or when nothing runs anywhere (so a plan always progresses). Resident bytes
// are what the dispatcher reports (SetResident): each dispatcher counts them
// its own way.
//
// Attempts: Next() hands out an Attempt; its outcome comes back through
// Succeeded, Requeue, Abandon or WorkerLost. A task may have two attempts in
// flight (a backup of a straggler, AddBackup): the first to succeed
// completes the task and the other is *superseded*: its success is reported
// as a duplicate and changes nothing, its failure is no failure of the
// compute. A block whose readers are done is not declared dead while an
// attempt that may still publish it runs (a superseded one): its erase waits
// for that attempt to end, so a late write of the loser can never bring an
// erased block back. Refcounts and admission count a task once, whichever
// attempt wins.
//
// Stragglers (Stragglers, as Cubed and MapReduce do it): once an op of at
// least `min_tasks` tasks has `min_done_fraction` of them done, an attempt
// that has run for more than `slowdown` x the median time of the op's
// completed tasks gets a backup on another worker. Task times come from the
// clock the dispatcher sets (SetNow) and are kept per op in a log-scale
// histogram (4.4% wide bins), so the memory they take does not grow with the
// number of tasks.
//
// Heartbeats: Heartbeat/SilentWorkers let a dispatcher find workers that
// stopped making progress.
//
// Resume: tasks in SchedulerOptions::pruned do not exist for the scheduler
// except in the counts: readers of a block are its unpruned readers, so a
// block is erased when the last task that really reads it is done.
//
// Thread-safety: none; the dispatcher calls it under its own mutex.
#ifndef STRATA_RUNTIME_SCHEDULER_H_
#define STRATA_RUNTIME_SCHEDULER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <queue>
#include <span>
#include <unordered_map>
#include <vector>

#include "strata/plan/planner.h"
#include "strata/runtime/pruned_tasks.h"

namespace strata {

// One task: a block of a materialized op.
struct TaskId {
  int op = -1;
  Index block = 0;  // linear index in the op's grid
  friend bool operator==(const TaskId& a, const TaskId& b) {
    return a.op == b.op && a.block == b.block;
  }
};

// One attempt at a task, as handed to a worker.
struct Attempt {
  TaskId task;
  int number = 1;         // 1 for the first attempt, then 2, 3, ...
  int64_t id = 0;         // unique per attempt; a backup has its own
  bool first_of_op = false;  // the op's first attempt (callbacks: OnOpStart)
  bool backup = false;
};

// A produced block whose last reader is done: erase it from its tier.
struct DeadBlock {
  int op = -1;
  Index block = 0;
  int producer = -1;  // worker that produced it
  // Only the copy a superseded attempt published on `producer` (executors
  // whose workers keep private copies); the block itself may live on.
  bool copy = false;
};

// An attempt that lost to another attempt of its task: its result is not
// needed (the dispatcher may tell the worker so, or stop it once the
// compute is over).
struct Superseded {
  int worker = -1;
  int64_t attempt_id = 0;
};

// When a running attempt gets a backup (see the header comment).
struct BackupPolicy {
  bool enabled = false;
  double slowdown = 3.0;
  double min_done_fraction = 0.5;
  int64_t min_tasks = 10;
};

struct SchedulerOptions {
  // domain_capacity[d]: bytes of memory domain d; worker_domain[w]: the
  // domain of worker w. Empty: one domain of `total_system_mem` holding
  // every worker.
  std::vector<int64_t> domain_capacity;
  std::vector<int> worker_domain;
  int workers = 1;
  // Prefer tasks whose inputs the asking worker produced.
  bool locality = false;
  BackupPolicy backups;
  // Tasks a resumed run does not run (pruned_tasks.h): never handed out,
  // never counted as readers, and counted as done from the start (an op
  // all of whose tasks are pruned is never reported finished: the
  // dispatcher finishes it). Null: none.
  std::shared_ptr<const PrunedTasks> pruned;
};

class Scheduler {
 public:
  Scheduler(const Plan& plan, SchedulerOptions options);

  // The next attempt for `worker`, or nullopt when nothing is ready or the
  // best ready task does not fit its domain now (wait for a completion). Sets
  // *wake_others when the best task waits for another worker (it failed on
  // this one).
  std::optional<Attempt> Next(int worker, bool* wake_others = nullptr);

  struct Completion {
    // The task was already done: this attempt was superseded (a straggler
    // that lost to its backup, or a backup that lost to it).
    bool duplicate = false;
    std::vector<DeadBlock> dead;    // blocks to erase from their tiers
    std::vector<int> finished_ops;  // ops whose last task this was
    // A duplicate of a tiered op: the blocks this attempt published (its
    // op's and each tiered sibling's), for executors whose workers keep
    // private copies (mpi); where the workers share one tier, its
    // publish-once Put kept a single copy.
    std::vector<DeadBlock> duplicate_copies;
    // Other attempts of the task, now superseded.
    std::vector<Superseded> superseded;
  };
  // The attempt succeeded on `worker`.
  Completion Succeeded(const Attempt& attempt, int worker);
  // The attempt failed and will be retried: back to the ready queue, with
  // `avoid` (a worker) going last for it (-1: none); not when another
  // attempt of the task runs or is queued, or the task is done. Returns the
  // blocks whose erase waited for this attempt.
  std::vector<DeadBlock> Requeue(const Attempt& attempt, int avoid);
  // The attempt failed for good, or was superseded and ended without a
  // result: forget it. Returns the blocks whose erase waited for it.
  std::vector<DeadBlock> Abandon(const Attempt& attempt);
  // `worker` is gone while running `attempt`; with `retry` the task goes back
  // to the queue (the attempt is spent) unless another attempt completed or
  // carries it. Returns the blocks whose erase waited for this attempt.
  std::vector<DeadBlock> WorkerLost(int worker, const Attempt& attempt, bool retry);
  // True when another attempt completed the attempt's task.
  bool IsSuperseded(const Attempt& attempt) const;

  // Sets the clock (seconds, on the dispatcher's clock, never going back):
  // attempts started from now on are timed against it.
  void SetNow(double seconds);
  // Running attempts that deserve a backup now (policy in the header
  // comment): not superseded, without a backup, with another live worker.
  std::vector<Attempt> Stragglers() const;
  // The median time of `op`'s completed tasks (the upper edge of its
  // histogram bin), or -1 before any completed.
  double MedianSeconds(int op) const;
  // Queues a second attempt of a running task; false if it is not running
  // (done already), has a backup, or no other worker is alive. The backup
  // goes before other ready tasks that fit.
  bool AddBackup(const Attempt& running);
  int64_t backups_added() const { return backups_added_; }
  int64_t backups_won() const { return backups_won_; }
  // Heartbeats (seconds on the dispatcher's clock) and the workers that have
  // sent none for `timeout` while running an attempt.
  void Heartbeat(int worker, double now);
  std::vector<int> SilentWorkers(double now, double timeout) const;

  // Residency of a domain, as the dispatcher counts it.
  void SetResident(int domain, int64_t bytes);
  int64_t resident(int domain) const { return domains_[domain].resident; }

  // The worker that produced a live block of a tiered op, or -1.
  int ProducerOf(int op, Index block) const;

  int64_t tasks_remaining() const { return tasks_remaining_; }
  bool done() const { return tasks_remaining_ == 0; }
  int running() const { return static_cast<int>(running_.size()); }
  int live_workers() const { return live_workers_; }
  // Tasks remain but none runs and none can become ready.
  bool stalled() const;
  // Per-task state now held (pending counters, live blocks): for tests of
  // lazy state.
  int64_t state_entries() const;

 private:
  struct Ready {
    TaskId task;
    int attempts = 0;  // attempts already spent
    int avoid = -1;
    bool backup = false;
  };
  struct ReadyOrder {
    const Plan* plan;
    bool operator()(const Ready& a, const Ready& b) const;  // a after b
  };
  // Completed-task times of one op: counts per log2-scale bin of
  // 1/kBinsPerOctave octave from kMinSeconds up.
  struct Durations {
    static constexpr int kBinsPerOctave = 16;
    static constexpr int kOctaves = 44;  // 2^-20 s (1 us) .. 2^24 s (194 days)
    static constexpr double kMinSeconds = 1.0 / (1 << 20);
    std::vector<uint32_t> bins = std::vector<uint32_t>(kBinsPerOctave * kOctaves, 0);
    int64_t count = 0;
    void Add(double seconds);
    double Median() const;
  };
  struct LiveBlock {
    int32_t readers = 0;
    int16_t producer = -1;
  };
  struct OpState {
    // Tasks (linear blocks) waiting for some of their input blocks: how many
    // they still wait for. Only tasks with at least one input present.
    std::unordered_map<Index, int32_t> pending;
    // Blocks of a tiered op that readers still need.
    std::unordered_map<Index, LiveBlock> live;
    int64_t done = 0;
    int64_t pruned = 0;    // of the done tasks, those pruned before the run
    Index next_block = 0;  // cursor ops hand out blocks in order (past pruned ones)
    bool cursor = false;
    bool started = false;
    std::unique_ptr<Durations> durations;  // ops that may get backups
  };
  struct Running {
    Attempt attempt;
    int worker = -1;
    int64_t projected = 0;
    double start = 0;
    bool lost = false;    // another attempt of the task completed it
    bool backed = false;  // has (or had) a backup
  };
  struct Domain {
    int64_t capacity = 0;
    int64_t running_projected = 0;
    int64_t resident = 0;
  };

  const PlannedOp& op(int index) const { return plan_.ops()[index]; }
  Shape Unravel(int op_index, Index linear) const;
  int64_t LocalInputs(const TaskId& task, int worker) const;
  // Whether some task of `op_index` may read no block of any dependency.
  bool MayHaveTasksWithoutInputs(int op_index) const;
  bool Pruned(int op_index, Index block) const {
    return options_.pruned && options_.pruned->pruned(op_index, block);
  }
  bool Fits(const Ready& ready, int worker) const;
  Attempt Start(const Ready& ready, int worker);
  // Forgets a running attempt; returns the dead blocks that waited for it.
  std::vector<DeadBlock> Stop(int64_t attempt_id);
  std::vector<Running>::iterator FindRunning(int64_t attempt_id);
  std::vector<Running>::const_iterator FindRunning(int64_t attempt_id) const;
  bool AnyAttemptRunning(const TaskId& task) const;
  // `dead` now, or once no attempt of its task runs.
  void Kill(const DeadBlock& dead, std::vector<DeadBlock>* now);

  const Plan& plan_;
  SchedulerOptions options_;
  std::vector<OpState> state_;
  std::vector<int> cursor_ops_;
  std::priority_queue<Ready, std::vector<Ready>, ReadyOrder> ready_;
  std::vector<Ready> backups_;
  std::vector<Running> running_;
  std::vector<DeadBlock> deferred_dead_;  // waiting for a superseded attempt to end
  double now_ = 0;
  int64_t backups_added_ = 0;
  int64_t backups_won_ = 0;
  std::vector<Domain> domains_;
  std::vector<double> heartbeat_;
  std::vector<bool> worker_alive_;
  int live_workers_ = 0;
  int64_t tasks_remaining_ = 0;
  int64_t next_attempt_id_ = 1;
};

}  // namespace strata

#endif  // STRATA_RUNTIME_SCHEDULER_H_
