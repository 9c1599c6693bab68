// TaskHost: a dask worker's half of an ExternalRun (external_run.h).
#include <fmt/format.h>

#include <map>

#include "strata/base/thread_annotations.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/runtime/external_run.h"
#include "strata/runtime/object_tier.h"
#include "strata/storage/open_store.h"
#include "strata/storage/store.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {

// The memory tier on a worker: the blocks Dask handed to the tasks running
// here, each lent for the length of one task (counted, so that two tasks
// reading the same block share it). Nothing is ever stored or spilled: a
// task's own block is kept by TaskRunner::Run and returned.
//
// Thread-safety: every method is safe to call concurrently.
class TaskHost::LentBlocks : public IntermediateStore {
 public:
  LentBlocks(std::string name, ChunkGrid grid, DType dtype)
      : name_(std::move(name)), grid_(std::move(grid)), dtype_(dtype) {}

  Status Lend(const Shape& block, std::shared_ptr<const NDArray> data) {
    const Shape shape = grid_.BlockShape(block);
    if (!data || data->shape() != shape || data->dtype() != dtype_) {
      return InvalidArgumentError(fmt::format(
          "block {} of {} was given as {}, expected {} {}", JoinIndices(block, '.'), name_,
          data ? fmt::format("{} {}", ShapeToString(data->shape()), data->dtype().name())
               : std::string("nothing"),
          ShapeToString(shape), dtype_.name()));
    }
    MutexLock lock(&mu_);
    Entry& e = blocks_[block];
    if (e.lent++ == 0) e.data = std::move(data);
    return Status::Ok();
  }
  void Return(const Shape& block) {
    MutexLock lock(&mu_);
    auto it = blocks_.find(block);
    if (it != blocks_.end() && --it->second.lent == 0) blocks_.erase(it);
  }

  Status Put(std::span<const Index> block, NDArray /*data*/, MemoryPool& /*staging*/) override {
    return InternalError(fmt::format("block {} of {} was stored on a dask worker",
                                     JoinIndices(block, '.'), name_));
  }
  Result<std::shared_ptr<const NDArray>> Get(std::span<const Index> block,
                                             MemoryPool& /*pool*/) override {
    MutexLock lock(&mu_);
    auto it = blocks_.find(Shape(block.begin(), block.end()));
    if (it == blocks_.end()) {
      return InternalError(fmt::format("block {} of {} was not given to this task",
                                       JoinIndices(block, '.'), name_));
    }
    return it->second.data;
  }
  Result<BlockView> View(std::span<const Index> block, MemoryPool& pool) override {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const NDArray> data, Get(block, pool));
    return BlockView{data->view(), data};
  }
  Status GetRegion(std::span<const Index> block, const Box& region, const ArrayView& out,
                   MemoryPool& /*staging*/) override {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const NDArray> data,
                            Get(block, *MemoryPool::Default()));
    CopyArray(data->view().Slice(region), out);
    return Status::Ok();
  }
  Status Erase(std::span<const Index> /*block*/) override { return Status::Ok(); }
  int64_t resident_bytes() const override { return 0; }
  int64_t bytes_written() const override { return 0; }
  Status Cleanup() override {
    MutexLock lock(&mu_);
    blocks_.clear();
    return Status::Ok();
  }

 private:
  struct Entry {
    std::shared_ptr<const NDArray> data;
    int lent = 0;
  };
  std::string name_;
  ChunkGrid grid_;
  DType dtype_;
  Mutex mu_;
  std::map<Shape, Entry> blocks_ STRATA_GUARDED_BY(mu_);
};

Result<std::unique_ptr<TaskHost>> TaskHost::Open(std::shared_ptr<const Plan> plan,
                                                 std::string run_dir,
                                                 std::string object_prefix) {
  std::unique_ptr<TaskHost> host(new TaskHost());
  host->plan_ = std::move(plan);
  const Plan& p = *host->plan_;
  // Each task's pool is capped at allowed_mem (TaskRunner); the blocks Dask
  // holds are the worker's to count (its memory limit).
  host->pool_ = MemoryPool::Default()->NewChild({"dask worker", 0});
  host->tiers_.resize(p.ops().size());
  host->lent_.assign(p.ops().size(), nullptr);
  for (const PlannedOp& op : p.ops()) {
    if (op.node->kind == NodeKind::kStore) {
      STRATA_RETURN_IF_ERROR(op.node->target->Open());
    }
    if (!op.materialized) continue;
    switch (op.tier) {
      case Tier::kNone:
        break;
      case Tier::kMemory: {
        auto lent = std::make_unique<LentBlocks>(op.node->name, op.node->grid, op.node->dtype);
        host->lent_[op.index] = lent.get();
        host->tiers_[op.index] = std::move(lent);
        break;
      }
      case Tier::kDisk: {
        if (run_dir.empty()) {
          return InvalidArgumentError(
              fmt::format("{} is kept on disk but the run has no directory", op.node->name));
        }
        STRATA_ASSIGN_OR_RETURN(
            std::unique_ptr<DiskIntermediateStore> disk,
            DiskIntermediateStore::Create(
                fmt::format("{}/{}-int", run_dir, ExternalStoreName(op)), op.node->grid,
                op.node->dtype, op.stored_grid));
        disk->Disown();
        host->tiers_[op.index] = std::move(disk);
        break;
      }
      case Tier::kObject: {
        if (!host->object_store_) {
          STRATA_ASSIGN_OR_RETURN(StoreAndPrefix at,
                                  OpenStoreUrl(p.spec().object_store_url, /*create=*/true));
          host->object_store_ = std::move(at.store);
        }
        auto object = std::make_unique<ObjectIntermediateStore>(
            host->object_store_, JoinKey(object_prefix, ExternalStoreName(op)), op.node->grid,
            op.node->dtype, op.stored_grid);
        object->Disown();
        host->tiers_[op.index] = std::move(object);
        break;
      }
    }
  }
  // No result views: with `kept`, TaskRunner::Run returns result blocks.
  host->runner_ = std::make_unique<TaskRunner>(p, host->tiers_, std::span<const ArrayView>(),
                                               host->pool_, host->options_,
                                               TaskRunner::Clock::now());
  return host;
}

TaskHost::~TaskHost() = default;

Result<std::optional<NDArray>> TaskHost::Run(const TaskId& task, int attempt,
                                             const std::vector<Input>& inputs,
                                             TaskFigures* figures) {
  const Plan& p = *plan_;
  if (task.op < 0 || task.op >= static_cast<int>(p.ops().size()) ||
      !p.ops()[task.op].materialized || task.block < 0 ||
      task.block >= p.ops()[task.op].num_tasks()) {
    return InvalidArgumentError(
        fmt::format("task {} of op {} is not a task of this plan", task.block, task.op));
  }
  // Lend the inputs for the length of the run.
  std::vector<std::pair<LentBlocks*, Shape>> lent;
  struct Returner {
    std::vector<std::pair<LentBlocks*, Shape>>& lent;
    ~Returner() {
      for (auto& [store, block] : lent) store->Return(block);
    }
  } returner{lent};
  for (const Input& in : inputs) {
    if (in.task.op < 0 || in.task.op >= static_cast<int>(p.ops().size()) ||
        !lent_[in.task.op]) {
      return InvalidArgumentError(
          fmt::format("op {} has no blocks in the memory tier to be given", in.task.op));
    }
    const Node& node = *p.ops()[in.task.op].node;
    if (in.task.block < 0 || in.task.block >= node.num_blocks()) {
      return InvalidArgumentError(
          fmt::format("block {} is not a block of {}", in.task.block, node.name));
    }
    Shape block(node.grid.rank());
    UnravelIndex(in.task.block, node.grid.grid_shape(), block);
    STRATA_RETURN_IF_ERROR(lent_[in.task.op]->Lend(block, in.block));
    lent.emplace_back(lent_[in.task.op], std::move(block));
  }
  std::optional<NDArray> kept;
  STRATA_RETURN_IF_ERROR(runner_->Run(task, attempt, figures, /*superseded=*/{}, &kept));
  return kept;
}

}  // namespace strata
