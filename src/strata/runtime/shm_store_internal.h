// The shared-memory store's region layout (what every process mapping it
// reads and writes), the store's lock, and the operating-system helpers the
// store's files share: shm_store.cc (creation, the object API),
// shm_store_table.cc (the object table, recovery, test hooks),
// shm_store_spill.cc (allocation, spilling, restoring) and shm_store_os.cc
// (processes, futexes, files, mappings). Private to those files.
#ifndef STRATA_RUNTIME_SHM_STORE_INTERNAL_H_
#define STRATA_RUNTIME_SHM_STORE_INTERNAL_H_

#include <pthread.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "strata/base/check.h"
#include "strata/runtime/shm_allocator_internal.h"
#include "strata/runtime/shm_store.h"

namespace strata {
namespace internal_runtime {

constexpr uint64_t kRegionMagic = 0x314d48534154534eull;  // "NSTASHM1"
constexpr uint32_t kLayoutVersion = 2;
constexpr int kMaxHolders = 8;
constexpr int kMaxSpillFiles = 4096;
// The data starts at a multiple of this in the file, and every mapping of the
// region starts at a multiple of it in memory, so that each 2 MiB of data can
// be one PMD-mapped huge page (see MakeResident).
constexpr int64_t kDataAlignment = int64_t{2} << 20;
constexpr int32_t kPagesPerHugePage = static_cast<int32_t>(kDataAlignment / kShmPageSize);
// The data is made resident this much at a time, ahead of the allocator.
constexpr int32_t kResidencyBatchPages = static_cast<int32_t>((int64_t{64} << 20) / kShmPageSize);

enum EntryState : uint32_t {
  kFree = 0,      // slot unused
  kReserved = 1,  // Create is waiting for room; no pages yet
  kCreated = 2,   // writable by its creator
  kSealed = 3,    // immutable
};

enum EntryFlags : uint32_t {
  kResident = 1 << 0,       // bytes valid in shared memory at first_page
  kOnDisk = 1 << 1,         // bytes valid in spill file spill_slot at spill_offset
  kDeletePending = 1 << 2,  // deleted while pinned or under I/O
  kSpilling = 1 << 3,       // io_pid is writing it to a spill file
  kRestoring = 1 << 4,      // io_pid is reading it into first_page
  kInLru = 1 << 5,          // linked in the LRU list of evictable objects
};

// One process's pins on an object.
struct ShmHolder {
  int32_t pid;
  int32_t count;
};

struct ShmObjectEntry {
  ObjectId id;
  uint32_t state;
  uint32_t flags;
  int64_t size;
  int32_t first_page;  // -1 when no pages are held
  int32_t num_pages;
  int32_t creator_pid;  // for kReserved and kCreated
  int32_t io_pid;       // for kSpilling and kRestoring
  int32_t spill_slot;   // -1 when there is no disk copy
  int32_t extra_pins;   // pins of processes beyond kMaxHolders (not attributable)
  int64_t spill_offset;
  uint64_t tick;  // last time it became evictable
  // Derived: rebuilt from the fields above by RecoverLocked.
  int32_t hash_next;  // hash chain for entries in use, free list otherwise
  int32_t lru_prev;
  int32_t lru_next;
  int32_t reserved0;
  ShmHolder holders[kMaxHolders];
};

struct SpillFileSlot {
  uint32_t generation;  // names the file; 0 when the slot is unused
  int32_t live_objects;
  int64_t end;  // bytes written or reserved
  int64_t live_bytes;
};

struct ShmCounters {
  int64_t bytes_spilled;
  int64_t objects_spilled;
  int64_t spill_batches;
  int64_t bytes_restored;
  int64_t objects_restored;
  int64_t create_waits;
  int64_t spill_errors;
  int64_t processes_reclaimed;
  int64_t lock_recoveries;
};

struct ShmRegionHeader {
  // Written once by the creator, read-only afterwards.
  uint64_t magic;
  uint32_t version;
  uint32_t header_bytes;
  int64_t region_size;
  int64_t capacity;
  int32_t num_pages;
  int32_t max_objects;
  int32_t num_buckets;
  int32_t owner_pid;
  uint64_t owner_start_time;
  int64_t entries_offset;
  int64_t buckets_offset;
  int64_t tags_offset;
  int64_t data_offset;
  int32_t spill_enabled;
  int32_t reserved0;
  double high_water;
  double low_water;
  int64_t spill_limit;
  int64_t spill_batch_bytes;
  int64_t spill_file_bytes;
  int64_t create_timeout_ms;
  char name[64];
  char run_dir[2048];

  pthread_mutex_t mutex;
  // Futex words: bumped (under the mutex) when objects are sealed or restored
  // (object_seq) and when memory or table slots may have freed (space_seq).
  std::atomic<uint32_t> object_seq;
  std::atomic<uint32_t> space_seq;
  // Processes blocked on each word; may overcount after a waiter died, which
  // only costs a wake-up call.
  std::atomic<int32_t> object_waiters;
  std::atomic<int32_t> space_waiters;
  std::atomic<int64_t> used_bytes;

  // Under the mutex.
  int32_t closed;
  int32_t entries_in_use_limit;  // entries at or past this index were never used
  int32_t free_entry_head;
  int32_t lru_head;
  int32_t lru_tail;
  int32_t num_objects;
  uint64_t tick;
  int64_t peak_used_bytes;
  int32_t spiller_pid;        // the one process spilling now, or 0
  int32_t active_spill_slot;  // the file batches are appended to, or -1
  uint32_t spill_generation;
  // Data pages below this have been made resident (or are being made so by
  // the process that moved it); only grows. See ClaimResidencyLocked.
  int32_t resident_pages;
  int64_t spill_file_bytes_total;
  ShmCounters counters;
  SpillFileSlot spill_files[kMaxSpillFiles];
  PageAllocatorState allocator;
};

// A timeout that reads the clock only once a call has to wait: a Get or
// Create that finds what it needs at once costs no clock read.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Deadline(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  Clock::time_point at() {
    if (!started_) {
      started_ = true;
      start_ = Clock::now();
      const auto room =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - start_);
      at_ = timeout_ >= room ? Clock::time_point::max()
                             : start_ + std::max(timeout_, std::chrono::milliseconds(0));
    }
    return at_;
  }
  // Milliseconds since the clock was first read.
  int64_t waited_ms() const {
    if (!started_) return 0;
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
  }

 private:
  std::chrono::milliseconds timeout_;
  bool started_ = false;
  Clock::time_point start_;
  Clock::time_point at_;
};

constexpr auto kWaitSlice = std::chrono::seconds(1);
constexpr char kRunDirPrefix[] = "strata-shm-";

using Clock = std::chrono::steady_clock;

pid_t CurrentPid();

int64_t RoundUp(int64_t n, int64_t multiple);

int32_t PagesFor(int64_t size);

uint64_t Mix64(uint64_t x);

// Start time of a process in clock ticks since boot (field 22 of
// /proc/<pid>/stat), which tells a process from a later one with its pid;
// nullopt when it is gone.
std::optional<uint64_t> ProcessStartTime(pid_t pid);

// False when `pid` has exited (including a zombie not yet reaped).
bool ProcessAlive(pid_t pid);

void FutexWait(std::atomic<uint32_t>* word, uint32_t observed, Clock::time_point until);

void FutexWakeAll(std::atomic<uint32_t>* word);

int32_t PinCount(const ShmObjectEntry& e);

void AddPin(ShmObjectEntry& e, pid_t pid);

bool RemovePin(ShmObjectEntry& e, pid_t pid);

const char* StateName(const ShmObjectEntry& e);

// Writes all of `iov` at `offset`, going on after short writes.
Status WriteFully(int fd, std::vector<iovec> iov, int64_t offset, const std::string& what);

Status ReadFully(const std::string& path, int64_t offset, std::byte* out, int64_t size);

Result<int> CreateRegionFd();

// Maps `size` bytes of the region `fd`, shared, at an address that is a
// multiple of kDataAlignment. mmap promises only 4 KiB alignment, and a huge
// page is mapped whole (one PMD entry, one fault) only where the address and
// the file offset agree modulo 2 MiB.
Result<std::byte*> MapRegion(int fd, int64_t size);

}  // namespace internal_runtime

// ---------------------------------------------------------------- Lock

// The region's robust mutex. Finding it held by a dead process (EOWNERDEAD)
// means the structures may be half-updated: they are rebuilt from the object
// table before the lock is marked consistent.
class ShmStore::Lock {
 public:
  explicit Lock(ShmStore* store) : store_(store) { Acquire(); }
  ~Lock() {
    if (held_) Release();
  }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

  void Acquire() {
    pthread_mutex_t* mutex = &store_->header_->mutex;
    const int rc = pthread_mutex_lock(mutex);
    if (rc == EOWNERDEAD) {
      held_ = true;
      ++store_->header_->counters.lock_recoveries;
      store_->RecoverLocked([](pid_t pid) { return !internal_runtime::ProcessAlive(pid); }, /*force=*/true);
      pthread_mutex_consistent(mutex);
      return;
    }
    STRATA_CHECK(rc == 0) << "locking the shared-memory store: " << std::strerror(rc);
    held_ = true;
  }

  void Release() {
    held_ = false;
    pthread_mutex_unlock(&store_->header_->mutex);
  }

 private:
  ShmStore* store_;
  bool held_ = false;
};

struct ShmStore::SpillVictim {
  int32_t index;
  int64_t offset;  // in the spill file
};

}  // namespace strata

#endif  // STRATA_RUNTIME_SHM_STORE_INTERNAL_H_
