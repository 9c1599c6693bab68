// Running arrays: plan() describes the computation of a set of arrays and
// compute() runs it, both after the spec is resolved and the graph checked.
//
//   Result<std::shared_ptr<const Plan>> p = plan({climatology});
//   std::cout << (*p)->ToText();                 // ops, tasks, memory per task
//   Result<NDArray> r = compute(climatology);
//
// Everything before these two calls only builds a graph; here the planner
// (plan/planner.h) fuses ops, lowers rechunks, places intermediates and
// projects every task's memory against the Spec's allowed_mem, and the
// executor the Spec names (runtime/executor.h) runs the tasks. The arrays of
// one call share one plan, so what several of them read is computed once.
//
// Errors: the first error state among the arrays (api/array.h);
// InvalidArgument for no arrays, a spec that does not resolve, a graph that
// writes a Zarr array it reads or has too many blocks, and a plan whose
// projected memory per task exceeds allowed_mem; at run time the status of
// the first task that failed.
//
// Thread-safety: plan() is a pure function of immutable Array values;
// compute() blocks until the run ends (ComputeOptions::cancel stops it).
#ifndef STRATA_API_COMPUTE_H_
#define STRATA_API_COMPUTE_H_

#include <memory>
#include <vector>

#include "strata/api/array.h"
#include "strata/base/status.h"
#include "strata/core/ndarray.h"
#include "strata/plan/planner.h"
#include "strata/runtime/executor.h"

namespace strata {

// Plans the arrays without running anything.
Result<std::shared_ptr<const Plan>> plan(const std::vector<Array>& arrays,
                                         const PlanOptions& options = {});

// Runs the arrays' plan. Returns one NDArray per array (empty for to_zarr
// handles).
Result<std::vector<NDArray>> compute(const std::vector<Array>& arrays,
                                     const ComputeOptions& options = {},
                                     const PlanOptions& plan_options = {});
Result<NDArray> compute(const Array& array, const ComputeOptions& options = {},
                        const PlanOptions& plan_options = {});

}  // namespace strata

#endif  // STRATA_API_COMPUTE_H_
