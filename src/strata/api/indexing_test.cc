// Tests of getitem and take: Python slice semantics exhaustively on small
// arrays, N-D mixes against plain-loop references over many chunkings and
// dtypes, output chunking, the memory contract on tight budgets, identical
// bytes across executors and with fusion off, and bad input.
#include <complex>
#include <cstring>
#include <limits>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "strata/api/api_test_util.h"
#include "strata/base/temp_dir.h"
#include "strata/core/synthetic.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::RecordingCallback;
using testing_util::Compute;
using testing_util::SmallSpec;
constexpr Index kMin = std::numeric_limits<Index>::min();
constexpr Index kMax = std::numeric_limits<Index>::max();

// Chunk-independent data of `dtype`.
Array Input(const Shape& shape, const Shape& chunks, DTypeId id, uint64_t seed,
            const Spec& spec = SmallSpec()) {
  switch (id) {
    case DTypeId::kInt32:
      return random::integers(-1000, 1000, shape, chunks, seed, id, spec);
    case DTypeId::kComplex128:
      return random::random(shape, chunks, seed, spec) +
             random::random(shape, chunks, seed + 1000, spec) * std::complex<double>(0, 1);
    case DTypeId::kFloat32:
      return astype(random::random(shape, chunks, seed, spec), DTypeId::kFloat32);
    default:
      return random::random(shape, chunks, seed, spec);
  }
}

constexpr DTypeId kDTypes[] = {DTypeId::kFloat64, DTypeId::kFloat32, DTypeId::kInt32,
                               DTypeId::kComplex128};

// The positions x[start:stop:step] selects from an axis of `n`, written as
// Python's documentation describes slicing (independently of getitem's code).
std::vector<Index> PySlice(Index n, std::optional<Index> start, std::optional<Index> stop,
                           Index step) {
  std::vector<Index> out;
  auto clamp = [](Index v, Index lo, Index hi) { return std::max(lo, std::min(v, hi)); };
  auto wrap = [n](Index v) { return v < 0 ? (v < -n ? -n - 1 : v + n) : v; };
  if (step > 0) {
    Index b = clamp(wrap(start.value_or(0)), 0, n);
    Index e = clamp(wrap(stop.value_or(n)), 0, n);
    for (Index i = b; i < e; i = i > kMax - step ? e : i + step) out.push_back(i);
  } else {
    Index b = clamp(start ? wrap(*start) : n - 1, -1, n - 1);
    Index e = stop ? clamp(wrap(*stop), -1, n - 1) : -1;
    for (Index i = b; i > e; i = i < kMin - step ? e : i + step) out.push_back(i);
  }
  return out;
}

// One axis of a reference selection: an integer (dropped) or positions.
struct RefAxis {
  bool drop = false;
  std::vector<Index> positions;
};

// x[sel] with plain loops, element bytes copied.
NDArray Select(const NDArray& x, const std::vector<RefAxis>& sel) {
  Shape out_shape, counts;
  for (const RefAxis& a : sel) {
    counts.push_back(static_cast<Index>(a.positions.size()));
    if (!a.drop) out_shape.push_back(static_cast<Index>(a.positions.size()));
  }
  NDArray out = *NDArray::Allocate(*MemoryPool::Default(), x.dtype(), out_shape);
  if (NumElements(counts) == 0) return out;
  const int size = x.dtype().size();
  Shape idx(sel.size(), 0), pos(sel.size());
  Index o = 0;
  do {
    for (size_t d = 0; d < sel.size(); ++d) pos[d] = sel[d].positions[idx[d]];
    std::memcpy(out.data() + o * size, x.data() + LinearIndex(pos, x.shape()) * size, size);
    ++o;
  } while (NextIndex(idx, counts));
  return out;
}

std::vector<RefAxis> RefOf(const Shape& shape, const std::vector<IndexItem>& items) {
  std::vector<RefAxis> sel(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d >= items.size()) {
      sel[d].positions = PySlice(shape[d], std::nullopt, std::nullopt, 1);
    } else if (items[d].kind == IndexItem::Kind::kInteger) {
      sel[d].drop = true;
      Index i = items[d].integer;
      sel[d].positions = {i < 0 ? i + shape[d] : i};
    } else {
      const Slice& s = items[d].slice;
      sel[d].positions = PySlice(shape[d], s.start, s.stop, s.step);
    }
  }
  return sel;
}

std::string ItemsToString(const std::vector<IndexItem>& items) {
  std::string s;
  auto opt = [](std::optional<Index> v) { return v ? std::to_string(*v) : std::string(); };
  for (const IndexItem& it : items) {
    if (!s.empty()) s += ", ";
    if (it.kind == IndexItem::Kind::kInteger) {
      s += std::to_string(it.integer);
    } else {
      s += fmt::format("{}:{}:{}", opt(it.slice.start), opt(it.slice.stop), it.slice.step);
    }
  }
  return "[" + s + "]";
}

void ExpectSameBytes(const NDArray& got, const NDArray& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.nbytes())) << what;
}

// Output blocks are never larger than the input's chunks along any axis.
void ExpectChunksWithin(const Array& y, const Shape& nominal, const std::string& what) {
  ASSERT_EQ(y.chunksize().size(), nominal.size()) << what;
  for (size_t i = 0; i < nominal.size(); ++i) EXPECT_LE(y.chunksize()[i], nominal[i]) << what;
}

TEST(IndexingTest, GetitemFollowsPythonSliceSemantics) {
  // Every start/stop in [-n-3, n+3] plus None and the extremes, for several
  // steps, extents and chunkings; one compute per (n, chunk, step).
  Spec spec = SmallSpec(ExecutorKind::kInline);
  for (Index n : {0, 1, 2, 7}) {
    std::vector<std::optional<Index>> bounds = {std::nullopt, kMin, kMax};
    for (Index v = -n - 3; v <= n + 3; ++v) bounds.push_back(v);
    for (Index chunk : {1, 2, 3, 7}) {
      if (chunk > std::max<Index>(n, 1)) continue;
      Array x = arange(0, static_cast<double>(n), 1, {chunk}, DTypeId::kInt64, spec);
      ASSERT_TRUE(x.ok()) << x.status().ToString();
      for (Index step : {kMin, Index{-8}, Index{-3}, Index{-2}, Index{-1}, Index{1}, Index{2},
                         Index{3}, Index{8}, kMax}) {
        std::vector<Array> ys;
        std::vector<std::vector<Index>> wants;
        std::vector<std::string> names;
        for (auto start : bounds) {
          for (auto stop : bounds) {
            Slice s{start, stop, step};
            ys.push_back(getitem(x, {s}));
            ASSERT_TRUE(ys.back().ok()) << ys.back().status().ToString();
            wants.push_back(PySlice(n, start, stop, step));
            names.push_back(fmt::format("n={} chunk={} {}", n, chunk, ItemsToString({s})));
            ExpectChunksWithin(ys.back(), {chunk}, names.back());
          }
        }
        Result<std::vector<NDArray>> got = compute(ys);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        for (size_t i = 0; i < ys.size(); ++i) {
          const NDArray& g = (*got)[i];
          ASSERT_EQ(g.shape(), Shape({static_cast<Index>(wants[i].size())})) << names[i];
          for (size_t j = 0; j < wants[i].size(); ++j) {
            ASSERT_EQ(g.data_as<int64_t>()[j], wants[i][j]) << names[i] << " element " << j;
          }
        }
      }
    }
  }
}

TEST(IndexingTest, GetitemOutputChunking) {
  Spec spec = SmallSpec();
  auto sizes = [&](Index n, Index chunk, Slice s) {
    Array y = getitem(arange(0, static_cast<double>(n), 1, {chunk}, std::nullopt, spec), {s});
    EXPECT_TRUE(y.ok()) << y.status().ToString();
    return y.chunks().AxisChunkSizes(0);
  };
  using V = std::vector<Index>;
  // Step 1 keeps the input's chunk boundaries.
  EXPECT_EQ(sizes(20, 5, Slice{3, 17}), V({2, 5, 5, 2}));
  EXPECT_EQ(sizes(20, 5, Slice{5, 15}), V({5, 5}));
  EXPECT_EQ(sizes(22, 5, Slice{std::nullopt, std::nullopt, -1}), V({2, 5, 5, 5, 5}));
  EXPECT_EQ(sizes(22, 5, Slice{-4, 2, -1}), V({4, 5, 5, 2}));
  // Larger steps merge the selections of consecutive blocks up to a chunk.
  EXPECT_EQ(sizes(100, 10, Slice{std::nullopt, std::nullopt, 7}), V({10, 5}));
  EXPECT_EQ(sizes(100, 10, Slice{std::nullopt, std::nullopt, 25}), V({4}));
  EXPECT_EQ(sizes(100, 10, Slice{99, std::nullopt, -2}), V({10, 10, 10, 10, 10}));
  // And the key function lists each output block's input blocks.
  Array x = arange(0, 100, 1, {10}, std::nullopt, spec);
  Array y = getitem(x, {Slice{std::nullopt, std::nullopt, 7}});
  const AxisMap& m = y.node()->maps[0].axes[0];
  EXPECT_EQ(std::vector<Index>(m.InputsFor(0).begin(), m.InputsFor(0).end()),
            V({0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(std::vector<Index>(m.InputsFor(1).begin(), m.InputsFor(1).end()), V({7, 8, 9}));
}

TEST(IndexingTest, GetitemMixedIntegersAndSlices) {
  std::mt19937 rng(1);
  const Shape shape = {9, 8, 7};
  const std::vector<std::vector<IndexItem>> cases = {
      {2, Slice{1, 8, 3}},
      {Slice{std::nullopt, std::nullopt, -2}, -1, Slice{2, std::nullopt}},
      {-9, Slice{}, 6},
      {1, 2, 3},
      {Slice{5, 2}},
      {Slice{-100, 100, 4}, Slice{7, -100, -3}, Slice{1, 6, 2}},
      {Slice{3, 4}, Slice{}, -7},
      {},
      {Slice{}, 0},
      {Slice{8, 0, -1}, Slice{}, Slice{std::nullopt, std::nullopt, -1}},
  };
  for (DTypeId id : kDTypes) {
    for (int trial = 0; trial < 6; ++trial) {
      Shape chunks = trial == 0   ? Shape{1, 1, 1}
                     : trial == 1 ? shape
                                  : testing_util::RandomChunks(shape, rng);
      Array x = Input(shape, chunks, id, 3);
      NDArray whole = Compute(x);
      for (const auto& items : cases) {
        std::string what = fmt::format("{} chunks {} {}", DType(id).name(), ShapeToString(chunks),
                                       ItemsToString(items));
        Array y = getitem(x, items);
        ASSERT_TRUE(y.ok()) << what << ": " << y.status().ToString();
        ExpectSameBytes(Compute(y), Select(whole, RefOf(shape, items)), what);
      }
    }
  }
}

TEST(IndexingTest, GetitemOfEmptyArrays) {
  Array x = Input({0, 5}, {1, 2}, DTypeId::kFloat64, 1);
  NDArray a = Compute(getitem(x, {Slice{}, Slice{1, 4}}));
  EXPECT_EQ(a.shape(), Shape({0, 3}));
  Array y = Input({4, 5}, {3, 2}, DTypeId::kInt32, 2);
  NDArray b = Compute(getitem(y, {Slice{3, 1}, 2}));
  EXPECT_EQ(b.shape(), Shape({0}));
  EXPECT_EQ(b.dtype(), DType(DTypeId::kInt32));
}

TEST(IndexingTest, GetitemWithEverythingSelectedIsTheInput) {
  Array x = Input({6, 4}, {4, 3}, DTypeId::kFloat64, 1);
  EXPECT_EQ(getitem(x, {}).node(), x.node());
  EXPECT_EQ(getitem(x, {Slice{}}).node(), x.node());
  EXPECT_EQ(getitem(x, {Slice{0, 100}, Slice{-4, std::nullopt, 1}}).node(), x.node());
  EXPECT_NE(getitem(x, {Slice{std::nullopt, std::nullopt, -1}}).node(), x.node());
  Array scalar = zeros({}, {}, DTypeId::kFloat64, SmallSpec());
  EXPECT_EQ(getitem(scalar, {}).node(), scalar.node());
}

TEST(IndexingTest, GetitemOfAMaterializedArrayReadsOnlyWhatItNeeds) {
  // A rechunk's blocks outside the selection are never read.
  Array x = rechunk(Input({20, 20}, {5, 20}, DTypeId::kFloat64, 4), {20, 5});
  NDArray whole = Compute(x);
  std::vector<IndexItem> items = {Slice{2, 7}, 3};
  ExpectSameBytes(Compute(getitem(x, items)), Select(whole, RefOf({20, 20}, items)), "column 3");
  items = {Slice{std::nullopt, std::nullopt, 9}, Slice{6, 19, 6}};
  ExpectSameBytes(Compute(getitem(x * 2.0, items)), Select(Compute(x * 2.0), RefOf({20, 20}, items)),
                  "stepped");
}

TEST(IndexingTest, GetitemWithLargeStepsStaysWithinBudget) {
  // Every 50th row and column of 100 x 100 chunks: without a cap, one output
  // block would read 40 x 40 input blocks (128 MB) under a 64 MB budget.
  Spec spec = SmallSpec();
  const Shape shape = {4000, 4000};
  Array x = random::random(shape, {100, 100}, 7, spec);
  Array y = getitem(x, {Slice{std::nullopt, std::nullopt, 50}, Slice{3, std::nullopt, 50}});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y.shape(), Shape({80, 80}));
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  Result<NDArray> r = compute(y, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  rec->ExpectWithinBudget();
  for (Index i = 0; i < 80; ++i) {
    for (Index j = 0; j < 80; ++j) {
      const Index flat = (50 * i) * 4000 + (3 + 50 * j);
      ASSERT_EQ(r->data_as<double>()[i * 80 + j], SyntheticUniform(7, flat)) << i << "," << j;
    }
  }
}

TEST(IndexingTest, GetitemOfAZarrSourceFitsTheMemoryModel) {
  // A Zarr v3 source of 100-element int64 chunks (800 B) through two
  // compressors (gzip, zstd: two copies beside the decoded chunk) with a
  // ragged last chunk: the memory model reads a chunk at 4 blocks (its
  // copies and a padded full chunk). The budget (5600 B after reserved_mem)
  // held 5 input blocks per task when a task was counted as its output block,
  // its input blocks and one spare; by the model such a task gathers 4 blocks
  // and reads a fifth at 4 blocks (6400 B), which the plan's check refuses.
  // Each output block of every 10th element gathers up to 10 input blocks,
  // so the budget binds.
  TempDir dir;
  const std::string path = dir.path() + "/x.zarr";
  ToZarrOptions options;
  options.zarr_format = ZarrFormat::kV3;
  options.codecs = {GzipSpec{}, ZstdSpec{}};
  Result<NDArray> written = compute(to_zarr(arange(0, 1050, 1, {100}), path, options));
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  Spec spec;
  spec.reserved_mem = "1MB";
  spec.allowed_mem = int64_t{1'000'000 + 5600};
  spec.workers = 2;
  Array y = getitem(from_zarr(path, spec), {Slice{std::nullopt, std::nullopt, 10}});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  Result<std::shared_ptr<const Plan>> p = plan({y});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  for (const PlannedOp& op : (*p)->ops()) {
    if (op.materialized) {
      EXPECT_LE(op.projected_mem, 1'000'000 + 5600) << op.node->name;
    }
  }
  EXPECT_LE(y.node()->maps[0].axes[0].max_inputs(), 3);
  Result<NDArray> r = compute(y);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->shape(), Shape({105}));
  ASSERT_EQ(r->dtype(), DType(DTypeId::kInt64));
  for (Index i = 0; i < 105; ++i) ASSERT_EQ(r->data_as<int64_t>()[i], 10 * i) << i;
}

TEST(IndexingTest, GetitemBadInput) {
  Array x = Input({10, 4}, {3, 3}, DTypeId::kFloat64, 1);
  auto expect_error = [](const Array& y, std::string_view text) {
    ASSERT_FALSE(y.ok()) << text;
    EXPECT_EQ(y.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(y.status().message().find(text), std::string_view::npos) << y.status().ToString();
  };
  expect_error(getitem(x, {12}), "getitem: index 12 is out of bounds for axis 0 with size 10");
  expect_error(getitem(x, {-11}), "index -11 is out of bounds for axis 0 with size 10");
  expect_error(getitem(x, {Slice{}, 4}), "index 4 is out of bounds for axis 1 with size 4");
  expect_error(getitem(x, {1, 2, 3}),
               "too many indices for array: array is 2-dimensional, but 3 were indexed");
  expect_error(getitem(x, {Slice{1, 5, 0}}), "getitem: slice step cannot be zero");
  expect_error(getitem(Array(), {1}), "an empty Array handle");
}

// ------------------------------------------------------------------- take

NDArray TakeReference(const NDArray& x, const std::vector<Index>& indices, int axis) {
  std::vector<RefAxis> sel(x.rank());
  for (int d = 0; d < x.rank(); ++d) {
    if (d == axis) {
      for (Index i : indices) sel[d].positions.push_back(i < 0 ? i + x.shape()[d] : i);
    } else {
      sel[d].positions = PySlice(x.shape()[d], std::nullopt, std::nullopt, 1);
    }
  }
  return Select(x, sel);
}

TEST(IndexingTest, TakeAgainstReference) {
  std::mt19937 rng(2);
  const std::vector<std::vector<Index>> index_sets = {
      {0, 1, 2, 5, 9, 10},  // sorted
      {7, 0, 3, 10, 1},     // unsorted
      {4, 4, 4, 0, 4, 4},   // repeated
      {-1, -11, 5, -6},     // negative
      {},                   // empty
      {3},
  };
  for (const Shape& shape : {Shape{11, 6}, Shape{5, 11, 3}}) {
    for (DTypeId id : kDTypes) {
      for (int trial = 0; trial < 4; ++trial) {
        Shape chunks = trial == 0 ? Shape(shape.size(), 1) : testing_util::RandomChunks(shape, rng);
        Array x = Input(shape, chunks, id, 5);
        NDArray whole = Compute(x);
        const int axis = shape.size() == 2 ? 0 : 1;  // the axis of extent 11
        for (const auto& indices : index_sets) {
          std::string what = fmt::format("{} chunks {} indices [{}]", DType(id).name(),
                                         ShapeToString(chunks), fmt::join(indices, ", "));
          Array y = take(x, indices, axis);
          ASSERT_TRUE(y.ok()) << what << ": " << y.status().ToString();
          ExpectChunksWithin(y, x.chunksize(), what);
          ExpectSameBytes(Compute(y), TakeReference(whole, indices, axis), what);
        }
        // Along another axis, counted from the end.
        std::vector<Index> last = {2, -1, 0, 0};
        ExpectSameBytes(Compute(take(x, last, -1)), TakeReference(whole, last, x.ndim() - 1),
                        "last axis");
      }
    }
  }
}

TEST(IndexingTest, TakeOutputChunking) {
  Spec spec = SmallSpec();
  Array x = arange(0, 40, 1, {5}, std::nullopt, spec);
  using V = std::vector<Index>;
  // Sorted runs follow the input blocks.
  std::vector<Index> sorted;
  for (Index i = 3; i < 23; ++i) sorted.push_back(i);
  EXPECT_EQ(take(x, sorted, 0).chunks().AxisChunkSizes(0), V({2, 5, 5, 5, 3}));
  // A repeated index fills whole chunks.
  EXPECT_EQ(take(x, std::vector<Index>(12, 7), 0).chunks().AxisChunkSizes(0), V({5, 5, 2}));
  // Scattered indices share output blocks; rows list the sorted distinct blocks.
  Array y = take(x, {39, 0, 20, 1, 38}, 0);
  EXPECT_EQ(y.chunks().AxisChunkSizes(0), V({5}));
  const AxisMap& m = y.node()->maps[0].axes[0];
  EXPECT_EQ(V(m.InputsFor(0).begin(), m.InputsFor(0).end()), V({0, 4, 7}));
}

TEST(IndexingTest, TakeOf50MBChunksCapsTheBlocksPerTask) {
  // Eight 50 MB blocks along axis 0 and one index in each, interleaved: one
  // output block would read all eight (400 MB); the cap splits it.
  Spec spec;
  spec.allowed_mem = "400MB";
  spec.reserved_mem = "10MB";
  spec.workers = 2;
  const Shape shape = {20000, 2500};
  Array x = random::random(shape, {2500, 2500}, 3, spec);
  std::vector<Index> indices = {2, 2500 + 7, -1, 7500 + 1, 10000, 12500 + 2499, 15000 + 3, 17500};
  std::swap(indices[0], indices[5]);
  Array y = take(x, indices, 0);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_GE(y.chunks().grid_shape()[0], 2);
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  Result<NDArray> r = compute(y, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  rec->ExpectWithinBudget();
  ASSERT_EQ(r->shape(), Shape({8, 2500}));
  NDArray row = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, {1, 2500});
  for (size_t t = 0; t < indices.size(); ++t) {
    const Index i = indices[t] < 0 ? indices[t] + shape[0] : indices[t];
    FillSynthetic(row.view(), Box({i, 0}, {1, 2500}), shape, 3);
    EXPECT_EQ(0, std::memcmp(r->data() + t * 2500 * 8, row.data(), 2500 * 8)) << t;
  }
}

TEST(IndexingTest, TakeBadInput) {
  Array x = Input({10, 4}, {3, 3}, DTypeId::kFloat64, 1);
  auto expect_error = [](const Array& y, std::string_view text) {
    ASSERT_FALSE(y.ok()) << text;
    EXPECT_EQ(y.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(y.status().message().find(text), std::string_view::npos) << y.status().ToString();
  };
  expect_error(take(x, {1, 12}, 0), "take: index 12 is out of bounds for axis 0 with size 10");
  expect_error(take(x, {-5}, 1), "take: index -5 is out of bounds for axis 1 with size 4");
  expect_error(take(x, {0}, 2), "take: axis 2 is out of range for an array of rank 2");
  expect_error(take(zeros({}, {}, DTypeId::kFloat64, SmallSpec()), {0}, 0),
               "take: axis 0 is out of range for an array of rank 0");
}

TEST(IndexingTest, SameBytesOnInlineAndWithoutFusion) {
  auto build = [](ExecutorKind executor) {
    Spec spec = SmallSpec(executor);
    Array x = Input({23, 17, 5}, {4, 6, 2}, DTypeId::kFloat64, 9, spec);
    Array y = getitem(exp(x) * 2.0, {Slice{20, 1, -3}, Slice{2, std::nullopt, 2}, 3});
    return take(y + 1.0, {5, 0, 5, -1, 2}, 1);
  };
  NDArray threads = Compute(build(ExecutorKind::kThreads));
  NDArray inl = Compute(build(ExecutorKind::kInline));
  NDArray unfused = Compute(build(ExecutorKind::kThreads), /*fuse=*/false);
  ASSERT_EQ(threads.shape(), Shape({7, 5}));
  ExpectSameBytes(inl, threads, "inline");
  ExpectSameBytes(unfused, threads, "unfused");
}

}  // namespace
}  // namespace strata
