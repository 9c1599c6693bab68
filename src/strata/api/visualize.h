// visualize: a plan as a picture, as Cubed's and Dask's visualize() draw it.
//
// PlanToDot writes Graphviz DOT: one node per op of the plan (materialized ops
// as boxes with their tasks, projected memory per task and tier; sources and
// virtual arrays as ellipses; ops fused into another drawn inside a cluster
// with it) and one edge per input. visualize() plans the arrays and renders
// that with Graphviz's `dot` (Debian's graphviz), by the file's extension:
// .svg, .png, .pdf, or .dot for the text itself.
//
// Thread-safety: pure functions; visualize writes only `filename`.
#ifndef STRATA_API_VISUALIZE_H_
#define STRATA_API_VISUALIZE_H_

#include <string>
#include <vector>

#include "strata/api/array.h"
#include "strata/base/status.h"
#include "strata/plan/planner.h"

namespace strata {

std::string PlanToDot(const Plan& plan);

// Plans `arrays` and writes the picture to `filename`. InvalidArgument for an
// unknown extension; Unavailable when `dot` cannot be run; the plan's own
// errors otherwise. Nothing is computed.
Status visualize(const std::vector<Array>& arrays, const std::string& filename,
                 const PlanOptions& options = {});

}  // namespace strata

#endif  // STRATA_API_VISUALIZE_H_
