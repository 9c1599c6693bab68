#include "strata/runtime/dispatcher.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "strata/base/byte_size.h"
#include "strata/base/thread_annotations.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/runtime/commit_target.h"
#include "strata/runtime/object_tier.h"
#include "strata/storage/open_store.h"
#include "strata/storage/store.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {

int64_t CurrentRss() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long long size = 0, resident = 0;
  int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * ::sysconf(_SC_PAGESIZE) : 0;
}

std::unique_ptr<Dispatcher> MakeDispatcher(const Plan& plan, const ComputeOptions& options) {
  switch (plan.spec().executor) {
    case ExecutorKind::kInline: return MakeInlineDispatcher(plan, options);
    case ExecutorKind::kThreads: return MakeThreadDispatcher(plan, options);
    case ExecutorKind::kProcesses: return MakeProcessDispatcher(plan, options);
    case ExecutorKind::kMpi: return MakeMpiDispatcher(plan, options);
    case ExecutorKind::kDask:
    case ExecutorKind::kRay: return MakeExternalDispatcher(plan, options);
  }
  return MakeThreadDispatcher(plan, options);
}

Dispatcher::Dispatcher(const Plan& plan, const ComputeOptions& options)
    : plan_(plan), spec_(plan.spec()), options_(options), tiers_(plan.ops().size()) {}

Dispatcher::~Dispatcher() = default;

void Dispatcher::Notify(const std::function<void(Callback&)>& fn) {
  if (!callbacks_here_) return;
  MutexLock lock(&callback_mu_);
  for (const auto& cb : options_.callbacks) fn(*cb);
}

Shape Dispatcher::Unravel(const TaskId& task) const {
  const ChunkGrid& grid = plan_.ops()[task.op].node->grid;
  Shape block(grid.rank());
  UnravelIndex(task.block, grid.grid_shape(), block);
  return block;
}

Status Dispatcher::Prepare() {
  STRATA_RETURN_IF_ERROR(
      PrepareResults(spec_.total_system_mem, plan_.ram_tier_capacity(), spec_.workers));
  STRATA_RETURN_IF_ERROR(OpenTargets(/*commit_empty=*/true));
  return MakeTiers();
}

Status Dispatcher::PrepareResults(int64_t memory, int64_t ram_tier, int task_slots,
                                  bool allocate_results) {
  root_pool_ = MemoryPool::Default()->NewChild({"compute", memory});
  // Measured (tests/interop/test_memory.py, threads): with idle buffers
  // allowed up to total_system_mem the process went ~30 MB past it, its
  // baseline beside a full allocator.
  const int64_t task_budget = spec_.task_budget();
  held_limit_ = root_pool_->allocator()->LimitHeld(
      std::max(memory - std::max(task_slots, 1) * spec_.reserved_mem, task_budget));
  tier_pool_ = root_pool_->NewChild({"memory tier", 0});
  ram_budget_ = std::make_shared<RamBudget>(ram_tier);
  results_.resize(plan_.outputs().size());
  result_views_.resize(plan_.outputs().size());
  if (!allocate_results) return Status::Ok();
  for (size_t slot = 0; slot < plan_.outputs().size(); ++slot) {
    const PlannedOp& op = plan_.ops()[plan_.outputs()[slot]];
    if (op.node->kind == NodeKind::kStore) continue;
    STRATA_ASSIGN_OR_RETURN(NDArray a,
                            NDArray::Allocate(*root_pool_, op.node->dtype, op.node->shape));
    result_views_[slot] = a.view();
    results_[slot] = std::move(a);
  }
  return Status::Ok();
}

Status Dispatcher::OpenTargets(bool commit_empty) {
  // Store targets are created now, after the plan was accepted.
  for (const PlannedOp& op : plan_.ops()) {
    if (op.node->kind != NodeKind::kStore) continue;
    STRATA_RETURN_IF_ERROR(op.node->target->Open());
    if (op.num_tasks() == 0 && commit_empty) {
      STRATA_RETURN_IF_ERROR(CommitTarget(plan_, *op.node));
    }
  }
  return Status::Ok();
}

Status Dispatcher::MakeTiers() {
  for (const PlannedOp& op : plan_.ops()) {
    if (!op.materialized) continue;
    std::unique_ptr<IntermediateStore>& tier = tiers_[op.index];
    switch (op.tier) {
      case Tier::kNone:
        break;
      case Tier::kMemory: {
        STRATA_ASSIGN_OR_RETURN(tier, MakeMemoryTier(op));
        break;
      }
      case Tier::kDisk: {
        STRATA_RETURN_IF_ERROR(MakeRunDir(/*create=*/true));
        STRATA_ASSIGN_OR_RETURN(
            tier, DiskIntermediateStore::Create(fmt::format("{}/{}-int", run_dir_, StoreName(op)),
                                                op.node->grid, op.node->dtype, op.stored_grid));
        break;
      }
      case Tier::kObject: {
        STRATA_RETURN_IF_ERROR(MakeRunDir(/*create=*/false));
        if (!object_store_) {
          STRATA_ASSIGN_OR_RETURN(StoreAndPrefix at,
                                  OpenStoreUrl(spec_.object_store_url, /*create=*/true));
          object_store_ = std::move(at.store);
          object_prefix_ =
              JoinKey(at.prefix, std::filesystem::path(run_dir_).filename().string());
          if (run_directory_) {  // the run's owner (under mpi: rank 0)
            ReclaimDeadObjectRuns(*object_store_, at.prefix).status().IgnoreError();
            STRATA_RETURN_IF_ERROR(WriteObjectRunOwner(*object_store_, object_prefix_));
          }
        }
        tier = std::make_unique<ObjectIntermediateStore>(
            object_store_, JoinKey(object_prefix_, StoreName(op)), op.node->grid,
            op.node->dtype, op.stored_grid);
        break;
      }
    }
  }
  runner_ = std::make_unique<TaskRunner>(plan_, tiers_, result_views_, root_pool_, options_,
                                         start_);
  return Status::Ok();
}

Status Dispatcher::MakeRunDir(bool create) {
  if (run_dir_.empty()) {
    std::string base = spec_.work_dir;
    if (base.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      base = tmp && *tmp ? tmp : "/tmp";
    }
    std::error_code ec;
    if (!std::filesystem::exists(base, ec)) created_work_dir_ = true;
    // What dead runs left goes first; ours is locked for as long as we live.
    ReclaimDeadRunDirectories(base).status().IgnoreError();
    Result<std::unique_ptr<RunDirectory>> dir = RunDirectory::Create(base);
    if (!dir.ok()) return dir.status().WithContext("work_dir");
    run_directory_ = std::move(dir).value();
    run_dir_ = run_directory_->path();
    made_run_dir_ = true;
  }
  if (create && !made_run_dir_) {
    std::error_code ec;
    std::filesystem::create_directories(run_dir_, ec);
    if (ec) {
      return ErrnoToStatus(ec.value(), fmt::format("creating work_dir {}", run_dir_))
          .WithContext("work_dir");
    }
    made_run_dir_ = true;
  }
  return Status::Ok();
}

Status Dispatcher::SkipPrunedTasks() {
  pruned_ = PrunedTasks::ForRun(plan_);
  if (!pruned_) return Status::Ok();
  Status first;
  TaskFigures figures;
  figures.skipped = true;
  figures.start_seconds = figures.end_seconds = Seconds(Clock::now());
  for (const PlannedOp& op : plan_.ops()) {
    const int64_t count = pruned_->count(op.index);
    if (count == 0) continue;
    std::vector<const PlannedOp*> members = {&op};
    for (int sibling : op.siblings) members.push_back(&plan_.ops()[sibling]);
    Notify([&](Callback& cb) {
      for (const PlannedOp* m : members) cb.OnOpStart(*m);
    });
    Attempt attempt;
    attempt.task.op = op.index;
    attempt.number = 0;
    for (Index b = 0; b < op.num_tasks(); ++b) {
      if (!pruned_->pruned(op.index, b)) continue;
      attempt.task.block = b;
      NotifyTaskEnd(attempt, /*worker=*/-1, /*attempts=*/0, figures);
    }
    {
      MutexLock lock(&mu_);
      tasks_done_ += count;
      tasks_skipped_ += count;
    }
    if (count < op.num_tasks()) continue;  // the Scheduler finishes it
    for (const PlannedOp* m : members) {
      if (m->node->kind == NodeKind::kStore && first.ok()) first = CommitTarget(plan_, *m->node);
      Notify([&](Callback& cb) { cb.OnOpEnd(*m); });
    }
  }
  return first;
}

SchedulerOptions Dispatcher::MakeSchedulerOptions() const {
  SchedulerOptions o;
  o.workers = spec_.workers;
  return o;
}

void Dispatcher::CountProduced(const Attempt& /*attempt*/, int /*worker*/,
                               const TaskFigures& /*figures*/, bool /*duplicate*/) {
  // Every memory tier of this process draws on ram_budget_: its use is the
  // residency, exact whatever Puts and Erases run at the same time (a
  // duplicate's publish-once Put took nothing).
  resident_ = ram_budget_ ? ram_budget_->used() : 0;
  peak_resident_ = std::max(peak_resident_, resident_);
  scheduler_->SetResident(0, resident_);
}

void Dispatcher::CountErased(const DeadBlock& /*block*/) {
  resident_ = ram_budget_ ? ram_budget_->used() : 0;
  scheduler_->SetResident(0, resident_);
}

void Dispatcher::NotifyTaskEnd(const Attempt& attempt, int worker, int attempts,
                               const TaskFigures& figures) {
  const PlannedOp& op = plan_.ops()[attempt.task.op];
  TaskEndEvent event;
  event.op = &op;
  event.op_name = op.node->op_name;
  event.block = Unravel(attempt.task);
  event.start_seconds = figures.start_seconds;
  event.end_seconds = figures.end_seconds;
  event.projected_mem = op.projected_mem;
  event.measured_peak = figures.measured_peak;
  event.skipped = figures.skipped;
  event.worker_rss = figures.worker_rss;
  event.attempts = attempts;
  event.worker = worker;
  event.backup = attempt.backup;
  Notify([&](Callback& cb) { cb.OnTaskEnd(event); });
}

Status Dispatcher::WithTaskContext(const TaskId& task, Status s, int attempts) const {
  const PlannedOp& op = plan_.ops()[task.op];
  std::string tries = attempts > 1 ? fmt::format(" after {} attempts", attempts) : "";
  return s.WithContext(fmt::format("task {} of {} ({}){}", JoinIndices(Unravel(task), '.'),
                                   op.node->op_name, op.node->name, tries));
}

AttemptOutcome Dispatcher::RunWithRetries(const Attempt& attempt, int worker) {
  Attempt a = attempt;
  const std::function<bool()> superseded = SupersededCheck(worker, attempt.id);
  while (true) {
    AttemptOutcome out = RunAttempt(a, worker);
    if (out.attempts == 0) out.attempts = a.number;
    if (out.status.ok() || out.worker_lost || RetryElsewhere()) return out;
    if (!IsRetryable(out.status) || out.attempts > spec_.retries) return out;
    if (superseded && superseded()) return out;  // nothing left to retry for
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * out.attempts));
    a.number = out.attempts + 1;
  }
}

bool Dispatcher::LaunchBackups() {
  bool any = false;
  for (const Attempt& straggler : scheduler_->Stragglers()) any |= scheduler_->AddBackup(straggler);
  return any;
}

void Dispatcher::MarkSuperseded(const Superseded& s) {
  if (superseded_board_ && s.worker >= 0) superseded_board_[s.worker].store(s.attempt_id);
}

std::function<bool()> Dispatcher::SupersededCheck(int worker, int64_t attempt_id) const {
  std::atomic<int64_t>* board = superseded_board_;
  if (!board) return {};
  return [board, worker, attempt_id] { return board[worker].load() == attempt_id; };
}

Status Dispatcher::EraseDead(const std::vector<DeadBlock>& dead) {
  if (dead.empty()) return Status::Ok();
  mu_.Unlock();
  Status first;
  for (const DeadBlock& d : dead) {
    Status e = EraseBlock(d);
    if (!e.ok() && first.ok()) first = e;
  }
  mu_.Lock();
  for (const DeadBlock& d : dead) CountErased(d);
  return first;
}

void Dispatcher::WorkerLoop(int worker) {
  const bool backups = scheduler_options_.backups.enabled;
  MutexLock lock(&mu_);
  while (true) {
    if (!fatal_.ok() || scheduler_->done()) break;
    if (options_.cancel && options_.cancel->load()) {
      fatal_ = CancelledError(
          fmt::format("compute cancelled with {} tasks left", scheduler_->tasks_remaining()));
      cv_.SignalAll();
      break;
    }
    scheduler_->SetNow(Seconds(Clock::now()));
    bool wake = false;
    std::optional<Attempt> attempt = scheduler_->Next(worker, &wake);
    if (!attempt) {
      if (wake) cv_.SignalAll();  // the task waits for another worker
      if (scheduler_->stalled()) {
        fatal_ = InternalError(fmt::format("scheduler stalled with {} tasks left and none ready",
                                           scheduler_->tasks_remaining()));
        cv_.SignalAll();
        break;
      }
      if (scheduler_->live_workers() == 0) break;
      if (backups && LaunchBackups()) {
        cv_.SignalAll();
        continue;  // this worker may take one
      }
      if (backups && scheduler_->running() > 0) {
        cv_.WaitFor(&mu_, kBackupTick);  // and look for stragglers again
      } else {
        cv_.Wait(&mu_);
      }
      continue;
    }
    lock.Unlock();
    const PlannedOp& op = plan_.ops()[attempt->task.op];
    if (attempt->first_of_op) {
      Notify([&](Callback& cb) {
        cb.OnOpStart(op);
        for (int sibling : op.siblings) cb.OnOpStart(plan_.ops()[sibling]);
      });
    }
    AttemptOutcome out = RunWithRetries(*attempt, worker);
    lock.Lock();
    scheduler_->SetNow(Seconds(Clock::now()));
    Attempt spent = *attempt;
    spent.number = out.attempts;
    if (scheduler_->IsSuperseded(*attempt)) {
      // Its task is done: whatever this attempt came to (a result the
      // publish-once tiers discarded, a failure on inputs erased under it,
      // the Aborted of TaskRunner's superseded check) changes nothing.
      std::vector<DeadBlock> dead;
      if (out.worker_lost) {
        dead = scheduler_->WorkerLost(worker, spent, /*retry=*/false);
      } else if (out.status.ok()) {
        Scheduler::Completion c = scheduler_->Succeeded(*attempt, worker);
        CountProduced(*attempt, worker, out.figures, /*duplicate=*/true);
        dead = std::move(c.dead);
        for (const DeadBlock& copy : c.duplicate_copies) {
          if (KeepsPrivateCopies(plan_.ops()[copy.op])) dead.push_back(copy);
        }
      } else {
        dead = scheduler_->Abandon(*attempt);
      }
      Status erased = EraseDead(dead);
      if (!erased.ok() && fatal_.ok()) fatal_ = erased;
      if (out.worker_lost && scheduler_->live_workers() == 0 && fatal_.ok() &&
          !scheduler_->done()) {
        fatal_ = AllWorkersLost();
      }
      cv_.SignalAll();
      if (out.worker_lost) break;
      continue;
    }
    if (!out.status.ok() && !out.worker_lost && RetryElsewhere() && IsRetryable(out.status) &&
        out.attempts <= spec_.retries) {
      Status erased = EraseDead(scheduler_->Requeue(spent, worker));
      if (!erased.ok() && fatal_.ok()) fatal_ = erased;
      cv_.SignalAll();
      continue;
    }
    if (out.worker_lost) {
      // This worker is gone: its task goes back to the queue for another (an
      // attempt spent), unless it has used up its retries.
      std::vector<DeadBlock> dead = scheduler_->WorkerLost(worker, spent, out.status.ok());
      if (!out.status.ok() && fatal_.ok()) {
        fatal_ = WithTaskContext(attempt->task, out.status, out.attempts);
      }
      Status erased = EraseDead(dead);
      if (!erased.ok() && fatal_.ok()) fatal_ = erased;
      if (scheduler_->live_workers() == 0 && fatal_.ok() && !scheduler_->done()) {
        fatal_ = AllWorkersLost();
      }
      cv_.SignalAll();
      break;
    }
    if (!out.status.ok()) {
      std::vector<DeadBlock> dead = scheduler_->Abandon(*attempt);
      if (fatal_.ok()) fatal_ = WithTaskContext(attempt->task, out.status, out.attempts);
      EraseDead(dead).IgnoreError();
      cv_.SignalAll();
      continue;
    }
    Scheduler::Completion done = scheduler_->Succeeded(*attempt, worker);
    CountProduced(*attempt, worker, out.figures, /*duplicate=*/false);
    for (const Superseded& loser : done.superseded) MarkSuperseded(loser);
    ++tasks_done_;
    zarr_bytes_read_ += out.figures.zarr_bytes_read;
    if (out.figures.skipped) ++tasks_skipped_;
    lock.Unlock();
    NotifyTaskEnd(*attempt, worker, out.attempts, out.figures);
    Status post;
    for (int f : done.finished_ops) {
      const PlannedOp& finished = plan_.ops()[f];
      if (finished.node->kind == NodeKind::kStore && post.ok()) {
        post = CommitTarget(plan_, *finished.node);
      }
      Notify([&](Callback& cb) { cb.OnOpEnd(finished); });
    }
    lock.Lock();
    Status erased = EraseDead(done.dead);
    if (post.ok()) post = erased;
    if (!post.ok() && fatal_.ok()) fatal_ = post;
    cv_.SignalAll();
  }
}

Status Dispatcher::EraseBlock(const DeadBlock& dead) {
  const ChunkGrid& grid = plan_.ops()[dead.op].node->grid;
  Shape block(grid.rank());
  UnravelIndex(dead.block, grid.grid_shape(), block);
  return tiers_[dead.op]->Erase(block);
}

Status Dispatcher::AllWorkersLost() {
  return UnavailableError(fmt::format("all {} workers were lost with {} tasks left",
                                      spec_.workers, scheduler_->tasks_remaining()));
}

Status Dispatcher::DriveWorkers(int workers) {
  STRATA_RETURN_IF_ERROR(SkipPrunedTasks());
  {
    MutexLock lock(&mu_);
    scheduler_options_ = MakeSchedulerOptions();
    scheduler_options_.pruned = pruned_;
    BackupPolicy& backups = scheduler_options_.backups;
    backups.enabled = spec_.backup_tasks && RunsBackups() && workers > 1;
    backups.slowdown = spec_.backup_slowdown;
    scheduler_ = std::make_unique<Scheduler>(plan_, scheduler_options_);
    if (!superseded_board_) {
      local_board_ = std::make_unique<std::atomic<int64_t>[]>(std::max(1, workers));
      superseded_board_ = local_board_.get();
    }
  }
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) threads.emplace_back([this, w] { WorkerLoop(w); });
  WorkerLoop(0);
  for (auto& t : threads) t.join();
  MutexLock lock(&mu_);
  return fatal_;
}

int64_t Dispatcher::TierBytesWritten() const {
  int64_t total = 0;
  for (const auto& tier : tiers_) {
    if (tier) total += tier->bytes_written();
  }
  return total;
}

Status Dispatcher::Finish(ComputeSummary* summary) {
  MutexLock lock(&mu_);  // the workers are gone; the lock is for the analysis
  summary->intermediate_bytes_written = TierBytesWritten() + worker_disk_bytes_;
  summary->tasks = tasks_done_;
  summary->tasks_skipped = tasks_skipped_;
  summary->zarr_bytes_read = zarr_bytes_read_;
  summary->peak_pool_bytes = root_pool_ ? root_pool_->peak_bytes() : 0;
  summary->peak_resident_intermediate_bytes = peak_resident_;
  if (scheduler_) {
    summary->backup_attempts = scheduler_->backups_added();
    summary->backups_won = scheduler_->backups_won();
  }
  summary->hung_workers_killed = hung_workers_killed_;
  return Status::Ok();
}

Status Dispatcher::Cleanup() {
  Status first = CleanupTiers();
  Status removed = RemoveRunDir();
  return first.ok() ? removed : first;
}

Status Dispatcher::CleanupTiers() {
  Status first;
  for (auto& tier : tiers_) {
    if (!tier) continue;
    Status c = tier->Cleanup();
    if (!c.ok() && first.ok()) first = c;
    tier.reset();
  }
  return first;
}

Status Dispatcher::RemoveRunDir() {
  Status first;
  // The object tier's blocks are gone (CleanupTiers): its owner record next.
  if (object_store_ && run_directory_) {
    first = RemoveObjectRunOwner(*object_store_, object_prefix_);
  }
  if (!run_dir_.empty() && std::filesystem::exists(run_dir_)) {
    std::error_code ec;
    std::filesystem::remove_all(run_dir_, ec);
    if (ec && first.ok()) first = ErrnoToStatus(ec.value(), fmt::format("removing {}", run_dir_));
    if (created_work_dir_) {
      std::filesystem::path parent = std::filesystem::path(run_dir_).parent_path();
      if (std::filesystem::is_empty(parent, ec)) std::filesystem::remove(parent, ec);
    }
  }
  run_directory_.reset();  // releases the lock
  return first;
}

Result<ComputeResult> Dispatcher::Execute() {
  start_ = Clock::now();
  Notify([&](Callback& cb) { cb.OnComputeStart(plan_); });
  Status status = Prepare();
  if (status.ok()) status = RunTasks();
  // A failed run leaves its outputs incomplete, to be resumed: what they
  // know of chunks skipped as fill goes to the store now (the run's error
  // is the one reported).
  if (!status.ok()) FlushFillJournals(plan_).IgnoreError();
  ComputeSummary summary;
  Status finished = Finish(&summary);
  if (status.ok()) status = finished;
  Status cleanup = Cleanup();
  if (status.ok()) status = cleanup;
  summary.seconds = Seconds(Clock::now());
  Notify([&](Callback& cb) { cb.OnComputeEnd(plan_, status, summary); });
  if (!status.ok()) return status;
  // An array requested twice was computed once, into its first slot.
  for (size_t slot = 0; slot < plan_.outputs().size(); ++slot) {
    const PlannedOp& op = plan_.ops()[plan_.outputs()[slot]];
    if (op.output_slot >= 0 && op.output_slot != static_cast<int>(slot)) {
      STRATA_ASSIGN_OR_RETURN(
          results_[slot],
          NDArray::CopyOf(*MemoryPool::Default(), results_[op.output_slot]->view()));
    }
  }
  ComputeResult result;
  result.arrays = std::move(results_);
  result.summary = summary;
  return result;
}

}  // namespace strata
