#include "strata/runtime/intermediate_store.h"

#include <fmt/format.h>

#include <filesystem>

#include "strata/storage/zarr/zarr_array.h"

namespace strata {

MemoryIntermediateStore::MemoryIntermediateStore(std::string name,
                                                 std::shared_ptr<MemoryPool> pool)
    : name_(std::move(name)), pool_(std::move(pool)) {}

Status MemoryIntermediateStore::Put(std::span<const Index> block, NDArray data) {
  data.buffer().TransferTo(pool_);
  int64_t bytes = data.nbytes();
  auto shared = std::make_shared<const NDArray>(std::move(data));
  std::lock_guard lock(mu_);
  auto [it, inserted] = blocks_.emplace(Shape(block.begin(), block.end()), shared);
  if (!inserted) {
    // A retried task produced the block again: keep the newer copy.
    resident_ -= it->second->nbytes();
    it->second = shared;
  }
  resident_ += bytes;
  return Status::Ok();
}

Result<std::shared_ptr<const NDArray>> MemoryIntermediateStore::Get(std::span<const Index> block,
                                                                    MemoryPool& pool) {
  std::lock_guard lock(mu_);
  auto it = blocks_.find(Shape(block.begin(), block.end()));
  if (it == blocks_.end()) {
    return InternalError(
        fmt::format("block {} of {} is not in the memory tier", JoinIndices(block, '.'), name_));
  }
  return it->second;
}

Status MemoryIntermediateStore::Erase(std::span<const Index> block) {
  std::shared_ptr<const NDArray> doomed;  // freed outside the lock
  std::lock_guard lock(mu_);
  auto it = blocks_.find(Shape(block.begin(), block.end()));
  if (it != blocks_.end()) {
    resident_ -= it->second->nbytes();
    doomed = std::move(it->second);
    blocks_.erase(it);
  }
  return Status::Ok();
}

int64_t MemoryIntermediateStore::resident_bytes() const {
  std::lock_guard lock(mu_);
  return resident_;
}

Status MemoryIntermediateStore::Cleanup() {
  std::map<Shape, std::shared_ptr<const NDArray>> doomed;
  std::lock_guard lock(mu_);
  doomed.swap(blocks_);
  resident_ = 0;
  return Status::Ok();
}

Result<std::unique_ptr<DiskIntermediateStore>> DiskIntermediateStore::Create(std::string dir,
                                                                             ChunkGrid grid,
                                                                             DType dtype) {
  LocalStore::Options options;
  options.create = true;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<LocalStore> local, LocalStore::Open(dir, options));
  std::shared_ptr<LocalStore> store = std::move(local);
  std::shared_ptr<ZarrArray> zarr;
  if (grid.is_regular()) {
    // An uncompressed Zarr v2 array: inspectable with any Zarr tool.
    ArrayMetadata m;
    m.zarr_format = ZarrFormat::kV2;
    m.shape = grid.shape();
    m.chunk_shape = grid.chunk_shape();
    m.encoding.dtype = dtype;
    m.fill_value = ZeroFillValue(dtype);
    ZarrArray::CreateOptions create;
    create.deferred_metadata = false;
    STRATA_ASSIGN_OR_RETURN(zarr, ZarrArray::Create(store, "", m, create));
  }
  return std::unique_ptr<DiskIntermediateStore>(
      new DiskIntermediateStore(std::move(dir), std::move(grid), dtype, store, std::move(zarr)));
}

DiskIntermediateStore::~DiskIntermediateStore() { Cleanup().IgnoreError(); }

std::string DiskIntermediateStore::Key(std::span<const Index> block) const {
  return "b" + JoinIndices(block, '.');
}

Status DiskIntermediateStore::Put(std::span<const Index> block, NDArray data) {
  bytes_written_ += data.nbytes();
  if (zarr_) return zarr_->WriteChunk(block, data.view(), *data.buffer().pool());
  return store_->Set(Key(block), data.bytes());
}

Result<std::shared_ptr<const NDArray>> DiskIntermediateStore::Get(std::span<const Index> block,
                                                                  MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(NDArray a, NDArray::Allocate(pool, dtype_, grid_.BlockShape(block)));
  if (zarr_) {
    STRATA_ASSIGN_OR_RETURN(bool present, zarr_->ReadChunk(block, a.view(), pool));
    if (!present) {
      return InternalError(fmt::format("block {} missing from disk tier {}",
                                       JoinIndices(block, '.'), dir_));
    }
  } else {
    STRATA_RETURN_IF_ERROR(store_->GetInto(Key(block), a.bytes()));
  }
  return std::make_shared<const NDArray>(std::move(a));
}

Status DiskIntermediateStore::Erase(std::span<const Index> block) {
  if (zarr_) return zarr_->EraseChunk(block);
  return store_->Erase(Key(block));
}

Status DiskIntermediateStore::Cleanup() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  if (ec) return ErrnoToStatus(ec.value(), fmt::format("removing {}", dir_));
  return Status::Ok();
}

}  // namespace strata
