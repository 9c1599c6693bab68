// CapacityLedger: the RAM a compute has for intermediates, and what has been
// claimed of it. The one place that number is computed:
//
//   capacity = total_system_mem - workers x allowed_mem
//              [- reserved_mem, the processes executor's coordinator] - results
//
// (what is left once every worker runs a task at its budget, the processes
// executor's coordinator process has its baseline and the results compute()
// returns are held; under TierChoice::kSpill, at most half the
// intermediates' bytes, so that blocks spill). The rechunk lowering and
// place_tiers claim from one ledger per plan, and the runtime's memory tier
// is given `capacity()` as its RAM budget.
//
// Thread-safety: a value, used by one planning thread.
#ifndef STRATA_PLAN_CAPACITY_LEDGER_H_
#define STRATA_PLAN_CAPACITY_LEDGER_H_

#include <cstdint>
#include <string>

#include "strata/plan/spec.h"

namespace strata {

class CapacityLedger {
 public:
  CapacityLedger() = default;
  // `intermediate_bytes`: what the plan's intermediates take together (for
  // kSpill's halving).
  static CapacityLedger For(const ResolvedSpec& spec, int64_t result_bytes,
                            int64_t intermediate_bytes);

  int64_t capacity() const { return capacity_; }
  int64_t left() const { return capacity_ - claimed_; }
  // Claims up to `bytes`; returns what was granted (all of it when it fits).
  int64_t Claim(int64_t bytes);
  // "total_system_mem 16 GB - 2 workers x allowed_mem 2 GB - results 0 B".
  std::string Formula() const;

 private:
  int64_t capacity_ = 0;
  int64_t claimed_ = 0;
  int64_t total_ = 0;
  int workers_ = 0;
  int64_t allowed_ = 0;
  int64_t results_ = 0;
  int64_t coordinator_ = 0;
  bool halved_ = false;
  bool tiny_ = false;
  int64_t ram_tier_cap_ = 0;  // ResolvedSpec::ram_tier_mem, when it bounded capacity_
};

}  // namespace strata

#endif  // STRATA_PLAN_CAPACITY_LEDGER_H_
