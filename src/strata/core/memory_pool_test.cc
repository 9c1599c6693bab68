#include "strata/core/memory_pool.h"

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(MemoryPoolTest, CountsCurrentAndPeak) {
  auto root = MemoryPool::NewRoot({"root", 0}, std::make_shared<BufferAllocator>());
  {
    Buffer a = *root->Allocate(1000);
    Buffer b = *root->Allocate(3000);
    EXPECT_EQ(root->bytes_in_use(), 4000);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
    a.Reset();
    EXPECT_EQ(root->bytes_in_use(), 3000);
  }
  EXPECT_EQ(root->bytes_in_use(), 0);
  EXPECT_EQ(root->peak_bytes(), 4000);
}

TEST(MemoryPoolTest, CapIsEnforcedWithClearError) {
  auto root = MemoryPool::NewRoot({"root", 0}, std::make_shared<BufferAllocator>());
  auto task = root->NewChild({"task 3 of rechunk", 10'000});
  Buffer a = *task->Allocate(6000);
  Result<Buffer> b = task->Allocate(6000);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(b.status().message().find("memory pool 'task 3 of rechunk'"), std::string_view::npos);
  EXPECT_NE(b.status().message().find("cap 10.0 kB"), std::string_view::npos);
  // A refused allocation leaves no trace in any pool.
  EXPECT_EQ(task->bytes_in_use(), 6000);
  EXPECT_EQ(root->bytes_in_use(), 6000);
  EXPECT_EQ(task->peak_bytes(), 6000);
}

TEST(MemoryPoolTest, ParentCapLimitsChildren) {
  auto root = MemoryPool::NewRoot({"system", 10'000}, std::make_shared<BufferAllocator>());
  auto t1 = root->NewChild({"t1", 0});
  auto t2 = root->NewChild({"t2", 0});
  Buffer a = *t1->Allocate(7000);
  Result<Buffer> b = t2->Allocate(7000);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("'system'"), std::string_view::npos);
  EXPECT_EQ(t2->bytes_in_use(), 0);
  EXPECT_EQ(t2->peak_bytes(), 0);
}

TEST(MemoryPoolTest, TransferMovesTheCharge) {
  auto root = MemoryPool::NewRoot({"root", 0}, std::make_shared<BufferAllocator>());
  auto task = root->NewChild({"task", 0});
  auto tier = root->NewChild({"tier", 0});
  Buffer a = *task->Allocate(5000);
  a.TransferTo(tier);
  EXPECT_EQ(task->bytes_in_use(), 0);
  EXPECT_EQ(tier->bytes_in_use(), 5000);
  EXPECT_EQ(root->bytes_in_use(), 5000);
  task.reset();  // the buffer no longer needs the task's pool
  a.Reset();
  EXPECT_EQ(tier->bytes_in_use(), 0);
  EXPECT_EQ(root->bytes_in_use(), 0);
}

TEST(MemoryPoolTest, ExternalBufferKeepsItsOwnerAndChargesNoPool) {
  auto root = MemoryPool::NewRoot({"root", 0}, std::make_shared<BufferAllocator>());
  std::vector<std::byte> bytes(1000);
  auto owner = std::make_shared<int>(7);
  std::weak_ptr<int> watch = owner;
  Buffer a = Buffer::External(bytes.data(), 1000, std::move(owner));
  EXPECT_EQ(a.data(), bytes.data());
  EXPECT_EQ(a.size(), 1000);
  EXPECT_EQ(a.owner().get(), watch.lock().get());
  a.TransferTo(root);  // its bytes are counted where they live
  EXPECT_EQ(root->bytes_in_use(), 0);
  Buffer b = std::move(a);
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(b.data(), bytes.data());
  b.Reset();
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(b.size(), 0);
  EXPECT_NE(Buffer::External(nullptr, 0, nullptr).data(), nullptr);
}

TEST(MemoryPoolTest, RecyclesLargeBuffers) {
  auto allocator = std::make_shared<BufferAllocator>();
  auto root = MemoryPool::NewRoot({"root", 0}, allocator);
  const int64_t size = 8 << 20;
  std::byte* first;
  {
    Buffer a = *root->Allocate(size);
    std::memset(a.data(), 1, size);
    first = a.data();
  }
  EXPECT_EQ(allocator->stats().bytes_cached, size);
  {
    Buffer b = *root->Allocate(size - 1000);  // about the same size: reused
    EXPECT_EQ(b.data(), first);
    EXPECT_EQ(b.size(), size - 1000);
    EXPECT_EQ(root->bytes_in_use(), size - 1000);
  }
  EXPECT_EQ(allocator->stats().reused_allocations, 1);
  {
    Buffer c = *root->Allocate(size / 4);  // much smaller: not handed an 8 MiB block
    EXPECT_NE(c.data(), first);
  }
  allocator->ReleaseCache();
  EXPECT_EQ(allocator->stats().bytes_cached, 0);
  EXPECT_EQ(allocator->stats().bytes_held, 0);
}

TEST(MemoryPoolTest, CacheIsBounded) {
  BufferAllocator::Options options;
  options.max_cached_bytes = 10 << 20;
  auto allocator = std::make_shared<BufferAllocator>(options);
  auto root = MemoryPool::NewRoot({"root", 0}, allocator);
  std::vector<Buffer> buffers;
  for (int i = 0; i < 8; ++i) buffers.push_back(*root->Allocate(4 << 20));
  buffers.clear();
  EXPECT_LE(allocator->stats().bytes_cached, 10 << 20);
  EXPECT_EQ(allocator->stats().bytes_held, allocator->stats().bytes_cached);
}

TEST(MemoryPoolTest, HeldLimitEvictsIdleBuffersWhileItLives) {
  auto allocator = std::make_shared<BufferAllocator>();
  auto root = MemoryPool::NewRoot({"root", 0}, allocator);
  { Buffer b = *root->Allocate(8 << 20); }
  EXPECT_EQ(allocator->stats().bytes_cached, 8 << 20);  // kept for reuse
  {
    std::shared_ptr<void> limit = allocator->LimitHeld(10 << 20);
    // A 4 MB buffer cannot reuse the idle 8 MB one, and a new mapping would
    // take the allocator past 10 MB: the idle one goes first.
    Buffer c = *root->Allocate(4 << 20);
    EXPECT_EQ(allocator->stats().bytes_cached, 0);
    EXPECT_LE(allocator->stats().bytes_held, 10 << 20);
  }
  // Without the limit, idle buffers stay again.
  EXPECT_EQ(allocator->stats().bytes_cached, 4 << 20);
  { Buffer d = *root->Allocate(6 << 20); }
  EXPECT_EQ(allocator->stats().bytes_cached, 10 << 20);
  // A limit below what is idle evicts at once.
  std::shared_ptr<void> tight = allocator->LimitHeld(1 << 20);
  EXPECT_EQ(allocator->stats().bytes_cached, 0);
}

// Threads that each hold at most one buffer never take the allocator past a
// limit that holds all of them at once: each mapping is counted before it is
// made, so two threads mapping together cannot both take the last room.
TEST(MemoryPoolTest, HeldLimitHoldsUnderConcurrentMappings) {
  constexpr int kThreads = 3;
  constexpr int64_t kLargest = int64_t{6} << 20;
  auto allocator = std::make_shared<BufferAllocator>();
  auto root = MemoryPool::NewRoot({"root", 0}, allocator);
  std::shared_ptr<void> limit = allocator->LimitHeld(kThreads * kLargest);
  std::atomic<int64_t> most_held{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 60; ++i) {
        // 2, 4 or 6 MiB: other sizes than the idle buffers', so most
        // requests map anew and evict.
        Buffer b = *root->Allocate(int64_t{2 << 20} * ((i + t) % 3 + 1));
        b.data()[0] = std::byte{1};
        const int64_t held = allocator->stats().bytes_held;
        int64_t seen = most_held.load();
        while (held > seen && !most_held.compare_exchange_weak(seen, held)) {
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(most_held.load(), kThreads * kLargest);
  EXPECT_LE(allocator->stats().bytes_held, kThreads * kLargest);
}

TEST(MemoryPoolTest, ZeroSizeBufferIsUsable) {
  Buffer b = *MemoryPool::Default()->Allocate(0);
  EXPECT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), 0);
}

TEST(MemoryPoolTest, ConcurrentAllocationsBalance) {
  auto root = MemoryPool::NewRoot({"root", 0}, std::make_shared<BufferAllocator>());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto pool = root->NewChild({"t", 0});
      for (int i = 0; i < 200; ++i) {
        Buffer b = *pool->Allocate((i % 7 + 1) * (t % 2 ? 300'000 : 1000));
        b.data()[0] = std::byte{1};
      }
      EXPECT_EQ(pool->bytes_in_use(), 0);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(root->bytes_in_use(), 0);
}

}  // namespace
}  // namespace strata
