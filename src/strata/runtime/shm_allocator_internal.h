// PageAllocator: the allocator that carves ShmStore's shared region into
// objects. Internal to shm_store.cc; declared here so that it can be tested on
// its own.
//
// It hands out runs of whole 4 KiB pages with a two-level segregated fit
// (TLSF, as in real-time allocators): free runs sit in one of 32 x 16 size
// classes (16 classes per power of two, so a class spans at most 6.25% of its
// sizes), found in O(1) through two bitmaps, split on allocation and merged
// with free neighbours on free through boundary tags at both ends of every run.
// This suits chunk-sized objects: a stage that writes chunks of one size gets
// back exactly the run a deleted chunk of that size left (the class of the
// request is scanned first for a run that fits), and mixed sizes do not leave
// slivers behind because every free is coalesced at once. Pages are never
// returned to the OS: a freed run is simply free again.
//
// Every byte of state lives in memory the caller provides (the shared region),
// and holds no pointers, only page indices, so that every process mapping the
// region can use it wherever the region is mapped. The state is derived: given
// the list of allocated runs, Rebuild() recreates it exactly, which is how the
// store recovers when a process died in the middle of an update.
//
// Thread-safety: none; ShmStore calls it under the region's lock.
#ifndef STRATA_RUNTIME_SHM_ALLOCATOR_INTERNAL_H_
#define STRATA_RUNTIME_SHM_ALLOCATOR_INTERNAL_H_

#include <cstdint>
#include <span>
#include <string>
#include <utility>

namespace strata::internal_runtime {

inline constexpr int64_t kShmPageSize = 4096;

// The boundary tag of a run, kept at its first and at its last page (one
// tag when the run is one page long). `next`/`prev` link free runs of one
// size class and are meaningful only at the first page of a free run.
struct PageRunTag {
  int32_t length;
  int32_t free;
  int32_t next;
  int32_t prev;
};

struct PageAllocatorState {
  static constexpr int kFirstLevels = 32;
  static constexpr int kSecondLevelLog2 = 4;
  static constexpr int kSecondLevels = 1 << kSecondLevelLog2;

  int32_t num_pages;
  int32_t free_pages;
  uint32_t first_bitmap;
  uint32_t second_bitmaps[kFirstLevels];
  int32_t heads[kFirstLevels][kSecondLevels];
};

// A view of allocator state stored elsewhere; cheap to construct.
class PageAllocator {
 public:
  // `tags` has one element per page.
  PageAllocator(PageAllocatorState* state, PageRunTag* tags) : state_(state), tags_(tags) {}

  // Makes all `num_pages` pages one free run.
  void Reset(int32_t num_pages);

  // Recreates the state for `num_pages` pages of which exactly the runs in
  // `used` (first page, length; sorted by first page, disjoint) are allocated.
  void Rebuild(int32_t num_pages, std::span<const std::pair<int32_t, int32_t>> used);

  // The first page of a run of `pages` (> 0) pages, or -1 when no free run is
  // that long.
  int32_t Allocate(int32_t pages);

  // Frees the run that starts at `first_page` (as returned by Allocate).
  void Free(int32_t first_page);

  int32_t num_pages() const { return state_->num_pages; }
  int32_t free_pages() const { return state_->free_pages; }
  // Length of the longest free run (a scan of the class bitmaps).
  int32_t LargestFreeRun() const;

  // Checks every invariant: tags tile the pages, free runs are merged, each
  // free run is in the list of its class and nothing else is, the bitmaps and
  // free_pages agree. Returns the first violation found, or "".
  std::string Validate() const;

 private:
  static void Mapping(int64_t pages, int* first, int* second);
  void Insert(int32_t first_page);
  void Remove(int32_t first_page);
  void SetRun(int32_t first_page, int32_t length, bool free);

  PageAllocatorState* state_;
  PageRunTag* tags_;
};

}  // namespace strata::internal_runtime

#endif  // STRATA_RUNTIME_SHM_ALLOCATOR_INTERNAL_H_
