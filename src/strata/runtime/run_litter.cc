#include "strata/runtime/run_litter.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <sstream>

#include "strata/base/process_info.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

constexpr char kLockName[] = "lock";
constexpr char kNewPrefix[] = ".strata-new-";
constexpr char kOwnerKey[] = "owner";

// The pid in "strata-run-<pid>-..." (or ".strata-new-<pid>-..."), or 0.
pid_t PidInName(std::string_view name, std::string_view prefix) {
  if (name.rfind(prefix, 0) != 0) return 0;
  return static_cast<pid_t>(std::atol(std::string(name.substr(prefix.size())).c_str()));
}

// True when nobody holds the lock of run directory `dir`; false when a live
// process does or the lock cannot be tested (then the directory is kept).
// A directory without a lock file (made by an older Strata) is judged by the
// pid in its name.
bool RunDirectoryAbandoned(const fs::path& dir, pid_t pid_in_name) {
  const std::string lock = (dir / kLockName).string();
  int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno == ENOENT && pid_in_name > 0 && !ProcessAlive(pid_in_name);
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);  // releases the lock if we took it
  return free;
}

}  // namespace

Result<std::unique_ptr<RunDirectory>> RunDirectory::Create(const std::string& base) {
  std::error_code ec;
  fs::create_directories(base, ec);
  if (ec) return ErrnoToStatus(ec.value(), fmt::format("creating work_dir {}", base));
  static std::atomic<int> counter{0};
  std::random_device rd;
  for (;;) {
    const int n = counter.fetch_add(1);
    const std::string name =
        fmt::format("{}{}-{}-{:08x}", kRunDirectoryPrefix, ::getpid(), n, rd());
    const std::string hidden = fmt::format("{}/{}{}-{}", base, kNewPrefix, ::getpid(), n);
    const std::string path = fmt::format("{}/{}", base, name);
    if (fs::exists(path, ec)) continue;  // left by an earlier process with our pid
    if (::mkdir(hidden.c_str(), 0700) != 0) {
      if (errno == EEXIST) continue;
      return ErrnoToStatus(errno, fmt::format("creating run directory in work_dir {}", base));
    }
    // Locked before it has its visible name: a reclaimer never sees it unlocked.
    const std::string lock = hidden + "/" + kLockName;
    int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      Status s = ErrnoToStatus(errno, fmt::format("locking {}", lock));
      if (fd >= 0) ::close(fd);
      fs::remove_all(hidden, ec);
      return s;
    }
    const std::string owner =
        fmt::format("{} {} {}\n", ::getpid(), ThisProcessStartTime(), BootId());
    if (::write(fd, owner.data(), owner.size()) < 0) {
      // Only informative; the lock is what counts.
    }
    if (::rename(hidden.c_str(), path.c_str()) != 0) {
      Status s = ErrnoToStatus(errno, fmt::format("creating run directory {}", path));
      ::close(fd);
      fs::remove_all(hidden, ec);
      return s;
    }
    return std::unique_ptr<RunDirectory>(new RunDirectory(path, fd));
  }
}

RunDirectory::~RunDirectory() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string RunDirectory::name() const { return fs::path(path_).filename().string(); }

Result<int> ReclaimDeadRunDirectories(const std::string& work_dir) {
  std::error_code ec;
  fs::directory_iterator it(work_dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return 0;
    return ErrnoToStatus(ec.value(), fmt::format("listing work_dir {}", work_dir));
  }
  int removed = 0;
  for (const fs::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    bool abandoned = false;
    if (pid_t pid = PidInName(name, kRunDirectoryPrefix); pid > 0) {
      abandoned = entry.is_directory(ec) && !entry.is_symlink(ec) &&
                  RunDirectoryAbandoned(entry.path(), pid);
    } else if (pid_t creator = PidInName(name, kNewPrefix); creator > 0) {
      // Half made: its creator died between mkdir and rename.
      abandoned = entry.is_directory(ec) && !ProcessAlive(creator) &&
                  RunDirectoryAbandoned(entry.path(), creator);
    }
    if (!abandoned) continue;
    fs::remove_all(entry.path(), ec);
    if (!ec) ++removed;
  }
  return removed;
}

Status WriteObjectRunOwner(Store& store, const std::string& run_prefix) {
  const std::string text = fmt::format("{} {} {}\n", ::getpid(), ThisProcessStartTime(), BootId());
  return store.Set(JoinKey(run_prefix, kOwnerKey), text)
      .WithContext(fmt::format("writing the object tier's owner record under {}/{}", store.url(),
                               run_prefix));
}

Status RemoveObjectRunOwner(Store& store, const std::string& run_prefix) {
  return store.Erase(JoinKey(run_prefix, kOwnerKey));
}

Result<int> ReclaimDeadObjectRuns(Store& store, const std::string& tier_prefix) {
  const std::string base = tier_prefix.empty() ? std::string() : tier_prefix + "/";
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys, store.List(base));
  std::set<std::string> dead;
  for (const std::string& key : keys) {
    std::string_view rel = std::string_view(key).substr(base.size());
    const size_t slash = rel.find('/');
    if (slash == std::string_view::npos) continue;
    std::string_view run = rel.substr(0, slash);
    if (rel.substr(slash + 1) != kOwnerKey || run.rfind(kRunDirectoryPrefix, 0) != 0) continue;
    Result<std::string> text = store.GetString(key);
    if (!text.ok()) continue;  // gone meanwhile, or unreadable: leave it
    std::istringstream in(*text);
    long long pid = 0;
    unsigned long long start = 0;
    std::string boot;
    if (!(in >> pid >> start >> boot)) continue;
    if (boot.empty() || boot != BootId()) continue;  // another host (or boot): unknowable
    if (ProcessAlive(static_cast<pid_t>(pid), start)) continue;
    dead.insert(std::string(run));
  }
  for (const std::string& run : dead) {
    // Blocks first, the owner record last: a reclaim cut short is redone.
    const std::string run_base = base + run + "/";
    for (const std::string& key : keys) {
      if (key.rfind(run_base, 0) == 0 && key != run_base + kOwnerKey) {
        STRATA_RETURN_IF_ERROR(store.Erase(key));
      }
    }
    STRATA_RETURN_IF_ERROR(store.Erase(run_base + kOwnerKey));
  }
  return static_cast<int>(dead.size());
}

}  // namespace strata
