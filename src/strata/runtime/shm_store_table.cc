// ShmStore's object table (hash chains, LRU list, freeing), its recovery
// from processes that died holding pins or the lock, and its test hooks.
#include "strata/runtime/shm_store.h"

#include <fmt/format.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "strata/base/check.h"
#include "strata/runtime/shm_allocator_internal.h"
#include "strata/runtime/shm_store_internal.h"

namespace strata {

// The region's layout types and the helpers of shm_store_internal.h.
using namespace internal_runtime;  // NOLINT

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
