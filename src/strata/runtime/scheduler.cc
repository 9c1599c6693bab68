#include "strata/runtime/scheduler.h"

#include <algorithm>
#include <cmath>

#include "strata/base/check.h"

namespace strata {

bool Scheduler::ReadyOrder::operator()(const Ready& a, const Ready& b) const {
  // priority_queue pops the largest: deeper ops first, then the lower op
  // index, then the lower block.
  const PlannedOp& x = plan->ops()[a.task.op];
  const PlannedOp& y = plan->ops()[b.task.op];
  if (x.depth != y.depth) return x.depth < y.depth;
  if (a.task.op != b.task.op) return a.task.op > b.task.op;
  return a.task.block > b.task.block;
}

Scheduler::Scheduler(const Plan& plan, SchedulerOptions options)
    : plan_(plan),
      options_(std::move(options)),
      state_(plan.ops().size()),
      ready_(ReadyOrder{&plan}) {
  const int workers = std::max(1, options_.workers);
  if (options_.domain_capacity.empty()) {
    options_.domain_capacity = {plan.spec().total_system_mem};
    options_.worker_domain.assign(workers, 0);
  }
  STRATA_CHECK(static_cast<int>(options_.worker_domain.size()) >= workers)
      << "every worker needs a memory domain";
  for (int64_t capacity : options_.domain_capacity) domains_.push_back({capacity, 0, 0});
  heartbeat_.assign(workers, 0);
  worker_alive_.assign(workers, true);
  live_workers_ = workers;
  const PrunedTasks* pruned = options_.pruned.get();
  for (const PlannedOp& o : plan.ops()) {
    if (!o.materialized) continue;
    OpState& s = state_[o.index];
    // A sibling's blocks are done with its leader's tasks, pruned ones too.
    const int task_op = o.computed_with >= 0 ? o.computed_with : o.index;
    s.pruned = pruned ? pruned->count(task_op) : 0;
    s.done = s.pruned;
    s.started = s.pruned > 0;  // the dispatcher reported it started
    tasks_remaining_ += o.num_tasks() - (o.runs_tasks() ? s.pruned : 0);
    if (options_.backups.enabled && o.num_tasks() >= options_.backups.min_tasks) {
      s.durations = std::make_unique<Durations>();
    }
    if (o.dependencies.empty()) {
      s.cursor = true;
      if (pruned) s.next_block = pruned->NextLive(o.index, 0);
      if (s.next_block < o.num_tasks()) cursor_ops_.push_back(o.index);
      continue;
    }
    if (!MayHaveTasksWithoutInputs(o.index)) continue;
    // Rare (an output block that reads nothing of its inputs): find those
    // tasks once, keeping no state for the others.
    Shape block(o.node->grid.rank());
    for (Index b = 0; b < o.num_tasks(); ++b) {
      UnravelIndex(b, o.node->grid.grid_shape(), block);
      Index n = 0;
      for (const Dependency& d : o.dependencies) n += CountInputBlocks(d.map, block);
      if (n == 0 && !Pruned(o.index, b)) ready_.push({{o.index, b}});
    }
  }
}

bool Scheduler::MayHaveTasksWithoutInputs(int op_index) const {
  for (const Dependency& d : op(op_index).dependencies) {
    bool every_task_reads = true;
    for (const AxisMap& a : d.map.axes) every_task_reads = every_task_reads && a.min_inputs() > 0;
    if (every_task_reads) return false;
  }
  return true;
}

Shape Scheduler::Unravel(int op_index, Index linear) const {
  const ChunkGrid& grid = op(op_index).node->grid;
  Shape block(grid.rank());
  UnravelIndex(linear, grid.grid_shape(), block);
  return block;
}

int64_t Scheduler::LocalInputs(const TaskId& task, int worker) const {
  const PlannedOp& o = op(task.op);
  const Shape block = Unravel(task.op, task.block);
  int64_t local = 0;
  for (const Dependency& d : o.dependencies) {
    const auto& live = state_[d.producer].live;
    if (live.empty()) continue;
    const Shape& grid = op(d.producer).node->grid.grid_shape();
    ForEachInputBlock(d.map, block, [&](std::span<const Index> k) {
      auto it = live.find(LinearIndex(k, grid));
      if (it != live.end() && it->second.producer == worker) ++local;
    });
  }
  return local;
}

std::optional<Attempt> Scheduler::Next(int worker, bool* wake_others) {
  if (wake_others) *wake_others = false;
  if (worker < 0 || worker >= static_cast<int>(worker_alive_.size()) || !worker_alive_[worker]) {
    return std::nullopt;
  }
  // A backup goes first (its task holds up everything that reads it), on
  // another worker than its original's and where it fits.
  for (auto it = backups_.begin(); it != backups_.end(); ++it) {
    bool same_worker = false;
    for (const Running& r : running_) {
      same_worker = same_worker || (r.attempt.task == it->task && r.worker == worker);
    }
    const bool avoided = it->avoid == worker && live_workers_ > 1;
    if (same_worker || avoided || !Fits(*it, worker)) continue;
    Ready chosen = *it;
    backups_.erase(it);
    return Start(chosen, worker);
  }
  // The best candidate: the ready heap's top or the next block of a cursor op.
  bool have = false;
  Ready best;
  ReadyOrder later{&plan_};
  if (!ready_.empty()) {
    best = ready_.top();
    have = true;
  }
  int best_cursor = -1;
  for (int o : cursor_ops_) {
    Ready r{{o, state_[o].next_block}};
    if (!have || later(best, r)) {
      best = r;
      have = true;
      best_cursor = o;
    }
  }
  if (!have) return std::nullopt;
  // Locality: among the first few ready tasks of the best depth, the one with
  // the most inputs this worker produced.
  constexpr size_t kLocalityWindow = 8;
  std::vector<Ready> window;
  if (best_cursor < 0 && options_.locality && live_workers_ > 1) {
    const int depth = op(best.task.op).depth;
    while (!ready_.empty() && window.size() < kLocalityWindow &&
           op(ready_.top().task.op).depth == depth) {
      window.push_back(ready_.top());
      ready_.pop();
    }
    size_t chosen = 0;
    int64_t most = 0;
    for (size_t i = 0; i < window.size(); ++i) {
      const int64_t local = LocalInputs(window[i].task, worker);
      if (local > most) {
        most = local;
        chosen = i;
      }
    }
    std::swap(window[0], window[chosen]);
    best = window[0];
  }
  const bool avoided = best.avoid == worker && live_workers_ > 1;
  if (avoided || !Fits(best, worker)) {
    if (avoided && wake_others) *wake_others = true;
    for (const Ready& r : window) ready_.push(r);
    return std::nullopt;
  }
  if (best_cursor >= 0) {
    OpState& s = state_[best_cursor];
    ++s.next_block;
    if (options_.pruned) s.next_block = options_.pruned->NextLive(best_cursor, s.next_block);
    if (s.next_block >= op(best_cursor).num_tasks()) {
      cursor_ops_.erase(std::find(cursor_ops_.begin(), cursor_ops_.end(), best_cursor));
    }
  } else if (window.empty()) {
    ready_.pop();
  } else {
    for (size_t i = 1; i < window.size(); ++i) ready_.push(window[i]);
  }
  return Start(best, worker);
}

bool Scheduler::Fits(const Ready& ready, int worker) const {
  if (running_.empty()) return true;  // a plan always progresses
  const Domain& domain = domains_[options_.worker_domain[worker]];
  return domain.running_projected + op(ready.task.op).projected_mem + domain.resident <=
         domain.capacity;
}

Attempt Scheduler::Start(const Ready& ready, int worker) {
  Attempt a;
  a.task = ready.task;
  a.number = ready.attempts + 1;
  a.id = next_attempt_id_++;
  a.backup = ready.backup;
  OpState& s = state_[ready.task.op];
  a.first_of_op = !s.started;
  s.started = true;
  const int64_t projected = op(ready.task.op).projected_mem;
  running_.push_back({a, worker, projected, now_, false, ready.backup});
  domains_[options_.worker_domain[worker]].running_projected += projected;
  return a;
}

std::vector<Scheduler::Running>::iterator Scheduler::FindRunning(int64_t attempt_id) {
  return std::find_if(running_.begin(), running_.end(),
                      [&](const Running& r) { return r.attempt.id == attempt_id; });
}

std::vector<Scheduler::Running>::const_iterator Scheduler::FindRunning(
    int64_t attempt_id) const {
  return std::find_if(running_.begin(), running_.end(),
                      [&](const Running& r) { return r.attempt.id == attempt_id; });
}

bool Scheduler::AnyAttemptRunning(const TaskId& task) const {
  return std::any_of(running_.begin(), running_.end(),
                     [&](const Running& r) { return r.attempt.task == task; });
}

std::vector<DeadBlock> Scheduler::Stop(int64_t attempt_id) {
  auto it = FindRunning(attempt_id);
  STRATA_CHECK(it != running_.end()) << "attempt " << attempt_id << " is not running";
  domains_[options_.worker_domain[it->worker]].running_projected -= it->projected;
  const TaskId task = it->attempt.task;
  running_.erase(it);
  std::vector<DeadBlock> released;
  if (deferred_dead_.empty() || AnyAttemptRunning(task)) return released;
  std::erase_if(deferred_dead_, [&](const DeadBlock& d) {
    if (d.op != task.op || d.block != task.block) return false;
    released.push_back(d);
    return true;
  });
  return released;
}

void Scheduler::Kill(const DeadBlock& dead, std::vector<DeadBlock>* now) {
  // The block of task (op, block): while an attempt of that task runs (one
  // that was superseded), it may still publish the block; erase it after.
  // A sibling's block is produced by its group leader's task.
  const int task_op = op(dead.op).computed_with >= 0 ? op(dead.op).computed_with : dead.op;
  if (AnyAttemptRunning(TaskId{task_op, dead.block})) {
    deferred_dead_.push_back(dead);
  } else {
    now->push_back(dead);
  }
}

bool Scheduler::IsSuperseded(const Attempt& attempt) const {
  auto it = FindRunning(attempt.id);
  return it != running_.end() && it->lost;
}

Scheduler::Completion Scheduler::Succeeded(const Attempt& attempt, int worker) {
  Completion c;
  auto it = FindRunning(attempt.id);
  STRATA_CHECK(it != running_.end()) << "attempt " << attempt.id << " is not running";
  const bool lost = it->lost;
  const double seconds = now_ - it->start;
  if (lost) {
    c.duplicate = true;
    const PlannedOp& o = op(attempt.task.op);
    for (size_t m = 0; m <= o.siblings.size(); ++m) {
      const int produced = m == 0 ? attempt.task.op : o.siblings[m - 1];
      if (op(produced).tier != Tier::kNone) {
        c.duplicate_copies.push_back(DeadBlock{produced, attempt.task.block, worker, /*copy=*/true});
      }
    }
    c.dead = Stop(attempt.id);
    return c;
  }
  c.dead = Stop(attempt.id);
  // Other attempts of this task (a backup, or the original) are superseded.
  for (Running& r : running_) {
    if (r.attempt.task == attempt.task) {
      r.lost = true;
      c.superseded.push_back({r.worker, r.attempt.id});
    }
  }
  std::erase_if(backups_, [&](const Ready& b) { return b.task == attempt.task; });
  if (attempt.backup) ++backups_won_;
  if (state_[attempt.task.op].durations) state_[attempt.task.op].durations->Add(seconds);

  const TaskId& task = attempt.task;
  const PlannedOp& o = op(task.op);
  const Shape block = Unravel(task.op, task.block);
  --tasks_remaining_;

  // The task produced this block of its op and of each sibling computed in
  // its tasks: count each block's readers, and wake the tasks it completes.
  for (size_t m = 0; m <= o.siblings.size(); ++m) {
    const int produced = m == 0 ? task.op : o.siblings[m - 1];
    const PlannedOp& po = op(produced);
    OpState& s = state_[produced];
    if (++s.done == po.node->num_blocks()) c.finished_ops.push_back(produced);
    int64_t readers = 0;
    for (int consumer : po.consumers) {
      const PlannedOp& co = op(consumer);
      OpState& cs = state_[consumer];
      const Shape& out_grid = co.node->grid.grid_shape();
      for (const Dependency& d : co.dependencies) {
        if (d.producer != produced) continue;
        ForEachConsumer(d.map, block, out_grid, [&](std::span<const Index> b) {
          const Index linear = LinearIndex(b, out_grid);
          if (Pruned(consumer, linear)) return;  // a reader that does not run
          ++readers;
          auto [entry, fresh] = cs.pending.try_emplace(linear, 0);
          if (fresh) {
            // First input of this task: count all it waits for.
            Index n = 0;
            for (const Dependency& e : co.dependencies) n += CountInputBlocks(e.map, b);
            entry->second = static_cast<int32_t>(n);
          }
          if (--entry->second == 0) {
            cs.pending.erase(entry);
            ready_.push({{consumer, linear}});
          }
        });
      }
    }
    if (po.tier != Tier::kNone) {
      if (readers == 0) {
        Kill({produced, task.block, worker}, &c.dead);
      } else {
        LiveBlock& live = s.live[task.block];
        live.readers = static_cast<int32_t>(readers);
        live.producer = static_cast<int16_t>(worker);
      }
    }
  }

  // The blocks this task read: one reader fewer each.
  for (const Dependency& d : o.dependencies) {
    OpState& ps = state_[d.producer];
    const Shape& grid = op(d.producer).node->grid.grid_shape();
    ForEachInputBlock(d.map, block, [&](std::span<const Index> k) {
      const Index linear = LinearIndex(k, grid);
      auto live = ps.live.find(linear);
      STRATA_CHECK(live != ps.live.end())
          << "block " << linear << " of op " << d.producer << " read but not alive";
      if (--live->second.readers == 0) {
        Kill({d.producer, linear, live->second.producer}, &c.dead);
        ps.live.erase(live);
      }
    });
  }
  return c;
}

std::vector<DeadBlock> Scheduler::Requeue(const Attempt& attempt, int avoid) {
  auto it = FindRunning(attempt.id);
  STRATA_CHECK(it != running_.end()) << "attempt " << attempt.id << " is not running";
  const bool lost = it->lost;
  std::vector<DeadBlock> released = Stop(attempt.id);
  if (lost || AnyAttemptRunning(attempt.task)) return released;
  for (Ready& b : backups_) {
    if (b.task == attempt.task) {
      // The queued backup becomes the retry.
      b.attempts = std::max(b.attempts, attempt.number);
      b.avoid = avoid;
      return released;
    }
  }
  ready_.push({attempt.task, attempt.number, avoid});
  return released;
}

std::vector<DeadBlock> Scheduler::Abandon(const Attempt& attempt) { return Stop(attempt.id); }

std::vector<DeadBlock> Scheduler::WorkerLost(int worker, const Attempt& attempt, bool retry) {
  if (worker_alive_[worker]) {
    worker_alive_[worker] = false;
    --live_workers_;
  }
  // A queued backup of the attempt becomes its retry (Requeue).
  return retry ? Requeue(attempt, -1) : Stop(attempt.id);
}

bool Scheduler::AddBackup(const Attempt& running) {
  auto it = FindRunning(running.id);
  if (it == running_.end() || it->lost || it->backed || live_workers_ < 2) return false;
  for (const Running& r : running_) {
    if (r.attempt.task == running.task && r.attempt.id != running.id) return false;
  }
  for (const Ready& b : backups_) {
    if (b.task == running.task) return false;
  }
  it->backed = true;
  backups_.push_back({running.task, running.number, -1, true});
  ++backups_added_;
  return true;
}

void Scheduler::SetNow(double seconds) { now_ = std::max(now_, seconds); }

void Scheduler::Durations::Add(double seconds) {
  const double octaves = std::log2(std::max(seconds, kMinSeconds) / kMinSeconds);
  const int bin = std::clamp(static_cast<int>(octaves * kBinsPerOctave), 0,
                             static_cast<int>(bins.size()) - 1);
  ++bins[bin];
  ++count;
}

double Scheduler::Durations::Median() const {
  if (count == 0) return -1;
  int64_t seen = 0;
  for (size_t b = 0; b < bins.size(); ++b) {
    seen += bins[b];
    if (2 * seen >= count) {
      return kMinSeconds * std::exp2(static_cast<double>(b + 1) / kBinsPerOctave);
    }
  }
  return kMinSeconds * std::exp2(static_cast<double>(bins.size()) / kBinsPerOctave);
}

double Scheduler::MedianSeconds(int op_index) const {
  const auto& d = state_[op_index].durations;
  return d ? d->Median() : -1;
}

std::vector<Attempt> Scheduler::Stragglers() const {
  std::vector<Attempt> out;
  const BackupPolicy& policy = options_.backups;
  if (!policy.enabled || live_workers_ < 2) return out;
  for (const Running& r : running_) {
    if (r.lost || r.backed) continue;
    const OpState& s = state_[r.attempt.task.op];
    if (!s.durations) continue;
    // Of the tasks that run: pruned ones took no time.
    const int64_t tasks = op(r.attempt.task.op).num_tasks() - s.pruned;
    if (static_cast<double>(s.done - s.pruned) <
        policy.min_done_fraction * static_cast<double>(tasks)) {
      continue;
    }
    const double median = s.durations->Median();
    if (median < 0 || now_ - r.start <= policy.slowdown * median) continue;
    // Another attempt of it (a retry racing) would make this one no straggler.
    bool alone = true;
    for (const Running& q : running_) {
      alone = alone && (q.attempt.task != r.attempt.task || q.attempt.id == r.attempt.id);
    }
    if (alone) out.push_back(r.attempt);
  }
  return out;
}

void Scheduler::Heartbeat(int worker, double now) { heartbeat_[worker] = now; }

std::vector<int> Scheduler::SilentWorkers(double now, double timeout) const {
  std::vector<int> silent;
  for (const Running& r : running_) {
    if (!worker_alive_[r.worker]) continue;
    if (now - heartbeat_[r.worker] > timeout &&
        std::find(silent.begin(), silent.end(), r.worker) == silent.end()) {
      silent.push_back(r.worker);
    }
  }
  return silent;
}

void Scheduler::SetResident(int domain, int64_t bytes) { domains_[domain].resident = bytes; }

int Scheduler::ProducerOf(int op_index, Index block) const {
  const auto& live = state_[op_index].live;
  auto it = live.find(block);
  return it == live.end() ? -1 : it->second.producer;
}

bool Scheduler::stalled() const {
  return tasks_remaining_ > 0 && running_.empty() && ready_.empty() && cursor_ops_.empty() &&
         backups_.empty();
}

int64_t Scheduler::state_entries() const {
  int64_t n = 0;
  for (const OpState& s : state_) n += static_cast<int64_t>(s.pending.size() + s.live.size());
  return n;
}

}  // namespace strata
