// ZarrArray::WriteRegion: read-modify-writes of chunks under a chunk lock.
#include "strata/storage/zarr/zarr_array.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>

#include "strata/storage/local_store.h"

#include "strata/storage/zarr/zarr_array_internal.h"

namespace strata {


namespace {

// Serializes read-modify-writes of one chunk: a mutex (striped by key) in
// this process, and for a local directory an OFD write lock on one byte
// (the chunk's linear index) of a lock file in the array's directory, which
// other processes' writers take too. Other stores get the mutex only.
//
// The lock file exists only while some writer uses it, so that a finished
// array holds nothing but Zarr's keys: a writer that is done tries to lock
// the whole file; if it can (no other writer holds any byte of it) it
// unlinks it. A writer that locked its byte checks that the file it locked
// is still the one at the path (one removed under it was empty of other
// locks, and the next writer makes a new one) and starts over if not.
class ChunkLock {
 public:
  ChunkLock(Store& store, const std::string& array_path, const std::string& key, Index linear)
      : mutex_(StripeFor(store.url() + "/" + key)) {
    mutex_.lock();
    auto* local = dynamic_cast<LocalStore*>(&store);
    if (!local) return;
    Result<std::string> dir =
        array_path.empty() ? Result<std::string>(local->root()) : local->PathOf(array_path);
    if (!dir.ok()) return;
    path_ = *dir + "/" + std::string(kChunkLockFile);
    while (true) {
      fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd_ < 0) return;
      // An open-file-description lock: a classic POSIX lock belongs to the
      // process, and closing any descriptor of the file (another thread's
      // ChunkLock) would drop it.
      if (!Lock(F_WRLCK, linear, 1, /*wait=*/true)) return;
      if (StillAtPath()) return;
      ::close(fd_);  // removed by the last writer before us: take the new one
      fd_ = -1;
    }
  }
  ~ChunkLock() {
    if (fd_ >= 0) {
      // Our byte goes first (a whole-file lock of the same description would
      // merge with it), then the whole file if no other writer holds any of
      // it: then none uses this file, and it goes.
      Lock(F_UNLCK, 0, 0, /*wait=*/false);
      if (Lock(F_WRLCK, 0, 0, /*wait=*/false) && StillAtPath()) ::unlink(path_.c_str());
      ::close(fd_);  // releases the locks
    }
    mutex_.unlock();
  }
  ChunkLock(const ChunkLock&) = delete;
  ChunkLock& operator=(const ChunkLock&) = delete;

 private:
  static std::mutex& StripeFor(const std::string& key) {
    static std::mutex stripes[256];
    return stripes[std::hash<std::string>{}(key) % 256];
  }
  // len 0: to the end of the file.
  bool Lock(short type, Index start, Index len, bool wait) {
    struct flock lock {};
    lock.l_type = type;
    lock.l_whence = SEEK_SET;
    lock.l_start = start;
    lock.l_len = len;
    int r;
    while ((r = ::fcntl(fd_, wait ? F_OFD_SETLKW : F_OFD_SETLK, &lock)) != 0 && errno == EINTR) {
    }
    return r == 0;
  }
  bool StillAtPath() const {
    struct stat held {}, named {};
    return ::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 &&
           held.st_dev == named.st_dev && held.st_ino == named.st_ino;
  }
  std::mutex& mutex_;
  std::string path_;
  int fd_ = -1;
};

}  // namespace

void ZarrArray::RemoveIdleChunkLockFile() const {
  auto* local = dynamic_cast<LocalStore*>(store_.get());
  if (!local) return;
  Result<std::string> dir = path_.empty() ? Result<std::string>(local->root()) : local->PathOf(path_);
  if (!dir.ok()) return;
  const std::string path = *dir + "/" + std::string(kChunkLockFile);
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  struct stat held {}, named {};
  // As ~ChunkLock: only a file no writer holds any byte of, and still the
  // one at the path.
  if (::fcntl(fd, F_OFD_SETLK, &whole) == 0 && ::fstat(fd, &held) == 0 &&
      ::stat(path.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
      held.st_dev == named.st_dev) {
    ::unlink(path.c_str());
  }
  ::close(fd);
}

Status ZarrArray::WriteRegion(const Box& region, const ConstArrayView& data,
                              MemoryPool& pool) const {
  STRATA_CHECK(data.shape() == region.shape);
  return ForEachBlockIn(region, [&](std::span<const Index> block, const Box& block_box,
                                    const Box& part) -> Status {
    ConstArrayView src = data.Slice(Translate(part, region.origin));
    if (part == block_box) return WriteChunk(block, src, pool);
    ChunkLock lock(*store_, path_, ChunkStoreKey(block), LinearIndex(block, grid_.grid_shape()));
    if (shards_) return UpdateShard(block, part, src, pool);
    // A partly covered chunk: read, update, rewrite.
    STRATA_ASSIGN_OR_RETURN(NDArray chunk, NDArray::Allocate(pool, dtype(), block_box.shape));
    STRATA_RETURN_IF_ERROR(ReadChunk(block, chunk.view(), pool).status());
    CopyArray(src, chunk.view().Slice(Translate(part, block_box.origin)));
    return WriteChunk(block, chunk.view(), pool);
  });
}

}  // namespace strata
