// Reading what a computation needs, once (issue 14): sibling fusion reads
// every chunk of quadratic means' inputs once, counted by the compute's
// zarr_bytes_read, on the threads and the processes executor.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "strata/api/api_test_util.h"
#include "strata/base/temp_dir.h"
#include "strata/storage/open_store.h"
#include "strata/storage/zarr/zarr_array.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::RecordingCallback;
using testing_util::Snapshot;

int64_t StoredBytes(const std::string& path) {
  Result<StoreAndPrefix> at = OpenStoreUrl(path, false);
  EXPECT_TRUE(at.ok());
  Result<std::shared_ptr<ZarrArray>> z = ZarrArray::Open(at->store, at->prefix);
  EXPECT_TRUE(z.ok()) << z.status().ToString();
  Result<ZarrArray::StoredChunks> stored = (*z)->CountStoredChunks();
  EXPECT_TRUE(stored.ok());
  return stored->bytes;
}

void Write(const Array& a, const std::string& path, ToZarrOptions options = {}) {
  Result<NDArray> r = compute(to_zarr(a, path, options));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

Spec TestSpec(ExecutorKind executor, const std::string& work) {
  Spec spec;
  spec.allowed_mem = "64MB";
  spec.reserved_mem = "1MB";
  spec.workers = 2;
  spec.executor = executor;
  spec.work_dir = work;
  // The bytes read are counted: a straggler's backup (on a loaded machine)
  // would read its inputs a second time.
  spec.backup_tasks = false;
  return spec;
}

class ReadOnceTest : public ::testing::TestWithParam<ExecutorKind> {};

INSTANTIATE_TEST_SUITE_P(Executors, ReadOnceTest,
                         ::testing::Values(ExecutorKind::kThreads, ExecutorKind::kProcesses),
                         [](const auto& info) { return std::string(ExecutorName(info.param)); });

// Quadratic means: mean(u*u), mean(v*v) and mean(u*v) read u and v once
// between them, and compute what the unfused plan computes.
TEST_P(ReadOnceTest, QuadraticMeansReadEachInputChunkOnce) {
  TempDir dir;
  const Shape shape = {24, 30, 40}, chunks = {4, 30, 40};
  const std::string u_path = dir.path() + "/u.zarr", v_path = dir.path() + "/v.zarr";
  Write(random::random(shape, chunks, 1), u_path);
  Write(random::random(shape, chunks, 2), v_path);
  const int64_t stored = StoredBytes(u_path) + StoredBytes(v_path);
  const Spec spec = TestSpec(GetParam(), dir.path() + "/work");
  auto means = [&](const std::string& out) {
    Array u = from_zarr(u_path, spec), v = from_zarr(v_path, spec);
    return to_zarr(stack({mean(u * u, {0}), mean(v * v, {0}), mean(u * v, {0})}), out);
  };
  struct Run {
    ComputeSummary summary;
    std::string plan;
  };
  auto run = [&](const std::string& out, const PlanOptions& popts) {
    auto rec = std::make_shared<RecordingCallback>();
    ComputeOptions options;
    options.callbacks.push_back(rec);
    Array m = means(out);
    Result<std::shared_ptr<const Plan>> p = plan({m}, popts);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    Result<NDArray> r = compute(m, options, popts);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    rec->ExpectWithinBudget();
    return Run{rec->summary, p.ok() ? (*p)->ToText() : ""};
  };
  const Run fused = run(dir.path() + "/fused.zarr", {});
  EXPECT_NE(fused.plan.find("fused siblings"), std::string::npos) << fused.plan;
  EXPECT_EQ(fused.summary.zarr_bytes_read, stored) << fused.plan;
  PlanOptions apart;
  apart.disabled_passes.insert("fuse_siblings");
  const Run unfused = run(dir.path() + "/unfused.zarr", apart);
  EXPECT_EQ(unfused.plan.find("fused siblings"), std::string::npos);
  EXPECT_EQ(unfused.summary.zarr_bytes_read, 2 * stored) << "mean(u*v) reads u and v again";
  EXPECT_LT(fused.summary.tasks, unfused.summary.tasks);
  // The same arithmetic in the same order: the same bytes.
  EXPECT_EQ(Snapshot(dir.path() + "/fused.zarr"), Snapshot(dir.path() + "/unfused.zarr"));
  EXPECT_EQ(std::filesystem::exists(dir.path() + "/work"), false);
}

// A task whose combine rounds are fused onto the partials folds the leaves
// one at a time (TaskRunner::FoldGroup): it holds one leaf's source blocks
// (a block of u and one of v) and a few states, never all the blocks its
// tree reads, and gives what the partials combined whole give.
TEST_P(ReadOnceTest, AFusedCombineTreeHoldsOneLeafsBlocksAtATime) {
  TempDir dir;
  const Shape shape = {64, 30, 40}, chunks = {8, 30, 40};
  const int64_t block_bytes = 8 * 30 * 40 * 8;
  const std::string u_path = dir.path() + "/u.zarr", v_path = dir.path() + "/v.zarr";
  Write(random::random(shape, chunks, 1), u_path);
  Write(random::random(shape, chunks, 2), v_path);
  Spec spec = TestSpec(GetParam(), dir.path() + "/work");
  // 8 blocks along t merged 4 at a time: two tasks of the first combine
  // round, each computing (fused) the partials of 4 blocks of u and of v
  // (one worker: two tasks are enough to fuse into).
  spec.workers = 1;
  ReduceOptions by4;
  by4.split_every = 4;
  Array u = from_zarr(u_path, spec), v = from_zarr(v_path, spec);
  Array means =
      stack({mean(u * u, {0}, by4), mean(v * v, {0}, by4), mean(u * v, {0}, by4)});
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  Result<NDArray> got = compute(means, options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  rec->ExpectWithinBudget();
  // The reference: each input block reduced on its own, the states summed.
  Result<NDArray> uu = compute(u * u), vv = compute(v * v), uv = compute(u * v);
  ASSERT_TRUE(uu.ok() && vv.ok() && uv.ok());
  const auto a = got->values<double>();
  const auto x = uu->values<double>(), y = vv->values<double>(), z = uv->values<double>();
  const int64_t plane = 30 * 40;
  for (int64_t i = 0; i < plane; i += 97) {
    double s[3] = {0, 0, 0};
    for (int64_t t = 0; t < 64; ++t) {
      s[0] += x[t * plane + i];
      s[1] += y[t * plane + i];
      s[2] += z[t * plane + i];
    }
    for (int m = 0; m < 3; ++m) EXPECT_NEAR(a[m * plane + i], s[m] / 64, 1e-12) << m << " " << i;
  }
  // A combine task reads 4 blocks of u and 4 of v: it holds one of each (and
  // the states, and a strip of scratch), under the bytes of the 8; and the
  // model projects that (MemoryModel::ProjectFold), not the whole tree.
  int64_t peak = 0, projected = 0;
  std::string tasks;
  for (const TaskEndEvent& e : rec->events) {
    tasks += fmt::format("{} {} {} of {}; ", e.op_name, ShapeToString(e.block), e.measured_peak,
                         e.projected_mem);
    if (e.op_name.find("combine") != std::string::npos) {
      peak = std::max(peak, e.measured_peak);
      projected = std::max(projected, e.projected_mem);
    }
  }
  SCOPED_TRACE(tasks);
  EXPECT_GT(peak, 2 * block_bytes);
  EXPECT_LT(peak, 8 * block_bytes) << "a fused combine tree holds every leaf's blocks";
  const int64_t reserved = 1000 * 1000;  // TestSpec's reserved_mem, in every projection
  EXPECT_GE(projected - reserved, peak);
  EXPECT_LT(projected - reserved, 8 * block_bytes) << "the model projects the whole tree";
}

}  // namespace
}  // namespace strata
