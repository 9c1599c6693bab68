#include "strata/plan/capacity_ledger.h"

#include <fmt/format.h>

#include <algorithm>

#include "strata/base/byte_size.h"
#include "strata/base/tuning.h"

namespace strata {

CapacityLedger CapacityLedger::For(const ResolvedSpec& spec, int64_t result_bytes,
                                   int64_t intermediate_bytes) {
  CapacityLedger l;
  l.total_ = spec.total_system_mem;
  l.workers_ = spec.workers;
  l.allowed_ = spec.allowed_mem;
  l.results_ = result_bytes;
  // The processes executor's coordinator is a process of its own, beside the
  // workers' budgets: its baseline is budgeted by one reserved_mem.
  l.coordinator_ = spec.executor == ExecutorKind::kProcesses ? spec.reserved_mem : 0;
  int64_t capacity = spec.total_system_mem - static_cast<int64_t>(spec.workers) * spec.allowed_mem -
                     l.coordinator_ - result_bytes;
  if (spec.ram_tier_mem > 0 && spec.ram_tier_mem < capacity) {
    // The ray executor's memory tier is the object store: no more fits.
    capacity = spec.ram_tier_mem;
    l.ram_tier_cap_ = spec.ram_tier_mem;
  }
  if (spec.tier == TierChoice::kSpill && intermediate_bytes / 2 < capacity) {
    capacity = intermediate_bytes / 2;
    l.halved_ = true;
  }
  if (const int64_t cap = GetTuning().ram_for_intermediates_cap; cap >= 0 && cap < capacity) {
    capacity = cap;
    l.halved_ = false;
    l.tiny_ = true;
  }
  l.capacity_ = std::max<int64_t>(0, capacity);
  return l;
}

int64_t CapacityLedger::Claim(int64_t bytes) {
  const int64_t granted = std::clamp<int64_t>(bytes, 0, left());
  claimed_ += granted;
  return granted;
}

std::string CapacityLedger::Formula() const {
  std::string f =
      fmt::format("total_system_mem {} - {} workers x allowed_mem {} - results {}",
                  FormatBytes(total_), workers_, FormatBytes(allowed_), FormatBytes(results_));
  if (coordinator_ > 0) {
    f += fmt::format(" - coordinator's reserved_mem {}", FormatBytes(coordinator_));
  }
  if (ram_tier_cap_ > 0) {
    f += fmt::format("; capped by the object store's {}", FormatBytes(ram_tier_cap_));
  }
  if (halved_) f += "; spill tier forced: half the intermediates";
  if (tiny_) f += "; capped by STRATA_TINY";
  return f;
}

}  // namespace strata
