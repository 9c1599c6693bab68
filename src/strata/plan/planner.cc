#include "strata/plan/planner.h"

#include <fmt/format.h>

#include <algorithm>

#include "strata/base/byte_size.h"
#include "strata/plan/passes_internal.h"

namespace strata {

std::string_view TierName(Tier tier) {
  switch (tier) {
    case Tier::kNone: return "-";
    case Tier::kMemory: return "memory";
    case Tier::kDisk: return "disk";
    case Tier::kObject: return "object";
  }
  return "?";
}

const PlannedOp* Plan::Find(const Node* node) const {
  int i = IndexOf(node);
  return i < 0 ? nullptr : &ops_[i];
}

int Plan::IndexOf(const Node* node) const {
  auto it = index_.find(node);
  return it == index_.end() ? -1 : it->second;
}

int64_t Plan::total_tasks() const {
  int64_t n = 0;
  for (const PlannedOp& op : ops_) n += op.num_tasks();
  return n;
}

Result<std::shared_ptr<const Plan>> BuildPlan(
    const std::vector<std::shared_ptr<const Node>>& outputs, const ResolvedSpec& spec,
    const PlanOptions& options) {
  using internal_plan::PlanDraft;
  for (const std::string& name : options.disabled_passes) {
    if (std::find(std::begin(kOptionalPasses), std::end(kOptionalPasses), name) ==
        std::end(kOptionalPasses)) {
      return InvalidArgumentError(fmt::format("unknown optimizer pass '{}' to disable (known: {})",
                                              name, fmt::join(kOptionalPasses, ", ")));
    }
  }
  PlanDraft d;
  d.spec = spec;
  d.requested = outputs;
  struct Pass {
    std::string_view name;
    Status (*run)(PlanDraft&);
    bool optional;
  };
  static constexpr Pass kPasses[] = {
      {"collect", &internal_plan::Collect, false},
      {"lower_rechunk", &internal_plan::LowerRechunks, false},
      {"fuse", &internal_plan::Fuse, true},
      {"fuse_siblings", &internal_plan::FuseSiblings, true},
      {"place_tiers", &internal_plan::PlaceTiers, false},
      {"project_memory", &internal_plan::ProjectMemory, false},
  };
  // Spec::fuse and PlanOptions::fuse are one switch (planner.h); every
  // optional pass is a fusion.
  const bool fusion_on = spec.fuse && options.fuse;
  for (const Pass& pass : kPasses) {
    if (pass.optional && (!fusion_on || options.disabled_passes.count(std::string(pass.name)))) {
      continue;
    }
    // The dask and ray executors keep one block per task (its result): a
    // task with several outputs has no place there.
    if (pass.name == "fuse_siblings" && IsExternalExecutor(spec.executor)) continue;
    STRATA_RETURN_IF_ERROR(pass.run(d));
    d.passes_run.emplace_back(pass.name);
#ifndef NDEBUG
    STRATA_RETURN_IF_ERROR(internal_plan::CheckInvariants(d, pass.name));
#endif
  }
  STRATA_RETURN_IF_ERROR(internal_plan::CheckInvariants(d, "check"));
  STRATA_RETURN_IF_ERROR(internal_plan::CheckBudget(d));
  d.passes_run.emplace_back("check");

  auto plan = std::make_shared<Plan>();
  plan->spec_ = spec;
  plan->ops_ = std::move(d.ops);
  plan->index_ = std::move(d.index);
  plan->outputs_ = std::move(d.outputs);
  plan->decisions_ = std::move(d.decisions);
  plan->passes_run_ = std::move(d.passes_run);
  plan->result_bytes_ = d.result_bytes;
  plan->ram_tier_capacity_ = d.ledger.capacity();
  return std::shared_ptr<const Plan>(std::move(plan));
}

}  // namespace strata
