// The API pieces the Python package stands on, tested from C++: Dask-style
// chunk normalisation (chunks.h), subscripts with None and Ellipsis
// (subscript.h), plan pictures (visualize.h), cancelling a compute
// (ComputeOptions::cancel) and ops that must run in the calling process
// (MapBlocksOptions::calling_process_only).
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "strata/api/chunks.h"
#include "strata/api/subscript.h"
#include "strata/api/api_test_util.h"
#include "strata/api/visualize.h"
#include "strata/base/temp_dir.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::SmallSpec;

std::vector<std::vector<Index>> Sizes(const ChunkGrid& g) {
  std::vector<std::vector<Index>> out;
  for (int i = 0; i < g.rank(); ++i) out.push_back(g.AxisChunkSizes(i));
  return out;
}

TEST(NormalizeChunksTest, DaskRules) {
  const Spec spec = SmallSpec();
  ChunksRequest r;
  r.axes = {AxisChunks::Size(3), AxisChunks::Full()};
  ChunkGrid g = *NormalizeChunks(r, {10, 20}, DTypeId::kFloat64, spec, "t");
  EXPECT_EQ(Sizes(g), (std::vector<std::vector<Index>>{{3, 3, 3, 1}, {20}}));

  ChunksRequest uniform;
  uniform.all = AxisChunks::Size(4);
  EXPECT_EQ(NormalizeChunks(uniform, {10, 20}, DTypeId::kFloat64, spec, "t")->chunk_shape(),
            (Shape{4, 4}));

  ChunksRequest explicit_sizes;
  explicit_sizes.axes = {AxisChunks::Sizes({5, 5}), AxisChunks::Sizes({5, 15})};
  g = *NormalizeChunks(explicit_sizes, {10, 20}, DTypeId::kFloat64, spec, "t");
  EXPECT_FALSE(g.is_regular());
  EXPECT_EQ(Sizes(g), (std::vector<std::vector<Index>>{{5, 5}, {5, 15}}));
  // Sizes that happen to be regular (equal, a smaller last one) stay regular.
  explicit_sizes.axes = {AxisChunks::Sizes({5, 5}), AxisChunks::Sizes({15, 5})};
  EXPECT_TRUE(NormalizeChunks(explicit_sizes, {10, 20}, DTypeId::kFloat64, spec, "t")
                  ->is_regular());

  // Auto axes share a byte target with the fixed ones: 800 kB blocks of 8-byte
  // elements with a fixed 1000 along axis 1 leave 100 rows.
  ChunksRequest bytes;
  bytes.auto_bytes = ByteSize("800kB");
  EXPECT_EQ(NormalizeChunks(bytes, {1000, 1000}, DTypeId::kFloat64, spec, "t")->chunk_shape(),
            (Shape{100, 1000}));
  ChunksRequest mixed;
  mixed.axes = {AxisChunks::Auto(), AxisChunks::Size(500)};
  mixed.auto_bytes = ByteSize("800kB");
  EXPECT_EQ(NormalizeChunks(mixed, {1000, 1000}, DTypeId::kFloat64, spec, "t")->chunk_shape(),
            (Shape{200, 500}));
  // A size beyond the axis is the whole axis; a zero-size axis is fine.
  uniform.all = AxisChunks::Size(99);
  EXPECT_EQ(NormalizeChunks(uniform, {10, 0}, DTypeId::kFloat64, spec, "t")->chunk_shape(),
            (Shape{10, 1}));
}

TEST(NormalizeChunksTest, BadRequests) {
  const Spec spec = SmallSpec();
  ChunksRequest r;
  r.axes = {AxisChunks::Sizes({4, 5})};
  Result<ChunkGrid> g = NormalizeChunks(r, {10}, DTypeId::kFloat64, spec, "zeros");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("zeros: chunk sizes along axis 0 sum to 9"),
            std::string_view::npos);
  r.axes = {AxisChunks::Size(2)};
  g = NormalizeChunks(r, {10, 2}, DTypeId::kFloat64, spec, "zeros");
  EXPECT_NE(g.status().message().find("chunks for 1 axes given for shape (10, 2)"),
            std::string_view::npos);
  r.axes = {AxisChunks::Size(0)};
  EXPECT_EQ(NormalizeChunks(r, {10}, DTypeId::kFloat64, spec, "t").status().code(),
            StatusCode::kInvalidArgument);
  ChunksRequest bytes;
  bytes.auto_bytes = ByteSize("lots");
  EXPECT_EQ(NormalizeChunks(bytes, {10}, DTypeId::kFloat64, spec, "t").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(NormalizeChunksTest, RechunkToARectilinearGrid) {
  Array x = arange(0, 10, 1, {3}, DTypeId::kFloat64, SmallSpec());
  ChunksRequest r;
  r.axes = {AxisChunks::Sizes({1, 4, 5})};
  Array y = rechunk(x, r);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y.chunks().AxisChunkSizes(0), (std::vector<Index>{1, 4, 5}));
  NDArray out = testing_util::Compute(y * 2);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(out.values<double>()[i], 2.0 * i);
}

TEST(SubscriptTest, NewAxisAndEllipsis) {
  Array x = arange(0, 24, 1, {2}, DTypeId::kInt64, SmallSpec()).reshape({2, 3, 4});
  using T = SubscriptTerm;
  Array y = subscript(x, {T::Ellipsis(), T::Integer(1)});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  NDArray v = testing_util::Compute(y);
  EXPECT_EQ(v.values<int64_t>()[4], 17);  // x[1, 1, 1]
  y = subscript(x, {T::NewAxis(), T::Integer(0), T::NewAxis(), T::SliceOf({{}, {}, -1})});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 4}));
  v = testing_util::Compute(y);
  EXPECT_EQ(v.values<int64_t>()[0], 8);  // x[0, 2, 0]
  EXPECT_EQ(subscript(x, {}).shape(), x.shape());

  Array bad = subscript(x, {T::Ellipsis(), T::Ellipsis()});
  EXPECT_EQ(bad.status().code(), StatusCode::kOutOfRange);
  bad = subscript(x, {T::Integer(0), T::Integer(3)});
  EXPECT_EQ(bad.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(bad.status().message().find("index 3 is out of bounds for axis 1 with size 3"),
            std::string_view::npos);
  bad = subscript(x, {T::Integer(0), T::Integer(0), T::Integer(0), T::Integer(0)});
  EXPECT_NE(bad.status().message().find("too many indices"), std::string_view::npos);
}

TEST(SetitemTest, ScalarsAndArraysIntoSelections) {
  using T = SubscriptTerm;
  std::mt19937 rng(7);
  for (int rep = 0; rep < 20; ++rep) {
    const Index n = std::uniform_int_distribution<Index>(1, 12)(rng);
    const Index m = std::uniform_int_distribution<Index>(1, 9)(rng);
    Shape chunks = testing_util::RandomChunks({n, m}, rng);
    Array x = arange(0, static_cast<double>(n * m), 1, {}, DTypeId::kFloat64, SmallSpec())
                  .reshape({n, m})
                  .rechunk(chunks);
    // A stepped slice on axis 0 (either direction), an integer on axis 1.
    const Index step = std::uniform_int_distribution<Index>(1, 3)(rng) *
                       (rng() % 2 ? 1 : -1);
    const Index col = std::uniform_int_distribution<Index>(0, m - 1)(rng);
    Array y = setitem(x, {T::SliceOf({{}, {}, step}), T::Integer(col - m)}, Scalar(-1.0));
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    NDArray v = testing_util::Compute(y);
    for (Index i = 0; i < n; ++i) {
      for (Index j = 0; j < m; ++j) {
        const bool hit = j == col && (step > 0 ? i % step == 0 : (n - 1 - i) % (-step) == 0);
        EXPECT_EQ(v.values<double>()[i * m + j], hit ? -1.0 : static_cast<double>(i * m + j))
            << "rep " << rep << " at " << i << "," << j << " step " << step;
      }
    }
  }
  // An array value broadcast along the selection, cast to x's dtype.
  Array x = zeros({4, 6}, {3, 4}, DTypeId::kInt32, SmallSpec());
  Array row = arange(0, 3, 1, {}, DTypeId::kFloat64, SmallSpec());
  Array y = setitem(x, {T::SliceOf({1, 3}), T::SliceOf({0, 6, 2})}, row);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y.dtype(), DType(DTypeId::kInt32));
  NDArray v = testing_util::Compute(y);
  EXPECT_EQ(v.values<int32_t>()[1 * 6 + 4], 2);
  EXPECT_EQ(v.values<int32_t>()[2 * 6 + 2], 1);
  EXPECT_EQ(v.values<int32_t>()[2 * 6 + 3], 0);
  EXPECT_EQ(v.values<int32_t>()[3 * 6 + 4], 0);

  Array bad = setitem(x, {T::Integer(0)}, arange(0, 5, 1, {}, DTypeId::kFloat64, SmallSpec()));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("could not broadcast a value of shape (5,) into a "
                                        "selection of shape (6,)"),
            std::string_view::npos)
      << bad.status().ToString();
  EXPECT_EQ(setitem(x, {T::Integer(4)}, Scalar(1)).status().code(), StatusCode::kOutOfRange);
}

TEST(VisualizeTest, DotAndSvg) {
  Array x = ones({10, 10}, {5, 5}, DTypeId::kFloat64, SmallSpec());
  Array y = sum(x * 2, {1});
  auto p = plan({y});
  ASSERT_TRUE(p.ok());
  std::string dot = PlanToDot(**p);
  EXPECT_EQ(dot.rfind("digraph strata {", 0), 0u);
  EXPECT_NE(dot.find("\"" + y.name() + "\""), std::string::npos);
  EXPECT_NE(dot.find("fused into"), std::string::npos);
  EXPECT_NE(dot.find("tasks,"), std::string::npos);
  TempDir dir;
  ASSERT_TRUE(visualize({y}, dir.path() + "/p.dot").ok());
  ASSERT_TRUE(std::filesystem::exists(dir.path() + "/p.dot"));
  Status s = visualize({y}, dir.path() + "/p.gif");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  if (std::system("command -v dot > /dev/null 2>&1") == 0) {
    ASSERT_TRUE(visualize({y}, dir.path() + "/p.svg").ok());
    std::ifstream f(dir.path() + "/p.svg");
    std::string svg((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(svg.find("<svg"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/p.svg.dot"));
  }
}

TEST(CancelTest, CancelledComputeStopsEarlyAndCleansUp) {
  TempDir dir;
  Spec spec = SmallSpec();
  spec.work_dir = dir.path() + "/work";
  std::atomic<int> calls{0};
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  MapBlocksFunction slow = [&](std::span<const ConstArrayView> in, const BlockInfo& info,
                               MemoryPool& pool) -> Result<NDArray> {
    if (++calls == 5) cancel->store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::CopyOf(pool, in[0]));
    return out;
  };
  Array x = ones({200, 4}, {1, 4}, DTypeId::kFloat64, spec);
  Array y = map_blocks(slow, {x}, DTypeId::kFloat64);
  ComputeOptions options;
  options.cancel = cancel;
  Result<NDArray> r = compute(to_zarr(y, dir.path() + "/out.zarr"), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_LT(calls.load(), 20);
  // The output is left incomplete (no metadata), never looking finished.
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/out.zarr/.zarray"));
  EXPECT_TRUE(!std::filesystem::exists(spec.work_dir) ||
              std::filesystem::is_empty(spec.work_dir));
}

TEST(CallingProcessOnlyTest, RefusedOnProcessesAndMpi) {
  MapBlocksFunction identity = [](std::span<const ConstArrayView> in, const BlockInfo&,
                                  MemoryPool& pool) { return NDArray::CopyOf(pool, in[0]); };
  MapBlocksOptions options;
  options.name = "py";
  options.calling_process_only = "calls a Python function";
  Array on_procs = map_blocks(options, identity, {ones({4}, {2}, DTypeId::kFloat64,
                                                       SmallSpec(ExecutorKind::kProcesses))},
                              DTypeId::kFloat64);
  ASSERT_FALSE(on_procs.ok());
  EXPECT_NE(on_procs.status().message().find(
                "py: the function calls a Python function, so it cannot run on the processes "
                "executor"),
            std::string_view::npos);
  // Built on threads, then mixed into a processes plan: the planner refuses.
  Array ok = map_blocks(options, identity, {ones({4}, {2}, DTypeId::kFloat64, SmallSpec())},
                        DTypeId::kFloat64);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(testing_util::Compute(ok).values<double>()[3], 1.0);
  Array procs = ones({4}, {2}, DTypeId::kFloat64, SmallSpec(ExecutorKind::kProcesses));
  auto p = plan({procs + ok});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("cannot run on the processes executor"),
            std::string_view::npos);
}

}  // namespace
}  // namespace strata
