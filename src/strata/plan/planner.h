// The planner: from the arrays a user asks for to an executable Plan.
//
//   1. Collect the DAG of nodes reachable from the requested arrays, in
//      topological order.
//   2. Run optimizer passes, each named and switchable, each followed by
//      CheckPlan:
//        "fuse"  Cubed's fusion rules: a blockwise op with a single consumer
//                that is not itself requested is computed inside its
//                consumer's tasks, as long as the fused op reads <= 4 source
//                arrays, <= 10 input blocks per task, and its projected
//                memory stays within allowed_mem.
//   3. Project each op's per-task memory (shared/DESIGN.md):
//        reserved + inputs x (1 + read_copies) + extra + output x (1 + write_copies)
//      computed recursively through fused ops (inputs are gathered in order;
//      a fused input holds only its output once computed).
//   4. Place each intermediate in a tier and say why: memory when it fits in
//      the RAM left after every worker's task budget and the results; when it
//      does not, memory that spills per block (only the excess goes to disk)
//      unless no RAM is left at all, then disk.
//   5. Refuse the plan if any task's projection exceeds allowed_mem.
//
// Thread-safety: a Plan is immutable; share it.
#ifndef STRATA_PLAN_PLANNER_H_
#define STRATA_PLAN_PLANNER_H_

#include <memory>
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

struct PlannedOp {
  std::shared_ptr<const Node> node;
  int index = -1;
  // Tasks run for this op. False for sources, virtual arrays and fused ops.
  bool materialized = false;
  // Set when this op is computed inside another op's tasks.
  int fused_into = -1;
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
  bool is_output = false;  // returned by compute()
  int output_slot = -1;    // position in the requested list
  int64_t num_tasks() const { return materialized ? node->num_blocks() : 0; }
};

struct PlanOptions {
  // Optimizer passes to skip, by name ("fuse").
  std::set<std::string> disabled_passes;
};

class Plan {
 public:
  const ResolvedSpec& spec() const { return spec_; }
  const std::vector<PlannedOp>& ops() const { return ops_; }
  // Index in ops() of each requested array, in request order.
  const std::vector<int>& outputs() const { return outputs_; }
  const PlannedOp* Find(const Node* node) const;
  int IndexOf(const Node* node) const;
  int64_t total_tasks() const;
  // Notes on optimizer decisions ("fused array-002 (multiply) into ...").
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
// "op 'add' (array-003) projects 512 MB per task, over allowed_mem 400 MB".
Result<std::shared_ptr<const Plan>> BuildPlan(
    const std::vector<std::shared_ptr<const Node>>& outputs, const ResolvedSpec& spec,
    const PlanOptions& options = {});

// Per-task projection of one op given which of its inputs are fused
// (exposed for tests).
int64_t ProjectTaskMemory(const Plan& plan, int op_index);

// Cubed's fusion limits.
inline constexpr int kMaxFusedSourceArrays = 4;
inline constexpr int kMaxFusedInputBlocks = 10;

}  // namespace strata

#endif  // STRATA_PLAN_PLANNER_H_
