// The Scheduler step by step, without threads: readiness, priorities,
// admission, refcounts, retries, lost workers, backups, heartbeats, and that
// per-task state stays proportional to what is in flight.
#include "strata/runtime/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "strata/plan/plan_test_util.h"

namespace strata {
namespace {

ResolvedSpec TestSpec(int workers = 2, int64_t total = int64_t{1} << 30) {
  ResolvedSpec spec;
  spec.allowed_mem = 64 << 20;
  spec.reserved_mem = 1 << 20;
  spec.total_system_mem = total;
  spec.workers = workers;
  spec.fuse = false;
  return spec;
}

using testing_util::NotRunHere;

std::shared_ptr<const Node> Virtual(const Shape& shape, const Shape& chunks) {
  return testing_util::VirtualNode(shape, chunks);
}

// A blockwise op over `input` in `chunks`, reading the input blocks it
// overlaps.
std::shared_ptr<const Node> Over(const std::shared_ptr<const Node>& input, const Shape& chunks,
                                 std::string name = "blockwise") {
  Node n;
  n.op_name = std::move(name);
  n.kind = NodeKind::kBlockwise;
  n.shape = input->shape;
  n.dtype = input->dtype;
  n.grid = *ChunkGrid::Regular(input->shape, chunks);
  InputMap map;
  for (int i = 0; i < n.grid.rank(); ++i) {
    map.axes.push_back(AxisMap::Overlap(i, n.grid, input->grid, i));
  }
  n.inputs = {input};
  n.maps = {std::move(map)};
  n.fn = NotRunHere();
  return MakeNode(std::move(n));
}

std::shared_ptr<const Plan> PlanOf(const std::shared_ptr<const Node>& out,
                                   const ResolvedSpec& spec) {
  PlanOptions options;
  options.disabled_passes.insert("fuse");
  Result<std::shared_ptr<const Plan>> p = BuildPlan({out}, spec, options);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

// A chain: a virtual source, a materialized op P in chunks of 2 (8 blocks),
// and a consumer C in chunks of 4 (4 tasks, each reading 2 blocks of P).
struct Chain {
  std::shared_ptr<const Plan> plan;
  int producer = -1;
  int consumer = -1;
};

Chain MakeChain(const ResolvedSpec& spec) {
  auto v = Virtual({16}, {1});
  auto p = Over(v, {2}, "producer");
  auto c = Over(p, {4}, "consumer");
  Chain chain;
  chain.plan = PlanOf(c, spec);
  chain.producer = chain.plan->IndexOf(p.get());
  chain.consumer = chain.plan->IndexOf(c.get());
  return chain;
}

TEST(SchedulerTest, CursorHandsOutBlocksInOrderThenDeeperOpsGoFirst) {
  Chain chain = MakeChain(TestSpec());
  Scheduler s(*chain.plan, {.workers = 2});
  EXPECT_EQ(s.tasks_remaining(), 8 + 4);
  std::optional<Attempt> a = s.Next(0);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->task, (TaskId{chain.producer, 0}));
  EXPECT_TRUE(a->first_of_op);
  std::optional<Attempt> b = s.Next(1);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->task, (TaskId{chain.producer, 1}));
  EXPECT_FALSE(b->first_of_op);
  // Producer block 0 alone completes no consumer task.
  Scheduler::Completion c = s.Succeeded(*a, 0);
  EXPECT_TRUE(c.dead.empty());
  EXPECT_EQ(s.state_entries(), 2);  // consumer 0 waits for one more; block 0 is alive
  c = s.Succeeded(*b, 1);
  // Consumer task 0 is ready and goes before producer block 2 (deeper).
  std::optional<Attempt> next = s.Next(0);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->task, (TaskId{chain.consumer, 0}));
  EXPECT_TRUE(next->first_of_op);
  // Its completion frees both blocks it read.
  c = s.Succeeded(*next, 0);
  std::set<Index> dead;
  for (const DeadBlock& d : c.dead) {
    EXPECT_EQ(d.op, chain.producer);
    dead.insert(d.block);
  }
  EXPECT_EQ(dead, (std::set<Index>{0, 1}));
  EXPECT_EQ(s.state_entries(), 0);
}

TEST(SchedulerTest, RunsEveryTaskOnceAndFinishesEachOp) {
  Chain chain = MakeChain(TestSpec());
  Scheduler s(*chain.plan, {.workers = 1});
  std::set<std::pair<int, Index>> seen;
  std::vector<int> finished;
  int64_t erased = 0;
  while (!s.done()) {
    std::optional<Attempt> a = s.Next(0);
    ASSERT_TRUE(a) << "stalled with " << s.tasks_remaining() << " left";
    EXPECT_TRUE(seen.insert({a->task.op, a->task.block}).second);
    Scheduler::Completion c = s.Succeeded(*a, 0);
    erased += static_cast<int64_t>(c.dead.size());
    finished.insert(finished.end(), c.finished_ops.begin(), c.finished_ops.end());
  }
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_EQ(finished, (std::vector<int>{chain.producer, chain.consumer}));
  EXPECT_EQ(erased, 8);  // every producer block, once
  EXPECT_FALSE(s.stalled());
  EXPECT_EQ(s.state_entries(), 0);
}

TEST(SchedulerTest, AdmissionWaitsForMemoryButNeverBlocksAnIdleCompute) {
  ResolvedSpec spec = TestSpec(2, /*total=*/100 << 20);
  Chain chain = MakeChain(spec);
  Scheduler s(*chain.plan, {.workers = 2});
  const int64_t projected = chain.plan->ops()[chain.producer].projected_mem;
  ASSERT_GT(projected, 0);
  // Resident intermediates leave room for one task only.
  s.SetResident(0, spec.total_system_mem - projected - 1);
  std::optional<Attempt> a = s.Next(0);
  ASSERT_TRUE(a) << "an idle compute always admits a task";
  EXPECT_FALSE(s.Next(1)) << "a second task would exceed total_system_mem";
  s.SetResident(0, 0);
  EXPECT_TRUE(s.Next(1));
}

TEST(SchedulerTest, MemoryDomainsAdmitPerDomain) {
  Chain chain = MakeChain(TestSpec());
  const int64_t projected = chain.plan->ops()[chain.producer].projected_mem;
  SchedulerOptions o;
  o.workers = 2;
  o.domain_capacity = {projected, projected};  // one task per domain
  o.worker_domain = {0, 1};
  Scheduler s(*chain.plan, o);
  ASSERT_TRUE(s.Next(0));
  ASSERT_TRUE(s.Next(1)) << "worker 1's domain is empty";
  s.SetResident(1, 1);
  EXPECT_EQ(s.resident(1), 1);
}

TEST(SchedulerTest, RequeuedAttemptGoesToAnotherWorkerFirst) {
  Chain chain = MakeChain(TestSpec());
  Scheduler s(*chain.plan, {.workers = 2});
  std::optional<Attempt> a = s.Next(0);
  ASSERT_TRUE(a);
  s.Requeue(*a, /*avoid=*/0);
  // The requeued block goes before the cursor's next one (a lower block):
  // worker 0, where it failed, must leave it to worker 1.
  bool wake = false;
  EXPECT_FALSE(s.Next(0, &wake));
  EXPECT_TRUE(wake);
  std::optional<Attempt> retry = s.Next(1);
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->task, a->task);
  EXPECT_EQ(retry->number, 2);
  EXPECT_NE(retry->id, a->id);
}

TEST(SchedulerTest, LostWorkerGivesItsTaskToAnother) {
  Chain chain = MakeChain(TestSpec());
  Scheduler s(*chain.plan, {.workers = 2});
  std::optional<Attempt> a = s.Next(0);
  ASSERT_TRUE(a);
  s.WorkerLost(0, *a, /*retry=*/true);
  EXPECT_EQ(s.live_workers(), 1);
  EXPECT_FALSE(s.Next(0)) << "a lost worker gets nothing";
  std::optional<Attempt> again = s.Next(1);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->task, a->task);
  EXPECT_EQ(again->number, 2);
}

TEST(SchedulerTest, BackupAttemptFirstToFinishWins) {
  Chain chain = MakeChain(TestSpec());
  Scheduler s(*chain.plan, {.workers = 2});
  std::optional<Attempt> original = s.Next(0);
  ASSERT_TRUE(original);
  ASSERT_TRUE(s.AddBackup(*original));
  EXPECT_FALSE(s.AddBackup(*original)) << "one backup per task";
  std::optional<Attempt> other = s.Next(0);
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->backup) << "a backup never runs beside its original";
  std::optional<Attempt> backup = s.Next(1);
  ASSERT_TRUE(backup);
  EXPECT_TRUE(backup->backup);
  EXPECT_EQ(backup->task, original->task);
  EXPECT_EQ(s.running(), 3);
  const int64_t before = s.tasks_remaining();
  Scheduler::Completion first = s.Succeeded(*backup, 1);
  EXPECT_FALSE(first.duplicate);
  EXPECT_EQ(s.tasks_remaining(), before - 1);
  Scheduler::Completion second = s.Succeeded(*original, 0);
  EXPECT_TRUE(second.duplicate);
  EXPECT_EQ(s.tasks_remaining(), before - 1);
  EXPECT_EQ(s.running(), 1);  // `other`
}

TEST(SchedulerTest, SilentWorkersAreTheOnesRunningWithoutHeartbeats) {
  Chain chain = MakeChain(TestSpec());
  Scheduler s(*chain.plan, {.workers = 2});
  ASSERT_TRUE(s.Next(0));
  ASSERT_TRUE(s.Next(1));
  s.Heartbeat(0, 10.0);
  s.Heartbeat(1, 2.0);
  EXPECT_EQ(s.SilentWorkers(11.0, 5.0), std::vector<int>{1});
}

SchedulerOptions WithBackups(int workers, int64_t min_tasks = 4) {
  SchedulerOptions o;
  o.workers = workers;
  o.backups.enabled = true;
  o.backups.slowdown = 3.0;
  o.backups.min_done_fraction = 0.5;
  o.backups.min_tasks = min_tasks;
  return o;
}

// One op of `tasks` tasks and no dependencies.
struct Flat {
  std::shared_ptr<const Plan> plan;
  int op = -1;
};
Flat FlatPlan(Index tasks) {
  auto node = Over(Virtual({tasks}, {1}), {1}, "flat");
  Flat f;
  f.plan = PlanOf(node, TestSpec());
  f.op = f.plan->IndexOf(node.get());
  return f;
}

// Runs tasks on `worker`, each taking `seconds` on the scheduler's clock,
// until `count` tasks of op `op` are done.
void RunTasks(Scheduler& s, int op, int count, double seconds, double* now, int worker = 0) {
  for (int done = 0; done < count;) {
    s.SetNow(*now);
    std::optional<Attempt> a = s.Next(worker);
    ASSERT_TRUE(a);
    *now += seconds;
    s.SetNow(*now);
    s.Succeeded(*a, worker);
    if (a->task.op == op) ++done;
  }
}

// The policy of Cubed's backups, step by step: none for a task within
// slowdown x the median of its op's task times, one for a task past it, and
// never two.
TEST(SchedulerTest, StragglerGetsABackupPastThreeTimesTheMedian) {
  Flat flat = FlatPlan(8);
  const Plan& plan = *flat.plan;
  const int op = flat.op;
  Scheduler s(plan, WithBackups(2));
  double now = 0;
  RunTasks(s, op, 3, 1.0, &now);
  std::optional<Attempt> slow = s.Next(1);  // starts at 3 s
  ASSERT_TRUE(slow);
  RunTasks(s, op, 1, 1.0, &now);  // 4 of 8 done: half
  EXPECT_NEAR(s.MedianSeconds(op), 1.0, 0.05);
  s.SetNow(3.0 + 2.9);
  EXPECT_TRUE(s.Stragglers().empty()) << "2.9 s is within 3 x the median";
  s.SetNow(3.0 + 3.2);
  std::vector<Attempt> stragglers = s.Stragglers();
  ASSERT_EQ(stragglers.size(), 1u);
  EXPECT_EQ(stragglers[0].id, slow->id);
  ASSERT_TRUE(s.AddBackup(stragglers[0]));
  EXPECT_TRUE(s.Stragglers().empty()) << "one backup per task";
  EXPECT_FALSE(s.AddBackup(*slow));
  EXPECT_EQ(s.backups_added(), 1);
  std::optional<Attempt> other = s.Next(1);
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->backup) << "a backup never runs beside its original";
  std::optional<Attempt> backup = s.Next(0);
  ASSERT_TRUE(backup);
  EXPECT_TRUE(backup->backup);
  EXPECT_EQ(backup->task, slow->task);
  EXPECT_EQ(backup->number, 2);
}

TEST(SchedulerTest, NoBackupsTooEarlyForSmallOpsOrWithOneWorker) {
  Flat flat = FlatPlan(8);
  const Plan& plan = *flat.plan;
  const int op = flat.op;
  struct Case {
    SchedulerOptions options;
    int done;
    const char* why;
  };
  for (const Case& c : {Case{WithBackups(2), 3, "3 of 8 done: under half"},
                        Case{WithBackups(2, /*min_tasks=*/10), 6, "8 tasks: under min_tasks"},
                        Case{WithBackups(1), 6, "one worker"}}) {
    Scheduler s(plan, c.options);
    double now = 0;
    RunTasks(s, op, c.done, 1.0, &now);
    std::optional<Attempt> slow = s.Next(0);
    ASSERT_TRUE(slow);
    s.SetNow(now + 100);
    EXPECT_TRUE(s.Stragglers().empty()) << c.why;
  }
  Scheduler one(plan, WithBackups(1));
  std::optional<Attempt> a = one.Next(0);
  ASSERT_TRUE(a);
  EXPECT_FALSE(one.AddBackup(*a)) << "a backup needs another worker";
}

// A chain (producer: 8 tasks, consumer: 4) with producer block 4's first
// attempt on worker 0 superseded by a backup on worker 1 that finished.
struct Superseding {
  Chain chain = MakeChain(TestSpec());
  Scheduler s{*chain.plan, WithBackups(2)};
  std::optional<Attempt> slow, backup;
  Scheduler::Completion won;
  Superseding() {
    double now = 0;
    RunTasks(s, chain.producer, 4, 1.0, &now);  // blocks 0..3, consumer 0
    RunTasks(s, chain.consumer, 1, 1.0, &now);  // consumer 1
    s.SetNow(now);
    slow = s.Next(0);
    s.SetNow(now + 5);
    std::vector<Attempt> stragglers = s.Stragglers();
    if (!slow || stragglers.size() != 1 || !s.AddBackup(stragglers[0])) return;
    backup = s.Next(1);
    if (backup) won = s.Succeeded(*backup, 1);
  }
};

// The backup wins; the straggler's late success is a duplicate. A block the
// straggler's task produced is not erased while the straggler runs (it could
// still publish it), however early its readers finish: the erase comes when
// the straggler ends. Readers count the task once.
TEST(SchedulerTest, BlocksOfASupersededAttemptDieWhenItEnds) {
  Superseding x;
  Scheduler& s = x.s;
  ASSERT_TRUE(x.slow && x.backup);
  ASSERT_EQ(x.slow->task, (TaskId{x.chain.producer, 4}));
  EXPECT_TRUE(x.backup->backup);
  EXPECT_FALSE(x.won.duplicate);
  ASSERT_EQ(x.won.superseded.size(), 1u);
  EXPECT_EQ(x.won.superseded[0].worker, 0);
  EXPECT_EQ(x.won.superseded[0].attempt_id, x.slow->id);
  EXPECT_TRUE(s.IsSuperseded(*x.slow));
  EXPECT_EQ(s.backups_won(), 1);
  std::optional<Attempt> p5 = s.Next(1);
  ASSERT_TRUE(p5);
  ASSERT_EQ(p5->task, (TaskId{x.chain.producer, 5}));
  s.Succeeded(*p5, 1);
  std::optional<Attempt> c2 = s.Next(1);  // reads blocks 4 and 5
  ASSERT_TRUE(c2);
  ASSERT_EQ(c2->task, (TaskId{x.chain.consumer, 2}));
  Scheduler::Completion read = s.Succeeded(*c2, 1);
  ASSERT_EQ(read.dead.size(), 1u);
  EXPECT_EQ(read.dead[0].block, 5) << "block 4 waits for the straggler";
  const int64_t remaining = s.tasks_remaining();
  Scheduler::Completion late = s.Succeeded(*x.slow, 0);
  EXPECT_TRUE(late.duplicate);
  EXPECT_EQ(s.tasks_remaining(), remaining) << "counted once";
  ASSERT_EQ(late.duplicate_copies.size(), 1u);
  EXPECT_TRUE(late.duplicate_copies[0].copy);
  EXPECT_EQ(late.duplicate_copies[0].producer, 0);
  ASSERT_EQ(late.dead.size(), 1u);
  EXPECT_EQ(late.dead[0].block, 4);
  EXPECT_EQ(late.dead[0].producer, 1) << "the winner's block";
  EXPECT_FALSE(late.dead[0].copy);
}

// A superseded attempt that fails, or whose worker is lost, is no failure:
// its task is not queued again, and every other task runs once.
TEST(SchedulerTest, SupersededAttemptFailingChangesNothing) {
  for (int how = 0; how < 3; ++how) {
    Superseding x;
    Scheduler& s = x.s;
    ASSERT_TRUE(x.slow && x.backup);
    const int64_t remaining = s.tasks_remaining();
    if (how == 0) s.Requeue(*x.slow, 0);
    if (how == 1) s.Abandon(*x.slow);
    if (how == 2) s.WorkerLost(0, *x.slow, /*retry=*/true);
    EXPECT_EQ(s.tasks_remaining(), remaining);
    EXPECT_EQ(s.running(), 0);
    std::set<std::pair<int, Index>> seen;
    int64_t erased = 0;
    while (!s.done()) {
      std::optional<Attempt> a = s.Next(1);
      ASSERT_TRUE(a) << "stalled";
      EXPECT_TRUE(seen.insert({a->task.op, a->task.block}).second);
      EXPECT_FALSE(a->task == x.slow->task);
      erased += static_cast<int64_t>(s.Succeeded(*a, 1).dead.size());
    }
    EXPECT_EQ(erased, 4) << "blocks 4..7, block 4 once";
    EXPECT_EQ(s.state_entries(), 0);
  }
}

// The original fails while its backup is queued: the backup is the retry,
// so the task is queued once, not twice.
TEST(SchedulerTest, QueuedBackupBecomesTheRetry) {
  Flat flat = FlatPlan(8);
  const Plan& plan = *flat.plan;
  const int op = flat.op;
  Scheduler s(plan, WithBackups(2));
  double now = 0;
  RunTasks(s, op, 4, 1.0, &now);
  std::optional<Attempt> slow = s.Next(0);
  ASSERT_TRUE(slow);
  s.SetNow(now + 5);
  ASSERT_TRUE(s.AddBackup(*slow));
  s.Requeue(*slow, /*avoid=*/0);
  std::set<Index> seen;
  while (!s.done()) {
    std::optional<Attempt> a = s.Next(1);
    ASSERT_TRUE(a);
    EXPECT_TRUE(seen.insert(a->task.block).second) << "block " << a->task.block << " twice";
    s.Succeeded(*a, 1);
  }
  EXPECT_TRUE(seen.count(slow->task.block));
}

// A backup waits for room like any task, and lets other tasks by meanwhile.
TEST(SchedulerTest, BackupsAreAdmittedUnderTheMemoryBudget) {
  Flat flat = FlatPlan(8);
  const Plan& plan = *flat.plan;
  const int op = flat.op;
  const int64_t projected = plan.ops()[op].projected_mem;
  SchedulerOptions o = WithBackups(3);
  o.domain_capacity = {projected, projected};
  o.worker_domain = {0, 1, 1};
  Scheduler s(plan, o);
  double now = 0;
  RunTasks(s, op, 4, 1.0, &now);
  std::optional<Attempt> slow = s.Next(0);
  ASSERT_TRUE(slow);
  std::optional<Attempt> busy = s.Next(1);  // fills domain 1
  ASSERT_TRUE(busy);
  s.SetNow(now + 5);
  ASSERT_TRUE(s.AddBackup(*slow));
  EXPECT_FALSE(s.Next(2)) << "domain 1 is full";
  s.Succeeded(*busy, 1);
  std::optional<Attempt> backup = s.Next(2);
  ASSERT_TRUE(backup);
  EXPECT_TRUE(backup->backup);
}

TEST(SchedulerTest, MedianOfTaskTimesIsWithinABin) {
  Flat flat = FlatPlan(8);
  const Plan& plan = *flat.plan;
  const int op = flat.op;
  Scheduler s(plan, WithBackups(2));
  EXPECT_EQ(s.MedianSeconds(op), -1);
  double now = 0;
  RunTasks(s, op, 1, 0.010, &now);
  RunTasks(s, op, 1, 0.020, &now);
  RunTasks(s, op, 1, 5.0, &now);
  const double median = s.MedianSeconds(op);
  EXPECT_GE(median, 0.020);
  EXPECT_LE(median, 0.020 * 1.05);
}

// A copy of an array of 10^8 blocks through a materialized op: the
// scheduler keeps no state per block, only for blocks in flight.
TEST(SchedulerTest, StateOfAHugeGridStaysProportionalToWorkInFlight) {
  auto v = Virtual({10000, 10000}, {1, 1});
  auto p = Over(v, {1, 1}, "producer");
  auto c = Over(p, {1, 1}, "consumer");
  std::shared_ptr<const Plan> plan = PlanOf(c, TestSpec());
  Scheduler s(*plan, {.workers = 2});
  EXPECT_EQ(s.tasks_remaining(), int64_t{200'000'000});
  EXPECT_EQ(s.state_entries(), 0);
  int64_t most = 0;
  for (int i = 0; i < 20000; ++i) {
    std::optional<Attempt> a = s.Next(0);
    ASSERT_TRUE(a);
    s.Succeeded(*a, 0);
    most = std::max(most, s.state_entries());
  }
  EXPECT_LE(most, 2);
}

// Tasks whose output block reads nothing of a dependency's blocks are found
// once and made ready at the start.
TEST(SchedulerTest, TasksReadingNoBlockAreReadyAtOnce) {
  auto v = Virtual({4}, {1});
  auto p = Over(v, {1}, "producer");
  Node n;
  n.op_name = "sparse";
  n.kind = NodeKind::kBlockwise;
  n.shape = {4};
  n.dtype = DTypeId::kFloat64;
  n.grid = *ChunkGrid::Regular({4}, {1});
  // Output block j reads producer block j for even j, nothing for odd j.
  n.inputs = {p};
  n.maps = {InputMap{{AxisMap::Table(0, {{0}, {}, {2}, {}}, 4)}}};
  n.fn = NotRunHere();
  auto sparse = MakeNode(std::move(n));
  std::shared_ptr<const Plan> plan = PlanOf(sparse, TestSpec());
  const int op = plan->IndexOf(sparse.get());
  Scheduler s(*plan, {.workers = 1});
  std::optional<Attempt> a = s.Next(0);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->task, (TaskId{op, 1})) << "deeper ready tasks go before the producer's cursor";
  s.Succeeded(*a, 0);
  a = s.Next(0);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->task, (TaskId{op, 3}));
}

// Resume (pruned_tasks.h): a producer in chunks of 2, a consumer in chunks of
// 3 (each reads two producer blocks; neighbours share one) and its store.
// With the store's block 0 done, the store task 0, consumer task 0 and
// producer block 0 (read by consumer 0 alone) are pruned; producer block 1
// still runs, for consumer 1, and is erased once that live reader is done.
TEST(SchedulerTest, PrunedTasksNeverRunAndLiveBlocksDieWithTheirLastLiveReader) {
  const ResolvedSpec spec = TestSpec(1);
  auto v = Virtual({16}, {1});
  auto p = Over(v, {2}, "producer");
  auto c = Over(p, {3}, "consumer");
  auto store = testing_util::StoreNode(c);
  std::shared_ptr<const Plan> plan = PlanOf(store, spec);
  const int producer = plan->IndexOf(p.get()), consumer = plan->IndexOf(c.get());
  const int stored = plan->IndexOf(store.get());
  ASSERT_TRUE(plan->ops()[producer].materialized && plan->ops()[consumer].materialized)
      << plan->ToText();
  auto pruned = PrunedTasks::Compute(*plan, [&](const PlannedOp& op, std::span<const Index> b) {
    return op.index == stored && b[0] == 0;
  });
  ASSERT_TRUE(pruned);
  EXPECT_EQ(pruned->total(), 3);
  EXPECT_TRUE(pruned->pruned(stored, 0));
  EXPECT_TRUE(pruned->pruned(consumer, 0));
  EXPECT_TRUE(pruned->pruned(producer, 0));
  EXPECT_FALSE(pruned->pruned(producer, 1)) << "consumer 1 still reads it";
  EXPECT_EQ(pruned->NextLive(producer, 0), 1);

  Scheduler s(*plan, {.workers = 1, .pruned = pruned});
  EXPECT_EQ(s.tasks_remaining(), 8 + 6 + 6 - 3);
  std::set<std::pair<int, Index>> seen;
  std::set<std::pair<int, Index>> erased;
  std::vector<int> finished;
  while (!s.done()) {
    std::optional<Attempt> a = s.Next(0);
    ASSERT_TRUE(a) << "stalled with " << s.tasks_remaining() << " left";
    EXPECT_FALSE(pruned->pruned(a->task.op, a->task.block))
        << "op " << a->task.op << " block " << a->task.block;
    EXPECT_FALSE(a->first_of_op && a->task.op == producer) << "reported started when pruned";
    EXPECT_TRUE(seen.insert({a->task.op, a->task.block}).second);
    Scheduler::Completion done = s.Succeeded(*a, 0);
    for (const DeadBlock& d : done.dead) EXPECT_TRUE(erased.insert({d.op, d.block}).second);
    finished.insert(finished.end(), done.finished_ops.begin(), done.finished_ops.end());
  }
  EXPECT_EQ(seen.size(), 17u);
  // Every block that was produced is erased once: 7 of the producer's, 5 of
  // the consumer's; nothing is left waiting.
  EXPECT_EQ(erased.size(), 12u);
  EXPECT_TRUE(erased.count({producer, 1}));
  EXPECT_FALSE(erased.count({producer, 0}));
  EXPECT_EQ(s.state_entries(), 0);
  std::sort(finished.begin(), finished.end());
  EXPECT_EQ(finished, (std::vector<int>{producer, consumer, stored}));

  // Every store block done: nothing runs at all.
  auto all = PrunedTasks::Compute(*plan, [](const PlannedOp&, std::span<const Index>) {
    return true;
  });
  ASSERT_TRUE(all);
  EXPECT_EQ(all->total(), 20);
  Scheduler none(*plan, {.workers = 1, .pruned = all});
  EXPECT_TRUE(none.done());
  EXPECT_FALSE(none.Next(0));
  // No store block done: nothing pruned.
  EXPECT_FALSE(PrunedTasks::Compute(*plan, [](const PlannedOp&, std::span<const Index>) {
    return false;
  }));
}

}  // namespace
}  // namespace strata
