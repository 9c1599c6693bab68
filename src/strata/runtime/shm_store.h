// ShmStore: a Plasma-like store of immutable chunks in shared memory, through
// which the worker processes of one host hand chunks to each other without
// copying them through a coordinator or storage.
//
// Objects. An object is the bytes of one chunk, named by an ObjectId (array,
// block). Its life:
//
//   Create(id, size)  -> a writable span in shared memory (state: created)
//   Seal(id)          -> immutable and visible to Get (state: sealed)
//   Get(ids, timeout) -> read-only spans, each pinning its object; blocks until
//                        every object is sealed, or DeadlineExceeded
//   Release(id)       -> drops one pin taken by Get in this process
//   Delete(id)        -> removes a sealed object; deferred while it is pinned
//   Abort(id)         -> removes an object that was created but not sealed
//
// A span stays valid until the pin it came with is released (Get) or the
// object is sealed or aborted (Create); a sealed object that nobody pins may be
// spilled and its memory reused at any time.
//
// Memory. One region is reserved up front (memfd, or an unnamed file in
// /dev/shm where memfd is unavailable): a header with the lock, the object
// table and the allocator state, then `capacity` bytes of object data carved
// into page runs by a size-class allocator (shm_allocator_internal.h). Pages
// are reused and never returned to the OS while the store lives; the kernel
// frees the region when the last process mapping it exits, so shared memory
// cannot outlive a run, however it ends. The data is made resident just ahead
// of the allocator's high mark, 64 MiB at a time, as 2 MiB huge pages where
// the kernel allows (MADV_COLLAPSE): faulting fresh 4 KiB shared-memory pages
// one by one in every process made the store several times slower than a
// process's own heap.
//
// Spilling. With a spill directory, sealed objects that nobody pins are
// written, least recently used first, to large files under a run directory
// `<spill_dir>/strata-shm-<pid>-<n>` (one sequential write per batch) when a
// Create or a restore finds no room, and proactively once usage passes the
// high-water mark after a Seal. Get restores a spilled object transparently.
// Create waits (back-pressure) while all memory is pinned or unsealed, up to
// its timeout; it fails with ResourceExhausted only when it cannot make room:
// the object is larger than the capacity, spilling is disabled, the spill
// disk or spill_limit is full, or the wait timed out.
//
// Processes. Every piece of shared state (object table, allocator, pins,
// spill bookkeeping) lives in the region, under one process-shared robust
// mutex. A process that dies holding the lock does not block the others: the
// next one to lock it rebuilds the derived structures from the object table.
// Pins and unsealed objects are recorded with the pid that holds them, so
// those of a dead process are reclaimed (ReclaimProcess, or automatically by
// any waiter at least once a second and on lock recovery). Waiting uses
// futexes on sequence counters in the region rather than pthread condition
// variables: with glibc's condvar a waiter killed while blocked can leave a
// later broadcast blocked forever (sourceware bug 21422).
//
// Sharing the store: a child forked after Create (or Attach) uses the same
// ShmStore object as its parent; an unrelated or exec'd process calls
// Attach(fd) with the descriptor from fd() (created close-on-exec: clear
// FD_CLOEXEC on a dup, or pass it over a socket). The process that called
// Create owns the store: destroying it there closes the store for everyone
// and removes the spill files. Destroying it anywhere else only unmaps.
//
// Crashes. Each run directory carries an owner marker (pid and process start
// time); Create (and ReclaimAbandonedRuns) removes run directories under the
// spill directory whose owner is gone, so a killed run leaves nothing behind
// once the next one starts.
//
// Limits. Objects take whole 4 KiB pages (tiny chunks waste most of theirs).
// Pins of more than 8 processes on one object at once are counted but cannot
// be reclaimed by pid. A dead process is recognised by its pid, so a pid
// reused before the reclaim keeps the dead process's pins. The pid is cached
// per process and refreshed by a pthread_atfork handler: children made with
// fork() are fine, raw clone() or vfork() children are not.
//
// Thread-safety: all methods are safe to call from any thread of any process
// sharing the store. Pins are counted per process, not per thread.
#ifndef STRATA_RUNTIME_SHM_STORE_H_
#define STRATA_RUNTIME_SHM_STORE_H_

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "strata/base/status.h"

namespace strata {

namespace internal_runtime {
struct ShmRegionHeader;
struct ShmObjectEntry;
struct PageRunTag;
class Deadline;
class ShmStoreTestPeer;
}  // namespace internal_runtime

// Names one chunk: the array (plan node) it belongs to and the flat index of
// the block within that array's chunk grid.
struct ObjectId {
  int64_t array = 0;
  int64_t block = 0;

  friend bool operator==(const ObjectId&, const ObjectId&) = default;
  // "3.17": array 3, block 17.
  std::string ToString() const;
};

struct ObjectIdHash {
  size_t operator()(const ObjectId& id) const;
};

struct ShmStoreOptions {
  // Named in error messages.
  std::string name = "shm";
  // Bytes of object data held in shared memory (e.g. from total_system_mem).
  int64_t capacity = 0;
  // Objects the table holds at once (each costs ~150 bytes of shared memory).
  int32_t max_objects = 1 << 16;

  // Parent of the run's spill directory (work_dir); empty: no spilling.
  std::string spill_dir;
  // Most bytes kept in spill files; 0: until the disk is full.
  int64_t spill_limit = 0;
  // After a Seal that takes usage above high_water * capacity, objects are
  // spilled until usage is at most low_water * capacity.
  double high_water = 0.8;
  double low_water = 0.7;
  // A spill writes at least this much (when that much can be spilled) so that
  // writes are large and sequential.
  int64_t spill_batch_bytes = int64_t{64} << 20;
  // A spill file takes batches until it is this large; then a new one starts.
  // A file is removed once none of its objects is left.
  int64_t spill_file_bytes = int64_t{1} << 30;

  // How long Create waits for room by default (back-pressure).
  std::chrono::milliseconds create_timeout{std::chrono::minutes(5)};
};

class ShmStore {
 public:
  using Timeout = std::chrono::milliseconds;
  static constexpr Timeout kNoWait{0};
  static constexpr Timeout kForever = Timeout::max();

  struct Stats {
    int64_t capacity = 0;
    int64_t used_bytes = 0;  // pages held by objects in memory
    int64_t peak_used_bytes = 0;
    int64_t sealed_bytes = 0;      // object bytes (not pages) sealed, in memory
    int64_t unsealed_bytes = 0;    // object bytes created, not yet sealed
    int64_t pinned_bytes = 0;      // object bytes pinned by a Get
    int64_t num_objects = 0;       // in the table, in memory or spilled
    int64_t num_spilled = 0;       // objects whose bytes are only on disk
    int64_t spilled_bytes = 0;     // object bytes only on disk
    int64_t spill_file_bytes = 0;  // size of the spill files now
    int64_t num_spill_files = 0;
    int64_t resident_bytes = 0;  // data made resident ahead of use; only grows
    // Totals since the store was created.
    int64_t bytes_spilled = 0;  // written to spill files
    int64_t objects_spilled = 0;
    int64_t spill_batches = 0;
    int64_t bytes_restored = 0;  // read back by Get
    int64_t objects_restored = 0;
    int64_t create_waits = 0;         // Creates that had to wait for room
    int64_t spill_errors = 0;         // failed spills (proactive ones are not reported otherwise)
    int64_t processes_reclaimed = 0;  // dead processes whose pins/objects were reclaimed
    int64_t lock_recoveries = 0;      // times the lock was found held by a dead process
  };

  // Reserves the region and, when options.spill_dir is set, creates the run
  // directory (after removing abandoned ones). InvalidArgument for bad options;
  // ResourceExhausted or another errno status when the region or the
  // directory cannot be created.
  static Result<std::unique_ptr<ShmStore>> Create(ShmStoreOptions options);

  // Maps the store whose region is `fd` (from fd() of the owner; the
  // descriptor is duplicated, the caller keeps its own). InvalidArgument when
  // `fd` is not a ShmStore region of this version.
  static Result<std::unique_ptr<ShmStore>> Attach(int fd);

  // Removes run directories under `spill_dir` whose owner process is gone.
  // Returns how many were removed.
  static Result<int> ReclaimAbandonedRuns(const std::string& spill_dir);

  ~ShmStore();
  ShmStore(const ShmStore&) = delete;
  ShmStore& operator=(const ShmStore&) = delete;

  // A new object of `size` bytes, writable until Seal. Waits up to `timeout`
  // (default options.create_timeout) for room. AlreadyExists if `id` is in
  // the store (in any state, including a delete deferred by readers);
  // ResourceExhausted as described in the file comment; FailedPrecondition
  // when the store is closed; Aborted when another process aborted the
  // object while this call waited for room.
  Result<std::span<std::byte>> Create(const ObjectId& id, int64_t size);
  Result<std::span<std::byte>> Create(const ObjectId& id, int64_t size, Timeout timeout);

  // Makes a created object immutable and wakes its waiters. NotFound if `id`
  // was never created (or was aborted); FailedPrecondition if already sealed.
  // May spill other objects (above the high-water mark); errors of that spill
  // are only counted in stats().spill_errors.
  Status Seal(const ObjectId& id);

  // Removes a created, unsealed object (from any process, e.g. for a crashed
  // worker). NotFound if absent; FailedPrecondition if sealed (use Delete).
  Status Abort(const ObjectId& id);

  // Pins every object in `ids` and returns their bytes, in order, restoring
  // spilled ones. Waits up to `timeout` for objects that are absent or
  // unsealed; on DeadlineExceeded (which names them) no pin is kept. Each
  // returned span needs one Release. ResourceExhausted or DataLoss when a
  // spilled object cannot be restored.
  Result<std::vector<std::span<const std::byte>>> Get(std::span<const ObjectId> ids,
                                                      Timeout timeout);
  Result<std::span<const std::byte>> Get(const ObjectId& id, Timeout timeout);

  // Drops one pin this process holds on `id`. NotFound if absent;
  // FailedPrecondition if this process holds no pin on it.
  Status Release(const ObjectId& id);

  // Deletes a sealed object: at once, or when its last pin is released (it
  // disappears from Contains and Get immediately). NotFound if absent or
  // already being deleted; FailedPrecondition if not sealed (use Abort).
  Status Delete(const ObjectId& id);

  // True when `id` is sealed and not being deleted (in memory or spilled).
  bool Contains(const ObjectId& id);

  // Drops every pin held by process `pid` and aborts the objects it created
  // but did not seal. For a worker that has exited (waitpid'ed); calling it
  // for a live process breaks that process's pins.
  Status ReclaimProcess(pid_t pid);

  int64_t capacity() const;
  // Bytes of shared memory held by objects now (a relaxed read, no lock).
  int64_t used() const;
  Stats stats();

  // The region's descriptor (close-on-exec), for Attach in another process,
  // or to read an object's bytes with pread at FileOffset(span.data()).
  int fd() const { return fd_; }
  // Where `p`, a byte of this process's mapping of the region, lies in fd().
  int64_t FileOffset(const std::byte* p) const { return p - base_; }
  // The run directory holding spill files; empty without spilling.
  const std::string& run_dir() const { return run_dir_; }
  // True in the process that called Create (and not in its forked children).
  bool is_owner() const;

 private:
  friend class internal_runtime::ShmStoreTestPeer;
  class Lock;
  struct SpillVictim;

  ShmStore(int fd, std::byte* base, int64_t region_size, bool owner, std::string run_dir);

  // Lookup and table maintenance; all under the lock.
  int32_t FindLocked(const ObjectId& id) const;
  void HashInsertLocked(int32_t index);
  void HashRemoveLocked(int32_t index);
  void LruPushBackLocked(int32_t index);
  void LruRemoveLocked(int32_t index);
  void ReleasePagesLocked(int32_t index);
  void DropDiskCopyLocked(int32_t index);
  void FreeEntryLocked(int32_t index);
  bool EvictableLocked(int32_t index) const;
  void AfterUnpinLocked(int32_t index);
  void NotifyObjectsLocked();
  void NotifySpaceLocked();
  // Releases the lock, sleeps until `seq` moves past `observed` or `until`,
  // and locks again. Returns false when `until` passed.
  bool WaitLocked(Lock& lock, bool for_space, uint32_t observed,
                  std::chrono::steady_clock::time_point until);
  // Runs every second of waiting: reclaims dead processes; an error when the
  // owner is gone.
  Status OnWaitSliceLocked();

  // Finds `pages` free pages, spilling or waiting for room until `deadline`.
  Result<int32_t> AllocatePagesLocked(Lock& lock, int32_t pages,
                                      internal_runtime::Deadline& deadline);
  // Making the data resident ahead of the allocator, in large batches of huge
  // pages, instead of one page fault per 4 KiB in every process. Under the
  // lock: when pages below `end` lie past the resident frontier, moves it
  // past `end` (by at least a batch) and returns the pages that the caller
  // must then make resident; an empty range otherwise. Without the lock:
  // MakeResident does it (best effort: the pages fault in as usual where the
  // kernel refuses). A process that dies in between leaves those pages to
  // fault in as usual.
  using PageRange = std::pair<int32_t, int32_t>;  // [first, second)
  PageRange ClaimResidencyLocked(int32_t end);
  void MakeResident(PageRange pages) const;
  // Spills unpinned sealed objects, least recently used first, until about
  // `wanted` bytes of memory are freed. Returns the bytes freed (0 when
  // nothing could be spilled); errors when the write fails.
  Result<int64_t> SpillLocked(Lock& lock, int64_t wanted);
  void MaybeSpillAboveHighWaterLocked(Lock& lock);
  // Reads a spilled object back into memory (not pinned). OK without effect
  // if the object changed meanwhile; the caller looks again.
  Status RestoreLocked(Lock& lock, int32_t index, internal_runtime::Deadline& deadline);

  // Drops pins, unsealed objects and unfinished I/O of processes that
  // `is_dead` selects, then rebuilds every derived structure (hash chains,
  // free-entry list, LRU, allocator, usage, spill file counts) from the
  // object table. Used for lock recovery and reclaiming dead processes.
  // Without `force`, does nothing unless some referenced process is dead.
  int RecoverLocked(const std::function<bool(pid_t)>& is_dead, bool force);
  int ReclaimDeadProcessesLocked();
  void RemoveUnusedSpillFilesLocked();
  std::string SpillFilePath(int32_t slot) const;
  std::string Describe(const ObjectId& id) const;
  std::string UsageSummaryLocked() const;

  // For ShmStoreTestPeer: checks the invariants of the shared structures
  // ("" when they hold); processes registered as waiting in Get; takes the
  // lock and never releases it (for a process that then dies holding it);
  // wipes the derived structures (lock held).
  std::string ValidateForTesting();
  int32_t ObjectWaitersForTesting() const;
  void LockForTesting();
  void ScrambleDerivedStateForTesting();

  int fd_ = -1;
  std::byte* base_ = nullptr;  // the mapping; unmapped by the destructor
  int64_t region_size_ = 0;
  // Views into the mapping.
  internal_runtime::ShmRegionHeader* header_ = nullptr;
  internal_runtime::ShmObjectEntry* entries_ = nullptr;
  int32_t* buckets_ = nullptr;
  internal_runtime::PageRunTag* page_tags_ = nullptr;
  std::byte* data_ = nullptr;
  bool created_here_ = false;
  pid_t creator_pid_ = 0;
  std::string run_dir_;
  std::string name_;
};

}  // namespace strata

template <>
struct std::hash<strata::ObjectId> : strata::ObjectIdHash {};

#endif  // STRATA_RUNTIME_SHM_STORE_H_
