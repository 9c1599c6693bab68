// map_blocks: user functions against whole-array references over many
// chunkings (ragged edges, size-1 chunks, zero-size arrays), custom output
// chunkings, BlockInfo, errors from and about the function, and the memory
// contract with extra_mem.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "strata/api/api_test_util.h"
#include "strata/core/synthetic.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::RecordingCallback;
using testing_util::SmallSpec;

// The synthetic float64 array random::random(shape, ..., seed) gives, whole.
NDArray Reference(const Shape& shape, uint64_t seed) {
  NDArray a = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, shape);
  FillSynthetic(a.view(), Box::FromShape(shape), shape, seed);
  return a;
}

template <typename T>
T At(const ConstArrayView& v, std::span<const Index> idx) {
  return *reinterpret_cast<const T*>(v.ElementPointer(idx));
}

Result<NDArray> ComputeWith(const Array& a, bool fuse = true) {
  PlanOptions p;
  if (!fuse) p.disabled_passes.insert("fuse");
  return compute(a, {}, p);
}

// out = 2 * in[0] + in[1], elementwise over the (broadcast) block views.
Result<NDArray> TwiceXPlusY(std::span<const ConstArrayView> in, const BlockInfo& info,
                            MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(pool, DTypeId::kFloat64, info.box.shape));
  if (out.num_elements() == 0) return out;
  if (in[0].shape() != info.box.shape || in[1].shape() != info.box.shape) {
    return InternalError("views are not broadcast to the block shape");
  }
  Shape idx(info.box.rank(), 0);
  Index i = 0;
  do {
    out.data_as<double>()[i++] = 2 * At<double>(in[0], idx) + At<double>(in[1], idx);
  } while (NextIndex(idx, info.box.shape));
  return out;
}

TEST(MapBlocksTest, ElementwiseWithBroadcastingOverChunkings) {
  std::mt19937 rng(7);
  const Shape shapes[] = {{13, 7}, {1, 9}, {6, 1}, {0, 5}, {5, 0}};
  for (const Shape& shape : shapes) {
    const Shape yshape = {shape[1]};
    NDArray x = Reference(shape, 1);
    NDArray y = Reference(yshape, 2);
    std::vector<std::pair<Shape, Shape>> chunkings = {
        {{1, 1}, {1}}, {shape, yshape}, {{100, 100}, {100}}};
    for (int t = 0; t < 5; ++t) {
      chunkings.push_back({testing_util::RandomChunks(shape, rng),
                           testing_util::RandomChunks(yshape, rng)});
    }
    for (const auto& [cx, cy] : chunkings) {
      SCOPED_TRACE("shape " + ShapeToString(shape) + " chunks " + ShapeToString(cx) + " and " +
                   ShapeToString(cy));
      Array a = random::random(shape, cx, 1, SmallSpec());
      Array b = random::random(yshape, cy, 2, SmallSpec());
      Array m = map_blocks(TwiceXPlusY, {a, b}, DTypeId::kFloat64);
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      // The output grid is x's (the first input spanning each axis).
      EXPECT_EQ(m.chunks(), a.chunks());
      Result<NDArray> got = ComputeWith(m);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_EQ(got->shape(), shape);
      for (Index i = 0; i < x.num_elements(); ++i) {
        const double want = 2 * x.data_as<double>()[i] + y.data_as<double>()[i % shape[1]];
        ASSERT_EQ(got->data_as<double>()[i], want) << i;
      }
    }
  }
}

TEST(MapBlocksTest, DisagreeingChunksAreUnified) {
  // Same shapes, different chunks: y is rechunked so that block b of each
  // input covers the same region (TwiceXPlusY checks the view shapes).
  const Shape shape = {11, 10};
  Array a = random::random(shape, {4, 3}, 1, SmallSpec());
  Array b = random::random(shape, {5, 7}, 2, SmallSpec());
  Result<NDArray> got = ComputeWith(map_blocks(TwiceXPlusY, {a, b}, DTypeId::kFloat64));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  NDArray x = Reference(shape, 1), y = Reference(shape, 2);
  for (Index i = 0; i < x.num_elements(); ++i) {
    ASSERT_EQ(got->data_as<double>()[i], 2 * x.data_as<double>()[i] + y.data_as<double>()[i]);
  }
}

// Per block: (sum of x's block + y's block sum, element count of x's block),
// as a (1, 2) block: a function that changes the block shape.
Result<NDArray> BlockSummary(std::span<const ConstArrayView> in, const BlockInfo& info,
                             MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(pool, DTypeId::kFloat64, {1, 2}));
  double s = 0;
  for (const ConstArrayView& v : in) {
    if (v.num_elements() == 0) continue;
    Shape idx(v.rank(), 0);
    do {
      s += At<double>(v, idx);
    } while (NextIndex(idx, v.shape()));
  }
  out.data_as<double>()[0] = s;
  out.data_as<double>()[1] = static_cast<double>(in[0].num_elements());
  return out;
}

TEST(MapBlocksTest, CustomChunksChangeTheBlockShape) {
  std::mt19937 rng(3);
  const Shape shape = {9, 8};
  NDArray x = Reference(shape, 1);
  NDArray y = Reference({8}, 2);
  std::vector<Shape> chunkings = {{1, 1}, {9, 8}, {4, 3}, {2, 5}};
  for (int t = 0; t < 4; ++t) chunkings.push_back(testing_util::RandomChunks(shape, rng));
  for (const Shape& c : chunkings) {
    SCOPED_TRACE("chunks " + ShapeToString(c));
    Array a = random::random(shape, c, 1, SmallSpec());
    Array b = random::random({8}, {c[1]}, 2, SmallSpec());
    Array m = map_blocks(BlockSummary, {a, b}, DTypeId::kFloat64, {1, 2});
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    const Shape grid = a.chunks().grid_shape();
    ASSERT_EQ(m.shape(), Shape({grid[0], 2 * grid[1]}));
    EXPECT_EQ(m.chunksize(), Shape({1, 2}));
    Result<NDArray> got = ComputeWith(m);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    // The input blocks arrive as they are (ragged edges included, y's block
    // of rank 1): the reference sums the same regions.
    for (Index i = 0; i < grid[0]; ++i) {
      for (Index j = 0; j < grid[1]; ++j) {
        const Shape block = {i, j};
        const Box box = a.chunks().BlockBox(block);
        double s = 0;
        for (Index r = box.origin[0]; r < box.end(0); ++r) {
          for (Index k = box.origin[1]; k < box.end(1); ++k) s += x.data_as<double>()[r * 8 + k];
        }
        for (Index k = box.origin[1]; k < box.end(1); ++k) s += y.data_as<double>()[k];
        const double* o = got->data_as<double>() + i * (2 * grid[1]) + 2 * j;
        EXPECT_NEAR(o[0], s, 1e-12 * (1 + std::abs(s)));
        EXPECT_EQ(o[1], static_cast<double>(box.num_elements()));
      }
    }
  }
  // A zero-size input gives a zero-size output along that axis.
  Array empty = random::random({0, 8}, {1, 3}, 1, SmallSpec());
  Array m = map_blocks(BlockSummary, {empty}, DTypeId::kFloat64, {1, 2});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m.shape(), Shape({0, 6}));
  Result<NDArray> got = ComputeWith(m);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->shape(), Shape({0, 6}));
}

// Writes each element's flat index in the whole array (from info.box).
Result<NDArray> GlobalIndex(const Shape& array_shape, std::span<const ConstArrayView>,
                            const BlockInfo& info, MemoryPool& pool) {
  STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(pool, DTypeId::kInt64, info.box.shape));
  if (out.num_elements() == 0) return out;
  Shape idx(info.box.rank(), 0);
  Index i = 0;
  do {
    Shape g = idx;
    for (int k = 0; k < info.box.rank(); ++k) g[k] += info.box.origin[k];
    out.data_as<int64_t>()[i++] = LinearIndex(g, array_shape);
  } while (NextIndex(idx, info.box.shape));
  return out;
}

TEST(MapBlocksTest, BlockInfoGivesTheBlockAndItsBox) {
  std::mt19937 rng(5);
  const Shape shapes[] = {{10, 7, 3}, {1, 1, 1}, {4, 0, 2}};
  for (const Shape& shape : shapes) {
    std::vector<Shape> chunkings = {{1, 1, 1}, shape};
    for (int t = 0; t < 4; ++t) chunkings.push_back(testing_util::RandomChunks(shape, rng));
    for (const Shape& c : chunkings) {
      SCOPED_TRACE("shape " + ShapeToString(shape) + " chunks " + ShapeToString(c));
      Array a = zeros(shape, c, DTypeId::kFloat32, SmallSpec());
      const ChunkGrid grid = a.chunks();
      auto fn = [shape, grid](std::span<const ConstArrayView> in, const BlockInfo& info,
                              MemoryPool& pool) -> Result<NDArray> {
        if (grid.BlockBox(info.block) != info.box) return InternalError("box does not match");
        return GlobalIndex(shape, in, info, pool);
      };
      Result<NDArray> got = ComputeWith(map_blocks(fn, {a}, DTypeId::kInt64, {}, 0, "index"));
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_EQ(got->shape(), shape);
      for (Index i = 0; i < got->num_elements(); ++i) ASSERT_EQ(got->data_as<int64_t>()[i], i);
    }
  }
}

TEST(MapBlocksTest, RankZeroInput) {
  Array a = asarray(*NDArray::Zeros(*MemoryPool::Default(), DTypeId::kFloat64, {}), {},
                    SmallSpec());
  auto fn = [](std::span<const ConstArrayView> in, const BlockInfo& info,
               MemoryPool& pool) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(pool, DTypeId::kFloat64, {}));
    *out.data_as<double>() = *reinterpret_cast<const double*>(in[0].data()) + 4.5;
    return out;
  };
  Result<NDArray> got = ComputeWith(map_blocks(fn, {a}, DTypeId::kFloat64));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got->data_as<double>(), 4.5);
}

TEST(MapBlocksTest, WrongShapeOrDTypeNamesTheBlock) {
  Array a = random::random({6, 4}, {3, 4}, 1, SmallSpec());
  // Block 1.0 comes back one row short.
  auto short_block = [](std::span<const ConstArrayView>, const BlockInfo& info,
                        MemoryPool& pool) -> Result<NDArray> {
    Shape s = info.box.shape;
    if (info.block[0] == 1) s[0] -= 1;
    return NDArray::Zeros(pool, DTypeId::kFloat64, s);
  };
  Result<NDArray> r = ComputeWith(map_blocks(short_block, {a}, DTypeId::kFloat64, {}, 0, "shrink"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(
                "shrink: the function returned a float64 block of shape (2, 4) for block 1.0, "
                "expected float64 of shape (3, 4)"),
            std::string_view::npos)
      << r.status().ToString();

  auto wrong_dtype = [](std::span<const ConstArrayView>, const BlockInfo& info,
                        MemoryPool& pool) -> Result<NDArray> {
    return NDArray::Zeros(pool, DTypeId::kFloat32, info.box.shape);
  };
  r = ComputeWith(map_blocks(wrong_dtype, {a}, DTypeId::kFloat64));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("returned a float32 block of shape (3, 4) for block"),
            std::string_view::npos)
      << r.status().ToString();

  // With custom chunks the declared chunk shape is what is expected.
  r = ComputeWith(map_blocks(short_block, {a}, DTypeId::kFloat64, {2, 2}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "of shape (1, 2) for block 1.0, expected float64 of shape (2, 2)"),
            std::string_view::npos)
      << r.status().ToString();
}

TEST(MapBlocksTest, FunctionErrorsPropagateWithContext) {
  Array a = random::random({6, 4}, {2, 2}, 1, SmallSpec());
  auto fails = [](std::span<const ConstArrayView>, const BlockInfo& info,
                  MemoryPool& pool) -> Result<NDArray> {
    if (info.block[0] == 2 && info.block[1] == 1) return NotFoundError("no station table");
    return NDArray::Zeros(pool, DTypeId::kFloat64, info.box.shape);
  };
  for (bool fuse : {true, false}) {
    Result<NDArray> r = ComputeWith(map_blocks(fails, {a * 2.0}, DTypeId::kFloat64, {}, 0,
                                               "lookup"),
                                    fuse);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
    EXPECT_NE(r.status().message().find("lookup: block 2.1: no station table"),
              std::string_view::npos)
        << r.status().ToString();
  }
}

TEST(MapBlocksTest, BadArguments) {
  Array a = random::random({6, 4}, {2, 2}, 1, SmallSpec());
  Array b = random::random({5}, {2}, 1, SmallSpec());
  auto expect_invalid = [](const Array& m, std::string_view text) {
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find(text), std::string_view::npos) << m.status().ToString();
  };
  expect_invalid(map_blocks(TwiceXPlusY, {a, b}, DTypeId::kFloat64),
                 "map_blocks: shapes (6, 4) and (5,) cannot be broadcast");
  expect_invalid(map_blocks(TwiceXPlusY, {a}, DTypeId::kFloat64, {2}),
                 "map_blocks: chunks (2,) have rank 1 but the inputs' blocks have rank 2 (grid (3, 2))");
  expect_invalid(map_blocks(TwiceXPlusY, {a}, DTypeId::kFloat64, {2, 0}),
                 "chunks (2, 0) must be at least 1 along every axis");
  expect_invalid(map_blocks(TwiceXPlusY, {}, DTypeId::kFloat64), "map_blocks: no arrays given");
  expect_invalid(map_blocks(nullptr, {a}, DTypeId::kFloat64), "map_blocks: no function given");
  expect_invalid(map_blocks(TwiceXPlusY, {a}, DTypeId::kFloat64, {}, -1),
                 "map_blocks: extra_mem -1 is negative");
  // An error input passes its error on.
  Array bad = sum(a, {5});
  Array m = map_blocks(TwiceXPlusY, {bad, a}, DTypeId::kFloat64);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), bad.status().message());
}

TEST(MapBlocksTest, ScratchFromThePoolIsMeasuredWithinExtraMem) {
  Spec spec;
  spec.allowed_mem = "100MB";
  spec.reserved_mem = "1MB";
  spec.workers = 2;
  constexpr int64_t kScratch = 8 << 20;
  // 4 MB blocks; the function takes 8 MB of scratch from the task's pool.
  Array a = random::random({1024, 2048}, {256, 2048}, 1, spec);
  auto fn = [](std::span<const ConstArrayView> in, const BlockInfo& info,
               MemoryPool& pool) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(Buffer scratch, pool.Allocate(kScratch));
    std::memset(scratch.data(), 1, scratch.size());
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(pool, DTypeId::kFloat64, info.box.shape));
    CopyArray(in[0], out.view());
    out.data_as<double>()[0] += static_cast<double>(scratch.data()[0]);
    return out;
  };
  Array m = map_blocks(fn, {a + 1.0}, DTypeId::kFloat64, {}, kScratch, "scratchy");
  Result<std::shared_ptr<const Plan>> p = plan({m});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const PlannedOp* op = (*p)->Find(m.node().get());
  ASSERT_NE(op, nullptr);
  EXPECT_GE(op->projected_mem, kScratch + 2 * (256 * 2048 * 8));
  for (bool fuse : {true, false}) {
    auto rec = std::make_shared<RecordingCallback>();
    ComputeOptions options;
    options.callbacks.push_back(rec);
    PlanOptions popts;
    if (!fuse) popts.disabled_passes.insert("fuse");
    Result<NDArray> r = compute(m, options, popts);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    rec->ExpectWithinBudget();
    int64_t peak = 0;
    for (const TaskEndEvent& e : rec->events) {
      if (e.op_name == "scratchy") peak = std::max(peak, e.measured_peak);
    }
    EXPECT_GE(peak, kScratch);  // the scratch was counted
  }
  // A scratch need beyond the budget is refused before anything runs.
  Result<NDArray> over = compute(map_blocks(fn, {a}, DTypeId::kFloat64, {}, 200 << 20, "greedy"));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("op 'greedy'"), std::string_view::npos)
      << over.status().ToString();
}

TEST(MapBlocksTest, SameBytesOnInlineAndThreadsAndWithoutFusion) {
  auto build = [](ExecutorKind executor) {
    Spec spec = SmallSpec();
    spec.executor = executor;
    Array a = random::random({30, 20}, {7, 6}, 1, spec);
    Array b = random::random({20}, {9}, 2, spec);
    return sum(map_blocks(TwiceXPlusY, {exp(a), b}, DTypeId::kFloat64) * 3.0, {0});
  };
  Result<NDArray> threads = ComputeWith(build(ExecutorKind::kThreads));
  Result<NDArray> unfused = ComputeWith(build(ExecutorKind::kThreads), false);
  Result<NDArray> inl = ComputeWith(build(ExecutorKind::kInline));
  ASSERT_TRUE(threads.ok() && unfused.ok() && inl.ok());
  ASSERT_EQ(threads->nbytes(), inl->nbytes());
  EXPECT_EQ(0, std::memcmp(threads->data(), inl->data(), threads->nbytes()));
  EXPECT_EQ(0, std::memcmp(threads->data(), unfused->data(), threads->nbytes()));
}

}  // namespace
}  // namespace strata
