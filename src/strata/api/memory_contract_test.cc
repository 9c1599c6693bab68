// The memory contract, asserted from the history file a user would get: for
// elementwise math, a reduction, matmul, concat, take and groupby_reduce over
// ~50 MB chunks, under an allowed_mem just above what the plan needs, every
// task's measured peak <= its projection <= allowed_mem.
//
// Each test plans its expression once under a generous budget to learn the
// largest per-task projection P, then rebuilds it under allowed_mem = P plus
// a small margin (so the budget binds), runs it with a HistoryCallback writing
// JSON lines to a temporary file, and checks every "task" and "op" line.
// Arrays have 2-4 chunks each so that the file stays fast under ASan.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "strata/api/memory_contract_test_util.h"
#include "strata/base/temp_dir.h"
#include "strata/base/tuning.h"
#include "strata/core/synthetic.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::BudgetSpec;
using testing_util::Builder;
using testing_util::History;
using testing_util::kMB;
using testing_util::RunTight;

// 50 MB float64 chunks: (1250, 5000) blocks.
constexpr Index kRows = 1250, kCols = 5000;
constexpr int64_t kChunkBytes = kRows * kCols * 8;

// The synthetic value of element (i, j) of an array of `shape`.
double At(const Shape& shape, uint64_t seed, Index i, Index j) {
  return SyntheticUniform(seed, static_cast<uint64_t>(i * shape[1] + j));
}

TEST(MemoryContractTest, Elementwise) {
  const Shape shape = {2 * kRows, kCols};
  History h = RunTight(
      [&](const Spec& spec) {
        Array a = random::random(shape, {kRows, kCols}, 1, spec);
        Array b = random::random(shape, {kRows, kCols}, 2, spec);
        return std::vector<Array>{a * b + sqrt(a)};
      },
      kChunkBytes);
  ASSERT_EQ(h.results.size(), 1u);
  ASSERT_EQ(h.results[0].shape(), shape);
  for (Index i : {Index{0}, kRows - 1, kRows, 2 * kRows - 1}) {
    for (Index j : {Index{0}, kCols - 1}) {
      const double a = At(shape, 1, i, j), b = At(shape, 2, i, j);
      EXPECT_EQ(h.results[0].data_as<double>()[i * kCols + j], a * b + std::sqrt(a));
    }
  }
}

TEST(MemoryContractTest, Reduction) {
  // Four chunks along the reduced axis: partial reduce and combine rounds.
  // Fused, the partial reduce computes a * a strip by strip; unfused, it
  // reads whole 50 MB blocks of the materialized a * a.
  const Shape shape = {4 * kRows, kCols};
  for (bool fuse : {true, false}) {
    SCOPED_TRACE(fuse ? "fused" : "unfused");
    History h = RunTight(
        [&](const Spec& budget) {
          Spec spec = budget;
          spec.fuse = fuse;
          Array a = random::random(shape, {kRows, kCols}, 3, spec);
          ReduceOptions two;
          two.split_every = 2;
          return std::vector<Array>{mean(a * a, {0}, two)};
        },
        fuse ? kCols * 8 : kChunkBytes);
    ASSERT_EQ(h.results.size(), 1u);
    ASSERT_EQ(h.results[0].shape(), Shape({kCols}));
    for (Index j : {Index{0}, Index{4321}}) {
      double s = 0;
      for (Index i = 0; i < shape[0]; ++i) s += At(shape, 3, i, j) * At(shape, 3, i, j);
      EXPECT_NEAR(h.results[0].data_as<double>()[j], s / shape[0], 1e-12);
    }
  }
}

// Means of products of two Zarr arrays of 64 MB chunks (quadratic means):
// the partial reductions, one sibling group, read each chunk a strip of
// Tuning::stream_part_bytes at a time (whole chunks would be projected at
// more than 2 chunks) and compute it in pieces, and the states are the
// whole chunk's bit for bit.
TEST(MemoryContractTest, ReductionReadsZarrChunksInStrips) {
  const Shape shape = {256, 256, 128};
  const Index plane = 256 * 128;
  const int64_t chunk_bytes = NumElements(shape) * 8;
  TempDir dir;
  const std::string u_path = dir.path() + "/u.zarr", v_path = dir.path() + "/v.zarr";
  ASSERT_TRUE(compute(to_zarr(random::random(shape, shape, 11), u_path)).ok());
  ASSERT_TRUE(compute(to_zarr(random::random(shape, shape, 12), v_path)).ok());
  const Builder build = [&](const Spec& spec) {
    Array u = from_zarr(u_path, spec), v = from_zarr(v_path, spec);
    // And a sum straight over a chunk, along an axis kept by the strips.
    return std::vector<Array>{mean(u * v, {0}), mean(u * u, {0}), sum(u, {1})};
  };
  if (!GetTuning().tiny) {  // tiny strips hold less than the 4 blosc blocks a strip needs
    EXPECT_LT(testing_util::MaxProjection(build(BudgetSpec(4000 * kMB))), 2 * chunk_bytes);
  }
  History h = RunTight(build, plane * 8);  // a state
  ASSERT_EQ(h.results.size(), 3u);
  for (Index i : {Index{0}, plane - 1, Index{7777}}) {
    double uv = 0, uu = 0;  // folded in order, as the state is
    for (Index t = 0; t < shape[0]; ++t) {
      const double a = SyntheticUniform(11, static_cast<uint64_t>(t * plane + i));
      const double b = SyntheticUniform(12, static_cast<uint64_t>(t * plane + i));
      uv += a * b;
      uu += a * a;
    }
    EXPECT_EQ(h.results[0].data_as<double>()[i], uv / 256) << i;
    EXPECT_EQ(h.results[1].data_as<double>()[i], uu / 256) << i;
  }
  for (Index t : {Index{0}, Index{131}, Index{255}}) {
    for (Index c : {Index{0}, Index{127}}) {
      double want = 0;
      for (Index b = 0; b < 256; ++b) {
        want += SyntheticUniform(11, static_cast<uint64_t>(t * plane + b * 128 + c));
      }
      EXPECT_EQ(h.results[2].data_as<double>()[t * 128 + c], want) << t << " " << c;
    }
  }
}

// Sibling partial reductions over two chunks along the reduced axis: each
// task of the group folds both members' strips in lockstep, each leaf's
// strip read once (TaskRunner::FoldStrips), and the model counts each strip
// once (MemoryModel::StripsPeak; it counted each twice).
TEST(MemoryContractTest, SiblingPartialsFoldStripsInLockstep) {
  const Shape shape = {512, 128, 128}, chunks = {256, 128, 128};  // 32 MB chunks
  const Index plane = 128 * 128;
  TempDir dir;
  const std::string u_path = dir.path() + "/u.zarr", v_path = dir.path() + "/v.zarr";
  ASSERT_TRUE(compute(to_zarr(random::random(shape, chunks, 21), u_path)).ok());
  ASSERT_TRUE(compute(to_zarr(random::random(shape, chunks, 22), v_path)).ok());
  History h = RunTight(
      [&](const Spec& spec) {
        Array u = from_zarr(u_path, spec), v = from_zarr(v_path, spec);
        return std::vector<Array>{mean(u * v, {0}), mean(v * v, {0})};
      },
      2 * plane * 8);  // both members' states
  if (!GetTuning().tiny) {
    const int64_t reserved = 10 * kMB;  // BudgetSpec's reserved_mem
    EXPECT_LT(h.max_projected - reserved, h.max_measured * 13 / 10)
        << h.max_projected << " projected, " << h.max_measured << " measured";
  }
  ASSERT_EQ(h.results.size(), 2u);
  for (Index i : {Index{0}, plane - 1, Index{4321}}) {
    double uv = 0, vv = 0;
    for (Index t = 0; t < shape[0]; ++t) {
      const double a = SyntheticUniform(21, static_cast<uint64_t>(t * plane + i));
      const double b = SyntheticUniform(22, static_cast<uint64_t>(t * plane + i));
      uv += a * b;
      vv += b * b;
    }
    EXPECT_NEAR(h.results[0].data_as<double>()[i], uv / 512, 1e-12) << i;
    EXPECT_NEAR(h.results[1].data_as<double>()[i], vv / 512, 1e-12) << i;
  }
}

// A source chunk cut short is an error on the strip path too: one line
// naming the chunk (and, read in strips, the strip), nothing left in
// work_dir, the source untouched.
TEST(MemoryContractTest, TruncatedChunkReadInStripsIsAnError) {
  const Shape shape = {256, 256, 128};  // one 64 MB chunk
  TempDir dir;
  const std::string u_path = dir.path() + "/u.zarr";
  ASSERT_TRUE(compute(to_zarr(random::random(shape, shape, 13), u_path)).ok());
  const std::string chunk = u_path + "/0.0.0";
  const auto size = std::filesystem::file_size(chunk);
  std::filesystem::resize_file(chunk, size / 2);
  Spec spec = BudgetSpec(4000 * kMB);
  spec.work_dir = dir.path() + "/work";
  Array u = from_zarr(u_path, spec);
  Result<NDArray> r = compute(mean(u * u, {0}));
  ASSERT_FALSE(r.ok());
  const std::string message = r.status().ToString();
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("0.0.0"), std::string::npos) << message;
  if (!GetTuning().tiny) {  // read in strips of stream_part_bytes: 64 of the 256 rows
    EXPECT_NE(message.find("[0:64, 0:256, 0:128]"), std::string::npos) << message;
  }
  EXPECT_EQ(std::filesystem::file_size(chunk), size / 2);
  if (std::filesystem::exists(spec.work_dir)) {
    EXPECT_TRUE(std::filesystem::is_empty(spec.work_dir));
  }
}

TEST(MemoryContractTest, Matmul) {
  const Shape as = {250000, 50}, bs = {50, 8};  // a: two 50 MB chunks
  History h = RunTight(
      [&](const Spec& spec) {
        Array a = random::random(as, {125000, 50}, 4, spec);
        Array b = random::random(bs, {25, 8}, 5, spec);
        return std::vector<Array>{matmul(a, b)};
      },
      // a's rows rechunked along k to b's 25 rows: a quarter of them per
      // task, the partial products folded into the sum's state one k block
      // at a time (the combine round fused, MemoryModel::ProjectFold).
      62500 * 25 * 8);
  ASSERT_EQ(h.results.size(), 1u);
  ASSERT_EQ(h.results[0].shape(), Shape({250000, 8}));
  for (Index i : {Index{0}, Index{125000}, Index{249999}}) {
    double want = 0;
    for (Index p = 0; p < 50; ++p) want += At(as, 4, i, p) * At(bs, 5, p, 3);
    EXPECT_NEAR(h.results[0].data_as<double>()[i * 8 + 3], want, 1e-12);
  }
}

TEST(MemoryContractTest, Concat) {
  const Shape shape = {kRows, kCols};
  History h = RunTight(
      [&](const Spec& spec) {
        Array a = random::random(shape, {kRows, kCols}, 6, spec);
        Array b = random::random(shape, {kRows, kCols}, 7, spec);
        return std::vector<Array>{concat({a, b}, 0)};
      },
      kChunkBytes);
  ASSERT_EQ(h.results.size(), 1u);
  ASSERT_EQ(h.results[0].shape(), Shape({2 * kRows, kCols}));
  EXPECT_EQ(h.results[0].data_as<double>()[5], At(shape, 6, 0, 5));
  EXPECT_EQ(h.results[0].data_as<double>()[kRows * kCols + 5], At(shape, 7, 0, 5));
  EXPECT_EQ(h.results[0].data_as<double>()[2 * kRows * kCols - 1],
            At(shape, 7, kRows - 1, kCols - 1));
}

TEST(MemoryContractTest, Take) {
  const Shape shape = {3 * kRows, kCols};  // three 50 MB blocks along axis 0
  const std::vector<Index> indices = {3 * kRows - 1, 2, kRows + 7, 2, 2 * kRows};
  History h = RunTight(
      [&](const Spec& spec) {
        Array x = random::random(shape, {kRows, kCols}, 8, spec);
        return std::vector<Array>{take(x, indices, 0)};
      },
      kChunkBytes);
  ASSERT_EQ(h.results.size(), 1u);
  ASSERT_EQ(h.results[0].shape(), Shape({5, kCols}));
  for (size_t t = 0; t < indices.size(); ++t) {
    for (Index j : {Index{0}, Index{17}, kCols - 1}) {
      EXPECT_EQ(h.results[0].data_as<double>()[t * kCols + j], At(shape, 8, indices[t], j));
    }
  }
}

TEST(MemoryContractTest, GroupbyReduce) {
  // Mean per group of columns (two 50 MB blocks along the grouped axis).
  const Shape shape = {kRows, 2 * kCols};
  const Index kGroups = 40;
  std::vector<int64_t> labels(shape[1]);
  for (Index p = 0; p < shape[1]; ++p) labels[p] = (p * 7) % 43 < kGroups ? (p * 7) % 43 : -1;
  History h = RunTight(
      [&](const Spec& spec) {
        Array x = random::random(shape, {kRows, kCols}, 9, spec);
        return std::vector<Array>{groupby_reduce(x, labels, 1, ReduceOp::kMean, kGroups)};
      },
      kChunkBytes);
  ASSERT_EQ(h.results.size(), 1u);
  ASSERT_EQ(h.results[0].shape(), Shape({kRows, kGroups}));
  for (Index i : {Index{0}, kRows - 1}) {
    std::vector<double> sum(kGroups, 0), count(kGroups, 0);
    for (Index p = 0; p < shape[1]; ++p) {
      if (labels[p] < 0) continue;
      sum[labels[p]] += At(shape, 9, i, p);
      count[labels[p]] += 1;
    }
    for (Index g = 0; g < kGroups; ++g) {
      EXPECT_NEAR(h.results[0].data_as<double>()[i * kGroups + g], sum[g] / count[g], 1e-12);
    }
  }
}

}  // namespace
}  // namespace strata
