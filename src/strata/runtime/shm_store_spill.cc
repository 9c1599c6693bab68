// ShmStore's page allocation under its capacity, and spilling sealed
// objects to files and restoring them when memory runs short.
#include "strata/runtime/shm_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "strata/base/byte_size.h"
#include "strata/runtime/shm_allocator_internal.h"
#include "strata/runtime/shm_store_internal.h"

namespace strata {

// The region's layout types and the helpers of shm_store_internal.h.
using namespace internal_runtime;  // NOLINT

// Older libc headers lack these (Linux 6.1 and 5.14); an older kernel refuses
// them with EINVAL, which MakeResident tolerates.
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

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

}  // namespace strata
