// The mpi executor's dispatcher (SPMD).
//
// Every rank of an mpirun/srun job builds the same plan and calls Execute,
// which is then collective (a plan that differs between ranks is an error on
// every rank). Rank 0 schedules, one task at a time per rank: worker w is
// rank w (rank 0 runs its tasks on a thread of its own), and tasks go out
// over MPI with the ranks holding each input block. Admission is per rank:
// each rank is a memory domain of its share of total_system_mem (its host's
// part, split between the ranks on that host), holding the memory-tier
// blocks it made (counted here, up to its share of the tier's RAM: the rest
// is spilled). Memory-tier blocks stay on the rank that made them and travel
// to their readers as MPI messages through each rank's BlockServer
// (mpi_tier.h); disk and object tiers must be visible to every rank
// (work_dir on a shared filesystem, or the object store). A retryable
// failure sends the task back to the queue for another rank. Callbacks run
// on rank 0 only; every rank returns the same status, summary and results. A
// rank that dies cannot be recovered from (MPI ends the job); stores stay
// incomplete.
//
// Backups of stragglers run on another rank like any task. The loser is
// told by a notice to its block server and publishes nothing; a memory-tier
// block it had published already is its own copy on its rank, erased there
// (the block itself stays with the winner's rank). A rank cannot be
// preempted, so the compute ends when the loser's task returns.
//
// Hung ranks: while tasks run, rank 0 and every other rank exchange
// heartbeats from a thread of their own (RankWatch); a rank that hears
// nothing from its peer for heartbeat_timeout ends the job with MPI_Abort
// and a line naming the silent rank. MPI cannot go on without a rank, and
// one that stopped (SIGSTOP, a frozen node) may never come back: ending the
// job is the only way not to hang.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "strata/base/byte_size.h"
#include "strata/base/mpi.h"
#include "strata/base/system_info.h"
#include "strata/base/thread_annotations.h"
#include "strata/runtime/dispatcher.h"
#include "strata/runtime/mpi_rank_watch.h"
#include "strata/runtime/mpi_tier.h"
#include "strata/runtime/task_wire_internal.h"

namespace strata {
namespace {

using internal_runtime::RankWatch;
using internal_runtime::WireReply;
using internal_runtime::WireRequest;

// Tags on Strata's communicator: rank 0 sends a task (WireRequest, then the
// owner rank of each block it reads, as int16) and the worker rank answers
// with a WireReply.
constexpr int kTagTask = 0x5401;
constexpr int kTagReply = 0x5402;  // (and 0x5403: RankWatch's heartbeats)

// Which rank holds each live memory-tier block, as this rank knows it: on
// rank 0 every produced block until it is erased; elsewhere the inputs of the
// task running here, as rank 0 sent them.
//
// Thread-safety: every method is safe to call concurrently.
class OwnerTable {
 public:
  void Set(int op, Index block, int owner) {
    MutexLock lock(&mu_);
    owners_[Key(op, block)] = static_cast<int16_t>(owner);
  }
  int Get(int op, Index block) const {
    MutexLock lock(&mu_);
    auto it = owners_.find(Key(op, block));
    return it == owners_.end() ? -1 : it->second;
  }
  void Forget(int op, Index block) {
    MutexLock lock(&mu_);
    owners_.erase(Key(op, block));
  }
  void Clear() {
    MutexLock lock(&mu_);
    owners_.clear();
  }

 private:
  static uint64_t Key(int op, Index block) {
    return (static_cast<uint64_t>(op) << 48) ^ static_cast<uint64_t>(block);
  }
  mutable Mutex mu_;
  std::unordered_map<uint64_t, int16_t> owners_ STRATA_GUARDED_BY(mu_);
};

class MpiDispatcher : public Dispatcher {
 public:
  MpiDispatcher(const Plan& plan, const ComputeOptions& options) : Dispatcher(plan, options) {
    rank_ = mpi::Rank();
    callbacks_here_ = rank_ == 0;
  }

 protected:
  Status Prepare() override;
  Status RunTasks() override;
  Status Finish(ComputeSummary* summary) override;
  Status Cleanup() override;
  Result<std::unique_ptr<IntermediateStore>> MakeMemoryTier(const PlannedOp& op) override;
  AttemptOutcome RunAttempt(const Attempt& attempt, int worker) override;
  bool RetryElsewhere() const override { return true; }
  void CountProduced(const Attempt& attempt, int worker, const TaskFigures& figures,
                     bool duplicate) override STRATA_REQUIRES(mu_);
  void CountErased(const DeadBlock& block) override STRATA_REQUIRES(mu_);
  Status EraseBlock(const DeadBlock& block) override;
  bool KeepsPrivateCopies(const PlannedOp& op) const override {
    return op.tier == Tier::kMemory;
  }
  void MarkSuperseded(const Superseded& s) override STRATA_REQUIRES(mu_);
  SchedulerOptions MakeSchedulerOptions() const override;
  // Array names count arrays made in the process, and a rank may have made
  // others before: shared tiers name ops by index.
  std::string StoreName(const PlannedOp& op) const override {
    return fmt::format("op{:03d}", op.index);
  }

 private:
  // Checks the ranks agree on the plan; each rank's memory share.
  Status PrepareRanks();
  // Every rank's outcome: the first failing rank's status, on every rank.
  // Collective.
  Status Agree(Status local);
  Status RunOnRank(const Attempt& attempt, int rank, TaskFigures* figures);
  Status ServeTasks();
  // The owner of each block `task` reads, in ForEachInputBlock order.
  std::vector<int16_t> InputOwners(const TaskId& task) const;
  int64_t BlockBytes(int op, Index linear) const;

  int rank_ = 0;
  std::vector<int64_t> rank_share_;     // memory each rank may use
  std::vector<int64_t> rank_ram_;       // each rank's share of the memory tier's RAM
  // Rank 0: the memory-tier bytes each rank holds.
  std::vector<int64_t> rank_resident_ STRATA_GUARDED_BY(mu_);
  OwnerTable owners_;
  std::unique_ptr<BlockServer> server_;
  // This rank's superseded board (Dispatcher::superseded_board_): rank 0's
  // entries for every rank, the others' for themselves.
  std::unique_ptr<std::atomic<int64_t>[]> rank_board_;
  std::shared_ptr<MemoryPool> fetch_pool_;  // regions fetched into strided buffers
};

Status MpiDispatcher::Agree(Status local) {
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

Status MpiDispatcher::Prepare() {
  // Every step ends in agreement, so that the ranks go on, or stop with the
  // same error, together. Rank 0 creates the store targets first; the others
  // then open what it created (an incomplete array with the same metadata,
  // which Open resumes).
  STRATA_RETURN_IF_ERROR(Agree(PrepareRanks()));
  Status s = PrepareResults(rank_share_[rank_], rank_ram_[rank_], /*task_slots=*/1,
                            /*allocate_results=*/false);
  // Each rank fills the result blocks it computed into zeros, and the ranks
  // OR their arrays together at the end.
  for (size_t slot = 0; slot < plan_.outputs().size() && s.ok(); ++slot) {
    const PlannedOp& op = plan_.ops()[plan_.outputs()[slot]];
    if (op.node->kind == NodeKind::kStore) continue;
    Result<NDArray> a = NDArray::Zeros(*root_pool_, op.node->dtype, op.node->shape);
    if (!a.ok()) {
      s = a.status();
      break;
    }
    result_views_[slot] = a->view();
    results_[slot] = std::move(a).value();
  }
  if (s.ok() && rank_ == 0) s = OpenTargets(/*commit_empty=*/true);
  STRATA_RETURN_IF_ERROR(Agree(std::move(s)));
  s = rank_ == 0 ? Status::Ok() : OpenTargets(/*commit_empty=*/false);
  if (s.ok()) s = MakeTiers();
  return Agree(std::move(s));
}

Status MpiDispatcher::PrepareRanks() {
  // Every collective here runs on every rank, whatever the checks below find
  // (the caller agrees on the outcome).
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
  {
    MutexLock lock(&mu_);
    rank_resident_.assign(ranks, 0);
  }
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
  return Status::Ok();
}

Result<std::unique_ptr<IntermediateStore>> MpiDispatcher::MakeMemoryTier(const PlannedOp& op) {
  if (!fetch_pool_) fetch_pool_ = root_pool_->NewChild({"mpi fetch staging", 0});
  const int index = op.index;
  return std::unique_ptr<IntermediateStore>(std::make_unique<MpiIntermediateStore>(
      index, op.node->grid, op.node->dtype,
      std::make_unique<MemoryIntermediateStore>(
          op.node->name, op.node->dtype, tier_pool_, ram_budget_,
          fmt::format("{}/{}-spill-rank{}", run_dir_, op.node->name, rank_)),
      [this, index](Index linear) { return owners_.Get(index, linear); }, fetch_pool_));
}

SchedulerOptions MpiDispatcher::MakeSchedulerOptions() const {
  SchedulerOptions o;
  o.workers = spec_.workers;
  o.locality = true;
  o.domain_capacity = rank_share_;
  for (int w = 0; w < spec_.workers; ++w) o.worker_domain.push_back(w);
  return o;
}

int64_t MpiDispatcher::BlockBytes(int op, Index linear) const {
  const Node& node = *plan_.ops()[op].node;
  Shape block(node.grid.rank());
  UnravelIndex(linear, node.grid.grid_shape(), block);
  return NumElements(node.grid.BlockShape(block)) * node.dtype.size();
}

void MpiDispatcher::CountProduced(const Attempt& attempt, int worker,
                                  const TaskFigures& /*figures*/, bool duplicate) {
  // The task's block and its siblings' (computed in the same task). A
  // superseded attempt's block is its own copy on its rank, erased there next
  // (DeadBlock::copy); the owner stays the winner's rank.
  const PlannedOp& task_op = plan_.ops()[attempt.task.op];
  for (size_t m = 0; m <= task_op.siblings.size(); ++m) {
    const int produced = m == 0 ? attempt.task.op : task_op.siblings[m - 1];
    const PlannedOp& op = plan_.ops()[produced];
    if (op.tier == Tier::kNone) continue;
    if (!duplicate) owners_.Set(produced, attempt.task.block, worker);
    if (op.tier != Tier::kMemory) continue;
    const int64_t bytes = BlockBytes(produced, attempt.task.block);
    rank_resident_[worker] += bytes;
    resident_ += bytes;
  }
  peak_resident_ = std::max(peak_resident_, resident_);
  // Blocks past the rank's share of the tier's RAM are spilled.
  scheduler_->SetResident(worker, std::min(rank_resident_[worker], rank_ram_[worker]));
}

void MpiDispatcher::CountErased(const DeadBlock& block) {
  const PlannedOp& op = plan_.ops()[block.op];
  if (!block.copy) owners_.Forget(block.op, block.block);
  if (op.tier != Tier::kMemory || block.producer < 0) return;
  const int64_t bytes = BlockBytes(block.op, block.block);
  rank_resident_[block.producer] -= bytes;
  resident_ -= bytes;
  scheduler_->SetResident(block.producer,
                          std::min(rank_resident_[block.producer], rank_ram_[block.producer]));
}

Status MpiDispatcher::EraseBlock(const DeadBlock& block) {
  if (!block.copy) return Dispatcher::EraseBlock(block);
  if (block.producer == rank_) {
    auto* store = dynamic_cast<MpiIntermediateStore*>(tiers_[block.op].get());
    return store ? store->EraseLocal(block.block) : Status::Ok();
  }
  return BlockServer::EraseOn(block.producer, block.op, block.block);
}

void MpiDispatcher::MarkSuperseded(const Superseded& s) {
  if (s.worker == rank_) {
    Dispatcher::MarkSuperseded(s);
  } else {
    BlockServer::TellSuperseded(s.worker, s.attempt_id).IgnoreError();
  }
}

std::vector<int16_t> MpiDispatcher::InputOwners(const TaskId& task) const {
  const PlannedOp& op = plan_.ops()[task.op];
  const Shape block = Unravel(task);
  std::vector<int16_t> owners;
  for (const Dependency& d : op.dependencies) {
    const Shape& grid = plan_.ops()[d.producer].node->grid.grid_shape();
    ForEachInputBlock(d.map, block, [&](std::span<const Index> k) {
      owners.push_back(static_cast<int16_t>(owners_.Get(d.producer, LinearIndex(k, grid))));
    });
  }
  return owners;
}

AttemptOutcome MpiDispatcher::RunAttempt(const Attempt& attempt, int worker) {
  AttemptOutcome out;
  if (worker == 0) {
    // Rank 0's own tasks find the owners of their inputs in owners_.
    out.status = runner_->Run(attempt.task, attempt.number, &out.figures,
                              SupersededCheck(worker, attempt.id));
    out.figures.worker_rss = CurrentRss();
  } else {
    out.status = RunOnRank(attempt, worker, &out.figures);
  }
  return out;
}

Status MpiDispatcher::RunOnRank(const Attempt& attempt, int rank, TaskFigures* figures) {
  // The task, then who holds each block it reads (in the order both sides
  // enumerate them).
  const TaskId& task = attempt.task;
  const WireRequest request{task.op, attempt.number, task.block, attempt.id};
  std::vector<std::byte> message(sizeof request);
  std::memcpy(message.data(), &request, sizeof request);
  std::vector<int16_t> owners = InputOwners(task);
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
    MutexLock lock(&mu_);
    worker_disk_bytes_ += reply.disk_bytes;
  }
  *figures = reply.figures();
  return reply.status();
}

Status MpiDispatcher::ServeTasks() {
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
    const TaskId task{request.op, request.block};
    const PlannedOp& op = ops[request.op];
    const Shape block = Unravel(task);
    std::vector<int16_t> owners((bytes.size() - sizeof request) / sizeof(int16_t));
    if (!owners.empty()) {
      std::memcpy(owners.data(), bytes.data() + sizeof request, owners.size() * sizeof(int16_t));
    }
    size_t i = 0;
    for (const Dependency& d : op.dependencies) {
      const Shape& grid = ops[d.producer].node->grid.grid_shape();
      ForEachInputBlock(d.map, block, [&](std::span<const Index> k) {
        if (i < owners.size() && owners[i] >= 0) {
          owners_.Set(d.producer, LinearIndex(k, grid), owners[i]);
        }
        ++i;
      });
    }
    const int64_t written = TierBytesWritten();
    TaskFigures figures;
    Status s = runner_->Run(task, request.attempt, &figures,
                            SupersededCheck(rank_, request.attempt_id));
    owners_.Clear();  // this rank runs one task at a time
    WireReply reply = WireReply::From(s, figures, TierBytesWritten() - written, CurrentRss(),
                                      root_pool_->peak_bytes());
    STRATA_RETURN_IF_ERROR(mpi::Send(0, kTagReply, std::as_bytes(std::span(&reply, 1))));
  }
}

Status MpiDispatcher::RunTasks() {
  std::vector<MpiIntermediateStore*> stores(plan_.ops().size(), nullptr);
  for (size_t i = 0; i < tiers_.size(); ++i) {
    stores[i] = dynamic_cast<MpiIntermediateStore*>(tiers_[i].get());
  }
  rank_board_ = std::make_unique<std::atomic<int64_t>[]>(spec_.workers);
  superseded_board_ = rank_board_.get();
  std::atomic<int64_t>* mine = &rank_board_[rank_];
  server_ = std::make_unique<BlockServer>(stores, root_pool_->NewChild({"block server", 0}),
                                          [mine](int64_t id) { mine->store(id); });
  server_->Start();
  RankWatch watch(spec_.heartbeat_timeout);
  if (spec_.workers > 1) watch.Start();
  Status status;
  if (rank_ == 0) {
    status = DriveWorkers(spec_.workers);
    // No task runs anywhere now, so no rank fetches any more.
    const WireRequest stop{-1, 0, 0, 0};
    for (int w = 1; w < spec_.workers; ++w) {
      Status s = mpi::Send(w, kTagTask, std::as_bytes(std::span(&stop, 1)));
      if (!s.ok() && status.ok()) status = s;
    }
    watch.Stop();
    Status s = BlockServer::StopAll();
    if (status.ok()) status = s;
  } else {
    status = ServeTasks();
    watch.Stop();
  }
  Status stopped = server_->Join();
  if (status.ok()) status = stopped;
  STRATA_RETURN_IF_ERROR(Agree(std::move(status)));
  // Each rank filled the result blocks it computed into zeros: OR them.
  for (size_t slot = 0; slot < plan_.outputs().size(); ++slot) {
    if (!results_[slot] || results_[slot]->nbytes() == 0) continue;
    STRATA_RETURN_IF_ERROR(mpi::AllOr(
        std::span(results_[slot]->data(), static_cast<size_t>(results_[slot]->nbytes()))));
  }
  return Status::Ok();
}

Status MpiDispatcher::Finish(ComputeSummary* summary) {
  STRATA_RETURN_IF_ERROR(Dispatcher::Finish(summary));
  // Rank 0's figures, and every rank's peak and traffic, on every rank.
  int64_t fetched = 0;
  for (const auto& tier : tiers_) {
    if (auto* store = dynamic_cast<MpiIntermediateStore*>(tier.get())) {
      fetched += store->bytes_fetched();
    }
  }
  STRATA_ASSIGN_OR_RETURN(summary->rank_peak_pool_bytes,
                          mpi::AllGather(root_pool_ ? root_pool_->peak_bytes() : 0));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> traffic, mpi::AllGather(fetched));
  std::array<int64_t, 6> figures = {summary->intermediate_bytes_written, summary->tasks,
                                    summary->peak_resident_intermediate_bytes,
                                    summary->backup_attempts, summary->backups_won,
                                    summary->zarr_bytes_read};
  STRATA_RETURN_IF_ERROR(mpi::Broadcast(std::as_writable_bytes(std::span(figures)), 0));
  summary->intermediate_bytes_written = figures[0];
  summary->tasks = figures[1];
  summary->peak_resident_intermediate_bytes = figures[2];
  summary->backup_attempts = figures[3];
  summary->backups_won = figures[4];
  summary->zarr_bytes_read = figures[5];
  summary->peak_pool_bytes = 0;
  for (int64_t peak : summary->rank_peak_pool_bytes) summary->peak_pool_bytes += peak;
  summary->bytes_between_ranks = 0;
  for (int64_t bytes : traffic) summary->bytes_between_ranks += bytes;
  summary->rank_memory_share = rank_share_;
  return Status::Ok();
}

Status MpiDispatcher::Cleanup() {
  // Each rank drops its memory-tier blocks and spill files; then rank 0
  // removes the shared run directory and objects, and the others find
  // nothing left when they let go of their handles.
  Status mine;
  for (auto& tier : tiers_) {
    if (dynamic_cast<MpiIntermediateStore*>(tier.get()) == nullptr) continue;
    Status c = tier->Cleanup();
    if (!c.ok() && mine.ok()) mine = c;
    tier.reset();
  }
  Status agreed = Agree(std::move(mine));
  Status shared = Agree(rank_ == 0 ? Dispatcher::Cleanup() : Status::Ok());
  if (rank_ != 0) Dispatcher::Cleanup().IgnoreError();
  return agreed.ok() ? shared : agreed;
}

}  // namespace

std::unique_ptr<Dispatcher> MakeMpiDispatcher(const Plan& plan, const ComputeOptions& options) {
  return std::make_unique<MpiDispatcher>(plan, options);
}

}  // namespace strata
