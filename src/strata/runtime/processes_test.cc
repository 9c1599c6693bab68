// The processes executor against the threads executor: identical output bytes
// for intermediates through every tier and for engine computations, the
// memory contract, worker crashes (kill -9 mid-run), and nothing left behind
// in /dev/shm or work_dir. The rechunk and engine suites themselves
// (rechunk_test.cc, engine_test.cc) run on both executors too.
//
// A binary of its own (see CMakeLists.txt): the executor forks, which must
// happen with no threads of other tests around.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "strata/api/api_test_util.h"
#include "strata/base/check.h"
#include "strata/base/temp_dir.h"
#include "strata/base/tuning.h"
#include "strata/core/synthetic.h"
#include "strata/runtime/intermediate_store.h"
#include "strata/runtime/shm_store.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::RecordingCallback;

// The names in /dev/shm, but for Open MPI's segments: the mpi suites that
// ctest runs beside this one make and remove them (strata's own regions are
// memfds or unnamed O_TMPFILE files, so a leak of ours would be any other name).
std::set<std::string> DevShm() {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    std::string name = e.path().filename().string();
    if (name.starts_with("vader_segment.") || name.starts_with("sm_segment.")) continue;
    names.insert(std::move(name));
  }
  return names;
}

// Nothing under `work_dir` (it may not exist at all).
void ExpectEmptyWorkDir(const std::string& work_dir) {
  std::error_code ec;
  if (!std::filesystem::exists(work_dir, ec)) return;
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::recursive_directory_iterator(work_dir)) {
    left.push_back(e.path().string());
  }
  EXPECT_TRUE(left.empty()) << "left behind: " << fmt::format("{}", fmt::join(left, ", "));
}

Spec MakeSpec(ExecutorKind executor, TierChoice tier, const std::string& work_dir) {
  Spec spec;
  spec.allowed_mem = "16MB";
  spec.reserved_mem = "1MB";
  spec.workers = 2;
  spec.executor = executor;
  spec.tier = tier;
  spec.work_dir = work_dir;
  return spec;
}

struct TierCase {
  TierChoice tier;
  const char* name;
};

class ProcessesTierTest : public ::testing::TestWithParam<TierCase> {};

// A computed array rechunked (its blocks are an intermediate in the tier)
// and reduced, returned by compute(): the same bytes on both executors. With
// the spill tier half of the intermediate goes to disk.
TEST_P(ProcessesTierTest, IntermediatesThroughTierMatchThreads) {
  TempDir dir;
  const std::set<std::string> shm_before = DevShm();
  NDArray results[2][2];
  int64_t written[2] = {0, 0};
  for (int e = 0; e < 2; ++e) {
    const ExecutorKind kind = e == 0 ? ExecutorKind::kThreads : ExecutorKind::kProcesses;
    Spec spec = MakeSpec(kind, GetParam().tier, dir.path() + "/work");
    Array a = random::random({600, 500}, {600, 25}, 7, spec);  // 2.4 MB ... 120 KB blocks
    Array b = rechunk(a * 2.0, {25, 500});
    auto rec = std::make_shared<RecordingCallback>();
    ComputeOptions options;
    options.callbacks.push_back(rec);
    Result<std::vector<NDArray>> r = compute({b + 1.0, sum(b, {1})}, options);
    ASSERT_TRUE(r.ok()) << ExecutorName(kind) << ": " << r.status().ToString();
    rec->ExpectWithinBudget();
    written[e] = rec->summary.intermediate_bytes_written;
    results[e][0] = std::move((*r)[0]);
    results[e][1] = std::move((*r)[1]);
    ExpectEmptyWorkDir(spec.work_dir);
  }
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(results[0][i].nbytes(), results[1][i].nbytes());
    EXPECT_EQ(0, std::memcmp(results[0][i].data(), results[1][i].data(), results[0][i].nbytes()))
        << "result " << i;
  }
  switch (GetParam().tier) {
    case TierChoice::kMemory:
      // Under STRATA_TINY the memory tier has 64 KiB of RAM and spills.
      if (!GetTuning().tiny) {
        EXPECT_EQ(written[1], 0);
      }
      break;
    case TierChoice::kDisk:
      EXPECT_EQ(written[1], written[0]);
      break;
    case TierChoice::kSpill:
      EXPECT_GT(written[1], 0);
      break;
    default:
      break;
  }
  EXPECT_EQ(DevShm(), shm_before);
}

INSTANTIATE_TEST_SUITE_P(Tiers, ProcessesTierTest,
                         ::testing::Values(TierCase{TierChoice::kMemory, "memory"},
                                           TierCase{TierChoice::kSpill, "spill"},
                                           TierCase{TierChoice::kDisk, "disk"}),
                         [](const auto& info) { return std::string(info.param.name); });

// Elementwise + reductions, matmul and groupby: the same bytes as threads.
TEST(ProcessesTest, EngineComputationsMatchThreads) {
  TempDir dir;
  std::vector<NDArray> got[2];
  for (int e = 0; e < 2; ++e) {
    const ExecutorKind kind = e == 0 ? ExecutorKind::kThreads : ExecutorKind::kProcesses;
    Spec spec = MakeSpec(kind, TierChoice::kAuto, dir.path() + "/work");
    Array a = random::random({40, 30}, {7, 11}, 9, spec);
    Array b = random::random({40, 30}, {13, 5}, 10, spec);
    Array m = random::random({30, 20}, {8, 6}, 11, spec);
    std::vector<int64_t> labels;
    for (int i = 0; i < 40; ++i) labels.push_back((i * 7) % 5);
    auto rec = std::make_shared<RecordingCallback>();
    ComputeOptions options;
    options.callbacks.push_back(rec);
    Result<std::vector<NDArray>> r =
        compute({sum(exp(a) * b - a, {0}), mean(a * b + a, {1}), max(a - b), matmul(a, m),
                 groupby_reduce(a, labels, 0, ReduceOp::kMean, 5)},
                options);
    ASSERT_TRUE(r.ok()) << ExecutorName(kind) << ": " << r.status().ToString();
    rec->ExpectWithinBudget();
    got[e] = std::move(r).value();
    ExpectEmptyWorkDir(spec.work_dir);
  }
  ASSERT_EQ(got[0].size(), got[1].size());
  for (size_t i = 0; i < got[0].size(); ++i) {
    ASSERT_EQ(got[0][i].shape(), got[1][i].shape()) << i;
    EXPECT_EQ(0, std::memcmp(got[0][i].data(), got[1][i].data(), got[0][i].nbytes())) << i;
  }
}

// kill -9 of a worker in the middle of a run costs a retry, not the run.
TEST(ProcessesTest, KilledWorkerCostsARetryNotTheRun) {
  TempDir dir;
  const std::set<std::string> shm_before = DevShm();
  Spec threads_spec = MakeSpec(ExecutorKind::kThreads, TierChoice::kMemory, dir.path() + "/work");
  Array ta = random::random({200, 100}, {200, 10}, 3, threads_spec);
  Result<NDArray> want = compute(rechunk(ta * 3.0, {10, 100}) - 1.0);
  ASSERT_TRUE(want.ok()) << want.status().ToString();

  Spec spec = MakeSpec(ExecutorKind::kProcesses, TierChoice::kMemory, dir.path() + "/work");
  Array a = random::random({200, 100}, {200, 10}, 3, spec);
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  // Runs in the worker: the first attempt of block 3 of the rechunked array
  // kills its worker (mid-run: the multiply's blocks are in shared memory,
  // and the task holds pins on some of them).
  options.fault_injector = [](const PlannedOp& op, std::span<const Index> block, int attempt) {
    if (attempt == 1 && block.size() == 2 && op.depth > 0 && block[0] == 3) {
      ::raise(SIGKILL);
    }
    return Status::Ok();
  };
  Result<NDArray> got = compute(rechunk(a * 3.0, {10, 100}) - 1.0, options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->nbytes(), want->nbytes());
  EXPECT_EQ(0, std::memcmp(got->data(), want->data(), want->nbytes()));
  rec->ExpectWithinBudget();
  int retried = 0;
  for (const TaskEndEvent& e : rec->events) {
    if (e.attempts > 1) ++retried;
    EXPECT_GT(e.worker_rss, 0);
  }
  EXPECT_GE(retried, 1);
  ExpectEmptyWorkDir(spec.work_dir);
  EXPECT_EQ(DevShm(), shm_before);
}

TEST(ProcessesTest, AllWorkersDeadFailsClearly) {
  TempDir dir;
  Spec spec = MakeSpec(ExecutorKind::kProcesses, TierChoice::kMemory, dir.path() + "/work");
  spec.retries = 5;
  Array a = random::random({20, 20}, {20, 5}, 3, spec);
  ComputeOptions options;
  options.fault_injector = [](const PlannedOp& op, std::span<const Index> block, int) {
    if (op.depth > 0 && block[0] == 1) ::raise(SIGKILL);
    return Status::Ok();
  };
  Result<NDArray> r = compute(rechunk(a * 2.0, {5, 20}), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("all 2 worker processes died"), std::string_view::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("killed by signal 9"), std::string_view::npos)
      << r.status().ToString();
  ExpectEmptyWorkDir(spec.work_dir);
}

// Errors raised in a worker come back with their code and the task named;
// transient ones are retried.
TEST(ProcessesTest, WorkerErrorsKeepTheirCodeAndAreRetried) {
  TempDir dir;
  Spec spec = MakeSpec(ExecutorKind::kProcesses, TierChoice::kAuto, dir.path() + "/work");
  Array a = random::random({40, 10}, {5, 10}, 2, spec);
  ComputeOptions options;
  options.fault_injector = [](const PlannedOp& op, std::span<const Index> block, int attempt) {
    if (op.node->kind == NodeKind::kStore && block[0] == 5) return DataLossError("injected");
    if (op.node->kind == NodeKind::kStore && block[0] == 2 && attempt == 1) {
      return UnavailableError("flaky disk");
    }
    return Status::Ok();
  };
  Result<NDArray> r = compute(to_zarr(a, dir.path() + "/out.zarr"), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("task 5.0 of to_zarr"), std::string_view::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("injected"), std::string_view::npos);

  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions flaky;
  flaky.callbacks.push_back(rec);
  flaky.fault_injector = [](const PlannedOp&, std::span<const Index> block, int attempt) {
    if (attempt == 1 && block[0] == 1) return UnavailableError("flaky disk");
    return Status::Ok();
  };
  Result<NDArray> ok = compute(a + 1, flaky);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  bool retried = false;
  for (const TaskEndEvent& e : rec->events) retried |= e.attempts == 2;
  EXPECT_TRUE(retried);
}

// Child processes of this one (worker processes the executor left).
int ChildProcesses() {
  int n = 0;
  const std::string self = std::to_string(::getpid());
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state, ppid;
    rest >> state >> ppid;
    if (ppid == self) ++n;
  }
  return n;
}

// The rechunk most reliability tests run: a 20-task producer whose blocks
// (in the memory tier, shared memory) every target task reads.
Array StragglerCase(const Spec& spec) {
  return rechunk(random::random({400, 40}, {20, 40}, 7, spec) * 2.0, {400, 2});
}

NDArray ThreadsReference(const std::string& work_dir) {
  Spec spec = MakeSpec(ExecutorKind::kThreads, TierChoice::kMemory, work_dir);
  Result<NDArray> want = compute(StragglerCase(spec));
  EXPECT_TRUE(want.ok()) << want.status().ToString();
  return want.ok() ? std::move(want).value() : NDArray();
}

// A worker stuck for good in a task (an infinite sleep: alive, so its
// heartbeat goes on) is overtaken by the task's backup on the other worker;
// the compute ends without waiting for it, and the stuck worker is killed
// and reaped at the end. Nothing is left in /dev/shm, work_dir or the
// process table.
TEST(ProcessesTest, BackupOvertakesAWorkerStuckForGood) {
  TempDir dir;
  const std::set<std::string> shm_before = DevShm();
  const NDArray want = ThreadsReference(dir.path() + "/work");
  Spec spec = MakeSpec(ExecutorKind::kProcesses, TierChoice::kMemory, dir.path() + "/work");
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  options.fault_injector = [](const PlannedOp& op, std::span<const Index> block, int attempt) {
    if (attempt == 1 && op.depth == 0 && block[0] == 13) {
      while (true) ::pause();  // in the worker process
    }
    return Status::Ok();
  };
  Result<NDArray> got = compute(StragglerCase(spec), options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->nbytes(), want.nbytes());
  EXPECT_EQ(0, std::memcmp(got->data(), want.data(), want.nbytes()));
  rec->ExpectWithinBudget();
  EXPECT_GE(rec->summary.backups_won, 1);
  EXPECT_EQ(rec->summary.hung_workers_killed, 0) << "a live worker is not hung";
  int producers = 0;
  for (size_t i = 0; i < rec->events.size(); ++i) {
    const TaskEndEvent& e = rec->events[i];
    if (rec->depths[i] != 0) continue;
    ++producers;
    if (e.block[0] == 13) {
      EXPECT_TRUE(e.backup);
    }
  }
  EXPECT_EQ(producers, 20);
  EXPECT_EQ(ChildProcesses(), 0);
  ExpectEmptyWorkDir(spec.work_dir);
  EXPECT_EQ(DevShm(), shm_before);
}

// A worker that stops (SIGSTOP: its heartbeat thread stops too) is killed
// after heartbeat_timeout and its task retried on the other worker.
TEST(ProcessesTest, HungWorkerIsKilledAndItsTaskRetried) {
  TempDir dir;
  const std::set<std::string> shm_before = DevShm();
  const NDArray want = ThreadsReference(dir.path() + "/work");
  Spec spec = MakeSpec(ExecutorKind::kProcesses, TierChoice::kMemory, dir.path() + "/work");
  spec.backup_tasks = false;  // the hung worker alone must end it
  spec.heartbeat_timeout = 2.0;  // beats every 0.2 s: room for a loaded machine
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  options.fault_injector = [](const PlannedOp& op, std::span<const Index> block, int attempt) {
    if (attempt == 1 && op.depth > 0 && block[1] == 3) ::raise(SIGSTOP);
    return Status::Ok();
  };
  Result<NDArray> got = compute(StragglerCase(spec), options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->nbytes(), want.nbytes());
  EXPECT_EQ(0, std::memcmp(got->data(), want.data(), want.nbytes()));
  rec->ExpectWithinBudget();
  EXPECT_EQ(rec->summary.hung_workers_killed, 1);
  bool retried = false;
  for (size_t i = 0; i < rec->events.size(); ++i) {
    const TaskEndEvent& e = rec->events[i];
    if (rec->depths[i] > 0 && e.block[1] == 3) retried = e.attempts == 2;
  }
  EXPECT_TRUE(retried);
  EXPECT_EQ(ChildProcesses(), 0);
  ExpectEmptyWorkDir(spec.work_dir);
  EXPECT_EQ(DevShm(), shm_before);
}

// A task that runs for several heartbeat timeouts is not a hung worker.
TEST(ProcessesTest, LongTaskIsNotMistakenForAHungWorker) {
  TempDir dir;
  Spec spec = MakeSpec(ExecutorKind::kProcesses, TierChoice::kMemory, dir.path() + "/work");
  spec.backup_tasks = false;
  spec.heartbeat_timeout = 1.0;
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  options.fault_injector = [](const PlannedOp& op, std::span<const Index> block, int attempt) {
    if (attempt == 1 && op.depth > 0 && block[1] == 3) {
      std::this_thread::sleep_for(std::chrono::seconds(3));
    }
    return Status::Ok();
  };
  Result<NDArray> got = compute(StragglerCase(spec), options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(rec->summary.hung_workers_killed, 0);
  for (const TaskEndEvent& e : rec->events) EXPECT_EQ(e.attempts, 1);
}

// Every worker stops: each is killed in turn and the compute fails with an
// error that says so, instead of hanging.
TEST(ProcessesTest, AllWorkersHungFailsInsteadOfHanging) {
  TempDir dir;
  const std::set<std::string> shm_before = DevShm();
  Spec spec = MakeSpec(ExecutorKind::kProcesses, TierChoice::kMemory, dir.path() + "/work");
  spec.backup_tasks = false;
  spec.heartbeat_timeout = 1.0;
  spec.retries = 5;
  ComputeOptions options;
  options.fault_injector = [](const PlannedOp& op, std::span<const Index>, int) {
    if (op.depth > 0) ::raise(SIGSTOP);
    return Status::Ok();
  };
  Result<NDArray> r = compute(StragglerCase(spec), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("all 2 worker processes died"), std::string_view::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("sent no heartbeat"), std::string_view::npos)
      << r.status().ToString();
  EXPECT_EQ(ChildProcesses(), 0);
  ExpectEmptyWorkDir(spec.work_dir);
  EXPECT_EQ(DevShm(), shm_before);
}

// The memory tier of the processes executor on its own, over a store of
// 1 MiB: room for one of the two 1 MiB float64 blocks of a 512x512 array.
class ShmIntermediateStoreTest : public testing::Test {
 protected:
  static std::unique_ptr<ShmStore> NewStore() {
    ShmStoreOptions options;
    options.capacity = int64_t{1} << 20;
    Result<std::unique_ptr<ShmStore>> shm = ShmStore::Create(options);
    STRATA_CHECK(shm.ok()) << shm.status().ToString();
    return *std::move(shm);
  }

  TempDir dir;
  std::unique_ptr<ShmStore> shm = NewStore();
  ShmIntermediateStore tier{"array-001", 1, *ChunkGrid::Regular({512, 512}, {256, 512}),
                            DTypeId::kFloat64, shm.get(), dir.path() + "/fallback"};
  std::shared_ptr<MemoryPool> pool = MemoryPool::Default()->NewChild({"test", 0});
};

// Zero-copy views of shared memory, a file when the store has no room, and
// erase of both.
TEST_F(ShmIntermediateStoreTest, ViewsFallbackAndErase) {
  std::vector<NDArray> blocks;
  for (Index b = 0; b < 2; ++b) {
    NDArray a = *NDArray::Allocate(*pool, DTypeId::kFloat64, {256, 512});
    FillSynthetic(a.view(), Box({b * 256, 0}, {256, 512}), Shape{512, 512}, 4);
    blocks.push_back(*NDArray::CopyOf(*pool, a.view()));
    ASSERT_TRUE(tier.Put(std::vector<Index>{b, 0}, std::move(a), *pool).ok());
  }
  // 1 MiB of shared memory holds one block and no spill directory is set:
  // the other went to a file. Every byte comes back, without a copy into the
  // pool for the block in shared memory.
  EXPECT_GT(tier.bytes_written(), 0);
  const int64_t before = pool->bytes_in_use();
  for (Index b = 0; b < 2; ++b) {
    Result<BlockView> v = tier.View(std::vector<Index>{b, 0}, *pool);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_TRUE(ArraysEqual(v->view, blocks[b].view()));
    NDArray part = *NDArray::Allocate(*pool, DTypeId::kFloat64, {10, 20});
    ASSERT_TRUE(tier.GetRegion(std::vector<Index>{b, 0}, Box({5, 7}, {10, 20}), part.view(), *pool).ok());
    EXPECT_TRUE(ArraysEqual(part.view(), blocks[b].view().Slice(Box({5, 7}, {10, 20}))));
  }
  EXPECT_EQ(pool->bytes_in_use(), before);
  EXPECT_GT(tier.resident_bytes(), 0);
  for (Index b = 0; b < 2; ++b) ASSERT_TRUE(tier.Erase(std::vector<Index>{b, 0}).ok());
  EXPECT_EQ(tier.resident_bytes(), 0);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() + "/fallback"));
  ASSERT_TRUE(tier.Cleanup().ok());
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/fallback"));
}

// NewBlock hands out the shared-memory object itself: the task writes the
// block in place and Put seals it without a copy or a charge to the task's
// pool; dropped without a Put, the object is aborted; with no room left, the
// block comes from the pool and Put stores it in a file. Regions read back
// through the store's descriptor into strided destinations.
TEST_F(ShmIntermediateStoreTest, NewBlockIsWrittenInPlaceAndSealedByPut) {
  const std::vector<Index> b0{0, 0}, b1{1, 0};
  auto expected = [&](Index b) {
    NDArray a = *NDArray::Allocate(*pool, DTypeId::kFloat64, {256, 512});
    FillSynthetic(a.view(), Box({b * 256, 0}, {256, 512}), Shape{512, 512}, 9);
    return a;
  };
  {
    // Dropped without a Put (a task that failed): aborted, room given back.
    Result<NDArray> dropped = tier.NewBlock(b0, DTypeId::kFloat64, {256, 512}, *pool);
    ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
    EXPECT_EQ(shm->stats().unsealed_bytes, int64_t{1} << 20);
  }
  EXPECT_EQ(shm->stats().unsealed_bytes, 0);
  EXPECT_EQ(shm->used(), 0);

  const int64_t before = pool->bytes_in_use();
  Result<NDArray> a = tier.NewBlock(b0, DTypeId::kFloat64, {256, 512}, *pool);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(pool->bytes_in_use(), before);  // the bytes are the store's
  FillSynthetic(a->view(), Box({0, 0}, {256, 512}), Shape{512, 512}, 9);
  const std::byte* written_at = a->data();
  ASSERT_TRUE(tier.Put(b0, *std::move(a), *pool).ok());
  Result<BlockView> v = tier.View(b0, *pool);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->view.data(), written_at);  // sealed where it was written: no copy
  EXPECT_TRUE(ArraysEqual(v->view, expected(0).view()));
  EXPECT_EQ(shm->stats().unsealed_bytes, 0);

  // The store is full: the second block comes from the pool and goes to a file.
  Result<NDArray> c = tier.NewBlock(b1, DTypeId::kFloat64, {256, 512}, *pool);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(pool->bytes_in_use(), before + (int64_t{1} << 20));
  FillSynthetic(c->view(), Box({256, 0}, {256, 512}), Shape{512, 512}, 9);
  ASSERT_TRUE(tier.Put(b1, *std::move(c), *pool).ok());
  EXPECT_EQ(tier.bytes_written(), int64_t{1} << 20);

  // Regions of both into the middle of a wider array.
  for (Index b = 0; b < 2; ++b) {
    NDArray got = *NDArray::Zeros(*pool, DTypeId::kFloat64, {40, 100});
    NDArray want = *NDArray::Zeros(*pool, DTypeId::kFloat64, {40, 100});
    const Box region({100, 3}, {30, 70}), place({5, 20}, {30, 70});
    ASSERT_TRUE(tier.GetRegion(std::vector<Index>{b, 0}, region, got.view().Slice(place), *pool).ok());
    CopyArray(expected(b).view().Slice(region), want.view().Slice(place));
    EXPECT_TRUE(ArraysEqual(got.view(), want.view())) << "block " << b;
  }
  *v = BlockView();
  for (Index b = 0; b < 2; ++b) ASSERT_TRUE(tier.Erase(std::vector<Index>{b, 0}).ok());
  EXPECT_EQ(tier.resident_bytes(), 0);
  ASSERT_TRUE(tier.Cleanup().ok());
}

}  // namespace
}  // namespace strata
