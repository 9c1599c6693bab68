// quantile, nanquantile, median and nanmedian against numpy 1.24: all 13
// methods, q lists and scalars, axis subsets (one, several, all), keepdims,
// NaN and all-NaN slices, float64, float32, float16 and integer dtypes, on
// ragged and random chunkings; the refusals (q, axes, dtypes, a slice over
// the budget) and the memory contract.
#include "strata/api/quantiles.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "strata/api/numpy_oracle_test_util.h"
#include "strata/api/api_test_util.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::Chunkings;
using testing_util::Compute;
using testing_util::ExpectArrayNear;
using testing_util::Lazy;
using testing_util::NumpyOracle;
using testing_util::RandomHost;
using testing_util::RecordingCallback;
using testing_util::SmallSpec;

constexpr const char* kMethodNames[] = {
    "inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
    "hazen",        "weibull",               "linear",              "median_unbiased",
    "normal_unbiased", "lower",              "higher",              "midpoint",
    "nearest",
};

std::string AxesText(const std::vector<int>& axes) {
  if (axes.empty()) return "None";
  std::string s = "(";
  for (int a : axes) s += std::to_string(a) + ",";
  return s + ")";
}

std::optional<std::vector<int>> AxesArg(const std::vector<int>& axes) {
  if (axes.empty()) return std::nullopt;
  return axes;
}

// Values with ties (small integers) and, for floats, NaN; the first row
// along axis 0 is NaN everywhere so that all-NaN slices occur.
NDArray Data(DType t, const Shape& shape, uint32_t seed, bool nan) {
  NDArray h = RandomHost(t, shape, seed, nan ? 0.25 : 0.0, /*nan_only=*/true);
  if (nan && t.is_float() && shape.size() > 1 && shape[0] > 1) {
    const Index row = h.num_elements() / shape[0];
    VisitDType(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        for (Index i = 0; i < row; ++i) h.data_as<T>()[i] = std::numeric_limits<T>::quiet_NaN();
      }
    });
  }
  return h;
}

struct Pending {
  std::string what;
  NDArray got;
  int id;
  double tol;
};

// numpy's dtype for a float32 input depends on the values where a result
// is NaN (a reduction to one value holding NaN, nanquantile's all-NaN
// slices through apply_along_axis: float32; else float64); Strata's is the
// dtype of the values-free rule. So the dtype is checked unless numpy's
// result is float32 holding NaN where Strata's is float64.
bool CheckDtype(const NDArray& got, const NDArray& want) {
  if (!(want.dtype().id() == DTypeId::kFloat32 && got.dtype().id() == DTypeId::kFloat64)) {
    return true;
  }
  for (Index i = 0; i < want.num_elements(); ++i) {
    if (std::isnan(want.data_as<float>()[i])) return false;
  }
  return true;
}

// Runs the oracle and compares every pending result with numpy's.
void ExpectAllNear(NumpyOracle& np, const std::vector<Pending>& pending) {
  np.Run();
  for (const Pending& p : pending) {
    const NDArray want = np.First(p.id);
    ExpectArrayNear(p.got, want, p.tol, p.tol, p.what + " = " + np.expr(p.id),
                    CheckDtype(p.got, want));
  }
}

double Tol(DType t) {
  if (t.id() == DTypeId::kFloat16) return 2e-3;
  return t.id() == DTypeId::kFloat32 ? 1e-6 : 1e-12;
}

TEST(QuantilesTest, EveryMethodAgainstNumpy) {
  NumpyOracle np;
  std::vector<Pending> pending;
  uint32_t seed = 11;
  const std::vector<std::pair<Shape, std::vector<std::vector<int>>>> shapes = {
      {{1}, {{}}},
      {{2}, {{0}}},
      {{17}, {{}, {0}}},
      {{6, 7}, {{0}, {1}, {-1, 0}}},
      {{4, 3, 5}, {{}, {1}, {0, 2}}},
  };
  const std::vector<std::vector<double>> qs = {{0.5}, {0.0, 0.1, 0.25, 0.333, 0.5, 0.75, 0.9, 1.0}};
  for (DType t : {DType(DTypeId::kFloat64), DType(DTypeId::kFloat32), DType(DTypeId::kInt32),
                  DType(DTypeId::kUInt8)}) {
    for (const auto& [shape, axes_list] : shapes) {
      for (bool skipna : {false, true}) {
        const NDArray host = Data(t, shape, seed++, /*nan=*/t.is_float());
        const std::vector<Shape> chunkings = Chunkings(shape, seed++, 1);
        for (const std::vector<int>& axes : axes_list) {
          for (const char* name : kMethodNames) {
            Result<QuantileMethod> m = ParseQuantileMethod(name);
            ASSERT_TRUE(m.ok()) << name;
            for (size_t qi = 0; qi < qs.size(); ++qi) {
              const bool scalar = qi == 0;
              const bool keepdims = (seed % 2) == 0;
              const Shape& chunks = chunkings[(seed++) % chunkings.size()];
              QuantileOptions o{.axes = AxesArg(axes),
                                .method = *m,
                                .keepdims = keepdims,
                                .skipna = skipna};
              Array r = quantile(Lazy(host, chunks), qs[qi], o, scalar);
              std::string q_text = scalar ? "0.5" : "[0, 0.1, 0.25, 0.333, 0.5, 0.75, 0.9, 1]";
              const std::string fn = skipna ? "nanquantile" : "quantile";
              const std::string what = fn + " " + name + " of " + std::string(t.name()) + " " +
                                       ShapeToString(shape) + " chunks " + ShapeToString(chunks) +
                                       " axes " + AxesText(axes) + (keepdims ? " keepdims" : "");
              ASSERT_TRUE(r.ok()) << what << ": " << r.status().ToString();
              const std::string expr = "np." + fn + "(a, " + q_text + ", axis=" + AxesText(axes) +
                                       ", method='" + name +
                                       "', keepdims=" + (keepdims ? "True" : "False") + ")";
              pending.push_back({what, Compute(r), np.Add(expr, {&host}), Tol(t)});
            }
          }
        }
      }
    }
  }
  ExpectAllNear(np, pending);
}

TEST(QuantilesTest, MedianAgainstNumpy) {
  NumpyOracle np;
  std::vector<Pending> pending;
  uint32_t seed = 101;
  const std::vector<std::pair<Shape, std::vector<std::vector<int>>>> shapes = {
      {{}, {{}}},
      {{1}, {{}}},
      {{10}, {{}, {0}}},
      {{9, 8}, {{}, {0}, {1}}},
      {{5, 0}, {{0}}},
      {{3, 4, 6}, {{0, 2}, {2}, {-2}}},
  };
  for (DType t : {DType(DTypeId::kFloat64), DType(DTypeId::kFloat32), DType(DTypeId::kFloat16),
                  DType(DTypeId::kInt64), DType(DTypeId::kInt8)}) {
    for (const auto& [shape, axes_list] : shapes) {
      for (bool skipna : {false, true}) {
        // float16 (RandomHost makes none): float32 values cast on both sides.
        const bool half = t.id() == DTypeId::kFloat16;
        const NDArray host =
            Data(half ? DType(DTypeId::kFloat32) : t, shape, seed++, /*nan=*/t.is_float());
        const std::string arg = half ? "a.astype(np.float16)" : "a";
        const std::vector<Shape> chunkings = Chunkings(shape, seed++, 2);
        for (const std::vector<int>& axes : axes_list) {
          for (bool keepdims : {false, true}) {
            const Shape& chunks = chunkings[(seed++) % chunkings.size()];
            Array in = half ? astype(Lazy(host, chunks), DTypeId::kFloat16) : Lazy(host, chunks);
            Array r = median(in, AxesArg(axes), keepdims, skipna);
            const std::string fn = skipna ? "nanmedian" : "median";
            const std::string what = fn + " of " + std::string(t.name()) + " " +
                                     ShapeToString(shape) + " chunks " + ShapeToString(chunks) +
                                     " axes " + AxesText(axes) + (keepdims ? " keepdims" : "");
            ASSERT_TRUE(r.ok()) << what << ": " << r.status().ToString();
            std::string expr = "np." + fn + "(" + arg + ", axis=" + AxesText(axes) +
                               ", keepdims=" + (keepdims ? "True" : "False") + ")";
            if (half) {
              // numpy's median of float16 is float16, and so is ours; the
              // values are compared as float32 (the checker reads no float16).
              EXPECT_EQ(r.dtype().name(), "float16") << what;
              r = astype(r, DTypeId::kFloat32);
              expr = "np.asarray(" + expr + ").astype(np.float32)";
            }
            pending.push_back({what, Compute(r), np.Add(expr, {&host}), Tol(t)});
          }
        }
      }
    }
  }
  ExpectAllNear(np, pending);
}

TEST(QuantilesTest, Refusals) {
  Array x = Lazy(RandomHost(DTypeId::kFloat64, {6, 4}, 3), {3, 2});
  auto message = [](const Array& a) { return a.ok() ? std::string() : a.status().message(); };
  EXPECT_NE(message(quantile(x, 1.5)).find("q must be in [0, 1], got 1.5"), std::string::npos);
  EXPECT_NE(message(quantile(x, std::nan(""))).find("q must be in [0, 1]"), std::string::npos);
  // An empty q list: numpy's empty q axis.
  Array none = quantile(x, std::vector<double>{}, {.axes = std::vector<int>{0}});
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(ShapeToString(Compute(none).shape()), ShapeToString(Shape{0, 4}));
  EXPECT_NE(message(quantile(x, 0.5, {.axes = std::vector<int>{2}})).find("axis"),
            std::string::npos);
  EXPECT_NE(message(quantile(x, 0.5, {.axes = std::vector<int>{1, -1}})).find("axis 1 repeats"),
            std::string::npos);
  EXPECT_NE(message(median(x, std::vector<int>{0, 0})).find("repeats"), std::string::npos);
  Result<QuantileMethod> bad = ParseQuantileMethod("cubic");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'cubic' is not a method"), std::string::npos);
  EXPECT_NE(bad.status().message().find("median_unbiased"), std::string::npos);
  Array b = Lazy(RandomHost(DTypeId::kBool, {5}, 1), {2});
  EXPECT_NE(message(median(b)).find("bool"), std::string::npos);
  Array z = Lazy(RandomHost(DTypeId::kComplex128, {5}, 1), {2});
  EXPECT_NE(message(quantile(z, 0.5)).find("complex128"), std::string::npos);
  // numpy refuses quantiles of an empty slice (IndexError); so do we.
  Array e = Lazy(RandomHost(DTypeId::kFloat64, {0, 3}, 1), {1, 3});
  EXPECT_NE(message(quantile(e, 0.5, {.axes = std::vector<int>{0}})).find("empty"),
            std::string::npos);
}

TEST(QuantilesTest, SliceOverTheBudgetIsRefusedWhenBuilt) {
  // 8 MB per slice along axis 0 (1M float64) against a 4 MB budget.
  Spec spec = SmallSpec();
  spec.allowed_mem = "4MB";
  Array x = random::random({1 << 20, 2}, {1 << 16, 2}, 1, spec);
  Array m = median(x, std::vector<int>{0});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("median: axis 0 of extent 1048576 must be in one chunk"),
            std::string::npos)
      << m.status().message();
  EXPECT_NE(m.status().message().find("allowed_mem"), std::string::npos);
  Array q = quantile(x, 0.9, {.axes = std::vector<int>{0, 1}});
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("axis 0 of extent 1048576 and axis 1 of extent 2"),
            std::string::npos)
      << q.status().message();
}

TEST(QuantilesTest, WithinTheMemoryContract) {
  // A budget that binds: the time axis is one chunk, the grid is split until
  // a block and its slice buffer fit, and every task stays within its
  // projection and the budget.
  Spec spec = SmallSpec();
  spec.allowed_mem = "12MB";
  Array x = random::random({400, 60, 80}, {100, 60, 80}, 7, spec);
  Array p = quantile(x, std::vector<double>{0.1, 0.5, 0.9}, {.axes = std::vector<int>{0}});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(ShapeToString(p.shape()), ShapeToString(Shape{3, 60, 80}));
  RecordingCallback rec;
  auto cb = std::shared_ptr<Callback>(&rec, [](Callback*) {});
  ComputeOptions co;
  co.callbacks.push_back(cb);
  Result<NDArray> got = compute(p, co);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  rec.ExpectWithinBudget();
  // The median equals the 0.5 quantile (linear) for every grid point.
  Result<NDArray> med = compute(median(x, std::vector<int>{0}));
  ASSERT_TRUE(med.ok()) << med.status().ToString();
  const Index grid = 60 * 80;
  for (Index i = 0; i < grid; ++i) {
    ASSERT_DOUBLE_EQ(med->data_as<double>()[i], got->data_as<double>()[grid + i]) << i;
    ASSERT_LE(got->data_as<double>()[i], got->data_as<double>()[grid + i]);
    ASSERT_LE(got->data_as<double>()[grid + i], got->data_as<double>()[2 * grid + i]);
  }
}

}  // namespace
}  // namespace strata
