#include "strata/runtime/commit_target.h"

#include <fmt/format.h>

#include "strata/storage/zarr/zarr_array.h"

namespace strata {

Status CommitTarget(const Plan& plan, const Node& store_node) {
  for (const PlannedOp& op : plan.ops()) {
    if (op.node->kind != NodeKind::kZarrSource || !op.node->zarr) continue;
    STRATA_RETURN_IF_ERROR(op.node->zarr->CheckUnchanged().WithContext(
        fmt::format("not finishing {}", store_node.target->url())));
  }
  return store_node.target->array()->Commit();
}

Status ReclaimDeadWritersFiles(const Plan& plan) {
  Status first;
  for (const PlannedOp& op : plan.ops()) {
    if (op.node->kind != NodeKind::kStore || !op.node->target) continue;
    std::shared_ptr<ZarrArray> array = op.node->target->array();
    if (!array) continue;  // never opened
    Status s = array->ReclaimDeadWritersFiles();
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

Status FlushFillJournals(const Plan& plan) {
  Status first;
  for (const PlannedOp& op : plan.ops()) {
    if (op.node->kind != NodeKind::kStore || !op.node->target) continue;
    std::shared_ptr<ZarrArray> array = op.node->target->array();
    if (!array) continue;  // never opened
    Status s = array->FlushFillJournal();
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

}  // namespace strata
