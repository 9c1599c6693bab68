// The project_memory pass: each materialized op's per-task memory, by the
// memory model (memory_model.h), after tiers are known (reading the object
// tier stages a block).
#include "strata/plan/memory_model.h"
#include "strata/plan/passes_internal.h"

namespace strata::internal_plan {

Status ProjectMemory(PlanDraft& d) {
  MemoryModel model(d.ops, d.index, d.spec.reserved_mem);
  for (PlannedOp& op : d.ops) op.projected_mem = op.runs_tasks() ? model.Project(op.index) : 0;
  return Status::Ok();
}

}  // namespace strata::internal_plan
