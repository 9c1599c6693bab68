// IntermediateStore: where the blocks of one materialized op wait for their
// readers, in one tier.
//
//   MemoryIntermediateStore  blocks stay in RAM as shared NDArrays; readers
//                            get them without a copy. RAM is shared by every
//                            memory-tier store of a compute through a
//                            RamBudget: a block that does not fit is spilled
//                            to a file under the run directory and read back
//                            on demand (per block, so cost grows smoothly
//                            past the capacity instead of falling off a cliff).
//   DiskIntermediateStore    blocks go to uncompressed files under a run
//                            directory in work_dir: raw C-order bytes of the
//                            exact block shape, named by Zarr v2 chunk keys;
//                            or, given a finer stored grid (a multistage
//                            rechunk stage stores rechunker's intermediate
//                            chunks), one file per stored chunk of a block.
//   ShmIntermediateStore     blocks are objects of a ShmStore shared by the
//                            worker processes of the `processes` executor;
//                            readers get pinned zero-copy views. The store
//                            spills to disk on its own; a block that finds no
//                            room at all (everything pinned) goes to a file.
//
// GetRegion reads part of a block straight into the caller's buffer (a
// rechunk gathers slices): from RAM it is a copy, from a file it is one pread
// per contiguous run, so no whole block is ever staged.
//
// The scheduler erases a block when its last reader finishes (refcount GC)
// and calls Cleanup() at the end of a compute, successful or not.
//
// Put is publish-once in every tier: the first complete copy of a block
// stays, and a later Put of the same block (a retry after an attempt that
// published and then died, or the other attempt of a task with a backup:
// the same bytes) is dropped without touching it or counting it again.
// Files are written under temporary names and linked into place, so a
// reader never sees a partial or rewritten file. (The object tier relies on
// a PUT replacing an object whole: the two copies are the same bytes.)
//
// Thread-safety: every method is safe to call concurrently.
#ifndef STRATA_RUNTIME_INTERMEDIATE_STORE_H_
#define STRATA_RUNTIME_INTERMEDIATE_STORE_H_

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "strata/base/status.h"
#include "strata/base/thread_annotations.h"
#include "strata/core/chunk_grid.h"
#include "strata/core/memory_pool.h"
#include "strata/core/ndarray.h"
#include "strata/runtime/tier_io.h"
#include "strata/storage/local_store.h"
#include "strata/storage/store.h"

namespace strata {

class ShmStore;
struct ObjectId;

// A block in hand: a view plus whatever keeps its memory alive (an NDArray,
// or a pin on a shared-memory object released when the last copy goes).
struct BlockView {
  ConstArrayView view;
  std::shared_ptr<const void> keepalive;
};

class IntermediateStore {
 public:
  virtual ~IntermediateStore() = default;
  // Takes the block (shape == the grid's block shape). A tier that copies
  // the block to store it (the object tier, for a block kept as several
  // objects) stages the copy in `staging`: the storing task's pool, so that
  // the task's measured memory counts it.
  virtual Status Put(std::span<const Index> block, NDArray data, MemoryPool& staging) = 0;
  // The block, for reading; buffers come from `pool` when it must be read.
  virtual Result<std::shared_ptr<const NDArray>> Get(std::span<const Index> block,
                                                     MemoryPool& pool) = 0;
  // The block for reading without a copy where the tier allows it (default:
  // Get).
  virtual Result<BlockView> View(std::span<const Index> block, MemoryPool& pool);
  // `region` (in the block's coordinates) of the block, into `out`. A tier
  // that reads through a buffer (the object tier) takes it from `staging`.
  virtual Status GetRegion(std::span<const Index> block, const Box& region,
                           const ArrayView& out, MemoryPool& staging) = 0;
  // One region of one block, for GetRegions.
  struct RegionRead {
    Shape block;
    Box region;
    ArrayView out;
  };
  // GetRegion of each of `reads`. Default: one after the other. The mpi tier
  // asks each rank once for all the regions it holds instead of once each.
  virtual Status GetRegions(std::span<const RegionRead> reads, MemoryPool& staging);
  // A buffer for `block` (of `dtype` and `shape`) for a task to compute into
  // and hand to Put. Default: from `pool`. ShmIntermediateStore hands out the
  // shared-memory object itself, which Put then seals without a copy (and
  // which is aborted if the array is dropped without a Put).
  virtual Result<NDArray> NewBlock(std::span<const Index> block, DType dtype, Shape shape,
                                   MemoryPool& pool);
  // The block's last reader is done.
  virtual Status Erase(std::span<const Index> block) = 0;
  // Bytes held in RAM now.
  virtual int64_t resident_bytes() const = 0;
  // Bytes written to disk or object storage so far.
  virtual int64_t bytes_written() const = 0;
  // Removes whatever is left.
  virtual Status Cleanup() = 0;
};

// RAM the memory tier may hold, shared by the stores of one compute.
class RamBudget {
 public:
  explicit RamBudget(int64_t capacity) : capacity_(capacity) {}
  bool TryReserve(int64_t bytes);
  void Release(int64_t bytes) { used_ -= bytes; }
  int64_t capacity() const { return capacity_; }
  int64_t used() const { return used_.load(); }

 private:
  const int64_t capacity_;
  std::atomic<int64_t> used_{0};
};

class MemoryIntermediateStore : public IntermediateStore {
 public:
  // Block buffers are charged to `pool` while held. Blocks beyond `budget`
  // are spilled to files under `spill_dir` (created on first spill). A null
  // budget never spills.
  MemoryIntermediateStore(std::string name, DType dtype, std::shared_ptr<MemoryPool> pool,
                          std::shared_ptr<RamBudget> budget = nullptr,
                          std::string spill_dir = "");
  ~MemoryIntermediateStore() override;
  Status Put(std::span<const Index> block, NDArray data, MemoryPool& staging) override;
  Result<std::shared_ptr<const NDArray>> Get(std::span<const Index> block,
                                             MemoryPool& pool) override;
  Status GetRegion(std::span<const Index> block, const Box& region, const ArrayView& out,
                   MemoryPool& staging) override;
  Status Erase(std::span<const Index> block) override;
  int64_t resident_bytes() const override;
  int64_t bytes_written() const override { return spilled_bytes_.load(); }
  int64_t blocks_spilled() const { return blocks_spilled_.load(); }
  // The block when it is held in RAM; null when it was spilled (or is absent).
  std::shared_ptr<const NDArray> InRam(std::span<const Index> block) const;
  Status Cleanup() override;

 private:
  struct Entry {
    std::shared_ptr<const NDArray> data;  // in RAM, or
    std::string path;                     // spilled to this file
    Shape shape;
  };
  Status Spill(std::span<const Index> block, const NDArray& data, std::string* path);
  // A copy of the block's entry (taken under the lock); Internal when absent.
  Result<Entry> Find(std::span<const Index> block) const;

  std::string name_;
  DType dtype_;
  std::shared_ptr<MemoryPool> pool_;
  std::shared_ptr<RamBudget> budget_;
  std::string spill_dir_;
  mutable Mutex mu_;
  std::map<Shape, Entry> blocks_ STRATA_GUARDED_BY(mu_);
  int64_t resident_ STRATA_GUARDED_BY(mu_) = 0;
  std::once_flag made_spill_dir_;
  Status spill_dir_status_;
  std::atomic<int64_t> spilled_bytes_{0};
  std::atomic<int64_t> blocks_spilled_{0};
  std::atomic<int64_t> spill_counter_{0};
};

class DiskIntermediateStore : public IntermediateStore {
 public:
  // Creates the store for an array of `grid` and `dtype` under `dir`
  // (a directory that must not exist yet); blocks are stored in chunks of
  // `stored` when given (see StoredLayout).
  static Result<std::unique_ptr<DiskIntermediateStore>> Create(
      std::string dir, ChunkGrid grid, DType dtype, std::optional<ChunkGrid> stored = {});
  ~DiskIntermediateStore() override;
  Status Put(std::span<const Index> block, NDArray data, MemoryPool& staging) override;
  Result<std::shared_ptr<const NDArray>> Get(std::span<const Index> block,
                                             MemoryPool& pool) override;
  Status GetRegion(std::span<const Index> block, const Box& region, const ArrayView& out,
                   MemoryPool& staging) override;
  Status Erase(std::span<const Index> block) override;
  int64_t resident_bytes() const override { return 0; }
  int64_t bytes_written() const override { return bytes_written_.load(); }
  Status Cleanup() override;
  // The directory belongs to another process's run (a dask worker writes
  // into the calling process's run): Cleanup and the destructor leave it.
  void Disown() { owner_ = false; }

 private:
  DiskIntermediateStore(std::string dir, StoredLayout layout, DType dtype,
                        std::shared_ptr<LocalStore> store)
      : dir_(std::move(dir)), layout_(std::move(layout)), dtype_(dtype), store_(std::move(store)) {}

  std::string dir_;
  StoredLayout layout_;
  DType dtype_;
  std::shared_ptr<LocalStore> store_;
  std::atomic<int64_t> bytes_written_{0};
  bool owner_ = true;
};

// The memory tier of the `processes` executor. One ShmStore holds the blocks
// of every memory-tier op of a compute; this store names op `array`'s blocks
// ObjectId{array, linear block}. Put copies the block into a new object and
// seals it (or drops it when the block is sealed already: publish-once; a
// second attempt writing while the first still writes in place takes the
// block's second object, so that neither waits for the other); View pins the
// sealed object and returns a view of the shared memory
// (the pin is released when the last keepalive goes); Erase deletes it
// (deferred by the store while pinned). Bytes that the ShmStore spills are
// counted by its stats, not by bytes_written().
//
// The object is created without waiting: when the ShmStore can make no room
// (all of it pinned or being written, or the object table full), the block is
// written to a file under `fallback_dir` instead, so that a task never waits
// on other tasks for memory. Readers find it there when the object is absent.
//
// Works from any process sharing the ShmStore (the executor forks its workers
// after creating it). resident_bytes() is the whole ShmStore's usage, shared
// by every op's store; bytes_written() counts fallback files written by this
// process. Thread-safety: every method is safe to call concurrently.
class ShmIntermediateStore : public IntermediateStore {
 public:
  // `store` must outlive this object.
  ShmIntermediateStore(std::string name, int64_t array, ChunkGrid grid, DType dtype,
                       ShmStore* store, std::string fallback_dir);
  ~ShmIntermediateStore() override;
  Status Put(std::span<const Index> block, NDArray data, MemoryPool& staging) override;
  Result<std::shared_ptr<const NDArray>> Get(std::span<const Index> block,
                                             MemoryPool& pool) override;
  Result<BlockView> View(std::span<const Index> block, MemoryPool& pool) override;
  Result<NDArray> NewBlock(std::span<const Index> block, DType dtype, Shape shape,
                           MemoryPool& pool) override;
  Status GetRegion(std::span<const Index> block, const Box& region, const ArrayView& out,
                   MemoryPool& staging) override;
  Status Erase(std::span<const Index> block) override;
  int64_t resident_bytes() const override;
  int64_t bytes_written() const override { return fallback_bytes_.load(); }
  Status Cleanup() override;

 private:
  struct Pending;
  // A block's second object (the other attempt of a task with a backup)
  // is op `array + kSecondCopy`'s.
  static constexpr int64_t kSecondCopy = int64_t{1} << 40;
  ObjectId Id(std::span<const Index> block, int copy) const;
  std::string FallbackPath(std::span<const Index> block) const;
  // Creates the block's object, or its second copy when another attempt has
  // the first, without waiting (*id says which); AlreadyExists when neither
  // can be had.
  Result<std::span<std::byte>> CreateObject(std::span<const Index> block, int64_t bytes,
                                            ObjectId* id);
  // The sealed object of the block (first or second copy), if any.
  std::optional<ObjectId> Published(std::span<const Index> block) const;
  // The object NewBlock handed out for `block` when `data` is its bytes.
  std::shared_ptr<Pending> TakePending(std::span<const Index> block, const std::byte* data);

  std::string name_;
  int64_t array_;
  ChunkGrid grid_;
  DType dtype_;
  ShmStore* store_;  // not owned
  std::string fallback_dir_;
  std::once_flag made_fallback_dir_;
  Status fallback_dir_status_;
  std::atomic<int64_t> fallback_bytes_{0};
  Mutex pending_mu_;
  // By object id (array, block).
  std::map<std::pair<int64_t, int64_t>, std::weak_ptr<Pending>> pending_
      STRATA_GUARDED_BY(pending_mu_);
};

}  // namespace strata

#endif  // STRATA_RUNTIME_INTERMEDIATE_STORE_H_
