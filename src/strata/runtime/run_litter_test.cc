#include "strata/runtime/run_litter.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "strata/base/process_info.h"
#include "strata/base/temp_dir.h"
#include "strata/storage/memory_store.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

// A pid that was alive and is now gone (a reaped child).
pid_t DeadPid() {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(RunLitterTest, LiveRunDirectoryIsKeptAndReleasedOneIsReclaimed) {
  TempDir work;
  auto mine = *RunDirectory::Create(work.path() + "/w");
  EXPECT_EQ(mine->name().rfind("strata-run-" + std::to_string(::getpid()) + "-", 0), 0u);
  std::ofstream(mine->path() + "/array-004-int") << "block";
  EXPECT_EQ(*ReclaimDeadRunDirectories(work.path() + "/w"), 0);
  EXPECT_TRUE(fs::exists(mine->path() + "/array-004-int"));
  const std::string path = mine->path();
  mine.reset();  // lock released, directory left: as after kill -9
  EXPECT_EQ(*ReclaimDeadRunDirectories(work.path() + "/w"), 1);
  EXPECT_FALSE(fs::exists(path));
}

TEST(RunLitterTest, LockHeldByAnotherProcessProtects) {
  TempDir work;
  const std::string dir = work.path() + "/strata-run-1-0-abc";
  fs::create_directories(dir);
  int fd = ::open((dir + "/lock").c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  pid_t child = ::fork();
  if (child == 0) {
    ::flock(fd, LOCK_EX);
    char c = 1;
    (void)!::write(pipefd[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(pipefd[0], &c, 1), 1);
  ::close(fd);
  EXPECT_EQ(*ReclaimDeadRunDirectories(work.path()), 0);  // pid 1 aside, the lock is held
  EXPECT_TRUE(fs::exists(dir));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(*ReclaimDeadRunDirectories(work.path()), 1);
  EXPECT_FALSE(fs::exists(dir));
}

TEST(RunLitterTest, DirectoriesWithoutLockGoByPid) {
  TempDir work;
  const pid_t dead = DeadPid();
  fs::create_directories(fmt::format("{}/strata-run-{}-0", work.path(), dead));
  fs::create_directories(fmt::format("{}/strata-run-{}-0", work.path(), ::getpid()));
  fs::create_directories(fmt::format("{}/.strata-new-{}-3", work.path(), dead));
  fs::create_directories(work.path() + "/strata-runner");  // not ours
  std::ofstream(work.path() + "/strata-run-notes.txt") << "a file";
  EXPECT_EQ(*ReclaimDeadRunDirectories(work.path()), 2);
  EXPECT_EQ(Names(work.path()),
            (std::vector<std::string>{fmt::format("strata-run-{}-0", ::getpid()),
                                      "strata-run-notes.txt", "strata-runner"}));
}

TEST(RunLitterTest, ObjectRunsOfDeadOwnersOnThisHostAreReclaimed) {
  MemoryStore store;
  const pid_t dead = DeadPid();
  auto owner = [](pid_t pid, uint64_t start, const std::string& boot) {
    return fmt::format("{} {} {}\n", pid, start, boot);
  };
  ASSERT_TRUE(store.Set("tier/strata-run-1-0-aa/owner", owner(dead, 5, BootId())).ok());
  ASSERT_TRUE(store.Set("tier/strata-run-1-0-aa/array-004/0.0", "block").ok());
  ASSERT_TRUE(WriteObjectRunOwner(store, "tier/strata-run-2-0-bb").ok());  // us: alive
  ASSERT_TRUE(store.Set("tier/strata-run-2-0-bb/array-004/0.0", "block").ok());
  ASSERT_TRUE(store.Set("tier/strata-run-3-0-cc/owner", owner(dead, 5, "another-host")).ok());
  ASSERT_TRUE(store
                  .Set("tier/strata-run-4-0-dd/owner",
                       owner(::getpid(), ThisProcessStartTime() + 1, BootId()))
                  .ok());  // our pid, reused: the owner is gone
  ASSERT_TRUE(store.Set("tier/user-data/owner", owner(dead, 5, BootId())).ok());
  EXPECT_EQ(*ReclaimDeadObjectRuns(store, "tier"), 2);
  EXPECT_EQ(*store.List("tier/"),
            (std::vector<std::string>{"tier/strata-run-2-0-bb/array-004/0.0",
                                      "tier/strata-run-2-0-bb/owner",
                                      "tier/strata-run-3-0-cc/owner", "tier/user-data/owner"}));
  ASSERT_TRUE(RemoveObjectRunOwner(store, "tier/strata-run-2-0-bb").ok());
  EXPECT_FALSE(*store.Exists("tier/strata-run-2-0-bb/owner"));
}

}  // namespace
}  // namespace strata
