#include "strata/runtime/intermediate_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include "strata/runtime/shm_store.h"
#include "strata/storage/local_store.h"

namespace strata {
namespace {

// Maps the pages of [begin, end) of a shared mapping in one call instead of
// one page fault per 4 KiB page (ShmStore builds huge pages only where the
// kernel lets it, and faulting shmem pages one by one runs at a small
// fraction of memcpy speed; over huge pages this is one step per 2 MiB).
// Best effort: older kernels lack the advice.
void Prefault(const std::byte* begin, const std::byte* end, bool write) {
#ifdef MADV_POPULATE_WRITE
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  if (end <= begin) return;
  uintptr_t lo = reinterpret_cast<uintptr_t>(begin) & ~(page - 1);
  uintptr_t hi = (reinterpret_cast<uintptr_t>(end) + page - 1) & ~(page - 1);
  ::madvise(reinterpret_cast<void*>(lo), hi - lo, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
#endif
}

}  // namespace

Result<NDArray> IntermediateStore::NewBlock(std::span<const Index> /*block*/, DType dtype,
                                            Shape shape, MemoryPool& pool) {
  return NDArray::Allocate(pool, dtype, std::move(shape));
}

Status IntermediateStore::GetRegions(std::span<const RegionRead> reads, MemoryPool& staging) {
  for (const RegionRead& r : reads) {
    STRATA_RETURN_IF_ERROR(GetRegion(r.block, r.region, r.out, staging));
  }
  return Status::Ok();
}

Result<BlockView> IntermediateStore::View(std::span<const Index> block, MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const NDArray> data, Get(block, pool));
  ConstArrayView view = data->view();
  return BlockView{view, std::move(data)};
}

bool RamBudget::TryReserve(int64_t bytes) {
  int64_t used = used_.load();
  while (true) {
    if (used + bytes > capacity_) return false;
    if (used_.compare_exchange_weak(used, used + bytes)) return true;
  }
}

MemoryIntermediateStore::MemoryIntermediateStore(std::string name, DType dtype,
                                                 std::shared_ptr<MemoryPool> pool,
                                                 std::shared_ptr<RamBudget> budget,
                                                 std::string spill_dir)
    : name_(std::move(name)), dtype_(dtype), pool_(std::move(pool)), budget_(std::move(budget)),
      spill_dir_(std::move(spill_dir)) {}

MemoryIntermediateStore::~MemoryIntermediateStore() { Cleanup().IgnoreError(); }

Status MemoryIntermediateStore::Spill(std::span<const Index> block, const NDArray& data,
                                      std::string* path) {
  std::call_once(made_spill_dir_, [this] {
    std::error_code ec;
    std::filesystem::create_directories(spill_dir_, ec);
    if (ec) spill_dir_status_ = ErrnoToStatus(ec.value(), fmt::format("creating {}", spill_dir_));
  });
  STRATA_RETURN_IF_ERROR(spill_dir_status_);
  // A name of its own per Put: two attempts of one task (a backup) may spill
  // the same block at once, and neither may rewrite a file a reader has.
  *path = fmt::format("{}/{}-{}", spill_dir_, block.empty() ? "0" : JoinIndices(block, '.'),
                      spill_counter_.fetch_add(1));
  return WriteFile(*path, data.bytes());
}

Status MemoryIntermediateStore::Put(std::span<const Index> block, NDArray data,
                                    MemoryPool& /*staging*/) {
  // Publish-once: a block that is here already (put by an earlier attempt
  // that then failed or died, or by the other attempt of a task with a
  // backup) stays as it is, and this copy, the same bytes, is dropped. A
  // reader holding the first copy is never disturbed, and nothing is
  // counted twice.
  const int64_t bytes = data.nbytes();
  Shape key(block.begin(), block.end());
  {
    MutexLock lock(&mu_);
    if (blocks_.count(key)) return Status::Ok();
  }
  Entry entry;
  entry.shape = data.shape();
  if (!budget_ || budget_->TryReserve(bytes)) {
    data.buffer().TransferTo(pool_);
    entry.data = std::make_shared<const NDArray>(std::move(data));
  } else {
    STRATA_RETURN_IF_ERROR(Spill(block, data, &entry.path));
  }
  {
    MutexLock lock(&mu_);
    if (!blocks_.count(key)) {
      if (entry.data) {
        resident_ += bytes;
      } else {
        spilled_bytes_ += bytes;
        ++blocks_spilled_;
      }
      blocks_.emplace(std::move(key), std::move(entry));
      return Status::Ok();
    }
  }
  // Another attempt published it meanwhile.
  if (entry.data) {
    if (budget_) budget_->Release(bytes);
  } else {
    ::unlink(entry.path.c_str());
  }
  return Status::Ok();
}

Result<MemoryIntermediateStore::Entry> MemoryIntermediateStore::Find(
    std::span<const Index> block) const {
  MutexLock lock(&mu_);
  auto it = blocks_.find(Shape(block.begin(), block.end()));
  if (it == blocks_.end()) {
    return InternalError(
        fmt::format("block {} of {} is not in the memory tier", JoinIndices(block, '.'), name_));
  }
  return it->second;
}

Result<std::shared_ptr<const NDArray>> MemoryIntermediateStore::Get(std::span<const Index> block,
                                                                    MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(Entry entry, Find(block));
  if (entry.data) return entry.data;
  STRATA_ASSIGN_OR_RETURN(NDArray a, NDArray::Allocate(pool, dtype_, entry.shape));
  STRATA_RETURN_IF_ERROR(ReadRegionFromFile(
      entry.path, entry.shape, Box(Shape(entry.shape.size(), 0), entry.shape), a.view()));
  return std::make_shared<const NDArray>(std::move(a));
}

std::shared_ptr<const NDArray> MemoryIntermediateStore::InRam(
    std::span<const Index> block) const {
  MutexLock lock(&mu_);
  auto it = blocks_.find(Shape(block.begin(), block.end()));
  return it == blocks_.end() ? nullptr : it->second.data;
}

Status MemoryIntermediateStore::GetRegion(std::span<const Index> block, const Box& region,
                                          const ArrayView& out, MemoryPool& /*staging*/) {
  STRATA_ASSIGN_OR_RETURN(Entry entry, Find(block));
  if (entry.data) {
    CopyArray(entry.data->view().Slice(region), out);
    return Status::Ok();
  }
  return ReadRegionFromFile(entry.path, entry.shape, region, out);
}

Status MemoryIntermediateStore::Erase(std::span<const Index> block) {
  Entry doomed;  // freed outside the lock
  {
    MutexLock lock(&mu_);
    auto it = blocks_.find(Shape(block.begin(), block.end()));
    if (it == blocks_.end()) return Status::Ok();
    doomed = std::move(it->second);
    blocks_.erase(it);
    if (doomed.data) {
      resident_ -= doomed.data->nbytes();
      if (budget_) budget_->Release(doomed.data->nbytes());
    }
  }
  if (!doomed.path.empty() && ::unlink(doomed.path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoToStatus(errno, fmt::format("removing {}", doomed.path));
  }
  return Status::Ok();
}

int64_t MemoryIntermediateStore::resident_bytes() const {
  MutexLock lock(&mu_);
  return resident_;
}

Status MemoryIntermediateStore::Cleanup() {
  std::map<Shape, Entry> doomed;
  {
    MutexLock lock(&mu_);
    doomed.swap(blocks_);
    if (budget_) budget_->Release(resident_);
    resident_ = 0;
  }
  for (auto& [block, entry] : doomed) {
    if (!entry.path.empty()) ::unlink(entry.path.c_str());
  }
  if (spill_counter_.load() > 0) {
    std::error_code ec;
    std::filesystem::remove_all(spill_dir_, ec);
  }
  return Status::Ok();
}

Result<std::unique_ptr<DiskIntermediateStore>> DiskIntermediateStore::Create(
    std::string dir, ChunkGrid grid, DType dtype, std::optional<ChunkGrid> stored) {
  LocalStore::Options options;
  options.create = true;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<LocalStore> local, LocalStore::Open(dir, options));
  std::shared_ptr<LocalStore> store = std::move(local);
  return std::unique_ptr<DiskIntermediateStore>(new DiskIntermediateStore(
      std::move(dir), StoredLayout(std::move(grid), std::move(stored)), dtype, store));
}

DiskIntermediateStore::~DiskIntermediateStore() { Cleanup().IgnoreError(); }

Status DiskIntermediateStore::Put(std::span<const Index> block, NDArray data,
                                  MemoryPool& /*staging*/) {
  // Publish-once (see MemoryIntermediateStore::Put): the first file of
  // each stored piece stays. Each piece is written straight from the block
  // (its runs gathered by writev).
  int64_t written = 0;
  for (const StoredLayout::Piece& piece : layout_.Pieces(block)) {
    const ConstArrayView part = data.view().Slice(piece.in_region);
    STRATA_ASSIGN_OR_RETURN(bool published,
                            PublishViewToFile(fmt::format("{}/{}", dir_, piece.key), part));
    if (published) written += NumElements(part.shape()) * data.dtype().size();
  }
  bytes_written_ += written;
  return Status::Ok();
}

Result<std::shared_ptr<const NDArray>> DiskIntermediateStore::Get(std::span<const Index> block,
                                                                  MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(NDArray a,
                          NDArray::Allocate(pool, dtype_, layout_.blocks().BlockShape(block)));
  STRATA_RETURN_IF_ERROR(GetRegion(block, Box::FromShape(a.shape()), a.view(), pool));
  return std::make_shared<const NDArray>(std::move(a));
}

Status DiskIntermediateStore::GetRegion(std::span<const Index> block, const Box& region,
                                        const ArrayView& out, MemoryPool& /*staging*/) {
  for (const StoredLayout::Piece& piece : layout_.Pieces(block, region)) {
    STRATA_RETURN_IF_ERROR(ReadRegionFromFile(fmt::format("{}/{}", dir_, piece.key), piece.shape,
                                              piece.in_piece, out.Slice(piece.in_region)));
  }
  return Status::Ok();
}

Status DiskIntermediateStore::Erase(std::span<const Index> block) {
  for (const StoredLayout::Piece& piece : layout_.Pieces(block)) {
    STRATA_RETURN_IF_ERROR(store_->Erase(piece.key));
  }
  return Status::Ok();
}

Status DiskIntermediateStore::Cleanup() {
  if (!owner_) return Status::Ok();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  if (ec) return ErrnoToStatus(ec.value(), fmt::format("removing {}", dir_));
  return Status::Ok();
}

ShmIntermediateStore::ShmIntermediateStore(std::string name, int64_t array, ChunkGrid grid,
                                           DType dtype, ShmStore* store, std::string fallback_dir)
    : name_(std::move(name)),
      array_(array),
      grid_(std::move(grid)),
      dtype_(dtype),
      store_(store),
      fallback_dir_(std::move(fallback_dir)) {}

ShmIntermediateStore::~ShmIntermediateStore() = default;

std::string ShmIntermediateStore::FallbackPath(std::span<const Index> block) const {
  return fmt::format("{}/{}", fallback_dir_, block.empty() ? "0" : JoinIndices(block, '.'));
}

// An object NewBlock created for a task to write in place: Put seals it;
// dropped without a Put (the task failed), it is aborted.
struct ShmIntermediateStore::Pending {
  Pending(ShmStore* store, ObjectId id, const std::byte* data)
      : store(store), id(id), data(data) {}
  Pending(const Pending&) = delete;
  Pending& operator=(const Pending&) = delete;
  ~Pending() {
    if (!sealed) store->Abort(id).IgnoreError();
  }

  ShmStore* const store;
  const ObjectId id;
  const std::byte* const data;
  bool sealed = false;  // set by Put, on the thread that holds the array
};

ObjectId ShmIntermediateStore::Id(std::span<const Index> block, int copy) const {
  return ObjectId{array_ + copy * kSecondCopy, LinearIndex(block, grid_.grid_shape())};
}

Result<std::span<std::byte>> ShmIntermediateStore::CreateObject(std::span<const Index> block,
                                                               int64_t bytes, ObjectId* id) {
  // Two attempts of a task (a straggler and its backup) may both write the
  // block in place: the first to ask gets the block's object, the second its
  // second copy. AlreadyExists for both means the block is published (an
  // earlier attempt sealed it and then failed or died) or both copies are
  // being written: neither is ours to replace.
  *id = Id(block, 0);
  Result<std::span<std::byte>> created = store_->Create(*id, bytes, ShmStore::kNoWait);
  if (created.status().code() != StatusCode::kAlreadyExists || store_->Contains(*id)) {
    return created;  // ours, no room, or published
  }
  *id = Id(block, 1);
  return store_->Create(*id, bytes, ShmStore::kNoWait);
}

std::optional<ObjectId> ShmIntermediateStore::Published(std::span<const Index> block) const {
  for (int copy = 0; copy < 2; ++copy) {
    const ObjectId id = Id(block, copy);
    if (store_->Contains(id)) return id;
  }
  return std::nullopt;
}

Result<NDArray> ShmIntermediateStore::NewBlock(std::span<const Index> block, DType dtype,
                                               Shape shape, MemoryPool& pool) {
  const int64_t bytes = NumElements(shape) * dtype.size();
  if (bytes == 0 || dtype != dtype_ || shape != grid_.BlockShape(block)) {
    return IntermediateStore::NewBlock(block, dtype, std::move(shape), pool);
  }
  ObjectId id;
  Result<std::span<std::byte>> created = CreateObject(block, bytes, &id);
  if (created.status().code() == StatusCode::kResourceExhausted ||
      created.status().code() == StatusCode::kAlreadyExists) {
    // No room in shared memory now (a private buffer, which Put then stores
    // wherever there is room by then), or no object left to write.
    return IntermediateStore::NewBlock(block, dtype, std::move(shape), pool);
  }
  if (!created.ok()) {
    return created.status().WithContext(
        fmt::format("storing block {} of {}", JoinIndices(block, '.'), name_));
  }
  Prefault(created->data(), created->data() + bytes, /*write=*/true);
  auto pending = std::make_shared<Pending>(store_, id, created->data());
  {
    MutexLock lock(&pending_mu_);
    pending_[{id.array, id.block}] = pending;
  }
  return NDArray::FromBuffer(Buffer::External(created->data(), bytes, pending), dtype,
                             std::move(shape));
}

std::shared_ptr<ShmIntermediateStore::Pending> ShmIntermediateStore::TakePending(
    std::span<const Index> block, const std::byte* data) {
  MutexLock lock(&pending_mu_);
  for (int copy = 0; copy < 2; ++copy) {
    const ObjectId id = Id(block, copy);
    auto it = pending_.find({id.array, id.block});
    if (it == pending_.end()) continue;
    std::shared_ptr<Pending> pending = it->second.lock();
    if (pending && pending->data != data) continue;  // another attempt's
    pending_.erase(it);
    if (pending) return pending;
  }
  return nullptr;
}

Status ShmIntermediateStore::Put(std::span<const Index> block, NDArray data,
                                 MemoryPool& /*staging*/) {
  const int64_t bytes = data.nbytes();
  if (bytes == 0) return Status::Ok();  // nothing to keep: View makes an empty block
  if (std::shared_ptr<Pending> pending = TakePending(block, data.data())) {
    // NewBlock's object, written in place: sealed, unless the other copy is
    // published already (publish-once; this one is aborted as it goes).
    const ObjectId id = pending->id;
    if (store_->Contains(Id(block, id.array == array_ ? 1 : 0))) return Status::Ok();
    pending->sealed = true;
    Status sealed = store_->Seal(id);
    if (!sealed.ok()) store_->Abort(id).IgnoreError();
    return sealed.WithContext(fmt::format("block {} of {}", id.ToString(), name_));
  }
  // Publish-once: a sealed copy stays and this one is dropped.
  if (Published(block)) return Status::Ok();
  ObjectId id;
  Result<std::span<std::byte>> created = CreateObject(block, bytes, &id);
  if (created.ok()) {
    Prefault(created->data(), created->data() + bytes, /*write=*/true);
    std::memcpy(created->data(), data.data(), static_cast<size_t>(bytes));
    data = NDArray();  // free the task's copy before the seal may spill others
    return store_->Seal(id).WithContext(fmt::format("block {} of {}", id.ToString(), name_));
  }
  if (created.status().code() == StatusCode::kAlreadyExists && Published(block)) {
    return Status::Ok();
  }
  if (created.status().code() != StatusCode::kResourceExhausted &&
      created.status().code() != StatusCode::kAlreadyExists) {
    return created.status().WithContext(
        fmt::format("storing block {} of {}", JoinIndices(block, '.'), name_));
  }
  // No room in shared memory (everything pinned or being written), or both
  // objects being written by other attempts (which may never finish): the
  // block goes to a file, which readers take while no object is sealed, and
  // Erase removes with the objects.
  std::call_once(made_fallback_dir_, [this] {
    std::error_code ec;
    std::filesystem::create_directories(fallback_dir_, ec);
    if (ec) {
      fallback_dir_status_ = ErrnoToStatus(ec.value(), fmt::format("creating {}", fallback_dir_));
    }
  });
  STRATA_RETURN_IF_ERROR(fallback_dir_status_);
  STRATA_ASSIGN_OR_RETURN(bool published, PublishViewToFile(FallbackPath(block), data.view()));
  if (published) fallback_bytes_ += bytes;
  return Status::Ok();
}

Result<BlockView> ShmIntermediateStore::View(std::span<const Index> block, MemoryPool& pool) {
  const Shape shape = grid_.BlockShape(block);
  std::optional<ObjectId> published = NumElements(shape) > 0 ? Published(block) : std::nullopt;
  if (published) {
    const ObjectId id = *published;
    // Sealed: Get waits only when restoring a spilled object needs room.
    Result<std::span<const std::byte>> bytes = store_->Get(id, std::chrono::minutes(5));
    if (bytes.ok()) {
      Prefault(bytes->data(), bytes->data() + bytes->size(), /*write=*/false);
      ShmStore* store = store_;
      // Keeps the pin until the last copy of the keepalive goes.
      std::shared_ptr<const void> pin(
          static_cast<const void*>(bytes->data()),
          [store, id](const void*) { store->Release(id).IgnoreError(); });
      return BlockView{ConstArrayView::Contiguous(bytes->data(), dtype_, shape), std::move(pin)};
    }
    if (bytes.status().code() != StatusCode::kDeadlineExceeded) {
      return bytes.status().WithContext(
          fmt::format("reading block {} of {}", JoinIndices(block, '.'), name_));
    }
  }
  STRATA_ASSIGN_OR_RETURN(NDArray a, NDArray::Allocate(pool, dtype_, shape));
  if (NumElements(shape) > 0) {
    STRATA_RETURN_IF_ERROR(
        ReadRegionFromFile(FallbackPath(block), shape, Box::FromShape(shape), a.view()));
  }
  auto data = std::make_shared<const NDArray>(std::move(a));
  ConstArrayView view = data->view();
  return BlockView{view, std::move(data)};
}

Result<std::shared_ptr<const NDArray>> ShmIntermediateStore::Get(std::span<const Index> block,
                                                                 MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(BlockView v, View(block, pool));
  STRATA_ASSIGN_OR_RETURN(NDArray copy, NDArray::CopyOf(pool, v.view));
  return std::make_shared<const NDArray>(std::move(copy));
}

Status ShmIntermediateStore::GetRegion(std::span<const Index> block, const Box& region,
                                       const ArrayView& out, MemoryPool& /*staging*/) {
  const Shape shape = grid_.BlockShape(block);
  if (region.empty()) return Status::Ok();
  if (std::optional<ObjectId> published = Published(block)) {
    const ObjectId id = *published;
    Result<std::span<const std::byte>> bytes = store_->Get(id, std::chrono::minutes(5));
    if (bytes.ok()) {
      // Read through the region's descriptor rather than this process's
      // mapping: the kernel copies from its own mapping of the pages, which
      // every process shares. Through this process's mapping, regions of
      // blocks other workers wrote copied at 2.8 GB/s in W4 (the threads
      // executor's heap: 7.9 GB/s), slowest right after a fresh mapping;
      // preadv gives ~10 GB/s there (bench/first_touch.cc compares them).
      Status read = PreadRegion(store_->fd(), store_->FileOffset(bytes->data()), shape, region,
                                out, fmt::format("block {} of {}", id.ToString(), name_));
      Status released = store_->Release(id);
      STRATA_RETURN_IF_ERROR(read);
      return released;
    }
    if (bytes.status().code() != StatusCode::kDeadlineExceeded) {
      return bytes.status().WithContext(
          fmt::format("reading block {} of {}", JoinIndices(block, '.'), name_));
    }
  }
  return ReadRegionFromFile(FallbackPath(block), shape, region, out);
}

Status ShmIntermediateStore::Erase(std::span<const Index> block) {
  // Every copy: both objects, and the file of a block that found no object
  // (see Put). Which of them exist is known only to the processes that
  // wrote them.
  for (int copy = 0; copy < 2; ++copy) {
    Status s = store_->Delete(Id(block, copy));
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  }
  const std::string path = FallbackPath(block);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT && errno != ENOTDIR) {
    return ErrnoToStatus(errno, fmt::format("removing {}", path));
  }
  return Status::Ok();
}

int64_t ShmIntermediateStore::resident_bytes() const { return store_->used(); }

Status ShmIntermediateStore::Cleanup() {
  for (Index b = 0; b < grid_.num_blocks(); ++b) {
    for (int copy = 0; copy < 2; ++copy) {
      const ObjectId id{array_ + copy * kSecondCopy, b};
      if (store_->Contains(id)) store_->Delete(id).IgnoreError();
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(fallback_dir_, ec);
  return Status::Ok();
}

}  // namespace strata
