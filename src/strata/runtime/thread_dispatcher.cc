#include "strata/runtime/thread_dispatcher.h"

#include <fmt/format.h>

namespace strata {

Result<std::unique_ptr<IntermediateStore>> ThreadDispatcher::MakeMemoryTier(const PlannedOp& op) {
  STRATA_RETURN_IF_ERROR(MakeRunDir(/*create=*/false));
  return std::unique_ptr<IntermediateStore>(std::make_unique<MemoryIntermediateStore>(
      op.node->name, op.node->dtype, tier_pool_, ram_budget_,
      fmt::format("{}/{}-spill", run_dir_, op.node->name)));
}

AttemptOutcome ThreadDispatcher::RunAttempt(const Attempt& attempt, int worker) {
  AttemptOutcome out;
  out.status = runner_->Run(attempt.task, attempt.number, &out.figures,
                            SupersededCheck(worker, attempt.id));
  return out;
}

std::unique_ptr<Dispatcher> MakeThreadDispatcher(const Plan& plan, const ComputeOptions& options) {
  return std::make_unique<ThreadDispatcher>(plan, options, plan.spec().workers);
}

}  // namespace strata
