// The planner's passes and the draft they rewrite (see planner.h for what
// each pass decides). Not part of the public API.
//
// A pass takes the draft of the plan and leaves it consistent (CheckInvariants
// holds after each); BuildPlan runs them in order and moves the draft into the
// immutable Plan at the end.
#ifndef STRATA_PLAN_PASSES_INTERNAL_H_
#define STRATA_PLAN_PASSES_INTERNAL_H_

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "strata/plan/capacity_ledger.h"
#include "strata/plan/planner.h"

namespace strata::internal_plan {

struct PlanDraft {
  ResolvedSpec spec;
  // The arrays asked for, as given.
  std::vector<std::shared_ptr<const Node>> requested;
  std::vector<PlannedOp> ops;  // topological order: inputs first
  // Every node reachable, to its op; a node the planner replaced (a lowered
  // rechunk, a regridded store) maps to the op of its replacement.
  std::unordered_map<const Node*, int> index;
  // Replacements made by lower_rechunk (node -> what computes it instead).
  std::unordered_map<const Node*, std::shared_ptr<const Node>> replaced;
  // Sources lower_rechunk publishes (materializes) for an exchange to read.
  std::unordered_set<const Node*> published;
  // Tiers decided while lowering rechunks, by node, for place_tiers.
  std::unordered_map<const Node*, TierPlacement> placed;
  // Notes lower_rechunk leaves on the ops it creates, by node.
  std::unordered_map<const Node*, std::string> notes;
  std::vector<int> outputs;
  std::vector<std::string> decisions;
  std::vector<std::string> passes_run;
  int64_t result_bytes = 0;
  CapacityLedger ledger;

  const PlannedOp& OpOf(const Node& node) const { return ops[index.at(&node)]; }
  PlannedOp& OpOf(const Node& node) { return ops[index.at(&node)]; }
  // The op computing input `i` of `op`'s node.
  int InputOf(const PlannedOp& op, size_t i) const { return index.at(op.node->inputs[i].get()); }
};

// What computes `node` after lower_rechunk's replacements (itself when none).
const std::shared_ptr<const Node>& ResolveNode(const PlanDraft& draft,
                                               const std::shared_ptr<const Node>& node);

// The passes, in the order BuildPlan runs them.
Status Collect(PlanDraft& draft);
Status LowerRechunks(PlanDraft& draft);
Status Fuse(PlanDraft& draft);
Status FuseSiblings(PlanDraft& draft);
Status PlaceTiers(PlanDraft& draft);
Status ProjectMemory(PlanDraft& draft);
Status CheckBudget(const PlanDraft& draft);

// The tier policy for one intermediate of `bytes` (place_tiers.cc): forced
// disk or object; memory when it fits in what the ledger has left; memory
// spilling the excess per block when some is left (or memory/spill forced);
// else local disk. Claims from the ledger.
TierPlacement PlaceIntermediate(CapacityLedger& ledger, int64_t bytes, const ResolvedSpec& spec);

// Dependencies through fused chains, fused names, depth, consumers and group
// statistics of every materialized op (after any pass that changes what is
// materialized or fused).
void Link(PlanDraft& draft);
// Distinct non-virtual arrays and input blocks one task of op `root` reads,
// through the ops fused into it.
void GroupStats(const PlanDraft& draft, int root, int* sources, int64_t* blocks);
// The same over the ops of a sibling group (`roots`), whose tasks read a leaf
// that several of them read through one key function once.
void GroupStats(const PlanDraft& draft, std::span<const int> roots, int* sources,
                int64_t* blocks);

// The plan's invariants (topological order, consistent indices, fused ops
// inside materialized roots, dependencies on materialized producers, tiers
// only where someone reads, projections set after project_memory). Internal
// naming `after` (the pass that broke them) when one does not hold.
Status CheckInvariants(const PlanDraft& draft, std::string_view after);

// Cubed's fusion limits.
inline constexpr int kMaxFusedSourceArrays = 4;
inline constexpr int kMaxFusedInputBlocks = 10;

}  // namespace strata::internal_plan

#endif  // STRATA_PLAN_PASSES_INTERNAL_H_
