#include "strata/core/kernels/reduction.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <complex>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "strata/core/dtype_dispatch.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/core/kernels/reduction_test_util.h"

namespace strata {
namespace {

using reduction_test::Alloc;
using reduction_test::DirectReduce;
using reduction_test::Finish;
using reduction_test::IsArg;
using reduction_test::Near;
using reduction_test::RandomArray;
using reduction_test::ReferenceReduce;
using reduction_test::SplitMix;
using reduction_test::Values;

constexpr ReduceOp kOps[] = {
    ReduceOp::kSum,    ReduceOp::kProd,         ReduceOp::kMin,   ReduceOp::kMax, ReduceOp::kMean,
    ReduceOp::kVar,    ReduceOp::kStd,          ReduceOp::kAll,   ReduceOp::kAny, ReduceOp::kArgmin,
    ReduceOp::kArgmax, ReduceOp::kCountNonzero, ReduceOp::kCount,
};

constexpr DTypeId kDTypes[] = {
    DTypeId::kBool,       DTypeId::kInt8,    DTypeId::kInt16,   DTypeId::kInt32,
    DTypeId::kInt64,      DTypeId::kUInt8,   DTypeId::kUInt16,  DTypeId::kUInt32,
    DTypeId::kUInt64,     DTypeId::kFloat32, DTypeId::kFloat64, DTypeId::kComplex64,
    DTypeId::kComplex128,
};

bool Supported(ReduceOp op, DType dtype) {
  if (!dtype.is_complex()) return true;
  switch (op) {
    case ReduceOp::kMin:
    case ReduceOp::kMax:
    case ReduceOp::kVar:
    case ReduceOp::kStd:
    case ReduceOp::kArgmin:
    case ReduceOp::kArgmax:
      return false;
    default:
      return true;
  }
}

// Results that must not depend on the chunking at all.
bool ExactOp(ReduceOp op, DType dtype) {
  switch (op) {
    case ReduceOp::kMin:
    case ReduceOp::kMax:
    case ReduceOp::kAll:
    case ReduceOp::kAny:
    case ReduceOp::kArgmin:
    case ReduceOp::kArgmax:
    case ReduceOp::kCountNonzero:
    case ReduceOp::kCount:
      return true;
    case ReduceOp::kSum:
    case ReduceOp::kProd:
      return !dtype.is_float() && !dtype.is_complex();
    default:
      return false;
  }
}

double Tolerance(DType result) {
  return result.id() == DTypeId::kFloat32 || result.id() == DTypeId::kComplex64 ? 2e-5 : 1e-10;
}

// Splits [0, n) into ragged chunk sizes: runs of size-1 chunks, small and
// large chunks, and (when `zero_chunks`) zero-size chunks anywhere.
std::vector<Index> RandomSplit(Index n, SplitMix& rng, bool zero_chunks) {
  std::vector<Index> sizes;
  if (zero_chunks && rng.Below(2) == 0) sizes.push_back(0);
  Index left = n;
  while (left > 0) {
    Index s;
    switch (rng.Below(4)) {
      case 0:
        s = 1;
        break;
      case 1:
        s = 1 + rng.Below(3);
        break;
      case 2:
        s = 1 + rng.Below(n);
        break;
      default:
        s = left;
        break;
    }
    s = std::min(s, left);
    sizes.push_back(s);
    left -= s;
    if (zero_chunks && rng.Below(4) == 0) sizes.push_back(0);
  }
  if (sizes.empty()) sizes.push_back(0);
  return sizes;
}

// Groups n states into consecutive groups, the first of at least two.
std::vector<Index> RandomGroups(Index n, SplitMix& rng) {
  std::vector<Index> sizes;
  Index left = n;
  while (left > 0) {
    Index s = sizes.empty() ? 2 + rng.Below(3) : 1 + rng.Below(4);
    s = std::min(s, left);
    sizes.push_back(s);
    left -= s;
  }
  return sizes;
}

std::vector<Index> Starts(const std::vector<Index>& sizes) {
  std::vector<Index> starts(sizes.size());
  Index s = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    starts[i] = s;
    s += sizes[i];
  }
  return starts;
}

// Reduces `a` over `axes` as a tree: the reduced axes split into random
// chunks, Partial per chunk into a grid of states, Combine over random groups
// of neighbouring states (along a random subset of the axes) until one state
// is left, Finalize.
NDArray TreeReduce(const ReductionKernel& k, const NDArray& a, std::span<const int> axes,
                   SplitMix& rng, bool zero_chunks) {
  const int r = a.rank();
  const Index w = k.state_width();
  std::vector<bool> reduced(r, false);
  for (int ax : axes) reduced[ax] = true;
  std::vector<std::vector<Index>> sizes(r), starts(r);
  Shape grid(r), cells(r);
  for (int i = 0; i < r; ++i) {
    sizes[i] =
        reduced[i] ? RandomSplit(a.shape()[i], rng, zero_chunks) : std::vector<Index>{a.shape()[i]};
    starts[i] = Starts(sizes[i]);
    cells[i] = static_cast<Index>(sizes[i].size());
    grid[i] = reduced[i] ? cells[i] : a.shape()[i];
  }
  auto with_width = [w](Shape s) {
    s.push_back(w);
    return s;
  };
  NDArray states = Alloc(k.state_dtype(), with_width(grid));
  Shape c(r, 0);
  do {
    Box in_box, state_box;
    for (int i = 0; i < r; ++i) {
      in_box.origin.push_back(starts[i][c[i]]);
      in_box.shape.push_back(sizes[i][c[i]]);
      state_box.origin.push_back(reduced[i] ? c[i] : 0);
      state_box.shape.push_back(reduced[i] ? 1 : a.shape()[i]);
    }
    state_box.origin.push_back(0);
    state_box.shape.push_back(w);
    k.Partial(a.view().Slice(in_box), axes, in_box.origin, a.shape(),
              states.view().Slice(state_box));
  } while (NextIndex(c, cells));

  while (true) {
    std::vector<int> multi;
    for (int ax : axes) {
      if (grid[ax] > 1) multi.push_back(ax);
    }
    if (multi.empty()) break;
    std::vector<int> comb;
    for (int ax : multi) {
      if (rng.Below(2) == 0) comb.push_back(ax);
    }
    if (comb.empty()) comb.push_back(multi[rng.Below(static_cast<Index>(multi.size()))]);
    std::vector<std::vector<Index>> gsizes(r), gstarts(r);
    Shape next_grid = grid, next_cells(r, 1);
    for (int ax : axes) {
      if (std::find(comb.begin(), comb.end(), ax) != comb.end()) {
        gsizes[ax] = RandomGroups(grid[ax], rng);
      } else {
        gsizes[ax] = std::vector<Index>(grid[ax], 1);
      }
      gstarts[ax] = Starts(gsizes[ax]);
      next_grid[ax] = next_cells[ax] = static_cast<Index>(gsizes[ax].size());
    }
    NDArray next = Alloc(k.state_dtype(), with_width(next_grid));
    Shape cc(r, 0);
    do {
      Box in_box, out_box;
      for (int i = 0; i < r; ++i) {
        if (reduced[i]) {
          in_box.origin.push_back(gstarts[i][cc[i]]);
          in_box.shape.push_back(gsizes[i][cc[i]]);
          out_box.origin.push_back(cc[i]);
          out_box.shape.push_back(1);
        } else {
          in_box.origin.push_back(0);
          in_box.shape.push_back(grid[i]);
          out_box.origin.push_back(0);
          out_box.shape.push_back(grid[i]);
        }
      }
      in_box.origin.push_back(0);
      in_box.shape.push_back(w);
      out_box.origin.push_back(0);
      out_box.shape.push_back(w);
      k.Combine(states.view().Slice(in_box), comb, next.view().Slice(out_box));
    } while (NextIndex(cc, next_cells));
    states = std::move(next);
    grid = next_grid;
  }
  return Finish(k, states);
}

std::string AxesToString(std::span<const int> axes) {
  std::string s = "{";
  for (int a : axes) s += std::to_string(a) + ",";
  return s + "}";
}

using SweepParam = std::tuple<ReduceOp, DTypeId>;

std::vector<SweepParam> SupportedPairs() {
  std::vector<SweepParam> pairs;
  for (ReduceOp op : kOps) {
    for (DTypeId id : kDTypes) {
      if (Supported(op, id)) pairs.emplace_back(op, id);
    }
  }
  return pairs;
}

std::string SweepName(const ::testing::TestParamInfo<SweepParam>& info) {
  return std::string(ReduceOpName(std::get<0>(info.param))) + "_" +
         std::string(DType(std::get<1>(info.param)).name());
}

class ReductionSweepTest : public ::testing::TestWithParam<SweepParam> {};

// Every op and dtype, every axis subset (arg ops: single axes and all axes),
// against the reference; directly and as trees over random chunkings.
TEST_P(ReductionSweepTest, MatchesReferenceDirectlyAndAsTree) {
  const auto [op, id] = GetParam();
  const DType dtype = id;
  auto kernel = MakeReductionKernel(op, dtype);
  ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
  const ReductionKernel& k = **kernel;
  SplitMix rng(static_cast<uint64_t>(op) * 131 + static_cast<uint64_t>(id));
  const double tol = Tolerance(k.result_dtype());
  const bool exact = ExactOp(op, dtype);
  std::vector<Values> flavours = {op == ReduceOp::kProd ? Values::kProduct : Values::kTies};
  if (dtype.is_float() || dtype.is_complex()) flavours.push_back(Values::kUniform);
  const Shape shapes[] = {{5, 7, 6}, {37}, {4, 1, 9}, {}};
  for (const Shape& shape : shapes) {
    for (Values values : flavours) {
      NDArray a = RandomArray(dtype, shape, rng, values);
      const int r = a.rank();
      for (int mask = 0; mask < (1 << r); ++mask) {
        std::vector<int> axes;
        for (int i = 0; i < r; ++i) {
          if (mask & (1 << i)) axes.push_back(i);
        }
        const int n = static_cast<int>(axes.size());
        if (IsArg(op) && n != 1 && n != r) continue;
        SCOPED_TRACE("shape " + ShapeToString(shape) + " axes " + AxesToString(axes) + " values " +
                     std::to_string(static_cast<int>(values)));
        NDArray expected = ReferenceReduce(op, a, axes, 0, k.result_dtype());
        NDArray direct = DirectReduce(k, a.view(), axes);
        EXPECT_TRUE(Near(direct, expected, tol));
        for (int t = 0; t < 3; ++t) {
          NDArray tree = TreeReduce(k, a, axes, rng, /*zero_chunks=*/t != 0);
          EXPECT_TRUE(Near(tree, expected, tol)) << "tree " << t;
          EXPECT_TRUE(Near(tree, direct, exact ? 0.0 : tol)) << "tree " << t << " vs direct";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOpsAndDTypes, ReductionSweepTest, ::testing::ValuesIn(SupportedPairs()),
                         SweepName);

// Runs long enough to cross the kernels' block and tile sizes, contiguous and
// strided (a transposed view, a view of every other column), against the
// reference.
TEST(ReductionTest, LongRunsAndTransposedViews) {
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMin,    ReduceOp::kMax,    ReduceOp::kMean,
                          ReduceOp::kVar, ReduceOp::kArgmin, ReduceOp::kArgmax, ReduceOp::kCount,
                          ReduceOp::kAny, ReduceOp::kAll,    ReduceOp::kProd};
  const DTypeId dtypes[] = {DTypeId::kFloat64, DTypeId::kFloat32, DTypeId::kInt32, DTypeId::kUInt8};
  SplitMix rng(7);
  for (DTypeId id : dtypes) {
    NDArray a = RandomArray(id, {3, 4500}, rng, Values::kTies);
    const int perm[] = {1, 0};
    ConstArrayView transposed = a.view().Transpose(perm);  // (4500, 3), strided
    NDArray t = *NDArray::CopyOf(*MemoryPool::Default(), transposed);
    const Index steps[] = {1, 2};
    ConstArrayView stepped = a.view().Stepped(Box({0, 0}, {3, 4500}), steps);  // (3, 2250)
    NDArray s = *NDArray::CopyOf(*MemoryPool::Default(), stepped);
    for (ReduceOp op : ops) {
      auto k = *MakeReductionKernel(op, id);
      const double tol = Tolerance(k->result_dtype());
      for (std::vector<int> axes : {std::vector<int>{0}, {1}, {0, 1}}) {
        SCOPED_TRACE(std::string(ReduceOpName(op)) + " " + std::string(DType(id).name()) +
                     " axes " + AxesToString(axes));
        EXPECT_TRUE(Near(DirectReduce(*k, a.view(), axes),
                         ReferenceReduce(op, a, axes, 0, k->result_dtype()), tol));
        EXPECT_TRUE(Near(DirectReduce(*k, transposed, axes),
                         ReferenceReduce(op, t, axes, 0, k->result_dtype()), tol));
        EXPECT_TRUE(Near(DirectReduce(*k, stepped, axes),
                         ReferenceReduce(op, s, axes, 0, k->result_dtype()), tol));
      }
    }
  }
}

// Rows wider than the output tile (256 KiB of state) reduced along axis 0:
// the kept axis is processed tile by tile.
TEST(ReductionTest, RowsWiderThanOutputTiles) {
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kVar, ReduceOp::kMax,
                          ReduceOp::kArgmin};
  SplitMix rng(11);
  const int axes[] = {0};
  for (DTypeId id : {DTypeId::kFloat64, DTypeId::kInt32}) {
    NDArray a = RandomArray(id, {3, 33000}, rng, Values::kTies);
    for (ReduceOp op : ops) {
      auto k = *MakeReductionKernel(op, id);
      SCOPED_TRACE(std::string(ReduceOpName(op)) + " " + std::string(DType(id).name()));
      EXPECT_TRUE(Near(DirectReduce(*k, a.view(), axes),
                       ReferenceReduce(op, a, axes, 0, k->result_dtype()),
                       Tolerance(k->result_dtype())));
    }
  }
}

// A NaN element makes var and std NaN (numpy's and the Array API's rule),
// whatever block of the run it lands in.
TEST(ReductionTest, VarAndStdOfNanAreNan) {
  const int axes[] = {0};
  for (Index at : {0, 17, 39}) {
    NDArray a = Alloc(DTypeId::kFloat64, {40});
    for (Index i = 0; i < 40; ++i) a.values<double>()[i] = static_cast<double>(i);
    a.values<double>()[at] = std::numeric_limits<double>::quiet_NaN();
    for (ReduceOp op : {ReduceOp::kVar, ReduceOp::kStd}) {
      auto k = *MakeReductionKernel(op, DTypeId::kFloat64);
      NDArray r = DirectReduce(*k, a.view(), axes);
      EXPECT_TRUE(std::isnan(r.values<double>()[0])) << ReduceOpName(op) << " NaN at " << at;
    }
  }
}

// var of 1e6 values 1e9 + uniform[0, 1) in 100 chunks, against an exact
// two-pass computation: naive sum-of-squares would lose every digit.
TEST(ReductionTest, VarIsStableFarFromZero) {
  constexpr Index kN = 1000000, kChunks = 100, kChunk = kN / kChunks;
  NDArray a = Alloc(DTypeId::kFloat64, {kN});
  SplitMix rng(42);
  for (double& v : a.values<double>()) v = 1e9 + rng.Uniform();
  long double sum = 0;
  for (double v : a.values<double>()) sum += v;
  const long double mean = sum / kN;
  long double m2 = 0;
  for (double v : a.values<double>()) m2 += (v - mean) * (v - mean);
  const double exact = static_cast<double>(m2 / kN);

  auto k = *MakeReductionKernel(ReduceOp::kVar, DTypeId::kFloat64);
  const int axes[] = {0};
  NDArray states = Alloc(DTypeId::kFloat64, {kChunks, 3});
  for (Index c = 0; c < kChunks; ++c) {
    const Index origin[] = {c * kChunk};
    k->Partial(a.view().Slice(Box({c * kChunk}, {kChunk})), axes, origin, a.shape(),
               states.view().Slice(Box({c, 0}, {1, 3})));
  }
  // Two rounds: groups of 10, then the 10 results.
  NDArray mid = Alloc(DTypeId::kFloat64, {10, 3});
  for (Index g = 0; g < 10; ++g) {
    k->Combine(states.view().Slice(Box({g * 10, 0}, {10, 3})), axes,
               mid.view().Slice(Box({g, 0}, {1, 3})));
  }
  NDArray last = Alloc(DTypeId::kFloat64, {1, 3});
  k->Combine(mid.view(), axes, last.view());
  NDArray result = Finish(*k, last);
  const double got = result.values<double>()[0];
  EXPECT_NEAR(got, exact, 1e-6 * exact) << "exact " << exact;
  // The direct (one chunk) computation too.
  NDArray direct = DirectReduce(*k, a.view(), axes);
  EXPECT_NEAR(direct.values<double>()[0], exact, 1e-6 * exact);
  // And along a kept innermost axis (Welford's update across rows).
  NDArray columns = *NDArray::CopyOf(*MemoryPool::Default(), a.view());
  columns.Reshape({kN / 4, 4});
  NDArray per_column = DirectReduce(*k, columns.view(), axes);
  for (int j = 0; j < 4; ++j) {
    long double s = 0, q = 0;
    for (Index i = 0; i < kN / 4; ++i) s += columns.values<double>()[i * 4 + j];
    const long double m = s / (kN / 4);
    for (Index i = 0; i < kN / 4; ++i) {
      const long double d = columns.values<double>()[i * 4 + j] - m;
      q += d * d;
    }
    const double col_exact = static_cast<double>(q / (kN / 4));
    EXPECT_NEAR(per_column.values<double>()[j], col_exact, 1e-6 * col_exact) << "column " << j;
  }
}

NDArray FromDoubles(const std::vector<double>& v) {
  NDArray a = Alloc(DTypeId::kFloat64, {static_cast<Index>(v.size())});
  std::copy(v.begin(), v.end(), a.values<double>().begin());
  return a;
}

// Reduces a 1-d array split at `cuts` (a tree of one Combine).
NDArray ChunkedReduce1D(const ReductionKernel& k, const NDArray& a, std::vector<Index> cuts) {
  cuts.insert(cuts.begin(), 0);
  cuts.push_back(a.shape()[0]);
  const Index chunks = static_cast<Index>(cuts.size()) - 1;
  const int axes[] = {0};
  const Index w = k.state_width();
  NDArray states = Alloc(k.state_dtype(), {chunks, w});
  for (Index c = 0; c < chunks; ++c) {
    const Index origin[] = {cuts[c]};
    k.Partial(a.view().Slice(Box({cuts[c]}, {cuts[c + 1] - cuts[c]})), axes, origin, a.shape(),
              states.view().Slice(Box({c, 0}, {1, w})));
  }
  NDArray out = Alloc(k.state_dtype(), {1, w});
  k.Combine(states.view(), axes, out.view());
  return Finish(k, out);
}

double ReduceToDouble(ReduceOp op, const NDArray& a, std::vector<Index> cuts) {
  auto k = *MakeReductionKernel(op, a.dtype());
  NDArray r = ChunkedReduce1D(*k, a, std::move(cuts));
  if (r.dtype() == DType(DTypeId::kInt64)) return static_cast<double>(r.values<int64_t>()[0]);
  if (r.dtype() == DType(DTypeId::kBool)) return r.values<bool>()[0] ? 1 : 0;
  return r.values<double>()[0];
}

TEST(ReductionTest, NanHandling) {
  const double nan = std::nan("");
  NDArray a = FromDoubles({3, 1, nan, 5, nan, -2, 7});
  const std::vector<Index> cuts = {2, 3, 5};  // NaNs in separate chunks
  EXPECT_TRUE(std::isnan(ReduceToDouble(ReduceOp::kMin, a, cuts)));
  EXPECT_TRUE(std::isnan(ReduceToDouble(ReduceOp::kMax, a, cuts)));
  EXPECT_TRUE(std::isnan(ReduceToDouble(ReduceOp::kSum, a, cuts)));
  EXPECT_TRUE(std::isnan(ReduceToDouble(ReduceOp::kMean, a, cuts)));
  EXPECT_TRUE(std::isnan(ReduceToDouble(ReduceOp::kVar, a, cuts)));
  // numpy: argmin/argmax give the first NaN.
  EXPECT_EQ(ReduceToDouble(ReduceOp::kArgmin, a, cuts), 2);
  EXPECT_EQ(ReduceToDouble(ReduceOp::kArgmax, a, cuts), 2);
  EXPECT_EQ(ReduceToDouble(ReduceOp::kArgmax, a, {}), 2);
  EXPECT_EQ(ReduceToDouble(ReduceOp::kCount, a, cuts), 5);
  EXPECT_EQ(ReduceToDouble(ReduceOp::kCountNonzero, a, cuts), 7);
  EXPECT_EQ(ReduceToDouble(ReduceOp::kAll, a, cuts), 1);  // NaN is nonzero
  NDArray zeros_and_nan = FromDoubles({0, -0.0, nan});
  EXPECT_EQ(ReduceToDouble(ReduceOp::kAny, zeros_and_nan, {1}), 1);
  EXPECT_EQ(ReduceToDouble(ReduceOp::kAll, zeros_and_nan, {1}), 0);
  EXPECT_EQ(ReduceToDouble(ReduceOp::kCountNonzero, zeros_and_nan, {1}), 1);
  // A NaN after the first block of a long run.
  NDArray long_run = Alloc(DTypeId::kFloat64, {5000});
  for (Index i = 0; i < 5000; ++i) long_run.values<double>()[i] = static_cast<double>(i % 97);
  long_run.values<double>()[3001] = nan;
  long_run.values<double>()[4000] = nan;
  EXPECT_EQ(ReduceToDouble(ReduceOp::kArgmax, long_run, {}), 3001);
  EXPECT_EQ(ReduceToDouble(ReduceOp::kArgmin, long_run, {}), 3001);
  EXPECT_EQ(ReduceToDouble(ReduceOp::kArgmin, long_run, {3500}), 3001);
  EXPECT_TRUE(std::isnan(ReduceToDouble(ReduceOp::kMax, long_run, {})));
}

// NaN at any position of a vectorised block or its tail; infinities, which
// are also the folds' identities.
TEST(ReductionTest, ExtremesOfLongRuns) {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  for (Index n : {7, 64, 1000, 5000}) {
    for (Index pos : {Index{0}, n / 2, n - 1}) {
      std::vector<double> v(n);
      for (Index i = 0; i < n; ++i) v[i] = static_cast<double>((i * 7919) % 101);
      v[pos] = nan;
      NDArray a = FromDoubles(v);
      SCOPED_TRACE("n " + std::to_string(n) + " NaN at " + std::to_string(pos));
      EXPECT_TRUE(std::isnan(ReduceToDouble(ReduceOp::kMin, a, {})));
      EXPECT_TRUE(std::isnan(ReduceToDouble(ReduceOp::kMax, a, {})));
      EXPECT_EQ(ReduceToDouble(ReduceOp::kArgmin, a, {}), pos);
      EXPECT_EQ(ReduceToDouble(ReduceOp::kArgmax, a, {}), pos);
      std::fill(v.begin(), v.end(), -inf);
      v[pos] = inf;
      NDArray b = FromDoubles(v);
      EXPECT_EQ(ReduceToDouble(ReduceOp::kMax, b, {}), inf);
      EXPECT_EQ(ReduceToDouble(ReduceOp::kMin, b, {}), n == 1 ? inf : -inf);
      EXPECT_EQ(ReduceToDouble(ReduceOp::kArgmax, b, {}), pos);
      EXPECT_EQ(ReduceToDouble(ReduceOp::kArgmin, b, {}), pos == 0 ? 1 : 0);
    }
  }
}

// all/any stop at the first deciding element; long runs of each dtype class
// with the deciding element anywhere (or nowhere).
TEST(ReductionTest, AllAnyOfLongRuns) {
  const DTypeId dtypes[] = {DTypeId::kFloat64, DTypeId::kFloat32, DTypeId::kInt16,
                            DTypeId::kUInt8,   DTypeId::kBool,    DTypeId::kComplex64};
  const int axes[] = {0};
  for (DTypeId id : dtypes) {
    auto all = *MakeReductionKernel(ReduceOp::kAll, id);
    auto any = *MakeReductionKernel(ReduceOp::kAny, id);
    for (Index n : {1, 300, 5000}) {
      for (Index pos : {Index{-1}, Index{0}, n / 2, n - 1}) {
        SCOPED_TRACE(std::string(DType(id).name()) + " n " + std::to_string(n) + " at " +
                     std::to_string(pos));
        // Ones with one zero: all is false iff there is a zero.
        NDArray ones = Alloc(id, {n});
        // Zeros (-0.0 for floats) with one nonzero: any is true iff there is one.
        NDArray zeros = Alloc(id, {n});
        VisitDType(DType(id), [&](auto tag) {
          using T = typename decltype(tag)::type;
          T zero = T(0);
          if constexpr (std::is_floating_point_v<T>) zero = -T(0);
          std::fill(ones.values<T>().begin(), ones.values<T>().end(), T(1));
          std::fill(zeros.values<T>().begin(), zeros.values<T>().end(), zero);
          if (pos >= 0) {
            ones.values<T>()[pos] = zero;
            if constexpr (kIsComplex<T>) {
              zeros.values<T>()[pos] = T(0, 2);  // only the imaginary part
            } else if constexpr (std::is_floating_point_v<T>) {
              zeros.values<T>()[pos] = std::numeric_limits<T>::quiet_NaN();
            } else {
              zeros.values<T>()[pos] = T(1);
            }
          }
        });
        EXPECT_EQ(DirectReduce(*all, ones.view(), axes).values<bool>()[0], pos < 0);
        EXPECT_EQ(DirectReduce(*any, zeros.view(), axes).values<bool>()[0], pos >= 0);
        EXPECT_EQ(DirectReduce(*any, ones.view(), axes).values<bool>()[0], n > 1 || pos < 0);
        EXPECT_EQ(DirectReduce(*all, zeros.view(), axes).values<bool>()[0], n == 1 && pos >= 0);
      }
    }
  }
}

TEST(ReductionTest, ArgKeepsFirstOccurrenceAcrossChunks) {
  // The maximum 9 at 2, 5 and 8; the minimum -1 at 1 and 7.
  NDArray a = FromDoubles({0, -1, 9, 3, 4, 9, 2, -1, 9, 5});
  for (auto cuts : {std::vector<Index>{}, {3}, {2, 3}, {1, 2, 5, 6, 8}, {5}, {0, 0, 10}}) {
    EXPECT_EQ(ReduceToDouble(ReduceOp::kArgmax, a, cuts), 2);
    EXPECT_EQ(ReduceToDouble(ReduceOp::kArgmin, a, cuts), 1);
  }
  // Combine does not depend on the order of the states either: merge the
  // later chunk's state first.
  auto k = *MakeReductionKernel(ReduceOp::kArgmax, DTypeId::kFloat64);
  const int axes[] = {0};
  NDArray states = Alloc(DTypeId::kInt64, {2, 2});
  const Index o0[] = {0}, o1[] = {4};
  k->Partial(a.view().Slice(Box({4}, {6})), axes, o1, a.shape(),
             states.view().Slice(Box({0, 0}, {1, 2})));
  k->Partial(a.view().Slice(Box({0}, {4})), axes, o0, a.shape(),
             states.view().Slice(Box({1, 0}, {1, 2})));
  NDArray out = Alloc(DTypeId::kInt64, {1, 2});
  k->Combine(states.view(), axes, out.view());
  EXPECT_EQ(Finish(*k, out).values<int64_t>()[0], 2);
}

TEST(ReductionTest, ArgPositionsAreWholeArrayCoordinates) {
  // A (6, 5) int32 array with its maximum at (4, 1) and (5, 3), chunked (4, 2):
  // flat index 21 when reducing everything, row 4 along axis 0 in column 1.
  NDArray a = Alloc(DTypeId::kInt32, {6, 5});
  for (Index i = 0; i < 30; ++i) a.values<int32_t>()[i] = static_cast<int32_t>(i % 7);
  a.values<int32_t>()[4 * 5 + 1] = 100;
  a.values<int32_t>()[5 * 5 + 3] = 100;
  auto k = *MakeReductionKernel(ReduceOp::kArgmax, DTypeId::kInt32);
  const int all[] = {0, 1};
  NDArray states = Alloc(DTypeId::kInt64, {2, 3, 2});
  for (Index ci = 0; ci < 2; ++ci) {
    for (Index cj = 0; cj < 3; ++cj) {
      Box box({ci * 4, cj * 2}, {std::min<Index>(4, 6 - ci * 4), std::min<Index>(2, 5 - cj * 2)});
      k->Partial(a.view().Slice(box), all, box.origin, a.shape(),
                 states.view().Slice(Box({ci, cj, 0}, {1, 1, 2})));
    }
  }
  NDArray out = Alloc(DTypeId::kInt64, {1, 1, 2});
  k->Combine(states.view(), all, out.view());
  EXPECT_EQ(Finish(*k, out).values<int64_t>()[0], 21);

  const int axis0[] = {0};
  NDArray col = Alloc(DTypeId::kInt64, {1, 2, 2});
  const Index origin[] = {4, 0};
  k->Partial(a.view().Slice(Box({4, 0}, {2, 2})), axis0, origin, a.shape(), col.view());
  NDArray r = Finish(*k, col);
  EXPECT_EQ(r.values<int64_t>()[1], 4);  // column 1: row 4 of the whole array
}

TEST(ReductionTest, EmptyReductions) {
  NDArray empty = Alloc(DTypeId::kFloat64, {0});
  NDArray ints = Alloc(DTypeId::kInt16, {0});
  const int axes[] = {0};
  auto run = [&](ReduceOp op, const NDArray& a) {
    auto k = *MakeReductionKernel(op, a.dtype());
    return DirectReduce(*k, a.view(), axes);
  };
  EXPECT_EQ(run(ReduceOp::kSum, empty).values<double>()[0], 0);
  EXPECT_EQ(run(ReduceOp::kProd, empty).values<double>()[0], 1);
  EXPECT_TRUE(std::isnan(run(ReduceOp::kMean, empty).values<double>()[0]));
  EXPECT_TRUE(std::isnan(run(ReduceOp::kVar, empty).values<double>()[0]));
  EXPECT_TRUE(std::isnan(run(ReduceOp::kMin, empty).values<double>()[0]));
  EXPECT_TRUE(std::isnan(run(ReduceOp::kMax, empty).values<double>()[0]));
  EXPECT_EQ(run(ReduceOp::kMin, ints).values<int16_t>()[0], 32767);
  EXPECT_EQ(run(ReduceOp::kMax, ints).values<int16_t>()[0], -32768);
  EXPECT_EQ(run(ReduceOp::kCount, empty).values<int64_t>()[0], 0);
  EXPECT_EQ(run(ReduceOp::kAll, empty).values<bool>()[0], true);
  EXPECT_EQ(run(ReduceOp::kAny, empty).values<bool>()[0], false);
  // A zero-size chunk's state merges as nothing.
  NDArray a = FromDoubles({4, 2, 8});
  EXPECT_EQ(ReduceToDouble(ReduceOp::kMin, a, {0, 0, 3, 3}), 2);
  EXPECT_EQ(ReduceToDouble(ReduceOp::kArgmin, a, {0, 3}), 1);
  EXPECT_DOUBLE_EQ(ReduceToDouble(ReduceOp::kVar, a, {0, 1, 1}), 56.0 / 9);
}

TEST(ReductionDeathTest, ArgminOfNothingFails) {
  NDArray empty = Alloc(DTypeId::kFloat64, {0});
  auto k = *MakeReductionKernel(ReduceOp::kArgmin, DTypeId::kFloat64);
  const int axes[] = {0};
  EXPECT_DEATH(DirectReduce(*k, empty.view(), axes), "argmin of an empty reduction");
}

TEST(ReductionTest, Ddof) {
  NDArray a = FromDoubles({1, 2, 3, 4});
  for (int ddof : {0, 1, 2, 3}) {
    auto var = *MakeReductionKernel(ReduceOp::kVar, DTypeId::kFloat64, {.ddof = ddof});
    auto sd = *MakeReductionKernel(ReduceOp::kStd, DTypeId::kFloat64, {.ddof = ddof});
    EXPECT_DOUBLE_EQ(ChunkedReduce1D(*var, a, {1, 3}).values<double>()[0], 5.0 / (4 - ddof));
    EXPECT_DOUBLE_EQ(ChunkedReduce1D(*sd, a, {2}).values<double>()[0], std::sqrt(5.0 / (4 - ddof)));
  }
  for (int ddof : {4, 5}) {
    auto var = *MakeReductionKernel(ReduceOp::kVar, DTypeId::kFloat64, {.ddof = ddof});
    EXPECT_TRUE(std::isnan(ChunkedReduce1D(*var, a, {1}).values<double>()[0])) << ddof;
  }
  // Against the reference over a multi-axis case, int and float32 input.
  SplitMix rng(3);
  for (DTypeId id : {DTypeId::kInt32, DTypeId::kFloat32}) {
    NDArray b = RandomArray(id, {4, 5, 3}, rng, Values::kTies);
    auto k = *MakeReductionKernel(ReduceOp::kStd, id, {.ddof = 1});
    const int axes[] = {0, 2};
    EXPECT_TRUE(Near(DirectReduce(*k, b.view(), axes),
                     ReferenceReduce(ReduceOp::kStd, b, axes, 1, k->result_dtype()),
                     Tolerance(k->result_dtype())));
  }
}

TEST(ReductionTest, IntegerSumsAndProductsWrap) {
  NDArray a = Alloc(DTypeId::kInt64, {3});
  a.values<int64_t>()[0] = std::numeric_limits<int64_t>::max();
  a.values<int64_t>()[1] = 1;
  a.values<int64_t>()[2] = 1;
  auto sum = *MakeReductionKernel(ReduceOp::kSum, DTypeId::kInt64);
  EXPECT_EQ(ChunkedReduce1D(*sum, a, {1}).values<int64_t>()[0],
            std::numeric_limits<int64_t>::min() + 1);
  NDArray u = Alloc(DTypeId::kUInt32, {2});
  u.values<uint32_t>()[0] = 4000000000u;
  u.values<uint32_t>()[1] = 4000000000u;
  auto prod = *MakeReductionKernel(ReduceOp::kProd, DTypeId::kUInt32);
  EXPECT_EQ(ChunkedReduce1D(*prod, u, {1}).values<uint64_t>()[0], 16000000000000000000ull);
}

TEST(ReductionTest, ResultAndStateDTypes) {
  struct Case {
    ReduceOp op;
    DTypeId in, result, state;
    int width;
  };
  const Case cases[] = {
      {ReduceOp::kSum, DTypeId::kBool, DTypeId::kInt64, DTypeId::kInt64, 1},
      {ReduceOp::kSum, DTypeId::kInt8, DTypeId::kInt64, DTypeId::kInt64, 1},
      {ReduceOp::kSum, DTypeId::kUInt16, DTypeId::kUInt64, DTypeId::kUInt64, 1},
      {ReduceOp::kSum, DTypeId::kFloat32, DTypeId::kFloat32, DTypeId::kFloat64, 1},
      {ReduceOp::kProd, DTypeId::kComplex64, DTypeId::kComplex64, DTypeId::kComplex128, 1},
      {ReduceOp::kMin, DTypeId::kUInt8, DTypeId::kUInt8, DTypeId::kUInt8, 2},
      {ReduceOp::kMax, DTypeId::kBool, DTypeId::kBool, DTypeId::kBool, 2},
      {ReduceOp::kMean, DTypeId::kInt32, DTypeId::kFloat64, DTypeId::kFloat64, 2},
      {ReduceOp::kMean, DTypeId::kFloat32, DTypeId::kFloat32, DTypeId::kFloat64, 2},
      {ReduceOp::kMean, DTypeId::kComplex64, DTypeId::kComplex64, DTypeId::kComplex128, 2},
      {ReduceOp::kVar, DTypeId::kInt16, DTypeId::kFloat64, DTypeId::kFloat64, 3},
      {ReduceOp::kStd, DTypeId::kFloat32, DTypeId::kFloat32, DTypeId::kFloat64, 3},
      {ReduceOp::kAll, DTypeId::kComplex128, DTypeId::kBool, DTypeId::kBool, 1},
      {ReduceOp::kAny, DTypeId::kFloat32, DTypeId::kBool, DTypeId::kBool, 1},
      {ReduceOp::kArgmin, DTypeId::kFloat32, DTypeId::kInt64, DTypeId::kInt64, 2},
      {ReduceOp::kCountNonzero, DTypeId::kUInt8, DTypeId::kInt64, DTypeId::kInt64, 1},
      {ReduceOp::kCount, DTypeId::kFloat64, DTypeId::kInt64, DTypeId::kInt64, 1},
  };
  for (const Case& c : cases) {
    auto k = MakeReductionKernel(c.op, c.in);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    SCOPED_TRACE(std::string(ReduceOpName(c.op)) + " " + std::string(DType(c.in).name()));
    EXPECT_EQ((*k)->op(), c.op);
    EXPECT_EQ((*k)->input_dtype(), DType(c.in));
    EXPECT_EQ((*k)->result_dtype(), DType(c.result));
    EXPECT_EQ((*k)->state_dtype(), DType(c.state));
    EXPECT_EQ((*k)->state_width(), c.width);
    EXPECT_EQ((*k)->ScratchBytes(Shape{1000, 1000}), 0);
  }
  auto k = *MakeReductionKernel(ReduceOp::kMean, DTypeId::kFloat64);
  const int axes[] = {0, 2};
  EXPECT_EQ(k->StateShape(Shape{4, 5, 6}, axes), Shape({1, 5, 1, 2}));
}

// A mean over whole axes (ReductionOptions::count) keeps the sum alone and
// gives the same bits as the (count, sum) state's, over any tree of states.
TEST(ReductionTest, MeanWithAKnownCountKeepsTheSumAlone) {
  for (DTypeId in : {DTypeId::kFloat64, DTypeId::kFloat32, DTypeId::kInt32}) {
    SCOPED_TRACE(DType(in).name());
    auto counted = *MakeReductionKernel(ReduceOp::kMean, in);
    ReductionOptions o;
    o.count = 6 * 7;
    auto summed = *MakeReductionKernel(ReduceOp::kMean, in, o);
    EXPECT_EQ(summed->state_width(), 1);
    EXPECT_EQ(summed->state_dtype(), counted->state_dtype());
    EXPECT_EQ(summed->result_dtype(), counted->result_dtype());
    NDArray x64 = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, {6, 7, 5});
    for (Index i = 0; i < x64.num_elements(); ++i) {
      x64.data_as<double>()[i] = std::sin(static_cast<double>(i)) * 1000.0 + 0.1;
    }
    NDArray x = *NDArray::Allocate(*MemoryPool::Default(), in, x64.shape());
    ASSERT_TRUE(Cast(x64.view(), x.view()).ok());
    auto mean_of = [&](const ReductionKernel& k) {
      // Two chunks of rows (4 and 2), combined, then finalized.
      const int axes[] = {0, 1};
      MemoryPool& pool = *MemoryPool::Default();
      NDArray states = *NDArray::Allocate(pool, k.state_dtype(), Shape{2, 1, 5, k.state_width()});
      const Index rows[] = {0, 4, 6};
      for (int c = 0; c < 2; ++c) {
        Box part({rows[c], 0, 0}, {rows[c + 1] - rows[c], 7, 5});
        Box slot({c, 0, 0, 0}, {1, 1, 5, k.state_width()});
        k.Partial(x.view().Slice(part), axes, part.origin, x.shape(), states.view().Slice(slot));
      }
      NDArray one = *NDArray::Allocate(pool, k.state_dtype(), Shape{1, 1, 5, k.state_width()});
      k.Combine(states.view(), axes, one.view());
      NDArray result = *NDArray::Allocate(pool, k.result_dtype(), Shape{1, 1, 5});
      k.Finalize(one.view(), result.view());
      return result;
    };
    NDArray a = mean_of(*counted), b = mean_of(*summed);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), static_cast<size_t>(a.nbytes())), 0);
  }
}

// A block reduced in strips along its first reduced axis (PartialInto, as
// a partial reduction reading Zarr chunks a strip at a time) has the whole
// block's state bit for bit when a later axis is kept.
TEST(ReductionTest, PartialIntoStripsGiveTheWholeBlocksState) {
  MemoryPool& pool = *MemoryPool::Default();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kProd}) {
    for (DTypeId in : {DTypeId::kFloat64, DTypeId::kFloat32}) {
      SCOPED_TRACE(std::string(ReduceOpName(op)) + " " + std::string(DType(in).name()));
      auto k = *MakeReductionKernel(op, in);
      ASSERT_TRUE(k->folds_in_order());
      NDArray x64 = *NDArray::Allocate(pool, DTypeId::kFloat64, {7, 5, 6});
      for (Index i = 0; i < x64.num_elements(); ++i) {
        x64.data_as<double>()[i] = std::sin(static_cast<double>(i)) * 3.0 + 0.1;
      }
      NDArray x = *NDArray::Allocate(pool, in, x64.shape());
      ASSERT_TRUE(Cast(x64.view(), x.view()).ok());
      const Shape origin = {0, 0, 0};
      for (std::vector<int> axes : {std::vector<int>{0}, {0, 2}, {0, 1}}) {
        const Shape state_shape = k->StateShape(x.shape(), axes);
        NDArray whole = *NDArray::Allocate(pool, k->state_dtype(), state_shape);
        k->Partial(x.view(), axes, origin, x.shape(), whole.view());
        for (Index rows : {1, 2, 3}) {
          NDArray strips = *NDArray::Allocate(pool, k->state_dtype(), state_shape);
          for (Index start = 0; start < 7; start += rows) {
            Box strip({start, 0, 0}, {std::min<Index>(rows, 7 - start), 5, 6});
            if (start == 0) {
              k->Partial(x.view().Slice(strip), axes, strip.origin, x.shape(), strips.view());
            } else {
              k->PartialInto(x.view().Slice(strip), axes, strip.origin, x.shape(), strips.view());
            }
          }
          EXPECT_EQ(std::memcmp(whole.data(), strips.data(), static_cast<size_t>(whole.nbytes())),
                    0)
              << "axes " << axes.size() << " rows " << rows;
        }
      }
    }
  }
  EXPECT_FALSE((*MakeReductionKernel(ReduceOp::kArgmin, DTypeId::kFloat64))->folds_in_order());
  EXPECT_FALSE((*MakeReductionKernel(ReduceOp::kVar, DTypeId::kFloat64))->folds_in_order());
}

TEST(ReductionTest, UndefinedOpsAreInvalidArgument) {
  struct Case {
    ReduceOp op;
    DTypeId dtype;
    const char* message;
  };
  const Case cases[] = {
      {ReduceOp::kVar, DTypeId::kComplex64, "var is not defined for complex64"},
      {ReduceOp::kStd, DTypeId::kComplex128, "std is not defined for complex128"},
      {ReduceOp::kArgmin, DTypeId::kComplex64, "argmin is not defined for complex64"},
      {ReduceOp::kArgmax, DTypeId::kComplex128, "argmax is not defined for complex128"},
      {ReduceOp::kMin, DTypeId::kComplex64, "min is not defined for complex64"},
      {ReduceOp::kMax, DTypeId::kComplex128, "max is not defined for complex128"},
  };
  for (const Case& c : cases) {
    auto k = MakeReductionKernel(c.op, c.dtype);
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(k.status().message().find(c.message), std::string_view::npos) << k.status().message();
  }
}

TEST(ReductionTest, OpNames) {
  EXPECT_EQ(ReduceOpName(ReduceOp::kCountNonzero), "count_nonzero");
  EXPECT_EQ(ReduceOpName(ReduceOp::kArgmax), "argmax");
  EXPECT_EQ(ReduceOpName(ReduceOp::kCount), "count");
}

}  // namespace
}  // namespace strata
