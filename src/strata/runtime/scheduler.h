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
// completes the task, a later success is reported as a duplicate and
// changes nothing. Heartbeat/SilentWorkers let a dispatcher find workers
// that stopped making progress.
//
// Thread-safety: none; the dispatcher calls it under its own mutex.
#ifndef STRATA_RUNTIME_SCHEDULER_H_
#define STRATA_RUNTIME_SCHEDULER_H_

#include <cstdint>
#include <optional>
#include <queue>
#include <span>
#include <unordered_map>
#include <vector>

#include "strata/plan/planner.h"

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
    bool duplicate = false;         // the task was already done (a backup lost)
    std::vector<DeadBlock> dead;    // blocks to erase from their tiers
    std::vector<int> finished_ops;  // ops whose last task this was
  };
  // The attempt succeeded on `worker`.
  Completion Succeeded(const Attempt& attempt, int worker);
  // The attempt failed and will be retried: back to the ready queue, with
  // `avoid` (a worker) going last for it (-1: none).
  void Requeue(const Attempt& attempt, int avoid);
  // The attempt failed for good (the compute fails): forget it.
  void Abandon(const Attempt& attempt);
  // `worker` is gone while running `attempt`; with `retry` the task goes back
  // to the queue (the attempt is spent).
  void WorkerLost(int worker, const Attempt& attempt, bool retry);

  // Queues a second attempt of a running task; false if it is not running
  // (done already) or has a backup. The backup goes before other ready tasks.
  bool AddBackup(const Attempt& running);
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
    Index next_block = 0;  // cursor ops hand out blocks in order
    bool cursor = false;
    bool started = false;
  };
  struct Running {
    int64_t id = 0;
    TaskId task;
    int worker = -1;
    int64_t projected = 0;
    bool lost = false;  // another attempt of the task completed it
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
  Attempt Start(const Ready& ready, int worker);
  void Stop(int64_t attempt_id);
  std::vector<Running>::iterator FindRunning(int64_t attempt_id);

  const Plan& plan_;
  SchedulerOptions options_;
  std::vector<OpState> state_;
  std::vector<int> cursor_ops_;
  std::priority_queue<Ready, std::vector<Ready>, ReadyOrder> ready_;
  std::vector<Ready> backups_;
  std::vector<Running> running_;
  std::vector<Domain> domains_;
  std::vector<double> heartbeat_;
  std::vector<bool> worker_alive_;
  int live_workers_ = 0;
  int64_t tasks_remaining_ = 0;
  int64_t next_attempt_id_ = 1;
};

}  // namespace strata

#endif  // STRATA_RUNTIME_SCHEDULER_H_
