// plan and compute: the spec resolved once, the graph checked, then the
// planner and the executor.
#include "strata/api/compute.h"

#include <memory>
#include <utility>
#include <vector>

#include "strata/api/internal.h"
#include "strata/api/plan_checks.h"

namespace strata {

Result<std::shared_ptr<const Plan>> plan(const std::vector<Array>& arrays,
                                         const PlanOptions& options) {
  STRATA_RETURN_IF_ERROR(internal_api::FirstError(arrays));
  if (arrays.empty()) return InvalidArgumentError("plan: no arrays given");
  STRATA_ASSIGN_OR_RETURN(ResolvedSpec spec, ResolveSpec(*internal_api::SpecOf(arrays)));
  std::vector<std::shared_ptr<const Node>> nodes;
  for (const Array& a : arrays) nodes.push_back(a.node());
  STRATA_RETURN_IF_ERROR(internal_api::CheckGridLimits(nodes));
  STRATA_RETURN_IF_ERROR(internal_api::CheckNoAliasing(nodes));
  return BuildPlan(nodes, spec, options);
}

Result<std::vector<NDArray>> compute(const std::vector<Array>& arrays,
                                     const ComputeOptions& options,
                                     const PlanOptions& plan_options) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const Plan> p, plan(arrays, plan_options));
  STRATA_ASSIGN_OR_RETURN(ComputeResult result, Execute(*p, options));
  std::vector<NDArray> out;
  for (auto& a : result.arrays) out.push_back(a ? std::move(*a) : NDArray());
  return out;
}

Result<NDArray> compute(const Array& array, const ComputeOptions& options,
                        const PlanOptions& plan_options) {
  STRATA_ASSIGN_OR_RETURN(std::vector<NDArray> out,
                          compute(std::vector<Array>{array}, options, plan_options));
  return std::move(out[0]);
}

}  // namespace strata
