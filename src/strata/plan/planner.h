// The planner: from the arrays a user asks for to an executable Plan.
//
// The graph the API builds decides nothing: a rechunk is a logical node that
// carries its target grid. BuildPlan resolves nothing itself either; it takes
// the Spec resolved once (api/compute: plan()) and runs passes, each in its
// own file and each followed, in debug builds, by a check of the plan's
// invariants (CheckInvariants: DuckDB's optimizer verifies its plan after
// every pass in the same way):
//
//   collect        the DAG reachable from the requested arrays, in
//                  topological order; which ops run tasks (collect.cc)
//   lower_rechunk  each logical rechunk becomes what moves its data: one
//                  exchange through the memory tier (spilling per block at
//                  the boundary), or rechunker's stages through the disk or
//                  object tier, chosen against the capacity ledger; a virtual
//                  source is regenerated in the new chunks (lower_rechunk.cc)
//   fuse           Cubed's fusion rules: a blockwise op (or exchange) with a
//                  single consumer that is not requested is computed inside
//                  its consumer's tasks, if the group reads <= 4 source
//                  arrays, <= 10 input blocks per task, and fits allowed_mem
//                  (fuse.cc; switchable: PlanOptions::disabled_passes)
//   fuse_siblings  sibling consumers of one source, block for block on one
//                  grid, become one task per block with several outputs, so
//                  that each source block is read once for all of them
//                  (fuse.cc; switchable like fuse)
//   place_tiers    the tier of every intermediate and why, from the same
//                  ledger (place_tiers.cc)
//   project_memory each op's per-task memory (memory_model.h)
//   check          the memory contract: a task over allowed_mem refuses the
//                  plan, naming the op (check.cc)
//
// One capacity ledger (capacity_ledger.h) holds the RAM left for
// intermediates: total_system_mem - workers x allowed_mem - results. The
// rechunk lowering claims from it first (its choice between one exchange and
// a multistage rewrite depends on it); place_tiers places every other
// intermediate from what is left, so a plan's tier column and its notes
// always agree.
//
// Thread-safety: a Plan is immutable; share it.
#ifndef STRATA_PLAN_PLANNER_H_
#define STRATA_PLAN_PLANNER_H_

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "strata/base/status.h"
#include "strata/plan/node.h"
#include "strata/plan/spec.h"

namespace strata {

enum class Tier { kNone, kMemory, kDisk, kObject };
std::string_view TierName(Tier tier);

// A dependency of a materialized op on another materialized op, through any
// chain of fused ops: output block b of the consumer reads the producer blocks
// that `map` lists.
struct Dependency {
  int producer = -1;  // index in Plan::ops
  InputMap map;
};

// Where an intermediate's blocks wait for their readers, and why.
struct TierPlacement {
  Tier tier = Tier::kNone;
  std::string reason;
  // Disk and object tiers: the chunks blocks are stored in when finer than
  // the op's blocks (see PlannedOp::stored_grid).
  std::optional<ChunkGrid> stored_grid;
};

struct PlannedOp {
  std::shared_ptr<const Node> node;
  int index = -1;
  // Its blocks exist for readers (in a tier, the results or a Zarr target).
  // False for sources, virtual arrays and fused ops.
  bool materialized = false;
  // Set when this op is computed inside another op's tasks.
  int fused_into = -1;
  // Sibling fusion: a materialized op whose blocks are computed in the tasks
  // of op `computed_with` (its group's leader), block for block, so that the
  // input blocks the group shares are read once per task. -1: its own tasks.
  int computed_with = -1;
  // A group's leader: the ops its tasks compute after its own block, in
  // order. Its dependencies are the group's; its projection covers them all.
  std::vector<int> siblings;
  // Nodes computed inside this op's tasks (besides its own node), in order.
  std::vector<std::string> fused_names;
  std::vector<Dependency> dependencies;  // materialized producers
  std::vector<int> consumers;            // materialized ops depending on this one
  int depth = 0;                         // longest chain of materialized ops before it
  int64_t projected_mem = 0;             // per task
  int64_t input_blocks_per_task = 0;     // through fused chains
  int source_arrays = 0;                 // distinct non-virtual arrays read
  Tier tier = Tier::kNone;               // where its blocks are kept for consumers
  std::string tier_reason;
  // Disk and object tiers: the chunks its blocks are stored in when finer
  // than its blocks (a multistage rechunk stage stores rechunker's
  // intermediate chunks); nullopt: its blocks as they are.
  std::optional<ChunkGrid> stored_grid;
  // What the planner decided about this op ("stage 2 of 4 of rechunk
  // array-003: ...").
  std::string note;
  bool is_output = false;  // returned by compute()
  int output_slot = -1;    // position in the requested list
  // Tasks of its own: materialized and not computed in a sibling's tasks.
  bool runs_tasks() const { return materialized && computed_with < 0; }
  int64_t num_tasks() const { return runs_tasks() ? node->num_blocks() : 0; }
};

struct PlanOptions {
  // The fusion switch for one plan: false skips both fusion passes ("fuse"
  // and "fuse_siblings"), exactly as Spec::fuse = false does for every plan
  // of its arrays. Python spells it the same (`Spec(fuse=False)`), and
  // `compute(..., optimize_graph=False)`, Dask's name, sets this one switch.
  bool fuse = true;
  // Optimizer passes to skip one by one, by name (kOptionalPasses).
  std::set<std::string> disabled_passes;
};

class Plan {
 public:
  const ResolvedSpec& spec() const { return spec_; }
  const std::vector<PlannedOp>& ops() const { return ops_; }
  // Index in ops() of each requested array, in request order.
  const std::vector<int>& outputs() const { return outputs_; }
  // The op computing `node`: its own, or for a node the planner rewrote (a
  // logical rechunk) the op that took its place.
  const PlannedOp* Find(const Node* node) const;
  int IndexOf(const Node* node) const;
  // Every node of the plan to its op (IndexOf as a map).
  const std::unordered_map<const Node*, int>& index() const { return index_; }
  int64_t total_tasks() const;
  // Notes on planning decisions ("fused array-002 (multiply) into ...").
  const std::vector<std::string>& decisions() const { return decisions_; }
  const std::vector<std::string>& passes_run() const { return passes_run_; }
  // Bytes of the results compute() returns (held in memory).
  int64_t result_bytes() const { return result_bytes_; }
  // RAM the memory tier may hold at once; blocks beyond it spill to disk.
  int64_t ram_tier_capacity() const { return ram_tier_capacity_; }

  std::string ToText() const;
  std::string ToJson() const;

 private:
  friend Result<std::shared_ptr<const Plan>> BuildPlan(
      const std::vector<std::shared_ptr<const Node>>& outputs, const ResolvedSpec& spec,
      const PlanOptions& options);
  ResolvedSpec spec_;
  std::vector<PlannedOp> ops_;
  std::unordered_map<const Node*, int> index_;
  std::vector<int> outputs_;
  std::vector<std::string> decisions_;
  std::vector<std::string> passes_run_;
  int64_t result_bytes_ = 0;
  int64_t ram_tier_capacity_ = 0;
};

// Builds and checks a plan. InvalidArgument when a task cannot fit:
// "op 'add' (array-003) projects 512 MB per task, over allowed_mem 400 MB";
// or for an unknown pass in `options`.
Result<std::shared_ptr<const Plan>> BuildPlan(
    const std::vector<std::shared_ptr<const Node>>& outputs, const ResolvedSpec& spec,
    const PlanOptions& options = {});

// The passes PlanOptions::disabled_passes may name.
inline constexpr std::string_view kOptionalPasses[] = {"fuse", "fuse_siblings"};

}  // namespace strata

#endif  // STRATA_PLAN_PLANNER_H_
