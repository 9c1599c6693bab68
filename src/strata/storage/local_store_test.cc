#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

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
