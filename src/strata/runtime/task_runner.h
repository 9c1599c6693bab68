// TaskRunner: computes one task (a block of a materialized op) wherever a
// dispatcher runs it: on a thread, in a forked worker process, on an MPI rank.
//
// A task obtains the blocks it reads (from the tiers of materialized
// producers, or by computing fused and virtual producers inside the task),
// computes its block into a buffer from its own MemoryPool (capped at
// allowed_mem, so its peak is measured exactly), and then stores it: in its
// op's tier for readers, into the results of compute(), or as chunks of a
// Zarr target. Rechunk exchanges gather exactly the slices they need,
// straight into the output (a copy from RAM, a pread per run from a file, a
// ranged GET, an MPI message). Nothing here schedules, counts residency or
// talks to other workers: that is the Scheduler's and the Dispatcher's.
//
// Lifetime: built once per compute after the tiers exist; the plan, the
// tiers, the result views and the pool must outlive it.
// Thread-safety: Run may be called concurrently from any number of threads.
#ifndef STRATA_RUNTIME_TASK_RUNNER_H_
#define STRATA_RUNTIME_TASK_RUNNER_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "strata/base/thread_annotations.h"
#include "strata/core/memory_pool.h"
#include "strata/core/ndarray.h"
#include "strata/plan/planner.h"
#include "strata/runtime/executor.h"
#include "strata/runtime/intermediate_store.h"
#include "strata/runtime/scheduler.h"

namespace strata {

// What one successful attempt of a task measured.
struct TaskFigures {
  double start_seconds = 0;  // since the compute started
  double end_seconds = 0;
  int64_t measured_peak = 0;  // the task's MemoryPool
  int64_t worker_rss = 0;     // the worker's resident set, where a dispatcher measures it
  // A store task whose chunk a resumed run found complete: nothing was done.
  bool skipped = false;
  // Stored bytes of Zarr chunks the task read (ThreadZarrBytesRead).
  int64_t zarr_bytes_read = 0;
};

// The ops whose blocks TaskRunner::Run leaves in `kept` rather than storing
// them: memory-tier blocks and blocks of compute()'s results.
bool KeepsBlock(const PlannedOp& op);

class ShardWriter;

class TaskRunner {
 public:
  using Clock = std::chrono::steady_clock;

  // tiers[op]: the tier of each op that has one (else null). result_views[s]:
  // where output slot s is written. Task pools are children of `pool`.
  TaskRunner(const Plan& plan, std::span<const std::unique_ptr<IntermediateStore>> tiers,
             std::span<const ArrayView> result_views, std::shared_ptr<MemoryPool> pool,
             const ComputeOptions& options, Clock::time_point start);
  ~TaskRunner();

  // Runs attempt `attempt` of `task`; errors carry the op and block only
  // where they arise (the dispatcher names the task). `superseded` (when
  // given) says whether another attempt of the task has completed it: then
  // the attempt stops at its next step and publishes nothing (no tier Put,
  // result or chunk write), returning Aborted. With `kept`, a block that
  // would go to the results or to the memory tier is left there instead,
  // for an executor that keeps blocks itself (dask: the block is the Dask
  // task's result); disk and object blocks are stored as always.
  Status Run(const TaskId& task, int attempt, TaskFigures* figures,
             const std::function<bool()>& superseded = {}, std::optional<NDArray>* kept = nullptr);

  double Seconds(Clock::time_point t) const {
    return std::chrono::duration<double>(t - start_).count();
  }

 private:
  // Per-task state: its pool, the materialized blocks it already fetched, and
  // the whole blocks a streamed chain reads strip by strip. A task of a
  // sibling group computes each member in turn (root is the one being
  // computed) and keeps the Zarr source blocks it read for the next members.
  struct Frame {
    int root = -1;
    std::shared_ptr<MemoryPool> pool;
    std::map<std::pair<int, Shape>, BlockView> fetched;
    std::map<std::pair<const Node*, Shape>, BlockView> stream_leaves;
    // While FoldStrips computes a strip: the Zarr leaves' parts read for it
    // (each read once for all the uses of it in the members' chains).
    struct LeafPart {
      const Node* node;
      Shape block;
      Box region;
      NDArray values;
    };
    bool stream_parts = false;
    std::vector<LeafPart> leaf_parts;
    bool keep_sources = false;
    std::map<std::pair<const Node*, Shape>, BlockView> sources;
  };

  // The op computing `node`, and its node: itself, or what the planner put
  // in its place (a lowered rechunk).
  const PlannedOp& OpOf(const Node& node) const;
  const Node& Resolve(const Node& node) const;
  Result<BlockView> Obtain(const Node& node, std::span<const Index> block, Frame& frame);
  // True when `node` is computed inside this task and can produce any region
  // of a block on its own (a fused elementwise op or a virtual array).
  bool Streamable(const Node& node) const;
  // The strip-reading decisions (plan/memory_model.h), for this plan.
  bool StreamsParts(const Node& node) const;
  bool StripsTogether(std::span<const Node* const> members) const;
  // The blocks `block` of `members` (each StreamsParts; several when they
  // StripsTogether, a sibling group's partial reductions): their inputs
  // computed strip by strip in lockstep, each strip of a Zarr leaf read
  // once for all of them and folded into every member's state.
  Status FoldStrips(std::span<const Node* const> members, std::span<const Index> block,
                    Frame& frame, std::vector<NDArray>* outs);
  // Region `region` (block coordinates) of block `block` of the Zarr leaf
  // `node`, read once per strip (Frame::leaf_parts).
  Result<ConstArrayView> LeafPart(const Node& node, std::span<const Index> block,
                                  const Box& region, Frame& frame);
  // Computes `region` (block coordinates) of block `block` of `node` into
  // `out`. Under FoldStrips, `window` is the strip `region` is a piece of:
  // Zarr leaves are read for the whole window, once, and sliced.
  Status RegionOf(const Node& node, std::span<const Index> block, const Box& region,
                  const ArrayView& out, Frame& frame, const Box* window = nullptr);
  Result<NDArray> ComputeBlock(const Node& node, std::span<const Index> block, Frame& frame);
  // The blocks of a sibling group's members (`members`: op indices), when
  // each member is a reduction's combine round (Node::fold_states) over
  // states computed in this task. The fused trees' leaves (partials, or
  // combine rounds over a tier) are computed in lockstep, leaf j of every
  // member, each folded into its member's running states (one per level of
  // the tree, in the tree's own grouping and order: the same bytes as the
  // tree), and the Zarr blocks they read are released before leaf j + 1. A
  // task then holds one leaf's source blocks and a few states, not every
  // source block of its tree. Leaves `outs` empty when the group does not
  // fold (its members are then computed whole).
  Status FoldGroup(std::span<const int> members, std::span<const Index> block, Frame& frame,
                   const std::function<Status()>& check, std::vector<NDArray>* outs);
  // A leaf of a fused combine tree, and how many of the tree's blocks (from
  // the innermost) take their last input from it.
  struct FoldLeaf {
    const Node* node;
    Shape block;
    int closes;
  };
  // True when `node` is a combine round whose input is computed in this task
  // (FoldsInTask, as the memory model decides).
  bool Folds(const Node& node) const;
  // Appends the leaves of `node`'s block `block` in the tree's order; returns
  // the tree's depth (0: `node` is a leaf), or -2 when its leaves are not all
  // at one depth.
  int FoldLeaves(const Node& node, std::span<const Index> block,
                 std::vector<FoldLeaf>* leaves) const;
  Result<NDArray> Exchange(const Node& node, std::span<const Index> block, const Box& box,
                           Frame& frame);
  // Writes a store task's block: one Zarr chunk, or each of the chunks it
  // covers.
  Status WriteStoreBlock(const Node& node, std::span<const Index> block, const ConstArrayView& data,
                         Frame& frame);
  // Gathers `region` (array coordinates, inside block `block`) of exchange
  // `node` into `out`.
  Status ExchangeInto(const Node& node, std::span<const Index> block, const Box& region,
                      const ArrayView& out, Frame& frame);
  // Computes `region` (array coordinates, inside block `block`) of `node`
  // into `out` without its whole block where it can: a tiered block is read
  // by region, a fused exchange gathers just the region, a streamable chain
  // computes it, a sharded source reads the inner chunks it needs; anything
  // else is obtained whole once per task.
  Status InputRegion(const Node& node, std::span<const Index> block, const Box& region,
                     const ArrayView& out, Frame& frame);
  // Reads `region` (array coordinates, inside block `block`) of a partial
  // input (Node::partial_inputs) into `out`: a tiered block by region, an
  // unsharded Zarr source decoding only the stored bytes holding it
  // (ZarrArray::ReadChunkPart), a virtual array filling it; anything else
  // is obtained whole for the copy and released at once.
  Status ReadPart(const Node& node, std::span<const Index> block, const Box& region,
                  const ArrayView& out, Frame& frame);
  // A store task of a sharded target: the shard assembled inner chunk by
  // inner chunk, each encoded as soon as it is filled. When the planner split
  // the shards into parts (node.grid finer than the array's), the task
  // encodes its part's inner chunks and appends each to the shard's file
  // as it is encoded (FinishShardPart then counts the part in).
  Status StoreShard(const Node& node, std::span<const Index> block, Frame& frame);
  // The part of shard `shard_block` that block `block` (`box`) covers.
  Status StoreShardPiece(const Node& node, std::span<const Index> block, const Box& box,
                         std::span<const Index> shard_block, Frame& frame);
  // A shard written in parts: its shared state (made by the first part),
  // by store node and shard.
  struct PendingShard;
  std::shared_ptr<PendingShard> PendingShardOf(const Node& node, std::span<const Index> shard,
                                               Index parts);
  // Part `part` (linear in the shard) has added all its inner chunks; the
  // last part writes the index and stores the shard. A part done again (a
  // retried or backup attempt) counts once.
  Status FinishShardPart(const Node& node, std::span<const Index> shard, PendingShard& pending,
                         Index part);
  // The array `node`'s block is computed into: for the block a task stores
  // in a tier, the tier's own buffer where it has one (a ShmStore object,
  // sealed by Put without a copy); else from the task's pool.
  Result<NDArray> NewOutput(const Node& node, std::span<const Index> block, const Shape& shape,
                            Frame& frame);

  // A shard whose parts several tasks write: the writer (opened by the
  // first inner chunk to arrive), which parts are in.
  struct PendingShard {
    Mutex mu;
    std::unique_ptr<ShardWriter> writer STRATA_GUARDED_BY(mu);
    std::vector<bool> added STRATA_GUARDED_BY(mu);
    Index count STRATA_GUARDED_BY(mu) = 0;
    bool finished STRATA_GUARDED_BY(mu) = false;
  };

  const Plan& plan_;
  std::span<const std::unique_ptr<IntermediateStore>> tiers_;
  std::span<const ArrayView> result_views_;
  std::shared_ptr<MemoryPool> pool_;
  const ComputeOptions& options_;
  Clock::time_point start_;
  Mutex shards_mu_;
  // By store node and shard (linear); an entry lives with the runner (its
  // writer until the shard is stored; in a failed run the writer's
  // destructor removes the temporary file).
  std::map<std::pair<const Node*, Index>, std::shared_ptr<PendingShard>> pending_shards_
      STRATA_GUARDED_BY(shards_mu_);
};

}  // namespace strata

#endif  // STRATA_RUNTIME_TASK_RUNNER_H_
