#include "strata/runtime/tier_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <vector>

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

Status WriteAll(int fd, const std::byte* p, size_t left, const std::string& path) {
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, fmt::format("writing {}", path));
    p += n;
    left -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Consumes `n` transferred bytes from batch[*next...]: a short transfer
// resumes mid-run, whole runs advance *next.
void AdvanceIovecs(std::vector<iovec>& batch, size_t* next, size_t n) {
  for (size_t left = n; left > 0;) {
    iovec& v = batch[*next];
    const size_t step = std::min(left, v.iov_len);
    v.iov_base = static_cast<std::byte*>(v.iov_base) + step;
    v.iov_len -= step;
    left -= step;
    if (v.iov_len == 0) ++*next;
  }
}

}  // namespace

Status WriteFile(const std::string& path, std::span<const std::byte> bytes) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd.get() < 0) return ErrnoToStatus(errno, fmt::format("creating {}", path));
  return WriteAll(fd.get(), bytes.data(), bytes.size(), path);
}

Status ReadRegionFromFile(const std::string& path, const Shape& layout, const Box& region,
                          const ArrayView& out) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoToStatus(errno, fmt::format("opening {}", path));
  return PreadRegion(fd.get(), 0, layout, region, out, path);
}

StoredLayout::StoredLayout(ChunkGrid blocks, std::optional<ChunkGrid> stored)
    : blocks_(std::move(blocks)), stored_(std::move(stored)) {
  if (stored_ && *stored_ == blocks_) stored_.reset();
}

std::vector<StoredLayout::Piece> StoredLayout::Pieces(std::span<const Index> block) const {
  return Pieces(block, Box::FromShape(blocks_.BlockShape(block)));
}

std::vector<StoredLayout::Piece> StoredLayout::Pieces(std::span<const Index> block,
                                                      const Box& region) const {
  std::vector<Piece> pieces;
  if (region.empty()) return pieces;
  if (!stored_) {
    const Shape shape = blocks_.BlockShape(block);
    pieces.push_back({block.empty() ? "0" : JoinIndices(block, '.'), shape, region,
                      Box::FromShape(region.shape)});
    return pieces;
  }
  // The region in array coordinates, and the stored chunks it meets.
  const Box box = blocks_.BlockBox(block);
  Box wanted = region;
  for (int i = 0; i < wanted.rank(); ++i) wanted.origin[i] += box.origin[i];
  Shape first, last;
  stored_->BlockRangeOf(wanted, first, last);
  Shape s = first;
  const int rank = wanted.rank();
  while (true) {
    const Box sbox = stored_->BlockBox(s);
    const Box part = Intersect(sbox, wanted);
    if (!part.empty()) {
      pieces.push_back({JoinIndices(s, '.'), sbox.shape, Translate(part, sbox.origin),
                        Translate(part, wanted.origin)});
    }
    int i = rank - 1;
    for (; i >= 0; --i) {
      if (++s[i] < last[i]) break;
      s[i] = first[i];
    }
    if (i < 0) break;
  }
  return pieces;
}

Status WriteViewToFile(const std::string& path, const ConstArrayView& data) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd.get() < 0) return ErrnoToStatus(errno, fmt::format("creating {}", path));
  const int64_t item = data.dtype().size();
  if (NumElements(data.shape()) == 0) return Status::Ok();
  if (data.is_contiguous()) {
    return WriteAll(fd.get(), data.data(), static_cast<size_t>(NumElements(data.shape()) * item),
                    path);
  }
  // The longest run contiguous in `data`: the last axis, plus every earlier
  // axis whose later axes are whole.
  const int rank = data.rank();
  int first = rank;
  int64_t run = item;
  for (int i = rank - 1; i >= 0; --i) {
    if (data.byte_strides()[i] != run) break;
    run *= data.shape()[i];
    first = i;
  }
  std::vector<iovec> batch;
  auto flush = [&]() -> Status {
    size_t next = 0;
    while (next < batch.size()) {
      const int count = static_cast<int>(std::min<size_t>(batch.size() - next, IOV_MAX));
      ssize_t n = ::writev(fd.get(), batch.data() + next, count);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoToStatus(errno, fmt::format("writing {}", path));
      AdvanceIovecs(batch, &next, static_cast<size_t>(n));
    }
    batch.clear();
    return Status::Ok();
  };
  Shape index(first, 0);
  while (true) {
    const std::byte* p = data.data();
    for (int i = 0; i < first; ++i) p += index[i] * data.byte_strides()[i];
    batch.push_back({const_cast<std::byte*>(p), static_cast<size_t>(run)});
    if (batch.size() == IOV_MAX) STRATA_RETURN_IF_ERROR(flush());
    int i = first - 1;
    for (; i >= 0; --i) {
      if (++index[i] < data.shape()[i]) break;
      index[i] = 0;
    }
    if (i < 0) break;
  }
  return flush();
}

Result<bool> PublishViewToFile(const std::string& path, const ConstArrayView& data) {
  static std::atomic<uint64_t> counter{0};
  const std::string temp = fmt::format("{}.tmp-{}-{}", path, ::getpid(), counter.fetch_add(1));
  if (Status s = WriteViewToFile(temp, data); !s.ok()) {
    ::unlink(temp.c_str());
    return s;
  }
  if (::link(temp.c_str(), path.c_str()) == 0) {
    ::unlink(temp.c_str());
    return true;
  }
  const int e = errno;
  if (e == EEXIST) {
    ::unlink(temp.c_str());
    return false;
  }
  if ((e == EPERM || e == EOPNOTSUPP || e == ENOSYS) && ::rename(temp.c_str(), path.c_str()) == 0) {
    return true;
  }
  ::unlink(temp.c_str());
  return ErrnoToStatus(e, fmt::format("publishing {}", path));
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
      AdvanceIovecs(batch, &next, static_cast<size_t>(n));
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

}  // namespace strata
