#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "strata/core/dtype_dispatch.h"
#include "strata/core/kernels/reduction.h"
#include "strata/core/kernels/reduction_test_util.h"

namespace strata {
namespace {

using reduction_test::Alloc;
using reduction_test::Finish;
using reduction_test::Near;
using reduction_test::RandomArray;
using reduction_test::ReferenceOf;
using reduction_test::SetRef;
using reduction_test::SplitMix;
using reduction_test::Values;

// The view without its leading axis (which must have extent 1).
ArrayView DropLeadingAxis(const ArrayView& v) {
  STRATA_CHECK(v.shape()[0] == 1);
  return ArrayView(v.data(), v.dtype(), Shape(v.shape().begin() + 1, v.shape().end()),
                   Shape(v.byte_strides().begin() + 1, v.byte_strides().end()));
}

// Group reduction of `a` along `axis` computed the obvious way; the result has
// a leading axis of 1 (the stacking axis the tree combined over).
NDArray GroupReference(ReduceOp op, const NDArray& a, int axis, const std::vector<int64_t>& labels,
                       Index num_groups, DType result_dtype) {
  Shape gshape = a.shape();
  gshape[axis] = num_groups;
  Shape out_shape = gshape;
  out_shape.insert(out_shape.begin(), 1);
  NDArray out = Alloc(result_dtype, out_shape);
  VisitDType(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Index out_n = NumElements(gshape);
    std::vector<std::vector<T>> vals(out_n);
    std::vector<std::vector<Index>> poss(out_n);
    if (a.num_elements() > 0) {
      Shape idx(a.rank(), 0);
      Index i = 0;
      do {
        const int64_t g = labels[idx[axis]];
        if (g >= 0) {
          Shape gidx = idx;
          gidx[axis] = g;
          vals[LinearIndex(gidx, gshape)].push_back(a.data_as<T>()[i]);
        }
        ++i;
      } while (NextIndex(idx, a.shape()));
    }
    for (Index o = 0; o < out_n; ++o) SetRef(out, o, ReferenceOf(op, vals[o], poss[o], 0));
  });
  return out;
}

std::vector<Index> RandomChunks(Index n, SplitMix& rng, bool zero_chunks) {
  std::vector<Index> sizes;
  Index left = n;
  while (left > 0) {
    Index s = std::min<Index>(left, rng.Below(3) == 0 ? 1 : 1 + rng.Below(n));
    sizes.push_back(s);
    left -= s;
    if (zero_chunks && rng.Below(3) == 0) sizes.push_back(0);
  }
  if (sizes.empty()) sizes.push_back(0);
  return sizes;
}

using GroupParam = std::tuple<ReduceOp, DTypeId>;

std::vector<GroupParam> GroupPairs() {
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                          ReduceOp::kCount};
  const DTypeId dtypes[] = {
      DTypeId::kBool,       DTypeId::kInt8,    DTypeId::kInt16,   DTypeId::kInt32,
      DTypeId::kInt64,      DTypeId::kUInt8,   DTypeId::kUInt16,  DTypeId::kUInt32,
      DTypeId::kUInt64,     DTypeId::kFloat32, DTypeId::kFloat64, DTypeId::kComplex64,
      DTypeId::kComplex128,
  };
  std::vector<GroupParam> pairs;
  for (ReduceOp op : ops) {
    for (DTypeId id : dtypes) {
      const bool ordered = op == ReduceOp::kMin || op == ReduceOp::kMax;
      if (ordered && DType(id).is_complex()) continue;
      pairs.emplace_back(op, id);
    }
  }
  return pairs;
}

std::string GroupName(const ::testing::TestParamInfo<GroupParam>& info) {
  return std::string(ReduceOpName(std::get<0>(info.param))) + "_" +
         std::string(DType(std::get<1>(info.param)).name());
}

class GroupByTest : public ::testing::TestWithParam<GroupParam> {};

// Each chunk of the grouped axis is GroupPartial'ed into its slot of a stack
// of states along a new leading axis; the stack is combined over that axis in
// random rounds and finalized. Labels include -1 (skipped) and leave groups 5
// and 6 empty: empty groups give sum 0, count 0, mean NaN, min/max NaN for
// floats and the identity for integers (min: the dtype's largest value).
TEST_P(GroupByTest, MatchesReferenceOverChunkings) {
  const auto [op, id] = GetParam();
  auto kernel = MakeReductionKernel(op, id);
  ASSERT_TRUE(kernel.ok());
  const ReductionKernel& k = **kernel;
  ASSERT_TRUE(GroupReduceSupported(op));
  constexpr Index kGroups = 7;
  const Index w = k.state_width();
  const double tol =
      k.result_dtype() == DType(DTypeId::kFloat32) || k.result_dtype() == DType(DTypeId::kComplex64)
          ? 2e-5
          : 1e-10;
  SplitMix rng(static_cast<uint64_t>(op) * 977 + static_cast<uint64_t>(id));
  struct Case {
    Shape shape;
    int axis;
  };
  // 1-d; small slices through the offset list (axis outer and inner); slices
  // large enough for the row loop; a middle axis; an empty slice.
  const Case cases[] = {{{40}, 0},     {{40, 3}, 0},     {{3, 40}, 1},
                        {{30, 70}, 0}, {{2, 30, 40}, 1}, {{12, 0}, 0}};
  for (const Case& c : cases) {
    SCOPED_TRACE("shape " + ShapeToString(c.shape) + " axis " + std::to_string(c.axis));
    NDArray a = RandomArray(id, c.shape, rng, Values::kTies);
    const Index n = c.shape[c.axis];
    std::vector<int64_t> labels(n);
    for (int64_t& l : labels) l = rng.Below(6) - 1;  // -1..4
    NDArray expected = GroupReference(op, a, c.axis, labels, kGroups, k.result_dtype());
    Shape gshape = c.shape;
    gshape[c.axis] = kGroups;
    gshape.push_back(w);
    for (int t = 0; t < 3; ++t) {
      const std::vector<Index> sizes = RandomChunks(n, rng, t != 0);
      Shape stack_shape = gshape;
      stack_shape.insert(stack_shape.begin(), static_cast<Index>(sizes.size()));
      NDArray stack = Alloc(k.state_dtype(), stack_shape);
      Index start = 0;
      for (size_t ci = 0; ci < sizes.size(); ++ci) {
        Box in_box = Box::FromShape(c.shape);
        in_box.origin[c.axis] = start;
        in_box.shape[c.axis] = sizes[ci];
        Box st_box = Box::FromShape(stack_shape);
        st_box.origin[0] = static_cast<Index>(ci);
        st_box.shape[0] = 1;
        GroupPartial(k, a.view().Slice(in_box), c.axis,
                     std::span<const int64_t>(labels).subspan(start, sizes[ci]), kGroups,
                     DropLeadingAxis(stack.view().Slice(st_box)));
        start += sizes[ci];
      }
      // Combine over the stacking axis in rounds of random groups.
      const int axis0[] = {0};
      do {
        const Index m = stack.shape()[0];
        std::vector<Index> groups;
        for (Index left = m; left > 0;) {
          const Index s = std::min<Index>(left, 1 + rng.Below(4));
          groups.push_back(s);
          left -= s;
        }
        Shape next_shape = stack.shape();
        next_shape[0] = static_cast<Index>(groups.size());
        NDArray next = Alloc(k.state_dtype(), next_shape);
        Index g0 = 0;
        for (size_t g = 0; g < groups.size(); ++g) {
          Box in_box = Box::FromShape(stack.shape());
          in_box.origin[0] = g0;
          in_box.shape[0] = groups[g];
          Box out_box = Box::FromShape(next_shape);
          out_box.origin[0] = static_cast<Index>(g);
          out_box.shape[0] = 1;
          k.Combine(stack.view().Slice(in_box), axis0, next.view().Slice(out_box));
          g0 += groups[g];
        }
        stack = std::move(next);
      } while (stack.shape()[0] > 1);
      EXPECT_TRUE(Near(Finish(k, stack), expected, tol)) << "chunking " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SupportedOpsAndDTypes, GroupByTest, ::testing::ValuesIn(GroupPairs()),
                         GroupName);

TEST(GroupByTest, SupportedOps) {
  EXPECT_TRUE(GroupReduceSupported(ReduceOp::kSum));
  EXPECT_TRUE(GroupReduceSupported(ReduceOp::kCount));
  EXPECT_TRUE(GroupReduceSupported(ReduceOp::kVar));
  EXPECT_TRUE(GroupReduceSupported(ReduceOp::kArgmax));
  EXPECT_TRUE(GroupReduceSupported(ReduceOp::kNanFirst));
  EXPECT_FALSE(GroupReduceSupported(ReduceOp::kProd));
  EXPECT_FALSE(GroupReduceSupported(ReduceOp::kAll));
}

TEST(GroupByTest, EmptyGroupsOfFloatsAndInts) {
  // Labels {0, 2, -1, 0}: group 1 is empty, the third element skipped.
  const std::vector<int64_t> labels = {0, 2, -1, 0};
  NDArray f = Alloc(DTypeId::kFloat64, {4});
  NDArray i = Alloc(DTypeId::kInt32, {4});
  const double fv[] = {1.5, -2, 100, 0.5};
  const int32_t iv[] = {7, -3, 100, 9};
  for (int j = 0; j < 4; ++j) {
    f.values<double>()[j] = fv[j];
    i.values<int32_t>()[j] = iv[j];
  }
  auto run = [&](ReduceOp op, const NDArray& a) {
    auto k = *MakeReductionKernel(op, a.dtype());
    NDArray state = Alloc(k->state_dtype(), {3, k->state_width()});
    GroupPartial(*k, a.view(), 0, labels, 3, state.view());
    return Finish(*k, state);
  };
  NDArray mean = run(ReduceOp::kMean, f);
  EXPECT_DOUBLE_EQ(mean.values<double>()[0], 1.0);
  EXPECT_TRUE(std::isnan(mean.values<double>()[1]));
  EXPECT_DOUBLE_EQ(mean.values<double>()[2], -2);
  EXPECT_TRUE(std::isnan(run(ReduceOp::kMin, f).values<double>()[1]));
  EXPECT_TRUE(std::isnan(run(ReduceOp::kMax, f).values<double>()[1]));
  EXPECT_EQ(run(ReduceOp::kSum, f).values<double>()[1], 0);
  EXPECT_EQ(run(ReduceOp::kCount, f).values<int64_t>()[1], 0);
  EXPECT_EQ(run(ReduceOp::kCount, f).values<int64_t>()[0], 2);
  EXPECT_EQ(run(ReduceOp::kMin, i).values<int32_t>()[1], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(run(ReduceOp::kMax, i).values<int32_t>()[1], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(run(ReduceOp::kMin, i).values<int32_t>()[0], 7);
  EXPECT_EQ(run(ReduceOp::kMax, i).values<int32_t>()[0], 9);
  EXPECT_EQ(run(ReduceOp::kSum, i).values<int64_t>()[2], -3);
}

TEST(GroupByTest, NanHandling) {
  // Group 0 holds a NaN: count skips it, sum/mean/min/max propagate it.
  const std::vector<int64_t> labels = {0, 1, 0, 1, 0};
  NDArray a = Alloc(DTypeId::kFloat32, {5});
  const float v[] = {1, 2, std::nanf(""), 4, 5};
  std::copy(std::begin(v), std::end(v), a.values<float>().begin());
  auto run = [&](ReduceOp op) {
    auto k = *MakeReductionKernel(op, DTypeId::kFloat32);
    NDArray state = Alloc(k->state_dtype(), {2, k->state_width()});
    GroupPartial(*k, a.view(), 0, labels, 2, state.view());
    return Finish(*k, state);
  };
  EXPECT_EQ(run(ReduceOp::kCount).values<int64_t>()[0], 2);
  EXPECT_EQ(run(ReduceOp::kCount).values<int64_t>()[1], 2);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax}) {
    NDArray r = run(op);
    EXPECT_TRUE(std::isnan(r.values<float>()[0])) << ReduceOpName(op);
    EXPECT_FALSE(std::isnan(r.values<float>()[1])) << ReduceOpName(op);
  }
  EXPECT_EQ(run(ReduceOp::kMax).values<float>()[1], 4);
}

}  // namespace
}  // namespace strata
