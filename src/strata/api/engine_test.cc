// End-to-end tests of the engine through the public API: results against
// single-chunk references over many chunkings, identical bytes across
// executors and with fusion on and off, the memory contract, and bad input.
// The suite runs on the inline, threads and processes executors (the ones a
// gtest binary can start). The mpi executor runs the engine's operations under
// mpirun (runtime/mpi_test.cc) and the dask executor on a LocalCluster
// (tests/python/test_dask.py).
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "strata/api/api_test_util.h"
#include "strata/core/synthetic.h"
#include "strata/base/temp_dir.h"
#include "strata/storage/open_store.h"
#include "strata/storage/zarr/zarr_array.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::RecordingCallback;
using testing_util::Compute;
using testing_util::SmallSpec;

// Every test runs on each executor (the parameter). Most check results
// exactly against references, which makes every executor's bytes the same;
// where a check has a tolerance, ComputeSameOnThreads compares the bytes too.
class EngineTest : public ::testing::TestWithParam<ExecutorKind> {
 protected:
  Spec Small() const { return SmallSpec(GetParam()); }

  // Computes build(Small()); on an executor other than threads also
  // build(SmallSpec(threads)), and expects the same bytes.
  NDArray ComputeSameOnThreads(const std::function<Array(const Spec&)>& build) const {
    NDArray got = Compute(build(Small()));
    if (GetParam() != ExecutorKind::kThreads) {
      NDArray want = Compute(build(SmallSpec(ExecutorKind::kThreads)));
      EXPECT_EQ(got.shape(), want.shape());
      EXPECT_TRUE(got.nbytes() == want.nbytes() &&
                  std::memcmp(got.data(), want.data(), got.nbytes()) == 0)
          << ExecutorName(GetParam()) << " computed other bytes than threads";
    }
    return got;
  }
};

INSTANTIATE_TEST_SUITE_P(Executors, EngineTest,
                         ::testing::Values(ExecutorKind::kInline, ExecutorKind::kThreads,
                                           ExecutorKind::kProcesses),
                         [](const auto& info) { return std::string(ExecutorName(info.param)); });

// Reference: the synthetic array of `shape` as one NDArray.
NDArray Reference(const Shape& shape, uint64_t seed) {
  NDArray a = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, shape);
  FillSynthetic(a.view(), Box::FromShape(shape), shape, seed);
  return a;
}

TEST_P(EngineTest, RandomMatchesSyntheticInAnyChunking) {
  Shape shape = {17, 9};
  NDArray ref = Reference(shape, 5);
  for (Shape chunks : {Shape{17, 9}, Shape{4, 4}, Shape{1, 9}, Shape{17, 1}, Shape{5, 2}}) {
    NDArray got = Compute(random::random(shape, chunks, 5, Small()));
    EXPECT_TRUE(ArraysEqual(got.view(), ref.view(), false)) << ShapeToString(chunks);
  }
}

TEST_P(EngineTest, ElementwiseAgainstReference) {
  std::mt19937 rng(1);
  Shape shape = {13, 7, 5};
  NDArray x = Reference(shape, 1);
  NDArray y = Reference(shape, 2);
  for (int trial = 0; trial < 6; ++trial) {
    Shape c1 = testing_util::RandomChunks(shape, rng);
    Shape c2 = testing_util::RandomChunks(shape, rng);
    Array a = random::random(shape, c1, 1, Small());
    Array b = random::random(shape, c2, 2, Small());
    Array expr = sqrt(a * b + 1.5) - b / 2.0;
    NDArray got = Compute(expr);
    ASSERT_EQ(got.shape(), shape);
    const double* xs = x.data_as<double>();
    const double* ys = y.data_as<double>();
    for (Index i = 0; i < x.num_elements(); ++i) {
      double want = std::sqrt(xs[i] * ys[i] + 1.5) - ys[i] / 2.0;
      ASSERT_EQ(got.data_as<double>()[i], want) << i;
    }
  }
}

TEST_P(EngineTest, BroadcastingAndScalars) {
  Array col = arange(0, 4, 1, {2}, DTypeId::kFloat64, Small()).reshape({4, 1});
  Array row = arange(0, 3, 1, {3}, DTypeId::kFloat64, Small());
  NDArray got = Compute(col * 10 + row);
  ASSERT_EQ(got.shape(), Shape({4, 3}));
  for (Index i = 0; i < 4; ++i)
    for (Index j = 0; j < 3; ++j) EXPECT_EQ(got.data_as<double>()[i * 3 + j], i * 10.0 + j);
}

TEST_P(EngineTest, SumMeanVarOverEveryAxisSubset) {
  Shape shape = {9, 6, 4};
  NDArray x = Reference(shape, 3);
  std::mt19937 rng(2);
  std::vector<std::vector<int>> subsets = {{0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {}};
  for (const auto& axes : subsets) {
    Shape chunks = testing_util::RandomChunks(shape, rng);
    ReduceOptions two;
    two.split_every = 2;
    auto source = [&](const Spec& spec) { return random::random(shape, chunks, 3, spec); };
    NDArray s =
        ComputeSameOnThreads([&](const Spec& spec) { return sum(source(spec), axes, two); });
    NDArray m = ComputeSameOnThreads([&](const Spec& spec) { return mean(source(spec), axes); });
    NDArray v =
        ComputeSameOnThreads([&](const Spec& spec) { return var(source(spec), axes, two); });
    // Reference by brute force.
    std::vector<int> all = axes.empty() ? std::vector<int>{0, 1, 2} : axes;
    Shape out_shape;
    for (int i = 0; i < 3; ++i)
      if (std::find(all.begin(), all.end(), i) == all.end()) out_shape.push_back(shape[i]);
    ASSERT_EQ(s.shape(), out_shape);
    std::vector<double> rs(NumElements(out_shape), 0), rq(NumElements(out_shape), 0);
    std::vector<double> n(NumElements(out_shape), 0);
    Shape idx(3, 0);
    do {
      Shape o;
      for (int i = 0; i < 3; ++i)
        if (std::find(all.begin(), all.end(), i) == all.end()) o.push_back(idx[i]);
      Index k = LinearIndex(o, out_shape);
      double v0 = x.data_as<double>()[LinearIndex(idx, shape)];
      rs[k] += v0;
      rq[k] += v0 * v0;
      n[k] += 1;
    } while (NextIndex(idx, shape));
    for (size_t k = 0; k < rs.size(); ++k) {
      EXPECT_NEAR(s.data_as<double>()[k], rs[k], 1e-12 * n[k]);
      EXPECT_NEAR(m.data_as<double>()[k], rs[k] / n[k], 1e-13);
      double mu = rs[k] / n[k];
      EXPECT_NEAR(v.data_as<double>()[k], rq[k] / n[k] - mu * mu, 1e-12);
    }
  }
}

TEST_P(EngineTest, KeepdimsAndArgmax) {
  Shape shape = {5, 8};
  NDArray x = Reference(shape, 4);
  Array a = random::random(shape, {2, 3}, 4, Small());
  ReduceOptions keep;
  keep.keepdims = true;
  NDArray mx = Compute(max(a, {1}, keep));
  EXPECT_EQ(mx.shape(), Shape({5, 1}));
  NDArray am = Compute(argmax(a, 1));
  ASSERT_EQ(am.dtype(), DType(DTypeId::kInt64));
  for (Index i = 0; i < 5; ++i) {
    Index best = 0;
    for (Index j = 1; j < 8; ++j)
      if (x.data_as<double>()[i * 8 + j] > x.data_as<double>()[i * 8 + best]) best = j;
    EXPECT_EQ(am.data_as<int64_t>()[i], best);
    EXPECT_EQ(mx.data_as<double>()[i], x.data_as<double>()[i * 8 + best]);
  }
  NDArray flat = Compute(argmin(a));
  EXPECT_EQ(flat.shape(), Shape());
}

TEST_P(EngineTest, SameBytesAsInlineAndWithoutFusion) {
  Spec spec = Small();
  Array a = random::random({40, 30}, {7, 11}, 9, spec);
  Array b = random::random({40, 30}, {13, 5}, 10, spec);
  Array expr = sum(exp(a) * b - a, {0});
  NDArray fused = Compute(expr, true);
  Spec inline_spec = spec;
  inline_spec.executor = ExecutorKind::kInline;
  Array a2 = random::random({40, 30}, {7, 11}, 9, inline_spec);
  Array b2 = random::random({40, 30}, {13, 5}, 10, inline_spec);
  NDArray inl = Compute(sum(exp(a2) * b2 - a2, {0}), true);
  NDArray unfused = Compute(expr, false);
  ASSERT_EQ(fused.nbytes(), inl.nbytes());
  EXPECT_EQ(0, std::memcmp(fused.data(), inl.data(), fused.nbytes()));
  EXPECT_EQ(0, std::memcmp(fused.data(), unfused.data(), fused.nbytes()));
}

TEST_P(EngineTest, MeasuredWithinProjectedWithinAllowed) {
  // ~50 MB chunks under a budget that forces tight plans.
  Spec spec;
  spec.allowed_mem = "400MB";
  spec.reserved_mem = "10MB";
  spec.workers = 2;
  spec.executor = GetParam();
  Array a = random::random({2500, 5000}, {1250, 5000}, 1, spec);  // 50 MB chunks
  Array b = random::random({2500, 5000}, {1250, 5000}, 2, spec);
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  Result<std::vector<NDArray>> r = compute({mean(a * b + a, {0}), max(a - b, {1})}, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  rec->ExpectWithinBudget();
}

TEST_P(EngineTest, ToZarrThenFromZarrRoundTrip) {
  TempDir dir;
  Spec spec = Small();
  Array a = random::random({30, 20}, {7, 6}, 11, spec);
  Result<NDArray> stored = compute(to_zarr(a * 2.0, dir.path() + "/out.zarr"));
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  Array back = from_zarr(dir.path() + "/out.zarr", spec);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back.chunksize(), Shape({7, 6}));
  NDArray got = Compute(back);
  NDArray ref = Reference({30, 20}, 11);
  for (Index i = 0; i < ref.num_elements(); ++i) {
    ASSERT_EQ(got.data_as<double>()[i], 2 * ref.data_as<double>()[i]);
  }
  // The same array already open (as `strata rechunk` passes it): same
  // chunks, same values; a null array is an error, not a crash.
  Result<StoreAndPrefix> at = OpenStoreUrl(dir.path() + "/out.zarr", /*create=*/false);
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  Result<std::shared_ptr<ZarrArray>> open = ZarrArray::Open(at->store, at->prefix);
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  Array again = from_zarr(*open, spec);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again.chunksize(), Shape({7, 6}));
  NDArray got_again = Compute(again);
  ASSERT_EQ(got_again.nbytes(), got.nbytes());
  EXPECT_EQ(0, std::memcmp(got_again.data(), got.data(), got.nbytes()));
  EXPECT_FALSE(from_zarr(std::shared_ptr<ZarrArray>(), spec).ok());
}

TEST_P(EngineTest, DiskTierLeavesWorkDirEmpty) {
  TempDir dir;
  Spec spec = Small();
  spec.work_dir = dir.path() + "/work";
  spec.tier = TierChoice::kDisk;
  Array a = random::random({20, 20}, {5, 20}, 3, spec);
  // (A virtual array is regridded without moving data; its product is not.)
  Array b = rechunk(a * 2.0, {20, 5});  // an exchange: its input goes to the disk tier
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  Result<NDArray> r = compute(b + 1.0, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(rec->summary.intermediate_bytes_written, 0);
  NDArray ref = Reference({20, 20}, 3);
  for (Index i = 0; i < ref.num_elements(); ++i) {
    ASSERT_EQ(r->data_as<double>()[i], ref.data_as<double>()[i] * 2.0 + 1.0);
  }
  // Nothing is left under work_dir.
  if (std::filesystem::exists(spec.work_dir)) {
    EXPECT_TRUE(std::filesystem::is_empty(spec.work_dir));
  }
}

TEST_P(EngineTest, BadInputGivesClearErrors) {
  Spec spec = Small();
  Array a = random::random({4, 5}, {2, 5}, 1, spec);
  Array b = random::random({3, 5}, {3, 5}, 1, spec);
  Result<NDArray> mismatch = compute(a + b);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.status().message().find("cannot be broadcast"), std::string_view::npos)
      << mismatch.status().ToString();

  Result<NDArray> axis = compute(sum(a, {2}));
  ASSERT_FALSE(axis.ok());
  EXPECT_NE(axis.status().message().find("axis 2 is out of range for an array of rank 2"),
            std::string_view::npos);

  // A chunk larger than the budget: refused before anything runs or is written.
  TempDir dir;
  Spec tight = Small();
  tight.allowed_mem = "10MB";
  tight.reserved_mem = "1MB";
  Array big = random::random({2000, 2000}, {2000, 2000}, 1, tight);  // 32 MB chunk
  Result<NDArray> over = compute(to_zarr(big + 1, dir.path() + "/never.zarr"));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("over allowed_mem 10.0 MB"), std::string_view::npos)
      << over.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/never.zarr"));

  Array missing = from_zarr(dir.path() + "/nothing.zarr", spec);
  EXPECT_FALSE(missing.ok());
  Result<NDArray> unreadable = compute(missing * 2);
  ASSERT_FALSE(unreadable.ok());
  EXPECT_NE(unreadable.status().message().find("nothing.zarr"), std::string_view::npos);

  Spec bad = spec;
  bad.allowed_mem = "40XB";
  Result<NDArray> badspec = compute(random::random({4}, {2}, 1, bad));
  ASSERT_FALSE(badspec.ok());
  EXPECT_NE(badspec.status().message().find("allowed_mem"), std::string_view::npos);
}

TEST_P(EngineTest, FatalTaskErrorCancelsAndLeavesStoreIncomplete) {
  TempDir dir;
  Spec spec = Small();
  Array a = random::random({40, 10}, {5, 10}, 2, spec);
  ComputeOptions options;
  options.fault_injector = testing_util::FailStoreRow(5);
  Result<NDArray> r = compute(to_zarr(a, dir.path() + "/out.zarr"), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("task 5.0 of to_zarr"), std::string_view::npos)
      << r.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/out.zarr/.strata-incomplete"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/out.zarr/.zarray"));
  // Re-running completes it.
  Result<NDArray> again = compute(to_zarr(a, dir.path() + "/out.zarr"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/out.zarr/.zarray"));
}

TEST_P(EngineTest, TransientErrorsAreRetried) {
  Spec spec = Small();
  Array a = random::random({10, 10}, {5, 5}, 2, spec);
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  // (Counted from the events: on processes the injector runs in a worker.)
  options.fault_injector = [](const PlannedOp&, std::span<const Index> block, int attempt) {
    if (attempt == 1 && block[0] == 1) return UnavailableError("flaky disk");
    return Status::Ok();
  };
  Result<NDArray> r = compute(a + 1, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  int retried = 0;
  for (const TaskEndEvent& e : rec->events) retried += e.attempts == 2;
  EXPECT_GT(retried, 0);
}

TEST_P(EngineTest, PlanReportsFusionAndMemory) {
  Spec spec = Small();
  Array a = random::random({100, 100}, {50, 50}, 1, spec);
  Result<std::shared_ptr<const Plan>> p = plan({sum(a * 2 + 1)});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::string text = (*p)->ToText();
  EXPECT_NE(text.find("fused"), std::string::npos) << text;
  EXPECT_NE((*p)->ToJson().find("\"projected_mem\""), std::string::npos);
}

TEST_P(EngineTest, ManyTasksScheduleWithoutEdgeLists) {
  // 40,000 single-element blocks through two ops.
  NDArray r = ComputeSameOnThreads([](const Spec& spec) {
    return sum(random::random({200, 200}, {1, 1}, 1, spec) + 1.0);
  });
  NDArray ref = Reference({200, 200}, 1);
  double want = 0;
  for (double v : ref.values<double>()) want += v + 1.0;
  EXPECT_NEAR(*r.data_as<double>(), want, 1e-6);
}

}  // namespace
}  // namespace strata
