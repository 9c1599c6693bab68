#include "strata/runtime/shm_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "strata/base/temp_dir.h"
#include "strata/runtime/shm_allocator_internal.h"

namespace strata {
namespace internal_runtime {

class ShmStoreTestPeer {
 public:
  static std::string Validate(ShmStore& store) { return store.ValidateForTesting(); }
  static int32_t ObjectWaiters(ShmStore& store) { return store.ObjectWaitersForTesting(); }
  static void Lock(ShmStore& store) { store.LockForTesting(); }
  static void Scramble(ShmStore& store) { store.ScrambleDerivedStateForTesting(); }
  static void MakeResident(ShmStore& store, int32_t first_page, int32_t end_page) {
    store.MakeResident({first_page, end_page});
  }
};

}  // namespace internal_runtime

namespace {

using internal_runtime::PageAllocator;
using internal_runtime::PageAllocatorState;
using internal_runtime::PageRunTag;
using internal_runtime::ShmStoreTestPeer;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr int64_t kKiB = 1024;
constexpr char kExecFdVariable[] = "STRATA_SHM_TEST_FD";

// ---------------------------------------------------------------- helpers

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Bytes that differ for every (seed, position).
void Fill(std::span<std::byte> bytes, uint64_t seed) {
  for (size_t i = 0; i < bytes.size(); i += 8) {
    const uint64_t word = Mix(seed * 1000003 + i / 8);
    std::memcpy(bytes.data() + i, &word, std::min<size_t>(8, bytes.size() - i));
  }
}

bool Matches(std::span<const std::byte> bytes, uint64_t seed) {
  for (size_t i = 0; i < bytes.size(); i += 8) {
    const uint64_t word = Mix(seed * 1000003 + i / 8);
    if (std::memcmp(bytes.data() + i, &word, std::min<size_t>(8, bytes.size() - i)) != 0) {
      return false;
    }
  }
  return true;
}

int64_t RoundUpForTest(int64_t size) { return (size + 4095) / 4096 * 4096; }

// Runs `body` in a forked child, which exits with its return value (without
// running destructors or atexit handlers of the test process).
pid_t Spawn(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  return pid;
}

// The child's exit status, or 128 + the signal that killed it.
int Join(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

void KillAndJoin(pid_t pid) {
  kill(pid, SIGKILL);
  EXPECT_EQ(Join(pid), 128 + SIGKILL);
}

// One-way notifications between processes.
class Pipe {
 public:
  Pipe() { STRATA_CHECK(pipe(fds_) == 0); }
  ~Pipe() {
    close(fds_[0]);
    close(fds_[1]);
  }
  void Signal() { STRATA_CHECK(write(fds_[1], "x", 1) == 1); }
  void Wait() {
    char c;
    STRATA_CHECK(read(fds_[0], &c, 1) == 1);
  }

 private:
  int fds_[2];
};

// Strata's entries in /dev/shm (other software may come and go meanwhile).
std::set<std::string> DevShmNames() {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    std::string name = entry.path().filename().string();
    if (name.find("strata") != std::string::npos) names.insert(std::move(name));
  }
  return names;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    names.push_back(std::filesystem::relative(entry.path(), dir).string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

ShmStoreOptions Options(int64_t capacity, std::string spill_dir = "") {
  ShmStoreOptions options;
  options.name = "test";
  options.capacity = capacity;
  options.max_objects = 1024;
  options.spill_dir = std::move(spill_dir);
  options.spill_batch_bytes = 256 * kKiB;
  options.create_timeout = 5s;
  return options;
}

std::unique_ptr<ShmStore> NewStore(const ShmStoreOptions& options) {
  auto store = ShmStore::Create(options);
  STRATA_CHECK(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

// Creates, fills with the pattern of `seed` and seals an object.
Status Put(ShmStore& store, ObjectId id, int64_t size, uint64_t seed,
           ShmStore::Timeout timeout = 5s) {
  STRATA_ASSIGN_OR_RETURN(std::span<std::byte> bytes, store.Create(id, size, timeout));
  Fill(bytes, seed);
  return store.Seal(id);
}

// Gets an object, checks its bytes against the pattern of `seed`, releases it.
Status CheckObject(ShmStore& store, ObjectId id, int64_t size, uint64_t seed,
                   ShmStore::Timeout timeout = 5s) {
  STRATA_ASSIGN_OR_RETURN(std::span<const std::byte> bytes, store.Get(id, timeout));
  const bool ok = static_cast<int64_t>(bytes.size()) == size && Matches(bytes, seed);
  STRATA_RETURN_IF_ERROR(store.Release(id));
  if (!ok) return DataLossError("object " + id.ToString() + " has the wrong bytes");
  return Status::Ok();
}

// Watchdog for tests whose failure mode is a hang: SIGALRM kills the test.
class Watchdog {
 public:
  explicit Watchdog(unsigned seconds) { alarm(seconds); }
  ~Watchdog() { alarm(0); }
};

// ---------------------------------------------------------------- PageAllocator

class PageAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override { Reset(1024); }
  void Reset(int32_t pages) {
    tags_.assign(pages, PageRunTag{});
    state_ = PageAllocatorState{};
    allocator().Reset(pages);
  }
  PageAllocator allocator() { return PageAllocator(&state_, tags_.data()); }
  int32_t TrueLargestFreeRun() {
    int32_t longest = 0;
    for (int32_t page = 0; page < state_.num_pages; page += tags_[page].length) {
      if (tags_[page].free) longest = std::max(longest, tags_[page].length);
    }
    return longest;
  }

  PageAllocatorState state_{};
  std::vector<PageRunTag> tags_;
};

TEST_F(PageAllocatorTest, SplitsAndCoalesces) {
  auto a = allocator();
  const int32_t x = a.Allocate(100);
  const int32_t y = a.Allocate(200);
  const int32_t z = a.Allocate(300);
  ASSERT_GE(x, 0);
  ASSERT_GE(y, 0);
  ASSERT_GE(z, 0);
  EXPECT_EQ(a.free_pages(), 1024 - 600);
  EXPECT_EQ(a.Validate(), "");
  a.Free(y);
  EXPECT_EQ(a.Validate(), "");
  a.Free(x);  // merges with y's run
  EXPECT_EQ(a.Validate(), "");
  EXPECT_EQ(TrueLargestFreeRun(), 1024 - 600 > 300 ? 424 : 300);
  a.Free(z);  // everything is one run again
  EXPECT_EQ(a.Validate(), "");
  EXPECT_EQ(a.free_pages(), 1024);
  EXPECT_EQ(a.LargestFreeRun(), 1024);
}

TEST_F(PageAllocatorTest, ReusesTheRunOfAFreedObjectOfTheSameSize) {
  auto a = allocator();
  std::vector<int32_t> runs;
  for (int i = 0; i < 8; ++i) runs.push_back(a.Allocate(64));
  // Free every other run: holes of exactly 64 pages between used runs.
  for (int i = 0; i < 8; i += 2) a.Free(runs[i]);
  for (int i = 0; i < 8; i += 2) {
    const int32_t again = a.Allocate(64);
    EXPECT_TRUE(std::find(runs.begin(), runs.end(), again) != runs.end())
        << "a 64-page request did not take a freed 64-page hole";
  }
  EXPECT_EQ(a.free_pages(), 1024 - 8 * 64);
  EXPECT_EQ(a.Validate(), "");
}

TEST_F(PageAllocatorTest, FailsOnlyWhenNoRunIsLongEnough) {
  auto a = allocator();
  EXPECT_EQ(a.Allocate(1025), -1);
  const int32_t all = a.Allocate(1024);
  EXPECT_EQ(all, 0);
  EXPECT_EQ(a.Allocate(1), -1);
  a.Free(all);
  EXPECT_EQ(a.Validate(), "");
}

TEST_F(PageAllocatorTest, RandomOperationsKeepEveryInvariant) {
  Reset(4096);
  auto a = allocator();
  std::mt19937 rng(42);
  std::map<int32_t, int32_t> live;  // first page -> length
  for (int step = 0; step < 3000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      // Mostly chunk-like sizes, sometimes anything.
      const int32_t n = rng() % 4 == 0 ? 1 + static_cast<int32_t>(rng() % 600)
                                       : 16 * (1 + static_cast<int32_t>(rng() % 8));
      const int32_t largest = TrueLargestFreeRun();
      const int32_t first = a.Allocate(n);
      if (first < 0) {
        // TLSF may refuse a request only when no run is more than one size
        // class (1/16) longer than it.
        EXPECT_LT(largest, n + n / 16 + 1) << "step " << step;
        continue;
      }
      auto next = live.lower_bound(first);
      if (next != live.end()) {
        ASSERT_LE(first + n, next->first) << "overlap at step " << step;
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second, first) << "overlap at step " << step;
      }
      live[first] = n;
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      a.Free(it->first);
      live.erase(it);
    }
    ASSERT_EQ(a.Validate(), "") << "step " << step;
  }
  std::vector<std::pair<int32_t, int32_t>> used(live.begin(), live.end());
  const int32_t free_before = a.free_pages();
  a.Rebuild(4096, used);
  EXPECT_EQ(a.Validate(), "");
  EXPECT_EQ(a.free_pages(), free_before);
}

// ---------------------------------------------------------------- single process

TEST(ShmStoreTest, CreateSealGetReleaseDelete) {
  auto store = NewStore(Options(4 << 20));
  const ObjectId id{3, 17};
  EXPECT_FALSE(store->Contains(id));
  auto bytes = store->Create(id, 100000);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  ASSERT_EQ(bytes->size(), 100000u);
  Fill(*bytes, 7);
  EXPECT_FALSE(store->Contains(id));  // not sealed yet
  EXPECT_EQ(store->used(), 25 * 4096);
  ASSERT_TRUE(store->Seal(id).ok());
  EXPECT_TRUE(store->Contains(id));

  auto view = store->Get(id, ShmStore::kNoWait);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->data(), bytes->data());  // zero copy
  EXPECT_TRUE(Matches(*view, 7));
  EXPECT_EQ(store->stats().pinned_bytes, 100000);
  ASSERT_TRUE(store->Release(id).ok());
  EXPECT_EQ(store->stats().pinned_bytes, 0);

  ASSERT_TRUE(store->Delete(id).ok());
  EXPECT_FALSE(store->Contains(id));
  EXPECT_EQ(store->used(), 0);
  EXPECT_EQ(store->stats().num_objects, 0);
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");
}

// The data is made resident a batch ahead of the allocator (whole huge pages
// where the kernel allows), and doing so never changes bytes already there:
// neither those of objects written before, nor those another process writes
// meanwhile.
TEST(ShmStoreTest, DataIsMadeResidentAheadOfUseWithoutChangingIt) {
  Watchdog watchdog(60);
  constexpr int64_t kMiB = 1 << 20;
  auto store = NewStore(Options(256 * kMiB));
  EXPECT_EQ(store->stats().resident_bytes, 0);
  ASSERT_TRUE(Put(*store, {1, 0}, kMiB + 5, 1).ok());
  EXPECT_EQ(store->stats().resident_bytes, 64 * kMiB);  // one batch
  ASSERT_TRUE(Put(*store, {1, 1}, 10 * kMiB, 2).ok());
  EXPECT_EQ(store->stats().resident_bytes, 64 * kMiB);  // still within it
  // Past the frontier: resident up to a batch beyond, in whole 2 MiB pages.
  const pid_t writer = Spawn([&] { return Put(*store, {1, 2}, 100 * kMiB, 3).ok() ? 0 : 1; });
  // Again over what is there, while the child writes.
  ShmStoreTestPeer::MakeResident(*store, 0, (128 * kMiB) / 4096);
  ASSERT_EQ(Join(writer), 0);
  EXPECT_EQ(store->stats().resident_bytes, 128 * kMiB);
  ShmStoreTestPeer::MakeResident(*store, 0, (128 * kMiB) / 4096);
  for (int64_t block = 0; block < 3; ++block) {
    auto view = store->Get(ObjectId{1, block}, ShmStore::kNoWait);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    EXPECT_TRUE(Matches(*view, block + 1)) << "object " << block;
    ASSERT_TRUE(store->Release({1, block}).ok());
  }
  // To the last page, never past it.
  ASSERT_TRUE(Put(*store, {1, 3}, 144 * kMiB + 512 * kKiB, 4).ok());
  EXPECT_EQ(store->stats().resident_bytes, 256 * kMiB);
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");
}

TEST(ShmStoreTest, ObjectIdsAreHashable) {
  std::unordered_set<ObjectId> ids = {{1, 2}, {2, 1}, {1, 2}};
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_EQ((ObjectId{3, 17}.ToString()), "3.17");
}

TEST(ShmStoreTest, GetsSeveralObjectsInOrder) {
  auto store = NewStore(Options(4 << 20));
  std::vector<ObjectId> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back({1, i});
    ASSERT_TRUE(Put(*store, ids.back(), 1000 * (i + 1), i).ok());
  }
  std::reverse(ids.begin(), ids.end());
  auto views = store->Get(ids, ShmStore::kNoWait);
  ASSERT_TRUE(views.ok()) << views.status().ToString();
  for (size_t k = 0; k < ids.size(); ++k) {
    const int i = static_cast<int>(ids[k].block);
    EXPECT_EQ((*views)[k].size(), static_cast<size_t>(1000 * (i + 1)));
    EXPECT_TRUE(Matches((*views)[k], i));
    ASSERT_TRUE(store->Release(ids[k]).ok());
  }
}

TEST(ShmStoreTest, ZeroSizeObject) {
  auto store = NewStore(Options(1 << 20));
  ASSERT_TRUE(Put(*store, {0, 0}, 0, 0).ok());
  auto view = store->Get({0, 0}, ShmStore::kNoWait);
  ASSERT_TRUE(view.ok());
  EXPECT_TRUE(view->empty());
  EXPECT_TRUE(store->Release({0, 0}).ok());
  EXPECT_TRUE(store->Delete({0, 0}).ok());
  EXPECT_EQ(store->used(), 0);
}

TEST(ShmStoreTest, ErrorsNameTheObjectAndState) {
  auto store = NewStore(Options(1 << 20));
  const ObjectId id{2, 5};
  ASSERT_TRUE(store->Create(id, 10).ok());

  auto again = store->Create(id, 10);
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("object 2.5 already exists"));

  auto get = store->Get(std::vector<ObjectId>{id, {2, 6}}, 20ms);
  EXPECT_EQ(get.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(get.status().message()),
              HasSubstr("objects 2.5 (created, not sealed), 2.6 (absent)"));

  EXPECT_EQ(store->Delete(id).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store->Release(id).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store->Seal({9, 9}).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Abort({9, 9}).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Delete({9, 9}).code(), StatusCode::kNotFound);
  ASSERT_TRUE(store->Seal(id).ok());
  EXPECT_EQ(store->Seal(id).code(), StatusCode::kFailedPrecondition);
  Status abort = store->Abort(id);
  EXPECT_EQ(abort.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(abort.message()), HasSubstr("use Delete"));
  EXPECT_EQ(store->Create({1, 1}, -1).status().code(), StatusCode::kInvalidArgument);
}

TEST(ShmStoreTest, AbortRemovesAnUnsealedObject) {
  auto store = NewStore(Options(1 << 20));
  const ObjectId id{1, 1};
  ASSERT_TRUE(store->Create(id, 500000).ok());
  EXPECT_GT(store->used(), 0);
  ASSERT_TRUE(store->Abort(id).ok());
  EXPECT_EQ(store->used(), 0);
  EXPECT_FALSE(store->Contains(id));
  // The id can be created again (a retried task).
  ASSERT_TRUE(Put(*store, id, 500000, 3).ok());
  EXPECT_TRUE(CheckObject(*store, id, 500000, 3).ok());
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");
}

TEST(ShmStoreTest, DeleteIsDeferredWhileReadersHoldTheObject) {
  auto store = NewStore(Options(1 << 20));
  const ObjectId id{1, 1};
  ASSERT_TRUE(Put(*store, id, 300000, 1).ok());
  const int64_t used = store->used();
  auto first = store->Get(id, ShmStore::kNoWait);
  auto second = store->Get(id, ShmStore::kNoWait);
  ASSERT_TRUE(first.ok() && second.ok());

  ASSERT_TRUE(store->Delete(id).ok());
  EXPECT_FALSE(store->Contains(id));  // gone for everyone else at once
  EXPECT_EQ(store->Get(id, ShmStore::kNoWait).status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(store->Delete(id).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Create(id, 10).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(store->used(), used);  // still held
  EXPECT_TRUE(Matches(*first, 1));

  ASSERT_TRUE(store->Release(id).ok());
  EXPECT_EQ(store->used(), used);
  ASSERT_TRUE(store->Release(id).ok());
  EXPECT_EQ(store->used(), 0);
  EXPECT_EQ(store->stats().num_objects, 0);
  EXPECT_EQ(store->Release(id).code(), StatusCode::kNotFound);
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");
}

TEST(ShmStoreTest, ObjectLargerThanCapacityIsResourceExhausted) {
  auto store = NewStore(Options(1 << 20));
  auto big = store->Create({1, 1}, (1 << 20) + 1);
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(big.status().message()), HasSubstr("larger than the store's capacity"));
}

TEST(ShmStoreTest, FullStoreWithoutSpillingTimesOut) {
  auto store = NewStore(Options(1 << 20));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put(*store, {1, i}, 256 * kKiB, i).ok());
  auto more = store->Create({1, 9}, 4096, 30ms);
  EXPECT_EQ(more.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(more.status().message()), HasSubstr("spilling is disabled"));
  EXPECT_THAT(std::string(more.status().message()), HasSubstr("object 1.9"));
  EXPECT_EQ(store->stats().create_waits, 1);
  EXPECT_FALSE(store->Contains({1, 9}));
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");
}

TEST(ShmStoreTest, RejectsBadOptions) {
  EXPECT_EQ(ShmStore::Create(Options(0)).status().code(), StatusCode::kInvalidArgument);
  auto options = Options(1 << 20);
  options.low_water = 0.9;
  options.high_water = 0.8;
  EXPECT_EQ(ShmStore::Create(options).status().code(), StatusCode::kInvalidArgument);
}

TEST(ShmStoreTest, AttachRejectsADescriptorThatIsNotAStore) {
  const int fd = static_cast<int>(syscall(SYS_memfd_create, "other", MFD_CLOEXEC));
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 1 << 20), 0);
  auto store = ShmStore::Attach(fd);
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
  close(fd);
}

TEST(ShmStoreTest, ObjectTableFullIsResourceExhausted) {
  auto options = Options(1 << 20);
  options.max_objects = 4;
  auto store = NewStore(options);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put(*store, {1, i}, 10, i).ok());
  auto more = store->Create({1, 4}, 10, 10ms);
  EXPECT_EQ(more.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(more.status().message()), HasSubstr("object table is full"));
  ASSERT_TRUE(store->Delete({1, 0}).ok());
  EXPECT_TRUE(store->Create({1, 4}, 10, 10ms).ok());
}

// ---------------------------------------------------------------- spilling

TEST(ShmStoreTest, SpillsWhenFullAndRestoresIdenticalBytes) {
  TempDir dir;
  auto options = Options(1 << 20, dir.path());
  options.high_water = 1.0;  // only spill under pressure here
  options.low_water = 1.0;
  auto store = NewStore(options);
  constexpr int kObjects = 16;
  const int64_t size = 200 * kKiB + 123;  // 3.2 MB through a 1 MB store
  for (int i = 0; i < kObjects; ++i) {
    ASSERT_TRUE(Put(*store, {4, i}, size, 100 + i).ok()) << i;
    ASSERT_EQ(ShmStoreTestPeer::Validate(*store), "") << i;
  }
  ShmStore::Stats stats = store->stats();
  EXPECT_EQ(stats.num_objects, kObjects);
  EXPECT_GE(stats.num_spilled, kObjects - 5);
  EXPECT_EQ(stats.bytes_spilled, stats.objects_spilled * size);
  EXPECT_LE(store->used(), store->capacity());
  EXPECT_EQ(stats.num_spill_files, 1);  // batches are appended to one file
  EXPECT_LT(stats.spill_batches, stats.objects_spilled);
  for (int i = 0; i < kObjects; ++i) {
    EXPECT_TRUE(store->Contains({4, i}));
    ASSERT_TRUE(CheckObject(*store, {4, i}, size, 100 + i).ok()) << i;
  }
  stats = store->stats();
  EXPECT_GE(stats.objects_restored, kObjects - 5);
  EXPECT_EQ(stats.bytes_restored, stats.objects_restored * size);
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");

  // A batch Get restores everything it asks for.
  std::vector<ObjectId> ids = {{4, 0}, {4, 1}, {4, 2}, {4, 3}};
  auto views = store->Get(ids, 5s);
  ASSERT_TRUE(views.ok()) << views.status().ToString();
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(Matches((*views)[i], 100 + i));
    ASSERT_TRUE(store->Release(ids[i]).ok());
  }

  // Spill files go as soon as none of their objects is left.
  for (int i = 0; i < kObjects; ++i) ASSERT_TRUE(store->Delete({4, i}).ok());
  stats = store->stats();
  EXPECT_EQ(stats.num_spill_files, 0);
  EXPECT_EQ(stats.spill_file_bytes, 0);
  EXPECT_EQ(ListDir(store->run_dir()), std::vector<std::string>{"owner"});
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");
}

TEST(ShmStoreTest, SpillsProactivelyAboveTheHighWaterMark) {
  TempDir dir;
  auto options = Options(1 << 20, dir.path());
  options.high_water = 0.8;
  options.low_water = 0.5;
  auto store = NewStore(options);
  const int64_t size = 200 * kKiB;  // 50 pages of 256
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put(*store, {1, i}, size, i).ok());
  EXPECT_EQ(store->stats().objects_spilled, 0);    // 78%
  ASSERT_TRUE(Put(*store, {1, 4}, size, 4).ok());  // 98% -> down to <= 50%
  const ShmStore::Stats stats = store->stats();
  EXPECT_EQ(stats.objects_spilled, 3);
  EXPECT_EQ(stats.spill_batches, 1);
  EXPECT_LE(store->used(), store->capacity() / 2);
  EXPECT_EQ(stats.create_waits, 0);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(CheckObject(*store, {1, i}, size, i).ok()) << i;
}

TEST(ShmStoreTest, PinnedObjectsAreNotSpilled) {
  TempDir dir;
  auto options = Options(1 << 20, dir.path());
  options.high_water = options.low_water = 1.0;
  auto store = NewStore(options);
  std::vector<ObjectId> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back({1, i});
    ASSERT_TRUE(Put(*store, ids.back(), 256 * kKiB, i).ok());
  }
  auto views = store->Get(ids, ShmStore::kNoWait);
  ASSERT_TRUE(views.ok());
  auto more = store->Create({1, 9}, 4096, 30ms);
  EXPECT_EQ(more.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(more.status().message()), HasSubstr("nothing left to spill"));
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(Matches((*views)[i], i));
    ASSERT_TRUE(store->Release(ids[i]).ok());
  }
  EXPECT_TRUE(store->Create({1, 9}, 4096, 30ms).ok());  // now something can go
}

TEST(ShmStoreTest, SpillLimitReachedIsResourceExhausted) {
  TempDir dir;
  auto options = Options(512 * kKiB, dir.path());
  options.spill_limit = 300 * kKiB;
  options.high_water = options.low_water = 1.0;
  auto store = NewStore(options);
  const int64_t size = 200 * kKiB;
  ASSERT_TRUE(Put(*store, {1, 0}, size, 0).ok());
  ASSERT_TRUE(Put(*store, {1, 1}, size, 1).ok());
  ASSERT_TRUE(Put(*store, {1, 2}, size, 2).ok());  // spills 1.0 (200 kB on disk)
  auto more = store->Create({1, 3}, size);
  EXPECT_EQ(more.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(more.status().message()), HasSubstr("the spill limit is reached"));
  // Restoring 1.0 needs room too, which only a delete can make now.
  auto restore = store->Get({1, 0}, ShmStore::kNoWait);
  EXPECT_EQ(restore.status().code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(store->Delete({1, 1}).ok());
  EXPECT_TRUE(CheckObject(*store, {1, 0}, size, 0).ok());
  EXPECT_TRUE(CheckObject(*store, {1, 2}, size, 2).ok());
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");
}

TEST(ShmStoreTest, FullSpillDiskIsResourceExhausted) {
  TempDir dir;
  auto options = Options(512 * kKiB, dir.path());
  options.high_water = options.low_water = 1.0;
  auto store = NewStore(options);
  // The first spill file is a link to /dev/full: every write fails with ENOSPC.
  const std::string first_file = store->run_dir() + "/spill-000001.bin";
  ASSERT_EQ(symlink("/dev/full", first_file.c_str()), 0);
  const int64_t size = 200 * kKiB;
  ASSERT_TRUE(Put(*store, {1, 0}, size, 0).ok());
  ASSERT_TRUE(Put(*store, {1, 1}, size, 1).ok());
  auto more = store->Create({1, 2}, size);
  EXPECT_EQ(more.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(more.status().message()), HasSubstr("spilling failed"));
  EXPECT_THAT(std::string(more.status().message()), HasSubstr("No space left on device"));
  EXPECT_EQ(store->stats().spill_errors, 1);
  // Nothing was lost, and the next spill (to a new file) works.
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(CheckObject(*store, {1, i}, size, i).ok()) << i;
  ASSERT_TRUE(Put(*store, {1, 2}, size, 2).ok());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(CheckObject(*store, {1, i}, size, i).ok()) << i;
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");
}

// ---------------------------------------------------------------- processes

TEST(ShmStoreTest, GetBlocksUntilAnotherProcessSeals) {
  Watchdog watchdog(60);
  auto store = NewStore(Options(4 << 20));
  const ObjectId id{7, 1};
  const int64_t size = 1 << 20;
  const pid_t reader = Spawn([&] {
    auto view = store->Get(id, 20s);
    if (!view.ok()) return 1;
    if (!Matches(*view, 9)) return 2;
    return store->Release(id).ok() ? 0 : 3;
  });
  std::this_thread::sleep_for(100ms);
  int status = 0;
  EXPECT_EQ(waitpid(reader, &status, WNOHANG), 0) << "the reader did not wait for the seal";
  ASSERT_TRUE(Put(*store, id, size, 9).ok());
  EXPECT_EQ(Join(reader), 0);

  // And the other way round: this process waits for a child's object.
  const ObjectId other{7, 2};
  const pid_t writer = Spawn([&] {
    std::this_thread::sleep_for(100ms);
    return Put(*store, other, size, 10).ok() ? 0 : 1;
  });
  EXPECT_TRUE(CheckObject(*store, other, size, 10, 20s).ok());
  EXPECT_EQ(Join(writer), 0);
  EXPECT_EQ(store->stats().pinned_bytes, 0);
}

TEST(ShmStoreTest, ConcurrentReadersAcrossProcesses) {
  Watchdog watchdog(60);
  auto store = NewStore(Options(8 << 20));
  std::vector<ObjectId> ids;
  const int64_t size = 256 * kKiB + 5;
  for (int i = 0; i < 8; ++i) {
    ids.push_back({2, i});
    ASSERT_TRUE(Put(*store, ids.back(), size, 50 + i).ok());
  }
  constexpr int kReaders = 4;
  Pipe pinned, go;
  std::vector<pid_t> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.push_back(Spawn([&] {
      auto views = store->Get(ids, 10s);
      if (!views.ok()) return 1;
      for (int i = 0; i < 8; ++i) {
        if (!Matches((*views)[i], 50 + i)) return 2;
      }
      pinned.Signal();
      go.Wait();
      for (int i = 0; i < 8; ++i) {
        if (!Matches((*views)[i], 50 + i)) return 3;  // deleted under us?
        if (!store->Release(ids[i]).ok()) return 4;
      }
      return 0;
    }));
  }
  for (int r = 0; r < kReaders; ++r) pinned.Wait();
  EXPECT_EQ(store->stats().pinned_bytes, 8 * size);
  const int64_t used = store->used();
  ASSERT_TRUE(store->Delete(ids[0]).ok());  // deferred: four readers hold it
  EXPECT_EQ(store->used(), used);
  for (int r = 0; r < kReaders; ++r) go.Signal();
  for (pid_t pid : readers) EXPECT_EQ(Join(pid), 0);
  EXPECT_EQ(store->stats().pinned_bytes, 0);
  EXPECT_EQ(store->used(), used - RoundUpForTest(size));
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");
}

TEST(ShmStoreTest, CreateWaitsForADeleteInAnotherProcess) {
  Watchdog watchdog(60);
  auto store = NewStore(Options(1 << 20));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put(*store, {1, i}, 256 * kKiB, i).ok());
  const pid_t deleter = Spawn([&] {
    while (store->stats().create_waits == 0) std::this_thread::sleep_for(5ms);
    return store->Delete({1, 2}).ok() ? 0 : 1;
  });
  auto bytes = store->Create({1, 9}, 256 * kKiB, 20s);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(store->stats().create_waits, 1);
  EXPECT_EQ(Join(deleter), 0);
}

TEST(ShmStoreTest, ProducersAndConsumersInSeveralProcessesWithSpilling) {
  Watchdog watchdog(120);
  TempDir dir;
  auto store = NewStore(Options(1 << 20, dir.path()));
  constexpr int kProducers = 2;
  constexpr int kObjectsEach = 25;
  auto size_of = [](int p, int i) { return int64_t{(p * 37 + i * 101) % 300 + 1} * kKiB + i; };
  std::vector<pid_t> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.push_back(Spawn([&, p] {
      for (int i = 0; i < kObjectsEach; ++i) {
        if (!Put(*store, {p, i}, size_of(p, i), p * 1000 + i, 20s).ok()) return 1;
      }
      return 0;
    }));
  }
  // Consume in an order that differs from production, deleting as we go.
  for (int i = 0; i < kObjectsEach; ++i) {
    for (int p = kProducers - 1; p >= 0; --p) {
      ASSERT_TRUE(CheckObject(*store, {p, i}, size_of(p, i), p * 1000 + i, 20s).ok())
          << p << "." << i;
      if (i % 3 != 0) {
        ASSERT_TRUE(store->Delete({p, i}).ok());
      }
    }
  }
  for (pid_t pid : producers) EXPECT_EQ(Join(pid), 0);
  for (int i = 0; i < kObjectsEach; i += 3) {
    for (int p = 0; p < kProducers; ++p) {
      ASSERT_TRUE(CheckObject(*store, {p, i}, size_of(p, i), p * 1000 + i).ok());
    }
  }
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");
}

TEST(ShmStoreTest, AForkedChildDestroyingItsCopyLeavesTheStoreOpen) {
  TempDir dir;
  auto store = NewStore(Options(1 << 20, dir.path()));
  ASSERT_TRUE(Put(*store, {1, 1}, 1000, 1).ok());
  const pid_t child = Spawn([&] {
    if (store->is_owner()) return 1;
    store.reset();  // unmaps only
    return 0;
  });
  EXPECT_EQ(Join(child), 0);
  EXPECT_TRUE(store->is_owner());
  EXPECT_TRUE(std::filesystem::exists(store->run_dir()));
  EXPECT_TRUE(CheckObject(*store, {1, 1}, 1000, 1).ok());
}

TEST(ShmStoreTest, AttachFromAnExecedProcess) {
  Watchdog watchdog(120);
  auto store = NewStore(Options(4 << 20));
  ASSERT_TRUE(Put(*store, {1, 1}, 300000, 11).ok());
  const int shared = dup(store->fd());  // without close-on-exec
  ASSERT_GE(shared, 0);
  const pid_t child = fork();
  if (child == 0) {
    setenv(kExecFdVariable, std::to_string(shared).c_str(), 1);
    execl("/proc/self/exe", "shm_store_test", "--gtest_filter=ShmStoreExecChild.*", nullptr);
    _exit(127);
  }
  close(shared);
  EXPECT_EQ(Join(child), 0);
  // The exec'd process read 1.1 and wrote 1.2.
  EXPECT_TRUE(CheckObject(*store, {1, 2}, 200000, 12).ok());
  EXPECT_EQ(store->stats().pinned_bytes, 0);
}

// Runs only inside the process AttachFromAnExecedProcess execs.
TEST(ShmStoreExecChild, AttachesAndUsesTheStore) {
  const char* fd_text = std::getenv(kExecFdVariable);
  if (fd_text == nullptr) return;
  auto store = ShmStore::Attach(std::atoi(fd_text));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_FALSE((*store)->is_owner());
  EXPECT_TRUE(CheckObject(**store, {1, 1}, 300000, 11).ok());
  EXPECT_TRUE(Put(**store, {1, 2}, 200000, 12).ok());
}

// ---------------------------------------------------------------- crashes

TEST(ShmStoreTest, AProcessKilledHoldingTheLockDoesNotDeadlock) {
  Watchdog watchdog(60);
  auto store = NewStore(Options(1 << 20));
  ASSERT_TRUE(Put(*store, {1, 1}, 100000, 1).ok());
  Pipe ready;
  const pid_t victim = Spawn([&] {
    if (!store->Get({1, 1}, 1s).ok()) return 1;         // a pin ...
    if (!store->Create({1, 2}, 100000).ok()) return 2;  // ... an unsealed object ...
    ShmStoreTestPeer::Lock(*store);                     // ... and the lock
    ready.Signal();
    pause();
    return 0;
  });
  ready.Wait();
  KillAndJoin(victim);

  // The next lock recovers: the dead process's pin and unsealed object go.
  EXPECT_TRUE(Put(*store, {1, 3}, 100000, 3).ok());
  const ShmStore::Stats stats = store->stats();
  EXPECT_EQ(stats.lock_recoveries, 1);
  EXPECT_EQ(stats.pinned_bytes, 0);
  EXPECT_EQ(stats.processes_reclaimed, 1);
  EXPECT_FALSE(store->Contains({1, 2}));
  EXPECT_TRUE(Put(*store, {1, 2}, 100000, 2).ok());  // the retried task
  for (int i = 1; i <= 3; ++i) EXPECT_TRUE(CheckObject(*store, {1, i}, 100000, i).ok());
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");
}

TEST(ShmStoreTest, StructuresHalfUpdatedByADeadProcessAreRebuilt) {
  Watchdog watchdog(60);
  TempDir dir;
  auto store = NewStore(Options(1 << 20, dir.path()));
  const int64_t size = 150 * kKiB;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Put(*store, {1, i}, size, i).ok());  // some spilled
  const ShmStore::Stats before = store->stats();
  ASSERT_GT(before.num_spilled, 0);
  const pid_t victim = Spawn([&] {
    ShmStoreTestPeer::Lock(*store);
    ShmStoreTestPeer::Scramble(*store);
    return 0;  // exits holding the lock
  });
  EXPECT_EQ(Join(victim), 0);
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");
  EXPECT_EQ(store->used(), before.used_bytes);
  EXPECT_EQ(store->stats().num_objects, 10);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(CheckObject(*store, {1, i}, size, i).ok()) << i;
  ASSERT_TRUE(Put(*store, {1, 10}, size, 10).ok());
  EXPECT_EQ(ShmStoreTestPeer::Validate(*store), "");
}

TEST(ShmStoreTest, AKilledWaiterDoesNotBlockLaterWakeUps) {
  Watchdog watchdog(60);
  auto store = NewStore(Options(1 << 20));
  // Several waiters killed in their wait, as with a crashed worker.
  for (int round = 0; round < 3; ++round) {
    const pid_t waiter = Spawn([&] { return store->Get({5, 5}, ShmStore::kForever).ok() ? 0 : 1; });
    // Dead waiters stay counted (harmlessly): wait for this one to register.
    while (ShmStoreTestPeer::ObjectWaiters(*store) <= round) std::this_thread::sleep_for(1ms);
    KillAndJoin(waiter);
  }
  EXPECT_EQ(ShmStoreTestPeer::ObjectWaiters(*store), 3);
  const pid_t reader = Spawn([&] {
    return CheckObject(*store, {5, 5}, 1000, 5, 20s).ok() ? 0 : 1;
  });
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(Put(*store, {5, 5}, 1000, 5).ok());
  EXPECT_EQ(Join(reader), 0);
}

TEST(ShmStoreTest, PinsOfAKilledReaderAreReclaimed) {
  Watchdog watchdog(60);
  auto store = NewStore(Options(1 << 20));
  ASSERT_TRUE(Put(*store, {1, 1}, 256 * kKiB, 1).ok());
  Pipe ready;
  const pid_t reader = Spawn([&] {
    if (!store->Get({1, 1}, 1s).ok()) return 1;
    ready.Signal();
    pause();
    return 0;
  });
  ready.Wait();
  KillAndJoin(reader);
  ASSERT_TRUE(store->Delete({1, 1}).ok());
  EXPECT_GT(store->used(), 0);  // deferred: the dead reader's pin is still counted
  ASSERT_TRUE(store->ReclaimProcess(reader).ok());
  EXPECT_EQ(store->used(), 0);
  EXPECT_EQ(store->stats().processes_reclaimed, 1);
  EXPECT_EQ(store->ReclaimProcess(getpid()).code(), StatusCode::kInvalidArgument);
}

TEST(ShmStoreTest, AWaitingCreateReclaimsPinsOfDeadProcesses) {
  Watchdog watchdog(60);
  auto store = NewStore(Options(1 << 20));
  std::vector<ObjectId> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back({1, i});
    ASSERT_TRUE(Put(*store, ids.back(), 256 * kKiB, i).ok());
  }
  Pipe ready;
  const pid_t reader = Spawn([&] {
    if (!store->Get(ids, 1s).ok()) return 1;
    ready.Signal();
    pause();
    return 0;
  });
  ready.Wait();
  KillAndJoin(reader);
  ASSERT_TRUE(store->Delete(ids[0]).ok());  // deferred behind the dead pin
  // Create finds no room, waits, and within a second notices the dead reader.
  auto bytes = store->Create({1, 9}, 256 * kKiB, 10s);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(store->stats().processes_reclaimed, 1);
}

TEST(ShmStoreTest, NothingIsLeftBehindAfterANormalExit) {
  TempDir dir;
  const auto shm_before = DevShmNames();
  std::string run_dir;
  {
    auto store = NewStore(Options(512 * kKiB, dir.path()));
    run_dir = store->run_dir();
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(Put(*store, {1, i}, 200 * kKiB, i).ok());
    ASSERT_GT(store->stats().num_spill_files, 0);
    ASSERT_TRUE(std::filesystem::exists(run_dir));
  }
  EXPECT_FALSE(std::filesystem::exists(run_dir));
  EXPECT_EQ(ListDir(dir.path()), std::vector<std::string>{});
  EXPECT_EQ(DevShmNames(), shm_before);
}

TEST(ShmStoreTest, ANewRunReclaimsWhatAKilledRunLeft) {
  Watchdog watchdog(60);
  TempDir dir;
  const auto shm_before = DevShmNames();
  Pipe ready;
  const pid_t run = Spawn([&] {
    auto store = ShmStore::Create(Options(512 * kKiB, dir.path()));
    if (!store.ok()) return 1;
    for (int i = 0; i < 6; ++i) {
      if (!Put(**store, {1, i}, 200 * kKiB, i).ok()) return 2;
    }
    ready.Signal();
    pause();
    return 0;
  });
  ready.Wait();
  const std::string left = fmt::format("strata-shm-{}-", run);
  std::vector<std::string> names = ListDir(dir.path());
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front().rfind(left, 0), 0u) << names.front();
  EXPECT_GT(names.size(), 2u);  // the run directory, its owner marker, spill files
  KillAndJoin(run);
  EXPECT_EQ(ListDir(dir.path()), names);  // a killed process cleans nothing

  {
    auto store = NewStore(Options(512 * kKiB, dir.path()));
    names = ListDir(dir.path());
    ASSERT_EQ(names.size(), 2u);  // only the new run: its directory and marker
    EXPECT_EQ(names[0].rfind(fmt::format("strata-shm-{}-", getpid()), 0), 0u) << names[0];
  }
  EXPECT_EQ(ListDir(dir.path()), std::vector<std::string>{});
  EXPECT_EQ(DevShmNames(), shm_before);
}

TEST(ShmStoreTest, ReclaimAbandonedRunsKeepsLiveOnes) {
  TempDir dir;
  const pid_t gone = Spawn([] { return 0; });
  EXPECT_EQ(Join(gone), 0);
  const std::string live = fmt::format("{}/strata-shm-{}-99", dir.path(), getpid());
  const std::string dead = fmt::format("{}/strata-shm-{}-0", dir.path(), gone);
  const std::string other = dir.path() + "/unrelated";
  for (const auto& d : {live, dead, other}) std::filesystem::create_directories(d + "/x");
  auto removed = ShmStore::ReclaimAbandonedRuns(dir.path());
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 1);
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(other));
}

}  // namespace
}  // namespace strata
