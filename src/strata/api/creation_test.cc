// Creation functions through the public API: zeros, ones, full, empty, arange,
// linspace, eye, asarray, random::random and random::integers, each against a
// reference written with plain loops in the test, over many chunkings (whole,
// ragged, size-1, random) and zero-size arrays; random data must not depend on
// the chunking, the executor or the worker count.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "strata/api/api_test_util.h"
#include "strata/core/synthetic.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::Chunkings;
using testing_util::Compute;
using testing_util::ForEachIndex;
using testing_util::SmallSpec;

using C = std::complex<double>;

// An array of `dtype` and `shape` whose element at `idx` is value(idx) (as T).
template <typename T, typename F>
NDArray Filled(DType dtype, const Shape& shape, F value) {
  NDArray a = *NDArray::Allocate(*MemoryPool::Default(), dtype, shape);
  ForEachIndex(shape, [&](const Shape& idx) {
    a.data_as<T>()[LinearIndex(idx, shape)] = static_cast<T>(value(idx));
  });
  return a;
}

// Byte-equal values, dtype and shape; the message names the chunking.
void ExpectEqualArrays(const NDArray& got, const NDArray& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_TRUE(ArraysEqual(got.view(), want.view())) << what;
}

// The shapes every creation function is tried on: scalars, vectors, ragged
// matrices, rank 3, and zero-size arrays.
const std::vector<Shape>& TestShapes() {
  static const std::vector<Shape> shapes = {
      {}, {1}, {7}, {5, 3}, {4, 1, 6}, {0}, {3, 0}, {0, 4, 2},
  };
  return shapes;
}

// One constant array per dtype, in the reference's C type.
template <typename T>
void CheckConstant(DType dtype, T value, const std::function<Array(Shape, Shape)>& make,
                   const std::string& name) {
  for (const Shape& shape : TestShapes()) {
    NDArray want = Filled<T>(dtype, shape, [&](const Shape&) { return value; });
    for (const Shape& chunks : Chunkings(shape, 1, 3, /*oversized=*/true)) {
      std::string what = name + " " + std::string(dtype.name()) + " shape " + ShapeToString(shape) +
                         " chunks " + ShapeToString(chunks);
      Array a = make(shape, chunks);
      ASSERT_TRUE(a.ok()) << what << ": " << a.status().ToString();
      EXPECT_EQ(a.shape(), shape) << what;
      EXPECT_EQ(a.dtype(), dtype) << what;
      ExpectEqualArrays(Compute(a), want, what);
    }
  }
}

TEST(CreationTest, ZerosAndOnesInEveryDTypeAndChunking) {
  Spec spec = SmallSpec();
  auto zeros_of = [&](DType t) {
    return [t, spec](Shape s, Shape c) { return zeros(s, c, t, spec); };
  };
  auto ones_of = [&](DType t) {
    return [t, spec](Shape s, Shape c) { return ones(s, c, t, spec); };
  };
  CheckConstant<double>(DTypeId::kFloat64, 0.0, zeros_of(DTypeId::kFloat64), "zeros");
  CheckConstant<double>(DTypeId::kFloat64, 1.0, ones_of(DTypeId::kFloat64), "ones");
  CheckConstant<float>(DTypeId::kFloat32, 1.0f, ones_of(DTypeId::kFloat32), "ones");
  CheckConstant<int8_t>(DTypeId::kInt8, 1, ones_of(DTypeId::kInt8), "ones");
  CheckConstant<uint16_t>(DTypeId::kUInt16, 1, ones_of(DTypeId::kUInt16), "ones");
  CheckConstant<int64_t>(DTypeId::kInt64, 0, zeros_of(DTypeId::kInt64), "zeros");
  CheckConstant<bool>(DTypeId::kBool, true, ones_of(DTypeId::kBool), "ones");
  CheckConstant<bool>(DTypeId::kBool, false, zeros_of(DTypeId::kBool), "zeros");
  CheckConstant<C>(DTypeId::kComplex128, C(1, 0), ones_of(DTypeId::kComplex128), "ones");
}

TEST(CreationTest, FullTakesTheValueAndItsDefaultDType) {
  Spec spec = SmallSpec();
  // Default dtypes follow the scalar: int64, float64, bool, complex128.
  CheckConstant<int64_t>(
      DTypeId::kInt64, -7, [&](Shape s, Shape c) { return full(s, -7, c, std::nullopt, spec); },
      "full");
  CheckConstant<double>(
      DTypeId::kFloat64, 2.5, [&](Shape s, Shape c) { return full(s, 2.5, c, std::nullopt, spec); },
      "full");
  CheckConstant<bool>(
      DTypeId::kBool, true, [&](Shape s, Shape c) { return full(s, true, c, std::nullopt, spec); },
      "full");
  CheckConstant<C>(
      DTypeId::kComplex128, C(1.5, -2),
      [&](Shape s, Shape c) { return full(s, C(1.5, -2), c, std::nullopt, spec); }, "full");
  // An explicit dtype converts the value.
  CheckConstant<float>(
      DTypeId::kFloat32, 0.1f,
      [&](Shape s, Shape c) { return full(s, 0.1, c, DTypeId::kFloat32, spec); }, "full");
  CheckConstant<int16_t>(
      DTypeId::kInt16, -300,
      [&](Shape s, Shape c) { return full(s, -300, c, DTypeId::kInt16, spec); }, "full");
  // Whole int64 values beyond 2^53 are exact, not rounded through a double.
  const int64_t big = (int64_t{1} << 60) + 1;
  CheckConstant<int64_t>(
      DTypeId::kInt64, big, [&](Shape s, Shape c) { return full(s, big, c, std::nullopt, spec); },
      "full");
}

TEST(CreationTest, EmptyHasShapeDTypeAndChunksOnly) {
  Spec spec = SmallSpec();
  for (const Shape& shape : TestShapes()) {
    for (const Shape& chunks : Chunkings(shape, 2, 3, /*oversized=*/true)) {
      Array a = empty(shape, chunks, DTypeId::kInt32, spec);
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      EXPECT_EQ(a.shape(), shape);
      EXPECT_EQ(a.dtype(), DType(DTypeId::kInt32));
      for (int i = 0; i < a.ndim(); ++i) {
        // Chunks larger than the axis are the whole axis.
        EXPECT_EQ(a.chunksize()[i], std::max<Index>(1, std::min(chunks[i], shape[i])))
            << ShapeToString(shape) << " " << ShapeToString(chunks);
      }
      NDArray got = Compute(a);
      EXPECT_EQ(got.shape(), shape);
      EXPECT_EQ(got.dtype(), DType(DTypeId::kInt32));
    }
  }
}

TEST(CreationTest, ArangeMatchesNumpyLengthAndValues) {
  Spec spec = SmallSpec();
  struct Case {
    double start, stop, step;
    DTypeId dtype;  // the default dtype numpy would pick
  };
  const std::vector<Case> cases = {
      {0, 10, 1, DTypeId::kInt64},          {3, 17, 4, DTypeId::kInt64},
      {10, -3, -2, DTypeId::kInt64},        {0, 1, 0.1, DTypeId::kFloat64},
      {-1.5, 2.25, 0.5, DTypeId::kFloat64}, {5, 5, 1, DTypeId::kInt64},
      {5, 0, 1, DTypeId::kInt64},           {0, 1e-3, 1e-4, DTypeId::kFloat64},
  };
  for (const Case& c : cases) {
    // numpy: ceil((stop - start) / step) elements, start + i * step.
    const Index n = static_cast<Index>(std::max(0.0, std::ceil((c.stop - c.start) / c.step)));
    const Shape shape = {n};
    NDArray want = c.dtype == DTypeId::kInt64
                       ? Filled<int64_t>(c.dtype, shape,
                                         [&](const Shape& i) { return c.start + i[0] * c.step; })
                       : Filled<double>(c.dtype, shape,
                                        [&](const Shape& i) { return c.start + i[0] * c.step; });
    for (const Shape& chunks : Chunkings(shape, 3, 3, /*oversized=*/true)) {
      std::string what = "arange(" + std::to_string(c.start) + ", " + std::to_string(c.stop) +
                         ", " + std::to_string(c.step) + ") chunks " + ShapeToString(chunks);
      Array a = arange(c.start, c.stop, c.step, chunks, std::nullopt, spec);
      ASSERT_TRUE(a.ok()) << what << ": " << a.status().ToString();
      ExpectEqualArrays(Compute(a), want, what);
    }
  }
  // An explicit dtype.
  NDArray want32 =
      Filled<float>(DTypeId::kFloat32, {9}, [](const Shape& i) { return 1 + i[0] * 2; });
  for (const Shape& chunks : Chunkings({9}, 4, 3, /*oversized=*/true)) {
    ExpectEqualArrays(Compute(arange(1, 18, 2, chunks, DTypeId::kFloat32, spec)), want32,
                      "arange float32 chunks " + ShapeToString(chunks));
  }
}

TEST(CreationTest, ArangeBadArguments) {
  Array zero_step = arange(0, 5, 0);
  ASSERT_FALSE(zero_step.ok());
  EXPECT_EQ(zero_step.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(zero_step.status().message().find("arange: invalid start 0, stop 5, step 0"),
            std::string_view::npos)
      << zero_step.status().ToString();
  Array inf = arange(0, std::numeric_limits<double>::infinity(), 1);
  ASSERT_FALSE(inf.ok());
  EXPECT_EQ(inf.status().code(), StatusCode::kInvalidArgument);
}

TEST(CreationTest, LinspaceWithAndWithoutEndpoint) {
  Spec spec = SmallSpec();
  struct Case {
    double start, stop;
    Index num;
    bool endpoint;
  };
  const std::vector<Case> cases = {
      {0, 1, 11, true}, {0, 1, 10, false}, {-3, 7.5, 13, true}, {2, 3, 1, true},
      {2, 3, 1, false}, {5, -5, 4, true},  {1, 2, 0, true},     {0, 1, 2, true},
  };
  for (const Case& c : cases) {
    const Shape shape = {c.num};
    const Index div = c.endpoint ? c.num - 1 : c.num;
    const double step = div > 0 ? (c.stop - c.start) / static_cast<double>(div) : 0.0;
    // numpy: start + i * step, with the last element exactly `stop` when
    // endpoint and num > 1.
    auto value = [&](const Shape& i) {
      if (c.endpoint && c.num > 1 && i[0] == c.num - 1) return c.stop;
      return c.start + static_cast<double>(i[0]) * step;
    };
    NDArray want = Filled<double>(DTypeId::kFloat64, shape, value);
    NDArray want32 = Filled<float>(DTypeId::kFloat32, shape, value);
    for (const Shape& chunks : Chunkings(shape, 5, 3, /*oversized=*/true)) {
      std::string what = "linspace(" + std::to_string(c.start) + ", " + std::to_string(c.stop) +
                         ", " + std::to_string(c.num) + (c.endpoint ? ", endpoint" : "") +
                         ") chunks " + ShapeToString(chunks);
      ExpectEqualArrays(
          Compute(linspace(c.start, c.stop, c.num, c.endpoint, chunks, DTypeId::kFloat64, spec)),
          want, what);
      ExpectEqualArrays(
          Compute(linspace(c.start, c.stop, c.num, c.endpoint, chunks, DTypeId::kFloat32, spec)),
          want32, what + " float32");
    }
  }
  Array negative = linspace(0, 1, -1);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(negative.status().message().find("linspace: num must be non-negative, got -1"),
            std::string_view::npos);
  Array ints = linspace(0, 1, 3, true, {}, DTypeId::kInt32);
  ASSERT_FALSE(ints.ok());
  EXPECT_NE(ints.status().message().find("linspace: dtype must be float32 or float64"),
            std::string_view::npos);
}

TEST(CreationTest, EyeOnEveryDiagonal) {
  Spec spec = SmallSpec();
  struct Case {
    Index n, m, k;
  };
  const std::vector<Case> cases = {
      {5, 0, 0}, {4, 7, 0},  {7, 4, 0}, {5, 5, 2}, {5, 6, -3},
      {3, 3, 3}, {3, 4, -5}, {1, 1, 0}, {0, 0, 0}, {0, 3, 1},
  };
  for (const Case& c : cases) {
    const Index m = c.m == 0 ? c.n : c.m;
    const Shape shape = {c.n, m};
    auto value = [&](const Shape& i) { return i[1] - i[0] == c.k ? 1 : 0; };
    NDArray want = Filled<double>(DTypeId::kFloat64, shape, value);
    NDArray want_int = Filled<int32_t>(DTypeId::kInt32, shape, value);
    NDArray want_bool = Filled<bool>(DTypeId::kBool, shape, value);
    for (const Shape& chunks : Chunkings(shape, 6, 3, /*oversized=*/true)) {
      std::string what = "eye(" + std::to_string(c.n) + ", " + std::to_string(c.m) + ", " +
                         std::to_string(c.k) + ") chunks " + ShapeToString(chunks);
      ExpectEqualArrays(Compute(eye(c.n, c.m, c.k, chunks, DTypeId::kFloat64, spec)), want, what);
      ExpectEqualArrays(Compute(eye(c.n, c.m, c.k, chunks, DTypeId::kInt32, spec)), want_int,
                        what + " int32");
      ExpectEqualArrays(Compute(eye(c.n, c.m, c.k, chunks, DTypeId::kBool, spec)), want_bool,
                        what + " bool");
    }
  }
  Array bad = eye(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("eye: invalid size -1 x -1"), std::string_view::npos);
}

TEST(CreationTest, AsarrayReturnsTheDataInAnyChunking) {
  Spec spec = SmallSpec();
  for (const Shape& shape : TestShapes()) {
    // Distinct values per element in a few dtypes.
    std::vector<NDArray> inputs;
    inputs.push_back(Filled<double>(DTypeId::kFloat64, shape, [&](const Shape& i) {
      return 0.5 + static_cast<double>(LinearIndex(i, shape)) * 1.25;
    }));
    inputs.push_back(Filled<int16_t>(
        DTypeId::kInt16, shape, [&](const Shape& i) { return 100 - 3 * LinearIndex(i, shape); }));
    inputs.push_back(Filled<bool>(DTypeId::kBool, shape,
                                  [&](const Shape& i) { return LinearIndex(i, shape) % 3 == 0; }));
    for (const NDArray& input : inputs) {
      for (const Shape& chunks : Chunkings(shape, 7, 3, /*oversized=*/true)) {
        std::string what = std::string(input.dtype().name()) + " " + ShapeToString(shape) +
                           " chunks " + ShapeToString(chunks);
        NDArray copy = *NDArray::CopyOf(*MemoryPool::Default(), input.view());
        Array a = asarray(std::move(copy), chunks, spec);
        ASSERT_TRUE(a.ok()) << what << ": " << a.status().ToString();
        // Arithmetic on top forces real tasks over the source's blocks.
        ExpectEqualArrays(Compute(a), input, what);
        if (input.dtype() == DType(DTypeId::kFloat64)) {
          NDArray doubled = Filled<double>(DTypeId::kFloat64, shape, [&](const Shape& i) {
            return 2 * input.data_as<double>()[LinearIndex(i, shape)];
          });
          ExpectEqualArrays(Compute(a * 2.0), doubled, what + " * 2");
        }
      }
    }
  }
  Array bad = asarray(std::shared_ptr<const NDArray>());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(CreationTest, RandomIsChunkingExecutorAndWorkerIndependent) {
  for (const Shape& shape : TestShapes()) {
    // The documented values: SyntheticUniform of the flat index.
    NDArray want = Filled<double>(DTypeId::kFloat64, shape, [&](const Shape& i) {
      return SyntheticUniform(42, static_cast<uint64_t>(LinearIndex(i, shape)));
    });
    int variant = 0;
    for (const Shape& chunks : Chunkings(shape, 8, 3, /*oversized=*/true)) {
      // Rotate through executors and worker counts.
      const ExecutorKind executor =
          variant % 3 == 0 ? ExecutorKind::kInline : ExecutorKind::kThreads;
      const int workers = 1 + variant % 3;
      ++variant;
      std::string what = ShapeToString(shape) + " chunks " + ShapeToString(chunks) + " " +
                         std::string(ExecutorName(executor)) + " x" + std::to_string(workers);
      NDArray got = Compute(random::random(shape, chunks, 42, SmallSpec(executor, workers)));
      ExpectEqualArrays(got, want, what);
      for (double v : got.values<double>()) {
        ASSERT_GE(v, 0.0) << what;
        ASSERT_LT(v, 1.0) << what;
      }
    }
  }
  // Another seed gives other values.
  NDArray a = Compute(random::random({50}, {7}, 1, SmallSpec()));
  NDArray b = Compute(random::random({50}, {7}, 2, SmallSpec()));
  EXPECT_FALSE(ArraysEqual(a.view(), b.view()));
}

TEST(CreationTest, RandomIntegersAreChunkIndependentAndInRange) {
  struct Case {
    int64_t low, high;
    DTypeId dtype;
  };
  const std::vector<Case> cases = {
      {0, 10, DTypeId::kInt64},    {-9, 10, DTypeId::kInt32},
      {-128, 128, DTypeId::kInt8}, {5, 6, DTypeId::kInt16},
      {0, 256, DTypeId::kUInt8},   {-1000000007, 1000000007, DTypeId::kInt64},
  };
  for (const Case& c : cases) {
    for (const Shape& shape : TestShapes()) {
      // The reference: the whole array as one chunk on the inline executor.
      Shape whole(shape.size());
      for (size_t i = 0; i < shape.size(); ++i) whole[i] = std::max<Index>(1, shape[i]);
      NDArray want = Compute(random::integers(c.low, c.high, shape, whole, 7, c.dtype,
                                              SmallSpec(ExecutorKind::kInline, 1)));
      ASSERT_EQ(want.shape(), shape);
      ASSERT_EQ(want.dtype(), DType(c.dtype));
      NDArray wide = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt64, shape);
      ASSERT_TRUE(Cast(want.view(), wide.view()).ok());
      for (int64_t v : wide.values<int64_t>()) {
        ASSERT_GE(v, c.low);
        ASSERT_LT(v, c.high);
      }
      int variant = 0;
      for (const Shape& chunks : Chunkings(shape, 9, 3, /*oversized=*/true)) {
        const int workers = 1 + variant++ % 2;
        std::string what = "integers(" + std::to_string(c.low) + ", " + std::to_string(c.high) +
                           ") " + ShapeToString(shape) + " chunks " + ShapeToString(chunks);
        ExpectEqualArrays(Compute(random::integers(c.low, c.high, shape, chunks, 7, c.dtype,
                                                   SmallSpec(ExecutorKind::kThreads, workers))),
                          want, what);
      }
    }
  }
  // A small range is covered, roughly uniformly.
  NDArray dice = Compute(random::integers(1, 7, {6000}, {1000}, 3, DTypeId::kInt64, SmallSpec()));
  std::vector<int> counts(7, 0);
  for (int64_t v : dice.values<int64_t>()) ++counts[v];
  EXPECT_EQ(counts[0], 0);
  for (int face = 1; face <= 6; ++face) {
    EXPECT_GT(counts[face], 800) << face;
    EXPECT_LT(counts[face], 1200) << face;
  }
}

TEST(CreationTest, RandomIntegersBadArguments) {
  auto expect_invalid = [](const Array& a, std::string_view text) {
    ASSERT_FALSE(a.ok()) << text;
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(a.status().message().find(text), std::string_view::npos) << a.status().ToString();
  };
  expect_invalid(random::integers(5, 5, {4}, {2}, 1),
                 "random.integers: high (5) must be greater than low (5)");
  expect_invalid(random::integers(0, 2, {4}, {2}, 1, DTypeId::kFloat64),
                 "random.integers: dtype must be an integer type");
  // Bounds the dtype cannot hold (numpy: "high is out of bounds for int8").
  expect_invalid(random::integers(0, 1000, {4}, {2}, 1, DTypeId::kInt8),
                 "random.integers: high (1000) is out of bounds for int8");
  expect_invalid(random::integers(-1, 10, {4}, {2}, 1, DTypeId::kUInt8),
                 "random.integers: low (-1) is out of bounds for uint8");
}

TEST(CreationTest, BadShapesAndChunks) {
  auto expect_invalid = [](const Array& a, std::string_view text) {
    ASSERT_FALSE(a.ok()) << text;
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(a.status().message().find(text), std::string_view::npos) << a.status().ToString();
  };
  expect_invalid(zeros({3, -1}), "zeros: shape (3, -1) has a negative extent");
  expect_invalid(ones({3, 4}, {2}), "ones: chunks (2,) do not match the rank of shape (3, 4)");
  expect_invalid(full({3, 4}, 1.0, {2, 0}), "full: chunks (2, 0) must be at least 1");
  expect_invalid(random::random({4, 4}, {0, 2}, 1), "random: chunks (0, 2) must be at least 1");
}

}  // namespace
}  // namespace strata
