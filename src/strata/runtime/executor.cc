#include "strata/runtime/executor.h"

#include "strata/base/mpi.h"
#include "strata/runtime/dispatcher.h"

namespace strata {

Result<ComputeResult> Execute(const Plan& plan, const ComputeOptions& options) {
  if (plan.spec().executor == ExecutorKind::kMpi && !mpi::Active()) {
    STRATA_RETURN_IF_ERROR(mpi::Init());  // a plan made from a spec resolved elsewhere
  }
  if (plan.spec().executor == ExecutorKind::kDask && !options.external) {
    // Before anything is created: the dask and ray executors are driven
    // from Python.
    return FailedPreconditionError(
        "the dask executor runs from Python, with a distributed.Client: "
        "strata.Spec(executor=\"dask\", client=client)");
  }
  if (plan.spec().executor == ExecutorKind::kRay && !options.external) {
    return FailedPreconditionError(
        "the ray executor runs from Python: strata.Spec(executor=\"ray\", address=...)");
  }
  return MakeDispatcher(plan, options)->Execute();
}

}  // namespace strata
