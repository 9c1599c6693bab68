#include "strata/runtime/shm_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <new>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "strata/base/byte_size.h"
#include "strata/base/check.h"
#include "strata/runtime/shm_allocator_internal.h"

// Older libc headers lack these (Linux 6.1 and 5.14); an older kernel refuses
// them with EINVAL, which MakeResident tolerates.
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

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

}  // namespace internal_runtime

using internal_runtime::Deadline;
using internal_runtime::kShmPageSize;
using internal_runtime::PageAllocator;
using internal_runtime::PageRunTag;
using internal_runtime::ShmObjectEntry;
using internal_runtime::ShmRegionHeader;
using Clock = std::chrono::steady_clock;

namespace {

using namespace internal_runtime;  // NOLINT: the layout types above

constexpr auto kWaitSlice = std::chrono::seconds(1);
constexpr char kRunDirPrefix[] = "strata-shm-";

// This process's pid, without a system call per use (getpid() is one, and
// costs more than a whole Get on paravirtualised VMs); refreshed in children
// by a fork handler.
std::atomic<pid_t> g_pid{0};

pid_t CurrentPid() {
  pid_t pid = g_pid.load(std::memory_order_relaxed);
  if (pid != 0) return pid;
  static std::once_flag registered;
  std::call_once(registered, [] {
    pthread_atfork(nullptr, nullptr, [] { g_pid.store(getpid(), std::memory_order_relaxed); });
  });
  pid = getpid();
  g_pid.store(pid, std::memory_order_relaxed);
  return pid;
}

int64_t RoundUp(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

int32_t PagesFor(int64_t size) {
  return static_cast<int32_t>(RoundUp(size, kShmPageSize) / kShmPageSize);
}

uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Start time of a process in clock ticks since boot (field 22 of
// /proc/<pid>/stat), which tells a process from a later one with its pid;
// nullopt when it is gone.
std::optional<uint64_t> ProcessStartTime(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!in || !std::getline(in, text)) return std::nullopt;
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  // After ") ": state (field 3), then fields 4..; starttime is field 22.
  const char* p = text.c_str() + paren + 1;
  for (int field = 3; field < 22 && *p; ++field) {
    while (*p == ' ') ++p;
    while (*p && *p != ' ') ++p;
  }
  return std::strtoull(p, nullptr, 10);
}

// False when `pid` has exited (including a zombie not yet reaped).
bool ProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (pid == CurrentPid()) return true;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!in || !std::getline(in, text)) return false;
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return true;
  const char state = text[paren + 2];
  return state != 'Z' && state != 'X';
}

void FutexWait(std::atomic<uint32_t>* word, uint32_t observed, Clock::time_point until) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  timespec ts{};
  timespec* timeout = nullptr;
  if (until != Clock::time_point::max()) {
    // steady_clock is CLOCK_MONOTONIC, the clock of FUTEX_WAIT_BITSET.
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(until.time_since_epoch());
    ts.tv_sec = ns.count() / 1000000000;
    ts.tv_nsec = ns.count() % 1000000000;
    timeout = &ts;
  }
  // Not FUTEX_PRIVATE: waiters and wakers are different processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_BITSET, observed, timeout,
          nullptr, FUTEX_BITSET_MATCH_ANY);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

int32_t PinCount(const ShmObjectEntry& e) {
  int32_t pins = e.extra_pins;
  for (const auto& h : e.holders) pins += h.count;
  return pins;
}

void AddPin(ShmObjectEntry& e, pid_t pid) {
  for (auto& h : e.holders) {
    if (h.count > 0 && h.pid == pid) {
      ++h.count;
      return;
    }
  }
  for (auto& h : e.holders) {
    if (h.count == 0) {
      h.pid = pid;
      h.count = 1;
      return;
    }
  }
  ++e.extra_pins;
}

bool RemovePin(ShmObjectEntry& e, pid_t pid) {
  for (auto& h : e.holders) {
    if (h.count > 0 && h.pid == pid) {
      if (--h.count == 0) h.pid = 0;
      return true;
    }
  }
  if (e.extra_pins > 0) {
    --e.extra_pins;
    return true;
  }
  return false;
}

const char* StateName(const ShmObjectEntry& e) {
  switch (e.state) {
    case kFree:
      return "absent";
    case kReserved:
      return "waiting for room";
    case kCreated:
      return "created, not sealed";
    case kSealed:
      if (e.flags & kDeletePending) return "being deleted";
      return e.flags & kResident ? "sealed" : "sealed, spilled";
  }
  return "unknown";
}

// Writes all of `iov` at `offset`, going on after short writes.
Status WriteFully(int fd, std::vector<iovec> iov, int64_t offset, const std::string& what) {
  size_t first = 0;
  while (first < iov.size()) {
    if (iov[first].iov_len == 0) {
      ++first;
      continue;
    }
    const int count = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
    const ssize_t n = pwritev(fd, &iov[first], count, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, what);
    }
    if (n == 0) return ErrnoToStatus(EIO, what);
    offset += n;
    size_t left = static_cast<size_t>(n);
    while (left > 0) {
      if (left >= iov[first].iov_len) {
        left -= iov[first].iov_len;
        ++first;
      } else {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
        left = 0;
      }
    }
  }
  return Status::Ok();
}

Status ReadFully(const std::string& path, int64_t offset, std::byte* out, int64_t size) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, fmt::format("opening spill file {}", path));
  int64_t done = 0;
  while (done < size) {
    const ssize_t n = pread(fd, out + done, static_cast<size_t>(size - done), offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      close(fd);
      if (n == 0) {
        return DataLossError(fmt::format("spill file {} ends at {} before the object's {} bytes",
                                         path, offset + done, size));
      }
      return ErrnoToStatus(err, fmt::format("reading spill file {}", path));
    }
    done += n;
  }
  close(fd);
  return Status::Ok();
}

Result<int> CreateRegionFd() {
  int fd =
      static_cast<int>(syscall(SYS_memfd_create, "strata-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (fd >= 0) return fd;
  // No memfd (old kernel, seccomp): an unnamed file in /dev/shm, which
  // vanishes with its last descriptor just the same.
  fd = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  return ErrnoToStatus(errno, "creating the shared-memory region (memfd_create and /dev/shm)");
}

// Maps `size` bytes of the region `fd`, shared, at an address that is a
// multiple of kDataAlignment. mmap promises only 4 KiB alignment, and a huge
// page is mapped whole (one PMD entry, one fault) only where the address and
// the file offset agree modulo 2 MiB.
Result<std::byte*> MapRegion(int fd, int64_t size) {
  const auto length = static_cast<size_t>(RoundUp(size, kShmPageSize));
  const auto alignment = static_cast<size_t>(kDataAlignment);
  void* reserved = mmap(nullptr, length + alignment, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) {
    return ErrnoToStatus(errno, fmt::format("reserving {} of address space", FormatBytes(size)));
  }
  const auto start = reinterpret_cast<uintptr_t>(reserved);
  const uintptr_t aligned = (start + alignment - 1) & ~uintptr_t{alignment - 1};
  void* mapped = mmap(reinterpret_cast<void*>(aligned), static_cast<size_t>(size),
                      PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  if (mapped == MAP_FAILED) {
    const int err = errno;
    munmap(reserved, length + alignment);
    return ErrnoToStatus(err, fmt::format("mapping {} of shared memory", FormatBytes(size)));
  }
  // The reservation's ends that the mapping does not cover.
  if (aligned > start) munmap(reserved, aligned - start);
  const uintptr_t tail = aligned + length;
  if (start + length + alignment > tail)
    munmap(reinterpret_cast<void*>(tail), start + length + alignment - tail);
  return static_cast<std::byte*>(mapped);
}

}  // namespace

// ---------------------------------------------------------------- ObjectId

std::string ObjectId::ToString() const { return fmt::format("{}.{}", array, block); }

size_t ObjectIdHash::operator()(const ObjectId& id) const {
  return static_cast<size_t>(Mix64(static_cast<uint64_t>(id.array) * 0x9E3779B97F4A7C15ull ^
                                   static_cast<uint64_t>(id.block)));
}

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
      store_->RecoverLocked([](pid_t pid) { return !ProcessAlive(pid); }, /*force=*/true);
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

// ---------------------------------------------------------------- creation

ShmStore::ShmStore(int fd, std::byte* base, int64_t region_size, bool owner, std::string run_dir)
    : fd_(fd), base_(base), region_size_(region_size), run_dir_(std::move(run_dir)) {
  header_ = reinterpret_cast<ShmRegionHeader*>(base_);
  entries_ = reinterpret_cast<ShmObjectEntry*>(base_ + header_->entries_offset);
  buckets_ = reinterpret_cast<int32_t*>(base_ + header_->buckets_offset);
  page_tags_ = reinterpret_cast<PageRunTag*>(base_ + header_->tags_offset);
  data_ = base_ + header_->data_offset;
  created_here_ = owner;
  creator_pid_ = CurrentPid();
  name_ = header_->name;
}

Result<std::unique_ptr<ShmStore>> ShmStore::Create(ShmStoreOptions options) {
  const std::string what = fmt::format("shm store '{}'", options.name);
  if (options.capacity <= 0) {
    return InvalidArgumentError(
        fmt::format("{}: capacity must be positive, got {}", what, options.capacity));
  }
  const int64_t num_pages = RoundUp(options.capacity, kShmPageSize) / kShmPageSize;
  if (num_pages >= INT32_MAX / 2) {
    return InvalidArgumentError(
        fmt::format("{}: capacity {} is too large", what, FormatBytes(options.capacity)));
  }
  if (options.max_objects <= 0 || options.max_objects > (1 << 24)) {
    return InvalidArgumentError(
        fmt::format("{}: max_objects must be in [1, 2^24], got {}", what, options.max_objects));
  }
  if (!(options.low_water > 0 && options.low_water <= options.high_water &&
        options.high_water <= 1)) {
    return InvalidArgumentError(
        fmt::format("{}: need 0 < low_water <= high_water <= 1, got {} and {}", what,
                    options.low_water, options.high_water));
  }
  if (options.spill_batch_bytes <= 0 || options.spill_file_bytes <= 0 || options.spill_limit < 0) {
    return InvalidArgumentError(fmt::format("{}: spill sizes must be positive", what));
  }
  if (options.name.size() >= sizeof(ShmRegionHeader::name)) {
    return InvalidArgumentError(fmt::format("{}: name is too long", what));
  }

  // Layout: header | entries | hash buckets | page tags | data.
  int32_t num_buckets = 1;
  while (num_buckets < options.max_objects) num_buckets <<= 1;
  const int64_t entries_offset = RoundUp(sizeof(ShmRegionHeader), 64);
  const int64_t buckets_offset =
      RoundUp(entries_offset + int64_t{options.max_objects} * sizeof(ShmObjectEntry), 64);
  const int64_t tags_offset = RoundUp(buckets_offset + int64_t{num_buckets} * 4, 64);
  const int64_t data_offset =
      RoundUp(tags_offset + num_pages * int64_t{sizeof(PageRunTag)}, kDataAlignment);
  const int64_t region_size = data_offset + num_pages * kShmPageSize;

  std::string run_dir;
  if (!options.spill_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.spill_dir, ec);
    if (ec) {
      return ErrnoToStatus(ec.value(),
                           fmt::format("{}: creating spill directory {}", what, options.spill_dir));
    }
    ReclaimAbandonedRuns(options.spill_dir).status().IgnoreError();
    static std::atomic<int> sequence{0};
    for (;;) {
      run_dir = fmt::format("{}/{}{}-{}", options.spill_dir, kRunDirPrefix, CurrentPid(),
                            sequence.fetch_add(1));
      if (mkdir(run_dir.c_str(), 0700) == 0) break;
      if (errno != EEXIST) {
        return ErrnoToStatus(errno, fmt::format("{}: creating run directory {}", what, run_dir));
      }
    }
    std::ofstream marker(run_dir + "/owner");
    marker << CurrentPid() << " " << ProcessStartTime(CurrentPid()).value_or(0) << "\n";
    if (!marker.flush()) {
      std::filesystem::remove_all(run_dir, ec);
      return ResourceExhaustedError(fmt::format("{}: writing {}/owner", what, run_dir));
    }
    if (run_dir.size() >= sizeof(ShmRegionHeader::run_dir)) {
      std::filesystem::remove_all(run_dir, ec);
      return InvalidArgumentError(fmt::format("{}: spill directory path is too long", what));
    }
  }
  auto fail = [&](Status status) {
    if (!run_dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(run_dir, ec);
    }
    return status.WithContext(what);
  };

  Result<int> region_fd = CreateRegionFd();
  if (!region_fd.ok()) return fail(region_fd.status());
  const int fd = *region_fd;
  if (ftruncate(fd, region_size) != 0) {
    const int err = errno;
    close(fd);
    return fail(
        ErrnoToStatus(err, fmt::format("reserving {} of shared memory", FormatBytes(region_size))));
  }
  fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);  // memfd only; best effort
  Result<std::byte*> mapped = MapRegion(fd, region_size);
  if (!mapped.ok()) {
    close(fd);
    return fail(mapped.status());
  }
  std::byte* base = *mapped;
  // Where shmem_enabled is "advise", faults then allocate huge pages at once.
  madvise(base + data_offset, static_cast<size_t>(num_pages * kShmPageSize), MADV_HUGEPAGE);

  // The region starts zeroed; everything not set here is zero.
  auto* header = new (base) ShmRegionHeader();
  header->magic = kRegionMagic;
  header->version = kLayoutVersion;
  header->header_bytes = sizeof(ShmRegionHeader);
  header->region_size = region_size;
  header->capacity = num_pages * kShmPageSize;
  header->num_pages = static_cast<int32_t>(num_pages);
  header->max_objects = options.max_objects;
  header->num_buckets = num_buckets;
  header->owner_pid = CurrentPid();
  header->owner_start_time = ProcessStartTime(CurrentPid()).value_or(0);
  header->entries_offset = entries_offset;
  header->buckets_offset = buckets_offset;
  header->tags_offset = tags_offset;
  header->data_offset = data_offset;
  header->spill_enabled = run_dir.empty() ? 0 : 1;
  header->high_water = options.high_water;
  header->low_water = options.low_water;
  header->spill_limit = options.spill_limit;
  header->spill_batch_bytes = options.spill_batch_bytes;
  header->spill_file_bytes = options.spill_file_bytes;
  header->create_timeout_ms = options.create_timeout.count();
  std::snprintf(header->name, sizeof(header->name), "%s", options.name.c_str());
  std::snprintf(header->run_dir, sizeof(header->run_dir), "%s", run_dir.c_str());
  header->free_entry_head = -1;
  header->lru_head = header->lru_tail = -1;
  header->active_spill_slot = -1;

  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  const int rc = pthread_mutex_init(&header->mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  if (rc != 0) {
    munmap(base, static_cast<size_t>(region_size));
    close(fd);
    return fail(ErrnoToStatus(rc, "initialising the process-shared mutex"));
  }

  auto store = std::unique_ptr<ShmStore>(new ShmStore(fd, base, region_size, true, run_dir));
  PageAllocator(&header->allocator, store->page_tags_).Reset(header->num_pages);
  return store;
}

Result<std::unique_ptr<ShmStore>> ShmStore::Attach(int fd) {
  const int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return ErrnoToStatus(errno, fmt::format("attaching to shm store fd {}", fd));
  struct stat st {};
  if (fstat(own, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(ShmRegionHeader))) {
    close(own);
    return InvalidArgumentError(fmt::format("fd {} is not a shm store region (too small)", fd));
  }
  Result<std::byte*> region = MapRegion(own, st.st_size);
  if (!region.ok()) {
    close(own);
    return region.status().WithContext(fmt::format("attaching to shm store fd {}", fd));
  }
  void* mapped = *region;
  const auto* header = static_cast<const ShmRegionHeader*>(mapped);
  if (header->magic != kRegionMagic || header->version != kLayoutVersion ||
      header->header_bytes != sizeof(ShmRegionHeader) || header->region_size != st.st_size) {
    munmap(mapped, static_cast<size_t>(st.st_size));
    close(own);
    return InvalidArgumentError(
        fmt::format("fd {} is not a shm store region of layout version {}", fd, kLayoutVersion));
  }
  return std::unique_ptr<ShmStore>(
      new ShmStore(own, static_cast<std::byte*>(mapped), st.st_size, false, header->run_dir));
}

Result<int> ShmStore::ReclaimAbandonedRuns(const std::string& spill_dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(spill_dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return 0;
    return ErrnoToStatus(ec.value(), fmt::format("listing {}", spill_dir));
  }
  int removed = 0;
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kRunDirPrefix, 0) != 0) continue;
    const pid_t pid = static_cast<pid_t>(std::atoi(name.c_str() + sizeof(kRunDirPrefix) - 1));
    if (pid <= 0) continue;
    bool alive = ProcessAlive(pid);
    if (alive) {
      // The pid may have been reused by an unrelated process since.
      std::ifstream marker(entry.path() / "owner");
      int64_t marker_pid = 0;
      uint64_t start_time = 0;
      if (marker >> marker_pid >> start_time && start_time != 0) {
        alive = ProcessStartTime(pid) == start_time;
      }
    }
    if (alive) continue;
    std::filesystem::remove_all(entry.path(), ec);
    if (!ec) ++removed;
  }
  return removed;
}

ShmStore::~ShmStore() {
  if (is_owner()) {
    {
      Lock lock(this);
      header_->closed = 1;
      NotifyObjectsLocked();
      NotifySpaceLocked();
    }
    if (!run_dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(run_dir_, ec);
    }
  }
  munmap(base_, static_cast<size_t>(region_size_));
  close(fd_);
}

bool ShmStore::is_owner() const { return created_here_ && CurrentPid() == creator_pid_; }

int64_t ShmStore::capacity() const { return header_->capacity; }

int64_t ShmStore::used() const { return header_->used_bytes.load(std::memory_order_relaxed); }

// ---------------------------------------------------------------- table upkeep

int32_t ShmStore::FindLocked(const ObjectId& id) const {
  const size_t bucket = ObjectIdHash()(id) & static_cast<size_t>(header_->num_buckets - 1);
  for (int32_t i = buckets_[bucket] - 1; i >= 0; i = entries_[i].hash_next) {
    if (entries_[i].id == id && entries_[i].state != kFree) return i;
  }
  return -1;
}

void ShmStore::HashInsertLocked(int32_t index) {
  const size_t bucket =
      ObjectIdHash()(entries_[index].id) & static_cast<size_t>(header_->num_buckets - 1);
  entries_[index].hash_next = buckets_[bucket] - 1;
  buckets_[bucket] = index + 1;  // 0 is an empty bucket, so fresh memory is an empty table
}

void ShmStore::HashRemoveLocked(int32_t index) {
  const size_t bucket =
      ObjectIdHash()(entries_[index].id) & static_cast<size_t>(header_->num_buckets - 1);
  int32_t* link = &buckets_[bucket];
  // Bucket heads are stored +1; chain links are plain indices.
  if (*link - 1 == index) {
    *link = entries_[index].hash_next + 1;
    return;
  }
  for (int32_t i = *link - 1; i >= 0; i = entries_[i].hash_next) {
    if (entries_[i].hash_next == index) {
      entries_[i].hash_next = entries_[index].hash_next;
      return;
    }
  }
  STRATA_CHECK(false) << "object " << entries_[index].id.ToString() << " missing from its chain";
}

void ShmStore::LruPushBackLocked(int32_t index) {
  LruRemoveLocked(index);
  ShmObjectEntry& e = entries_[index];
  e.tick = ++header_->tick;
  e.lru_prev = header_->lru_tail;
  e.lru_next = -1;
  if (header_->lru_tail >= 0) {
    entries_[header_->lru_tail].lru_next = index;
  } else {
    header_->lru_head = index;
  }
  header_->lru_tail = index;
  e.flags |= kInLru;
}

void ShmStore::LruRemoveLocked(int32_t index) {
  ShmObjectEntry& e = entries_[index];
  if (!(e.flags & kInLru)) return;
  if (e.lru_prev >= 0) {
    entries_[e.lru_prev].lru_next = e.lru_next;
  } else {
    header_->lru_head = e.lru_next;
  }
  if (e.lru_next >= 0) {
    entries_[e.lru_next].lru_prev = e.lru_prev;
  } else {
    header_->lru_tail = e.lru_prev;
  }
  e.lru_prev = e.lru_next = -1;
  e.flags &= ~kInLru;
}

void ShmStore::ReleasePagesLocked(int32_t index) {
  ShmObjectEntry& e = entries_[index];
  e.flags &= ~kResident;
  if (e.first_page < 0) return;
  PageAllocator(&header_->allocator, page_tags_).Free(e.first_page);
  header_->used_bytes.fetch_sub(int64_t{e.num_pages} * kShmPageSize, std::memory_order_relaxed);
  e.first_page = -1;
  e.num_pages = 0;
}

void ShmStore::DropDiskCopyLocked(int32_t index) {
  ShmObjectEntry& e = entries_[index];
  e.flags &= ~kOnDisk;
  if (e.spill_slot < 0) return;
  SpillFileSlot& slot = header_->spill_files[e.spill_slot];
  --slot.live_objects;
  slot.live_bytes -= e.size;
  e.spill_slot = -1;
  RemoveUnusedSpillFilesLocked();
}

void ShmStore::RemoveUnusedSpillFilesLocked() {
  for (int32_t s = 0; s < kMaxSpillFiles; ++s) {
    SpillFileSlot& slot = header_->spill_files[s];
    if (slot.generation == 0 || slot.live_objects > 0) continue;
    if (s == header_->active_spill_slot) {
      if (header_->spiller_pid != 0) continue;  // a batch is being appended
      header_->active_spill_slot = -1;
    }
    unlink(SpillFilePath(s).c_str());
    header_->spill_file_bytes_total -= slot.end;
    slot = SpillFileSlot{};
  }
}

std::string ShmStore::SpillFilePath(int32_t slot) const {
  return fmt::format("{}/spill-{:06}.bin", run_dir_, header_->spill_files[slot].generation);
}

void ShmStore::FreeEntryLocked(int32_t index) {
  LruRemoveLocked(index);
  HashRemoveLocked(index);
  ReleasePagesLocked(index);
  DropDiskCopyLocked(index);
  ShmObjectEntry& e = entries_[index];
  e = ShmObjectEntry{};
  e.first_page = -1;
  e.spill_slot = -1;
  e.lru_prev = e.lru_next = -1;
  e.hash_next = header_->free_entry_head;
  header_->free_entry_head = index;
  --header_->num_objects;
  NotifySpaceLocked();
}

bool ShmStore::EvictableLocked(int32_t index) const {
  const ShmObjectEntry& e = entries_[index];
  return e.state == kSealed && e.first_page >= 0 && (e.flags & kResident) &&
         !(e.flags & (kDeletePending | kSpilling | kRestoring)) && PinCount(e) == 0;
}

void ShmStore::AfterUnpinLocked(int32_t index) {
  ShmObjectEntry& e = entries_[index];
  if (PinCount(e) > 0 || (e.flags & (kSpilling | kRestoring))) return;
  if (e.flags & kDeletePending) {
    FreeEntryLocked(index);
    return;
  }
  if (EvictableLocked(index)) LruPushBackLocked(index);
  NotifySpaceLocked();
}

// A waiter reads the sequence word and registers itself in one critical
// section, so a notification that finds no waiter registered has nobody to
// wake: it can skip both the increment and the system call.
void ShmStore::NotifyObjectsLocked() {
  if (header_->object_waiters.load(std::memory_order_seq_cst) > 0) {
    header_->object_seq.fetch_add(1, std::memory_order_seq_cst);
    FutexWakeAll(&header_->object_seq);
  }
}

void ShmStore::NotifySpaceLocked() {
  if (header_->space_waiters.load(std::memory_order_seq_cst) > 0) {
    header_->space_seq.fetch_add(1, std::memory_order_seq_cst);
    FutexWakeAll(&header_->space_seq);
  }
}

bool ShmStore::WaitLocked(Lock& lock, bool for_space, uint32_t observed, Clock::time_point until) {
  auto& word = for_space ? header_->space_seq : header_->object_seq;
  auto& waiters = for_space ? header_->space_waiters : header_->object_waiters;
  waiters.fetch_add(1, std::memory_order_seq_cst);
  lock.Release();
  FutexWait(&word, observed, until);
  waiters.fetch_sub(1, std::memory_order_seq_cst);
  lock.Acquire();
  return Clock::now() < until;
}

Status ShmStore::OnWaitSliceLocked() {
  ReclaimDeadProcessesLocked();
  if (header_->closed)
    return FailedPreconditionError(fmt::format("shm store '{}' is closed", name_));
  if (!ProcessAlive(header_->owner_pid)) {
    return UnavailableError(
        fmt::format("shm store '{}': owner process {} has exited", name_, header_->owner_pid));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- recovery

int ShmStore::RecoverLocked(const std::function<bool(pid_t)>& is_dead, bool force) {
  std::unordered_map<pid_t, bool> dead_cache;
  auto dead = [&](pid_t pid) {
    if (pid <= 0) return false;
    auto [it, inserted] = dead_cache.try_emplace(pid, false);
    if (inserted) it->second = is_dead(pid);
    return it->second;
  };
  const int32_t limit = header_->entries_in_use_limit;

  // Is anything to do? (The common case when a waiter checks every second.)
  bool any = force || dead(header_->spiller_pid);
  for (int32_t i = 0; i < limit && !any; ++i) {
    const ShmObjectEntry& e = entries_[i];
    if (e.state == kFree) continue;
    if ((e.state == kReserved || e.state == kCreated) && dead(e.creator_pid)) any = true;
    if ((e.flags & (kSpilling | kRestoring)) && dead(e.io_pid)) any = true;
    for (const auto& h : e.holders) {
      if (h.count > 0 && dead(h.pid)) any = true;
    }
  }
  if (!any) return 0;

  // Pass 1: the primary fields, entry by entry.
  std::unordered_set<pid_t> reclaimed;
  for (int32_t i = 0; i < limit; ++i) {
    ShmObjectEntry& e = entries_[i];
    if (e.state == kFree) continue;
    for (auto& h : e.holders) {
      if (h.count > 0 && dead(h.pid)) {
        reclaimed.insert(h.pid);
        h = ShmHolder{};
      }
    }
    if ((e.flags & kSpilling) && dead(e.io_pid)) {
      reclaimed.insert(e.io_pid);
      e.flags &= ~kSpilling;
      e.io_pid = 0;
    }
    if ((e.flags & kRestoring) && dead(e.io_pid)) {
      reclaimed.insert(e.io_pid);
      e.flags &= ~(kRestoring | kResident);
      e.io_pid = 0;
      e.first_page = -1;  // the allocator rebuild frees the run
      e.num_pages = 0;
    }
    if ((e.state == kReserved || e.state == kCreated) && dead(e.creator_pid)) {
      reclaimed.insert(e.creator_pid);
      e.state = kFree;
    }
    if (e.state == kSealed && (e.flags & kDeletePending) && PinCount(e) == 0 &&
        !(e.flags & (kSpilling | kRestoring))) {
      e.state = kFree;
    }
  }
  if (dead(header_->spiller_pid)) {
    reclaimed.insert(header_->spiller_pid);
    header_->spiller_pid = 0;
    // Its batch was reserved but may be half written: append elsewhere.
    header_->active_spill_slot = -1;
  }

  // Pass 2: everything derived.
  for (int32_t b = 0; b < header_->num_buckets; ++b) buckets_[b] = 0;
  header_->free_entry_head = -1;
  header_->lru_head = header_->lru_tail = -1;
  header_->num_objects = 0;
  std::vector<std::pair<int32_t, int32_t>> used_runs;
  std::vector<std::pair<uint64_t, int32_t>> evictable;
  for (int32_t s = 0; s < kMaxSpillFiles; ++s) {
    header_->spill_files[s].live_objects = 0;
    header_->spill_files[s].live_bytes = 0;
  }
  for (int32_t i = limit - 1; i >= 0; --i) {
    ShmObjectEntry& e = entries_[i];
    if (e.state == kFree) {
      e = ShmObjectEntry{};
      e.first_page = e.spill_slot = e.lru_prev = e.lru_next = -1;
      e.hash_next = header_->free_entry_head;
      header_->free_entry_head = i;
      continue;
    }
    HashInsertLocked(i);
    ++header_->num_objects;
    e.flags &= ~kInLru;
    e.lru_prev = e.lru_next = -1;
    if (e.first_page >= 0) used_runs.emplace_back(e.first_page, e.num_pages);
    if (e.spill_slot >= 0) {
      SpillFileSlot& slot = header_->spill_files[e.spill_slot];
      ++slot.live_objects;
      slot.live_bytes += e.size;
    }
    if (EvictableLocked(i)) evictable.emplace_back(e.tick, i);
  }
  std::sort(used_runs.begin(), used_runs.end());
  PageAllocator allocator(&header_->allocator, page_tags_);
  allocator.Rebuild(header_->num_pages, used_runs);
  header_->used_bytes.store(int64_t{header_->num_pages - allocator.free_pages()} * kShmPageSize,
                            std::memory_order_relaxed);
  std::sort(evictable.begin(), evictable.end());
  for (const auto& [tick, i] : evictable) {
    LruPushBackLocked(i);
    entries_[i].tick = tick;  // keep the original age
  }
  RemoveUnusedSpillFilesLocked();
  header_->counters.processes_reclaimed += static_cast<int64_t>(reclaimed.size());
  NotifySpaceLocked();
  NotifyObjectsLocked();
  return static_cast<int>(reclaimed.size());
}

int ShmStore::ReclaimDeadProcessesLocked() {
  return RecoverLocked([](pid_t pid) { return !ProcessAlive(pid); }, /*force=*/false);
}

Status ShmStore::ReclaimProcess(pid_t pid) {
  if (pid == CurrentPid()) {
    return InvalidArgumentError(
        fmt::format("shm store '{}': cannot reclaim the calling process", name_));
  }
  Lock lock(this);
  RecoverLocked([pid](pid_t p) { return p == pid; }, /*force=*/false);
  return Status::Ok();
}

// ---------------------------------------------------------------- allocation and spilling

std::string ShmStore::UsageSummaryLocked() const {
  int64_t pinned = 0, unsealed = 0;
  for (int32_t i = 0; i < header_->entries_in_use_limit; ++i) {
    const ShmObjectEntry& e = entries_[i];
    if (e.first_page < 0) continue;
    if (e.state != kSealed) {
      unsealed += int64_t{e.num_pages} * kShmPageSize;
    } else if (PinCount(e) > 0 || (e.flags & (kSpilling | kRestoring))) {
      pinned += int64_t{e.num_pages} * kShmPageSize;
    }
  }
  const PageAllocator allocator(&header_->allocator, page_tags_);
  return fmt::format(
      "{} of {} in use ({} pinned by readers or I/O, {} unsealed), largest free run {}",
      FormatBytes(used()), FormatBytes(header_->capacity), FormatBytes(pinned),
      FormatBytes(unsealed), FormatBytes(int64_t{allocator.LargestFreeRun()} * kShmPageSize));
}

Result<int32_t> ShmStore::AllocatePagesLocked(Lock& lock, int32_t pages, Deadline& deadline) {
  bool waited = false;
  for (;;) {
    if (header_->closed) {
      return FailedPreconditionError(fmt::format("shm store '{}' is closed", name_));
    }
    const int32_t first = PageAllocator(&header_->allocator, page_tags_).Allocate(pages);
    if (first >= 0) {
      const int64_t used =
          header_->used_bytes.fetch_add(int64_t{pages} * kShmPageSize, std::memory_order_relaxed) +
          int64_t{pages} * kShmPageSize;
      header_->peak_used_bytes = std::max(header_->peak_used_bytes, used);
      return first;
    }
    if (header_->spill_enabled && header_->spiller_pid == 0) {
      const int64_t wanted = std::max(int64_t{pages} * kShmPageSize,
                                      std::min(header_->spill_batch_bytes, header_->capacity / 4));
      Result<int64_t> freed = SpillLocked(lock, wanted);
      if (!freed.ok()) {
        return Status(freed.status().code(),
                      fmt::format("no room in shared memory ({}) and spilling failed: {}",
                                  UsageSummaryLocked(), freed.status().message()));
      }
      if (*freed > 0) continue;
    }
    // Everything is pinned, unsealed or being spilled by another process:
    // wait for a Release, Delete, Abort, Seal or the end of that spill.
    const auto until = deadline.at();
    const auto now = Clock::now();
    if (now >= until) {
      return ResourceExhaustedError(fmt::format(
          "no room for {} in shared memory after waiting {} ms: {}; {}",
          FormatBytes(int64_t{pages} * kShmPageSize), deadline.waited_ms(), UsageSummaryLocked(),
          header_->spill_enabled ? "nothing left to spill" : "spilling is disabled"));
    }
    if (!waited) {
      ++header_->counters.create_waits;
      waited = true;
    }
    const uint32_t observed = header_->space_seq.load(std::memory_order_seq_cst);
    const auto slice_end = std::min(until, now + kWaitSlice);
    WaitLocked(lock, /*for_space=*/true, observed, slice_end);
    if (Clock::now() >= slice_end) STRATA_RETURN_IF_ERROR(OnWaitSliceLocked());
  }
}

ShmStore::PageRange ShmStore::ClaimResidencyLocked(int32_t end) {
  const int32_t from = header_->resident_pages;
  if (end <= from) return {from, from};
  // A batch at a time, so that a stage of small chunks does not pay one
  // round of system calls per chunk; whole huge pages, so that the next
  // batch starts on one.
  const int64_t wanted = std::max<int64_t>(end, int64_t{from} + kResidencyBatchPages);
  const auto to = static_cast<int32_t>(
      std::min<int64_t>(RoundUp(wanted, kPagesPerHugePage), header_->num_pages));
  header_->resident_pages = to;
  return {from, to};
}

void ShmStore::MakeResident(PageRange pages) const {
  if (pages.first >= pages.second) return;
  // Why: every 4 KiB page of a memfd costs a fault in each process that first
  // touches it, and tmpfs pages are 4 KiB unless sysfs shmem_enabled allows
  // huge ones, which it does not by default. On the VMs this was measured on,
  // 4 KiB faults run at ~0.3 GB/s where anonymous huge pages (what the
  // threads executor gets from its MemoryPool) run at ~10 GB/s, which made
  // the processes executor 3x slower than threads on a rechunk in RAM.
  // MADV_COLLAPSE (Linux 6.1) builds PMD-sized pages whatever shmem_enabled
  // says (short of "deny"), at ~5 GB/s including the zeroing, and other
  // processes then map them whole. It wants a page present in each 2 MiB, so
  // one byte of each is read first: read, not written, because other
  // processes may already be writing objects there (the pages are allocated
  // and this call runs without the lock). Collapsing keeps the contents.
  std::byte* begin = data_ + int64_t{pages.first} * kShmPageSize;
  const auto length = static_cast<size_t>(int64_t{pages.second - pages.first} * kShmPageSize);
  for (size_t offset = 0; offset < length; offset += static_cast<size_t>(kDataAlignment)) {
    (void)*reinterpret_cast<const volatile char*>(begin + offset);
  }
  if (madvise(begin, length, MADV_COLLAPSE) == 0) return;
  // Refused (older kernel, THP denied or disabled, no free huge page):
  // at least map the pages here without a fault each; failing that, they
  // fault in as they are first written.
  madvise(begin, length, MADV_POPULATE_WRITE);
}

Result<int64_t> ShmStore::SpillLocked(Lock& lock, int64_t wanted) {
  if (!header_->spill_enabled || header_->spiller_pid != 0 || wanted <= 0) return 0;
  const pid_t pid = CurrentPid();
  int64_t freed = 0;
  int64_t batch_memory = 0;
  int64_t batch_bytes = 0;
  std::vector<SpillVictim> victims;
  // Least recently used first. Objects that already have a disk copy (spilled
  // before and restored) cost nothing to drop.
  for (int32_t i = header_->lru_head; i >= 0 && freed + batch_memory < wanted;) {
    const int32_t next = entries_[i].lru_next;
    ShmObjectEntry& e = entries_[i];
    const int64_t memory = int64_t{e.num_pages} * kShmPageSize;
    if (e.flags & kOnDisk) {
      LruRemoveLocked(i);
      ReleasePagesLocked(i);
      freed += memory;
    } else if (header_->spill_limit == 0 ||
               header_->spill_file_bytes_total + batch_bytes + e.size <= header_->spill_limit) {
      victims.push_back({i, 0});
      batch_memory += memory;
      batch_bytes += e.size;
    }
    i = next;
  }
  if (freed > 0) NotifySpaceLocked();
  if (victims.empty()) {
    if (freed == 0 && header_->spill_limit > 0 && header_->lru_head >= 0) {
      ++header_->counters.spill_errors;
      return ResourceExhaustedError(
          fmt::format("the spill limit is reached: {} in spill files under {}, limit {}",
                      FormatBytes(header_->spill_file_bytes_total), run_dir_,
                      FormatBytes(header_->spill_limit)));
    }
    return freed;
  }

  // Append the batch to the active spill file, or start one.
  int32_t s = header_->active_spill_slot;
  if (s >= 0 && header_->spill_files[s].end >= header_->spill_file_bytes) {
    header_->active_spill_slot = -1;
    RemoveUnusedSpillFilesLocked();
    s = -1;
  }
  if (s < 0) {
    for (int32_t t = 0; t < kMaxSpillFiles && s < 0; ++t) {
      if (header_->spill_files[t].generation == 0) s = t;
    }
    if (s < 0) {
      ++header_->counters.spill_errors;
      return ResourceExhaustedError(
          fmt::format("all {} spill file slots under {} are in use", kMaxSpillFiles, run_dir_));
    }
    header_->spill_files[s] = SpillFileSlot{++header_->spill_generation, 0, 0, 0};
    header_->active_spill_slot = s;
  }
  SpillFileSlot& slot = header_->spill_files[s];
  const uint32_t generation = slot.generation;
  const int64_t base_offset = slot.end;
  slot.end += batch_bytes;
  header_->spill_file_bytes_total += batch_bytes;
  std::vector<iovec> iov;
  iov.reserve(victims.size());
  int64_t offset = base_offset;
  for (SpillVictim& v : victims) {
    ShmObjectEntry& e = entries_[v.index];
    LruRemoveLocked(v.index);
    e.flags |= kSpilling;
    e.io_pid = pid;
    v.offset = offset;
    offset += e.size;
    iov.push_back({data_ + int64_t{e.first_page} * kShmPageSize, static_cast<size_t>(e.size)});
  }
  header_->spiller_pid = pid;
  const std::string path = SpillFilePath(s);

  // The victims' pages cannot be freed or reused while kSpilling is set, so
  // they are written straight from shared memory, without the lock.
  lock.Release();
  Status written;
  {
    const std::string what = fmt::format("spilling {} objects ({}) to {}", victims.size(),
                                         FormatBytes(batch_bytes), path);
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      written = ErrnoToStatus(errno, what);
    } else {
      written = WriteFully(fd, std::move(iov), base_offset, what);
      if (!written.ok()) {
        // Leave no partial batch behind; nothing refers to it either way.
        [[maybe_unused]] const int rc = ftruncate(fd, base_offset);
      }

      if (close(fd) != 0 && written.ok()) written = ErrnoToStatus(errno, what);
    }
  }
  lock.Acquire();

  // spiller_pid stays set until the victims are registered, so that the
  // active file is not removed as empty in between.
  const bool slot_intact = header_->spill_files[s].generation == generation;
  if (!written.ok()) {
    ++header_->counters.spill_errors;
    if (slot_intact && header_->spill_files[s].end == base_offset + batch_bytes) {
      header_->spill_files[s].end = base_offset;
      header_->spill_file_bytes_total -= batch_bytes;
    }
    for (const SpillVictim& v : victims) {
      ShmObjectEntry& e = entries_[v.index];
      if (!(e.flags & kSpilling) || e.io_pid != pid) continue;
      e.flags &= ~kSpilling;
      e.io_pid = 0;
      AfterUnpinLocked(v.index);
    }
    if (header_->spiller_pid == pid) header_->spiller_pid = 0;
    RemoveUnusedSpillFilesLocked();
    NotifySpaceLocked();
    return written;
  }
  for (const SpillVictim& v : victims) {
    ShmObjectEntry& e = entries_[v.index];
    if (!(e.flags & kSpilling) || e.io_pid != pid) continue;  // reclaimed meanwhile
    e.flags &= ~kSpilling;
    e.io_pid = 0;
    if (slot_intact) {
      e.spill_slot = s;
      e.spill_offset = v.offset;
      e.flags |= kOnDisk;
      ++header_->spill_files[s].live_objects;
      header_->spill_files[s].live_bytes += e.size;
      header_->counters.bytes_spilled += e.size;
      ++header_->counters.objects_spilled;
    }
    if (e.flags & kDeletePending) {
      if (PinCount(e) == 0) FreeEntryLocked(v.index);
    } else if (PinCount(e) == 0 && (e.flags & kOnDisk)) {
      freed += int64_t{e.num_pages} * kShmPageSize;
      ReleasePagesLocked(v.index);
    } else {
      AfterUnpinLocked(v.index);  // pinned by a Get meanwhile: stays in memory
    }
  }
  ++header_->counters.spill_batches;
  if (header_->spiller_pid == pid) header_->spiller_pid = 0;
  if (header_->active_spill_slot == s && header_->spill_files[s].end >= header_->spill_file_bytes) {
    header_->active_spill_slot = -1;
  }
  RemoveUnusedSpillFilesLocked();
  NotifySpaceLocked();
  return freed;
}

void ShmStore::MaybeSpillAboveHighWaterLocked(Lock& lock) {
  if (!header_->spill_enabled || header_->spiller_pid != 0) return;
  const double capacity = static_cast<double>(header_->capacity);
  const int64_t used_now = used();
  if (static_cast<double>(used_now) <= header_->high_water * capacity) return;
  const int64_t wanted = used_now - static_cast<int64_t>(header_->low_water * capacity);
  SpillLocked(lock, wanted).status().IgnoreError();  // counted in spill_errors
}

Status ShmStore::RestoreLocked(Lock& lock, int32_t index, Deadline& deadline) {
  const ObjectId id = entries_[index].id;
  const int64_t size = entries_[index].size;
  const int32_t pages = PagesFor(size);
  STRATA_ASSIGN_OR_RETURN(const int32_t first, AllocatePagesLocked(lock, pages, deadline));
  ShmObjectEntry& e = entries_[index];
  if (!(e.id == id) || e.state != kSealed || e.spill_slot < 0 ||
      (e.flags & (kResident | kRestoring | kDeletePending))) {
    // Restored, deleted or replaced while this call waited for room.
    PageAllocator(&header_->allocator, page_tags_).Free(first);
    header_->used_bytes.fetch_sub(int64_t{pages} * kShmPageSize, std::memory_order_relaxed);
    NotifySpaceLocked();
    return Status::Ok();
  }
  e.first_page = first;
  e.num_pages = pages;
  e.flags |= kRestoring;
  e.io_pid = CurrentPid();
  const std::string path = SpillFilePath(e.spill_slot);
  const int64_t offset = e.spill_offset;
  std::byte* out = data_ + int64_t{first} * kShmPageSize;
  const PageRange residency = ClaimResidencyLocked(first + pages);

  lock.Release();
  MakeResident(residency);
  Status read = ReadFully(path, offset, out, size);
  lock.Acquire();

  ShmObjectEntry& after = entries_[index];
  after.flags &= ~kRestoring;
  after.io_pid = 0;
  if (!read.ok()) {
    ReleasePagesLocked(index);
    AfterUnpinLocked(index);
    NotifyObjectsLocked();
    return read.WithContext(fmt::format("restoring object {}", id.ToString()));
  }
  after.flags |= kResident;
  header_->counters.bytes_restored += size;
  ++header_->counters.objects_restored;
  AfterUnpinLocked(index);
  NotifyObjectsLocked();
  return Status::Ok();
}

// ---------------------------------------------------------------- the object API

std::string ShmStore::Describe(const ObjectId& id) const {
  return fmt::format("shm store '{}': object {}", name_, id.ToString());
}

Result<std::span<std::byte>> ShmStore::Create(const ObjectId& id, int64_t size) {
  return Create(id, size, Timeout(header_->create_timeout_ms));
}

Result<std::span<std::byte>> ShmStore::Create(const ObjectId& id, int64_t size, Timeout timeout) {
  if (size < 0) {
    return InvalidArgumentError(fmt::format("{}: negative size {}", Describe(id), size));
  }
  if (RoundUp(size, kShmPageSize) > header_->capacity) {
    return ResourceExhaustedError(fmt::format("{}: {} is larger than the store's capacity {}",
                                              Describe(id), FormatBytes(size),
                                              FormatBytes(header_->capacity)));
  }
  Deadline deadline(timeout);
  const pid_t pid = CurrentPid();
  const int32_t pages = PagesFor(size);
  Lock lock(this);
  for (;;) {
    if (header_->closed)
      return FailedPreconditionError(fmt::format("{}: store closed", Describe(id)));
    if (const int32_t existing = FindLocked(id); existing >= 0) {
      return AlreadyExistsError(
          fmt::format("{} already exists ({})", Describe(id), StateName(entries_[existing])));
    }
    if (header_->free_entry_head >= 0 || header_->entries_in_use_limit < header_->max_objects)
      break;
    const auto until = deadline.at();
    const auto now = Clock::now();
    if (now >= until) {
      return ResourceExhaustedError(fmt::format("{}: the object table is full ({} objects)",
                                                Describe(id), header_->max_objects));
    }
    const uint32_t observed = header_->space_seq.load(std::memory_order_seq_cst);
    const auto slice_end = std::min(until, now + kWaitSlice);
    WaitLocked(lock, /*for_space=*/true, observed, slice_end);
    if (Clock::now() >= slice_end) STRATA_RETURN_IF_ERROR(OnWaitSliceLocked());
  }
  int32_t index;
  if (header_->free_entry_head >= 0) {
    index = header_->free_entry_head;
    header_->free_entry_head = entries_[index].hash_next;
  } else {
    index = header_->entries_in_use_limit++;
  }
  {
    ShmObjectEntry& e = entries_[index];
    e = ShmObjectEntry{};
    e.id = id;
    e.size = size;
    e.first_page = -1;
    e.spill_slot = -1;
    e.lru_prev = e.lru_next = -1;
    e.creator_pid = pid;
    e.state = kReserved;  // last: publishes the entry
  }
  HashInsertLocked(index);
  ++header_->num_objects;

  int32_t first = -1;
  if (pages > 0) {
    Result<int32_t> allocated = AllocatePagesLocked(lock, pages, deadline);
    ShmObjectEntry& e = entries_[index];
    const bool still_ours = e.id == id && e.state == kReserved && e.creator_pid == pid;
    if (!allocated.ok()) {
      if (still_ours) FreeEntryLocked(index);
      return allocated.status().WithContext(
          fmt::format("{}: creating {}", Describe(id), FormatBytes(size)));
    }
    if (!still_ours) {
      PageAllocator(&header_->allocator, page_tags_).Free(*allocated);
      header_->used_bytes.fetch_sub(int64_t{pages} * kShmPageSize, std::memory_order_relaxed);
      NotifySpaceLocked();
      return AbortedError(fmt::format("{} was aborted while Create waited for room", Describe(id)));
    }
    first = *allocated;
    e.first_page = first;
    e.num_pages = pages;
  }
  ShmObjectEntry& e = entries_[index];
  e.flags |= kResident;
  e.state = kCreated;
  const PageRange residency = pages > 0 ? ClaimResidencyLocked(first + pages) : PageRange{0, 0};
  lock.Release();
  MakeResident(residency);

  std::byte* data = first >= 0 ? data_ + int64_t{first} * kShmPageSize : data_;
  return std::span<std::byte>(data, static_cast<size_t>(size));
}

Status ShmStore::Seal(const ObjectId& id) {
  Lock lock(this);
  const int32_t index = FindLocked(id);
  if (index < 0) return NotFoundError(fmt::format("{} not found to seal", Describe(id)));
  ShmObjectEntry& e = entries_[index];
  if (e.state != kCreated) {
    return FailedPreconditionError(
        fmt::format("{} cannot be sealed: it is {}", Describe(id), StateName(e)));
  }
  e.state = kSealed;
  e.creator_pid = 0;
  AfterUnpinLocked(index);
  NotifyObjectsLocked();
  MaybeSpillAboveHighWaterLocked(lock);
  return Status::Ok();
}

Status ShmStore::Abort(const ObjectId& id) {
  Lock lock(this);
  const int32_t index = FindLocked(id);
  if (index < 0) return NotFoundError(fmt::format("{} not found to abort", Describe(id)));
  ShmObjectEntry& e = entries_[index];
  if (e.state != kCreated) {
    return FailedPreconditionError(fmt::format("{} cannot be aborted: it is {}{}", Describe(id),
                                               StateName(e),
                                               e.state == kSealed ? " (use Delete)" : ""));
  }
  FreeEntryLocked(index);
  NotifyObjectsLocked();
  return Status::Ok();
}

Result<std::span<const std::byte>> ShmStore::Get(const ObjectId& id, Timeout timeout) {
  STRATA_ASSIGN_OR_RETURN(auto spans, Get(std::span<const ObjectId>(&id, 1), timeout));
  return spans[0];
}

Result<std::vector<std::span<const std::byte>>> ShmStore::Get(std::span<const ObjectId> ids,
                                                              Timeout timeout) {
  Deadline deadline(timeout);
  const pid_t pid = CurrentPid();
  std::vector<std::span<const std::byte>> out(ids.size());
  std::vector<int32_t> pinned(ids.size(), -1);
  Lock lock(this);
  auto unpin_all = [&] {
    for (int32_t index : pinned) {
      if (index < 0) continue;
      RemovePin(entries_[index], pid);
      AfterUnpinLocked(index);
    }
  };
  for (;;) {
    if (header_->closed) {
      unpin_all();
      return FailedPreconditionError(fmt::format("shm store '{}' is closed", name_));
    }
    bool restored = false;
    std::vector<size_t> missing;
    for (size_t i = 0; i < ids.size() && !restored; ++i) {
      if (pinned[i] >= 0) continue;
      const int32_t index = FindLocked(ids[i]);
      if (index < 0) {
        missing.push_back(i);
        continue;
      }
      ShmObjectEntry& e = entries_[index];
      if (e.state != kSealed || (e.flags & (kDeletePending | kRestoring))) {
        missing.push_back(i);
        continue;
      }
      if (e.flags & kResident) {
        AddPin(e, pid);
        LruRemoveLocked(index);
        pinned[i] = index;
        const std::byte* data =
            e.first_page >= 0 ? data_ + int64_t{e.first_page} * kShmPageSize : data_;
        out[i] = std::span<const std::byte>(data, static_cast<size_t>(e.size));
        continue;
      }
      // Spilled: read it back, then look at everything again (the lock was
      // released meanwhile).
      Status status = RestoreLocked(lock, index, deadline);
      if (!status.ok()) {
        unpin_all();
        return status.WithContext(Describe(ids[i]));
      }
      restored = true;
    }
    if (restored) continue;
    if (missing.empty()) break;
    const auto until = deadline.at();
    const auto now = Clock::now();
    if (now >= until) {
      std::string names;
      for (size_t k = 0; k < missing.size() && k < 8; ++k) {
        const int32_t index = FindLocked(ids[missing[k]]);
        names += fmt::format("{}{} ({})", k ? ", " : "", ids[missing[k]].ToString(),
                             index < 0 ? "absent" : StateName(entries_[index]));
      }
      if (missing.size() > 8) names += fmt::format(" and {} more", missing.size() - 8);
      unpin_all();
      return DeadlineExceededError(fmt::format("shm store '{}': waited {} ms for object{} {}",
                                               name_, deadline.waited_ms(),
                                               missing.size() > 1 ? "s" : "", names));
    }
    const uint32_t observed = header_->object_seq.load(std::memory_order_seq_cst);
    const auto slice_end = std::min(until, now + kWaitSlice);
    WaitLocked(lock, /*for_space=*/false, observed, slice_end);
    if (Clock::now() >= slice_end) {
      Status status = OnWaitSliceLocked();
      if (!status.ok()) {
        unpin_all();
        return status;
      }
    }
  }
  return out;
}

Status ShmStore::Release(const ObjectId& id) {
  Lock lock(this);
  const int32_t index = FindLocked(id);
  if (index < 0) return NotFoundError(fmt::format("{} not found to release", Describe(id)));
  if (!RemovePin(entries_[index], CurrentPid())) {
    return FailedPreconditionError(
        fmt::format("{} is not pinned by process {}", Describe(id), CurrentPid()));
  }
  AfterUnpinLocked(index);
  return Status::Ok();
}

Status ShmStore::Delete(const ObjectId& id) {
  Lock lock(this);
  const int32_t index = FindLocked(id);
  if (index < 0 || (entries_[index].flags & kDeletePending)) {
    return NotFoundError(fmt::format("{} not found to delete", Describe(id)));
  }
  ShmObjectEntry& e = entries_[index];
  if (e.state != kSealed) {
    return FailedPreconditionError(
        fmt::format("{} cannot be deleted: it is {} (use Abort)", Describe(id), StateName(e)));
  }
  e.flags |= kDeletePending;
  LruRemoveLocked(index);
  AfterUnpinLocked(index);  // frees it now unless pinned or under I/O
  return Status::Ok();
}

bool ShmStore::Contains(const ObjectId& id) {
  Lock lock(this);
  const int32_t index = FindLocked(id);
  return index >= 0 && entries_[index].state == kSealed &&
         !(entries_[index].flags & kDeletePending);
}

ShmStore::Stats ShmStore::stats() {
  Lock lock(this);
  Stats s;
  s.capacity = header_->capacity;
  s.used_bytes = used();
  s.peak_used_bytes = header_->peak_used_bytes;
  s.resident_bytes = int64_t{header_->resident_pages} * kShmPageSize;
  for (int32_t i = 0; i < header_->entries_in_use_limit; ++i) {
    const ShmObjectEntry& e = entries_[i];
    if (e.state == kFree) continue;
    ++s.num_objects;
    if (e.state == kReserved || e.state == kCreated) {
      s.unsealed_bytes += e.size;
      continue;
    }
    if (e.flags & kResident) {
      s.sealed_bytes += e.size;
      if (PinCount(e) > 0) s.pinned_bytes += e.size;
    } else if (e.flags & kOnDisk) {
      ++s.num_spilled;
      s.spilled_bytes += e.size;
    }
  }
  for (const SpillFileSlot& slot : header_->spill_files) {
    if (slot.generation == 0) continue;
    ++s.num_spill_files;
    s.spill_file_bytes += slot.end;
  }
  const auto& c = header_->counters;
  s.bytes_spilled = c.bytes_spilled;
  s.objects_spilled = c.objects_spilled;
  s.spill_batches = c.spill_batches;
  s.bytes_restored = c.bytes_restored;
  s.objects_restored = c.objects_restored;
  s.create_waits = c.create_waits;
  s.spill_errors = c.spill_errors;
  s.processes_reclaimed = c.processes_reclaimed;
  s.lock_recoveries = c.lock_recoveries;
  return s;
}

// ---------------------------------------------------------------- test hooks

std::string ShmStore::ValidateForTesting() {
  Lock lock(this);
  const PageAllocator allocator(&header_->allocator, page_tags_);
  if (std::string error = allocator.Validate(); !error.empty()) return "allocator: " + error;
  int64_t pages = 0;
  int32_t objects = 0;
  int32_t evictable = 0;
  for (int32_t i = 0; i < header_->entries_in_use_limit; ++i) {
    const ShmObjectEntry& e = entries_[i];
    if (e.state == kFree) continue;
    ++objects;
    if (FindLocked(e.id) != i) return fmt::format("object {} not found by its id", e.id.ToString());
    if (e.first_page >= 0) {
      pages += e.num_pages;
      if (page_tags_[e.first_page].free || page_tags_[e.first_page].length != e.num_pages) {
        return fmt::format("object {}: its run is not allocated", e.id.ToString());
      }
    }
    if (EvictableLocked(i) != static_cast<bool>(e.flags & kInLru)) {
      return fmt::format("object {}: evictable but not in the LRU list, or the reverse",
                         e.id.ToString());
    }
    if (e.flags & kInLru) ++evictable;
  }
  if (objects != header_->num_objects) {
    return fmt::format("num_objects {} but {} in the table", header_->num_objects, objects);
  }
  if (pages != allocator.num_pages() - allocator.free_pages()) {
    return fmt::format("objects hold {} pages, the allocator {}", pages,
                       allocator.num_pages() - allocator.free_pages());
  }
  if (pages * kShmPageSize != used()) {
    return fmt::format("used() is {} but objects hold {}", used(), pages * kShmPageSize);
  }
  int32_t listed = 0;
  for (int32_t i = header_->lru_head; i >= 0; i = entries_[i].lru_next) {
    if (++listed > evictable) return "LRU list is longer than the evictable set";
  }
  if (listed != evictable) return "LRU list misses evictable objects";
  return "";
}

int32_t ShmStore::ObjectWaitersForTesting() const { return header_->object_waiters.load(); }

void ShmStore::LockForTesting() {
  const int rc = pthread_mutex_lock(&header_->mutex);
  STRATA_CHECK(rc == 0 || rc == EOWNERDEAD);
}

void ShmStore::ScrambleDerivedStateForTesting() {
  // As if a process died mid-update: chains, LRU, allocator and counters lost.
  for (int32_t b = 0; b < header_->num_buckets; ++b) buckets_[b] = 0;
  header_->lru_head = header_->lru_tail = -1;
  header_->free_entry_head = -1;
  header_->num_objects = 0;
  PageAllocator(&header_->allocator, page_tags_).Reset(header_->num_pages);
  header_->used_bytes.store(0);
}

}  // namespace strata
