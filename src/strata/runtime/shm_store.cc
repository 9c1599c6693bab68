#include "strata/runtime/shm_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <vector>

#include "strata/base/byte_size.h"
#include "strata/runtime/shm_allocator_internal.h"
#include "strata/runtime/shm_store_internal.h"

namespace strata {

// The region's layout types and the helpers of shm_store_internal.h.
using namespace internal_runtime;  // NOLINT

// ---------------------------------------------------------------- ObjectId

std::string ObjectId::ToString() const { return fmt::format("{}.{}", array, block); }

size_t ObjectIdHash::operator()(const ObjectId& id) const {
  return static_cast<size_t>(Mix64(static_cast<uint64_t>(id.array) * 0x9E3779B97F4A7C15ull ^
                                   static_cast<uint64_t>(id.block)));
}

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

}  // namespace strata
