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

namespace strata {
namespace {

// Closes a descriptor on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Status WriteFile(const std::string& path, std::span<const std::byte> bytes) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd.get() < 0) return ErrnoToStatus(errno, fmt::format("creating {}", path));
  const std::byte* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd.get(), p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, fmt::format("writing {}", path));
    p += n;
    left -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status ReadRegionFromFile(const std::string& path, const Shape& layout, const Box& region,
                          const ArrayView& out) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoToStatus(errno, fmt::format("opening {}", path));
  return PreadRegion(fd.get(), 0, layout, region, out, path);
}

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

Status IntermediateStore::GetRegions(std::span<const RegionRead> reads) {
  for (const RegionRead& r : reads) STRATA_RETURN_IF_ERROR(GetRegion(r.block, r.region, r.out));
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

Status PreadRegion(int fd, int64_t offset, const Shape& layout, const Box& region,
                   const ArrayView& out, std::string_view what) {
  const int rank = static_cast<int>(layout.size());
  const int64_t item = out.dtype().size();
  if (region.empty()) return Status::Ok();
  // The longest run that is contiguous both in the file and in `out`: the
  // last axis, plus every earlier axis whose later axes are whole.
  Shape file_strides = ContiguousStrides(layout, item);
  int first = rank;  // axes [first, rank) form one run
  int64_t run = item;
  for (int i = rank - 1; i >= 0; --i) {
    if (out.byte_strides()[i] != run) break;
    run *= region.shape[i];
    first = i;
    if (region.shape[i] != layout[i]) break;  // earlier axes cannot join
  }
  // Runs that follow each other in the file (e.g. the rows of a slice whole
  // in the file but strided in `out`) are read by one preadv each.
  std::vector<iovec> batch;
  int64_t batch_offset = 0;
  auto read_batch = [&]() -> Status {
    size_t next = 0;
    int64_t at = batch_offset;
    while (next < batch.size()) {
      const int count = static_cast<int>(std::min<size_t>(batch.size() - next, IOV_MAX));
      ssize_t n = ::preadv(fd, batch.data() + next, count, at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoToStatus(errno, fmt::format("reading {}", what));
      if (n == 0) return DataLossError(fmt::format("{} is shorter than its block", what));
      at += n;
      for (auto left = static_cast<size_t>(n); left > 0;) {  // a short read resumes mid-run
        iovec& v = batch[next];
        size_t step = std::min(left, v.iov_len);
        v.iov_base = static_cast<std::byte*>(v.iov_base) + step;
        v.iov_len -= step;
        left -= step;
        if (v.iov_len == 0) ++next;
      }
    }
    batch.clear();
    return Status::Ok();
  };
  // Walk the remaining axes [0, first).
  Shape index(first, 0);
  while (true) {
    int64_t at = offset;
    std::byte* dst = out.data();
    for (int i = 0; i < rank; ++i) {
      Index pos = region.origin[i] + (i < first ? index[i] : 0);
      at += pos * file_strides[i];
      if (i < first) dst += index[i] * out.byte_strides()[i];
    }
    if (!batch.empty() && (batch_offset + static_cast<int64_t>(batch.size()) * run != at ||
                           batch.size() == IOV_MAX)) {
      STRATA_RETURN_IF_ERROR(read_batch());
    }
    if (batch.empty()) batch_offset = at;
    batch.push_back({dst, static_cast<size_t>(run)});
    int i = first - 1;
    for (; i >= 0; --i) {
      if (++index[i] < region.shape[i]) break;
      index[i] = 0;
    }
    if (i < 0) break;
  }
  return read_batch();
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
  *path = fmt::format("{}/{}", spill_dir_, block.empty() ? "0" : JoinIndices(block, '.'));
  STRATA_RETURN_IF_ERROR(WriteFile(*path, data.bytes()));
  spilled_bytes_ += data.nbytes();
  ++blocks_spilled_;
  return Status::Ok();
}

Status MemoryIntermediateStore::Put(std::span<const Index> block, NDArray data) {
  const int64_t bytes = data.nbytes();
  Entry entry;
  entry.shape = data.shape();
  if (!budget_ || budget_->TryReserve(bytes)) {
    data.buffer().TransferTo(pool_);
    entry.data = std::make_shared<const NDArray>(std::move(data));
  } else {
    STRATA_RETURN_IF_ERROR(Spill(block, data, &entry.path));
  }
  std::lock_guard lock(mu_);
  Shape key(block.begin(), block.end());
  auto it = blocks_.find(key);
  if (it != blocks_.end()) {
    // A retried task produced the block again: keep the newer copy.
    if (it->second.data) {
      resident_ -= it->second.data->nbytes();
      if (budget_) budget_->Release(it->second.data->nbytes());
    }
    blocks_.erase(it);
  }
  if (entry.data) resident_ += bytes;
  blocks_.emplace(std::move(key), std::move(entry));
  return Status::Ok();
}

Result<MemoryIntermediateStore::Entry> MemoryIntermediateStore::Find(
    std::span<const Index> block) const {
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
  auto it = blocks_.find(Shape(block.begin(), block.end()));
  return it == blocks_.end() ? nullptr : it->second.data;
}

Status MemoryIntermediateStore::GetRegion(std::span<const Index> block, const Box& region,
                                          const ArrayView& out) {
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
    std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
  return resident_;
}

Status MemoryIntermediateStore::Cleanup() {
  std::map<Shape, Entry> doomed;
  {
    std::lock_guard lock(mu_);
    doomed.swap(blocks_);
    if (budget_) budget_->Release(resident_);
    resident_ = 0;
  }
  for (auto& [block, entry] : doomed) {
    if (!entry.path.empty()) ::unlink(entry.path.c_str());
  }
  if (blocks_spilled_.load() > 0) {
    std::error_code ec;
    std::filesystem::remove_all(spill_dir_, ec);
  }
  return Status::Ok();
}

Result<std::unique_ptr<DiskIntermediateStore>> DiskIntermediateStore::Create(std::string dir,
                                                                             ChunkGrid grid,
                                                                             DType dtype) {
  LocalStore::Options options;
  options.create = true;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<LocalStore> local, LocalStore::Open(dir, options));
  std::shared_ptr<LocalStore> store = std::move(local);
  return std::unique_ptr<DiskIntermediateStore>(
      new DiskIntermediateStore(std::move(dir), std::move(grid), dtype, store));
}

DiskIntermediateStore::~DiskIntermediateStore() { Cleanup().IgnoreError(); }

std::string DiskIntermediateStore::Key(std::span<const Index> block) const {
  return block.empty() ? "0" : JoinIndices(block, '.');
}

Status DiskIntermediateStore::Put(std::span<const Index> block, NDArray data) {
  bytes_written_ += data.nbytes();
  return store_->Set(Key(block), data.bytes());
}

Result<std::shared_ptr<const NDArray>> DiskIntermediateStore::Get(std::span<const Index> block,
                                                                  MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(NDArray a, NDArray::Allocate(pool, dtype_, grid_.BlockShape(block)));
  STRATA_RETURN_IF_ERROR(store_->GetInto(Key(block), a.bytes()));
  return std::make_shared<const NDArray>(std::move(a));
}

Status DiskIntermediateStore::GetRegion(std::span<const Index> block, const Box& region,
                                        const ArrayView& out) {
  return ReadRegionFromFile(fmt::format("{}/{}", dir_, Key(block)), grid_.BlockShape(block),
                            region, out);
}

Status DiskIntermediateStore::Erase(std::span<const Index> block) {
  return store_->Erase(Key(block));
}

Status DiskIntermediateStore::Cleanup() {
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

Result<std::span<std::byte>> ShmIntermediateStore::CreateObject(const ObjectId& id,
                                                               int64_t bytes) {
  Result<std::span<std::byte>> created = store_->Create(id, bytes, ShmStore::kNoWait);
  if (created.status().code() == StatusCode::kAlreadyExists) {
    // A retried task produced the block again (its first attempt sealed it and
    // then failed or died): keep the newer copy.
    if (!store_->Delete(id).ok()) store_->Abort(id).IgnoreError();
    created = store_->Create(id, bytes, ShmStore::kNoWait);
  }
  return created;
}

Result<NDArray> ShmIntermediateStore::NewBlock(std::span<const Index> block, DType dtype,
                                               Shape shape, MemoryPool& pool) {
  const int64_t bytes = NumElements(shape) * dtype.size();
  if (bytes == 0 || dtype != dtype_ || shape != grid_.BlockShape(block)) {
    return IntermediateStore::NewBlock(block, dtype, std::move(shape), pool);
  }
  const ObjectId id{array_, LinearIndex(block, grid_.grid_shape())};
  Result<std::span<std::byte>> created = CreateObject(id, bytes);
  if (created.status().code() == StatusCode::kResourceExhausted) {
    // No room in shared memory now: a private buffer, which Put then stores
    // wherever there is room by then.
    return IntermediateStore::NewBlock(block, dtype, std::move(shape), pool);
  }
  if (!created.ok()) {
    return created.status().WithContext(
        fmt::format("storing block {} of {}", JoinIndices(block, '.'), name_));
  }
  Prefault(created->data(), created->data() + bytes, /*write=*/true);
  auto pending = std::make_shared<Pending>(store_, id, created->data());
  {
    std::lock_guard lock(pending_mu_);
    pending_[id.block] = pending;
  }
  return NDArray::FromBuffer(Buffer::External(created->data(), bytes, pending), dtype,
                             std::move(shape));
}

std::shared_ptr<ShmIntermediateStore::Pending> ShmIntermediateStore::TakePending(
    const ObjectId& id, const std::byte* data) {
  std::lock_guard lock(pending_mu_);
  auto it = pending_.find(id.block);
  if (it == pending_.end()) return nullptr;
  std::shared_ptr<Pending> pending = it->second.lock();
  if (pending && pending->data != data) return nullptr;  // someone else's attempt
  pending_.erase(it);
  return pending;
}

Status ShmIntermediateStore::Put(std::span<const Index> block, NDArray data) {
  const int64_t bytes = data.nbytes();
  if (bytes == 0) return Status::Ok();  // nothing to keep: View makes an empty block
  const ObjectId id{array_, LinearIndex(block, grid_.grid_shape())};
  if (std::shared_ptr<Pending> pending = TakePending(id, data.data())) {
    // NewBlock's object, written in place.
    pending->sealed = true;
    Status sealed = store_->Seal(id);
    if (!sealed.ok()) store_->Abort(id).IgnoreError();
    return sealed.WithContext(fmt::format("block {} of {}", id.ToString(), name_));
  }
  Result<std::span<std::byte>> created = CreateObject(id, bytes);
  if (created.ok()) {
    Prefault(created->data(), created->data() + bytes, /*write=*/true);
    std::memcpy(created->data(), data.data(), static_cast<size_t>(bytes));
    data = NDArray();  // free the task's copy before the seal may spill others
    return store_->Seal(id).WithContext(fmt::format("block {} of {}", id.ToString(), name_));
  }
  if (created.status().code() != StatusCode::kResourceExhausted) {
    return created.status().WithContext(
        fmt::format("storing block {} of {}", JoinIndices(block, '.'), name_));
  }
  std::call_once(made_fallback_dir_, [this] {
    std::error_code ec;
    std::filesystem::create_directories(fallback_dir_, ec);
    if (ec) {
      fallback_dir_status_ = ErrnoToStatus(ec.value(), fmt::format("creating {}", fallback_dir_));
    }
  });
  STRATA_RETURN_IF_ERROR(fallback_dir_status_);
  STRATA_RETURN_IF_ERROR(WriteFile(FallbackPath(block), data.bytes()));
  fallback_bytes_ += bytes;
  return Status::Ok();
}

Result<BlockView> ShmIntermediateStore::View(std::span<const Index> block, MemoryPool& pool) {
  const Shape shape = grid_.BlockShape(block);
  const ObjectId id{array_, LinearIndex(block, grid_.grid_shape())};
  if (NumElements(shape) > 0 && store_->Contains(id)) {
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
                                       const ArrayView& out) {
  const Shape shape = grid_.BlockShape(block);
  const ObjectId id{array_, LinearIndex(block, grid_.grid_shape())};
  if (region.empty()) return Status::Ok();
  if (store_->Contains(id)) {
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
  const ObjectId id{array_, LinearIndex(block, grid_.grid_shape())};
  Status s = store_->Delete(id);
  if (s.ok()) return s;
  if (s.code() != StatusCode::kNotFound) return s;
  const std::string path = FallbackPath(block);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoToStatus(errno, fmt::format("removing {}", path));
  }
  return Status::Ok();
}

int64_t ShmIntermediateStore::resident_bytes() const { return store_->used(); }

Status ShmIntermediateStore::Cleanup() {
  for (Index b = 0; b < grid_.num_blocks(); ++b) {
    const ObjectId id{array_, b};
    if (store_->Contains(id)) store_->Delete(id).IgnoreError();
  }
  std::error_code ec;
  std::filesystem::remove_all(fallback_dir_, ec);
  return Status::Ok();
}

}  // namespace strata
