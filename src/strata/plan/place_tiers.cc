// The place_tiers pass: the tier of every intermediate (a materialized op
// that other tasks read) and why, in topological order, from the capacity
// ledger the rechunk lowering claimed from first. The policy for one
// intermediate is PlaceIntermediate; rechunk intermediates keep the placement
// their lowering chose (the exchange's published input, or a stage on disk).
#include <fmt/format.h>

#include "strata/base/byte_size.h"
#include "strata/plan/passes_internal.h"

namespace strata::internal_plan {

TierPlacement PlaceIntermediate(CapacityLedger& ledger, int64_t bytes, const ResolvedSpec& spec) {
  TierPlacement p;
  const int64_t left = ledger.left();
  if (spec.tier == TierChoice::kDisk) {
    p.tier = Tier::kDisk;
    p.reason = "disk tier forced";
  } else if (spec.tier == TierChoice::kObject) {
    p.tier = Tier::kObject;
    p.reason = "object tier forced";
  } else if (bytes <= left) {
    ledger.Claim(bytes);
    p.tier = Tier::kMemory;
    p.reason = fmt::format("{}{} fits in RAM: {} left of {} for intermediates ({})",
                           spec.tier == TierChoice::kMemory ? "memory tier forced; " : "",
                           FormatBytes(bytes), FormatBytes(left),
                           FormatBytes(ledger.capacity()), ledger.Formula());
  } else if (left > 0 || spec.tier == TierChoice::kMemory || spec.tier == TierChoice::kSpill) {
    // Spilling writes only the excess; the disk tier would write it all.
    ledger.Claim(bytes);
    p.tier = Tier::kMemory;
    p.reason = fmt::format(
        "{} exceeds the {} of RAM left: memory tier spilling ~{} per block to local disk "
        "(cheaper than writing all {} to the disk tier)",
        FormatBytes(bytes), FormatBytes(left), FormatBytes(bytes - left), FormatBytes(bytes));
  } else {
    p.tier = Tier::kDisk;
    p.reason = fmt::format("{} and no RAM left for intermediates; local disk", FormatBytes(bytes));
  }
  return p;
}

Status PlaceTiers(PlanDraft& d) {
  for (PlannedOp& op : d.ops) {
    op.tier = Tier::kNone;
    op.tier_reason.clear();
    op.stored_grid.reset();
    if (!op.materialized || op.consumers.empty()) continue;
    auto decided = d.placed.find(op.node.get());
    TierPlacement p = decided != d.placed.end()
                          ? decided->second
                          : PlaceIntermediate(d.ledger, op.node->nbytes(), d.spec);
    op.tier = p.tier;
    op.tier_reason = std::move(p.reason);
    op.stored_grid = std::move(p.stored_grid);
  }
  return Status::Ok();
}

}  // namespace strata::internal_plan
