// The operating-system helpers of the shared-memory store: this process's
// pid, whether another is alive, futexes, whole-file I/O, the region's
// memfd and its aligned mapping.
#include "strata/runtime/shm_store_internal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <vector>

#include "strata/base/byte_size.h"

namespace strata {
namespace internal_runtime {

// This process's pid, without a system call per use (getpid() is one, and
// costs more than a whole Get on paravirtualised VMs); refreshed in children
// by a fork handler.
std::atomic<pid_t> g_pid{0};

pid_t CurrentPid() {
  pid_t pid = g_pid.load(std::memory_order_relaxed);
  if (pid != 0) return pid;
  static std::once_flag registered;
  std::call_once(registered, [] {
    pthread_atfork(nullptr, nullptr, [] { g_pid.store(getpid(), std::memory_order_relaxed); });
  });
  pid = getpid();
  g_pid.store(pid, std::memory_order_relaxed);
  return pid;
}

int64_t RoundUp(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

int32_t PagesFor(int64_t size) {
  return static_cast<int32_t>(RoundUp(size, kShmPageSize) / kShmPageSize);
}

uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Start time of a process in clock ticks since boot (field 22 of
// /proc/<pid>/stat), which tells a process from a later one with its pid;
// nullopt when it is gone.
std::optional<uint64_t> ProcessStartTime(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!in || !std::getline(in, text)) return std::nullopt;
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  // After ") ": state (field 3), then fields 4..; starttime is field 22.
  const char* p = text.c_str() + paren + 1;
  for (int field = 3; field < 22 && *p; ++field) {
    while (*p == ' ') ++p;
    while (*p && *p != ' ') ++p;
  }
  return std::strtoull(p, nullptr, 10);
}

// False when `pid` has exited (including a zombie not yet reaped).
bool ProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (pid == CurrentPid()) return true;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!in || !std::getline(in, text)) return false;
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return true;
  const char state = text[paren + 2];
  return state != 'Z' && state != 'X';
}

void FutexWait(std::atomic<uint32_t>* word, uint32_t observed, Clock::time_point until) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  timespec ts{};
  timespec* timeout = nullptr;
  if (until != Clock::time_point::max()) {
    // steady_clock is CLOCK_MONOTONIC, the clock of FUTEX_WAIT_BITSET.
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(until.time_since_epoch());
    ts.tv_sec = ns.count() / 1000000000;
    ts.tv_nsec = ns.count() % 1000000000;
    timeout = &ts;
  }
  // Not FUTEX_PRIVATE: waiters and wakers are different processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_BITSET, observed, timeout,
          nullptr, FUTEX_BITSET_MATCH_ANY);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

int32_t PinCount(const ShmObjectEntry& e) {
  int32_t pins = e.extra_pins;
  for (const auto& h : e.holders) pins += h.count;
  return pins;
}

void AddPin(ShmObjectEntry& e, pid_t pid) {
  for (auto& h : e.holders) {
    if (h.count > 0 && h.pid == pid) {
      ++h.count;
      return;
    }
  }
  for (auto& h : e.holders) {
    if (h.count == 0) {
      h.pid = pid;
      h.count = 1;
      return;
    }
  }
  ++e.extra_pins;
}

bool RemovePin(ShmObjectEntry& e, pid_t pid) {
  for (auto& h : e.holders) {
    if (h.count > 0 && h.pid == pid) {
      if (--h.count == 0) h.pid = 0;
      return true;
    }
  }
  if (e.extra_pins > 0) {
    --e.extra_pins;
    return true;
  }
  return false;
}

const char* StateName(const ShmObjectEntry& e) {
  switch (e.state) {
    case kFree:
      return "absent";
    case kReserved:
      return "waiting for room";
    case kCreated:
      return "created, not sealed";
    case kSealed:
      if (e.flags & kDeletePending) return "being deleted";
      return e.flags & kResident ? "sealed" : "sealed, spilled";
  }
  return "unknown";
}

// Writes all of `iov` at `offset`, going on after short writes.
Status WriteFully(int fd, std::vector<iovec> iov, int64_t offset, const std::string& what) {
  size_t first = 0;
  while (first < iov.size()) {
    if (iov[first].iov_len == 0) {
      ++first;
      continue;
    }
    const int count = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
    const ssize_t n = pwritev(fd, &iov[first], count, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, what);
    }
    if (n == 0) return ErrnoToStatus(EIO, what);
    offset += n;
    size_t left = static_cast<size_t>(n);
    while (left > 0) {
      if (left >= iov[first].iov_len) {
        left -= iov[first].iov_len;
        ++first;
      } else {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
        left = 0;
      }
    }
  }
  return Status::Ok();
}

Status ReadFully(const std::string& path, int64_t offset, std::byte* out, int64_t size) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, fmt::format("opening spill file {}", path));
  int64_t done = 0;
  while (done < size) {
    const ssize_t n = pread(fd, out + done, static_cast<size_t>(size - done), offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      close(fd);
      if (n == 0) {
        return DataLossError(fmt::format("spill file {} ends at {} before the object's {} bytes",
                                         path, offset + done, size));
      }
      return ErrnoToStatus(err, fmt::format("reading spill file {}", path));
    }
    done += n;
  }
  close(fd);
  return Status::Ok();
}

Result<int> CreateRegionFd() {
  int fd =
      static_cast<int>(syscall(SYS_memfd_create, "strata-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (fd >= 0) return fd;
  // No memfd (old kernel, seccomp): an unnamed file in /dev/shm, which
  // vanishes with its last descriptor just the same.
  fd = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  return ErrnoToStatus(errno, "creating the shared-memory region (memfd_create and /dev/shm)");
}

// Maps `size` bytes of the region `fd`, shared, at an address that is a
// multiple of kDataAlignment. mmap promises only 4 KiB alignment, and a huge
// page is mapped whole (one PMD entry, one fault) only where the address and
// the file offset agree modulo 2 MiB.
Result<std::byte*> MapRegion(int fd, int64_t size) {
  const auto length = static_cast<size_t>(RoundUp(size, kShmPageSize));
  const auto alignment = static_cast<size_t>(kDataAlignment);
  void* reserved = mmap(nullptr, length + alignment, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) {
    return ErrnoToStatus(errno, fmt::format("reserving {} of address space", FormatBytes(size)));
  }
  const auto start = reinterpret_cast<uintptr_t>(reserved);
  const uintptr_t aligned = (start + alignment - 1) & ~uintptr_t{alignment - 1};
  void* mapped = mmap(reinterpret_cast<void*>(aligned), static_cast<size_t>(size),
                      PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  if (mapped == MAP_FAILED) {
    const int err = errno;
    munmap(reserved, length + alignment);
    return ErrnoToStatus(err, fmt::format("mapping {} of shared memory", FormatBytes(size)));
  }
  // The reservation's ends that the mapping does not cover.
  if (aligned > start) munmap(reserved, aligned - start);
  const uintptr_t tail = aligned + length;
  if (start + length + alignment > tail)
    munmap(reinterpret_cast<void*>(tail), start + length + alignment - tail);
  return static_cast<std::byte*>(mapped);
}

}  // namespace internal_runtime

}  // namespace strata
