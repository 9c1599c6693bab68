#include "strata/storage/local_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <optional>
#include <vector>

#include "strata/base/process_info.h"
#include "strata/storage/store.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTempMarker = ".strata-tmp-";

// Makes a rename into `dir` durable (best effort, as after a write that
// already succeeded).
void SyncDirectory(const std::string& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

// Closes a file descriptor on scope exit.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Closes now and reports the error close() gives (it can report a failed write).
  int Close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

Status ReadFully(int fd, std::byte* out, int64_t size, int64_t offset, const std::string& path) {
  int64_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, out + done, static_cast<size_t>(size - done), offset + done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, fmt::format("reading {}", path));
    }
    if (n == 0) {
      return DataLossError(
          fmt::format("{} shrank while being read ({} of {} bytes)", path, done, size));
    }
    done += n;
  }
  return Status::Ok();
}

Status WriteFully(int fd, const std::byte* data, int64_t size, const std::string& path) {
  int64_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, static_cast<size_t>(size - done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, fmt::format("writing {}", path));
    }
    done += n;
  }
  return Status::Ok();
}

// What a non-regular file is, for messages.
std::string FileKind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  return "not a regular file";
}

// Opens `path` for reading; NotFound when absent or a directory (a directory
// is not a key). Anything else that is not a regular file (a FIFO, a device,
// a socket, or a symlink to one, e.g. to /dev/zero) is FailedPrecondition
// naming it: reading it could block forever or never end. O_NONBLOCK makes
// the open of a FIFO return at once instead of waiting for a writer.
Result<int> OpenForRead(const std::string& path, int64_t* size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFoundError(fmt::format("{} not found", path));
    return ErrnoToStatus(errno, fmt::format("opening {}", path));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = ErrnoToStatus(errno, fmt::format("stat {}", path));
    ::close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    if (S_ISDIR(st.st_mode)) return NotFoundError(fmt::format("{} is not a file", path));
    std::string via;
    std::error_code ec;
    if (fs::is_symlink(path, ec)) {
      fs::path target = fs::read_symlink(path, ec);
      if (!ec) via = fmt::format(" (a symlink to {})", target.string());
    }
    return FailedPreconditionError(fmt::format(
        "{} is {}{}, not a regular file; refusing to read it", path, FileKind(st.st_mode), via));
  }
  // Back to blocking reads: a regular file never blocks, but be plain.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  *size = st.st_size;
  return fd;
}

Status MakeDirectories(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return ErrnoToStatus(ec.value(), fmt::format("creating directory {}", dir));
  }
  return Status::Ok();
}

}  // namespace

bool LocalStore::IsTempName(std::string_view file_name) {
  return file_name.find(kTempMarker) != std::string_view::npos;
}

namespace {

// Whether the writer named in a temporary file name is gone: the numbers
// after the marker are "<pid>-<start time>-<n>" (or "<pid>-<n>", as earlier
// versions wrote, then the pid alone decides).
bool TempWriterGone(std::string_view file_name) {
  const size_t at = file_name.find(kTempMarker);
  if (at == std::string_view::npos) return false;
  std::string_view rest = file_name.substr(at + kTempMarker.size());
  std::vector<uint64_t> numbers;
  while (!rest.empty()) {
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
    if (ec != std::errc() || end == rest.data()) return false;  // not ours: leave it
    numbers.push_back(v);
    rest.remove_prefix(end - rest.data());
    if (!rest.empty()) {
      if (rest[0] != '-') return false;
      rest.remove_prefix(1);
    }
  }
  if (numbers.size() < 2 || numbers.size() > 3) return false;
  const pid_t pid = static_cast<pid_t>(numbers[0]);
  std::optional<uint64_t> start;
  if (numbers.size() == 3) start = numbers[1];
  return !ProcessAlive(pid, start);
}

}  // namespace

Status LocalStore::ReclaimTempFiles(std::string_view prefix) {
  std::string dir_key(prefix);
  while (!dir_key.empty() && dir_key.back() == '/') dir_key.pop_back();
  if (!dir_key.empty()) STRATA_RETURN_IF_ERROR(ValidateKey(dir_key));
  fs::path dir = dir_key.empty() ? fs::path(root_) : fs::path(root_) / dir_key;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::Ok();
  fs::recursive_directory_iterator it(dir, ec), end;
  if (ec) return ErrnoToStatus(ec.value(), fmt::format("listing {}", dir.string()));
  for (; it != end; it.increment(ec)) {
    if (ec) return ErrnoToStatus(ec.value(), fmt::format("listing {}", dir.string()));
    const std::string name = it->path().filename().string();
    if (!IsTempName(name) || !TempWriterGone(name)) continue;
    if (::unlink(it->path().c_str()) != 0 && errno != ENOENT) {
      return ErrnoToStatus(errno, fmt::format("removing {}", it->path().string()));
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<LocalStore>> LocalStore::Open(std::string root, Options options) {
  if (root.empty()) return InvalidArgumentError("empty directory path");
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  struct stat st;
  if (::stat(root.c_str(), &st) != 0) {
    if (errno != ENOENT) return ErrnoToStatus(errno, fmt::format("opening {}", root));
    if (!options.create) return NotFoundError(fmt::format("{} does not exist", root));
    STRATA_RETURN_IF_ERROR(MakeDirectories(root));
  } else if (!S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(fmt::format("{} is not a directory", root));
  }
  return std::unique_ptr<LocalStore>(new LocalStore(std::move(root), options));
}

Result<std::string> LocalStore::PathOf(std::string_view key) const {
  STRATA_RETURN_IF_ERROR(ValidateKey(key));
  std::string path = root_;
  path += '/';
  path += key;
  return path;
}

Result<Buffer> LocalStore::Get(std::string_view key, MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(std::string path, PathOf(key));
  int64_t size = 0;
  STRATA_ASSIGN_OR_RETURN(int raw_fd, OpenForRead(path, &size));
  FileDescriptor fd(raw_fd);
  STRATA_ASSIGN_OR_RETURN(Buffer buffer, pool.Allocate(size));
  STRATA_RETURN_IF_ERROR(ReadFully(fd.get(), buffer.data(), size, 0, path));
  return buffer;
}

Result<Buffer> LocalStore::GetRange(std::string_view key, int64_t offset, int64_t length,
                                    MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(Suffix range, GetRangeAndSize(key, offset, length, pool));
  return std::move(range.bytes);
}

Result<Store::Suffix> LocalStore::GetRangeAndSize(std::string_view key, int64_t offset,
                                                  int64_t length, MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(std::string path, PathOf(key));
  if (offset < 0 || length < 0) {
    return InvalidArgumentError(fmt::format("invalid byte range {}+{} of {}", offset, length, path));
  }
  int64_t size = 0;
  STRATA_ASSIGN_OR_RETURN(int raw_fd, OpenForRead(path, &size));
  FileDescriptor fd(raw_fd);
  if (offset > size) {
    return OutOfRangeError(
        fmt::format("byte range starts at {} past the end of {} ({} bytes)", offset, path, size));
  }
  int64_t n = std::min(length, size - offset);
  STRATA_ASSIGN_OR_RETURN(Buffer buffer, pool.Allocate(n));
  STRATA_RETURN_IF_ERROR(ReadFully(fd.get(), buffer.data(), n, offset, path));
  return Suffix{std::move(buffer), size};
}

Status LocalStore::GetInto(std::string_view key, std::span<std::byte> out) {
  STRATA_ASSIGN_OR_RETURN(std::string path, PathOf(key));
  int64_t size = 0;
  STRATA_ASSIGN_OR_RETURN(int raw_fd, OpenForRead(path, &size));
  FileDescriptor fd(raw_fd);
  if (size != static_cast<int64_t>(out.size())) {
    return DataLossError(
        fmt::format("{} holds {} bytes, expected {}", path, size, out.size()));
  }
  return ReadFully(fd.get(), out.data(), size, 0, path);
}

Result<std::optional<int64_t>> LocalStore::Size(std::string_view key) {
  STRATA_ASSIGN_OR_RETURN(std::string path, PathOf(key));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<int64_t>();
    return ErrnoToStatus(errno, fmt::format("stat {}", path));
  }
  if (S_ISDIR(st.st_mode)) return std::optional<int64_t>();
  if (!S_ISREG(st.st_mode)) {
    return FailedPreconditionError(
        fmt::format("{} is {}, not a regular file", path, FileKind(st.st_mode)));
  }
  return std::optional<int64_t>(st.st_size);
}

Result<std::optional<std::string>> LocalStore::Version(std::string_view key) {
  STRATA_ASSIGN_OR_RETURN(std::string path, PathOf(key));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>();
    return ErrnoToStatus(errno, fmt::format("stat {}", path));
  }
  if (S_ISDIR(st.st_mode)) return std::optional<std::string>();
  // Set renames a new file over the key: a new inode and mtime every time.
  return std::optional<std::string>(fmt::format("{}:{}:{}:{}.{:09d}", st.st_dev, st.st_ino,
                                                st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec));
}

std::string LocalStore::TempPathFor(const std::string& path) const {
  size_t slash = path.rfind('/');
  std::string dir = path.substr(0, slash);
  std::string name = path.substr(slash + 1);
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}/.{}{}{}-{}-{}", dir, name, kTempMarker, ::getpid(), ThisProcessStartTime(),
                     counter.fetch_add(1, std::memory_order_relaxed));
}

Status LocalStore::Set(std::string_view key, std::span<const std::byte> value) {
  STRATA_ASSIGN_OR_RETURN(std::string path, PathOf(key));
  size_t slash = path.rfind('/');
  std::string dir = path.substr(0, slash);
  std::string temp = TempPathFor(path);
  int raw_fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (raw_fd < 0 && errno == ENOENT) {
    STRATA_RETURN_IF_ERROR(MakeDirectories(dir));
    raw_fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  if (raw_fd < 0) return ErrnoToStatus(errno, fmt::format("creating {}", path));
  FileDescriptor fd(raw_fd);
  Status s = WriteFully(fd.get(), value.data(), static_cast<int64_t>(value.size()), path);
  if (s.ok() && options_.fsync && ::fsync(fd.get()) != 0) {
    s = ErrnoToStatus(errno, fmt::format("syncing {}", path));
  }
  if (s.ok() && fd.Close() != 0) s = ErrnoToStatus(errno, fmt::format("writing {}", path));
  if (s.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    s = ErrnoToStatus(errno, fmt::format("renaming into {}", path));
  }
  if (!s.ok()) {
    ::unlink(temp.c_str());
    return s;
  }
  if (options_.fsync) SyncDirectory(dir);
  return Status::Ok();
}

Status LocalStore::Rename(std::string_view from, std::string_view to) {
  STRATA_ASSIGN_OR_RETURN(std::string from_path, PathOf(from));
  STRATA_ASSIGN_OR_RETURN(std::string to_path, PathOf(to));
  const std::string dir = to_path.substr(0, to_path.rfind('/'));
  if (::rename(from_path.c_str(), to_path.c_str()) != 0) {
    if (errno == ENOENT) {
      struct stat st;
      if (::stat(from_path.c_str(), &st) != 0) {
        return NotFoundError(fmt::format("{} does not exist", from_path));
      }
      STRATA_RETURN_IF_ERROR(MakeDirectories(dir));
      if (::rename(from_path.c_str(), to_path.c_str()) == 0) {
        if (options_.fsync) SyncDirectory(dir);
        return Status::Ok();
      }
    }
    return ErrnoToStatus(errno, fmt::format("renaming {} to {}", from_path, to_path));
  }
  if (options_.fsync) SyncDirectory(dir);
  return Status::Ok();
}

Status LocalStore::Erase(std::string_view key) {
  STRATA_ASSIGN_OR_RETURN(std::string path, PathOf(key));
  if (::unlink(path.c_str()) != 0 && errno != ENOENT && errno != ENOTDIR) {
    if (errno == EISDIR) return Status::Ok();  // a directory is not a key
    return ErrnoToStatus(errno, fmt::format("removing {}", path));
  }
  return Status::Ok();
}

Result<std::vector<std::string>> LocalStore::List(std::string_view prefix) {
  // Walk the deepest directory the prefix names, then filter by the full prefix.
  std::string dir_key;
  size_t slash = prefix.rfind('/');
  if (slash != std::string_view::npos) dir_key = std::string(prefix.substr(0, slash));
  if (!dir_key.empty()) STRATA_RETURN_IF_ERROR(ValidateKey(dir_key));
  fs::path dir = dir_key.empty() ? fs::path(root_) : fs::path(root_) / dir_key;
  std::vector<std::string> keys;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return keys;
  fs::recursive_directory_iterator it(dir, ec), end;
  if (ec) return ErrnoToStatus(ec.value(), fmt::format("listing {}", dir.string()));
  size_t root_len = root_.size() + 1;
  for (; it != end; it.increment(ec)) {
    if (ec) return ErrnoToStatus(ec.value(), fmt::format("listing {}", dir.string()));
    if (!it->is_regular_file(ec)) continue;
    std::string name = it->path().filename().string();
    if (IsTempName(name)) continue;
    std::string key = it->path().string().substr(root_len);
    if (key.compare(0, prefix.size(), prefix) == 0) keys.push_back(std::move(key));
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

Status LocalStore::ErasePrefix(std::string_view prefix) {
  if (prefix.empty() || prefix.back() != '/') return Store::ErasePrefix(prefix);
  std::string dir_key(prefix.substr(0, prefix.size() - 1));
  STRATA_RETURN_IF_ERROR(ValidateKey(dir_key));
  std::error_code ec;
  fs::remove_all(fs::path(root_) / dir_key, ec);
  if (ec) return ErrnoToStatus(ec.value(), fmt::format("removing {}/{}", root_, dir_key));
  return Status::Ok();
}

Result<Store::Suffix> LocalStore::GetSuffix(std::string_view key, int64_t length,
                                            MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(std::string path, PathOf(key));
  if (length < 0) return InvalidArgumentError(fmt::format("invalid suffix length {}", length));
  int64_t size = 0;
  STRATA_ASSIGN_OR_RETURN(int raw_fd, OpenForRead(path, &size));
  FileDescriptor fd(raw_fd);
  const int64_t n = std::min(length, size);
  STRATA_ASSIGN_OR_RETURN(Buffer buffer, pool.Allocate(n));
  STRATA_RETURN_IF_ERROR(ReadFully(fd.get(), buffer.data(), n, size - n, path));
  return Suffix{std::move(buffer), size};
}

namespace {

// Writes a temporary file beside the key as bytes come; Commit renames it
// over the key (as Set does).
class LocalStoreWriter final : public StoreWriter {
 public:
  LocalStoreWriter(std::string path, std::string temp, int fd, int64_t max_size, bool fsync)
      : path_(std::move(path)), temp_(std::move(temp)), fd_(fd), max_size_(max_size),
        fsync_(fsync) {}
  ~LocalStoreWriter() override {
    if (!committed_) {
      if (fd_ >= 0) ::close(fd_);
      ::unlink(temp_.c_str());
    }
  }

  Status Append(std::span<const std::byte> bytes) override {
    if (size_ + static_cast<int64_t>(bytes.size()) > max_size_) {
      return InvalidArgumentError(fmt::format("writing {}: {} bytes exceed the bound of {}", path_,
                                              size_ + bytes.size(), max_size_));
    }
    STRATA_RETURN_IF_ERROR(
        WriteFully(fd_, bytes.data(), static_cast<int64_t>(bytes.size()), path_));
    size_ += static_cast<int64_t>(bytes.size());
    return Status::Ok();
  }

  Status PatchAt(int64_t offset, std::span<const std::byte> bytes) override {
    STRATA_CHECK(offset >= 0 && offset + static_cast<int64_t>(bytes.size()) <= size_);
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done,
                           offset + static_cast<int64_t>(done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, fmt::format("writing {}", path_));
      }
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }

  Status Commit() override {
    if (fsync_ && ::fsync(fd_) != 0) return ErrnoToStatus(errno, fmt::format("syncing {}", path_));
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return ErrnoToStatus(errno, fmt::format("writing {}", path_));
    if (::rename(temp_.c_str(), path_.c_str()) != 0) {
      return ErrnoToStatus(errno, fmt::format("renaming into {}", path_));
    }
    committed_ = true;
    // The rename itself, as Set makes it durable.
    if (fsync_) SyncDirectory(path_.substr(0, path_.rfind('/')));
    return Status::Ok();
  }

  int64_t size() const override { return size_; }

 private:
  std::string path_;
  std::string temp_;
  int fd_;
  int64_t max_size_;
  bool fsync_;
  int64_t size_ = 0;
  bool committed_ = false;
};

}  // namespace

Result<std::unique_ptr<StoreWriter>> LocalStore::OpenWriter(std::string_view key, int64_t max_size,
                                                            MemoryPool&) {
  STRATA_ASSIGN_OR_RETURN(std::string path, PathOf(key));
  size_t slash = path.rfind('/');
  std::string dir = path.substr(0, slash);
  std::string temp = TempPathFor(path);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ENOENT) {
    STRATA_RETURN_IF_ERROR(MakeDirectories(dir));
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  if (fd < 0) return ErrnoToStatus(errno, fmt::format("creating {}", path));
  return std::unique_ptr<StoreWriter>(
      new LocalStoreWriter(std::move(path), std::move(temp), fd, max_size, options_.fsync));
}

}  // namespace strata
