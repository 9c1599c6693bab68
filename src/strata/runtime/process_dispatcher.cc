// The processes executor's dispatcher.
//
// After the plan's tiers exist and before any thread starts, the calling
// process (the coordinator) forks spec.workers worker processes, which
// inherit the plan, its closures, the tiers and the TaskRunner. The
// coordinator keeps the Scheduler; one proxy thread per worker sends it
// (op, block, attempt) over a socketpair and waits for a fixed-size reply
// (status, times, the task pool's peak, bytes written to disk, the worker's
// RSS). Workers run tasks exactly as threads do and never call callbacks.
//
// Memory-tier intermediates live in one ShmStore created before the fork
// (ShmIntermediateStore: readers get pinned zero-copy views); disk-tier ones
// in files; results of compute() in a shared mapping the workers write and
// the coordinator copies out at the end. No other chunk data passes through
// the coordinator. Residency for admission is the ShmStore's usage. A ready
// task prefers the worker that produced its inputs (locality).
//
// A worker that dies (kill -9, crash) is reaped, its pins and unsealed
// objects reclaimed, and its task retried on another worker (one attempt
// spent); workers are not replaced, and the compute fails with Unavailable
// only when all of them are dead. Workers exit when the compute ends (their
// socket closes) or their coordinator dies (PR_SET_PDEATHSIG). The fork
// happens in the calling thread: other threads of the caller's process must
// not hold locks the workers need (malloc's are safe under glibc).
//
// Hung workers: each worker has a heartbeat thread of its own that counts
// beats in a page shared with the coordinator (the board) every heartbeat_timeout / 10, whatever
// its task is doing, so a long task is never taken for a hung worker. The
// proxy waits for the reply in slices (poll) and reads the count between
// them; a worker whose count has not moved for heartbeat_timeout (stopped
// with SIGSTOP, frozen, its process starved) is killed with SIGKILL and
// handled as a dead one: reaped, reclaimed, its task retried elsewhere.
//
// Backups: a straggler's backup runs on another worker; when one of the two
// attempts completes the task, the board tells the other's worker, whose
// TaskRunner then publishes nothing. A worker still running a superseded
// attempt when the compute is over is killed rather than waited for (it may
// be stuck for good), which costs nothing: the compute needs no more workers.
#include <fmt/format.h>
#include <signal.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <new>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "strata/base/byte_size.h"
#include "strata/base/thread_annotations.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/runtime/commit_target.h"
#include "strata/runtime/dispatcher.h"
#include "strata/runtime/shm_store.h"
#include "strata/runtime/task_wire_internal.h"

namespace strata {
namespace {

using internal_runtime::WireReply;
using internal_runtime::WireRequest;

// One worker process, as the coordinator sees it.
struct WorkerProcess {
  pid_t pid = -1;
  int fd = -1;  // the coordinator's end of the socketpair
  bool alive = false;
  int64_t pool_peak = 0;
  uint64_t beats_seen = ~uint64_t{0};  // the board's count when last read
};

// The board shared with the workers (mapped before the fork): 2 x workers
// counters; first, per worker, the attempt id the coordinator found
// superseded (Dispatcher::superseded_board_), then the heartbeat count its
// heartbeat thread keeps moving.
size_t BoardBytes(int workers) {
  return sizeof(std::atomic<int64_t>) * 2 * static_cast<size_t>(workers);
}

Result<std::atomic<int64_t>*> MapBoard(int workers) {
  void* map =
      ::mmap(nullptr, BoardBytes(workers), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return ErrnoToStatus(errno, "mapping the worker board");
  auto* slots = static_cast<std::atomic<int64_t>*>(map);
  for (int i = 0; i < 2 * workers; ++i) new (&slots[i]) std::atomic<int64_t>(0);
  return slots;
}

bool WriteFully(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// False on EOF or error (the peer is gone).
bool ReadFully(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::string DescribeExit(int wstatus) {
  if (WIFSIGNALED(wstatus)) {
    return fmt::format("was killed by signal {} ({})", WTERMSIG(wstatus),
                       ::strsignal(WTERMSIG(wstatus)));
  }
  if (WIFEXITED(wstatus)) return fmt::format("exited with status {}", WEXITSTATUS(wstatus));
  return "died";
}

class ProcessDispatcher : public Dispatcher {
 public:
  using Dispatcher::Dispatcher;
  ~ProcessDispatcher() override {
    if (result_map_) ::munmap(result_map_, result_map_size_);
    if (board_) ::munmap(board_, BoardBytes(spec_.workers));
  }

 protected:
  Status Prepare() override;
  Status RunTasks() override;
  Status Finish(ComputeSummary* summary) override;
  Status Cleanup() override;
  Result<std::unique_ptr<IntermediateStore>> MakeMemoryTier(const PlannedOp& op) override;
  AttemptOutcome RunAttempt(const Attempt& attempt, int worker) override;
  void CountProduced(const Attempt& attempt, int worker, const TaskFigures& figures,
                     bool duplicate) override STRATA_REQUIRES(mu_);
  void CountErased(const DeadBlock& block) override STRATA_REQUIRES(mu_);
  Status AllWorkersLost() override STRATA_REQUIRES(mu_);
  SchedulerOptions MakeSchedulerOptions() const override {
    SchedulerOptions o = Dispatcher::MakeSchedulerOptions();
    o.locality = true;
    return o;
  }

 private:
  // Results in one shared mapping, and the ShmStore of the memory tier.
  Status PrepareShared();
  Status StartWorkerProcesses(int count);
  [[noreturn]] void ChildMain(int fd, int worker);
  void StopWorkerProcesses();
  // Waits for `worker`'s reply to `attempt`, watching its heartbeat; kills
  // it when it is hung, or runs a superseded attempt after the compute is
  // over. False when the worker is gone (*why says how, when it was killed).
  bool AwaitReply(const Attempt& attempt, int worker, WireReply* reply, std::string* why)
      STRATA_EXCLUDES(mu_);

  std::unique_ptr<ShmStore> shm_;
  std::byte* result_map_ = nullptr;  // MAP_SHARED
  size_t result_map_size_ = 0;
  std::vector<WorkerProcess> procs_;  // each entry touched only by its proxy thread
  std::atomic<int64_t>* board_ = nullptr;  // MAP_SHARED (MapBoard)
  std::atomic<int64_t>& beats(int worker) { return board_[spec_.workers + worker]; }
  pid_t coordinator_pid_ = 0;
  std::string last_death_ STRATA_GUARDED_BY(mu_);  // the last worker death, for the error
};

Status ProcessDispatcher::Prepare() {
  STRATA_RETURN_IF_ERROR(PrepareResults(spec_.total_system_mem, plan_.ram_tier_capacity(),
                                        spec_.workers, /*allocate_results=*/false));
  STRATA_RETURN_IF_ERROR(PrepareShared());
  STRATA_RETURN_IF_ERROR(OpenTargets(/*commit_empty=*/true));
  return MakeTiers();
}

Status ProcessDispatcher::PrepareShared() {
  const auto& ops = plan_.ops();
  // Results: in one shared mapping the workers write their blocks into; the
  // coordinator copies them out at the end. (An array requested twice is
  // computed once, into its first slot.)
  std::vector<size_t> offsets(plan_.outputs().size(), 0);
  size_t total = 0;
  for (size_t slot = 0; slot < plan_.outputs().size(); ++slot) {
    const PlannedOp& op = ops[plan_.outputs()[slot]];
    if (op.node->kind == NodeKind::kStore || op.output_slot != static_cast<int>(slot)) continue;
    offsets[slot] = total;
    total += (static_cast<size_t>(op.node->nbytes()) + 63) / 64 * 64;
  }
  if (total > 0) {
    void* map = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
      return ErrnoToStatus(errno, fmt::format("mapping {} of shared memory for the results",
                                              FormatBytes(static_cast<int64_t>(total))));
    }
    result_map_ = static_cast<std::byte*>(map);
    result_map_size_ = total;
  }
  for (size_t slot = 0; slot < plan_.outputs().size(); ++slot) {
    const PlannedOp& op = ops[plan_.outputs()[slot]];
    if (op.node->kind == NodeKind::kStore || op.output_slot != static_cast<int>(slot)) continue;
    result_views_[slot] =
        ArrayView::Contiguous(result_map_ + offsets[slot], op.node->dtype, op.node->shape);
  }
  // The memory tier: one ShmStore for every memory-tier op, spilling (only
  // what does not fit, as the threads memory tier does) under the run dir.
  int64_t blocks = 0;
  bool any = false;
  for (const PlannedOp& op : ops) {
    if (op.materialized && op.tier == Tier::kMemory) {
      any = true;
      blocks += op.node->num_blocks();
    }
  }
  if (!any) return Status::Ok();
  STRATA_RETURN_IF_ERROR(MakeRunDir(/*create=*/true));
  ShmStoreOptions options;
  options.name = "memory tier";
  options.max_objects = static_cast<int32_t>(std::clamp<int64_t>(blocks, 1024, 1 << 18));
  // Objects take whole pages: room for each one's last partial page.
  options.capacity = std::max<int64_t>(
      plan_.ram_tier_capacity() + 4096 * std::min<int64_t>(blocks, options.max_objects),
      int64_t{1} << 20);
  options.spill_dir = run_dir_;
  options.high_water = 1.0;
  options.low_water = 1.0;
  STRATA_ASSIGN_OR_RETURN(shm_, ShmStore::Create(options));
  return Status::Ok();
}

Result<std::unique_ptr<IntermediateStore>> ProcessDispatcher::MakeMemoryTier(
    const PlannedOp& op) {
  return std::unique_ptr<IntermediateStore>(std::make_unique<ShmIntermediateStore>(
      op.node->name, op.index, op.node->grid, op.node->dtype, shm_.get(),
      fmt::format("{}/{}-spill", run_dir_, op.node->name)));
}

Status ProcessDispatcher::RunTasks() {
  // Worker processes are forked here, after the plan and tiers exist and
  // before any thread starts (they inherit both; forking a multithreaded
  // process is unsafe).
  Status status = StartWorkerProcesses(spec_.workers);
  if (status.ok()) status = DriveWorkers(spec_.workers);
  StopWorkerProcesses();
  if (!status.ok()) return status;
  // Every worker is gone: one killed after its array was committed (a
  // straggler whose task a backup finished) left its temporary file too.
  STRATA_RETURN_IF_ERROR(ReclaimDeadWritersFiles(plan_));
  // The results, out of the shared mapping.
  for (size_t slot = 0; slot < plan_.outputs().size(); ++slot) {
    const PlannedOp& op = plan_.ops()[plan_.outputs()[slot]];
    if (op.node->kind == NodeKind::kStore || op.output_slot != static_cast<int>(slot)) continue;
    Result<NDArray> a = NDArray::Allocate(*root_pool_, op.node->dtype, op.node->shape);
    if (!a.ok()) return a.status().WithContext("copying the results");
    if (a->nbytes() > 0) CopyArray(result_views_[slot], a->view());
    results_[slot] = std::move(a).value();
  }
  return Status::Ok();
}

Status ProcessDispatcher::StartWorkerProcesses(int count) {
  coordinator_pid_ = ::getpid();
  STRATA_ASSIGN_OR_RETURN(board_, MapBoard(count));
  superseded_board_ = board_;
  std::vector<std::array<int, 2>> pairs(count, {-1, -1});
  for (auto& pair : pairs) {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair.data()) != 0) {
      const int e = errno;
      for (auto& q : pairs) {
        for (int fd : q) {
          if (fd >= 0) ::close(fd);
        }
      }
      return ErrnoToStatus(e, "creating a socket pair for a worker process");
    }
  }
  std::fflush(nullptr);  // or the children would flush the parent's buffered output again
  procs_.resize(count);
  Status status;
  for (int w = 0; w < count; ++w) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (int v = 0; v < count; ++v) {
        if (procs_[v].fd >= 0) ::close(procs_[v].fd);
        for (int fd : pairs[v]) {
          if (fd >= 0 && fd != pairs[w][1]) ::close(fd);
        }
      }
      ChildMain(pairs[w][1], w);
    }
    if (pid < 0) {
      status = ErrnoToStatus(errno, fmt::format("forking worker process {}", w));
      break;
    }
    procs_[w] = WorkerProcess{pid, pairs[w][0], true, 0};
    pairs[w][0] = -1;
  }
  for (auto& pair : pairs) {
    for (int fd : pair) {
      if (fd >= 0) ::close(fd);
    }
  }
  return status;
}

void ProcessDispatcher::ChildMain(int fd, int worker) {
  // Die with the coordinator; never run its callbacks, lock its scheduler or
  // run its destructors (hence _exit).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != coordinator_pid_) ::_exit(1);
  // The heartbeat: a thread of its own, so that it beats through any task
  // however long, and stops only with the process (a SIGSTOP, a freeze).
  std::atomic<int64_t>* beats = &this->beats(worker);
  const auto interval = std::chrono::duration<double>(
      std::clamp(spec_.heartbeat_timeout / 10, 0.005, 1.0));
  std::thread([beats, interval] {
    while (true) {
      beats->fetch_add(1);
      std::this_thread::sleep_for(interval);
    }
  }).detach();
  // The limit on recycled buffers this process inherited is the whole
  // compute's (set by the coordinator). A worker runs one task at a time: its
  // idle buffers may not take it past one task's budget (allowed_mem less
  // reserved_mem, which is for the process itself), or each worker would
  // keep what its last task freed beside what the next one maps (measured:
  // 45 MB over allowed_mem per worker, beyond the contract, in a spilling
  // rechunk; tests/interop/test_memory.py).
  const std::shared_ptr<void> held_limit =
      root_pool_->allocator()->LimitHeld(spec_.task_budget());
  while (true) {
    WireRequest request;
    if (!ReadFully(fd, &request, sizeof request)) ::_exit(0);
    const int64_t written = TierBytesWritten();
    TaskFigures figures;
    Status s = runner_->Run(TaskId{request.op, request.block}, request.attempt, &figures,
                            SupersededCheck(worker, request.attempt_id));
    WireReply reply = WireReply::From(s, figures, TierBytesWritten() - written, CurrentRss(),
                                      root_pool_->peak_bytes());
    if (!WriteFully(fd, &reply, sizeof reply)) ::_exit(0);
  }
}

bool ProcessDispatcher::AwaitReply(const Attempt& attempt, int worker, WireReply* reply,
                                   std::string* why) {
  WorkerProcess& proc = procs_[worker];
  const double timeout = spec_.heartbeat_timeout;
  const int slice_ms = static_cast<int>(std::clamp(timeout / 8 * 1000, 10.0, 100.0));
  while (true) {
    pollfd p{proc.fd, POLLIN, 0};
    const int n = ::poll(&p, 1, slice_ms);
    if (n > 0) return ReadFully(proc.fd, reply, sizeof *reply);
    if (n < 0 && errno != EINTR) return false;
    const int64_t beats = this->beats(worker).load();
    MutexLock lock(&mu_);
    const double now = Seconds(Clock::now());
    if (static_cast<uint64_t>(beats) != proc.beats_seen) {
      proc.beats_seen = static_cast<uint64_t>(beats);
      scheduler_->Heartbeat(worker, now);
    }
    const std::vector<int> silent = scheduler_->SilentWorkers(now, timeout);
    if (std::find(silent.begin(), silent.end(), worker) != silent.end()) {
      *why = fmt::format("sent no heartbeat for {:.1f} s (heartbeat_timeout): killed as hung",
                         timeout);
      ++hung_workers_killed_;
    } else if ((scheduler_->done() || !fatal_.ok()) && scheduler_->IsSuperseded(attempt)) {
      *why = "was still running a superseded attempt when the compute ended: killed";
    } else {
      continue;
    }
    ::kill(proc.pid, SIGKILL);
    // The reply, if it raced the kill, no longer matters: EOF follows.
  }
}

AttemptOutcome ProcessDispatcher::RunAttempt(const Attempt& attempt, int worker) {
  WorkerProcess& proc = procs_[worker];
  AttemptOutcome out;
  const WireRequest request{attempt.task.op, attempt.number, attempt.task.block, attempt.id};
  WireReply reply;
  std::string why;
  if (!proc.alive || !WriteFully(proc.fd, &request, sizeof request) ||
      !AwaitReply(attempt, worker, &reply, &why)) {
    // The worker died (or was killed): reap it and reclaim its pins and
    // unsealed objects.
    if (proc.alive && why.empty()) ::kill(proc.pid, SIGKILL);  // a broken socket: make sure
    int wstatus = 0;
    pid_t r;
    do {
      r = ::waitpid(proc.pid, &wstatus, 0);
    } while (r < 0 && errno == EINTR);
    ::close(proc.fd);
    proc.fd = -1;
    proc.alive = false;
    std::string death = fmt::format("(worker {}, pid {}) {}", worker, proc.pid,
                                    !why.empty()       ? why
                                    : r == proc.pid ? DescribeExit(wstatus)
                                                    : "vanished");
    if (shm_) shm_->ReclaimProcess(proc.pid).IgnoreError();
    {
      MutexLock lock(&mu_);
      last_death_ = death;
    }
    out.worker_lost = true;
    if (attempt.number > spec_.retries) {
      out.status = UnavailableError(fmt::format("worker process {} running it", death));
    }
    return out;
  }
  {
    MutexLock lock(&mu_);
    worker_disk_bytes_ += reply.disk_bytes;
  }
  proc.pool_peak = std::max(proc.pool_peak, reply.worker_pool_peak);
  out.figures = reply.figures();
  out.status = reply.status();
  return out;
}

void ProcessDispatcher::CountProduced(const Attempt& /*attempt*/, int /*worker*/,
                                      const TaskFigures& /*figures*/, bool /*duplicate*/) {
  // Every worker's blocks are in the one ShmStore: its usage is the
  // residency (read without the store's lock: a worker holding it may be
  // stopped).
  resident_ = shm_ ? shm_->used() : 0;
  peak_resident_ = std::max(peak_resident_, resident_);
  scheduler_->SetResident(0, resident_);
}

void ProcessDispatcher::CountErased(const DeadBlock& /*block*/) {
  resident_ = shm_ ? shm_->used() : 0;
  scheduler_->SetResident(0, resident_);
}

Status ProcessDispatcher::AllWorkersLost() {
  return UnavailableError(
      fmt::format("all {} worker processes died with {} tasks left; the last one {}",
                  spec_.workers, scheduler_->tasks_remaining(), last_death_));
}

void ProcessDispatcher::StopWorkerProcesses() {
  // EOF on its socket makes an idle worker exit.
  for (WorkerProcess& proc : procs_) {
    if (proc.fd >= 0) ::close(proc.fd);
    proc.fd = -1;
  }
  for (WorkerProcess& proc : procs_) {
    if (proc.pid <= 0 || !proc.alive) continue;
    int wstatus = 0;
    while (::waitpid(proc.pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    proc.alive = false;
  }
}

Status ProcessDispatcher::Finish(ComputeSummary* summary) {
  STRATA_RETURN_IF_ERROR(Dispatcher::Finish(summary));
  if (shm_) summary->intermediate_bytes_written += shm_->stats().bytes_spilled;
  for (const WorkerProcess& proc : procs_) summary->peak_pool_bytes += proc.pool_peak;
  return Status::Ok();
}

Status ProcessDispatcher::Cleanup() {
  Status first = CleanupTiers();
  shm_.reset();  // removes its spill files
  Status removed = RemoveRunDir();
  return first.ok() ? removed : first;
}

}  // namespace

std::unique_ptr<Dispatcher> MakeProcessDispatcher(const Plan& plan,
                                                  const ComputeOptions& options) {
  return std::make_unique<ProcessDispatcher>(plan, options);
}

}  // namespace strata
