// What a run leaves behind if it dies, and how a later run takes it back.
//
// A compute with intermediates owns:
//   - a run directory `<work_dir>/strata-run-<pid>-<n>-<hex>` (disk-tier blocks,
//     spill files, the ShmStore's spill files and crash markers). It holds a
//     file `lock` on which the owner keeps an exclusive flock for its whole
//     life (forked worker processes share it). The directory is made under a
//     hidden name, locked, then renamed into place, so a run directory
//     without a held lock has no live owner;
//   - with the object tier, a prefix `<tier prefix>/<run directory name>`
//     of blocks, whose first object `owner` names the process (boot id of
//     its host, pid, start time). A bucket has no locks: only an owner on
//     this host (same boot id) can be found dead, so another host's objects
//     are never touched.
// A run that ends normally removes both. A run killed with SIGKILL cannot;
// the next compute using the same work_dir or tier prefix removes what dead
// owners left (ReclaimDeadRunDirectories, ReclaimDeadObjectRuns). Temporary
// files a killed writer left in a destination are LocalStore's to reclaim
// (Store::ReclaimTempFiles, called when an array is created or resumed).
//
// Thread-safety: RunDirectory is owned by one Execution; the free functions
// may be called from any thread.
#ifndef STRATA_RUNTIME_RUN_LITTER_H_
#define STRATA_RUNTIME_RUN_LITTER_H_

#include <memory>
#include <string>

#include "strata/base/status.h"
#include "strata/storage/store.h"

namespace strata {

inline constexpr std::string_view kRunDirectoryPrefix = "strata-run-";

// A run directory held by this process.
//   `<work_dir>/strata-run-<pid>-<n>-<hex>/lock`
class RunDirectory {
 public:
  // Creates `<base>/strata-run-<pid>-<n>-<random hex>` (and `base` if
  // missing), locked. The random part keeps names apart across hosts, which
  // share pids (its name also names the run's object-tier prefix).
  static Result<std::unique_ptr<RunDirectory>> Create(const std::string& base);
  // Releases the lock; the directory itself is removed by its user (Cleanup).
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  const std::string& path() const { return path_; }
  // "strata-run-<pid>-<n>-<hex>".
  std::string name() const;

 private:
  RunDirectory(std::string path, int lock_fd) : path_(std::move(path)), lock_fd_(lock_fd) {}
  std::string path_;
  int lock_fd_;
};

// Removes every run directory under `work_dir` whose owner is gone (its
// lock is free, or it has no lock and its pid is not alive here). Returns
// how many were removed.
Result<int> ReclaimDeadRunDirectories(const std::string& work_dir);

// Writes `<run_prefix>/owner`, naming this process, before any block.
// `run_prefix` is the tier prefix joined with the run directory's name.
Status WriteObjectRunOwner(Store& store, const std::string& run_prefix);
// Removes it, once the run's blocks are gone.
Status RemoveObjectRunOwner(Store& store, const std::string& run_prefix);

// Removes the objects of every run under `tier_prefix` ("" or a key prefix)
// whose owner object names a dead process of this host. Returns how many
// runs were removed.
Result<int> ReclaimDeadObjectRuns(Store& store, const std::string& tier_prefix);

}  // namespace strata

#endif  // STRATA_RUNTIME_RUN_LITTER_H_
