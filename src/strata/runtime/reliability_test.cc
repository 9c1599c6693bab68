// Straggler backups on the threads executor, end to end: a task held back
// by a fault injector is overtaken by its backup on the other worker, the
// tasks that read its block go on without waiting for it, and the result,
// the bytes written and the memory counted are those of a run without a
// straggler, on every tier and for a Zarr destination. (The Scheduler's
// policy is tested step by step in runtime/scheduler_test.cc; the processes
// and mpi executors in processes_test.cc and mpi_test.cc.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <thread>

#include "strata/api/api_test_util.h"
#include "strata/base/temp_dir.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::RecordingCallback;

// The first attempt of block {13, 0} of the op at `depth` is a straggler:
// it waits until every op of the compute has ended, which only its backup
// can bring about (every later task reads its block), or 60 s. Nothing here
// depends on timing: without a backup the compute cannot end before the
// 60 s, and `released` says which way the straggler woke.
struct StragglerGate : Callback {
  std::mutex mu;
  std::condition_variable cv;
  int64_t ops_left = 0;   // guarded by mu
  bool released = false;  // guarded by mu: every op ended while it waited
  void OnComputeStart(const Plan& plan) override {
    std::lock_guard lock(mu);
    ops_left = 0;
    for (const PlannedOp& op : plan.ops()) ops_left += op.num_tasks() > 0 ? 1 : 0;
  }
  void OnOpEnd(const PlannedOp&) override {
    std::lock_guard lock(mu);
    if (--ops_left == 0) {
      released = true;
      cv.notify_all();
    }
  }
  void Wait() {
    std::unique_lock lock(mu);
    cv.wait_for(lock, std::chrono::seconds(60), [&] { return released; });
  }
  bool WasReleased() {
    std::lock_guard lock(mu);
    return released;
  }
};

ComputeOptions WithStraggler(int depth, std::shared_ptr<StragglerGate> gate,
                             std::shared_ptr<RecordingCallback> rec) {
  ComputeOptions options;
  options.callbacks.push_back(std::move(rec));
  options.callbacks.push_back(gate);
  options.fault_injector = [depth, gate](const PlannedOp& op, std::span<const Index> block,
                                         int attempt) {
    if (attempt == 1 && op.depth == depth && block.size() == 2 && block[0] == 13) gate->Wait();
    return Status::Ok();
  };
  return options;
}

Spec ThreadsSpec(TierChoice tier, const std::string& work_dir) {
  Spec spec = testing_util::SmallSpec(ExecutorKind::kThreads, 2);
  spec.tier = tier;
  spec.work_dir = work_dir;
  return spec;
}

bool EmptyOrAbsent(const std::string& dir) {
  std::error_code ec;
  return !std::filesystem::exists(dir, ec) || std::filesystem::is_empty(dir, ec);
}

struct TierCase {
  TierChoice tier;
  const char* name;
};

class StragglerTierTest : public ::testing::TestWithParam<TierCase> {};

// The producer of a rechunk's intermediate (20 tasks, all read by every
// target task) has one straggler. Its backup wins; every target task ends
// before the straggler wakes; the straggler publishes nothing; the
// intermediate is written (disk) or held (memory) once.
TEST_P(StragglerTierTest, BackupOvertakesTheStraggler) {
  TempDir dir;
  const std::string work = dir.path() + "/work";
  Spec spec = ThreadsSpec(GetParam().tier, work);
  Array a = random::random({400, 40}, {20, 40}, 7, spec);
  Array b = rechunk(a * 2.0, {400, 2});
  // The reference: no straggler (on a busy machine a task of a few
  // milliseconds may still get a backup now and then).
  auto ref = std::make_shared<RecordingCallback>();
  ComputeOptions plain;
  plain.callbacks.push_back(ref);
  Result<NDArray> want = compute(b, plain);
  ASSERT_TRUE(want.ok()) << want.status().ToString();

  auto rec = std::make_shared<RecordingCallback>();
  auto gate = std::make_shared<StragglerGate>();
  Result<NDArray> got = compute(b, WithStraggler(0, gate, rec));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->nbytes(), want->nbytes());
  EXPECT_EQ(0, std::memcmp(got->data(), want->data(), want->nbytes()));
  rec->ExpectWithinBudget();
  EXPECT_GE(rec->summary.backup_attempts, 1);
  EXPECT_GE(rec->summary.backups_won, 1);
  // Every op (each target task reads block 13) ended while the straggler
  // still waited.
  EXPECT_TRUE(gate->WasReleased());
  bool straggler_seen = false;
  int64_t producers = 0;
  for (size_t i = 0; i < rec->events.size(); ++i) {
    const TaskEndEvent& e = rec->events[i];
    if (rec->depths[i] == 0) {
      ++producers;
      if (e.block[0] == 13) {
        straggler_seen = true;
        EXPECT_TRUE(e.backup) << "block 13 was completed by its backup";
      }
    }
  }
  EXPECT_TRUE(straggler_seen);
  EXPECT_EQ(producers, 20) << "each task reported once";
  // Nothing counted twice: the bytes the tier wrote are the reference's,
  // and no more than one copy of the intermediate was ever held.
  EXPECT_EQ(rec->summary.intermediate_bytes_written, ref->summary.intermediate_bytes_written);
  EXPECT_LE(rec->summary.peak_resident_intermediate_bytes, int64_t{400} * 40 * 8);
  EXPECT_EQ(rec->summary.tasks, ref->summary.tasks);
  EXPECT_TRUE(EmptyOrAbsent(work));
}

INSTANTIATE_TEST_SUITE_P(Tiers, StragglerTierTest,
                         ::testing::Values(TierCase{TierChoice::kMemory, "memory"},
                                           TierCase{TierChoice::kSpill, "spill"},
                                           TierCase{TierChoice::kDisk, "disk"}),
                         [](const auto& info) { return std::string(info.param.name); });

// A straggler writing a Zarr chunk: the backup writes it, the straggler
// writes nothing, and the destination holds exactly its chunks (no
// temporary names), equal to the source.
TEST(StragglerTest, ZarrChunkIsWrittenByTheBackupAlone) {
  TempDir dir;
  Spec spec = ThreadsSpec(TierChoice::kAuto, dir.path() + "/work");
  Array a = random::random({400, 40}, {20, 40}, 3, spec);
  const std::string out = dir.path() + "/out.zarr";
  auto rec = std::make_shared<RecordingCallback>();
  auto gate = std::make_shared<StragglerGate>();
  ASSERT_TRUE(compute(to_zarr(a, out), WithStraggler(0, gate, rec)).ok());
  EXPECT_TRUE(gate->WasReleased());
  EXPECT_GE(rec->summary.backups_won, 1);
  int chunks = 0;
  for (const auto& e : std::filesystem::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find("strata-tmp"), std::string::npos) << name;
    if (name[0] != '.') ++chunks;
  }
  EXPECT_EQ(chunks, 20);
  Result<NDArray> back = compute(from_zarr(out, spec));
  Result<NDArray> want = compute(a);
  ASSERT_TRUE(back.ok() && want.ok());
  EXPECT_EQ(0, std::memcmp(back->data(), want->data(), want->nbytes()));
}

TEST(StragglerTest, NoBackupsWhenTurnedOff) {
  TempDir dir;
  Spec spec = ThreadsSpec(TierChoice::kMemory, dir.path() + "/work");
  spec.backup_tasks = false;
  auto rec = std::make_shared<RecordingCallback>();
  Array b = rechunk(random::random({400, 40}, {20, 40}, 7, spec) * 2.0, {400, 2});
  ComputeOptions options;
  options.callbacks.push_back(rec);
  options.fault_injector = [](const PlannedOp& op, std::span<const Index> block, int attempt) {
    // Slow enough to be a straggler many times over (tasks take ms).
    if (attempt == 1 && op.depth == 0 && block[0] == 13) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return Status::Ok();
  };
  ASSERT_TRUE(compute(b, options).ok());
  EXPECT_EQ(rec->summary.backup_attempts, 0);
  for (const TaskEndEvent& e : rec->events) EXPECT_FALSE(e.backup);
}

TEST(StragglerTest, SettingsAreChecked) {
  Spec spec;
  spec.backup_slowdown = 1.0;
  Result<ResolvedSpec> r = ResolveSpec(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("backup_slowdown"), std::string_view::npos);
  spec = Spec();
  spec.heartbeat_timeout = 0;
  r = ResolveSpec(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("heartbeat_timeout"), std::string_view::npos);
  spec.heartbeat_timeout = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(ResolveSpec(spec).ok());
}

}  // namespace
}  // namespace strata
