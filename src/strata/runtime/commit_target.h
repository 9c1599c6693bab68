// Committing a store op's Zarr array at the end of a run (its metadata is
// written last, so until then the output reads as incomplete), after
// checking that no Zarr array the plan read was rewritten meanwhile
// (ZarrArray::CheckUnchanged): a source replaced during the run leaves the
// output incomplete, with an error saying why, never finished with a mix of
// old and new data.
//
// Thread-safety: as ZarrArray (any thread).
#ifndef STRATA_RUNTIME_COMMIT_TARGET_H_
#define STRATA_RUNTIME_COMMIT_TARGET_H_

#include "strata/base/status.h"
#include "strata/plan/node.h"
#include "strata/plan/planner.h"

namespace strata {

// FailedPrecondition (naming the source) when a Zarr source of `plan` changed
// since it was opened; otherwise commits `store_node`'s target.
Status CommitTarget(const Plan& plan, const Node& store_node);

// After worker processes stopped: removes from every store op's array the
// temporary files of writers that died (ZarrArray::ReclaimDeadWritersFiles),
// those of attempts killed after their array was committed too. Every target
// is tried; the first error is returned.
Status ReclaimDeadWritersFiles(const Plan& plan);

// After a failed run: writes what the store ops' arrays hold in memory of
// their fill journals (ZarrArray::FlushFillJournal), so that a rerun skips
// the chunks found all fill too. Every target is tried; the first error is
// returned.
Status FlushFillJournals(const Plan& plan);

}  // namespace strata

#endif  // STRATA_RUNTIME_COMMIT_TARGET_H_
