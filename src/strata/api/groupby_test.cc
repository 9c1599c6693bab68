// groupby_reduce: sum/mean/count/min/max against plain loops over the whole
// array, over many chunkings of the grouped and the other axes, negative
// labels, empty groups, several dtypes, given and defaulted num_groups,
// multi-round combines; the memory contract; bad input; identical bytes on
// every executor and with fusion on or off.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "strata/api/internal.h"
#include "strata/api/api_test_util.h"
#include "strata/base/temp_dir.h"
#include "strata/core/synthetic.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::RecordingCallback;
using testing_util::SmallSpec;

NDArray AsFloat64(const NDArray& a) {
  NDArray out = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, a.shape());
  STRATA_CHECK(Cast(a.view(), out.view()).ok());
  return out;
}

// An array of `dtype` with chunk-independent values: floats in [-1, 1) (as
// float32 when asked), integers in [-50, 50).
Array Data(const Shape& shape, const Shape& chunks, DType dtype, uint64_t seed,
           const Spec& spec = SmallSpec()) {
  if (dtype.is_integer()) return random::integers(-50, 50, shape, chunks, seed, dtype, spec);
  Array x = random::random(shape, chunks, seed, spec) * 2.0 - 1.0;
  return dtype == DType(DTypeId::kFloat64) ? x : astype(x, dtype);
}

// The group reduction of `x` (whole, any dtype) computed with plain loops, in
// float64: sum 0, count 0, mean NaN for empty groups; min/max NaN for floats,
// the identity for integers (min: the largest value).
std::vector<double> Reference(ReduceOp op, const NDArray& x, int axis,
                              const std::vector<int64_t>& labels, Index groups) {
  NDArray v = AsFloat64(x);
  Shape out_shape = x.shape();
  out_shape[axis] = groups;
  const Index n = NumElements(out_shape);
  std::vector<double> sum(n, 0), count(n, 0);
  std::vector<double> lo(n, std::numeric_limits<double>::infinity());
  std::vector<double> hi(n, -std::numeric_limits<double>::infinity());
  if (x.num_elements() > 0) {
    Shape idx(x.rank(), 0);
    Index i = 0;
    do {
      const double e = v.data_as<double>()[i++];
      const int64_t g = labels[idx[axis]];
      if (g < 0) continue;
      Shape o = idx;
      o[axis] = g;
      const Index k = LinearIndex(o, out_shape);
      sum[k] += e;
      count[k] += 1;
      lo[k] = std::min(lo[k], e);
      hi[k] = std::max(hi[k], e);
    } while (NextIndex(idx, x.shape()));
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double min_identity = nan, max_identity = nan;
  if (x.dtype() == DType(DTypeId::kInt32)) {
    min_identity = std::numeric_limits<int32_t>::max();
    max_identity = std::numeric_limits<int32_t>::min();
  }
  std::vector<double> out(n);
  for (Index k = 0; k < n; ++k) {
    switch (op) {
      case ReduceOp::kSum:
        out[k] = sum[k];
        break;
      case ReduceOp::kCount:
        out[k] = count[k];
        break;
      case ReduceOp::kMean:
        out[k] = count[k] > 0 ? sum[k] / count[k] : nan;
        break;
      case ReduceOp::kMin:
        out[k] = count[k] > 0 ? lo[k] : min_identity;
        break;
      case ReduceOp::kMax:
        out[k] = count[k] > 0 ? hi[k] : max_identity;
        break;
      default:
        ADD_FAILURE() << "no reference for " << ReduceOpName(op);
    }
  }
  return out;
}

// `got` against the reference: exact for counts, integers, min and max; sums
// and means within rounding of their dtype.
void ExpectMatches(const NDArray& got, const std::vector<double>& want, ReduceOp op) {
  ASSERT_EQ(got.num_elements(), static_cast<Index>(want.size()));
  NDArray g = AsFloat64(got);
  const bool exact = op == ReduceOp::kCount || op == ReduceOp::kMin || op == ReduceOp::kMax ||
                     got.dtype().is_integer();
  const double eps = got.dtype() == DType(DTypeId::kFloat32) ? 1e-5 : 1e-12;
  for (size_t k = 0; k < want.size(); ++k) {
    const double v = g.data_as<double>()[k];
    if (std::isnan(want[k])) {
      ASSERT_TRUE(std::isnan(v)) << "element " << k << ": " << v;
    } else if (exact) {
      ASSERT_EQ(v, want[k]) << "element " << k;
    } else {
      ASSERT_NEAR(v, want[k], eps * 64 * (1 + std::abs(want[k]))) << "element " << k;
    }
  }
}

std::vector<int64_t> RandomLabels(Index n, Index groups, std::mt19937& rng) {
  // -1 (skipped) and 0..groups-3: the last two groups stay empty.
  std::uniform_int_distribution<int64_t> d(-1, std::max<Index>(0, groups - 3));
  std::vector<int64_t> labels(n);
  for (int64_t& l : labels) l = d(rng);
  return labels;
}

constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kCount, ReduceOp::kMin,
                             ReduceOp::kMax};

TEST(GroupbyReduceTest, MatchesLoopsOverChunkingsDTypesAndOps) {
  std::mt19937 rng(11);
  struct Case {
    Shape shape;
    int axis;
  };
  const Case cases[] = {{{23}, 0}, {{5, 17}, 1}, {{17, 5}, 0}, {{4, 9, 6}, 1}, {{3, 8, 7}, -1}};
  const DTypeId dtypes[] = {DTypeId::kFloat64, DTypeId::kFloat32, DTypeId::kInt32};
  for (const Case& c : cases) {
    const int axis = c.axis < 0 ? c.axis + static_cast<int>(c.shape.size()) : c.axis;
    const Index n = c.shape[axis];
    for (DTypeId id : dtypes) {
      std::vector<Shape> chunkings = {c.shape, Shape(c.shape.size(), 1)};
      for (int t = 0; t < 3; ++t) chunkings.push_back(testing_util::RandomChunks(c.shape, rng));
      for (const Shape& chunks : chunkings) {
        const std::vector<int64_t> labels = RandomLabels(n, 6, rng);
        Array x = Data(c.shape, chunks, id, 3);
        Result<NDArray> whole = compute(x);
        ASSERT_TRUE(whole.ok()) << whole.status().ToString();
        int64_t max_label = -1;
        for (int64_t l : labels) max_label = std::max(max_label, l);
        for (ReduceOp op : kOps) {
          // num_groups given (6: trailing empty groups) and defaulted.
          for (Index groups : {Index{6}, Index{0}}) {
            SCOPED_TRACE(fmt::format("{} of {} {} chunks {} axis {} num_groups {}",
                                     ReduceOpName(op), DType(id).name(), ShapeToString(c.shape),
                                     ShapeToString(chunks), c.axis, groups));
            Array r = groupby_reduce(x, labels, c.axis, op, groups);
            ASSERT_TRUE(r.ok()) << r.status().ToString();
            const Index g = groups > 0 ? groups : max_label + 1;
            Shape want_shape = c.shape;
            want_shape[axis] = g;
            EXPECT_EQ(r.shape(), want_shape);
            EXPECT_EQ(r.dtype(), (*MakeReductionKernel(op, id))->result_dtype());
            Result<NDArray> got = compute(r);
            ASSERT_TRUE(got.ok()) << got.status().ToString();
            ASSERT_EQ(got->shape(), want_shape);
            ExpectMatches(*got, Reference(op, *whole, axis, labels, g), op);
          }
        }
      }
    }
  }
}

TEST(GroupbyReduceTest, ManyCombineRounds) {
  // 40 blocks of 1 along the grouped axis merged 2 or 3 at a time: 6 or 4
  // combine rounds, with ragged groups (40 -> 20 -> 10 -> 5 -> 3 -> 2 -> 1).
  const Shape shape = {40, 3};
  std::mt19937 rng(4);
  const std::vector<int64_t> labels = RandomLabels(40, 9, rng);
  for (int split : {2, 3}) {
    Array x = Data(shape, {1, 2}, DTypeId::kFloat64, 5);
    Result<NDArray> whole = compute(x);
    ASSERT_TRUE(whole.ok());
    for (ReduceOp op : kOps) {
      SCOPED_TRACE(fmt::format("{} split_every {}", ReduceOpName(op), split));
      // Dense states: one label per block would otherwise get sparse ones.
      Array r = internal_api::GroupbyReduce(x, labels, 0, op, 9, split, /*sparse=*/false);
      Result<std::shared_ptr<const Plan>> p = plan({r});
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      const std::string last_round =
          fmt::format("groupby-{}-combine-{}", ReduceOpName(op), split == 2 ? 6 : 4);
      EXPECT_NE((*p)->ToText().find(last_round), std::string::npos) << (*p)->ToText();
      Result<NDArray> got = compute(r);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ExpectMatches(*got, Reference(op, *whole, 0, labels, 9), op);
    }
  }
  // Automatic split_every with more blocks than one round merges.
  Array x = Data({100}, {1}, DTypeId::kInt32, 6);
  std::vector<int64_t> labels100 = RandomLabels(100, 5, rng);
  Result<NDArray> whole = compute(x);
  Result<NDArray> got = compute(groupby_reduce(x, labels100, 0, ReduceOp::kSum, 5));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectMatches(*got, Reference(ReduceOp::kSum, *whole, 0, labels100, 5), ReduceOp::kSum);
}

TEST(GroupbyReduceTest, BlocksNamingFewGroupsGetSparseStates) {
  // Months on blocks of days: each block names one or two of the groups, so
  // its partial holds states for those only (the dense form holds all G per
  // block). Ragged blocks, skipped (-1) positions, a group with no position,
  // NaN (skipped), host labels and labels as an in-memory array; results as
  // the dense form's and the loops', within the memory contract, with less
  // partial-state memory than the dense form.
  const Shape shape = {61, 5};
  std::vector<int64_t> labels(61);
  for (Index i = 0; i < 61; ++i) labels[i] = i / 9;  // groups 0..6
  labels[3] = labels[40] = -1;
  const Index G = 8;  // group 7 has no position
  NDArray lab = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt32, {61});
  for (Index i = 0; i < 61; ++i) lab.data_as<int32_t>()[i] = static_cast<int32_t>(labels[i]);
  Array clean = Data(shape, {4, 3}, DTypeId::kFloat64, 7);
  Array x = where(clean > 0.8, Scalar(std::nan("")), clean);
  Result<NDArray> whole = compute(clean);
  ASSERT_TRUE(whole.ok());
  // Bytes of the partial states (the "-partial" node of the graph).
  auto partial_bytes = [](const Array& r) {
    std::vector<const Node*> todo = {r.node().get()};
    while (!todo.empty()) {
      const Node* n = todo.back();
      todo.pop_back();
      if (n->op_name.find("-partial") != std::string::npos) return n->nbytes();
      for (const auto& in : n->inputs) todo.push_back(in.get());
    }
    return int64_t{-1};
  };
  for (int split : {0, 2}) {
    for (ReduceOp op :
         {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kCount, ReduceOp::kMin, ReduceOp::kMax,
          ReduceOp::kVar, ReduceOp::kArgmin, ReduceOp::kFirst, ReduceOp::kLast}) {
      SCOPED_TRACE(fmt::format("{} split_every {}", ReduceOpName(op), split));
      auto run = [&](const Array& r, RecordingCallback& rec) {
        ComputeOptions options;
        options.callbacks.push_back(std::shared_ptr<RecordingCallback>(&rec, [](auto*) {}));
        Result<NDArray> got = compute(r, options);
        EXPECT_TRUE(got.ok()) << got.status().ToString();
        rec.ExpectWithinBudget();
        return got.ok() ? std::move(got).value() : NDArray();
      };
      RecordingCallback sparse_rec, dense_rec, array_rec;
      GroupbyOptions o;
      o.num_groups = G;
      o.split_every = split;
      const Array rs = internal_api::GroupbyReduce(x, labels, 0, op, G, split);
      const Array rd = internal_api::GroupbyReduce(x, labels, 0, op, G, split, false);
      const Array ra = groupby_reduce(x, testing_util::Lazy(lab, {7}), 0, op, o);
      NDArray sparse = run(rs, sparse_rec);
      NDArray dense = run(rd, dense_rec);
      NDArray from_array = run(ra, array_rec);
      ASSERT_EQ(sparse.shape(), Shape({G, 5}));
      ASSERT_EQ(sparse.dtype(), dense.dtype());
      NDArray a = AsFloat64(sparse), b = AsFloat64(dense), c = AsFloat64(from_array);
      for (Index k = 0; k < a.num_elements(); ++k) {
        const double va = a.data_as<double>()[k], vb = b.data_as<double>()[k];
        if (std::isnan(vb)) {
          ASSERT_TRUE(std::isnan(va)) << k;
        } else {
          ASSERT_NEAR(va, vb, 1e-12 * (1 + std::abs(vb))) << k;
        }
        ASSERT_TRUE(std::memcmp(&a.data_as<double>()[k], &c.data_as<double>()[k], 8) == 0) << k;
      }
      // 16 blocks of 4 days name 21 (block, group) pairs: 21 states, not 16 x 8.
      EXPECT_GT(partial_bytes(rs), 0);
      EXPECT_LT(partial_bytes(rs), partial_bytes(rd) / 4);
      EXPECT_EQ(partial_bytes(ra), partial_bytes(rs));
    }
  }
  // Without NaN, against the loops.
  for (ReduceOp op : kOps) {
    Result<NDArray> got = compute(internal_api::GroupbyReduce(clean, labels, 0, op, G, 2));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ExpectMatches(*got, Reference(op, *whole, 0, labels, G), op);
  }
  // Along a later axis, with many rounds (one-wide blocks, split 2).
  Array y = Data({3, 40}, {2, 1}, DTypeId::kFloat64, 8);
  std::vector<int64_t> along(40);
  for (Index i = 0; i < 40; ++i) along[i] = i / 13;
  Result<NDArray> ywhole = compute(y);
  Result<NDArray> ygot = compute(internal_api::GroupbyReduce(y, along, 1, ReduceOp::kMean, 4, 2));
  ASSERT_TRUE(ygot.ok()) << ygot.status().ToString();
  ExpectMatches(*ygot, Reference(ReduceOp::kMean, *ywhole, 1, along, 4), ReduceOp::kMean);
}

TEST(GroupbyReduceTest, SparsePartialsReadTheirBlockInStrips) {
  // A Zarr array of blocks of 67 MB (4800 days x 1750 points), months of
  // 1000 days: a partial reads its chunk a strip at a time (at most 32 MiB,
  // the strip's blosc blocks decoded straight into it) into the states of
  // the groups it names, so it never holds the chunk whole; the results are
  // the dense form's, which reads whole chunks.
  const Shape shape = {9600, 1750};
  Array clean = random::random(shape, {4800, 1750}, 11);
  TempDir dir;
  ASSERT_TRUE(
      compute(to_zarr(where(clean > 0.9, Scalar(std::nan("")), clean), dir.path() + "/x.zarr"))
          .ok());
  Array x = from_zarr(dir.path() + "/x.zarr");
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  std::vector<int64_t> labels(shape[0]);
  for (Index i = 0; i < shape[0]; ++i) labels[i] = i / 1000;
  const Index G = 10;
  RecordingCallback rec;
  ComputeOptions options;
  options.callbacks.push_back(std::shared_ptr<RecordingCallback>(&rec, [](auto*) {}));
  Result<NDArray> sparse =
      compute(internal_api::GroupbyReduce(x, labels, 0, ReduceOp::kMean, G, 0), options);
  ASSERT_TRUE(sparse.ok()) << sparse.status().ToString();
  rec.ExpectWithinBudget();
  const int64_t block_bytes = int64_t{4800} * 1750 * 8;
  int partials = 0;
  for (const TaskEndEvent& e : rec.events) {
    if (e.op_name.find("-partial") == std::string::npos) continue;
    ++partials;
    // A strip of 33.6 MB and the blosc blocks being decoded (measured 43 MB);
    // the chunk read whole would be 67 MB.
    EXPECT_LT(e.measured_peak, block_bytes * 3 / 4) << ShapeToString(e.block);
  }
  EXPECT_EQ(partials, 2);
  Result<NDArray> dense =
      compute(internal_api::GroupbyReduce(x, labels, 0, ReduceOp::kMean, G, 0, false));
  ASSERT_TRUE(dense.ok()) << dense.status().ToString();
  ASSERT_EQ(sparse->shape(), dense->shape());
  for (Index k = 0; k < sparse->num_elements(); ++k) {
    const double a = sparse->data_as<double>()[k], b = dense->data_as<double>()[k];
    ASSERT_NEAR(a, b, 1e-12 * (1 + std::abs(b))) << k;
  }
}

TEST(GroupbyReduceTest, ZeroSizeAndAllSkippedInputs) {
  // No positions along the grouped axis: every group is empty.
  Array x = Data({0, 4}, {3, 2}, DTypeId::kFloat64, 1);
  Result<NDArray> s = compute(groupby_reduce(x, {}, 0, ReduceOp::kSum, 3));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->shape(), Shape({3, 4}));
  for (double v : s->values<double>()) EXPECT_EQ(v, 0);
  Result<NDArray> m = compute(groupby_reduce(x, {}, 0, ReduceOp::kMean, 3));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  for (double v : m->values<double>()) EXPECT_TRUE(std::isnan(v));
  Result<NDArray> c = compute(groupby_reduce(x, {}, 0, ReduceOp::kCount, 3));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->dtype(), DType(DTypeId::kInt64));
  for (int64_t v : c->values<int64_t>()) EXPECT_EQ(v, 0);
  // A zero-size other axis.
  Array y = Data({5, 0}, {2, 1}, DTypeId::kInt32, 1);
  Result<NDArray> e = compute(groupby_reduce(y, {0, 1, 0, 1, 2}, 0, ReduceOp::kMax));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->shape(), Shape({3, 0}));
  // Only negative labels and no num_groups: zero groups.
  Array z = Data({4, 3}, {2, 2}, DTypeId::kFloat64, 1);
  Result<NDArray> none = compute(groupby_reduce(z, {-1, -1, -5, -1}, 0, ReduceOp::kMean));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->shape(), Shape({0, 3}));
}

TEST(GroupbyReduceTest, MeanPerCountryWithinBudget) {
  // The weather workload's step: (time, points) float64 in ~50 MB chunks,
  // averaged per country over points, under a tight budget.
  Spec spec;
  spec.allowed_mem = "400MB";
  spec.reserved_mem = "10MB";
  spec.workers = 2;
  const Shape shape = {2500, 10000};
  const Index kCountries = 180;
  std::vector<int64_t> labels(shape[1]);
  for (Index p = 0; p < shape[1]; ++p) {
    labels[p] = (p * 7919) % 199 < kCountries ? (p * 7919) % 199 : -1;  // ocean: -1
  }
  Array x = random::random(shape, {1250, 5000}, 1, spec);  // 50 MB chunks
  Array r = groupby_reduce(x, labels, 1, ReduceOp::kMean, kCountries);
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  Result<NDArray> got = compute(r, options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  rec->ExpectWithinBudget();
  ASSERT_EQ(got->shape(), Shape({2500, kCountries}));
  // Spot-check the first rows against loops over the synthetic values.
  NDArray head = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, {2, shape[1]});
  FillSynthetic(head.view(), Box({0, 0}, {2, shape[1]}), shape, 1);
  std::vector<double> want = Reference(ReduceOp::kMean, head, 1, labels, kCountries);
  for (Index k = 0; k < 2 * kCountries; ++k) {
    ASSERT_NEAR(got->data_as<double>()[k], want[k], 1e-12) << k;
  }
}

TEST(GroupbyReduceTest, GroupStatesOverTheBudgetAreRefused) {
  Spec spec;
  spec.allowed_mem = "400MB";
  spec.reserved_mem = "10MB";
  Array x = random::random({2500, 10000}, {1250, 5000}, 1, spec);
  std::vector<int64_t> labels(10000, 0);
  // 1250 rows x 100,000 groups x (count, sum) float64 = 2 GB per state.
  Array r = groupby_reduce(x, labels, 1, ReduceOp::kMean, 100000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("groupby_reduce: the group states of one block (1250 values "
                                      "per group x 100000 groups x 2 float64) take 2.00 GB; merging them "
                                      "needs 5 at once (10.0 GB), over allowed_mem 400 MB"),
            std::string_view::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("fewer groups"), std::string_view::npos);
  // Smaller chunks along the other axis make it fit: 32 MB states.
  Array fits = groupby_reduce(x.rechunk({20, 5000}), labels, 1, ReduceOp::kMean, 100000);
  EXPECT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_TRUE(plan({fits}).ok());
}

TEST(GroupbyReduceTest, BadInputGivesClearErrors) {
  Array x = Data({4, 6}, {2, 3}, DTypeId::kFloat64, 1);
  auto expect_invalid = [](const Array& r, std::string_view text) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(text), std::string_view::npos) << r.status().ToString();
  };
  expect_invalid(groupby_reduce(x, {0, 1, 2}, 1, ReduceOp::kSum),
                 "groupby_reduce: 3 labels given for axis 1 of extent 6");
  expect_invalid(groupby_reduce(x, {0, 1, 0, 1}, 2, ReduceOp::kSum),
                 "groupby_reduce: axis 2 is out of range for an array of rank 2");
  expect_invalid(
      groupby_reduce(x, {0, 1, 0, 1}, 0, ReduceOp::kProd),
      "groupby_reduce: op 'prod' is not supported (sum, mean, count, min, max, var, std, "
      "argmin, argmax, first, last and their nan* forms are)");
  expect_invalid(groupby_reduce(x, {0, 1, 0, 1}, 0, ReduceOp::kAll), "op 'all'");
  expect_invalid(groupby_reduce(x, {0, 3, 0, 1}, 0, ReduceOp::kSum, 3),
                 "groupby_reduce: label 3 at position 1 is not below num_groups 3");
  expect_invalid(groupby_reduce(x, {0, 1, 0, 1}, 0, ReduceOp::kSum, -2),
                 "groupby_reduce: num_groups -2 is negative");
  // A stray huge label makes the default num_groups absurd: an error, not an overflow.
  expect_invalid(groupby_reduce(x, {0, 1, int64_t{1} << 62, 1}, 0, ReduceOp::kSum),
                 "groupby_reduce: the group states of one block");
  Array z = astype(x, DTypeId::kComplex128);
  expect_invalid(groupby_reduce(z, {0, 1, 0, 1}, 0, ReduceOp::kMin),
                 "groupby_reduce: min is not defined for complex128");
  expect_invalid(internal_api::GroupbyReduce(x, {0, 1, 0, 1}, 0, ReduceOp::kSum, 0, 1),
                 "split_every 1 must be at least 2");
  // An error input passes its error on.
  Array bad = sum(x, {7});
  Array r = groupby_reduce(bad, {0}, 0, ReduceOp::kSum);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), bad.status().message());
}

TEST(GroupbyReduceTest, SameBytesOnInlineAndThreadsAndWithoutFusion) {
  std::mt19937 rng(9);
  const std::vector<int64_t> labels = RandomLabels(37, 8, rng);
  auto build = [&](ExecutorKind executor, ReduceOp op) {
    Spec spec = SmallSpec();
    spec.executor = executor;
    Array x = random::random({37, 11}, {4, 5}, 3, spec);
    return internal_api::GroupbyReduce(exp(x) - 0.5, labels, 0, op, 8, 3);
  };
  for (ReduceOp op : kOps) {
    SCOPED_TRACE(ReduceOpName(op));
    PlanOptions unfused;
    unfused.disabled_passes.insert("fuse");
    Result<NDArray> threads = compute(build(ExecutorKind::kThreads, op));
    Result<NDArray> no_fusion = compute(build(ExecutorKind::kThreads, op), {}, unfused);
    Result<NDArray> inl = compute(build(ExecutorKind::kInline, op));
    ASSERT_TRUE(threads.ok() && no_fusion.ok() && inl.ok());
    ASSERT_EQ(threads->nbytes(), inl->nbytes());
    ASSERT_EQ(threads->nbytes(), no_fusion->nbytes());
    EXPECT_EQ(0, std::memcmp(threads->data(), inl->data(), threads->nbytes()));
    EXPECT_EQ(0, std::memcmp(threads->data(), no_fusion->data(), threads->nbytes()));
  }
}

}  // namespace
}  // namespace strata
