// The memory contract for the ops of issue 16: under an allowed_mem just
// above what each plan needs, every task's measured peak <= its projection <=
// allowed_mem (RunTight, memory_contract_test_util.h), over 8 MB chunks so that
// the whole file stays fast under ASan. Values are checked at a few points.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "strata/api/memory_contract_test_util.h"
#include "strata/core/synthetic.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::History;
using testing_util::RunTight;

constexpr Index kRows = 500, kCols = 2000;  // 8 MB of float64
constexpr int64_t kChunkBytes = kRows * kCols * 8;

double At(const Shape& shape, uint64_t seed, Index i, Index j) {
  return SyntheticUniform(seed, static_cast<uint64_t>(i * shape[1] + j));
}

// Uniform data with NaN where it is below 0.1.
Array WithNan(const Shape& shape, uint64_t seed, const Spec& spec) {
  Array a = random::random(shape, {kRows, kCols}, seed, spec);
  return where(a < 0.1, Scalar(std::nan("")), a);
}

TEST(MemoryContractExtrasTest, NanMeanStreamsItsInput) {
  const Shape shape = {3 * kRows, kCols};
  History h = RunTight(
      [&](const Spec& spec) { return std::vector<Array>{nanmean(WithNan(shape, 1, spec), {0})}; },
      kCols * 8);
  ASSERT_EQ(h.results.size(), 1u);
  for (Index j : {Index{0}, Index{1234}}) {
    double s = 0, n = 0;
    for (Index i = 0; i < shape[0]; ++i) {
      const double v = At(shape, 1, i, j);
      if (v >= 0.1) s += v, n += 1;
    }
    EXPECT_NEAR(h.results[0].data_as<double>()[j], s / n, 1e-12);
  }
}

TEST(MemoryContractExtrasTest, GroupbyVarWithLabelArray) {
  const Shape shape = {4 * kRows, kCols};
  History h = RunTight(
      [&](const Spec& spec) {
        Array labels =
            astype(arange(0, static_cast<double>(shape[0]), 1, {kRows}, std::nullopt, spec) % 12,
                   DTypeId::kInt32);
        GroupbyOptions o;
        o.num_groups = 12;
        return std::vector<Array>{
            groupby_reduce(WithNan(shape, 2, spec), labels, 0, ReduceOp::kVar, o)};
      },
      kChunkBytes);
  ASSERT_EQ(h.results.size(), 1u);
  ASSERT_EQ(h.results[0].shape(), Shape({12, kCols}));
  for (Index g : {Index{0}, Index{11}}) {
    const Index j = 7;
    double s = 0, q = 0, n = 0;
    for (Index i = g; i < shape[0]; i += 12) {
      const double v = At(shape, 2, i, j);
      if (v < 0.1) continue;
      s += v, q += v * v, n += 1;
    }
    const double mean = s / n;
    EXPECT_NEAR(h.results[0].data_as<double>()[g * kCols + j], q / n - mean * mean, 1e-9);
  }
}

TEST(MemoryContractExtrasTest, PointwiseSelectionOutOfOrder) {
  const Shape shape = {2 * kRows, 2 * kCols};
  const std::vector<Index> rows = {999, 3, 500, 7, 998}, cols = {3999, 0, 2100, 5, 1};
  History h = RunTight(
      [&](const Spec& spec) {
        Array x = random::random(shape, {kRows, kCols}, 3, spec);
        return std::vector<Array>{vindex(x, {rows, cols})};
      },
      kChunkBytes);
  ASSERT_EQ(h.results.size(), 1u);
  for (size_t p = 0; p < rows.size(); ++p) {
    EXPECT_EQ(h.results[0].data_as<double>()[p], At(shape, 3, rows[p], cols[p]));
  }
}

TEST(MemoryContractExtrasTest, BooleanMask) {
  const Shape shape = {2 * kRows, kCols};
  History h = RunTight(
      [&](const Spec& spec) {
        Array x = random::random(shape, {kRows, kCols}, 4, spec);
        return std::vector<Array>{boolean_mask(x, x < 0.001)};
      },
      kChunkBytes);
  ASSERT_EQ(h.results.size(), 1u);
  Index k = 0;
  for (Index i = 0; i < shape[0] && k < 3; ++i) {
    for (Index j = 0; j < shape[1] && k < 3; ++j) {
      const double v = At(shape, 4, i, j);
      if (v < 0.001) {
        EXPECT_EQ(h.results[0].data_as<double>()[k++], v);
      }
    }
  }
}

TEST(MemoryContractExtrasTest, CumulativeSumAndDiff) {
  const Shape shape = {4 * kRows, kCols};
  History h = RunTight(
      [&](const Spec& spec) {
        Array x = random::random(shape, {kRows, kCols}, 5, spec);
        return std::vector<Array>{cumulative_sum(x, 0), diff(x, 0)};
      },
      kChunkBytes);
  ASSERT_EQ(h.results.size(), 2u);
  const Index j = 11;
  double s = 0;
  for (Index i = 0; i < shape[0]; ++i) s += At(shape, 5, i, j);
  EXPECT_NEAR(h.results[0].data_as<double>()[(shape[0] - 1) * kCols + j], s, 1e-9);
  EXPECT_EQ(h.results[1].data_as<double>()[(kRows - 1) * kCols + j],
            At(shape, 5, kRows, j) - At(shape, 5, kRows - 1, j));
}

TEST(MemoryContractExtrasTest, SortAlongAnAxis) {
  const Shape shape = {kRows, 2 * kCols};
  History h = RunTight(
      [&](const Spec& spec) {
        Array x = random::random(shape, {kRows, kCols}, 6, spec);
        return std::vector<Array>{sort(x, 0)};
      },
      kChunkBytes / 2);
  ASSERT_EQ(h.results.size(), 1u);
  std::vector<double> col(kRows);
  for (Index i = 0; i < kRows; ++i) col[i] = At(shape, 6, i, 17);
  std::sort(col.begin(), col.end());
  for (Index i : {Index{0}, kRows - 1}) {
    EXPECT_EQ(h.results[0].data_as<double>()[i * 2 * kCols + 17], col[i]);
  }
}

TEST(MemoryContractExtrasTest, PadRollAndMapOverlap) {
  const Shape shape = {2 * kRows, kCols};
  History h = RunTight(
      [&](const Spec& spec) {
        Array x = random::random(shape, {kRows, kCols}, 7, spec);
        OverlapOptions o;
        o.depth = {2, 0};
        o.boundary = {Boundary::kPeriodic};
        Array smooth = map_overlap([](std::span<const ConstArrayView> b, const BlockInfo&,
                                      MemoryPool& pool) { return NDArray::CopyOf(pool, b[0]); },
                                   x, DTypeId::kFloat64, o);
        return std::vector<Array>{pad(x, {{3, 3}, {0, 0}}, PadMode::kReflect), roll(x, 5, 0),
                                  smooth};
      },
      kChunkBytes);
  ASSERT_EQ(h.results.size(), 3u);
  EXPECT_EQ(h.results[0].data_as<double>()[0 * kCols + 9], At(shape, 7, 3, 9));
  EXPECT_EQ(h.results[1].data_as<double>()[0 * kCols + 9], At(shape, 7, shape[0] - 5, 9));
  EXPECT_EQ(h.results[2].data_as<double>()[kRows * kCols + 9], At(shape, 7, kRows, 9));
}

// Two arrays with their halos into one function (trim off: it returns the
// block), and a gufunc of two outputs packed into one intermediate block.
TEST(MemoryContractExtrasTest, MapOverlapOfTwoAndGufuncOfTwoOutputs) {
  const Shape shape = {2 * kRows, kCols};
  History h = RunTight(
      [&](const Spec& spec) {
        Array x = random::random(shape, {kRows, kCols}, 7, spec);
        Array y = random::random(shape, {kRows, kCols}, 8, spec);
        OverlapOptions o;
        o.depth = {1, 0};
        o.boundary = {Boundary::kNearest};
        o.trim = false;
        // The block's own rows of x - y (the halo row dropped).
        Array diff = map_overlap(
            [](std::span<const ConstArrayView> b, const BlockInfo& info,
               MemoryPool& pool) -> Result<NDArray> {
              Box own(Shape{1, 0}, info.box.shape);
              STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::CopyOf(pool, b[0].Slice(own)));
              NDArray other = *NDArray::CopyOf(pool, b[1].Slice(own));
              for (Index i = 0; i < out.num_elements(); ++i) {
                out.data_as<double>()[i] -= other.data_as<double>()[i];
              }
              return out;
            },
            std::vector<Array>{x, y}, DTypeId::kFloat64, o);
        // Per row: the row itself and its sum.
        std::vector<Array> parts = apply_gufunc(
            [](std::span<const ConstArrayView> b, const BlockInfo& loop,
               MemoryPool& pool) -> Result<std::vector<NDArray>> {
              STRATA_ASSIGN_OR_RETURN(NDArray row, NDArray::CopyOf(pool, b[0]));
              STRATA_ASSIGN_OR_RETURN(NDArray sum,
                                      NDArray::Zeros(pool, DTypeId::kFloat64, loop.box.shape));
              const Index n = row.shape().back();
              for (Index i = 0; i < sum.num_elements(); ++i) {
                for (Index k = 0; k < n; ++k) {
                  sum.data_as<double>()[i] += row.data_as<double>()[i * n + k];
                }
              }
              std::vector<NDArray> out;
              out.push_back(std::move(row));
              out.push_back(std::move(sum));
              return out;
            },
            "(j)->(j),()", {x}, {DTypeId::kFloat64, DTypeId::kFloat64}, GufuncOptions());
        return std::vector<Array>{diff, parts[0], parts[1]};
      },
      kChunkBytes);
  ASSERT_EQ(h.results.size(), 3u);
  EXPECT_EQ(h.results[0].data_as<double>()[kRows * kCols + 9],
            At(shape, 7, kRows, 9) - At(shape, 8, kRows, 9));
  EXPECT_EQ(h.results[1].data_as<double>()[3 * kCols + 5], At(shape, 7, 3, 5));
  double sum = 0;
  for (Index j = 0; j < kCols; ++j) sum += At(shape, 7, 17, j);
  EXPECT_NEAR(h.results[2].data_as<double>()[17], sum, 1e-9);
}

}  // namespace
}  // namespace strata
