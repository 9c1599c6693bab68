#include "strata/core/memory_pool.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "strata/base/byte_size.h"
#include "strata/base/system_info.h"

namespace strata {
namespace {

constexpr int64_t kAlignment = 64;

// A non-null, aligned address for zero-size buffers, so callers may pass
// data() to memcpy.
alignas(kAlignment) std::byte kEmptyBytes[kAlignment];

int64_t RoundUp(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Bytes actually reserved for a request of `size`.
int64_t CapacityFor(int64_t size) {
  if (size >= BufferAllocator::kHugePage) return RoundUp(size, BufferAllocator::kHugePage);
  if (size >= BufferAllocator::kRecycleThreshold) return RoundUp(size, int64_t{64} << 10);
  return RoundUp(size, kAlignment);
}

// A mapping of `capacity` bytes aligned to 2 MiB when it is that large, so the
// kernel can back it with transparent huge pages.
std::byte* MapAligned(int64_t capacity) {
  int64_t align = capacity >= BufferAllocator::kHugePage ? BufferAllocator::kHugePage : 4096;
  int64_t length = capacity + align;
  void* raw = mmap(nullptr, static_cast<size_t>(length), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto base = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = (base + align - 1) & ~static_cast<uintptr_t>(align - 1);
  if (aligned > base) munmap(raw, aligned - base);
  uintptr_t end = base + length;
  uintptr_t used_end = aligned + capacity;
  if (end > used_end) munmap(reinterpret_cast<void*>(used_end), end - used_end);
  if (align == BufferAllocator::kHugePage) {
    madvise(reinterpret_cast<void*>(aligned), capacity, MADV_HUGEPAGE);
  }
  return reinterpret_cast<std::byte*>(aligned);
}

}  // namespace

// ---------------------------------------------------------------- Buffer

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    charged_ = std::exchange(other.charged_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    pool_ = std::move(other.pool_);
    owner_ = std::move(other.owner_);
  }
  return *this;
}

Buffer Buffer::External(std::byte* data, int64_t size, std::shared_ptr<void> owner) {
  STRATA_CHECK(size >= 0 && (data != nullptr || size == 0));
  Buffer b;
  b.data_ = size > 0 ? data : kEmptyBytes;
  b.size_ = size;
  b.owner_ = std::move(owner);
  return b;
}

void Buffer::Shrink(int64_t new_size) {
  STRATA_CHECK(new_size >= 0 && new_size <= size_);
  size_ = new_size;
}

void Buffer::TransferTo(std::shared_ptr<MemoryPool> pool) {
  STRATA_CHECK(pool != nullptr);
  if (owner_ || pool == pool_) return;
  if (pool_) {
    STRATA_CHECK(pool->allocator_ == pool_->allocator_)
        << "a buffer can only move between pools over the same allocator";
    pool_->Uncharge(charged_);
  }
  pool->Charge(charged_, /*enforce_cap=*/false).IgnoreError();
  pool_ = std::move(pool);
}

void Buffer::Reset() {
  if (pool_) {
    if (capacity_ > 0) pool_->allocator_->Free(data_, capacity_);
    pool_->Uncharge(charged_);
    pool_.reset();
  }
  owner_.reset();
  data_ = nullptr;
  size_ = charged_ = capacity_ = 0;
}

// ---------------------------------------------------------------- BufferAllocator

BufferAllocator::BufferAllocator(Options options) : options_(options) {
  if (options_.max_held_bytes <= 0) options_.max_held_bytes = DefaultTotalSystemMemory();
}

BufferAllocator::~BufferAllocator() { ReleaseCache(); }

Result<std::pair<std::byte*, int64_t>> BufferAllocator::Allocate(int64_t size) {
  STRATA_CHECK(size > 0);
  int64_t capacity = CapacityFor(size);
  if (capacity < kRecycleThreshold) {
    void* p = std::aligned_alloc(kAlignment, static_cast<size_t>(capacity));
    if (p == nullptr) {
      return ResourceExhaustedError(fmt::format("out of memory allocating {}", FormatBytes(size)));
    }
    MutexLock lock(&mu_);
    stats_.bytes_held += capacity;
    stats_.peak_bytes_held = std::max(stats_.peak_bytes_held, stats_.bytes_held);
    ++stats_.fresh_allocations;
    return std::pair{static_cast<std::byte*>(p), capacity};
  }
  {
    MutexLock lock(&mu_);
    // Reuse an idle buffer that wastes at most 1/8 of its capacity.
    auto it = cache_.lower_bound(capacity);
    if (it != cache_.end() && it->first <= capacity + capacity / 8) {
      std::pair<std::byte*, int64_t> out{it->second.second, it->first};
      stats_.bytes_cached -= it->first;
      ++stats_.reused_allocations;
      cache_.erase(it);
      return out;
    }
    // Idle buffers of other sizes give their memory back only when a new
    // mapping would take the allocator past its limit: evicting eagerly would
    // throw away exactly the buffers the next chunk of the same size reuses.
    int64_t over = stats_.bytes_held + capacity - MaxHeldLocked();
    if (over > 0) EvictLocked(over);
    // Counted as held before the mapping is made, outside the lock: two
    // threads mapping at once would otherwise both see room for one buffer
    // and take the allocator one buffer past its limit (measured: 16 MB past
    // it in tests/interop/test_memory.py's threads case, one run in three).
    stats_.bytes_held += capacity;
    stats_.peak_bytes_held = std::max(stats_.peak_bytes_held, stats_.bytes_held);
  }
  std::byte* p = MapAligned(capacity);
  MutexLock lock(&mu_);
  if (p == nullptr) {
    stats_.bytes_held -= capacity;
    return ResourceExhaustedError(fmt::format("out of memory allocating {}", FormatBytes(size)));
  }
  stats_.fresh_bytes += capacity;
  ++stats_.fresh_allocations;
  return std::pair{p, capacity};
}

void BufferAllocator::Free(std::byte* data, int64_t capacity) {
  if (capacity < kRecycleThreshold) {
    std::free(data);
    MutexLock lock(&mu_);
    stats_.bytes_held -= capacity;
    return;
  }
  MutexLock lock(&mu_);
  if (capacity > options_.max_cached_bytes) {
    munmap(data, static_cast<size_t>(capacity));
    stats_.bytes_held -= capacity;
    return;
  }
  if (stats_.bytes_cached + capacity > options_.max_cached_bytes) {
    EvictLocked(stats_.bytes_cached + capacity - options_.max_cached_bytes);
  }
  cache_.emplace(capacity, std::pair{sequence_++, data});
  stats_.bytes_cached += capacity;
}

void BufferAllocator::EvictLocked(int64_t bytes_needed) {
  // Frees the oldest idle buffers until `bytes_needed` are released or the
  // cache is empty. bytes_needed == 0 frees nothing.
  int64_t freed = 0;
  while (freed < bytes_needed && !cache_.empty()) {
    auto oldest = cache_.begin();
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->second.first < oldest->second.first) oldest = it;
    }
    munmap(oldest->second.second, static_cast<size_t>(oldest->first));
    freed += oldest->first;
    stats_.bytes_cached -= oldest->first;
    stats_.bytes_held -= oldest->first;
    cache_.erase(oldest);
  }
}

void BufferAllocator::ReleaseCache() {
  MutexLock lock(&mu_);
  for (auto& [capacity, entry] : cache_) {
    munmap(entry.second, static_cast<size_t>(capacity));
    stats_.bytes_held -= capacity;
  }
  cache_.clear();
  stats_.bytes_cached = 0;
}

int64_t BufferAllocator::MaxHeldLocked() const {
  return limits_.empty() ? options_.max_held_bytes
                         : std::min(options_.max_held_bytes, *limits_.begin());
}

std::shared_ptr<void> BufferAllocator::LimitHeld(int64_t bytes) {
  MutexLock lock(&mu_);
  limits_.insert(bytes);
  EvictLocked(std::max<int64_t>(0, stats_.bytes_held - MaxHeldLocked()));
  // The token only needs to run its deleter; `this` outlives it (the
  // allocator is shared by the pools of whoever holds the token).
  return std::shared_ptr<void>(reinterpret_cast<void*>(1), [this, bytes](void*) {
    MutexLock lock(&mu_);
    limits_.erase(limits_.find(bytes));
  });
}

BufferAllocator::Stats BufferAllocator::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

// ---------------------------------------------------------------- MemoryPool

MemoryPool::MemoryPool(Options options, std::shared_ptr<MemoryPool> parent,
                       std::shared_ptr<BufferAllocator> allocator)
    : options_(std::move(options)), parent_(std::move(parent)), allocator_(std::move(allocator)) {}

MemoryPool::~MemoryPool() = default;

const std::shared_ptr<MemoryPool>& MemoryPool::Default() {
  static const std::shared_ptr<MemoryPool> pool = NewRoot(Options{"process", 0});
  return pool;
}

std::shared_ptr<MemoryPool> MemoryPool::NewRoot(Options options,
                                                std::shared_ptr<BufferAllocator> allocator) {
  if (!allocator) {
    static const std::shared_ptr<BufferAllocator> process_allocator =
        std::make_shared<BufferAllocator>();
    allocator = process_allocator;
  }
  return std::shared_ptr<MemoryPool>(new MemoryPool(std::move(options), nullptr, allocator));
}

std::shared_ptr<MemoryPool> MemoryPool::NewChild(Options options) {
  return std::shared_ptr<MemoryPool>(
      new MemoryPool(std::move(options), shared_from_this(), allocator_));
}

Status MemoryPool::Charge(int64_t bytes, bool enforce_cap) {
  // Charge this pool and each ancestor; undo on the first cap that refuses.
  // Peaks are raised only once the whole chain has accepted the bytes.
  for (MemoryPool* p = this; p != nullptr; p = p->parent_.get()) {
    int64_t current = p->in_use_.load(std::memory_order_relaxed);
    int64_t next;
    bool refused = false;
    do {
      next = current + bytes;
      if (enforce_cap && p->options_.cap > 0 && next > p->options_.cap) {
        refused = true;
        break;
      }
    } while (!p->in_use_.compare_exchange_weak(current, next, std::memory_order_relaxed));
    if (refused) {
      for (MemoryPool* q = this; q != p; q = q->parent_.get()) {
        q->in_use_.fetch_sub(bytes, std::memory_order_relaxed);
      }
      return ResourceExhaustedError(fmt::format(
          "memory pool '{}' cannot allocate {}: {} in use, cap {}", p->options_.name,
          FormatBytes(bytes), FormatBytes(current), FormatBytes(p->options_.cap)));
    }
  }
  for (MemoryPool* p = this; p != nullptr; p = p->parent_.get()) {
    int64_t now = p->in_use_.load(std::memory_order_relaxed);
    int64_t peak = p->peak_.load(std::memory_order_relaxed);
    while (now > peak && !p->peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  return Status::Ok();
}

void MemoryPool::Uncharge(int64_t bytes) {
  for (MemoryPool* p = this; p != nullptr; p = p->parent_.get()) {
    p->in_use_.fetch_sub(bytes, std::memory_order_relaxed);
  }
}

Result<Buffer> MemoryPool::Allocate(int64_t size) {
  STRATA_CHECK(size >= 0);
  Buffer buffer;
  if (size == 0) {
    buffer.data_ = kEmptyBytes;
    buffer.pool_ = shared_from_this();
    return buffer;
  }
  STRATA_RETURN_IF_ERROR(Charge(size, /*enforce_cap=*/true));
  Result<std::pair<std::byte*, int64_t>> raw = allocator_->Allocate(size);
  if (!raw.ok()) {
    Uncharge(size);
    return raw.status();
  }
  buffer.data_ = raw->first;
  buffer.capacity_ = raw->second;
  buffer.size_ = size;
  buffer.charged_ = size;
  buffer.pool_ = shared_from_this();
  return buffer;
}

}  // namespace strata
