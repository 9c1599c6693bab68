#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "strata/base/process_info.h"
#include "strata/storage/local_store.h"
#include "strata/storage/memory_store.h"
#include "strata/storage/open_store.h"
#include "strata/storage/store.h"
#include "strata/storage/store_test_util.h"

namespace strata {
namespace {

// Each factory call makes a store in its own directory; the directories are
// removed when the test program exits.
std::vector<std::unique_ptr<ScratchDir>>& Dirs() {
  static std::vector<std::unique_ptr<ScratchDir>> dirs;
  return dirs;
}

INSTANTIATE_TEST_SUITE_P(LocalStore, StoreConformanceTest,
                         testing::Values(StoreFactory{"LocalStore", [] {
                           Dirs().push_back(std::make_unique<ScratchDir>());
                           return std::shared_ptr<Store>(
                               *LocalStore::Open(Dirs().back()->path() + "/root"));
                         }}));

INSTANTIATE_TEST_SUITE_P(MemoryStore, StoreConformanceTest,
                         testing::Values(StoreFactory{
                             "MemoryStore", [] { return std::make_shared<MemoryStore>(); },
                             false}));

TEST(LocalStoreTest, WritesLeaveNoTemporaryFiles) {
  ScratchDir dir;
  auto store = *LocalStore::Open(dir.path());
  ASSERT_TRUE(store->Set("a/b/c", "value").ok());
  int files = 0;
  for (auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (entry.is_regular_file()) ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST(LocalStoreTest, ListSkipsTemporaryFilesOfCrashedWriters) {
  ScratchDir dir;
  auto store = *LocalStore::Open(dir.path());
  ASSERT_TRUE(store->Set("arr/0.0", "v").ok());
  // A writer killed between create and rename leaves its temporary behind.
  std::ofstream(dir.path() + "/arr/.0.1.strata-tmp-999-1") << "partial";
  EXPECT_EQ(*store->List("arr/"), std::vector<std::string>{"arr/0.0"});
  EXPECT_FALSE(*store->Exists("arr/0.1"));
}

TEST(LocalStoreTest, OpenMissingWithoutCreateIsNotFound) {
  ScratchDir dir;
  LocalStore::Options options;
  options.create = false;
  Result<std::unique_ptr<LocalStore>> r = LocalStore::Open(dir.path() + "/missing", options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("does not exist"), std::string_view::npos);
}

TEST(LocalStoreTest, OpenOnAFileIsRefused) {
  ScratchDir dir;
  std::ofstream(dir.path() + "/file") << "x";
  Result<std::unique_ptr<LocalStore>> r = LocalStore::Open(dir.path() + "/file");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is not a directory"), std::string_view::npos);
}

TEST(LocalStoreTest, UnwritableDirectoryGivesClearError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  ScratchDir dir;
  auto store = *LocalStore::Open(dir.path());
  ::chmod(dir.path().c_str(), 0500);
  Status s = store->Set("k", "v");
  ::chmod(dir.path().c_str(), 0700);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
}

TEST(LocalStoreTest, WriteIntoReadOnlyFilesystemPathFails) {
  // /proc is not writable even for root: a clear error, not a crash.
  auto store = LocalStore::Open("/proc/self");
  ASSERT_TRUE(store.ok());
  Status s = (*store)->Set("strata-test/x", "v");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/proc/self/strata-test"), std::string_view::npos) << s.ToString();
}

TEST(OpenStoreUrlTest, SchemesAndPaths) {
  ScratchDir dir;
  Result<StoreAndPrefix> local = OpenStoreUrl("file://" + dir.path() + "/x.zarr", true);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ(local->store->url(), dir.path() + "/x.zarr");
  Result<StoreAndPrefix> memory = OpenStoreUrl("memory://a/b", true);
  ASSERT_TRUE(memory.ok());
  EXPECT_EQ(memory->prefix, "a/b");
  Result<StoreAndPrefix> bad = OpenStoreUrl("gopher://x", true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unsupported URL scheme 'gopher'"), std::string_view::npos);
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

TEST(LocalStoreReliabilityTest, FifoIsAnErrorNotAHang) {
  ScratchDir dir;
  auto store = *LocalStore::Open(dir.path());
  ASSERT_EQ(::mkfifo((dir.path() + "/0.0").c_str(), 0644), 0);
  Result<Buffer> got = store->Get("0.0", *MemoryPool::Default());
  EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(got.status().message().find("is a FIFO, not a regular file"), std::string_view::npos)
      << got.status().ToString();
  std::vector<std::byte> out(8);
  EXPECT_EQ(store->GetInto("0.0", out).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store->Size("0.0").status().code(), StatusCode::kFailedPrecondition);
}

TEST(LocalStoreReliabilityTest, SymlinkToADeviceNamesIt) {
  ScratchDir dir;
  auto store = *LocalStore::Open(dir.path());
  std::filesystem::create_symlink("/dev/zero", dir.path() + "/0.1");
  Result<Buffer> got = store->Get("0.1", *MemoryPool::Default());
  EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(got.status().message().find("is a character device (a symlink to /dev/zero)"),
            std::string_view::npos)
      << got.status().ToString();
  // A directory is not a key: absent.
  std::filesystem::create_directories(dir.path() + "/sub");
  EXPECT_TRUE(IsNotFound(store->Get("sub", *MemoryPool::Default()).status()));
}

TEST(LocalStoreReliabilityTest, ReclaimsTempFilesOfDeadWritersOnly) {
  ScratchDir dir;
  auto store = *LocalStore::Open(dir.path());
  ASSERT_TRUE(store->Set("a/0.0", "x").ok());
  // A child that exits at once: its pid is dead (and reaped).
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  auto touch = [&](const std::string& name) {
    std::ofstream(dir.path() + "/a/" + name) << "partial";
  };
  touch(fmt::format(".0.1.strata-tmp-{}-{}-7", child, 123));  // dead writer
  touch(fmt::format(".0.2.strata-tmp-{}-3", child));          // dead, older spelling
  touch(fmt::format(".0.3.strata-tmp-{}-{}-1", ::getpid(), ThisProcessStartTime()));  // live
  touch(fmt::format(".0.4.strata-tmp-{}-{}-1", ::getpid(),
                    ThisProcessStartTime() + 1));  // pid reused
  touch(".0.5.strata-tmp-not-a-pid");              // not ours to judge
  ASSERT_TRUE(store->ReclaimTempFiles("a/").ok());
  std::vector<std::string> left;
  for (auto& e : std::filesystem::directory_iterator(dir.path() + "/a")) {
    left.push_back(e.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{
                      fmt::format(".0.3.strata-tmp-{}-{}-1", ::getpid(), ThisProcessStartTime()),
                      ".0.5.strata-tmp-not-a-pid", "0.0"}));
}

TEST(LocalStoreReliabilityTest, VersionChangesOnEveryWrite) {
  ScratchDir dir;
  auto store = *LocalStore::Open(dir.path());
  EXPECT_FALSE(store->Version("k")->has_value());
  ASSERT_TRUE(store->Set("k", "same").ok());
  std::optional<std::string> v1 = *store->Version("k");
  ASSERT_TRUE(v1.has_value());
  ASSERT_TRUE(store->Set("k", "same").ok());
  EXPECT_NE(*store->Version("k"), v1);  // same bytes, a new file
}

}  // namespace
}  // namespace strata
