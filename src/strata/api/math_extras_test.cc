// The elementwise functions of api/math_extras.h against numpy: every dtype,
// 0-d, empty and ragged-chunked inputs with NaN, inf and -0.0, broadcasting
// and scalars; their type rules; clip with mixed bounds.
#include "strata/api/math_extras.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "strata/api/numpy_oracle_test_util.h"
#include "strata/api/api_test_util.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::AllDTypes;
using testing_util::Compute;
using testing_util::Copy;
using testing_util::ExpectArrayNear;
using testing_util::Lazy;
using testing_util::NpType;
using testing_util::NumpyOracle;
using testing_util::RandomHost;
using testing_util::SmallSpec;

double Tolerance(DType t) {
  return t.id() == DTypeId::kFloat32 || t.id() == DTypeId::kComplex64 ? 2e-6 : 1e-12;
}

struct ShapeCase {
  Shape shape;
  Shape chunks;
};

const std::vector<ShapeCase>& Shapes() {
  static const std::vector<ShapeCase> cases = {
      {{}, {}}, {{0}, {1}}, {{7}, {3}}, {{5, 6}, {2, 4}}, {{3, 0, 2}, {2, 1, 2}}};
  return cases;
}

struct UnaryCase {
  const char* name;
  std::function<Array(const Array&)> fn;
  const char* numpy;  // the numpy function
  bool real_only;     // rejects complex
};

const std::vector<UnaryCase>& UnaryCases() {
  static const std::vector<UnaryCase> cases = {
      {"acosh", acosh, "np.arccosh", false},    {"asinh", asinh, "np.arcsinh", false},
      {"atanh", atanh, "np.arctanh", false},    {"reciprocal", reciprocal, "np.reciprocal", false},
      {"signbit", signbit, "np.signbit", true}, {"acos", acos, "np.arccos", false},
      {"asin", asin, "np.arcsin", false},       {"atan", atan, "np.arctan", false},
  };
  return cases;
}

TEST(MathExtrasTest, UnaryAgainstNumpy) {
  NumpyOracle np;
  struct Pending {
    std::string what;
    NDArray got;
    int id;
    DType expect_dtype;
    double tol;
  };
  std::vector<Pending> pending;
  uint32_t seed = 1;
  for (const UnaryCase& c : UnaryCases()) {
    for (DType t : AllDTypes()) {
      for (const ShapeCase& s : Shapes()) {
        // Complex specials are left out: C++'s complex functions and numpy's
        // disagree on infinities and NaN (C99 Annex G against numpy's own).
        const NDArray host = RandomHost(t, s.shape, seed++, t.is_complex() ? 0.0 : 0.15);
        Array y = c.fn(Lazy(host, s.chunks));
        const std::string what =
            std::string(c.name) + " of " + std::string(t.name()) + " " + ShapeToString(s.shape);
        if (c.real_only && t.is_complex()) {
          EXPECT_FALSE(y.ok()) << what;
          EXPECT_EQ(y.status().code(), StatusCode::kInvalidArgument) << what;
          EXPECT_NE(y.status().message().find(c.name), std::string::npos) << y.status().message();
          continue;
        }
        ASSERT_TRUE(y.ok()) << what << ": " << y.status().ToString();
        // Strata computes bool and integers in float64 (signbit: bool).
        const bool exact = t.is_bool() || t.is_integer();
        DType want = std::string(c.name) == "signbit" ? DType(DTypeId::kBool)
                     : exact                          ? DType(DTypeId::kFloat64)
                                                      : t;
        EXPECT_EQ(y.dtype(), want) << what;
        const std::string arg =
            exact && std::string(c.name) != "signbit" ? "a.astype(np.float64)" : "a";
        int id = np.Add(std::string(c.numpy) + "(" + arg + ")", {&host});
        pending.push_back({what, Compute(y), id, want, Tolerance(want)});
      }
    }
  }
  np.Run();
  for (const Pending& p : pending) {
    ExpectArrayNear(p.got, np.First(p.id), p.tol, p.tol, p.what);
  }
}

struct BinaryCase {
  const char* name;
  std::function<Array(const Array&, const Array&)> fn;
  std::function<Array(const Array&, Scalar)> with_scalar;
  const char* numpy;
};

const std::vector<BinaryCase>& BinaryCases() {
  static const std::vector<BinaryCase> cases = {
      {"copysign", [](const Array& a, const Array& b) { return copysign(a, b); },
       [](const Array& a, Scalar b) { return copysign(a, b); }, "np.copysign"},
      {"hypot", [](const Array& a, const Array& b) { return hypot(a, b); },
       [](const Array& a, Scalar b) { return hypot(a, b); }, "np.hypot"},
      {"logaddexp", [](const Array& a, const Array& b) { return logaddexp(a, b); },
       [](const Array& a, Scalar b) { return logaddexp(a, b); }, "np.logaddexp"},
      {"nextafter", [](const Array& a, const Array& b) { return nextafter(a, b); },
       [](const Array& a, Scalar b) { return nextafter(a, b); }, "np.nextafter"},
      {"atan2", [](const Array& a, const Array& b) { return atan2(a, b); },
       [](const Array& a, Scalar b) { return atan2(a, b); }, "np.arctan2"},
  };
  return cases;
}

TEST(MathExtrasTest, BinaryAgainstNumpy) {
  const std::vector<std::pair<DType, DType>> pairs = {
      {DTypeId::kFloat64, DTypeId::kFloat64}, {DTypeId::kFloat32, DTypeId::kFloat32},
      {DTypeId::kFloat32, DTypeId::kFloat64}, {DTypeId::kInt32, DTypeId::kFloat32},
      {DTypeId::kInt16, DTypeId::kUInt8},     {DTypeId::kBool, DTypeId::kBool},
      {DTypeId::kUInt64, DTypeId::kFloat64}};
  NumpyOracle np;
  struct Pending {
    std::string what;
    NDArray got;
    int id;
    double tol;
  };
  std::vector<Pending> pending;
  uint32_t seed = 100;
  for (const BinaryCase& c : BinaryCases()) {
    for (auto [ta, tb] : pairs) {
      // (5, 6) against (5, 6), against a broadcast row (1, 6), and (0, 6).
      for (auto [sa, sb] : std::vector<std::pair<Shape, Shape>>{
               {{5, 6}, {5, 6}}, {{5, 6}, {1, 6}}, {{0, 6}, {6}}, {{}, {}}}) {
        const NDArray ha = RandomHost(ta, sa, seed++, 0.2);
        const NDArray hb = RandomHost(tb, sb, seed++, 0.2);
        Shape ca(sa.size(), 2), cb(sb.size(), 3);
        Array y = c.fn(Lazy(ha, ca), Lazy(hb, cb));
        const std::string what = std::string(c.name) + "(" + std::string(ta.name()) + " " +
                                 ShapeToString(sa) + ", " + std::string(tb.name()) + " " +
                                 ShapeToString(sb) + ")";
        ASSERT_TRUE(y.ok()) << what << ": " << y.status().ToString();
        Result<DType> promoted = PromoteTypes(ta, tb);
        ASSERT_TRUE(promoted.ok());
        const DType want = promoted->is_float() ? *promoted : DType(DTypeId::kFloat64);
        EXPECT_EQ(y.dtype(), want) << what;
        const std::string cast = ".astype(" + NpType(want) + ")";
        int id = np.Add(std::string(c.numpy) + "(a" + cast + ", b" + cast + ")", {&ha, &hb});
        pending.push_back({what, Compute(y), id, Tolerance(want)});
      }
    }
    // A scalar operand takes the array's float dtype.
    const NDArray h = RandomHost(DTypeId::kFloat32, {9}, seed++, 0.2);
    Array y = c.with_scalar(Lazy(h, {4}), Scalar(-1.5));
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(y.dtype(), DType(DTypeId::kFloat32));
    int id = np.Add(std::string(c.numpy) + "(a, np.float32(-1.5))", {&h});
    pending.push_back({std::string(c.name) + " with a scalar", Compute(y), id, 2e-6});
    // Complex is refused, naming the function.
    Array z = c.fn(Lazy(RandomHost(DTypeId::kComplex64, {3}, 1), {}), Lazy(h, {4}));
    ASSERT_FALSE(z.ok());
    EXPECT_EQ(z.status().code(), StatusCode::kInvalidArgument);
  }
  np.Run();
  for (const Pending& p : pending) ExpectArrayNear(p.got, np.First(p.id), p.tol, p.tol, p.what);
}

TEST(MathExtrasTest, SpecialValues) {
  // Exact IEEE cases numpy documents.
  NDArray h = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, {6});
  const double inf = std::numeric_limits<double>::infinity();
  const double vals[] = {-0.0, 0.0, inf, -inf, std::nan(""), 1.0};
  std::copy(std::begin(vals), std::end(vals), h.data_as<double>());
  Array x = Lazy(h, {4});
  NDArray sb = Compute(signbit(x));
  EXPECT_EQ(std::vector<bool>(sb.data_as<bool>(), sb.data_as<bool>() + 6),
            (std::vector<bool>{true, false, false, true, false, false}));
  NDArray le = Compute(logaddexp(x, x));
  EXPECT_EQ(le.data_as<double>()[2], inf);   // inf + inf
  EXPECT_EQ(le.data_as<double>()[3], -inf);  // -inf with -inf
  EXPECT_TRUE(std::isnan(le.data_as<double>()[4]));
  NDArray na = Compute(nextafter(x, 2.0));
  EXPECT_EQ(na.data_as<double>()[5], std::nextafter(1.0, 2.0));
  EXPECT_EQ(na.data_as<double>()[1], std::nextafter(0.0, 2.0));
  NDArray rc = Compute(reciprocal(x));
  EXPECT_EQ(rc.data_as<double>()[0], -inf);
  EXPECT_EQ(rc.data_as<double>()[2], 0.0);
}

TEST(MathExtrasTest, ClipWithMixedBounds) {
  const NDArray hx = RandomHost(DTypeId::kFloat64, {6, 5}, 7, 0.1);
  const NDArray hl = RandomHost(DTypeId::kFloat64, {6, 1}, 8);
  const NDArray hh = RandomHost(DTypeId::kInt32, {5}, 9);
  Array x = Lazy(hx, {4, 2}), lo = Lazy(hl, {3, 1}), hi = Lazy(hh, {2});
  NumpyOracle np;
  std::vector<std::pair<NDArray, int>> cases;
  cases.push_back({Compute(clip(x, std::optional<Array>(lo), std::nullopt)),
                   np.Add("np.clip(a, b, None)", {&hx, &hl})});
  cases.push_back({Compute(clip(x, std::nullopt, std::optional<Array>(hi))),
                   np.Add("np.clip(a, None, c.astype(np.float64))", {&hx, &hl, &hh})});
  cases.push_back({Compute(clip(x, lo, Scalar(0.5))), np.Add("np.clip(a, b, 0.5)", {&hx, &hl})});
  cases.push_back({Compute(clip(x, Scalar(-0.5), hi)),
                   np.Add("np.clip(a, -0.5, c.astype(np.float64))", {&hx, &hl, &hh})});
  cases.push_back(
      {Compute(clip(x, lo, hi)), np.Add("np.clip(a, b, c.astype(np.float64))", {&hx, &hl, &hh})});
  np.Run();
  for (auto& [got, id] : cases) ExpectArrayNear(got, np.First(id), 0, 0, np.expr(id));
  // The result keeps x's dtype.
  Array xi = Lazy(RandomHost(DTypeId::kInt16, {4}, 3), {3});
  EXPECT_EQ(clip(xi, lo, Scalar(2)).shape(), Shape({6, 4}));  // bounds broadcast with x
  Array xi2 = clip(xi, Lazy(RandomHost(DTypeId::kFloat64, {4}, 4), {2}), Scalar(2));
  ASSERT_TRUE(xi2.ok());
  EXPECT_EQ(xi2.dtype(), DType(DTypeId::kInt16));
}

}  // namespace
}  // namespace strata
