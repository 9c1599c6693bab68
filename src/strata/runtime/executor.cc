#include "strata/runtime/executor.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <queue>
#include <thread>

#include "strata/base/byte_size.h"
#include "strata/base/mpi.h"
#include "strata/base/system_info.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/runtime/intermediate_store.h"
#include "strata/runtime/mpi_tier.h"
#include "strata/runtime/object_tier.h"
#include "strata/runtime/shm_store.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;

// A block in hand inside a task: a view plus whatever keeps it alive.
using Held = BlockView;

struct Task {
  int op = -1;
  Index block = 0;   // linear index in the op's grid
  int attempts = 0;  // attempts already spent (by dead workers, or failures under mpi)
  int avoid = -1;    // mpi: the worker whose attempt failed, which others go before
};

// What one successful attempt of a task measured, where it ran.
struct TaskFigures {
  double start_seconds = 0;
  double end_seconds = 0;
  int64_t measured_peak = 0;
  int64_t worker_rss = 0;
};

// Per-task state: its pool, the materialized blocks it already fetched, and
// the whole blocks a streamed chain reads strip by strip.
struct TaskFrame {
  int root = -1;
  std::shared_ptr<MemoryPool> pool;
  std::map<std::pair<int, Shape>, Held> fetched;
  std::map<std::pair<const Node*, Shape>, Held> stream_leaves;
};

// The processes executor's messages between a proxy thread and its worker
// process (fixed size, over a socketpair).
struct WireRequest {
  int32_t op = -1;
  int32_t attempt = 0;
  int64_t block = 0;
};

struct WireReply {
  int32_t code = 0;  // StatusCode
  int32_t pad = 0;
  double start_seconds = 0;
  double end_seconds = 0;
  int64_t measured_peak = 0;     // the task's MemoryPool
  int64_t disk_bytes = 0;        // written to disk tiers (and memory-tier fallback files)
  int64_t worker_rss = 0;        // the worker's resident set after the task
  int64_t worker_pool_peak = 0;  // peak of the worker's compute pool so far
  char message[2048] = {};
};

// The mpi executor's messages (tags on Strata's communicator): rank 0 sends
// a task (WireRequest, then the owner rank of each block it reads, as int16)
// and the worker rank answers with a WireReply. op == -1 ends the compute.
constexpr int kTagTask = 0x5401;
constexpr int kTagReply = 0x5402;

// One worker process of the processes executor, as the coordinator sees it.
struct WorkerProcess {
  pid_t pid = -1;
  int fd = -1;  // the coordinator's end of the socketpair
  bool alive = false;
  int64_t pool_peak = 0;
};

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

int64_t CurrentRss() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long long size = 0, resident = 0;
  int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * ::sysconf(_SC_PAGESIZE) : 0;
}

std::string DescribeExit(int wstatus) {
  if (WIFSIGNALED(wstatus)) {
    return fmt::format("was killed by signal {} ({})", WTERMSIG(wstatus),
                       ::strsignal(WTERMSIG(wstatus)));
  }
  if (WIFEXITED(wstatus)) return fmt::format("exited with status {}", WEXITSTATUS(wstatus));
  return "died";
}

class Execution {
 public:
  Execution(const Plan& plan, const ComputeOptions& options)
      : plan_(plan), spec_(plan.spec()), options_(options), state_(plan.ops().size()) {}

  Result<ComputeResult> Run();

 private:
  struct OpState {
    std::vector<int32_t> pending;  // unfinished dependency reads per task
    std::vector<int32_t> refs;     // remaining reads per produced block (tiered ops)
    int64_t done = 0;
    int64_t next_block = 0;  // ops without dependencies hand out blocks in order
    bool cursor = false;     // true for such ops
    bool started = false;
    std::unique_ptr<IntermediateStore> tier;
    std::vector<int16_t> producer;  // worker that produced each block (processes)
  };

  struct ReadyCompare {
    const Plan* plan;
    bool operator()(const Task& a, const Task& b) const {
      // priority_queue pops the largest: deeper ops first, then lower op
      // index, then lower block.
      const PlannedOp& x = plan->ops()[a.op];
      const PlannedOp& y = plan->ops()[b.op];
      if (x.depth != y.depth) return x.depth < y.depth;
      if (a.op != b.op) return a.op > b.op;
      return a.block > b.block;
    }
  };

  // Pools, results, store targets, tiers and readiness.
  Status Prepare();
  Status PrepareResults();
  Status OpenTargets();
  Status PrepareTiers();
  // Chooses the run directory under work_dir; creates it when `create`.
  Status MakeRunDir(bool create);
  void WorkerLoop(int worker);
  bool PickLocked(int worker, Task* task);
  // Input blocks of `task` that `worker` produced (locality).
  int64_t LocalInputsLocked(const Task& task, int worker) const;
  // Runs one attempt of a task here (in a thread, or in a worker process).
  Status RunTask(const Task& task, int attempt, TaskFigures* figures);
  void NotifyTaskEnd(const Task& task, int worker, int attempt, const TaskFigures& figures);
  Status WithTaskContext(const Task& task, Status s, int attempts) const;
  Status RunWithRetries(const Task& task, int worker, int* attempts);

  // The processes executor. Worker processes are forked before any thread
  // starts; each runs ChildMain. The proxy thread of worker `w` sends it
  // tasks (RunRemote); a worker that dies sets *died and is not replaced.
  bool processes() const { return spec_.executor == ExecutorKind::kProcesses; }
  Status PrepareProcesses();
  Status StartWorkerProcesses(int count);
  [[noreturn]] void ChildMain(int fd);
  Status RunRemote(const Task& task, int worker, int* attempts, bool* died);
  // A worker's answer for one attempt of a task.
  WireReply MakeReply(const Status& s, const TaskFigures& figures, int64_t disk_bytes) const;
  void StopWorkerProcesses();
  int64_t TierBytesWritten() const;

  // The mpi executor (SPMD: every rank runs Execute on the same plan). Rank 0
  // schedules: WorkerLoop(w) runs tasks itself for w == 0 and hands them to
  // rank w otherwise (RunOnRank); the other ranks run ServeTasks until told
  // to stop. Each rank's BlockServer answers fetches of the memory-tier
  // blocks it holds (mpi_tier.h).
  bool mpi() const { return spec_.executor == ExecutorKind::kMpi; }
  Status PrepareMpi();
  Status RunMpi();
  Status RunOnRank(const Task& task, int rank, int attempt, TaskFigures* figures);
  Status ServeTasks();
  // Every rank's outcome: the first failing rank's status, on every rank.
  // Collective.
  Status AgreeMpi(Status local);
  // Rank 0's figures, and every rank's peak and traffic, on every rank.
  // Collective.
  Status SummarizeMpi(ComputeSummary* summary);
  // Each rank's memory tier, then the shared directory and objects (rank 0).
  // Collective.
  Status CleanupMpi();
  // The name of op's files and objects in shared tiers: its array's name, or
  // under mpi its index (array names count arrays made in the process, and
  // a rank may have made others before).
  std::string StoreName(const PlannedOp& op) const {
    return mpi() ? fmt::format("op{:03d}", op.index) : op.node->name;
  }
  // The memory-tier bytes of a block of op `index`.
  int64_t BlockBytes(int index, std::span<const Index> block) const;
  // Bookkeeping after a task succeeded; returns blocks to erase (outside the lock).
  void CompleteLocked(const Task& task, std::vector<std::pair<int, Shape>>& erase,
                      std::vector<int>& finished_ops);

  Result<Held> Obtain(const Node& node, std::span<const Index> block, TaskFrame& frame);
  // True when `node` is computed inside this task and can produce any region
  // of a block on its own (a fused elementwise op or a virtual array).
  bool Streamable(const Node& node) const;
  // Computes `region` (block coordinates) of block `block` of `node` into `out`.
  Status RegionOf(const Node& node, std::span<const Index> block, const Box& region,
                  const ArrayView& out, TaskFrame& frame);
  Result<NDArray> ComputeBlock(const Node& node, std::span<const Index> block, TaskFrame& frame);
  Result<NDArray> Exchange(const Node& node, std::span<const Index> block, const Box& box,
                           TaskFrame& frame);
  // The array `node`'s block `block` is computed into: for the block a task
  // stores in a tier, the tier's own buffer where it has one (a ShmStore
  // object, sealed by Put without a copy); else from the task's pool.
  Result<NDArray> NewOutput(const Node& node, std::span<const Index> block, const Shape& shape,
                            TaskFrame& frame);

  Shape Unravel(const PlannedOp& op, Index linear) const {
    Shape block(op.node->grid.rank());
    UnravelIndex(linear, op.node->grid.grid_shape(), block);
    return block;
  }
  double Seconds(Clock::time_point t) const {
    return std::chrono::duration<double>(t - start_).count();
  }
  void Notify(const std::function<void(Callback&)>& fn) {
    if (rank_ != 0) return;  // under mpi, callbacks run on rank 0
    std::lock_guard lock(callback_mu_);
    for (const auto& cb : options_.callbacks) fn(*cb);
  }
  Status Cleanup();

  const Plan& plan_;
  const ResolvedSpec& spec_;
  const ComputeOptions& options_;
  std::vector<OpState> state_;
  std::shared_ptr<MemoryPool> root_pool_;
  std::shared_ptr<void> held_limit_;  // recycled buffers stay within our memory
  std::shared_ptr<MemoryPool> tier_pool_;
  std::string run_dir_;
  bool made_run_dir_ = false;
  bool created_work_dir_ = false;
  std::shared_ptr<RamBudget> ram_budget_;
  // The object tier's store (Spec::object_store_url) and this run's prefix.
  std::shared_ptr<Store> object_store_;
  std::string object_prefix_;
  std::vector<std::optional<NDArray>> results_;
  // Where each output slot's blocks are written (into results_, or for the
  // processes executor into result_map_, shared with the workers).
  std::vector<ArrayView> result_views_;
  std::vector<int> cursor_ops_;

  // Processes executor state (the coordinator's; children use only shm_ and
  // result_map_ besides the plan and tiers).
  std::unique_ptr<ShmStore> shm_;
  std::byte* result_map_ = nullptr;  // MAP_SHARED; unmapped by Run
  size_t result_map_size_ = 0;
  std::vector<WorkerProcess> procs_;
  int live_workers_ = 0;
  pid_t coordinator_pid_ = 0;
  int64_t worker_disk_bytes_ = 0;  // reported by workers (under mu_)
  std::string last_death_;         // the last worker death, for the error (under mu_)

  // mpi executor state. Per rank: the memory it may use, its share of the
  // memory tier's RAM, and (rank 0's count, under mu_) the memory-tier bytes
  // it holds.
  int rank_ = 0;
  std::vector<int64_t> rank_share_;
  std::vector<int64_t> rank_ram_;
  std::vector<int64_t> rank_resident_;
  std::unique_ptr<BlockServer> server_;
  std::shared_ptr<MemoryPool> fetch_pool_;  // regions fetched into strided buffers

  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Task, std::vector<Task>, ReadyCompare> ready_{ReadyCompare{&plan_}};
  int running_ = 0;
  int64_t running_projected_ = 0;
  int64_t tasks_remaining_ = 0;
  Status fatal_;
  std::atomic<int64_t> resident_{0};
  int64_t peak_resident_ = 0;
  std::mutex callback_mu_;
  Clock::time_point start_;
};

std::string BlockName(std::span<const Index> block) { return JoinIndices(block, '.'); }

Status Execution::Prepare() {
  if (!mpi()) {
    STRATA_RETURN_IF_ERROR(PrepareResults());
    STRATA_RETURN_IF_ERROR(OpenTargets());
    return PrepareTiers();
  }
  // Under mpi every step ends in agreement, so that the ranks go on, or stop
  // with the same error, together. Rank 0 creates the store targets first;
  // the others then open what it created (an incomplete array with the same
  // metadata, which Open resumes).
  STRATA_RETURN_IF_ERROR(AgreeMpi(PrepareMpi()));
  Status s = PrepareResults();
  if (s.ok() && rank_ == 0) s = OpenTargets();
  STRATA_RETURN_IF_ERROR(AgreeMpi(std::move(s)));
  s = rank_ == 0 ? Status::Ok() : OpenTargets();
  if (s.ok()) s = PrepareTiers();
  return AgreeMpi(std::move(s));
}

Status Execution::PrepareResults() {
  const int64_t memory = mpi() ? rank_share_[rank_] : spec_.total_system_mem;
  const int64_t ram_tier = mpi() ? rank_ram_[rank_] : plan_.ram_tier_capacity();
  root_pool_ = MemoryPool::Default()->NewChild({"compute", memory});
  held_limit_ = root_pool_->allocator()->LimitHeld(memory);
  tier_pool_ = root_pool_->NewChild({"memory tier", 0});
  ram_budget_ = std::make_shared<RamBudget>(ram_tier);
  const auto& ops = plan_.ops();
  // Results.
  results_.resize(plan_.outputs().size());
  result_views_.resize(plan_.outputs().size());
  if (processes()) {
    STRATA_RETURN_IF_ERROR(PrepareProcesses());
  } else {
    for (size_t slot = 0; slot < plan_.outputs().size(); ++slot) {
      const PlannedOp& op = ops[plan_.outputs()[slot]];
      if (op.node->kind == NodeKind::kStore) continue;
      // Under mpi each rank fills the blocks it computed into zeros, and the
      // ranks OR their arrays together at the end.
      STRATA_ASSIGN_OR_RETURN(
          NDArray a, mpi() ? NDArray::Zeros(*root_pool_, op.node->dtype, op.node->shape)
                           : NDArray::Allocate(*root_pool_, op.node->dtype, op.node->shape));
      result_views_[slot] = a.view();
      results_[slot] = std::move(a);
    }
  }
  return Status::Ok();
}

Status Execution::OpenTargets() {
  // Store targets are created now, after the plan was accepted.
  for (const PlannedOp& op : plan_.ops()) {
    if (op.node->kind != NodeKind::kStore) continue;
    STRATA_RETURN_IF_ERROR(op.node->target->Open());
    if (op.num_tasks() == 0 && rank_ == 0) {
      STRATA_RETURN_IF_ERROR(op.node->target->array()->Commit());
    }
  }
  return Status::Ok();
}

Status Execution::PrepareTiers() {
  const auto& ops = plan_.ops();
  for (const PlannedOp& op : ops) {
    OpState& s = state_[op.index];
    if (!op.materialized) continue;
    tasks_remaining_ += op.num_tasks();
    if (op.tier == Tier::kMemory && mpi()) {
      if (!fetch_pool_) fetch_pool_ = root_pool_->NewChild({"mpi fetch staging", 0});
      const int index = op.index;
      s.tier = std::make_unique<MpiIntermediateStore>(
          index, op.node->grid, op.node->dtype,
          std::make_unique<MemoryIntermediateStore>(
              op.node->name, op.node->dtype, tier_pool_, ram_budget_,
              fmt::format("{}/{}-spill-rank{}", run_dir_, op.node->name, rank_)),
          [this, index](Index linear) { return int{state_[index].producer[linear]}; },
          fetch_pool_);
    } else if (op.tier == Tier::kMemory && shm_) {
      s.tier = std::make_unique<ShmIntermediateStore>(
          op.node->name, op.index, op.node->grid, op.node->dtype, shm_.get(),
          fmt::format("{}/{}-spill", run_dir_, op.node->name));
    } else if (op.tier == Tier::kMemory) {
      STRATA_RETURN_IF_ERROR(MakeRunDir(/*create=*/false));
      s.tier = std::make_unique<MemoryIntermediateStore>(
          op.node->name, op.node->dtype, tier_pool_, ram_budget_,
          fmt::format("{}/{}-spill", run_dir_, op.node->name));
    } else if (op.tier == Tier::kDisk) {
      STRATA_RETURN_IF_ERROR(MakeRunDir(/*create=*/true));
      STRATA_ASSIGN_OR_RETURN(
          s.tier, DiskIntermediateStore::Create(fmt::format("{}/{}-int", run_dir_, StoreName(op)),
                                                op.node->grid, op.node->dtype));
    } else if (op.tier == Tier::kObject) {
      STRATA_RETURN_IF_ERROR(MakeRunDir(/*create=*/false));
      if (!object_store_) {
        STRATA_ASSIGN_OR_RETURN(StoreAndPrefix at,
                                OpenStoreUrl(spec_.object_store_url, /*create=*/true));
        object_store_ = std::move(at.store);
        object_prefix_ = JoinKey(at.prefix, std::filesystem::path(run_dir_).filename().string());
      }
      s.tier = std::make_unique<ObjectIntermediateStore>(
          object_store_, JoinKey(object_prefix_, StoreName(op)), op.node->grid, op.node->dtype,
          root_pool_->NewChild({"object tier reads", 0}));
    }
    if (op.tier != Tier::kNone) s.refs.assign(op.num_tasks(), -1);
    if (op.tier != Tier::kNone && (processes() || mpi())) s.producer.assign(op.num_tasks(), -1);
  }
  if (mpi() && rank_ != 0) return Status::Ok();  // rank 0 schedules
  // Readiness: ops without dependencies hand out blocks in order; the others
  // count, per task, the dependency blocks it must wait for.
  for (const PlannedOp& op : ops) {
    if (!op.materialized) continue;
    OpState& s = state_[op.index];
    if (op.dependencies.empty()) {
      s.cursor = true;
      if (op.num_tasks() > 0) cursor_ops_.push_back(op.index);
      continue;
    }
    s.pending.assign(op.num_tasks(), 0);
    Shape block(op.node->grid.rank());
    for (Index b = 0; b < op.num_tasks(); ++b) {
      UnravelIndex(b, op.node->grid.grid_shape(), block);
      int64_t n = 0;
      for (const Dependency& d : op.dependencies) n += CountInputBlocks(d.map, block);
      s.pending[b] = static_cast<int32_t>(n);
      if (n == 0) ready_.push({op.index, b});
    }
  }
  return Status::Ok();
}

Status Execution::MakeRunDir(bool create) {
  if (run_dir_.empty()) {
    std::string base = spec_.work_dir;
    if (base.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      base = tmp && *tmp ? tmp : "/tmp";
    }
    std::error_code ec;
    if (!std::filesystem::exists(base, ec)) created_work_dir_ = true;
    static std::atomic<int> counter{0};
    run_dir_ = fmt::format("{}/strata-run-{}-{}", base, ::getpid(), counter++);
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

int64_t Execution::LocalInputsLocked(const Task& task, int worker) const {
  const PlannedOp& op = plan_.ops()[task.op];
  Shape block = Unravel(op, task.block);
  int64_t local = 0;
  for (const Dependency& d : op.dependencies) {
    const OpState& ps = state_[d.producer];
    if (ps.producer.empty()) continue;
    const Shape& grid = plan_.ops()[d.producer].node->grid.grid_shape();
    ForEachInputBlock(d.map, block, [&](std::span<const Index> k) {
      if (ps.producer[LinearIndex(k, grid)] == worker) ++local;
    });
  }
  return local;
}

bool Execution::PickLocked(int worker, Task* task) {
  // Best candidate: the ready heap's top or the next block of a cursor op.
  bool have = false;
  Task best;
  ReadyCompare less{&plan_};
  if (!ready_.empty()) {
    best = ready_.top();
    have = true;
  }
  int best_cursor = -1;
  for (int op : cursor_ops_) {
    Task t{op, state_[op].next_block};
    if (!have || less(best, t)) {
      best = t;
      have = true;
      best_cursor = op;
    }
  }
  if (!have) return false;
  // Locality (processes): among the first few ready tasks of the best depth,
  // prefer the one with most inputs produced by this worker.
  constexpr size_t kLocalityWindow = 8;
  std::vector<Task> window;
  if (best_cursor < 0 && (processes() || mpi()) && live_workers_ > 1) {
    const int depth = plan_.ops()[best.op].depth;
    while (!ready_.empty() && window.size() < kLocalityWindow &&
           plan_.ops()[ready_.top().op].depth == depth) {
      window.push_back(ready_.top());
      ready_.pop();
    }
    size_t chosen = 0;
    int64_t most = 0;
    for (size_t i = 0; i < window.size(); ++i) {
      int64_t local = LocalInputsLocked(window[i], worker);
      if (local > most) {
        most = local;
        chosen = i;
      }
    }
    std::swap(window[0], window[chosen]);
    best = window[0];
  }
  const int64_t projected = plan_.ops()[best.op].projected_mem;
  bool wait = false;
  if (mpi()) {
    // One task at a time per rank, within the rank's memory with the
    // memory-tier blocks it holds (those past its RAM share are spilled);
    // a task that failed on this rank waits for another rank.
    const int64_t held = std::min(rank_resident_[worker], rank_ram_[worker]);
    wait = (best.avoid == worker && live_workers_ > 1) ||
           (running_ > 0 && projected + held > rank_share_[worker]);
  } else {
    wait = running_ > 0 &&
           running_projected_ + projected + resident_.load() > spec_.total_system_mem;
  }
  if (wait) {
    if (mpi() && best.avoid == worker) cv_.notify_all();  // another may take it
    for (const Task& t : window) ready_.push(t);
    return false;  // wait for memory to be released (or another worker)
  }
  if (best_cursor >= 0) {
    OpState& s = state_[best_cursor];
    if (++s.next_block >= plan_.ops()[best_cursor].num_tasks()) {
      cursor_ops_.erase(std::find(cursor_ops_.begin(), cursor_ops_.end(), best_cursor));
    }
  } else if (window.empty()) {
    ready_.pop();
  } else {
    for (size_t i = 1; i < window.size(); ++i) ready_.push(window[i]);
  }
  *task = best;
  return true;
}

Result<NDArray> Execution::ComputeBlock(const Node& node, std::span<const Index> block,
                                        TaskFrame& frame) {
  Box box = node.grid.BlockBox(block);
  switch (node.kind) {
    case NodeKind::kZarrSource: {
      STRATA_ASSIGN_OR_RETURN(NDArray a, NewOutput(node, block, box.shape, frame));
      STRATA_RETURN_IF_ERROR(node.zarr->ReadChunk(block, a.view(), *frame.pool).status());
      return a;
    }
    case NodeKind::kMemorySource:
      return NDArray::CopyOf(*frame.pool, node.data->view().Slice(box));
    case NodeKind::kExchange:
      return Exchange(node, block, box, frame);
    default:
      break;
  }
  BlockRequest request;
  request.block = block;
  request.box = box;
  request.pool = frame.pool.get();
  request.inputs.resize(node.inputs.size());
  if (node.streams_input && node.inputs.size() == 1 && Streamable(*node.inputs[0]) &&
      CountInputBlocks(node.maps[0], block) == 1) {
    // Hand the op a way to compute its input strip by strip.
    const Node& in = *node.inputs[0];
    Shape k;
    ForEachInputBlock(node.maps[0], block, [&](std::span<const Index> b) { k.assign(b.begin(), b.end()); });
    request.inputs[0].push_back({k, in.grid.BlockBox(k), ConstArrayView()});
    request.compute_region = [this, &in, k, &frame](const Box& region, const ArrayView& out) {
      return RegionOf(in, k, region, out, frame);
    };
    Result<NDArray> out = node.fn(request);
    frame.stream_leaves.clear();
    if (!out.ok()) return out.status().WithContext(fmt::format("{} ({})", node.op_name, node.name));
    return out;
  }
  std::vector<std::shared_ptr<const void>> keep;
  Status status;
  for (size_t i = 0; i < node.inputs.size() && status.ok(); ++i) {
    const Node& in = *node.inputs[i];
    ForEachInputBlock(node.maps[i], block, [&](std::span<const Index> k) {
      if (!status.ok()) return;
      Result<Held> held = Obtain(in, k, frame);
      if (!held.ok()) {
        status = held.status();
        return;
      }
      request.inputs[i].push_back({Shape(k.begin(), k.end()), in.grid.BlockBox(k), held->view});
      keep.push_back(std::move(held->keepalive));
    });
  }
  STRATA_RETURN_IF_ERROR(status);
  Result<NDArray> out = node.fn(request);
  if (!out.ok()) return out.status().WithContext(fmt::format("{} ({})", node.op_name, node.name));
  if (out->shape() != box.shape || out->dtype() != node.dtype) {
    return InternalError(fmt::format("{} ({}) produced a block of {} {} for block {} of {} {}",
                                     node.op_name, node.name, ShapeToString(out->shape()),
                                     out->dtype().name(), BlockName(block),
                                     ShapeToString(box.shape), node.dtype.name()));
  }
  return out;
}

Result<Held> Execution::Obtain(const Node& node, std::span<const Index> block, TaskFrame& frame) {
  if (node.kind == NodeKind::kMemorySource) {
    return Held{node.data->view().Slice(node.grid.BlockBox(block)), node.data};
  }
  const int index = plan_.IndexOf(&node);
  const PlannedOp& op = plan_.ops()[index];
  if (op.materialized && index != frame.root) {
    auto key = std::make_pair(index, Shape(block.begin(), block.end()));
    auto it = frame.fetched.find(key);
    if (it == frame.fetched.end()) {
      OpState& s = state_[index];
      if (!s.tier) {
        return InternalError(fmt::format("{} has no tier to read block {} from", node.name,
                                         BlockName(block)));
      }
      STRATA_ASSIGN_OR_RETURN(Held held, s.tier->View(block, *frame.pool));
      it = frame.fetched.emplace(std::move(key), std::move(held)).first;
    }
    return it->second;
  }
  STRATA_ASSIGN_OR_RETURN(NDArray a, ComputeBlock(node, block, frame));
  auto shared = std::make_shared<const NDArray>(std::move(a));
  return Held{shared->view(), shared};
}

Result<NDArray> Execution::NewOutput(const Node& node, std::span<const Index> block,
                                     const Shape& shape, TaskFrame& frame) {
  const int index = plan_.IndexOf(&node);
  if (index >= 0 && index == frame.root && plan_.ops()[index].tier != Tier::kNone &&
      state_[index].tier) {
    return state_[index].tier->NewBlock(block, node.dtype, shape, *frame.pool);
  }
  return NDArray::Allocate(*frame.pool, node.dtype, shape);
}

Result<NDArray> Execution::Exchange(const Node& node, std::span<const Index> block,
                                   const Box& box, TaskFrame& frame) {
  // Gathers exactly the slices of the input blocks this block overlaps,
  // straight into the output: from the input's tier when it is materialized
  // (a copy from RAM or a pread per run from a file), else one input block
  // at a time.
  STRATA_ASSIGN_OR_RETURN(NDArray out, NewOutput(node, block, box.shape, frame));
  const Node& in = *node.inputs[0];
  const int index = plan_.IndexOf(&in);
  const bool tiered = index >= 0 && plan_.ops()[index].materialized && index != frame.root;
  Status status;
  std::vector<IntermediateStore::RegionRead> reads;
  ForEachInputBlock(node.maps[0], block, [&](std::span<const Index> k) {
    if (!status.ok()) return;
    Box kbox = in.grid.BlockBox(k);
    Box part = Intersect(kbox, box);
    if (part.empty()) return;
    ArrayView dst = out.view().Slice(Translate(part, box.origin));
    if (tiered) {
      reads.push_back({Shape(k.begin(), k.end()), Translate(part, kbox.origin), dst});
      return;
    }
    Result<Held> held = Obtain(in, k, frame);
    if (!held.ok()) {
      status = held.status();
      return;
    }
    CopyArray(held->view.Slice(Translate(part, kbox.origin)), dst);
  });
  if (status.ok() && !reads.empty()) status = state_[index].tier->GetRegions(reads);
  if (!status.ok()) return status.WithContext(fmt::format("{} ({})", node.op_name, node.name));
  return out;
}

bool Execution::Streamable(const Node& node) const {
  if (!node.region_fn && !node.virtual_fill) return false;
  const PlannedOp& op = plan_.ops()[plan_.IndexOf(&node)];
  return !op.materialized;
}

Status Execution::RegionOf(const Node& node, std::span<const Index> block, const Box& region,
                           const ArrayView& out, TaskFrame& frame) {
  if (Streamable(node) && node.virtual_fill) {
    Box global = region;
    for (int i = 0; i < region.rank(); ++i) global.origin[i] += node.grid.block_origin(i, block[i]);
    return node.virtual_fill(global, out);
  }
  if (!Streamable(node)) {
    // A leaf: its whole block is obtained once per task and sliced.
    auto key = std::make_pair(&node, Shape(block.begin(), block.end()));
    auto it = frame.stream_leaves.find(key);
    if (it == frame.stream_leaves.end()) {
      STRATA_ASSIGN_OR_RETURN(Held held, Obtain(node, block, frame));
      it = frame.stream_leaves.emplace(std::move(key), std::move(held)).first;
    }
    CopyArray(it->second.view.Slice(region), out);
    return Status::Ok();
  }
  // A fused elementwise op: the same region of each input, then the op.
  std::vector<ConstArrayView> views;
  std::vector<NDArray> scratch;
  scratch.reserve(node.inputs.size());
  for (size_t j = 0; j < node.inputs.size(); ++j) {
    const Node& in = *node.inputs[j];
    const InputMap& map = node.maps[j];
    Shape k(in.grid.rank());
    Box r(Shape(in.grid.rank(), 0), Shape(in.grid.rank(), 1));
    for (int i = 0; i < in.grid.rank(); ++i) {
      const AxisMap& a = map.axes[i];
      if (a.kind() == AxisMap::Kind::kFixed) {
        k[i] = a.InputsFor(0)[0];
        r.shape[i] = in.grid.block_size(i, k[i]);
      } else {
        k[i] = block[a.out_axis()];
        r.origin[i] = region.origin[a.out_axis()];
        r.shape[i] = region.shape[a.out_axis()];
      }
    }
    if (Streamable(in)) {
      STRATA_ASSIGN_OR_RETURN(NDArray part, NDArray::Allocate(*frame.pool, in.dtype, r.shape));
      STRATA_RETURN_IF_ERROR(RegionOf(in, k, r, part.view(), frame));
      scratch.push_back(std::move(part));
      views.push_back(BroadcastTo(scratch.back().view(), region.shape));
    } else {
      auto key = std::make_pair(&in, k);
      auto it = frame.stream_leaves.find(key);
      if (it == frame.stream_leaves.end()) {
        STRATA_ASSIGN_OR_RETURN(Held held, Obtain(in, k, frame));
        it = frame.stream_leaves.emplace(std::move(key), std::move(held)).first;
      }
      views.push_back(BroadcastTo(it->second.view.Slice(r), region.shape));
    }
  }
  return node.region_fn(views, out);
}

Status Execution::RunTask(const Task& task, int attempt, TaskFigures* figures) {
  const PlannedOp& op = plan_.ops()[task.op];
  const Node& node = *op.node;
  Shape block = Unravel(op, task.block);
  if (options_.fault_injector) STRATA_RETURN_IF_ERROR(options_.fault_injector(op, block, attempt));
  TaskFrame frame;
  frame.root = task.op;
  frame.pool = root_pool_->NewChild(
      {fmt::format("task {} of {} ({})", BlockName(block), node.op_name, node.name),
       spec_.allowed_mem});
  auto t0 = Clock::now();
  if (node.kind == NodeKind::kStore) {
    STRATA_ASSIGN_OR_RETURN(Held in, Obtain(*node.inputs[0], block, frame));
    STRATA_RETURN_IF_ERROR(node.target->array()->WriteChunk(block, in.view, *frame.pool));
  } else {
    STRATA_ASSIGN_OR_RETURN(NDArray out, ComputeBlock(node, block, frame));
    frame.fetched.clear();  // inputs are no longer needed
    if (op.output_slot >= 0) {
      Box box = node.grid.BlockBox(block);
      CopyArray(out.view(), result_views_[op.output_slot].Slice(box));
    }
    if (op.tier != Tier::kNone) {
      IntermediateStore& tier = *state_[task.op].tier;
      int64_t before = tier.resident_bytes();
      STRATA_RETURN_IF_ERROR(tier.Put(block, std::move(out)));
      if (!mpi()) resident_ += tier.resident_bytes() - before;  // mpi: rank 0 counts
    }
  }
  auto t1 = Clock::now();
  figures->start_seconds = Seconds(t0);
  figures->end_seconds = Seconds(t1);
  figures->measured_peak = frame.pool->peak_bytes();
  return Status::Ok();
}

void Execution::NotifyTaskEnd(const Task& task, int worker, int attempt,
                              const TaskFigures& figures) {
  const PlannedOp& op = plan_.ops()[task.op];
  TaskEndEvent event;
  event.op = &op;
  event.op_name = op.node->op_name;
  event.block = Unravel(op, task.block);
  event.start_seconds = figures.start_seconds;
  event.end_seconds = figures.end_seconds;
  event.projected_mem = op.projected_mem;
  event.measured_peak = figures.measured_peak;
  event.worker_rss = figures.worker_rss;
  event.attempts = attempt;
  event.worker = worker;
  Notify([&](Callback& cb) { cb.OnTaskEnd(event); });
}

Status Execution::WithTaskContext(const Task& task, Status s, int attempts) const {
  const PlannedOp& op = plan_.ops()[task.op];
  Shape block = Unravel(op, task.block);
  std::string tries = attempts > 1 ? fmt::format(" after {} attempts", attempts) : "";
  return s.WithContext(fmt::format("task {} of {} ({}){}", BlockName(block), op.node->op_name,
                                   op.node->name, tries));
}

Status Execution::RunWithRetries(const Task& task, int worker, int* attempts) {
  for (int attempt = 1;; ++attempt) {
    *attempts = attempt;
    TaskFigures figures;
    Status s = RunTask(task, attempt, &figures);
    if (s.ok()) {
      NotifyTaskEnd(task, worker, attempt, figures);
      return s;
    }
    if (!IsRetryable(s) || attempt > spec_.retries) return WithTaskContext(task, s, attempt);
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
  }
}

void Execution::CompleteLocked(const Task& task, std::vector<std::pair<int, Shape>>& erase,
                               std::vector<int>& finished_ops) {
  const auto& ops = plan_.ops();
  const PlannedOp& op = ops[task.op];
  OpState& s = state_[task.op];
  Shape block = Unravel(op, task.block);
  --tasks_remaining_;
  if (++s.done == op.num_tasks()) finished_ops.push_back(task.op);
  peak_resident_ = std::max(peak_resident_, resident_.load());

  // Readers of the new block: count them, and wake the tasks it completes.
  int64_t readers = 0;
  for (int c : op.consumers) {
    const PlannedOp& consumer = ops[c];
    OpState& cs = state_[c];
    for (const Dependency& d : consumer.dependencies) {
      if (d.producer != task.op) continue;
      ForEachConsumer(d.map, block, consumer.node->grid.grid_shape(),
                      [&](std::span<const Index> b) {
                        ++readers;
                        Index linear = LinearIndex(b, consumer.node->grid.grid_shape());
                        if (--cs.pending[linear] == 0) ready_.push({c, linear});
                      });
    }
  }
  if (op.tier != Tier::kNone) {
    s.refs[task.block] = static_cast<int32_t>(readers);
    if (readers == 0) erase.push_back({task.op, block});
  }

  // The blocks this task read: one reader fewer each.
  for (const Dependency& d : op.dependencies) {
    const PlannedOp& producer = ops[d.producer];
    OpState& ps = state_[d.producer];
    ForEachInputBlock(d.map, block, [&](std::span<const Index> k) {
      Index linear = LinearIndex(k, producer.node->grid.grid_shape());
      if (--ps.refs[linear] == 0) erase.push_back({d.producer, Shape(k.begin(), k.end())});
    });
  }
}

void Execution::WorkerLoop(int worker) {
  std::unique_lock lock(mu_);
  while (true) {
    if (!fatal_.ok() || tasks_remaining_ == 0) break;
    Task task;
    if (!PickLocked(worker, &task)) {
      if (running_ == 0 && ready_.empty() && cursor_ops_.empty()) {
        fatal_ = InternalError(fmt::format(
            "scheduler stalled with {} tasks left and none ready", tasks_remaining_));
        cv_.notify_all();
        break;
      }
      cv_.wait(lock);
      continue;
    }
    const PlannedOp& op = plan_.ops()[task.op];
    ++running_;
    running_projected_ += op.projected_mem;
    bool first = !state_[task.op].started;
    state_[task.op].started = true;
    lock.unlock();
    if (first) Notify([&](Callback& cb) { cb.OnOpStart(op); });
    int attempts = 0;
    bool died = false;
    bool requeue = false;
    Status s;
    if (mpi()) {
      // One attempt here; a retry goes back to the queue for another rank.
      attempts = task.attempts + 1;
      TaskFigures figures;
      if (worker == 0) {
        s = RunTask(task, attempts, &figures);
        figures.worker_rss = CurrentRss();
      } else {
        s = RunOnRank(task, worker, attempts, &figures);
      }
      if (s.ok()) {
        NotifyTaskEnd(task, worker, attempts, figures);
      } else if (IsRetryable(s) && attempts <= spec_.retries) {
        requeue = true;
      } else {
        s = WithTaskContext(task, s, attempts);
      }
    } else if (processes()) {
      s = RunRemote(task, worker, &attempts, &died);
    } else {
      s = RunWithRetries(task, worker, &attempts);
    }
    std::vector<std::pair<int, Shape>> erase;
    std::vector<int> finished;
    lock.lock();
    --running_;
    running_projected_ -= op.projected_mem;
    if (requeue) {
      ready_.push(Task{task.op, task.block, attempts, worker});
      cv_.notify_all();
      continue;
    }
    if (died) {
      // This worker is gone: its task goes back to the queue for another
      // (an attempt spent), unless it has used up its retries.
      --live_workers_;
      if (s.ok()) {
        ready_.push(Task{task.op, task.block, attempts});
      } else if (fatal_.ok()) {
        fatal_ = s;
      }
      if (live_workers_ == 0 && fatal_.ok() && tasks_remaining_ > 0) {
        fatal_ = UnavailableError(
            fmt::format("all {} worker processes died with {} tasks left; the last one {}",
                        spec_.workers, tasks_remaining_, last_death_));
      }
      cv_.notify_all();
      break;
    }
    if (!s.ok()) {
      if (fatal_.ok()) fatal_ = s;
      cv_.notify_all();
      continue;
    }
    if ((processes() || mpi()) && op.tier != Tier::kNone) {
      state_[task.op].producer[task.block] = static_cast<int16_t>(worker);
    }
    if (shm_) resident_ = shm_->used();
    if (mpi() && op.tier == Tier::kMemory) {
      const int64_t bytes = BlockBytes(task.op, Unravel(op, task.block));
      rank_resident_[worker] += bytes;
      resident_ += bytes;
    }
    CompleteLocked(task, erase, finished);
    if (mpi()) {
      for (const auto& [index, block] : erase) {
        const PlannedOp& held = plan_.ops()[index];
        if (held.tier != Tier::kMemory) continue;
        const int64_t bytes = BlockBytes(index, block);
        const int owner = state_[index].producer[LinearIndex(block, held.node->grid.grid_shape())];
        rank_resident_[owner] -= bytes;
        resident_ -= bytes;
      }
    }
    lock.unlock();
    Status post;
    for (const auto& [op_index, block] : erase) {
      IntermediateStore& tier = *state_[op_index].tier;
      int64_t before = tier.resident_bytes();
      Status e = tier.Erase(block);
      if (shm_) {
        resident_ = shm_->used();
      } else if (!mpi()) {
        resident_ -= before - tier.resident_bytes();
      }
      if (!e.ok() && post.ok()) post = e;
    }
    for (int f : finished) {
      const PlannedOp& done = plan_.ops()[f];
      if (done.node->kind == NodeKind::kStore && post.ok()) {
        post = done.node->target->array()->Commit();
      }
      Notify([&](Callback& cb) { cb.OnOpEnd(done); });
    }
    lock.lock();
    if (!post.ok() && fatal_.ok()) fatal_ = post;
    cv_.notify_all();
  }
}

Status Execution::PrepareProcesses() {
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
      blocks += op.num_tasks();
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

Status Execution::StartWorkerProcesses(int count) {
  coordinator_pid_ = ::getpid();
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
      ChildMain(pairs[w][1]);
    }
    if (pid < 0) {
      status = ErrnoToStatus(errno, fmt::format("forking worker process {}", w));
      break;
    }
    procs_[w] = WorkerProcess{pid, pairs[w][0], true, 0};
    pairs[w][0] = -1;
    ++live_workers_;
  }
  for (auto& pair : pairs) {
    for (int fd : pair) {
      if (fd >= 0) ::close(fd);
    }
  }
  return status;
}

void Execution::ChildMain(int fd) {
  // Die with the coordinator; never run its callbacks, lock its scheduler or
  // run its destructors (hence _exit).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != coordinator_pid_) ::_exit(1);
  while (true) {
    WireRequest request;
    if (!ReadFully(fd, &request, sizeof request)) ::_exit(0);
    const Task task{request.op, request.block};
    const int64_t written = TierBytesWritten();
    TaskFigures figures;
    Status s = RunTask(task, request.attempt, &figures);
    WireReply reply = MakeReply(s, figures, TierBytesWritten() - written);
    if (!WriteFully(fd, &reply, sizeof reply)) ::_exit(0);
  }
}

WireReply Execution::MakeReply(const Status& s, const TaskFigures& figures,
                               int64_t disk_bytes) const {
  WireReply reply;
  reply.code = static_cast<int32_t>(s.code());
  if (!s.ok()) {
    std::string_view m = s.message();
    std::memcpy(reply.message, m.data(), std::min(m.size(), sizeof reply.message - 1));
  }
  reply.start_seconds = figures.start_seconds;
  reply.end_seconds = figures.end_seconds;
  reply.measured_peak = figures.measured_peak;
  reply.disk_bytes = disk_bytes;
  reply.worker_rss = CurrentRss();
  reply.worker_pool_peak = root_pool_->peak_bytes();
  return reply;
}

Status Execution::RunRemote(const Task& task, int worker, int* attempts, bool* died) {
  WorkerProcess& proc = procs_[worker];
  for (int attempt = task.attempts + 1;; ++attempt) {
    *attempts = attempt;
    const WireRequest request{task.op, attempt, task.block};
    WireReply reply;
    if (!WriteFully(proc.fd, &request, sizeof request) ||
        !ReadFully(proc.fd, &reply, sizeof reply)) {
      // The worker died: reap it and reclaim its pins and unsealed objects.
      int wstatus = 0;
      pid_t r;
      do {
        r = ::waitpid(proc.pid, &wstatus, 0);
      } while (r < 0 && errno == EINTR);
      ::close(proc.fd);
      proc.fd = -1;
      proc.alive = false;
      std::string death = fmt::format("(worker {}, pid {}) {}", worker, proc.pid,
                                      r == proc.pid ? DescribeExit(wstatus) : "vanished");
      if (shm_) shm_->ReclaimProcess(proc.pid).IgnoreError();
      {
        std::lock_guard lock(mu_);
        last_death_ = death;
      }
      *died = true;
      if (attempt > spec_.retries) {
        return WithTaskContext(
            task, UnavailableError(fmt::format("worker process {} running it", death)), attempt);
      }
      return Status::Ok();  // the caller requeues it for another worker
    }
    {
      std::lock_guard lock(mu_);
      worker_disk_bytes_ += reply.disk_bytes;
    }
    proc.pool_peak = std::max(proc.pool_peak, reply.worker_pool_peak);
    if (reply.code == 0) {
      NotifyTaskEnd(task, worker, attempt,
                    TaskFigures{reply.start_seconds, reply.end_seconds, reply.measured_peak,
                                reply.worker_rss});
      return Status::Ok();
    }
    Status s(static_cast<StatusCode>(reply.code),
             std::string(reply.message, ::strnlen(reply.message, sizeof reply.message)));
    if (!IsRetryable(s) || attempt > spec_.retries) return WithTaskContext(task, s, attempt);
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
  }
}

void Execution::StopWorkerProcesses() {
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

int64_t Execution::TierBytesWritten() const {
  int64_t total = 0;
  for (const OpState& s : state_) {
    if (s.tier) total += s.tier->bytes_written();
  }
  return total;
}

int64_t Execution::BlockBytes(int index, std::span<const Index> block) const {
  const Node& node = *plan_.ops()[index].node;
  return NumElements(node.grid.BlockShape(block)) * node.dtype.size();
}

Status Execution::AgreeMpi(Status local) {
  Result<std::vector<int64_t>> codes = mpi::AllGather(static_cast<int64_t>(local.code()));
  if (!codes.ok()) return codes.status();
  int first = -1;
  for (size_t r = 0; r < codes->size() && first < 0; ++r) {
    if ((*codes)[r] != 0) first = static_cast<int>(r);
  }
  if (first < 0) return Status::Ok();
  std::array<char, 2048> text{};
  if (rank_ == first && !local.message().empty()) {
    std::string_view m = local.message();
    std::memcpy(text.data(), m.data(), std::min(m.size(), text.size() - 1));
  }
  STRATA_RETURN_IF_ERROR(mpi::Broadcast(std::as_writable_bytes(std::span(text)), first));
  std::string message(text.data(), ::strnlen(text.data(), text.size()));
  if (first != 0) message = fmt::format("rank {}: {}", first, message);
  return Status(static_cast<StatusCode>((*codes)[first]), std::move(message));
}

Status Execution::PrepareMpi() {
  // Every collective here runs on every rank, whatever the checks below find
  // (the caller agrees on the outcome).
  rank_ = mpi::Rank();
  const int ranks = mpi::Size();
  std::string shape = fmt::format("{} {}", plan_.ops().size(), plan_.total_tasks());
  for (const PlannedOp& op : plan_.ops()) {
    shape += fmt::format("|{} {} {} {} {}", op.node->op_name, ShapeToString(op.node->shape),
                         op.num_tasks(), static_cast<int>(op.tier), op.projected_mem);
  }
  const int64_t fingerprint = static_cast<int64_t>(std::hash<std::string>{}(shape));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> prints, mpi::AllGather(fingerprint));
  STRATA_ASSIGN_OR_RETURN(mpi::HostLayout layout, mpi::Layout());
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> host_memory,
                          mpi::AllGather(DefaultTotalSystemMemory()));
  // One run directory (and object prefix) for all ranks: rank 0's.
  std::array<char, 4096> dir{};
  if (rank_ == 0) {
    STRATA_RETURN_IF_ERROR(MakeRunDir(/*create=*/false));
    std::memcpy(dir.data(), run_dir_.data(), std::min(run_dir_.size(), dir.size() - 1));
  }
  STRATA_RETURN_IF_ERROR(mpi::Broadcast(std::as_writable_bytes(std::span(dir)), 0));
  run_dir_ = dir.data();

  if (ranks > std::numeric_limits<int16_t>::max()) {
    return FailedPreconditionError(fmt::format("{} ranks: at most 32767 are supported", ranks));
  }
  if (ranks != spec_.workers) {
    return FailedPreconditionError(fmt::format(
        "the spec was resolved for {} ranks but {} are running", spec_.workers, ranks));
  }
  for (int r = 1; r < ranks; ++r) {
    if (prints[r] != prints[0]) {
      return FailedPreconditionError(fmt::format(
          "rank {} built a different plan from rank 0's: every rank must run the same "
          "program with the same arguments",
          r));
    }
  }
  // Each host's memory, split evenly between its ranks; total_system_mem
  // (the hosts' sum by default) is divided in the same proportions.
  int64_t hosts_total = 0;
  std::vector<bool> counted(layout.hosts, false);
  for (int r = 0; r < ranks; ++r) {
    if (!counted[layout.host_of_rank[r]]) {
      counted[layout.host_of_rank[r]] = true;
      hosts_total += host_memory[r];
    }
  }
  rank_share_.assign(ranks, 0);
  rank_ram_.assign(ranks, 0);
  rank_resident_.assign(ranks, 0);
  for (int r = 0; r < ranks; ++r) {
    const double part = static_cast<double>(host_memory[r]) /
                        static_cast<double>(std::max<int64_t>(hosts_total, 1)) /
                        layout.ranks_on_host[r];
    rank_share_[r] = static_cast<int64_t>(part * static_cast<double>(spec_.total_system_mem));
    rank_ram_[r] = static_cast<int64_t>(part * static_cast<double>(plan_.ram_tier_capacity()));
    if (rank_share_[r] < spec_.allowed_mem) {
      return InvalidArgumentError(fmt::format(
          "total_system_mem {} leaves rank {} {} (its host's part, shared by {} ranks), less "
          "than allowed_mem {}: raise total_system_mem or run fewer ranks per host",
          FormatBytes(spec_.total_system_mem), r, FormatBytes(rank_share_[r]),
          layout.ranks_on_host[r], FormatBytes(spec_.allowed_mem)));
    }
  }
  live_workers_ = ranks;
  return Status::Ok();
}

Status Execution::RunOnRank(const Task& task, int rank, int attempt, TaskFigures* figures) {
  const PlannedOp& op = plan_.ops()[task.op];
  Shape block = Unravel(op, task.block);
  // The task, then who holds each block it reads (in the order both sides
  // enumerate them).
  const WireRequest request{task.op, attempt, task.block};
  std::vector<std::byte> message(sizeof request);
  std::memcpy(message.data(), &request, sizeof request);
  std::vector<int16_t> owners;
  for (const Dependency& d : op.dependencies) {
    const OpState& ps = state_[d.producer];
    const Shape& grid = plan_.ops()[d.producer].node->grid.grid_shape();
    ForEachInputBlock(d.map, block, [&](std::span<const Index> k) {
      owners.push_back(ps.producer.empty() ? int16_t{-1} : ps.producer[LinearIndex(k, grid)]);
    });
  }
  auto owner_bytes = std::as_bytes(std::span(owners));
  message.insert(message.end(), owner_bytes.begin(), owner_bytes.end());
  STRATA_RETURN_IF_ERROR(mpi::Send(rank, kTagTask, message));
  STRATA_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, mpi::ReceiveAny(rank, kTagReply, nullptr));
  WireReply reply;
  if (bytes.size() != sizeof reply) {
    return InternalError(fmt::format("rank {} answered a task with {} bytes", rank, bytes.size()));
  }
  std::memcpy(&reply, bytes.data(), sizeof reply);
  {
    std::lock_guard lock(mu_);
    worker_disk_bytes_ += reply.disk_bytes;
  }
  *figures = TaskFigures{reply.start_seconds, reply.end_seconds, reply.measured_peak,
                         reply.worker_rss};
  if (reply.code == 0) return Status::Ok();
  return Status(static_cast<StatusCode>(reply.code),
                std::string(reply.message, ::strnlen(reply.message, sizeof reply.message)));
}

Status Execution::ServeTasks() {
  const auto& ops = plan_.ops();
  while (true) {
    STRATA_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, mpi::ReceiveAny(0, kTagTask, nullptr));
    WireRequest request;
    if (bytes.size() < sizeof request) return InternalError("a short task message from rank 0");
    std::memcpy(&request, bytes.data(), sizeof request);
    if (request.op < 0) return Status::Ok();  // the compute is over
    if (request.op >= static_cast<int32_t>(ops.size()) || request.block < 0 ||
        request.block >= ops[request.op].num_tasks()) {
      return InternalError(fmt::format("rank 0 sent an unknown task (op {}, block {})",
                                       request.op, request.block));
    }
    const PlannedOp& op = ops[request.op];
    Shape block = Unravel(op, request.block);
    std::vector<int16_t> owners((bytes.size() - sizeof request) / sizeof(int16_t));
    if (!owners.empty()) {
      std::memcpy(owners.data(), bytes.data() + sizeof request, owners.size() * sizeof(int16_t));
    }
    size_t i = 0;
    for (const Dependency& d : op.dependencies) {
      OpState& ps = state_[d.producer];
      const Shape& grid = ops[d.producer].node->grid.grid_shape();
      ForEachInputBlock(d.map, block, [&](std::span<const Index> k) {
        if (i < owners.size() && !ps.producer.empty()) {
          ps.producer[LinearIndex(k, grid)] = owners[i];
        }
        ++i;
      });
    }
    const int64_t written = TierBytesWritten();
    TaskFigures figures;
    Status s = RunTask(Task{request.op, request.block}, request.attempt, &figures);
    WireReply reply = MakeReply(s, figures, TierBytesWritten() - written);
    STRATA_RETURN_IF_ERROR(mpi::Send(0, kTagReply, std::as_bytes(std::span(&reply, 1))));
  }
}

Status Execution::RunMpi() {
  std::vector<MpiIntermediateStore*> stores(plan_.ops().size(), nullptr);
  for (size_t i = 0; i < state_.size(); ++i) {
    stores[i] = dynamic_cast<MpiIntermediateStore*>(state_[i].tier.get());
  }
  server_ = std::make_unique<BlockServer>(stores, root_pool_->NewChild({"block server", 0}));
  server_->Start();
  Status status;
  if (rank_ == 0) {
    std::vector<std::thread> threads;
    for (int w = 1; w < spec_.workers; ++w) threads.emplace_back([this, w] { WorkerLoop(w); });
    WorkerLoop(0);
    for (auto& t : threads) t.join();
    status = fatal_;
    // No task runs anywhere now, so no rank fetches any more.
    const WireRequest stop{-1, 0, 0};
    for (int w = 1; w < spec_.workers; ++w) {
      Status s = mpi::Send(w, kTagTask, std::as_bytes(std::span(&stop, 1)));
      if (!s.ok() && status.ok()) status = s;
    }
    Status s = BlockServer::StopAll();
    if (status.ok()) status = s;
  } else {
    status = ServeTasks();
  }
  Status stopped = server_->Join();
  if (status.ok()) status = stopped;
  return AgreeMpi(std::move(status));
}

Status Execution::SummarizeMpi(ComputeSummary* summary) {
  int64_t fetched = 0;
  for (const OpState& s : state_) {
    if (auto* store = dynamic_cast<MpiIntermediateStore*>(s.tier.get())) {
      fetched += store->bytes_fetched();
    }
  }
  STRATA_ASSIGN_OR_RETURN(summary->rank_peak_pool_bytes,
                          mpi::AllGather(root_pool_ ? root_pool_->peak_bytes() : 0));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> traffic, mpi::AllGather(fetched));
  std::array<int64_t, 3> figures = {summary->intermediate_bytes_written, summary->tasks,
                                    summary->peak_resident_intermediate_bytes};
  STRATA_RETURN_IF_ERROR(mpi::Broadcast(std::as_writable_bytes(std::span(figures)), 0));
  summary->intermediate_bytes_written = figures[0];
  summary->tasks = figures[1];
  summary->peak_resident_intermediate_bytes = figures[2];
  summary->peak_pool_bytes = 0;
  for (int64_t peak : summary->rank_peak_pool_bytes) summary->peak_pool_bytes += peak;
  summary->bytes_between_ranks = 0;
  for (int64_t bytes : traffic) summary->bytes_between_ranks += bytes;
  summary->rank_memory_share = rank_share_;
  return Status::Ok();
}

Status Execution::CleanupMpi() {
  // Each rank drops its memory-tier blocks and spill files; then rank 0
  // removes the shared run directory and objects, and the others find
  // nothing left when they let go of their handles.
  Status mine;
  for (OpState& s : state_) {
    if (dynamic_cast<MpiIntermediateStore*>(s.tier.get()) == nullptr) continue;
    Status c = s.tier->Cleanup();
    if (!c.ok() && mine.ok()) mine = c;
    s.tier.reset();
  }
  Status agreed = AgreeMpi(std::move(mine));
  Status shared = AgreeMpi(rank_ == 0 ? Cleanup() : Status::Ok());
  if (rank_ != 0) Cleanup().IgnoreError();
  return agreed.ok() ? shared : agreed;
}

Status Execution::Cleanup() {
  Status first;
  for (OpState& s : state_) {
    if (s.tier) {
      Status c = s.tier->Cleanup();
      if (!c.ok() && first.ok()) first = c;
      s.tier.reset();
    }
  }
  shm_.reset();  // removes its spill files
  if (!run_dir_.empty() && std::filesystem::exists(run_dir_)) {
    std::error_code ec;
    std::filesystem::remove_all(run_dir_, ec);
    if (ec && first.ok()) first = ErrnoToStatus(ec.value(), fmt::format("removing {}", run_dir_));
    if (created_work_dir_) {
      std::filesystem::path parent = std::filesystem::path(run_dir_).parent_path();
      if (std::filesystem::is_empty(parent, ec)) std::filesystem::remove(parent, ec);
    }
  }
  return first;
}

Result<ComputeResult> Execution::Run() {
  start_ = Clock::now();
  Notify([&](Callback& cb) { cb.OnComputeStart(plan_); });
  Status status = Prepare();
  if (status.ok() && mpi()) {
    status = RunMpi();
    // Each rank filled the result blocks it computed into zeros: OR them.
    for (size_t slot = 0; slot < plan_.outputs().size() && status.ok(); ++slot) {
      if (!results_[slot] || results_[slot]->nbytes() == 0) continue;
      status = mpi::AllOr(std::span(results_[slot]->data(),
                                    static_cast<size_t>(results_[slot]->nbytes())));
    }
  } else if (status.ok()) {
    const int workers = spec_.executor == ExecutorKind::kInline ? 1 : spec_.workers;
    // Worker processes are forked here, after the plan and tiers exist and
    // before any thread starts (they inherit both; forking a multithreaded
    // process is unsafe).
    if (processes()) status = StartWorkerProcesses(workers);
    if (status.ok()) {
      std::vector<std::thread> threads;
      for (int w = 1; w < workers; ++w) threads.emplace_back([this, w] { WorkerLoop(w); });
      WorkerLoop(0);
      for (auto& t : threads) t.join();
      status = fatal_;
    }
    if (processes()) StopWorkerProcesses();
  }
  // Results of the processes executor: out of the shared mapping.
  if (status.ok() && processes()) {
    for (size_t slot = 0; slot < plan_.outputs().size(); ++slot) {
      const PlannedOp& op = plan_.ops()[plan_.outputs()[slot]];
      if (op.node->kind == NodeKind::kStore || op.output_slot != static_cast<int>(slot)) continue;
      Result<NDArray> a = NDArray::Allocate(*root_pool_, op.node->dtype, op.node->shape);
      if (!a.ok()) {
        status = a.status().WithContext("copying the results");
        break;
      }
      if (a->nbytes() > 0) CopyArray(result_views_[slot], a->view());
      results_[slot] = std::move(a).value();
    }
  }
  if (result_map_) ::munmap(result_map_, result_map_size_);
  result_map_ = nullptr;
  ComputeSummary summary;
  summary.intermediate_bytes_written = TierBytesWritten() + worker_disk_bytes_;
  if (shm_) summary.intermediate_bytes_written += shm_->stats().bytes_spilled;
  summary.tasks = plan_.total_tasks() - tasks_remaining_;
  summary.peak_pool_bytes = root_pool_ ? root_pool_->peak_bytes() : 0;
  for (const WorkerProcess& proc : procs_) summary.peak_pool_bytes += proc.pool_peak;
  summary.peak_resident_intermediate_bytes = peak_resident_;
  if (mpi()) {
    Status figures = SummarizeMpi(&summary);
    if (status.ok()) status = figures;
  }
  Status cleanup = mpi() ? CleanupMpi() : Cleanup();
  if (status.ok()) status = cleanup;
  summary.seconds = Seconds(Clock::now());
  Notify([&](Callback& cb) { cb.OnComputeEnd(plan_, status, summary); });
  if (!status.ok()) return status;
  // An array requested twice was computed once, into its first slot.
  for (size_t slot = 0; slot < plan_.outputs().size(); ++slot) {
    const PlannedOp& op = plan_.ops()[plan_.outputs()[slot]];
    if (op.output_slot >= 0 && op.output_slot != static_cast<int>(slot)) {
      STRATA_ASSIGN_OR_RETURN(results_[slot],
                              NDArray::CopyOf(*MemoryPool::Default(),
                                              results_[op.output_slot]->view()));
    }
  }
  ComputeResult result;
  result.arrays = std::move(results_);
  result.summary = summary;
  return result;
}

}  // namespace

Result<ComputeResult> Execute(const Plan& plan, const ComputeOptions& options) {
  if (plan.spec().executor == ExecutorKind::kMpi && !mpi::Active()) {
    STRATA_RETURN_IF_ERROR(mpi::Init());  // a plan made from a spec resolved elsewhere
  }
  Execution execution(plan, options);
  return execution.Run();
}

}  // namespace strata
