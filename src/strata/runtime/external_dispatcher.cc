// The dask and ray executors' dispatcher: the calling process's half of an
// ExternalRun (external_run.h).
//
// The plan is resolved and checked as for threads (the memory contract,
// fusion, tiers), with total_system_mem and workers the cluster's. Prepare
// does what every executor does before a task runs (results, store targets,
// the disk tiers' directories, the object tier's prefix and owner record);
// the memory tier has no store here, since its blocks are the external
// tasks' results, held by the workers (Dask) or the object store (Ray).
// RunTasks hands the task graph to ComputeOptions::external
// (python/strata/_dask.py submits it to a distributed.Client, _ray.py to a
// Ray cluster) and takes back each finished task through TaskDone. The
// external scheduler decides where and when tasks run, retries them and
// recomputes what a lost worker held; this side keeps the books every
// executor keeps: callbacks, results, reader counts (a disk or object block
// is erased when its last reader is done; memory-tier residency is counted
// the same way, which is when the scheduler releases the block), store
// commits, and Cleanup.
#include <fmt/format.h>

#include <unordered_map>

#include "strata/base/check.h"
#include "strata/runtime/commit_target.h"
#include "strata/runtime/dispatcher.h"
#include "strata/runtime/external_run.h"

namespace strata {
namespace {

uint64_t Key(const TaskId& t) {
  return (static_cast<uint64_t>(t.op) << 48) ^ static_cast<uint64_t>(t.block);
}

class ExternalDispatcher : public Dispatcher, public ExternalRun {
 public:
  using Dispatcher::Dispatcher;

  // ExternalRun.
  const Plan& plan() const override { return plan_; }
  const std::string& run_dir() const override { return run_dir_; }
  const std::string& object_prefix() const override { return object_prefix_; }
  const std::vector<ExternalTask>& tasks() const override { return tasks_; }
  Status TaskDone(const TaskId& task, int attempts, int worker, const TaskFigures& figures,
                  const ConstArrayView* block) override;
  Status TaskFailed(const TaskId& task, const Status& error, int attempts) override {
    MutexLock lock(&mu_);
    if (fatal_.ok()) fatal_ = WithTaskContext(task, error, std::max(attempts, 1));
    return fatal_;
  }
  double seconds() const override { return Seconds(Clock::now()); }
  bool cancelled() const override { return options_.cancel && options_.cancel->load(); }

 protected:
  Status Prepare() override;
  Status RunTasks() override;
  Status Finish(ComputeSummary* summary) override;
  Result<std::unique_ptr<IntermediateStore>> MakeMemoryTier(const PlannedOp& /*op*/) override {
    return std::unique_ptr<IntermediateStore>();  // held by the workers
  }
  AttemptOutcome RunAttempt(const Attempt& /*attempt*/, int /*worker*/) override {
    AttemptOutcome out;
    out.status = InternalError(fmt::format("the {} executor runs no task in the calling process",
                                           ExecutorName(plan_.spec().executor)));
    return out;
  }
  std::string StoreName(const PlannedOp& op) const override { return ExternalStoreName(op); }

 private:
  int64_t BlockBytes(const TaskId& t) const {
    const Node& node = *plan_.ops()[t.op].node;
    Shape block(node.grid.rank());
    UnravelIndex(t.block, node.grid.grid_shape(), block);
    return NumElements(node.grid.BlockShape(block)) * node.dtype.size();
  }

  std::vector<ExternalTask> tasks_;
  std::unordered_map<uint64_t, size_t> index_;    // Key(task) -> position in tasks_
  std::vector<bool> done_;                        // by position in tasks_
  std::unordered_map<uint64_t, int64_t> readers_;  // produced block -> readers not done
  std::vector<int64_t> op_left_;                  // tasks of each op not done
  std::vector<bool> op_started_;
  int64_t bytes_written_ = 0;  // disk and object blocks the workers stored
  int64_t pruned_count_ = 0;   // tasks not in tasks_ (a resumed run's pruned ones)
};

Status ExternalDispatcher::Prepare() {
  STRATA_RETURN_IF_ERROR(Dispatcher::Prepare());
  // A resumed run's pruned tasks are not in the graph at all; nothing that
  // runs reads their blocks (pruned_tasks.h).
  STRATA_RETURN_IF_ERROR(SkipPrunedTasks());
  pruned_count_ = pruned_ ? pruned_->total() : 0;
  op_left_.assign(plan_.ops().size(), 0);
  op_started_.assign(plan_.ops().size(), false);
  for (const PlannedOp& op : plan_.ops()) {  // topological order
    if (!op.materialized) continue;
    const int64_t pruned = pruned_ ? pruned_->count(op.index) : 0;
    op_left_[op.index] = op.num_tasks() - pruned;
    op_started_[op.index] = pruned > 0;  // SkipPrunedTasks reported its start
    const Shape& grid = op.node->grid.grid_shape();
    Shape block(grid.size());
    for (Index b = 0; b < op.num_tasks(); ++b) {
      if (pruned > 0 && pruned_->pruned(op.index, b)) continue;
      ExternalTask t;
      t.id = TaskId{op.index, b};
      t.projected_mem = op.projected_mem;
      t.returns_block = KeepsBlock(op);
      UnravelIndex(b, grid, block);
      for (const Dependency& d : op.dependencies) {
        const Shape& in_grid = plan_.ops()[d.producer].node->grid.grid_shape();
        ForEachInputBlock(d.map, block, [&](std::span<const Index> k) {
          const TaskId input{d.producer, LinearIndex(k, in_grid)};
          t.inputs.push_back(input);
          ++readers_[Key(input)];
        });
      }
      index_[Key(t.id)] = tasks_.size();
      tasks_.push_back(std::move(t));
    }
  }
  done_.assign(tasks_.size(), false);
  return Status::Ok();
}

Status ExternalDispatcher::RunTasks() {
  STRATA_CHECK(options_.external) << "Execute checks the external executors' hook";
  Status s = options_.external(*this);
  MutexLock lock(&mu_);
  if (!fatal_.ok()) return fatal_;
  if (!s.ok()) return s;
  // tasks_done_ counts the pruned tasks too.
  const int64_t left = static_cast<int64_t>(tasks_.size()) + pruned_count_ - tasks_done_;
  if (cancelled()) return CancelledError(fmt::format("compute cancelled with {} tasks left", left));
  if (left != 0) {
    return InternalError(
        fmt::format("the {} run ended with {} of {} tasks not done",
                    ExecutorName(plan_.spec().executor), left, tasks_.size()));
  }
  return Status::Ok();
}

Status ExternalDispatcher::TaskDone(const TaskId& task, int attempts, int worker,
                                const TaskFigures& figures, const ConstArrayView* block) {
  auto it = index_.find(Key(task));
  if (task.op < 0 || it == index_.end()) {
    return InvalidArgumentError(
        fmt::format("task {} of op {} is not a task of this plan", task.block, task.op));
  }
  const size_t position = it->second;
  if (done_[position]) return Status::Ok();  // a duplicate (recomputed by the scheduler)
  const PlannedOp& op = plan_.ops()[task.op];
  const Node& node = *op.node;
  const Shape coords = Unravel(task);
  const Box box = node.grid.BlockBox(coords);
  if (op.output_slot >= 0) {
    if (!block || block->shape() != box.shape || block->dtype() != node.dtype) {
      return WithTaskContext(
          task,
          InternalError(fmt::format("a worker returned {} for a block of {} {}",
                                    block ? fmt::format("{} {}", ShapeToString(block->shape()),
                                                        block->dtype().name())
                                          : std::string("nothing"),
                                    ShapeToString(box.shape), node.dtype.name())),
          attempts);
    }
    CopyArray(*block, result_views_[op.output_slot].Slice(box));
  }
  done_[position] = true;
  {
    MutexLock lock(&mu_);
    ++tasks_done_;
  }
  if (!op_started_[task.op]) {
    op_started_[task.op] = true;
    Notify([&](Callback& cb) { cb.OnOpStart(op); });
  }
  Attempt attempt;
  attempt.task = task;
  attempt.number = std::max(attempts, 1);
  NotifyTaskEnd(attempt, worker, attempt.number, figures);

  // Residency and erasure, by reader counts (the scheduler drops a memory-tier block
  // when its last reader is done; a disk or object block is erased here).
  if (op.tier == Tier::kMemory && readers_.count(Key(task))) {
    MutexLock lock(&mu_);
    resident_ += BlockBytes(task);
    peak_resident_ = std::max(peak_resident_, resident_);
  } else if (op.tier == Tier::kDisk || op.tier == Tier::kObject) {
    bytes_written_ += BlockBytes(task);
  }
  Status post;
  for (const TaskId& input : tasks_[position].inputs) {
    auto r = readers_.find(Key(input));
    if (r == readers_.end() || --r->second > 0) continue;
    readers_.erase(r);
    const PlannedOp& producer = plan_.ops()[input.op];
    if (producer.tier == Tier::kMemory) {
      MutexLock lock(&mu_);
      resident_ -= BlockBytes(input);
    } else if (tiers_[input.op]) {
      Status e = EraseBlock(DeadBlock{input.op, input.block, -1});
      if (!e.ok() && post.ok()) post = e;
    }
  }
  if (--op_left_[task.op] == 0) {
    if (node.kind == NodeKind::kStore && post.ok()) post = CommitTarget(plan_, node);
    Notify([&](Callback& cb) { cb.OnOpEnd(op); });
  }
  return post;
}

Status ExternalDispatcher::Finish(ComputeSummary* summary) {
  STRATA_RETURN_IF_ERROR(Dispatcher::Finish(summary));
  summary->intermediate_bytes_written = bytes_written_;
  return Status::Ok();
}

}  // namespace

std::string ExternalStoreName(const PlannedOp& op) { return fmt::format("op{:03d}", op.index); }

std::unique_ptr<Dispatcher> MakeExternalDispatcher(const Plan& plan,
                                                   const ComputeOptions& options) {
  return std::make_unique<ExternalDispatcher>(plan, options);
}

}  // namespace strata
