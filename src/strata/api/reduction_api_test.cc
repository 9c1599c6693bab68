// Reductions through the public API: sum, prod, mean, min, max, var, std, all,
// any, argmin, argmax and count_nonzero over every axis subset, with and
// without keepdims and with several split_every values (so one, two and
// several combine rounds), over whole, ragged, size-1 and random chunkings
// and zero-size arrays, for float64, int32 and bool input; each against a
// reference computed with plain loops over the whole input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "strata/api/api_test_util.h"
#include "strata/base/tuning.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::Chunkings;
using testing_util::SmallSpec;

NDArray ToDType(const NDArray& a, DType dtype) {
  NDArray out = *NDArray::Allocate(*MemoryPool::Default(), dtype, a.shape());
  STRATA_CHECK(Cast(a.view(), out.view()).ok());
  return out;
}

enum class Kind { kFloat64, kInt32, kBool };

std::string KindName(Kind k) {
  return k == Kind::kFloat64 ? "float64" : k == Kind::kInt32 ? "int32" : "bool";
}

// Chunk-independent input: floats in [0, 1), integers in [-3, 4) (many ties
// and zeros), or booleans.
Array Input(Kind kind, const Shape& shape, const Shape& chunks, uint64_t seed) {
  switch (kind) {
    case Kind::kFloat64:
      return random::random(shape, chunks, seed, SmallSpec());
    case Kind::kInt32:
      return random::integers(-3, 4, shape, chunks, seed, DTypeId::kInt32, SmallSpec());
    case Kind::kBool:
      return random::random(shape, chunks, seed, SmallSpec()) > 0.6;
  }
  return Array();
}

// Reductions checked here, with the result dtype the Array API asks for.
struct OpCase {
  ReduceOp op;
  bool exact;  // compare exactly (else with a tolerance)
};

DType ExpectedDType(ReduceOp op, Kind kind) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kProd:
      return kind == Kind::kFloat64 ? DTypeId::kFloat64 : DTypeId::kInt64;
    case ReduceOp::kMean:
    case ReduceOp::kVar:
    case ReduceOp::kStd:
      return DTypeId::kFloat64;
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return kind == Kind::kFloat64 ? DTypeId::kFloat64
             : kind == Kind::kInt32 ? DTypeId::kInt32
                                    : DTypeId::kBool;
    case ReduceOp::kAll:
    case ReduceOp::kAny:
      return DTypeId::kBool;
    default:
      return DTypeId::kInt64;  // argmin, argmax, count_nonzero
  }
}

const std::vector<OpCase>& Ops() {
  static const std::vector<OpCase> ops = {
      {ReduceOp::kSum, false},   {ReduceOp::kProd, false},  {ReduceOp::kMean, false},
      {ReduceOp::kMin, true},    {ReduceOp::kMax, true},    {ReduceOp::kVar, false},
      {ReduceOp::kStd, false},   {ReduceOp::kAll, true},    {ReduceOp::kAny, true},
      {ReduceOp::kArgmin, true}, {ReduceOp::kArgmax, true}, {ReduceOp::kCountNonzero, true},
  };
  return ops;
}

bool NeedsIdentity(ReduceOp op) {
  return op == ReduceOp::kMin || op == ReduceOp::kMax || op == ReduceOp::kArgmin ||
         op == ReduceOp::kArgmax;
}

// The reduction of `x` (whole, float64 values; `xi` the same as int64) over
// `axes` (sorted, non-negative) with plain loops: the result's values as
// float64 and as int64 (wrapping like numpy for integer sums and products).
struct Reference {
  Shape shape;  // without keepdims
  std::vector<double> real;
  std::vector<int64_t> integer;
};

Reference Reduce(ReduceOp op, const NDArray& x, const NDArray& xi, const std::vector<int>& axes,
                 int ddof) {
  const Shape& shape = x.shape();
  const int rank = x.rank();
  auto reduced = [&](int a) { return std::find(axes.begin(), axes.end(), a) != axes.end(); };
  Reference ref;
  for (int a = 0; a < rank; ++a)
    if (!reduced(a)) ref.shape.push_back(shape[a]);
  const Index n_out = NumElements(ref.shape);
  // Each output's inputs in C order, with their positions (along the single
  // reduced axis, or flat when all axes are reduced).
  std::vector<std::vector<double>> vals(n_out);
  std::vector<std::vector<int64_t>> ivals(n_out), pos(n_out);
  if (NumElements(shape) > 0) {
    Shape idx(rank, 0);
    do {
      Shape o;
      for (int a = 0; a < rank; ++a)
        if (!reduced(a)) o.push_back(idx[a]);
      const Index k = LinearIndex(o, ref.shape);
      const Index flat = LinearIndex(idx, shape);
      vals[k].push_back(x.data_as<double>()[flat]);
      ivals[k].push_back(xi.data_as<int64_t>()[flat]);
      pos[k].push_back(axes.size() == 1 && rank > 1 ? idx[axes[0]] : flat);
    } while (NextIndex(idx, shape));
  }
  for (Index k = 0; k < n_out; ++k) {
    const std::vector<double>& v = vals[k];
    const double n = static_cast<double>(v.size());
    double r = 0;
    int64_t ri = 0;
    switch (op) {
      case ReduceOp::kSum: {
        uint64_t s = 0;
        for (double e : v) r += e;
        for (int64_t e : ivals[k]) s += static_cast<uint64_t>(e);
        ri = static_cast<int64_t>(s);
        break;
      }
      case ReduceOp::kProd: {
        uint64_t p = 1;
        r = 1;
        for (double e : v) r *= e;
        for (int64_t e : ivals[k]) p *= static_cast<uint64_t>(e);
        ri = static_cast<int64_t>(p);
        break;
      }
      case ReduceOp::kMean: {
        for (double e : v) r += e;
        r = v.empty() ? std::numeric_limits<double>::quiet_NaN() : r / n;
        break;
      }
      case ReduceOp::kVar:
      case ReduceOp::kStd: {
        double mu = 0, m2 = 0;
        for (double e : v) mu += e;
        mu /= n;
        for (double e : v) m2 += (e - mu) * (e - mu);
        r = n - ddof > 0 ? m2 / (n - ddof) : std::numeric_limits<double>::quiet_NaN();
        if (op == ReduceOp::kStd) r = std::sqrt(r);
        break;
      }
      case ReduceOp::kMin:
      case ReduceOp::kMax:
      case ReduceOp::kArgmin:
      case ReduceOp::kArgmax: {
        const bool want_min = op == ReduceOp::kMin || op == ReduceOp::kArgmin;
        size_t best = 0;
        for (size_t j = 1; j < v.size(); ++j) {
          if (want_min ? v[j] < v[best] : v[j] > v[best]) best = j;  // first on ties
        }
        const bool arg = op == ReduceOp::kArgmin || op == ReduceOp::kArgmax;
        r = arg ? static_cast<double>(pos[k][best]) : v[best];
        ri = arg ? pos[k][best] : ivals[k][best];
        break;
      }
      case ReduceOp::kAll:
        r = 1;
        for (double e : v) r = r && e != 0;
        ri = static_cast<int64_t>(r);
        break;
      case ReduceOp::kAny:
        for (double e : v) r = r || e != 0;
        ri = static_cast<int64_t>(r);
        break;
      case ReduceOp::kCountNonzero:
        for (double e : v) r += e != 0;
        ri = static_cast<int64_t>(r);
        break;
      default:
        ADD_FAILURE() << "unexpected op";
    }
    ref.real.push_back(r);
    ref.integer.push_back(ri);
  }
  return ref;
}

Array Build(ReduceOp op, const Array& x, const std::vector<int>& axes, ReduceOptions o) {
  if (op == ReduceOp::kArgmin || op == ReduceOp::kArgmax) {
    std::optional<int> axis;
    if (!axes.empty()) axis = axes[0];
    return op == ReduceOp::kArgmin ? argmin(x, axis, o) : argmax(x, axis, o);
  }
  return reduce(op, x, axes, o);
}

// Checks `got` against `ref` (`keepdims` puts 1s at the reduced axes).
void ExpectMatches(const NDArray& got, const Reference& ref, const OpCase& c, Kind kind,
                   const Shape& in_shape, const std::vector<int>& axes, bool keepdims,
                   const std::string& what) {
  ASSERT_EQ(got.dtype(), ExpectedDType(c.op, kind)) << what;
  Shape want_shape = ref.shape;
  if (keepdims) {
    want_shape.clear();
    for (int a = 0; a < static_cast<int>(in_shape.size()); ++a) {
      bool r = std::find(axes.begin(), axes.end(), a) != axes.end();
      want_shape.push_back(r ? 1 : in_shape[a]);
    }
  }
  ASSERT_EQ(got.shape(), want_shape) << what;
  const bool integer_result = got.dtype().is_integer();
  NDArray as_int = ToDType(got, DTypeId::kInt64);
  NDArray as_real = ToDType(got, DTypeId::kFloat64);
  for (size_t k = 0; k < ref.real.size(); ++k) {
    if (integer_result) {
      ASSERT_EQ(as_int.data_as<int64_t>()[k], ref.integer[k]) << what << " element " << k;
      continue;
    }
    const double g = as_real.data_as<double>()[k], w = ref.real[k];
    if (std::isnan(w)) {
      ASSERT_TRUE(std::isnan(g)) << what << " element " << k << ": " << g;
    } else if (c.exact) {
      ASSERT_EQ(g, w) << what << " element " << k;
    } else {
      // Relative for products (tiny values), else relative to max(1, |w|).
      const double scale = c.op == ReduceOp::kProd ? std::abs(w) : std::max(1.0, std::abs(w));
      ASSERT_NEAR(g, w, 1e-12 * scale) << what << " element " << k;
    }
  }
}

// Every op over every axis subset of `shape`, for every input kind, over
// chunkings; each (chunking, subset) runs all ops in one compute.
void CheckShape(const Shape& shape, const std::vector<std::vector<int>>& subsets, uint32_t seed) {
  const int rank = static_cast<int>(shape.size());
  const int splits[] = {0, 2, 3, 0, 5};
  int variant = 0;
  for (Kind kind : {Kind::kFloat64, Kind::kInt32, Kind::kBool}) {
    // The reference input: the whole array as one chunk.
    Shape whole(rank);
    for (int i = 0; i < rank; ++i) whole[i] = std::max<Index>(1, shape[i]);
    Result<NDArray> xr = compute(Input(kind, shape, whole, seed));
    ASSERT_TRUE(xr.ok()) << xr.status().ToString();
    NDArray x = ToDType(*xr, DTypeId::kFloat64), xi = ToDType(*xr, DTypeId::kInt64);
    for (const Shape& chunks : Chunkings(shape, seed + 1, 1)) {
      Array in = Input(kind, shape, chunks, seed);
      // Every subset and op of this chunking in one compute.
      struct Output {
        const OpCase* c;
        std::vector<int> axes_in, all_axes;
        ReduceOptions o;
      };
      std::vector<Array> outs;
      std::vector<Output> expected;
      for (const std::vector<int>& axes_in : subsets) {
        std::vector<int> all_axes;
        for (int a : axes_in) all_axes.push_back(a < 0 ? a + rank : a);
        std::sort(all_axes.begin(), all_axes.end());
        if (all_axes.empty())
          for (int a = 0; a < rank; ++a) all_axes.push_back(a);
        bool empty_reduction = false;
        for (int a : all_axes) empty_reduction = empty_reduction || shape[a] == 0;
        ReduceOptions o;
        o.keepdims = variant % 2 == 1;
        o.split_every = splits[variant % 5];
        ++variant;
        for (const OpCase& c : Ops()) {
          if (kind == Kind::kBool &&
              (c.op == ReduceOp::kVar || c.op == ReduceOp::kStd || c.op == ReduceOp::kProd))
            continue;
          const bool arg = c.op == ReduceOp::kArgmin || c.op == ReduceOp::kArgmax;
          if (arg && axes_in.size() > 1) continue;
          Array r = Build(c.op, in, axes_in, o);
          if (empty_reduction && NeedsIdentity(c.op)) {
            ASSERT_FALSE(r.ok()) << ReduceOpName(c.op);
            EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
            EXPECT_NE(r.status().message().find(
                          "zero-size reduction over an axis of extent 0 has no identity"),
                      std::string_view::npos)
                << r.status().ToString();
            continue;
          }
          ASSERT_TRUE(r.ok()) << ReduceOpName(c.op) << ": " << r.status().ToString();
          outs.push_back(r);
          expected.push_back({&c, axes_in, all_axes, o});
        }
      }
      Result<std::vector<NDArray>> got = compute(outs);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      for (size_t j = 0; j < outs.size(); ++j) {
        const Output& e = expected[j];
        std::string what = std::string(ReduceOpName(e.c->op)) + " of " + KindName(kind) + " " +
                           ShapeToString(shape) + " chunks " + ShapeToString(chunks) + " axes " +
                           ShapeToString(Shape(e.axes_in.begin(), e.axes_in.end())) +
                           (e.o.keepdims ? " keepdims" : "") + " split_every " +
                           std::to_string(e.o.split_every);
        Reference ref = Reduce(e.c->op, x, xi, e.all_axes, 0);
        ExpectMatches((*got)[j], ref, *e.c, kind, shape, e.all_axes, e.o.keepdims, what);
      }
    }
  }
}

TEST(ReductionApiTest, Rank3OverEveryAxisSubset) {
  CheckShape({5, 4, 3}, {{}, {0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {-1}, {2, 0}, {0, 1, 2}}, 1);
}

TEST(ReductionApiTest, ExtentOneAxesAndVectors) {
  CheckShape({1, 9, 1}, {{}, {0}, {1}, {2}, {0, 2}, {-2}}, 2);
  CheckShape({11}, {{}, {0}, {-1}}, 3);
}

TEST(ReductionApiTest, RankZero) {
  // Reducing a scalar over all (no) axes gives the value itself.
  CheckShape({}, {{}}, 4);
}

TEST(ReductionApiTest, ZeroSizeArrays) {
  // sum 0, prod 1, mean/var/std NaN, all true, any false, count 0; min, max,
  // argmin and argmax refuse an empty reduced axis.
  CheckShape({0, 3}, {{}, {0}, {1}}, 5);
  CheckShape({3, 0, 2}, {{0}, {1}, {2}, {0, 2}}, 6);
}

TEST(ReductionApiTest, VarAndStdWithDdof) {
  const Shape shape = {6, 5};
  Result<NDArray> xr = compute(Input(Kind::kFloat64, shape, shape, 7));
  ASSERT_TRUE(xr.ok());
  NDArray xi = ToDType(*xr, DTypeId::kInt64);
  for (const Shape& chunks : Chunkings(shape, 8, 1)) {
    Array x = Input(Kind::kFloat64, shape, chunks, 7);
    for (int ddof : {1, 2}) {
      for (const std::vector<int>& axes : std::vector<std::vector<int>>{{0}, {1}, {}}) {
        ReduceOptions o;
        o.ddof = ddof;
        o.split_every = 2;
        std::vector<int> all_axes = axes.empty() ? std::vector<int>{0, 1} : axes;
        Result<std::vector<NDArray>> got = compute({var(x, axes, o), std(x, axes, o)});
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        std::string what = "ddof " + std::to_string(ddof) + " chunks " + ShapeToString(chunks);
        ExpectMatches((*got)[0], Reduce(ReduceOp::kVar, *xr, xi, all_axes, ddof),
                      {ReduceOp::kVar, false}, Kind::kFloat64, shape, all_axes, false,
                      "var " + what);
        ExpectMatches((*got)[1], Reduce(ReduceOp::kStd, *xr, xi, all_axes, ddof),
                      {ReduceOp::kStd, false}, Kind::kFloat64, shape, all_axes, false,
                      "std " + what);
      }
    }
  }
}

TEST(ReductionApiTest, VarIsStableForLargeOffsets) {
  // 1e9 + u with u uniform in [0, 1): the naive sum-of-squares formula loses
  // every digit; the parallel merge keeps the variance of u.
  const Shape shape = {1000};
  Result<NDArray> u = compute(random::random(shape, shape, 9, SmallSpec()));
  ASSERT_TRUE(u.ok());
  double mu = 0, m2 = 0;
  for (double v : u->values<double>()) mu += v;
  mu /= 1000;
  for (double v : u->values<double>()) m2 += (v - mu) * (v - mu);
  for (Index c : {1, 7, 64, 1000}) {
    Result<NDArray> got = compute(var(random::random(shape, {c}, 9, SmallSpec()) + 1e9));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_NEAR(*got->data_as<double>(), m2 / 1000, 1e-6) << "chunks " << c;
  }
}

TEST(ReductionApiTest, ResultsIndependentOfSplitEvery) {
  // Exact ops give the same bytes for every tree shape; float sums agree to
  // rounding.
  const Shape shape = {40, 9};
  Array x = random::integers(-100, 100, shape, {3, 2}, 11, DTypeId::kInt64, SmallSpec());
  std::vector<NDArray> first;
  for (int split : {2, 3, 7, 16, 0}) {
    ReduceOptions o;
    o.split_every = split;
    Result<std::vector<NDArray>> got =
        compute({sum(x, {0}, o), min(x, {}, o), argmax(x, 0, o), argmin(x, std::nullopt, o),
                 count_nonzero(x, {0, 1}, o), prod(x % 3 + 2, {0}, o)});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    if (first.empty()) {
      first = std::move(got).value();
      continue;
    }
    for (size_t j = 0; j < first.size(); ++j) {
      EXPECT_TRUE(ArraysEqual((*got)[j].view(), first[j].view()))
          << "output " << j << " split " << split;
    }
  }
}

TEST(ReductionApiTest, LargeStatesAreMergedFewAtATime) {
  // A mean over the first axis of 8 blocks whose (sum) states are 16 MB
  // each: a combine merges at most Tuning::max_combine_state_bytes (64 MB) of
  // them, 4 here, so two rounds (8 -> 2 -> 1), not one round of all 8; the
  // states it waits for stay few and are reused. Small states still merge up
  // to max_split_every at once.
  if (GetTuning().tiny) GTEST_SKIP() << "STRATA_TINY merges 2 at a time anyway";
  Spec spec;
  spec.allowed_mem = "2GB";
  spec.workers = 2;
  Array x = random::random({8, 2000, 1000}, {1, 2000, 1000}, 3, spec);
  Array m = mean(x, {0});
  Result<std::shared_ptr<const Plan>> p = plan({m});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const std::string text = (*p)->ToText();
  EXPECT_NE(text.find("mean-combine-2"), std::string::npos) << text;
  EXPECT_EQ(text.find("mean-combine-3"), std::string::npos) << text;
  auto rec = std::make_shared<testing_util::RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  Result<NDArray> got = compute(m, options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  rec->ExpectWithinBudget();
  Result<NDArray> whole = compute(x);
  ASSERT_TRUE(whole.ok());
  for (Index k : {Index{0}, Index{1234567}, Index{1999999}}) {
    double s = 0;
    for (Index t = 0; t < 8; ++t) s += whole->data_as<double>()[t * 2000000 + k];
    EXPECT_NEAR(got->data_as<double>()[k], s / 8, 1e-12) << k;
  }
  // 8 MB blocks of small states (a mean over the last axis): one round.
  Array y = random::random({16, 1000, 1000}, {1, 1000, 1000}, 4, spec);
  Result<std::shared_ptr<const Plan>> q = plan({mean(y, {0, 2})});
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_NE((*q)->ToText().find("mean-combine-1"), std::string::npos);
  EXPECT_EQ((*q)->ToText().find("mean-combine-2"), std::string::npos) << (*q)->ToText();
}

// Quadratic means' geometry, scaled down: 20 blocks along the reduced axis,
// their states merged 4 at a time, on 2 workers. Fusing the partials into
// the first combine would make 5 tasks of 4 blocks, 3 rounds (12 blocks'
// time) where the 20 partials take 10: declined. A mean's state is its sum
// alone, half a (count, sum) tuple.
TEST(ReductionApiTest, FusionKeepsEveryWorkerBusy) {
  if (GetTuning().tiny) GTEST_SKIP() << "STRATA_TINY merges 2 at a time anyway";
  // A budget of 4 states of 480 kB per combine (quadratic means' is
  // max_combine_state_bytes).
  Spec spec;
  spec.allowed_mem = "7MB";
  spec.reserved_mem = "1MB";
  spec.workers = 2;
  Array x = random::random({20, 300, 200}, {1, 300, 200}, 5, spec);
  Array m = mean(x * x, {0});
  Result<std::shared_ptr<const Plan>> p = plan({m});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const std::string text = (*p)->ToText();
  int seen = 0;
  for (const PlannedOp& op : (*p)->ops()) {
    if (op.node->op_name == "mean-partial") {
      ++seen;
      EXPECT_TRUE(op.materialized) << text;
      EXPECT_EQ(op.node->num_blocks(), 20) << text;
      EXPECT_EQ(op.node->shape.back(), 1) << "one state slot\n" << text;
    }
    if (op.node->op_name == "mean-combine-1") {
      ++seen;
      EXPECT_EQ(op.node->num_blocks(), 5) << text;
    }
  }
  EXPECT_EQ(seen, 2) << text;
  EXPECT_NE(text.find("20 tasks would become 5, taking 12 of their tasks' time on 2 workers "
                      "instead of 10"),
            std::string::npos)
      << text;
  Result<NDArray> got = compute(m);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  Result<NDArray> whole = compute(x);
  ASSERT_TRUE(whole.ok());
  for (Index k : {Index{0}, Index{31337}, Index{59999}}) {
    double s = 0;
    for (Index t = 0; t < 20; ++t) {
      const double v = whole->data_as<double>()[t * 60000 + k];
      s += v * v;
    }
    EXPECT_NEAR(got->data_as<double>()[k], s / 20, 1e-12) << k;
  }
}

TEST(ReductionApiTest, ResultDTypesOfOtherInputs) {
  // uint8 sums to uint64 and wraps like numpy; float32 accumulates in double
  // precision and rounds once; int8 min/max keep int8.
  const Shape shape = {9, 7};
  Array u8 = random::integers(0, 256, shape, {4, 3}, 12, DTypeId::kUInt8, SmallSpec());
  Array f32 = astype(random::random(shape, {2, 5}, 13, SmallSpec()), DTypeId::kFloat32);
  Array i8 = random::integers(-128, 128, shape, {9, 1}, 14, DTypeId::kInt8, SmallSpec());
  Result<std::vector<NDArray>> got = compute(
      {sum(u8, {0}), prod(u8, {}), sum(f32, {1}), mean(f32), var(f32, {0}), min(i8, {1}), max(i8)});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  Result<std::vector<NDArray>> whole =
      compute({u8.rechunk(shape), f32.rechunk(shape), i8.rechunk(shape)});
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  const uint8_t* u = (*whole)[0].data_as<uint8_t>();
  const float* f = (*whole)[1].data_as<float>();
  const int8_t* s = (*whole)[2].data_as<int8_t>();
  const std::vector<NDArray>& r = *got;
  ASSERT_EQ(r[0].dtype(), DType(DTypeId::kUInt64));
  ASSERT_EQ(r[1].dtype(), DType(DTypeId::kUInt64));
  ASSERT_EQ(r[2].dtype(), DType(DTypeId::kFloat32));
  ASSERT_EQ(r[3].dtype(), DType(DTypeId::kFloat32));
  ASSERT_EQ(r[4].dtype(), DType(DTypeId::kFloat32));
  ASSERT_EQ(r[5].dtype(), DType(DTypeId::kInt8));
  ASSERT_EQ(r[6].dtype(), DType(DTypeId::kInt8));
  uint64_t product = 1;
  double total = 0;
  int8_t most = -128;
  for (Index i = 0; i < 63; ++i) {
    product *= u[i];
    total += f[i];
    most = std::max(most, s[i]);
  }
  EXPECT_EQ(*r[1].data_as<uint64_t>(), product);
  EXPECT_EQ(*r[3].data_as<float>(), static_cast<float>(total / 63));
  EXPECT_EQ(*r[6].data_as<int8_t>(), most);
  for (Index j = 0; j < 7; ++j) {
    uint64_t column = 0;
    double mu = 0, m2 = 0;
    for (Index i = 0; i < 9; ++i) {
      column += u[i * 7 + j];
      mu += f[i * 7 + j];
    }
    mu /= 9;
    for (Index i = 0; i < 9; ++i) m2 += (f[i * 7 + j] - mu) * (f[i * 7 + j] - mu);
    EXPECT_EQ(r[0].data_as<uint64_t>()[j], column) << j;
    EXPECT_NEAR(r[4].data_as<float>()[j], m2 / 9, 1e-7) << j;
  }
  for (Index i = 0; i < 9; ++i) {
    double row = 0;
    int8_t least = 127;
    for (Index j = 0; j < 7; ++j) {
      row += f[i * 7 + j];
      least = std::min(least, s[i * 7 + j]);
    }
    EXPECT_EQ(r[2].data_as<float>()[i], static_cast<float>(row)) << i;
    EXPECT_EQ(r[5].data_as<int8_t>()[i], least) << i;
  }
}

TEST(ReductionApiTest, BadAxes) {
  Array x = random::random({4, 5}, {2, 5}, 1, SmallSpec());
  auto expect_invalid = [](const Array& a, std::string_view text) {
    ASSERT_FALSE(a.ok()) << text;
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(a.status().message().find(text), std::string_view::npos) << a.status().ToString();
  };
  expect_invalid(sum(x, {2}), "sum: axis 2 is out of range for an array of rank 2");
  expect_invalid(mean(x, {-3}), "mean: axis -3 is out of range for an array of rank 2");
  expect_invalid(argmax(x, 5), "argmax: axis 5 is out of range for an array of rank 2");
  expect_invalid(min(x, {0, 7}), "min: axis 7 is out of range for an array of rank 2");
  expect_invalid(var(x * std::complex<double>(0, 1), {0}), "var is not defined for complex128");
}

}  // namespace
}  // namespace strata
