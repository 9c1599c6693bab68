// MemoryPool and Buffer: every chunk buffer in Strata is allocated here and
// counted, which is how measured memory per task is known exactly.
//
// Pools form a tree. A root pool sits over a BufferAllocator; children (one
// per task, per tier, per command) charge every allocation to themselves and
// to each ancestor, so a task's peak and the process's peak are both exact.
// Any pool may have a cap; an allocation that would exceed the cap of the pool
// or of an ancestor fails with ResourceExhausted naming the pool.
//
// The BufferAllocator recycles: freed buffers of 256 KiB and more are kept and
// handed out again for requests of about the same size instead of being
// returned to the OS. Buffers of 2 MiB and more are 2 MiB-aligned mappings
// advised to use transparent huge pages. On the VMs Strata targets a copy into
// freshly faulted 4 KiB pages runs at ~0.3 GB/s; into huge pages ~9 GB/s; into
// reused memory 12-17 GB/s (see bench/memory_bench.cc).
//
// Lifetime: a Buffer keeps its pool (and so the pool's ancestors and the
// allocator) alive. Thread-safety: all pool and allocator methods are
// thread-safe; a Buffer is a value owned by one thread at a time.
#ifndef STRATA_CORE_MEMORY_POOL_H_
#define STRATA_CORE_MEMORY_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>

#include "strata/base/status.h"
#include "strata/base/thread_annotations.h"

namespace strata {

class MemoryPool;

// 64-byte aligned bytes owned by a MemoryPool; returned to it on destruction.
// Or (External) bytes that live elsewhere, e.g. an object being written in a
// shared-memory store, kept alive by an owner instead of a pool.
class Buffer {
 public:
  Buffer() = default;
  // `size` bytes at `data`, not charged to any pool; `owner` is released
  // when the buffer is reset or destroyed.
  static Buffer External(std::byte* data, int64_t size, std::shared_ptr<void> owner);
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { Reset(); }

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::span<std::byte> span() { return {data_, static_cast<size_t>(size_)}; }
  std::span<const std::byte> span() const { return {data_, static_cast<size_t>(size_)}; }

  // Bytes charged to the pool for this buffer (the size it was allocated with).
  int64_t charged() const { return charged_; }
  const std::shared_ptr<MemoryPool>& pool() const { return pool_; }
  // The owner of an External buffer; null for pool memory.
  const std::shared_ptr<void>& owner() const { return owner_; }

  // Makes the visible size smaller (e.g. encoded bytes shorter than their
  // bound). The charge is unchanged: the memory is still held.
  void Shrink(int64_t new_size);

  // Moves this buffer's charge from its pool to `pool` (e.g. a chunk produced
  // by a task and handed to an intermediate tier). Never fails: the new pool's
  // cap is not checked, because the bytes already exist. No-op for External
  // buffers: their bytes are counted where they live.
  void TransferTo(std::shared_ptr<MemoryPool> pool);

  // Returns the memory to its pool now.
  void Reset();

 private:
  friend class MemoryPool;
  std::byte* data_ = nullptr;
  int64_t size_ = 0;
  int64_t charged_ = 0;
  int64_t capacity_ = 0;  // bytes held from the allocator (>= charged_)
  std::shared_ptr<MemoryPool> pool_;
  std::shared_ptr<void> owner_;  // External only
};

// Raw memory with recycling. See the file comment.
class BufferAllocator {
 public:
  struct Options {
    // Largest total of idle buffers kept for reuse.
    int64_t max_cached_bytes = int64_t{4} << 30;
    // Idle buffers are returned to the OS (oldest first) only when a new
    // mapping would take what the allocator holds past this; 0: 80% of RAM.
    int64_t max_held_bytes = 0;
  };
  struct Stats {
    int64_t bytes_held = 0;    // in use + cached, i.e. what the OS sees
    int64_t peak_bytes_held = 0;  // the most bytes_held has been
    int64_t bytes_cached = 0;  // idle, kept for reuse
    int64_t fresh_allocations = 0;
    int64_t reused_allocations = 0;
    int64_t fresh_bytes = 0;  // mapped anew (and so faulted in on first touch)
  };

  BufferAllocator() : BufferAllocator(Options{}) {}
  explicit BufferAllocator(Options options);
  ~BufferAllocator();
  BufferAllocator(const BufferAllocator&) = delete;
  BufferAllocator& operator=(const BufferAllocator&) = delete;

  // Returns memory for `size` bytes and its capacity (>= size).
  // ResourceExhausted when the OS refuses.
  Result<std::pair<std::byte*, int64_t>> Allocate(int64_t size);
  void Free(std::byte* data, int64_t capacity);

  // Returns every idle buffer to the OS.
  void ReleaseCache();

  // Lowers the limit on what the allocator holds (in use + idle) to `bytes`
  // until the returned token is destroyed (the lowest of the live tokens
  // wins), evicting idle buffers past it now. A compute holds one for its
  // total_system_mem, so recycled buffers never take the process past it.
  std::shared_ptr<void> LimitHeld(int64_t bytes);
  Stats stats() const;

  // Requests at least this large are recycled.
  static constexpr int64_t kRecycleThreshold = int64_t{256} << 10;
  static constexpr int64_t kHugePage = int64_t{2} << 20;

 private:
  void EvictLocked(int64_t bytes_needed) STRATA_REQUIRES(mu_);
  int64_t MaxHeldLocked() const STRATA_REQUIRES(mu_);

  Options options_;
  mutable Mutex mu_;
  // capacity -> (sequence, data); the sequence picks the oldest to evict.
  std::multimap<int64_t, std::pair<uint64_t, std::byte*>> cache_ STRATA_GUARDED_BY(mu_);
  uint64_t sequence_ STRATA_GUARDED_BY(mu_) = 0;
  std::multiset<int64_t> limits_ STRATA_GUARDED_BY(mu_);  // from LimitHeld
  Stats stats_ STRATA_GUARDED_BY(mu_);
};

class MemoryPool : public std::enable_shared_from_this<MemoryPool> {
 public:
  struct Options {
    std::string name = "pool";
    int64_t cap = 0;  // 0: no cap
  };

  // The process-wide root pool over the process-wide allocator.
  static const std::shared_ptr<MemoryPool>& Default();
  // A new root pool over `allocator` (the process-wide one when null).
  static std::shared_ptr<MemoryPool> NewRoot(Options options,
                                             std::shared_ptr<BufferAllocator> allocator = nullptr);
  // A pool charging this one: one per task, tier or command.
  std::shared_ptr<MemoryPool> NewChild(Options options);

  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // `size` bytes, 64-byte aligned, contents unspecified. ResourceExhausted
  // names the pool whose cap would be exceeded.
  Result<Buffer> Allocate(int64_t size);

  const std::string& name() const { return options_.name; }
  int64_t cap() const { return options_.cap; }
  int64_t bytes_in_use() const { return in_use_.load(std::memory_order_relaxed); }
  int64_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }
  // Restarts peak tracking from the current use.
  void ResetPeak() { peak_.store(bytes_in_use(), std::memory_order_relaxed); }
  const std::shared_ptr<BufferAllocator>& allocator() const { return allocator_; }

 private:
  friend class Buffer;
  MemoryPool(Options options, std::shared_ptr<MemoryPool> parent,
             std::shared_ptr<BufferAllocator> allocator);

  // Adds `bytes` to this pool and its ancestors, failing (and undoing) if a cap
  // would be exceeded and `enforce_cap`.
  Status Charge(int64_t bytes, bool enforce_cap);
  void Uncharge(int64_t bytes);

  Options options_;
  std::shared_ptr<MemoryPool> parent_;
  std::shared_ptr<BufferAllocator> allocator_;
  std::atomic<int64_t> in_use_{0};
  std::atomic<int64_t> peak_{0};
};

}  // namespace strata

#endif  // STRATA_CORE_MEMORY_POOL_H_
