#include "strata/core/synthetic.h"

#include <gtest/gtest.h>

#include "strata/core/chunk_grid.h"

namespace strata {
namespace {

// Generating an array whole or block by block in any chunking gives the same bytes.
TEST(SyntheticTest, IndependentOfChunking) {
  auto& pool = *MemoryPool::Default();
  Shape shape = {13, 7, 5};
  for (int t = 0; t < kNumDTypes; ++t) {
    DType dtype(static_cast<DTypeId>(t));
    NDArray whole = *NDArray::Allocate(pool, dtype, shape);
    FillSynthetic(whole.view(), Box::FromShape(shape), shape, 42);
    for (Shape chunks : {Shape{4, 3, 5}, Shape{1, 7, 2}, Shape{13, 1, 1}}) {
      ChunkGrid grid = *ChunkGrid::Regular(shape, chunks);
      NDArray assembled = *NDArray::Allocate(pool, dtype, shape);
      Shape block(3, 0);
      do {
        Box box = grid.BlockBox(block);
        NDArray piece = *NDArray::Allocate(pool, dtype, box.shape);
        FillSynthetic(piece.view(), box, shape, 42);
        CopyArray(piece.view(), assembled.view().Slice(box));
      } while (NextIndex(block, grid.grid_shape()));
      EXPECT_TRUE(ArraysEqual(whole.view(), assembled.view(), false)) << dtype.name();
    }
  }
}

TEST(SyntheticTest, SeedChangesValuesAndFloatsAreInUnitInterval) {
  auto& pool = *MemoryPool::Default();
  NDArray a = *NDArray::Allocate(pool, DTypeId::kFloat64, {1000});
  NDArray b = *NDArray::Allocate(pool, DTypeId::kFloat64, {1000});
  FillSynthetic(a.view(), Box::FromShape({1000}), Shape{1000}, 1);
  FillSynthetic(b.view(), Box::FromShape({1000}), Shape{1000}, 2);
  EXPECT_FALSE(ArraysEqual(a.view(), b.view()));
  double sum = 0;
  for (double v : a.values<double>()) {
    EXPECT_GE(v, 0.0);
    EXPECT_LT(v, 1.0);
    sum += v;
  }
  EXPECT_NEAR(sum / 1000, 0.5, 0.05);
}

TEST(SyntheticTest, StridedOutput) {
  auto& pool = *MemoryPool::Default();
  Shape shape = {6, 6};
  NDArray whole = *NDArray::Allocate(pool, DTypeId::kInt32, shape);
  FillSynthetic(whole.view(), Box::FromShape(shape), shape, 7);
  NDArray t = *NDArray::Allocate(pool, DTypeId::kInt32, shape);
  int perm[] = {1, 0};
  // Write the region [2:5, 1:4] through a transposed view of t.
  Box region({2, 1}, {3, 3});
  ArrayView dst = t.view().Transpose(perm).Slice(region);
  FillSynthetic(dst, region, shape, 7);
  for (Index i = 2; i < 5; ++i)
    for (Index j = 1; j < 4; ++j)
      EXPECT_EQ(t.data_as<int32_t>()[j * 6 + i], whole.data_as<int32_t>()[i * 6 + j]);
}

}  // namespace
}  // namespace strata
