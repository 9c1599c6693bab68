// The dask and ray executors' two halves (runtime/external_run.h) without
// Dask or Ray: an in-process "external scheduler" runs every task through a
// TaskHost built from a second plan of the same arrays (as a worker does),
// hands each task the memory-tier blocks it reads, and reports back through
// TaskDone. The results are the threads executor's bytes, stores are
// committed, disk blocks are erased and the run directory removed; failures
// name the task. (tests/python/test_dask.py and test_ray.py run the same
// halves on a real LocalCluster and a real Ray instance.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "strata/api/api_test_util.h"
#include "strata/base/temp_dir.h"
#include "strata/runtime/external_run.h"
#include "strata/strata.h"

namespace strata {
namespace {

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

// Runs `run`'s tasks in order on a TaskHost of `plan` (the same arrays,
// planned again). `fail` (op, block): that task reports `failure` instead.
Status RunInProcess(ExternalRun& run, std::shared_ptr<const Plan> plan, int* tasks_run,
                    std::optional<TaskId> fail = {},
                    Status failure = UnavailableError("lost the worker")) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<TaskHost> host,
                          TaskHost::Open(std::move(plan), run.run_dir(), run.object_prefix()));
  std::map<std::pair<int, Index>, std::shared_ptr<const NDArray>> held;  // Dask's results
  for (const ExternalTask& t : run.tasks()) {
    if (fail && fail->op == t.id.op && fail->block == t.id.block) {
      return run.TaskFailed(t.id, failure, 3);
    }
    std::vector<TaskHost::Input> inputs;
    for (const TaskId& in : t.inputs) {
      auto it = held.find({in.op, in.block});
      if (it != held.end()) inputs.push_back({in, it->second});
    }
    TaskFigures figures;
    STRATA_ASSIGN_OR_RETURN(std::optional<NDArray> block,
                            host->Run(t.id, 1, inputs, &figures));
    EXPECT_EQ(block.has_value(), t.returns_block);
    const bool returned = block.has_value();
    ConstArrayView view;
    if (returned) {
      auto shared = std::make_shared<const NDArray>(std::move(*block));
      view = shared->view();
      held[{t.id.op, t.id.block}] = shared;
    }
    STRATA_RETURN_IF_ERROR(run.TaskDone(t.id, 1, 0, figures, returned ? &view : nullptr));
    ++*tasks_run;
  }
  return Status::Ok();
}

Result<std::vector<NDArray>> ComputeExternally(const std::vector<Array>& arrays,
                                               testing_util::RecordingCallback* rec,
                                               int* tasks_run, std::optional<TaskId> fail = {}) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const Plan> again, plan(arrays));
  ComputeOptions options;
  options.callbacks.push_back(std::shared_ptr<Callback>(rec, [](Callback*) {}));
  options.external = [&](ExternalRun& run) { return RunInProcess(run, again, tasks_run, fail); };
  return compute(arrays, options);
}

void ExpectSameBytes(const std::vector<NDArray>& a, const std::vector<NDArray>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape()) << i;
    ASSERT_EQ(a[i].nbytes(), b[i].nbytes()) << i;
    EXPECT_EQ(0, std::memcmp(a[i].data(), b[i].data(), a[i].nbytes())) << "result " << i;
  }
}

bool EmptyOrAbsent(const std::string& dir) {
  std::error_code ec;
  return !std::filesystem::exists(dir, ec) || std::filesystem::is_empty(dir, ec);
}

class ExternalRunTierTest
    : public ::testing::TestWithParam<std::tuple<ExecutorKind, TierChoice>> {};

// A computed array rechunked (an intermediate in the tier), returned and
// reduced: the threads executor's bytes. Memory-tier blocks travel with the
// tasks (nothing written); disk blocks are erased after their last reader.
TEST_P(ExternalRunTierTest, MatchesThreads) {
  TempDir dir;
  std::vector<NDArray> got[2];
  int64_t written[2] = {0, 0};
  const auto [external, tier] = GetParam();
  for (int e = 0; e < 2; ++e) {
    const ExecutorKind kind = e == 0 ? ExecutorKind::kThreads : external;
    Spec spec = MakeSpec(kind, tier, dir.path() + "/work");
    Array a = random::random({600, 500}, {600, 25}, 7, spec);
    Array b = rechunk(a * 2.0, {25, 500});
    std::vector<Array> arrays = {b + 1.0, sum(b, {1}),
                                 matmul(a, random::random({500, 40}, {25, 40}, 3, spec))};
    testing_util::RecordingCallback rec;
    int tasks_run = 0;
    Result<std::vector<NDArray>> r = e == 0 ? [&] {
      ComputeOptions options;
      options.callbacks.push_back(std::shared_ptr<Callback>(&rec, [](Callback*) {}));
      return compute(arrays, options);
    }() : ComputeExternally(arrays, &rec, &tasks_run);
    ASSERT_TRUE(r.ok()) << ExecutorName(kind) << ": " << r.status().ToString();
    rec.ExpectWithinBudget();
    written[e] = rec.summary.intermediate_bytes_written;
    if (e == 1) {
      EXPECT_EQ(tasks_run, rec.summary.tasks);
      EXPECT_EQ(static_cast<int64_t>(rec.events.size()), rec.summary.tasks);
    }
    got[e] = std::move(r).value();
    EXPECT_TRUE(EmptyOrAbsent(spec.work_dir)) << ExecutorName(kind);
  }
  ExpectSameBytes(got[0], got[1]);
  if (tier == TierChoice::kMemory) {
    EXPECT_EQ(written[1], 0);
  }
  if (tier == TierChoice::kDisk) {
    EXPECT_EQ(written[1], written[0]);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tiers, ExternalRunTierTest,
    ::testing::Combine(::testing::Values(ExecutorKind::kDask, ExecutorKind::kRay),
                       ::testing::Values(TierChoice::kMemory, TierChoice::kDisk)),
    [](const auto& info) {
      return std::string(ExecutorName(std::get<0>(info.param))) + "_" +
             std::string(TierChoiceName(std::get<1>(info.param)));
    });

// The ray executor's RAM tier is its object store: ram_tier_mem bounds the
// RAM for intermediates, and the plan says so. (Sizes under STRATA_TINY's
// 64 KiB cap on that RAM, so the object store's cap is the one that binds in
// either mode.)
TEST(ExternalRunTest, RamTierIsBoundedByTheObjectStore) {
  for (const char* store : {"40kB", "10kB"}) {
    Spec spec = MakeSpec(ExecutorKind::kRay, TierChoice::kAuto, "");
    spec.total_system_mem = "1GB";
    spec.ram_tier_mem = store;
    Array a = random::random({60, 50}, {60, 5}, 7, spec);  // 24 kB
    Result<std::shared_ptr<const Plan>> p = plan({rechunk(a * 2.0, {5, 50})});
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    std::string reasons;
    for (const PlannedOp& op : (*p)->ops()) reasons += op.tier_reason + "\n";
    if (std::string(store) == "40kB") {
      EXPECT_NE(reasons.find("capped by the object store's 40.0 kB"), std::string::npos) << reasons;
    } else {
      EXPECT_NE(reasons.find("exceeds the 10.0 kB of RAM left"), std::string::npos) << reasons;
    }
  }
  Spec bad = MakeSpec(ExecutorKind::kRay, TierChoice::kAuto, "");
  bad.ram_tier_mem = "lots";
  Result<ResolvedSpec> r = ResolveSpec(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("ram_tier_mem"), std::string::npos) << r.status().ToString();
}

// A store's chunks are written by the task host; the calling process commits
// the array once its last task is done.
TEST(ExternalRunTest, StoresAreCommitted) {
  TempDir dir;
  Spec spec = MakeSpec(ExecutorKind::kDask, TierChoice::kAuto, dir.path() + "/work");
  Array a = random::random({60, 50}, {60, 5}, 7, spec);
  Array stored = to_zarr(rechunk(a + 1.0, {5, 50}), dir.path() + "/out.zarr");
  testing_util::RecordingCallback rec;
  int tasks_run = 0;
  Result<std::vector<NDArray>> r = ComputeExternally({stored}, &rec, &tasks_run);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Spec threads = MakeSpec(ExecutorKind::kThreads, TierChoice::kAuto, "");
  Result<NDArray> back = compute(from_zarr(dir.path() + "/out.zarr", threads));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  Result<NDArray> expected = compute(random::random({60, 50}, {60, 5}, 7, threads) + 1.0);
  ASSERT_TRUE(expected.ok());
  std::vector<NDArray> got, want;
  got.push_back(std::move(*back));
  want.push_back(std::move(*expected));
  ExpectSameBytes(got, want);
}

// A failed task is named as every executor names it, with its attempts.
TEST(ExternalRunTest, FailuresNameTheTask) {
  TempDir dir;
  Spec spec = MakeSpec(ExecutorKind::kDask, TierChoice::kAuto, dir.path() + "/work");
  Array a = random::random({60, 50}, {60, 5}, 7, spec);
  Array b = rechunk(a * 2.0, {5, 50});
  testing_util::RecordingCallback rec;
  int tasks_run = 0;
  Result<std::shared_ptr<const Plan>> p = plan({b});
  ASSERT_TRUE(p.ok());
  const int producer = (*p)->ops()[(*p)->outputs()[0]].dependencies.at(0).producer;
  Result<std::vector<NDArray>> r = ComputeExternally({b}, &rec, &tasks_run, TaskId{producer, 3});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("task 0.3 of"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("after 3 attempts: lost the worker"), std::string::npos)
      << r.status().ToString();
  EXPECT_TRUE(EmptyOrAbsent(spec.work_dir));
}

// The dask and ray executors run only with their hook (from Python), before
// anything is created.
TEST(ExternalRunTest, WithoutAHookIsRefused) {
  for (ExecutorKind kind : {ExecutorKind::kDask, ExecutorKind::kRay}) {
    TempDir dir;
    Spec spec = MakeSpec(kind, TierChoice::kAuto, dir.path() + "/work");
    Array stored = to_zarr(random::random({10, 10}, {5, 5}, 1, spec) + 1.0,
                           dir.path() + "/never.zarr");
    Result<std::vector<NDArray>> r = compute(std::vector<Array>{stored});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(r.status().message().find(fmt::format("the {} executor runs from Python",
                                                    ExecutorName(kind))),
              std::string::npos)
        << r.status().ToString();
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/never.zarr"));
  }
}

}  // namespace
}  // namespace strata
