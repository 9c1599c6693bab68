#include "strata/runtime/shm_allocator_internal.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <vector>

#include "strata/base/check.h"

namespace strata::internal_runtime {
namespace {

using State = PageAllocatorState;

// How many runs of the request's own class are looked at for one that fits
// before taking any run of a larger class.
constexpr int kClassScanLimit = 8;

int Msb(uint64_t x) { return 63 - std::countl_zero(x); }

}  // namespace

void PageAllocator::Mapping(int64_t pages, int* first, int* second) {
  if (pages < State::kSecondLevels) {
    *first = 0;
    *second = static_cast<int>(pages);
    return;
  }
  const int msb = Msb(static_cast<uint64_t>(pages));
  *first = msb - State::kSecondLevelLog2 + 1;
  *second =
      static_cast<int>((pages >> (msb - State::kSecondLevelLog2)) & (State::kSecondLevels - 1));
}

void PageAllocator::SetRun(int32_t first_page, int32_t length, bool free) {
  PageRunTag& head = tags_[first_page];
  head.length = length;
  head.free = free ? 1 : 0;
  head.next = head.prev = -1;
  PageRunTag& tail = tags_[first_page + length - 1];
  tail.length = length;
  tail.free = free ? 1 : 0;
}

void PageAllocator::Insert(int32_t first_page) {
  int fl, sl;
  Mapping(tags_[first_page].length, &fl, &sl);
  PageRunTag& tag = tags_[first_page];
  const int32_t head = state_->heads[fl][sl];
  tag.next = head;
  tag.prev = -1;
  if (head >= 0) tags_[head].prev = first_page;
  state_->heads[fl][sl] = first_page;
  state_->first_bitmap |= 1u << fl;
  state_->second_bitmaps[fl] |= 1u << sl;
}

void PageAllocator::Remove(int32_t first_page) {
  int fl, sl;
  Mapping(tags_[first_page].length, &fl, &sl);
  PageRunTag& tag = tags_[first_page];
  if (tag.prev >= 0) {
    tags_[tag.prev].next = tag.next;
  } else {
    state_->heads[fl][sl] = tag.next;
  }
  if (tag.next >= 0) tags_[tag.next].prev = tag.prev;
  tag.next = tag.prev = -1;
  if (state_->heads[fl][sl] < 0) {
    state_->second_bitmaps[fl] &= ~(1u << sl);
    if (state_->second_bitmaps[fl] == 0) state_->first_bitmap &= ~(1u << fl);
  }
}

void PageAllocator::Reset(int32_t num_pages) { Rebuild(num_pages, {}); }

void PageAllocator::Rebuild(int32_t num_pages, std::span<const std::pair<int32_t, int32_t>> used) {
  state_->num_pages = num_pages;
  state_->free_pages = 0;
  state_->first_bitmap = 0;
  for (int fl = 0; fl < State::kFirstLevels; ++fl) {
    state_->second_bitmaps[fl] = 0;
    for (int sl = 0; sl < State::kSecondLevels; ++sl) state_->heads[fl][sl] = -1;
  }
  int32_t cursor = 0;
  auto add_free = [&](int32_t first_page, int32_t length) {
    if (length <= 0) return;
    SetRun(first_page, length, /*free=*/true);
    Insert(first_page);
    state_->free_pages += length;
  };
  for (const auto& [first_page, length] : used) {
    STRATA_CHECK(first_page >= cursor && length > 0 && first_page + length <= num_pages)
        << "overlapping or out-of-range run " << first_page << "+" << length;
    add_free(cursor, first_page - cursor);
    SetRun(first_page, length, /*free=*/false);
    cursor = first_page + length;
  }
  add_free(cursor, num_pages - cursor);
}

int32_t PageAllocator::Allocate(int32_t pages) {
  STRATA_DCHECK(pages > 0);
  if (pages > state_->free_pages) return -1;
  int fl, sl;
  // A run of the request's own class may be long enough: freed chunks of one
  // stage have one size, and taking their runs back keeps larger runs whole.
  Mapping(pages, &fl, &sl);
  int32_t found = -1;
  int32_t run = state_->heads[fl][sl];
  for (int i = 0; run >= 0 && i < kClassScanLimit; ++i, run = tags_[run].next) {
    if (tags_[run].length >= pages && (found < 0 || tags_[run].length < tags_[found].length)) {
      found = run;
      if (tags_[run].length == pages) break;
    }
  }
  if (found < 0) {
    // Any run of the next class up is long enough.
    int64_t rounded = pages;
    if (pages >= State::kSecondLevels) {
      rounded += (int64_t{1} << (Msb(static_cast<uint64_t>(pages)) - State::kSecondLevelLog2)) - 1;
    }
    Mapping(rounded, &fl, &sl);
    if (fl >= State::kFirstLevels) return -1;
    uint32_t second = sl < 32 ? state_->second_bitmaps[fl] & (~0u << sl) : 0;
    if (second == 0) {
      const uint32_t first = fl + 1 < 32 ? state_->first_bitmap & (~0u << (fl + 1)) : 0;
      if (first == 0) return -1;
      fl = std::countr_zero(first);
      second = state_->second_bitmaps[fl];
    }
    sl = std::countr_zero(second);
    found = state_->heads[fl][sl];
    STRATA_DCHECK(found >= 0 && tags_[found].length >= pages);
  }
  Remove(found);
  const int32_t length = tags_[found].length;
  SetRun(found, pages, /*free=*/false);
  if (length > pages) {
    SetRun(found + pages, length - pages, /*free=*/true);
    Insert(found + pages);
  }
  state_->free_pages -= pages;
  return found;
}

void PageAllocator::Free(int32_t first_page) {
  STRATA_CHECK(first_page >= 0 && first_page < state_->num_pages);
  STRATA_CHECK(!tags_[first_page].free) << "page run " << first_page << " freed twice";
  int32_t start = first_page;
  int32_t length = tags_[first_page].length;
  state_->free_pages += length;
  if (start > 0 && tags_[start - 1].free) {
    const int32_t before = start - tags_[start - 1].length;
    Remove(before);
    length += start - before;
    start = before;
  }
  const int32_t after = start + length;
  if (after < state_->num_pages && tags_[after].free) {
    Remove(after);
    length += tags_[after].length;
  }
  SetRun(start, length, /*free=*/true);
  Insert(start);
}

int32_t PageAllocator::LargestFreeRun() const {
  if (state_->first_bitmap == 0) return 0;
  const int fl = Msb(state_->first_bitmap);
  const int sl = Msb(state_->second_bitmaps[fl]);
  int32_t longest = 0;
  for (int32_t run = state_->heads[fl][sl]; run >= 0; run = tags_[run].next) {
    longest = std::max(longest, tags_[run].length);
  }
  return longest;
}

std::string PageAllocator::Validate() const {
  const int32_t n = state_->num_pages;
  int32_t free_pages = 0;
  int32_t free_runs = 0;
  bool previous_free = false;
  for (int32_t page = 0; page < n;) {
    const PageRunTag& head = tags_[page];
    if (head.length <= 0 || page + head.length > n) {
      return fmt::format("bad run length {} at page {}", head.length, page);
    }
    const PageRunTag& tail = tags_[page + head.length - 1];
    if (tail.length != head.length || tail.free != head.free) {
      return fmt::format("run at page {}: tail tag disagrees", page);
    }
    if (head.free) {
      if (previous_free) return fmt::format("free runs not merged at page {}", page);
      free_pages += head.length;
      ++free_runs;
    }
    previous_free = head.free != 0;
    page += head.length;
  }
  if (free_pages != state_->free_pages) {
    return fmt::format("free_pages {} but runs hold {}", state_->free_pages, free_pages);
  }
  int32_t listed = 0;
  for (int fl = 0; fl < State::kFirstLevels; ++fl) {
    for (int sl = 0; sl < State::kSecondLevels; ++sl) {
      const bool bit = (state_->second_bitmaps[fl] >> sl) & 1;
      const int32_t first = state_->heads[fl][sl];
      if (bit != (first >= 0)) return fmt::format("bitmap of class {}.{} is wrong", fl, sl);
      int32_t prev = -1;
      for (int32_t run = first; run >= 0; prev = run, run = tags_[run].next) {
        if (++listed > free_runs) return "free lists hold more runs than there are";
        if (!tags_[run].free) return fmt::format("allocated run {} in a free list", run);
        if (tags_[run].prev != prev) return fmt::format("bad prev link at run {}", run);
        int rfl, rsl;
        Mapping(tags_[run].length, &rfl, &rsl);
        if (rfl != fl || rsl != sl) return fmt::format("run {} in the wrong class", run);
      }
    }
    if (((state_->first_bitmap >> fl) & 1) != (state_->second_bitmaps[fl] != 0)) {
      return fmt::format("first-level bitmap bit {} is wrong", fl);
    }
  }
  if (listed != free_runs) return fmt::format("{} free runs but {} listed", free_runs, listed);
  return "";
}

}  // namespace strata::internal_runtime
