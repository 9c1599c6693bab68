#include "strata/core/kernels/linalg.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <vector>

#include "strata/core/dtype_dispatch.h"

namespace strata {
namespace {

MemoryPool& Pool() { return *MemoryPool::Default(); }

// Deterministic small values (exact in every dtype's products and sums).
template <typename T>
T ValueAt(Index i, int salt) {
  const int64_t v = (i * 7919 + salt * 104729) % 23 - 11;
  if constexpr (kIsComplex<T>) {
    return T(static_cast<typename T::value_type>(v),
             static_cast<typename T::value_type>((i + salt) % 5 - 2));
  } else {
    return static_cast<T>(v);
  }
}

template <typename T>
NDArray Filled(Shape shape, int salt) {
  NDArray a = *NDArray::Allocate(Pool(), DTypeOf<T>(), std::move(shape));
  for (Index i = 0; i < a.num_elements(); ++i) a.data_as<T>()[i] = ValueAt<T>(i, salt);
  return a;
}

template <typename T>
T At(const ConstArrayView& v, Index i, Index j) {
  T x;
  const Index idx[] = {i, j};
  std::memcpy(&x, v.ElementPointer(idx), sizeof(T));
  return x;
}

// out0 + a @ b by the textbook triple loop (wrapping for integers).
template <typename T>
std::vector<T> Naive(const ConstArrayView& a, const ConstArrayView& b, const ConstArrayView& out0) {
  const Index m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  std::vector<T> r(m * n);
  for (Index i = 0; i < m; ++i) {
    for (Index j = 0; j < n; ++j) {
      if constexpr (std::is_integral_v<T>) {
        using U = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
        U s = static_cast<U>(At<T>(out0, i, j));
        for (Index p = 0; p < k; ++p)
          s += static_cast<U>(At<T>(a, i, p)) * static_cast<U>(At<T>(b, p, j));
        r[i * n + j] = static_cast<T>(s);
      } else {
        T s = At<T>(out0, i, j);
        for (Index p = 0; p < k; ++p) s += At<T>(a, i, p) * At<T>(b, p, j);
        r[i * n + j] = s;
      }
    }
  }
  return r;
}

template <typename T>
void CheckShape(Index m, Index k, Index n) {
  SCOPED_TRACE(std::string(DTypeOf<T>().name()) + " " + std::to_string(m) + "x" +
               std::to_string(k) + "x" + std::to_string(n));
  NDArray a = Filled<T>({m, k}, 1);
  NDArray b = Filled<T>({k, n}, 2);
  NDArray out = Filled<T>({m, n}, 3);
  std::vector<T> want = Naive<T>(a.view(), b.view(), out.view());
  ASSERT_TRUE(MatMulAccumulate(a.view(), b.view(), out.view()).ok());
  // Small integer-valued inputs: every dtype computes exactly.
  for (Index i = 0; i < m * n; ++i) ASSERT_EQ(out.data_as<T>()[i], want[i]) << i;
}

TEST(MatMulTest, EveryNumericDTypeAgainstNaive) {
  CheckShape<double>(37, 129, 300);  // crosses the k and n block edges
  CheckShape<float>(5, 7, 3);
  CheckShape<int8_t>(9, 33, 17);  // wraps
  CheckShape<int16_t>(4, 4, 4);
  CheckShape<int32_t>(3, 130, 20);
  CheckShape<int64_t>(2, 5, 40);
  CheckShape<uint8_t>(6, 6, 6);
  CheckShape<uint16_t>(8, 3, 5);
  CheckShape<uint32_t>(1, 9, 1);
  CheckShape<uint64_t>(7, 1, 19);
  CheckShape<std::complex<float>>(3, 5, 18);
  CheckShape<std::complex<double>>(11, 6, 4);
}

TEST(MatMulTest, StridedViews) {
  // a and b seen transposed, out a stepped (non-contiguous) view.
  NDArray at = Filled<double>({9, 6}, 1);   // a = at^T: 6 x 9
  NDArray bt = Filled<double>({13, 9}, 2);  // b = bt^T: 9 x 13
  NDArray wide = Filled<double>({6, 26}, 3);
  const int perm[] = {1, 0};
  ConstArrayView a = at.view().Transpose(perm);
  ConstArrayView b = bt.view().Transpose(perm);
  const Index steps[] = {1, 2};
  ArrayView out = wide.view().Stepped(Box::FromShape({6, 26}), steps);
  std::vector<double> want = Naive<double>(a, b, out);
  ASSERT_TRUE(MatMulAccumulate(a, b, out).ok());
  for (Index i = 0; i < 6; ++i) {
    for (Index j = 0; j < 13; ++j) EXPECT_EQ(At<double>(out, i, j), want[i * 13 + j]);
    // Columns between the stepped ones are untouched.
    for (Index j = 0; j < 13; ++j) {
      EXPECT_EQ(wide.data_as<double>()[i * 26 + 2 * j + 1], ValueAt<double>(i * 26 + 2 * j + 1, 3));
    }
  }
}

TEST(MatMulTest, EmptyInnerDimensionLeavesOut) {
  NDArray a = Filled<float>({3, 0}, 1);
  NDArray b = Filled<float>({0, 2}, 2);
  NDArray out = Filled<float>({3, 2}, 3);
  ASSERT_TRUE(MatMulAccumulate(a.view(), b.view(), out.view()).ok());
  for (Index i = 0; i < 6; ++i) EXPECT_EQ(out.data_as<float>()[i], ValueAt<float>(i, 3));
}

TEST(MatMulTest, BoolIsInvalid) {
  NDArray a = *NDArray::Zeros(Pool(), DTypeId::kBool, {2, 2});
  NDArray out = *NDArray::Zeros(Pool(), DTypeId::kBool, {2, 2});
  Status s = MatMulAccumulate(a.view(), a.view(), out.view());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "matmul does not support bool");
}

}  // namespace
}  // namespace strata
