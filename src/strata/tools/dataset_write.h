// Dataset archive jobs: a backfill (region write) or an append of a patch
// dataset SRC (a Zarr group, or one array) into an archive DST, all or
// nothing, with values converted between the two CF encodings
// (cf_encoding.h).
//
// A job runs in four steps, the archive's readers seeing the old dataset
// until the last:
//   1. plan      both hierarchies are read and every member matched, placed
//                and checked (shapes, dimensions, encodings) before anything
//                is written; members without the job's dimensions (lat, lon
//                beside an append along time) must hold the archive's values.
//   2. stage     a journal (`.strata-journal` in DST) records the job; every
//                chunk the job changes is encoded anew (old values kept where
//                the patch covers a chunk partly) and written under
//                `.strata-staging/` in DST, invisible to readers.
//   3. publish   the journal turns to "publishing" and lists every staged
//                chunk; each is renamed over its chunk (chunks that became
//                all fill value are erased), then each grown member's
//                metadata is written, then the consolidated metadata (when
//                DST has some), and the journal is removed.
//   4. recover   a job that finds a journal first finishes the one it
//                records: "staging" is rolled back (staged chunks dropped),
//                "publishing" rolled forward; a rerun of the interrupted job
//                itself then stops there.
// Readers of the consolidated metadata (xarray's default) see the new shapes
// only when step 3 writes it, and chunks of an append lie beyond the old
// shapes, so an interrupted append is never visible. A backfill's renames in
// step 3 replace visible chunks: a reader during them (milliseconds) or after
// a kill inside them sees part of the new region until a rerun finishes it.
//
// Thread-safety: one job per DST at a time (a lock file in a local DST
// refuses a second; other stores are not locked).
#ifndef STRATA_TOOLS_DATASET_WRITE_H_
#define STRATA_TOOLS_DATASET_WRITE_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/box.h"
#include "strata/storage/store.h"

namespace strata {

inline constexpr std::string_view kDatasetJournalKey = ".strata-journal";
inline constexpr std::string_view kDatasetStagingDir = ".strata-staging";
inline constexpr std::string_view kDatasetLockKey = ".strata-job.lock";

struct DatasetWriteOptions {
  std::string src;  // the patch: a group (or an array)
  std::string dst;  // the archive: a group (or an array)
  // Backfill: where SRC lands, by dimension name (dimensions not named start
  // at 0 and must be whole); for a one-array job also by axis ("0", "2").
  std::vector<std::pair<std::string, Index>> at;
  // Append: along this dimension (a name, or an axis for a one-array job).
  std::optional<std::string> append_dim;
  bool quiet = false;
  // Tests: the stores to use instead of opening src/dst as URLs (then src and
  // dst are key prefixes within them).
  std::shared_ptr<Store> src_store, dst_store;
  // Tests: stop with this error after staging (before "publishing") or after
  // this many chunk renames of the publish.
  bool fail_before_publish = false;
  int64_t fail_after_renames = -1;
};

struct DatasetWriteReport {
  int members_written = 0;   // arrays changed
  int members_checked = 0;   // arrays outside the job's dimensions, found equal
  int64_t chunks_written = 0;
  int64_t chunks_erased = 0;   // became all fill value
  int members_copied = 0;      // written by copying stored bytes (equal encodings)
  bool recovered = false;      // an interrupted job was finished (or rolled back) first
  bool finished_interrupted = false;  // that job was this one: nothing more to do
};

// Runs the job (see the file comment). InvalidArgument for a patch that does
// not fit (names the member, the dimension and both extents), a value the
// archive's encoding cannot hold (names the member and the value), a member
// outside the job's dimensions whose values differ; FailedPrecondition when
// another job holds DST's lock or DST's consolidated metadata disagrees with
// a member's own. Nothing visible changes unless it returns OK (see the file
// comment for a kill during the publish).
Result<DatasetWriteReport> RunDatasetWrite(const DatasetWriteOptions& options);

// Finishes (or rolls back) an interrupted job recorded in the group or array
// at `prefix` of `store`; false when there was none.
Result<bool> RecoverDatasetJob(Store& store, const std::string& prefix);

}  // namespace strata

#endif  // STRATA_TOOLS_DATASET_WRITE_H_
