// IntermediateStore: where the blocks of one materialized op wait for their
// readers, in one tier.
//
//   MemoryIntermediateStore  blocks stay in RAM as shared NDArrays; readers
//                            get them without a copy.
//   DiskIntermediateStore    blocks go to uncompressed files under a run
//                            directory in work_dir (a Zarr v2 array when the
//                            grid is regular, raw block files otherwise).
//
// The scheduler erases a block when its last reader finishes (refcount GC)
// and calls Cleanup() at the end of a compute, successful or not.
//
// Thread-safety: every method is safe to call concurrently.
#ifndef STRATA_RUNTIME_INTERMEDIATE_STORE_H_
#define STRATA_RUNTIME_INTERMEDIATE_STORE_H_

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "strata/base/status.h"
#include "strata/core/chunk_grid.h"
#include "strata/core/memory_pool.h"
#include "strata/core/ndarray.h"
#include "strata/storage/store.h"

namespace strata {

class ZarrArray;

class IntermediateStore {
 public:
  virtual ~IntermediateStore() = default;
  // Takes the block (shape == the grid's block shape).
  virtual Status Put(std::span<const Index> block, NDArray data) = 0;
  // The block, for reading; buffers come from `pool` when it must be read.
  virtual Result<std::shared_ptr<const NDArray>> Get(std::span<const Index> block,
                                                     MemoryPool& pool) = 0;
  // The block's last reader is done.
  virtual Status Erase(std::span<const Index> block) = 0;
  // Bytes held in RAM now.
  virtual int64_t resident_bytes() const = 0;
  // Bytes written to disk or object storage so far.
  virtual int64_t bytes_written() const = 0;
  // Removes whatever is left.
  virtual Status Cleanup() = 0;
};

class MemoryIntermediateStore : public IntermediateStore {
 public:
  // Block buffers are charged to `pool` while held.
  MemoryIntermediateStore(std::string name, std::shared_ptr<MemoryPool> pool);
  Status Put(std::span<const Index> block, NDArray data) override;
  Result<std::shared_ptr<const NDArray>> Get(std::span<const Index> block,
                                             MemoryPool& pool) override;
  Status Erase(std::span<const Index> block) override;
  int64_t resident_bytes() const override;
  int64_t bytes_written() const override { return 0; }
  Status Cleanup() override;

 private:
  std::string name_;
  std::shared_ptr<MemoryPool> pool_;
  mutable std::mutex mu_;
  std::map<Shape, std::shared_ptr<const NDArray>> blocks_;
  int64_t resident_ = 0;
};

class DiskIntermediateStore : public IntermediateStore {
 public:
  // Creates the store for an array of `grid` and `dtype` under `dir`
  // (a directory that must not exist yet).
  static Result<std::unique_ptr<DiskIntermediateStore>> Create(std::string dir, ChunkGrid grid,
                                                               DType dtype);
  ~DiskIntermediateStore() override;
  Status Put(std::span<const Index> block, NDArray data) override;
  Result<std::shared_ptr<const NDArray>> Get(std::span<const Index> block,
                                             MemoryPool& pool) override;
  Status Erase(std::span<const Index> block) override;
  int64_t resident_bytes() const override { return 0; }
  int64_t bytes_written() const override { return bytes_written_.load(); }
  Status Cleanup() override;

 private:
  DiskIntermediateStore(std::string dir, ChunkGrid grid, DType dtype,
                        std::shared_ptr<LocalStore> store, std::shared_ptr<ZarrArray> zarr)
      : dir_(std::move(dir)), grid_(std::move(grid)), dtype_(dtype), store_(std::move(store)),
        zarr_(std::move(zarr)) {}
  std::string Key(std::span<const Index> block) const;

  std::string dir_;
  ChunkGrid grid_;
  DType dtype_;
  std::shared_ptr<LocalStore> store_;
  std::shared_ptr<ZarrArray> zarr_;  // set for regular grids
  std::atomic<int64_t> bytes_written_{0};
};

}  // namespace strata

#endif  // STRATA_RUNTIME_INTERMEDIATE_STORE_H_
