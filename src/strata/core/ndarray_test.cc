#include "strata/core/ndarray.h"

#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

namespace strata {
namespace {

NDArray Iota(Shape shape) {
  NDArray a = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt32, std::move(shape));
  std::iota(a.values<int32_t>().begin(), a.values<int32_t>().end(), 0);
  return a;
}

TEST(NDArrayTest, SliceAndCopyRegion) {
  NDArray src = Iota({4, 5, 6});
  NDArray dst = *NDArray::Zeros(*MemoryPool::Default(), DTypeId::kInt32, {2, 3, 6});
  CopyArray(src.view().Slice(Box({1, 2, 0}, {2, 3, 6})), dst.view());
  for (Index i = 0; i < 2; ++i)
    for (Index j = 0; j < 3; ++j)
      for (Index k = 0; k < 6; ++k)
        EXPECT_EQ(dst.data_as<int32_t>()[(i * 3 + j) * 6 + k], ((i + 1) * 5 + j + 2) * 6 + k);
}

TEST(NDArrayTest, CopyIntoSubBox) {
  NDArray src = Iota({2, 2});
  NDArray dst = *NDArray::Zeros(*MemoryPool::Default(), DTypeId::kInt32, {3, 4});
  CopyArray(src.view(), dst.view().Slice(Box({1, 1}, {2, 2})));
  std::vector<int32_t> expected = {0, 0, 0, 0, 0, 0, 1, 0, 0, 2, 3, 0};
  EXPECT_EQ(std::vector<int32_t>(dst.values<int32_t>().begin(), dst.values<int32_t>().end()),
            expected);
}

TEST(NDArrayTest, TransposeCopiesFortranOrder) {
  NDArray src = Iota({2, 3});  // C order [[0,1,2],[3,4,5]]
  NDArray dst = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt32, {3, 2});
  int perm[] = {1, 0};
  CopyArray(src.view().Transpose(perm), dst.view());
  std::vector<int32_t> expected = {0, 3, 1, 4, 2, 5};
  EXPECT_EQ(std::vector<int32_t>(dst.values<int32_t>().begin(), dst.values<int32_t>().end()),
            expected);
}

TEST(NDArrayTest, SteppedAndReversed) {
  NDArray src = Iota({10});
  Index steps[] = {3};
  ConstArrayView v = src.view().Stepped(Box({1}, {8}), steps);  // 1, 4, 7
  EXPECT_EQ(v.shape(), Shape({3}));
  NDArray out = *NDArray::CopyOf(*MemoryPool::Default(), v);
  EXPECT_EQ(out.data_as<int32_t>()[2], 7);
  Index back[] = {-2};
  ConstArrayView r = src.view().Stepped(Box({0}, {10}), back);  // 9, 7, 5, 3, 1
  NDArray rout = *NDArray::CopyOf(*MemoryPool::Default(), r);
  EXPECT_EQ(rout.shape(), Shape({5}));
  EXPECT_EQ(rout.data_as<int32_t>()[0], 9);
  EXPECT_EQ(rout.data_as<int32_t>()[4], 1);
}

TEST(NDArrayTest, FillAndZeroSize) {
  NDArray a = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, {3, 7});
  double nan = std::nan("");
  FillArray(a.view(), std::as_bytes(std::span(&nan, 1)));
  for (double v : a.values<double>()) EXPECT_TRUE(std::isnan(v));
  NDArray empty = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, {0, 7});
  EXPECT_EQ(empty.nbytes(), 0);
  CopyArray(empty.view(), empty.view());
}

TEST(NDArrayTest, ByteSwap) {
  uint32_t v[] = {0x01020304u, 0xA0B0C0D0u};
  ByteSwapInPlace(std::as_writable_bytes(std::span(v)), 4);
  EXPECT_EQ(v[0], 0x04030201u);
  EXPECT_EQ(v[1], 0xD0C0B0A0u);
}

TEST(NDArrayTest, ArraysEqualIsNanAware) {
  NDArray a = *NDArray::Zeros(*MemoryPool::Default(), DTypeId::kFloat32, {4});
  NDArray b = *NDArray::Zeros(*MemoryPool::Default(), DTypeId::kFloat32, {4});
  a.data_as<float>()[1] = b.data_as<float>()[1] = std::nanf("");
  EXPECT_TRUE(ArraysEqual(a.view(), b.view()));
  EXPECT_FALSE(ArraysEqual(a.view(), b.view(), /*nan_equal=*/false));
  b.data_as<float>()[2] = 1;
  EXPECT_FALSE(ArraysEqual(a.view(), b.view()));
}

}  // namespace
}  // namespace strata
