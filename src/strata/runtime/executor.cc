#include "strata/runtime/executor.h"

#include "strata/base/mpi.h"
#include "strata/runtime/dispatcher.h"

namespace strata {

Result<ComputeResult> Execute(const Plan& plan, const ComputeOptions& options) {
  if (plan.spec().executor == ExecutorKind::kMpi && !mpi::Active()) {
    STRATA_RETURN_IF_ERROR(mpi::Init());  // a plan made from a spec resolved elsewhere
  }
  return MakeDispatcher(plan, options)->Execute();
}

}  // namespace strata
