#include "strata/core/kernels/elementwise.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "strata/core/dtype_dispatch.h"
#include "strata/core/float16.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

// Every value of every dtype fits a complex<long double> exactly (x86's long
// double has a 64-bit mantissa), which makes it a dtype-neutral carrier for
// inputs, outputs and expected values.
using V = std::complex<long double>;

constexpr long double kNaN = std::numeric_limits<long double>::quiet_NaN();
constexpr long double kInf = std::numeric_limits<long double>::infinity();

MemoryPool& Pool() { return *MemoryPool::Default(); }

std::vector<DType> AllDTypes() {
  std::vector<DType> all;
  for (int i = 0; i < kNumDTypes; ++i) all.push_back(DType(static_cast<DTypeId>(i)));
  return all;
}

template <typename T>
V ToV(T x) {
  if constexpr (kIsComplex<T>) {
    return V(x.real(), x.imag());
  } else {
    return V(static_cast<long double>(x), 0);
  }
}

// Callers pass values representable in T (or rounded by a float T).
template <typename T>
T FromV(V v) {
  if constexpr (kIsComplex<T>) {
    using R = typename T::value_type;
    return T(static_cast<R>(v.real()), static_cast<R>(v.imag()));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v.real() != 0 || v.imag() != 0;
  } else {
    return static_cast<T>(v.real());
  }
}

V ReadV(DType t, const std::byte* p) {
  return VisitDType(t, [&](auto tag) -> V {
    using T = typename decltype(tag)::type;
    T x;
    std::memcpy(&x, p, sizeof(T));
    return ToV(x);
  });
}

void WriteV(DType t, std::byte* p, V v) {
  VisitDType(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T x = FromV<T>(v);
    std::memcpy(p, &x, sizeof(T));
  });
}

NDArray FromValues(DType t, Shape shape, const std::vector<V>& values) {
  NDArray a = *NDArray::Allocate(Pool(), t, std::move(shape));
  EXPECT_EQ(a.num_elements(), static_cast<Index>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) WriteV(t, a.data() + i * t.size(), values[i]);
  return a;
}

// The elements of any view in C order.
std::vector<V> ToValues(const ConstArrayView& v) {
  std::vector<V> out;
  if (v.num_elements() == 0) return out;
  Shape idx(v.rank(), 0);
  do {
    out.push_back(ReadV(v.dtype(), v.ElementPointer(idx)));
  } while (NextIndex(idx, v.shape()));
  return out;
}

template <typename T>
NDArray Make(Shape shape, std::vector<T> values) {
  NDArray a = *NDArray::Allocate(Pool(), DTypeOf<T>(), std::move(shape));
  EXPECT_EQ(a.num_elements(), static_cast<Index>(values.size()));
  std::copy(values.begin(), values.end(), a.data_as<T>());
  return a;
}

template <typename T>
std::vector<T> Values(const ConstArrayView& view) {
  NDArray copy = *NDArray::CopyOf(Pool(), view);
  return std::vector<T>(copy.data_as<T>(), copy.data_as<T>() + copy.num_elements());
}

NDArray Empty(DType t, Shape shape) { return *NDArray::Allocate(Pool(), t, std::move(shape)); }

// Sample values of each dtype: zeros of both signs, ±1, halves, extremes,
// infinities and NaN.
std::vector<V> Samples(DType t) {
  if (t.is_bool()) return {0, 1};
  return VisitDType(t, [&](auto tag) -> std::vector<V> {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      using L = std::numeric_limits<T>;
      std::vector<V> v = {0, 1, 2, 3, 7, 64, 100, L::max(), L::max() - 1, 5};
      if constexpr (std::is_signed_v<T>) {
        for (long double x : {-1.0L, -2.0L, -3.0L, -7.0L, -100.0L}) v.push_back(x);
        v.push_back(L::min());
        v.push_back(L::min() + 1);
      } else {
        v.push_back(200);
      }
      return v;
    } else if constexpr (std::is_floating_point_v<T>) {
      return {0,   -0.0L, 1,   -1,     0.5,   -0.5, 1.5,   2.5,  -2.5,
              3.7, -3.7,  100, -1e-3L, 1e30L, kInf, -kInf, kNaN, 0.25};
    } else {
      return {V(0, 0),   V(1, 0),     V(-1, 0), V(0, 1),    V(1.5, -2), V(-0.5, 0.25), V(3, 4),
              V(-2, -3), V(1e-3L, 2), V(0, -1), V(kInf, 0), V(kNaN, 1), V(1, kInf),    V(0.5, 0)};
    }
  });
}

bool IsFinite(V v) { return std::isfinite(v.real()) && std::isfinite(v.imag()); }

long double Tolerance(DType t) {
  switch (t.id()) {
    case DTypeId::kFloat32:
    case DTypeId::kComplex64:
      return 2e-6L;
    case DTypeId::kFloat64:
    case DTypeId::kComplex128:
      return 1e-13L;
    default:
      return 0;
  }
}

// NaN matches NaN, infinities match exactly, finite values within the dtype's
// tolerance relative to the larger component.
::testing::AssertionResult Close(DType t, V got, V want) {
  const long double tol = Tolerance(t);
  long double scale = 0;
  for (long double w : {want.real(), want.imag()}) {
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
  }
  auto component_ok = [&](long double g, long double w) {
    if (std::isnan(w)) return std::isnan(g);
    if (std::isinf(w)) return g == w;
    if (!std::isfinite(g)) return false;
    return std::fabs(g - w) <= tol * scale;
  };
  if (component_ok(got.real(), want.real()) && component_ok(got.imag(), want.imag())) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "got (" << static_cast<double>(got.real()) << ", " << static_cast<double>(got.imag())
         << ") want (" << static_cast<double>(want.real()) << ", "
         << static_cast<double>(want.imag()) << ") in " << t.name();
}

void ExpectAllClose(DType t, const std::vector<V>& got, const std::vector<V>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(Close(t, got[i], want[i])) << "element " << i;
}

// ---------------------------------------------------------------------------
// Integer reference arithmetic: exact in 128 bits, then reduced modulo 2^bits.

using Int128 = __int128;
using UInt128 = unsigned __int128;

template <typename T>
T Wrap(UInt128 v) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(v));
}

// Python's floor division and modulo on exact integers.
Int128 PyFloorDiv(Int128 x, Int128 y) {
  Int128 q = x / y;
  if (q * y != x && ((x < 0) != (y < 0))) --q;
  return q;
}

// Round half to even, written differently from the kernel's nearbyint.
template <typename T>
T RoundHalfEven(T x) {
  T r = std::round(x);  // half away from zero
  if (std::fabs(x - std::trunc(x)) == T(0.5)) r = 2 * std::round(x / 2);
  return r;
}

// ---------------------------------------------------------------------------
// Unary reference.

const std::vector<UnaryOp> kAllUnary = {
    UnaryOp::kAbs,        UnaryOp::kNegative,      UnaryOp::kPositive, UnaryOp::kSquare,
    UnaryOp::kSqrt,       UnaryOp::kExp,           UnaryOp::kExpm1,    UnaryOp::kLog,
    UnaryOp::kLog1p,      UnaryOp::kLog2,          UnaryOp::kLog10,    UnaryOp::kSin,
    UnaryOp::kCos,        UnaryOp::kTan,           UnaryOp::kArcsin,   UnaryOp::kArccos,
    UnaryOp::kArctan,     UnaryOp::kSinh,          UnaryOp::kCosh,     UnaryOp::kTanh,
    UnaryOp::kFloor,      UnaryOp::kCeil,          UnaryOp::kRound,    UnaryOp::kTrunc,
    UnaryOp::kSign,       UnaryOp::kIsnan,         UnaryOp::kIsinf,    UnaryOp::kIsfinite,
    UnaryOp::kLogicalNot, UnaryOp::kBitwiseInvert, UnaryOp::kReal,     UnaryOp::kImag,
    UnaryOp::kConj,
};

bool IsMath(UnaryOp op) { return op >= UnaryOp::kSqrt && op <= UnaryOp::kTanh; }

DType RealTypeOf(DType t) {
  if (t.id() == DTypeId::kComplex64) return DTypeId::kFloat32;
  if (t.id() == DTypeId::kComplex128) return DTypeId::kFloat64;
  return t;
}

// The spec of UnaryResultType, written as the brief states it; nullopt when
// the op is not defined for the dtype.
std::optional<DType> ExpectedUnaryResult(UnaryOp op, DType t) {
  const bool exact = t.is_bool() || t.is_integer();
  if (IsMath(op)) return exact ? DType(DTypeId::kFloat64) : t;
  switch (op) {
    case UnaryOp::kAbs:
      return RealTypeOf(t);
    case UnaryOp::kNegative:
    case UnaryOp::kPositive:
    case UnaryOp::kSquare:
    case UnaryOp::kSign:
      if (t.is_bool()) return std::nullopt;
      return t;
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRound:
    case UnaryOp::kTrunc:
      if (t.is_complex()) return std::nullopt;
      return t;
    case UnaryOp::kIsnan:
    case UnaryOp::kIsinf:
    case UnaryOp::kIsfinite:
    case UnaryOp::kLogicalNot:
      return DType(DTypeId::kBool);
    case UnaryOp::kBitwiseInvert:
      if (!exact) return std::nullopt;
      return t;
    case UnaryOp::kReal:
    case UnaryOp::kImag:
      return RealTypeOf(t);
    case UnaryOp::kConj:
      return t;
    default:
      return std::nullopt;
  }
}

template <typename T>
V RefUnary(UnaryOp op, T x) {
  constexpr bool kInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;
  constexpr bool kFloat = std::is_floating_point_v<T>;
  switch (op) {
    case UnaryOp::kAbs:
      if constexpr (kInt)
        return ToV(Wrap<T>(x < 0 ? -Int128(x) : Int128(x)));
      else if constexpr (std::is_same_v<T, bool>)
        return ToV(x);
      else
        return ToV(std::abs(x));
    case UnaryOp::kNegative:
      if constexpr (kInt)
        return ToV(Wrap<T>(-Int128(x)));
      else
        return ToV(T(-x));
    case UnaryOp::kPositive:
      return ToV(x);
    case UnaryOp::kSquare:
      if constexpr (kInt)
        return ToV(Wrap<T>(UInt128(Int128(x)) * UInt128(Int128(x))));
      else
        return ToV(T(x * x));
    default:
      break;
  }
  if constexpr (kFloat || kIsComplex<T>) {
    switch (op) {
      case UnaryOp::kSqrt:
        return ToV(std::sqrt(x));
      case UnaryOp::kExp:
        return ToV(std::exp(x));
      case UnaryOp::kLog:
        return ToV(std::log(x));
      case UnaryOp::kLog10:
        return ToV(std::log10(x));
      case UnaryOp::kSin:
        return ToV(std::sin(x));
      case UnaryOp::kCos:
        return ToV(std::cos(x));
      case UnaryOp::kTan:
        return ToV(std::tan(x));
      case UnaryOp::kArcsin:
        return ToV(std::asin(x));
      case UnaryOp::kArccos:
        return ToV(std::acos(x));
      case UnaryOp::kArctan:
        return ToV(std::atan(x));
      case UnaryOp::kSinh:
        return ToV(std::sinh(x));
      case UnaryOp::kCosh:
        return ToV(std::cosh(x));
      case UnaryOp::kTanh:
        return ToV(std::tanh(x));
      default:
        break;
    }
  }
  if constexpr (kFloat) {
    switch (op) {
      case UnaryOp::kExpm1:
        return ToV(std::expm1(x));
      case UnaryOp::kLog1p:
        return ToV(std::log1p(x));
      case UnaryOp::kLog2:
        return ToV(std::log2(x));
      case UnaryOp::kFloor:
        return ToV(std::floor(x));
      case UnaryOp::kCeil:
        return ToV(std::ceil(x));
      case UnaryOp::kRound:
        return ToV(RoundHalfEven(x));
      case UnaryOp::kTrunc:
        return ToV(std::trunc(x));
      case UnaryOp::kSign:
        if (std::isnan(x)) return V(kNaN, 0);
        return V(x > 0 ? 1 : (x < 0 ? -1 : 0), 0);
      case UnaryOp::kIsnan:
        return V(std::isnan(x), 0);
      case UnaryOp::kIsinf:
        return V(std::isinf(x), 0);
      case UnaryOp::kIsfinite:
        return V(std::isfinite(x), 0);
      default:
        break;
    }
  }
  if constexpr (kIsComplex<T>) {
    using R = typename T::value_type;
    switch (op) {
      case UnaryOp::kExpm1:
        return ToV(std::exp(x) - T(1));
      case UnaryOp::kLog1p:
        return ToV(std::log(T(1) + x));
      case UnaryOp::kLog2:
        return ToV(std::log(x) / std::log(R(2)));
      case UnaryOp::kSign:
        return x == T(0) ? V(0) : ToV(x / std::abs(x));
      case UnaryOp::kIsnan:
        return V(std::isnan(x.real()) || std::isnan(x.imag()), 0);
      case UnaryOp::kIsinf:
        return V(std::isinf(x.real()) || std::isinf(x.imag()), 0);
      case UnaryOp::kIsfinite:
        return V(std::isfinite(x.real()) && std::isfinite(x.imag()), 0);
      case UnaryOp::kReal:
        return V(x.real(), 0);
      case UnaryOp::kImag:
        return V(x.imag(), 0);
      case UnaryOp::kConj:
        return ToV(std::conj(x));
      case UnaryOp::kLogicalNot:
        return V(x == T(0), 0);
      default:
        break;
    }
  } else {
    switch (op) {
      case UnaryOp::kFloor:
      case UnaryOp::kCeil:
      case UnaryOp::kRound:
      case UnaryOp::kTrunc:
      case UnaryOp::kReal:
      case UnaryOp::kConj:
        return ToV(x);
      case UnaryOp::kImag:
        return V(0);
      case UnaryOp::kSign:
        if constexpr (kInt) return V(x > 0 ? 1 : (x < 0 ? -1 : 0), 0);
        break;
      case UnaryOp::kIsnan:
      case UnaryOp::kIsinf:
        return V(0);
      case UnaryOp::kIsfinite:
        return V(1);
      case UnaryOp::kLogicalNot:
        return V(x == T(0), 0);
      case UnaryOp::kBitwiseInvert:
        if constexpr (std::is_same_v<T, bool>) return V(!x, 0);
        if constexpr (kInt) return ToV(Wrap<T>(~Int128(x)));
        break;
      default:
        break;
    }
  }
  ADD_FAILURE() << "no reference for " << UnaryOpName(op) << " of " << DTypeOf<T>().name();
  return V(0);
}

TEST(UnaryTest, EveryOpOnEveryDType) {
  for (UnaryOp op : kAllUnary) {
    for (DType t : AllDTypes()) {
      SCOPED_TRACE(std::string(UnaryOpName(op)) + " of " + std::string(t.name()));
      std::optional<DType> expected = ExpectedUnaryResult(op, t);
      Result<DType> result = UnaryResultType(op, t);
      NDArray in = FromValues(t, {static_cast<Index>(Samples(t).size())}, Samples(t));
      if (!expected) {
        ASSERT_FALSE(result.ok());
        EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
        EXPECT_THAT(result.status().message(), HasSubstr(std::string(UnaryOpName(op))));
        EXPECT_THAT(result.status().message(), HasSubstr(std::string(t.name())));
        NDArray out = Empty(t, in.shape());
        Status s = ApplyUnary(op, in.view(), out.view());
        EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
        continue;
      }
      ASSERT_TRUE(result.ok()) << result.status().ToString();
      ASSERT_EQ(*result, *expected);
      NDArray out = Empty(*result, in.shape());
      ASSERT_TRUE(ApplyUnary(op, in.view(), out.view()).ok());
      const std::vector<V> xs = ToValues(in.view());
      const std::vector<V> got = ToValues(out.view());
      // Math on integers happens in float64.
      const DType compute =
          IsMath(op) && (t.is_bool() || t.is_integer()) ? DType(DTypeId::kFloat64) : t;
      std::vector<V> want;
      for (V x : xs) {
        want.push_back(VisitDType(compute, [&](auto tag) {
          using T = typename decltype(tag)::type;
          return RefUnary<T>(op, FromV<T>(x));
        }));
      }
      ExpectAllClose(*result, got, want);
    }
  }
}

TEST(UnaryTest, UnsupportedNamesOpAndDType) {
  Result<DType> r = UnaryResultType(UnaryOp::kFloor, DTypeId::kComplex64);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "floor does not support complex64");
  r = UnaryResultType(UnaryOp::kBitwiseInvert, DTypeId::kFloat32);
  EXPECT_EQ(r.status().message(), "bitwise_invert does not support float32");
  r = UnaryResultType(UnaryOp::kNegative, DTypeId::kBool);
  EXPECT_EQ(r.status().message(), "negative does not support bool");
}

// Values computed by numpy 1.24 (complex128).
TEST(UnaryTest, ComplexMatchesNumpy) {
  const std::vector<V> z = {{0.5, 0.25}, {-1e-08, 1e-09}, {2.0, -3.0}, {-1.5, 0.0}, {0.0, 1e-05}};
  struct Case {
    UnaryOp op;
    std::vector<V> want;
  };
  const std::vector<Case> cases = {
      {UnaryOp::kExpm1,
       {{0.5974665191199127, 0.4079001700783598},
        {-9.9999999505e-09, 9.999999900000002e-10},
        {-8.315110094901103, -1.0427436562359045},
        {-0.7768698398515702, 0.0},
        {-4.9999999999583335e-11, 9.999999999833334e-06}}},
      {UnaryOp::kLog1p,
       {{0.41916459520222155, 0.16514867741462683},
        {-1.0000000100247594e-08, 1.0000000100000003e-09},
        {1.4451858789480823, -0.7853981633974483},
        {-0.6931471805599453, 3.141592653589793},
        {5.000000413576855e-11, 9.999999999666668e-06}}},
      {UnaryOp::kLog2,
       {{-0.8390359525563188, 0.6689021062254881},
        {-26.56824711261036, 4.388568671146109},
        {1.850219859070546, -1.417871630745722},
        {0.5849625007211562, 4.532360141827193},
        {-16.609640474436812, 2.2661800709135966}}},
      {UnaryOp::kSqrt,
       {{0.7276733451126774, 0.17178037486125622},
        {4.993777183700244e-06, 0.00010012461141278125},
        {1.6741492280355401, -0.8959774761298381},
        {0.0, 1.224744871391589},
        {0.00223606797749979, 0.00223606797749979}}},
      {UnaryOp::kLog10,
       {{-0.25257498915995297, 0.20135959813668655},
        {-7.9978393131086785, 1.321090808046197},
        {0.5569716761534184, -0.4268218908554666},
        {0.17609125905568124, 1.3643763538418412},
        {-5.0, 0.6821881769209206}}},
      {UnaryOp::kArcsin,
       {{0.5016088532755008, 0.28139605624529274},
        {-1.0000000000000002e-08, 9.999999999999999e-10},
        {0.5706527843210994, -1.9833870299165355},
        {-1.5707963267948966, 0.9624236501192069},
        {0.0, 9.999999999833335e-06}}},
      {UnaryOp::kTanh,
       {{0.4854872810241353, 0.19805544995134955},
        {-1.0000000000000002e-08, 1e-09},
        {0.965385879022133, 0.009884375038322492},
        {-0.9051482536448665, 0.0},
        {0.0, 1.0000000000333334e-05}}},
  };
  NDArray in = FromValues(DTypeId::kComplex128, {5}, z);
  for (const Case& c : cases) {
    SCOPED_TRACE(UnaryOpName(c.op));
    NDArray out = Empty(DTypeId::kComplex128, {5});
    ASSERT_TRUE(ApplyUnary(c.op, in.view(), out.view()).ok());
    ExpectAllClose(DTypeId::kComplex128, ToValues(out.view()), c.want);
  }
}

TEST(UnaryTest, RoundHalfToEvenAndSignMatchNumpy) {
  NDArray in =
      Make<double>({10}, {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -3.5, 2.4999, 0.49999999999999994});
  NDArray out = Empty(DTypeId::kFloat64, {10});
  ASSERT_TRUE(ApplyUnary(UnaryOp::kRound, in.view(), out.view()).ok());
  EXPECT_EQ(Values<double>(out.view()),
            (std::vector<double>{-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 4.0, -4.0, 2.0, 0.0}));

  NDArray s = Make<double>({5}, {-2.5, 0.0, -0.0, NAN, INFINITY});
  NDArray sign = Empty(DTypeId::kFloat64, {5});
  ASSERT_TRUE(ApplyUnary(UnaryOp::kSign, s.view(), sign.view()).ok());
  std::vector<double> got = Values<double>(sign.view());
  EXPECT_EQ(got[0], -1.0);
  EXPECT_EQ(got[1], 0.0);
  EXPECT_EQ(got[2], 0.0);
  EXPECT_TRUE(std::isnan(got[3]));
  EXPECT_EQ(got[4], 1.0);
}

TEST(UnaryTest, IntegerWraparound) {
  NDArray a = Make<int8_t>({2}, {-128, 127});
  NDArray out = Empty(DTypeId::kInt8, {2});
  ASSERT_TRUE(ApplyUnary(UnaryOp::kAbs, a.view(), out.view()).ok());
  EXPECT_EQ(Values<int8_t>(out.view()), (std::vector<int8_t>{-128, 127}));  // numpy too
  ASSERT_TRUE(ApplyUnary(UnaryOp::kNegative, a.view(), out.view()).ok());
  EXPECT_EQ(Values<int8_t>(out.view()), (std::vector<int8_t>{-128, -127}));
  NDArray u = Make<uint16_t>({1}, {65535});
  NDArray u_out = Empty(DTypeId::kUInt16, {1});
  ASSERT_TRUE(ApplyUnary(UnaryOp::kSquare, u.view(), u_out.view()).ok());
  EXPECT_EQ(Values<uint16_t>(u_out.view())[0], 1);
  ASSERT_TRUE(ApplyUnary(UnaryOp::kNegative, u.view(), u_out.view()).ok());
  EXPECT_EQ(Values<uint16_t>(u_out.view())[0], 1);
}

TEST(UnaryTest, MathOfIntegersIsFloat64) {
  NDArray a = Make<int32_t>({3}, {4, -1, 0});
  ASSERT_EQ(*UnaryResultType(UnaryOp::kSqrt, DTypeId::kInt32), DType(DTypeId::kFloat64));
  NDArray out = Empty(DTypeId::kFloat64, {3});
  ASSERT_TRUE(ApplyUnary(UnaryOp::kSqrt, a.view(), out.view()).ok());
  std::vector<double> got = Values<double>(out.view());
  EXPECT_EQ(got[0], 2.0);
  EXPECT_TRUE(std::isnan(got[1]));
  EXPECT_EQ(got[2], 0.0);
}

// ---------------------------------------------------------------------------
// Promotion.

TEST(PromoteTypesTest, FullTableMatchesTheStandardPlusNumpyBool) {
  // Rows and columns in DTypeId order; "x" is an error. Matches the Array API
  // table for same-kind pairs; int/float and int/complex give the float or
  // complex; bool promotes to anything (numpy).
  const char* kNames[] = {"b",  "i1", "i2", "i4", "i8", "u1", "u2",
                          "u4", "u8", "f4", "f8", "c8", "c16"};
  // clang-format off
  const char* kTable[kNumDTypes][kNumDTypes] = {
      /* b  */ {"b", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8", "c8", "c16"},
      /* i1 */ {"i1", "i1", "i2", "i4", "i8", "i2", "i4", "i8", "x", "f4", "f8", "c8", "c16"},
      /* i2 */ {"i2", "i2", "i2", "i4", "i8", "i2", "i4", "i8", "x", "f4", "f8", "c8", "c16"},
      /* i4 */ {"i4", "i4", "i4", "i4", "i8", "i4", "i4", "i8", "x", "f4", "f8", "c8", "c16"},
      /* i8 */ {"i8", "i8", "i8", "i8", "i8", "i8", "i8", "i8", "x", "f4", "f8", "c8", "c16"},
      /* u1 */ {"u1", "i2", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8", "c8", "c16"},
      /* u2 */ {"u2", "i4", "i4", "i4", "i8", "u2", "u2", "u4", "u8", "f4", "f8", "c8", "c16"},
      /* u4 */ {"u4", "i8", "i8", "i8", "i8", "u4", "u4", "u4", "u8", "f4", "f8", "c8", "c16"},
      /* u8 */ {"u8", "x", "x", "x", "x", "u8", "u8", "u8", "u8", "f4", "f8", "c8", "c16"},
      /* f4 */ {"f4", "f4", "f4", "f4", "f4", "f4", "f4", "f4", "f4", "f4", "f8", "c8", "c16"},
      /* f8 */ {"f8", "f8", "f8", "f8", "f8", "f8", "f8", "f8", "f8", "f8", "f8", "c16", "c16"},
      /* c8 */ {"c8", "c8", "c8", "c8", "c8", "c8", "c8", "c8", "c8", "c8", "c16", "c8", "c16"},
      /* c16*/ {"c16", "c16", "c16", "c16", "c16", "c16", "c16", "c16", "c16", "c16", "c16", "c16", "c16"},
  };
  // clang-format on
  auto short_name = [&](DType t) { return std::string(kNames[static_cast<int>(t.id())]); };
  for (DType a : AllDTypes()) {
    for (DType b : AllDTypes()) {
      SCOPED_TRACE(std::string(a.name()) + " + " + std::string(b.name()));
      const std::string want = kTable[static_cast<int>(a.id())][static_cast<int>(b.id())];
      Result<DType> got = PromoteTypes(a, b);
      if (want == "x") {
        ASSERT_FALSE(got.ok());
        EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
        EXPECT_THAT(got.status().message(), HasSubstr(std::string(a.name())));
        EXPECT_THAT(got.status().message(), HasSubstr(std::string(b.name())));
      } else {
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(short_name(*got), want);
      }
    }
  }
}

TEST(PromoteTypesTest, Uint64WithSignedIsAnError) {
  Result<DType> r = PromoteTypes(DTypeId::kUInt64, DTypeId::kInt64);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("cannot promote uint64 and int64"));
  Result<DType> add = BinaryResultType(BinaryOp::kAdd, DTypeId::kInt8, DTypeId::kUInt64);
  EXPECT_EQ(add.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(add.status().message(), HasSubstr("add: cannot promote int8 and uint64"));
  // Logical ops do not promote, so they accept the pair.
  EXPECT_EQ(*BinaryResultType(BinaryOp::kLogicalAnd, DTypeId::kInt64, DTypeId::kUInt64),
            DType(DTypeId::kBool));
}

TEST(ResultTypeTest, BinarySpotChecks) {
  struct Case {
    BinaryOp op;
    DTypeId a, b;
    DTypeId result, compute;
  };
  const Case cases[] = {
      {BinaryOp::kAdd, DTypeId::kInt8, DTypeId::kFloat32, DTypeId::kFloat32, DTypeId::kFloat32},
      {BinaryOp::kDivide, DTypeId::kInt32, DTypeId::kInt32, DTypeId::kFloat64, DTypeId::kFloat64},
      {BinaryOp::kDivide, DTypeId::kFloat32, DTypeId::kFloat32, DTypeId::kFloat32,
       DTypeId::kFloat32},
      {BinaryOp::kDivide, DTypeId::kInt16, DTypeId::kFloat32, DTypeId::kFloat32, DTypeId::kFloat32},
      {BinaryOp::kDivide, DTypeId::kBool, DTypeId::kBool, DTypeId::kFloat64, DTypeId::kFloat64},
      {BinaryOp::kLess, DTypeId::kUInt8, DTypeId::kInt8, DTypeId::kBool, DTypeId::kInt16},
      {BinaryOp::kEqual, DTypeId::kComplex64, DTypeId::kFloat64, DTypeId::kBool,
       DTypeId::kComplex128},
      {BinaryOp::kLogicalXor, DTypeId::kFloat32, DTypeId::kInt8, DTypeId::kBool, DTypeId::kBool},
      {BinaryOp::kPow, DTypeId::kInt8, DTypeId::kUInt8, DTypeId::kInt16, DTypeId::kInt16},
      {BinaryOp::kArctan2, DTypeId::kInt8, DTypeId::kInt8, DTypeId::kFloat64, DTypeId::kFloat64},
      {BinaryOp::kArctan2, DTypeId::kFloat32, DTypeId::kUInt16, DTypeId::kFloat32,
       DTypeId::kFloat32},
      {BinaryOp::kBitwiseAnd, DTypeId::kBool, DTypeId::kBool, DTypeId::kBool, DTypeId::kBool},
      {BinaryOp::kBitwiseLeftShift, DTypeId::kUInt8, DTypeId::kUInt32, DTypeId::kUInt32,
       DTypeId::kUInt32},
      {BinaryOp::kMaximum, DTypeId::kBool, DTypeId::kFloat32, DTypeId::kFloat32, DTypeId::kFloat32},
      {BinaryOp::kAdd, DTypeId::kBool, DTypeId::kBool, DTypeId::kBool, DTypeId::kBool},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(BinaryOpName(c.op)) + " " + std::string(DType(c.a).name()) + " " +
                 std::string(DType(c.b).name()));
    ASSERT_TRUE(BinaryResultType(c.op, c.a, c.b).ok());
    EXPECT_EQ(*BinaryResultType(c.op, c.a, c.b), DType(c.result));
    EXPECT_EQ(*BinaryComputeType(c.op, c.a, c.b), DType(c.compute));
  }
  Result<DType> r = BinaryResultType(BinaryOp::kSubtract, DTypeId::kBool, DTypeId::kBool);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "subtract does not support bool and bool");
  r = BinaryResultType(BinaryOp::kBitwiseOr, DTypeId::kFloat32, DTypeId::kInt8);
  EXPECT_EQ(r.status().message(), "bitwise_or does not support float32 and int8");
  r = BinaryResultType(BinaryOp::kLess, DTypeId::kComplex64, DTypeId::kComplex64);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  r = BinaryResultType(BinaryOp::kBitwiseLeftShift, DTypeId::kBool, DTypeId::kBool);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  r = BinaryResultType(BinaryOp::kFloorDivide, DTypeId::kComplex128, DTypeId::kFloat64);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(ResultTypeTest, OpNames) {
  EXPECT_EQ(UnaryOpName(UnaryOp::kBitwiseInvert), "bitwise_invert");
  EXPECT_EQ(UnaryOpName(UnaryOp::kArccos), "acos");
  EXPECT_EQ(BinaryOpName(BinaryOp::kGreaterEqual), "greater_equal");
  EXPECT_EQ(BinaryOpName(BinaryOp::kFloorDivide), "floor_divide");
}

// ---------------------------------------------------------------------------
// Binary reference.

const std::vector<BinaryOp> kAllBinary = {
    BinaryOp::kAdd,
    BinaryOp::kSubtract,
    BinaryOp::kMultiply,
    BinaryOp::kDivide,
    BinaryOp::kFloorDivide,
    BinaryOp::kRemainder,
    BinaryOp::kPow,
    BinaryOp::kEqual,
    BinaryOp::kNotEqual,
    BinaryOp::kLess,
    BinaryOp::kLessEqual,
    BinaryOp::kGreater,
    BinaryOp::kGreaterEqual,
    BinaryOp::kLogicalAnd,
    BinaryOp::kLogicalOr,
    BinaryOp::kLogicalXor,
    BinaryOp::kBitwiseAnd,
    BinaryOp::kBitwiseOr,
    BinaryOp::kBitwiseXor,
    BinaryOp::kBitwiseLeftShift,
    BinaryOp::kBitwiseRightShift,
    BinaryOp::kMinimum,
    BinaryOp::kMaximum,
    BinaryOp::kArctan2,
};

bool IsComparisonOp(BinaryOp op) { return op >= BinaryOp::kEqual && op <= BinaryOp::kGreaterEqual; }
bool IsLogicalOp(BinaryOp op) { return op >= BinaryOp::kLogicalAnd && op <= BinaryOp::kLogicalXor; }

// The spec for two inputs of one dtype: the compute dtype, or nullopt.
std::optional<DType> ExpectedSameTypeCompute(BinaryOp op, DType t) {
  const bool b = t.is_bool(), i = t.is_integer(), f = t.is_float(), c = t.is_complex();
  const DType f64 = DTypeId::kFloat64;
  switch (op) {
    case BinaryOp::kAdd:
    case BinaryOp::kMultiply:
    case BinaryOp::kEqual:
    case BinaryOp::kNotEqual:
      return t;
    case BinaryOp::kSubtract:
    case BinaryOp::kPow:
      if (b) return std::nullopt;
      return t;
    case BinaryOp::kDivide:
      return (b || i) ? f64 : t;
    case BinaryOp::kFloorDivide:
    case BinaryOp::kRemainder:
      if (i || f) return t;
      return std::nullopt;
    case BinaryOp::kLess:
    case BinaryOp::kLessEqual:
    case BinaryOp::kGreater:
    case BinaryOp::kGreaterEqual:
    case BinaryOp::kMinimum:
    case BinaryOp::kMaximum:
      if (c) return std::nullopt;
      return t;
    case BinaryOp::kLogicalAnd:
    case BinaryOp::kLogicalOr:
    case BinaryOp::kLogicalXor:
      return DType(DTypeId::kBool);
    case BinaryOp::kBitwiseAnd:
    case BinaryOp::kBitwiseOr:
    case BinaryOp::kBitwiseXor:
      if (b || i) return t;
      return std::nullopt;
    case BinaryOp::kBitwiseLeftShift:
    case BinaryOp::kBitwiseRightShift:
      if (i) return t;
      return std::nullopt;
    case BinaryOp::kArctan2:
      if (c) return std::nullopt;
      return (b || i) ? f64 : t;
  }
  return std::nullopt;
}

// Whether the generic reference below models numpy exactly for these inputs;
// the remaining cases are checked against numpy's own values further down.
bool ReferenceCovers(BinaryOp op, DType compute, V x, V y) {
  if (compute.is_float() && (op == BinaryOp::kFloorDivide || op == BinaryOp::kRemainder)) {
    return IsFinite(x) && IsFinite(y) && y.real() != 0 && std::fabs(x.real() / y.real()) < 1e6L;
  }
  if (compute.is_complex() && op == BinaryOp::kPow) {
    return IsFinite(x) && IsFinite(y) && x != V(0) && y != V(0);
  }
  if (compute.is_complex() && (op == BinaryOp::kMultiply || op == BinaryOp::kDivide)) {
    return IsFinite(x) && IsFinite(y);  // Annex G infinities are the library's business
  }
  return true;
}

template <typename T>
V RefBinary(BinaryOp op, T x, T y) {
  constexpr bool kBool = std::is_same_v<T, bool>;
  constexpr bool kInt = std::is_integral_v<T> && !kBool;
  constexpr bool kFloat = std::is_floating_point_v<T>;
  constexpr int kBits = sizeof(T) * 8;
  switch (op) {
    case BinaryOp::kEqual:
      return V(x == y);
    case BinaryOp::kNotEqual:
      return V(x != y);
    default:
      break;
  }
  if constexpr (kBool) {
    switch (op) {
      case BinaryOp::kAdd:
      case BinaryOp::kLogicalOr:
      case BinaryOp::kBitwiseOr:
      case BinaryOp::kMaximum:
        return V(x || y);
      case BinaryOp::kMultiply:
      case BinaryOp::kLogicalAnd:
      case BinaryOp::kBitwiseAnd:
      case BinaryOp::kMinimum:
        return V(x && y);
      case BinaryOp::kLogicalXor:
      case BinaryOp::kBitwiseXor:
        return V(x != y);
      case BinaryOp::kLess:
        return V(x < y);
      case BinaryOp::kLessEqual:
        return V(x <= y);
      case BinaryOp::kGreater:
        return V(x > y);
      case BinaryOp::kGreaterEqual:
        return V(x >= y);
      default:
        break;
    }
  }
  if constexpr (kInt) {
    const Int128 a = x, b = y;
    switch (op) {
      case BinaryOp::kAdd:
        return ToV(Wrap<T>(UInt128(a + b)));
      case BinaryOp::kSubtract:
        return ToV(Wrap<T>(UInt128(a - b)));
      case BinaryOp::kMultiply:
        return ToV(Wrap<T>(UInt128(a) * UInt128(b)));
      case BinaryOp::kFloorDivide:
        return b == 0 ? V(0) : ToV(Wrap<T>(UInt128(PyFloorDiv(a, b))));
      case BinaryOp::kRemainder:
        return b == 0 ? V(0) : ToV(Wrap<T>(UInt128(a - PyFloorDiv(a, b) * b)));
      case BinaryOp::kPow: {
        if (b < 0) return V(a == 1 ? 1 : (a == -1 ? ((b % 2 != 0) ? -1 : 1) : 0));
        UInt128 r = 1;
        if (b <= 64) {
          for (Int128 e = 0; e < b; ++e) r *= UInt128(a);
        } else {  // square and multiply; the low bits are exact modulo 2^128
          UInt128 base = UInt128(a);
          for (Int128 e = b; e > 0; e >>= 1) {
            if (e & 1) r *= base;
            base *= base;
          }
        }
        return ToV(Wrap<T>(r));
      }
      case BinaryOp::kLess:
        return V(x < y);
      case BinaryOp::kLessEqual:
        return V(x <= y);
      case BinaryOp::kGreater:
        return V(x > y);
      case BinaryOp::kGreaterEqual:
        return V(x >= y);
      case BinaryOp::kBitwiseAnd:
        return ToV(Wrap<T>(UInt128(a & b)));
      case BinaryOp::kBitwiseOr:
        return ToV(Wrap<T>(UInt128(a | b)));
      case BinaryOp::kBitwiseXor:
        return ToV(Wrap<T>(UInt128(a ^ b)));
      case BinaryOp::kBitwiseLeftShift:
        if (b < 0 || b >= kBits) return V(0);
        return ToV(Wrap<T>(UInt128(a) << int(b)));
      case BinaryOp::kBitwiseRightShift:
        if (b < 0 || b >= kBits) return V(a < 0 ? -1 : 0);
        return ToV(Wrap<T>(UInt128(PyFloorDiv(a, Int128(1) << int(b)))));
      case BinaryOp::kMinimum:
        return ToV(std::min(x, y));
      case BinaryOp::kMaximum:
        return ToV(std::max(x, y));
      default:
        break;
    }
  }
  if constexpr (kFloat) {
    const long double a = x, b = y;
    switch (op) {
      case BinaryOp::kFloorDivide:
        return ToV(T(std::floor(a / b)));
      case BinaryOp::kRemainder: {
        // The exact remainder (fmod is exact) moved to the divisor's sign.
        long double r = std::fmod(a, b);
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return ToV(T(r));
      }
      case BinaryOp::kPow:
        return ToV(std::pow(x, y));
      case BinaryOp::kLess:
        return V(x < y);
      case BinaryOp::kLessEqual:
        return V(x <= y);
      case BinaryOp::kGreater:
        return V(x > y);
      case BinaryOp::kGreaterEqual:
        return V(x >= y);
      case BinaryOp::kMinimum:
        return std::isnan(x) || std::isnan(y) ? V(kNaN) : ToV(std::min(x, y));
      case BinaryOp::kMaximum:
        return std::isnan(x) || std::isnan(y) ? V(kNaN) : ToV(std::max(x, y));
      case BinaryOp::kArctan2:
        return ToV(std::atan2(x, y));
      default:
        break;
    }
  }
  if constexpr (kFloat || kIsComplex<T>) {
    switch (op) {
      case BinaryOp::kAdd:
        return ToV(T(x + y));
      case BinaryOp::kSubtract:
        return ToV(T(x - y));
      case BinaryOp::kMultiply:
        return ToV(T(x * y));
      case BinaryOp::kDivide:
        return ToV(T(x / y));
      case BinaryOp::kPow:
        if constexpr (kIsComplex<T>) return ToV(std::pow(x, y));
        break;
      default:
        break;
    }
  }
  ADD_FAILURE() << "no reference for " << BinaryOpName(op) << " of " << DTypeOf<T>().name();
  return V(0);
}

// Every op on every dtype: the samples as a column against the samples as a
// row, so that the kernel also broadcasts both inputs.
TEST(BinaryTest, EveryOpOnEveryDType) {
  for (BinaryOp op : kAllBinary) {
    for (DType t : AllDTypes()) {
      SCOPED_TRACE(std::string(BinaryOpName(op)) + " of " + std::string(t.name()));
      const std::vector<V> samples = Samples(t);
      const Index n = static_cast<Index>(samples.size());
      NDArray a = FromValues(t, {n, 1}, samples);
      NDArray b = FromValues(t, {1, n}, samples);
      std::optional<DType> compute = ExpectedSameTypeCompute(op, t);
      Result<DType> result = BinaryResultType(op, t, t);
      if (!compute) {
        ASSERT_FALSE(result.ok());
        EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
        EXPECT_THAT(result.status().message(), HasSubstr(std::string(BinaryOpName(op))));
        NDArray out = Empty(t, {n, n});
        EXPECT_EQ(ApplyBinary(op, a.view(), b.view(), out.view()).code(),
                  StatusCode::kInvalidArgument);
        continue;
      }
      ASSERT_TRUE(result.ok()) << result.status().ToString();
      const DType want_result =
          IsComparisonOp(op) || IsLogicalOp(op) ? DType(DTypeId::kBool) : *compute;
      ASSERT_EQ(*result, want_result);
      ASSERT_EQ(*BinaryComputeType(op, t, t), *compute);
      NDArray out = Empty(*result, {n, n});
      ASSERT_TRUE(ApplyBinary(op, a.view(), b.view(), out.view()).ok());
      const std::vector<V> xs = ToValues(a.view());
      const std::vector<V> got = ToValues(out.view());
      for (Index i = 0; i < n; ++i) {
        for (Index j = 0; j < n; ++j) {
          const V x = xs[i], y = xs[j];
          if (!ReferenceCovers(op, *compute, x, y)) continue;
          const V want = VisitDType(*compute, [&](auto tag) {
            using T = typename decltype(tag)::type;
            return RefBinary<T>(op, FromV<T>(x), FromV<T>(y));
          });
          EXPECT_TRUE(Close(*result, got[i * n + j], want))
              << "x = (" << double(x.real()) << ", " << double(x.imag()) << "), y = ("
              << double(y.real()) << ", " << double(y.imag()) << ")";
        }
      }
    }
  }
}

// Mixed input dtypes are converted to the compute dtype (in blocks) first.
TEST(BinaryTest, MixedDTypes) {
  struct Pair {
    DTypeId a, b;
  };
  const Pair pairs[] = {
      {DTypeId::kInt8, DTypeId::kFloat32},      {DTypeId::kUInt8, DTypeId::kInt8},
      {DTypeId::kBool, DTypeId::kInt16},        {DTypeId::kInt32, DTypeId::kFloat64},
      {DTypeId::kUInt16, DTypeId::kInt16},      {DTypeId::kFloat32, DTypeId::kComplex128},
      {DTypeId::kUInt32, DTypeId::kFloat32},    {DTypeId::kInt64, DTypeId::kUInt8},
      {DTypeId::kFloat64, DTypeId::kComplex64}, {DTypeId::kUInt32, DTypeId::kInt32},
  };
  const BinaryOp ops[] = {BinaryOp::kAdd,    BinaryOp::kMultiply, BinaryOp::kLess,
                          BinaryOp::kDivide, BinaryOp::kEqual,    BinaryOp::kLogicalAnd};
  for (const Pair& p : pairs) {
    for (BinaryOp op : ops) {
      const DType ta = p.a, tb = p.b;
      SCOPED_TRACE(std::string(BinaryOpName(op)) + " " + std::string(ta.name()) + " " +
                   std::string(tb.name()));
      Result<DType> result = BinaryResultType(op, ta, tb);
      if (!result.ok()) {
        EXPECT_EQ(op, BinaryOp::kLess);  // complex ordering
        continue;
      }
      const DType compute = *BinaryComputeType(op, ta, tb);
      const std::vector<V> sa = Samples(ta), sb = Samples(tb);
      const Index na = sa.size(), nb = sb.size();
      NDArray a = FromValues(ta, {na, 1}, sa);
      NDArray b = FromValues(tb, {1, nb}, sb);
      NDArray out = Empty(*result, {na, nb});
      ASSERT_TRUE(ApplyBinary(op, a.view(), b.view(), out.view()).ok());
      const std::vector<V> got = ToValues(out.view());
      const std::vector<V> xa = ToValues(a.view()), xb = ToValues(b.view());
      for (Index i = 0; i < na; ++i) {
        for (Index j = 0; j < nb; ++j) {
          if (!ReferenceCovers(op, compute, xa[i], xb[j])) continue;
          const V want = VisitDType(compute, [&](auto tag) {
            using T = typename decltype(tag)::type;
            return RefBinary<T>(op, FromV<T>(xa[i]), FromV<T>(xb[j]));
          });
          EXPECT_TRUE(Close(*result, got[i * nb + j], want)) << i << ", " << j;
        }
      }
    }
  }
}

// numpy 1.24's np.floor_divide / np.remainder on float64 and float32, including
// zeros, infinities and NaN (a as rows, b as columns).
TEST(BinaryTest, FloatFloorDivideAndRemainderMatchNumpy) {
  const std::vector<double> a = {-7.5,     -1.0,      -0.0, 0.0,   1.0, 7.5,
                                 INFINITY, -INFINITY, NAN,  1e300, 3.7};
  const std::vector<double> b = {-2.0, -0.0, 0.0, 0.1, 2.0, INFINITY, -INFINITY, NAN, -0.5};
  const double kI = INFINITY, kN = NAN;
  // clang-format off
  const std::vector<double> floor_divide = {3.0, kI, -kI, -75.0, -4.0, -1.0, 0.0, kN, 15.0, 0.0, kI, -kI, -10.0, -1.0, -1.0, 0.0, kN, 2.0, 0.0, kN, kN, -0.0, -0.0, -0.0, 0.0, kN, 0.0, -0.0, kN, kN, 0.0, 0.0, 0.0, -0.0, kN, -0.0, -1.0, -kI, kI, 9.0, 0.0, 0.0, -1.0, kN, -2.0, -4.0, -kI, kI, 74.0, 3.0, 0.0, -1.0, kN, -15.0, kN, -kI, kI, kN, kN, kN, kN, kN, kN, kN, kI, -kI, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, -5e+299, -kI, kI, 1e+301, 5e+299, 0.0, -1.0, kN, -2e+300, -2.0, -kI, kI, 36.0, 1.0, 0.0, -1.0, kN, -8.0};
  const std::vector<double> remainder = {-1.5, kN, kN, 4.163336342344337e-16, 0.5, kI, -7.5, kN, -0.0, -1.0, kN, kN, 5.551115123125783e-17, 1.0, kI, -1.0, kN, -0.0, -0.0, kN, kN, 0.0, 0.0, 0.0, -0.0, kN, -0.0, -0.0, kN, kN, 0.0, 0.0, 0.0, -0.0, kN, -0.0, -1.0, kN, kN, 0.09999999999999995, 1.0, 1.0, -kI, kN, -0.0, -0.5, kN, kN, 0.09999999999999959, 1.5, 7.5, -kI, kN, -0.0, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, -0.0, kN, kN, 0.00011215964963492975, 0.0, 1e+300, -kI, kN, -0.0, -0.2999999999999998, kN, kN, 0.09999999999999998, 1.7000000000000002, 3.7, -kI, kN, -0.2999999999999998};
  const std::vector<double> floor_divide32 = {3.0, kI, -kI, -75.0, -4.0, -1.0, 0.0, kN, 15.0, 0.0, kI, -kI, -10.0, -1.0, -1.0, 0.0, kN, 2.0, 0.0, kN, kN, -0.0, -0.0, -0.0, 0.0, kN, 0.0, -0.0, kN, kN, 0.0, 0.0, 0.0, -0.0, kN, -0.0, -1.0, -kI, kI, 9.0, 0.0, 0.0, -1.0, kN, -2.0, -4.0, -kI, kI, 74.0, 3.0, 0.0, -1.0, kN, -15.0, kN, -kI, kI, kN, kN, kN, kN, kN, kN, kN, kI, -kI, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, -kI, kI, kN, kN, kN, kN, kN, kN, -2.0, -kI, kI, 36.0, 1.0, 0.0, -1.0, kN, -8.0};
  const std::vector<double> remainder32 = {-1.5, kN, kN, 1.1175870895385742e-07, 0.5, kI, -7.5, kN, -0.0, -1.0, kN, kN, 1.4901161193847656e-08, 1.0, kI, -1.0, kN, -0.0, -0.0, kN, kN, 0.0, 0.0, 0.0, -0.0, kN, -0.0, -0.0, kN, kN, 0.0, 0.0, 0.0, -0.0, kN, -0.0, -1.0, kN, kN, 0.09999998658895493, 1.0, 1.0, -kI, kN, -0.0, -0.5, kN, kN, 0.09999988973140717, 1.5, 7.5, -kI, kN, -0.0, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, kN, -0.2999999523162842, kN, kN, 0.09999999403953552, 1.7000000476837158, 3.700000047683716, -kI, kN, -0.2999999523162842};
  // clang-format on

  auto check = [&](DType t, BinaryOp op, const std::vector<double>& want) {
    SCOPED_TRACE(std::string(BinaryOpName(op)) + " " + std::string(t.name()));
    std::vector<V> va(a.begin(), a.end()), vb(b.begin(), b.end());
    NDArray x = FromValues(t, {static_cast<Index>(a.size()), 1}, va);
    NDArray y = FromValues(t, {1, static_cast<Index>(b.size())}, vb);
    NDArray out = Empty(t, {static_cast<Index>(a.size()), static_cast<Index>(b.size())});
    ASSERT_TRUE(ApplyBinary(op, x.view(), y.view(), out.view()).ok());
    const std::vector<V> got = ToValues(out.view());
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(Close(t, got[i], V(want[i])))
          << "a = " << a[i / b.size()] << ", b = " << b[i % b.size()];
      // Signed zeros as numpy gives them.
      if (want[i] == 0) {
        EXPECT_EQ(std::signbit(got[i].real()), std::signbit(want[i])) << i;
      }
    }
  };
  check(DTypeId::kFloat64, BinaryOp::kFloorDivide, floor_divide);
  check(DTypeId::kFloat64, BinaryOp::kRemainder, remainder);
  check(DTypeId::kFloat32, BinaryOp::kFloorDivide, floor_divide32);
  check(DTypeId::kFloat32, BinaryOp::kRemainder, remainder32);
}

// numpy 1.24's results for integer floor_divide / remainder (by zero gives 0).
TEST(BinaryTest, IntegerFloorDivideAndRemainderMatchNumpy) {
  {
    NDArray a = Make<int8_t>({7, 1}, {-128, -7, -1, 0, 1, 7, 127});
    NDArray b = Make<int8_t>({1, 5}, {-3, -1, 0, 2, 3});
    NDArray out = Empty(DTypeId::kInt8, {7, 5});
    ASSERT_TRUE(ApplyBinary(BinaryOp::kFloorDivide, a.view(), b.view(), out.view()).ok());
    EXPECT_EQ(Values<int8_t>(out.view()),
              (std::vector<int8_t>{42, -128, 0,  -64, -43, 2, 7,   0,    -4, -3, 0, 1,
                                   0,  -1,   -1, 0,   0,   0, 0,   0,    -1, -1, 0, 0,
                                   0,  -3,   -7, 0,   3,   2, -43, -127, 0,  63, 42}));
    ASSERT_TRUE(ApplyBinary(BinaryOp::kRemainder, a.view(), b.view(), out.view()).ok());
    EXPECT_EQ(Values<int8_t>(out.view()),
              (std::vector<int8_t>{-2, 0, 0,  0, 1, -1, 0, 0,  1, 2, -1, 0, 0,  1, 2, 0, 0, 0,
                                   0,  0, -2, 0, 0, 1,  1, -2, 0, 0, 1,  1, -2, 0, 0, 1, 1}));
  }
  {
    const int64_t kMin = std::numeric_limits<int64_t>::min();
    const int64_t kMax = std::numeric_limits<int64_t>::max();
    NDArray a = Make<int64_t>({7, 1}, {kMin, -7, -1, 0, 1, 7, kMax});
    NDArray b = Make<int64_t>({1, 5}, {-3, -1, 0, 2, 3});
    NDArray out = Empty(DTypeId::kInt64, {7, 5});
    ASSERT_TRUE(ApplyBinary(BinaryOp::kFloorDivide, a.view(), b.view(), out.view()).ok());
    EXPECT_EQ(Values<int64_t>(out.view()), (std::vector<int64_t>{3074457345618258602,
                                                                 kMin,
                                                                 0,
                                                                 -4611686018427387904,
                                                                 -3074457345618258603,
                                                                 2,
                                                                 7,
                                                                 0,
                                                                 -4,
                                                                 -3,
                                                                 0,
                                                                 1,
                                                                 0,
                                                                 -1,
                                                                 -1,
                                                                 0,
                                                                 0,
                                                                 0,
                                                                 0,
                                                                 0,
                                                                 -1,
                                                                 -1,
                                                                 0,
                                                                 0,
                                                                 0,
                                                                 -3,
                                                                 -7,
                                                                 0,
                                                                 3,
                                                                 2,
                                                                 -3074457345618258603,
                                                                 -9223372036854775807,
                                                                 0,
                                                                 4611686018427387903,
                                                                 3074457345618258602}));
  }
}

TEST(BinaryTest, PowMatchesNumpy) {
  NDArray a = Make<int8_t>({7}, {3, -3, 2, -2, 7, 0, 1});
  NDArray b = Make<int8_t>({7}, {5, 5, 7, 7, 3, 0, 100});
  NDArray out = Empty(DTypeId::kInt8, {7});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kPow, a.view(), b.view(), out.view()).ok());
  EXPECT_EQ(Values<int8_t>(out.view()), (std::vector<int8_t>{-13, 13, -128, -128, 87, 1, 1}));

  NDArray c = Make<int64_t>({3}, {3, -3, 10});
  NDArray d = Make<int64_t>({3}, {40, 41, 19});
  NDArray out64 = Empty(DTypeId::kInt64, {3});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kPow, c.view(), d.view(), out64.view()).ok());
  EXPECT_EQ(Values<int64_t>(out64.view()),
            (std::vector<int64_t>{-6289078614652622815, 420491770248316829, -8446744073709551616}));

  // Negative exponents (numpy raises): 0 except for bases 1 and -1.
  NDArray e = Make<int32_t>({5}, {2, 1, -1, -1, 0});
  NDArray f = Make<int32_t>({5}, {-1, -5, -3, -2, -1});
  NDArray out32 = Empty(DTypeId::kInt32, {5});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kPow, e.view(), f.view(), out32.view()).ok());
  EXPECT_EQ(Values<int32_t>(out32.view()), (std::vector<int32_t>{0, 1, -1, 1, 0}));

  using C = std::complex<double>;
  NDArray z = Make<C>({7}, {{1, 2}, {1, 2}, {1, 2}, {0, 0}, {0, 0}, {-2, 0.5}, {0.5, -1}});
  NDArray w = Make<C>({7}, {{2, 0}, {3, 0}, {-2, 0}, {2, 0}, {0, 0}, {0.5, 0.5}, {7, 0}});
  NDArray outc = Empty(DTypeId::kComplex128, {7});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kPow, z.view(), w.view(), outc.view()).ok());
  ExpectAllClose(DTypeId::kComplex128, ToValues(outc.view()),
                 {{-3.0, 4.0},
                  {-11.0, -2.0},
                  {-0.12, -0.16},
                  {0.0, 0.0},
                  {1.0, 0.0},
                  {-0.07994461787607868, 0.32776038395725854},
                  {0.2265625, -2.171875}});
}

TEST(BinaryTest, WraparoundDivisionByZeroAndNaN) {
  NDArray a = Make<int8_t>({3}, {127, -128, 100});
  NDArray b = Make<int8_t>({3}, {1, -1, 100});
  NDArray out = Empty(DTypeId::kInt8, {3});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kAdd, a.view(), b.view(), out.view()).ok());
  EXPECT_EQ(Values<int8_t>(out.view()), (std::vector<int8_t>{-128, 127, -56}));

  NDArray u = Make<uint16_t>({1}, {65535});
  NDArray u_out = Empty(DTypeId::kUInt16, {1});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kMultiply, u.view(), u.view(), u_out.view()).ok());
  EXPECT_EQ(Values<uint16_t>(u_out.view())[0], 1);

  // True division of integers is float64 with IEEE results for zero divisors.
  NDArray x = Make<int32_t>({4}, {1, -1, 0, 7});
  NDArray y = Make<int32_t>({4}, {0, 0, 0, 2});
  NDArray q = Empty(DTypeId::kFloat64, {4});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kDivide, x.view(), y.view(), q.view()).ok());
  std::vector<double> qv = Values<double>(q.view());
  EXPECT_EQ(qv[0], INFINITY);
  EXPECT_EQ(qv[1], -INFINITY);
  EXPECT_TRUE(std::isnan(qv[2]));
  EXPECT_EQ(qv[3], 3.5);

  // np.minimum / np.maximum propagate NaN.
  NDArray m = Make<double>({5}, {1.0, NAN, 3.0, NAN, -0.0});
  NDArray n = Make<double>({5}, {NAN, 2.0, 1.0, NAN, 5.0});
  NDArray mo = Empty(DTypeId::kFloat64, {5});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kMinimum, m.view(), n.view(), mo.view()).ok());
  std::vector<double> mv = Values<double>(mo.view());
  EXPECT_TRUE(std::isnan(mv[0]) && std::isnan(mv[1]) && std::isnan(mv[3]));
  EXPECT_EQ(mv[2], 1.0);
  EXPECT_EQ(mv[4], -0.0);
  ASSERT_TRUE(ApplyBinary(BinaryOp::kMaximum, m.view(), n.view(), mo.view()).ok());
  mv = Values<double>(mo.view());
  EXPECT_TRUE(std::isnan(mv[0]) && std::isnan(mv[1]) && std::isnan(mv[3]));
  EXPECT_EQ(mv[2], 3.0);
  EXPECT_EQ(mv[4], 5.0);

  NDArray s = Make<double>({7}, {0.0, -0.0, 0.0, -0.0, 1.0, -1.0, INFINITY});
  NDArray t = Make<double>({7}, {0.0, 0.0, -0.0, -0.0, -INFINITY, -INFINITY, INFINITY});
  NDArray at = Empty(DTypeId::kFloat64, {7});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kArctan2, s.view(), t.view(), at.view()).ok());
  const std::vector<double> want_at = {0.0,
                                       -0.0,
                                       3.141592653589793,
                                       -3.141592653589793,
                                       3.141592653589793,
                                       -3.141592653589793,
                                       0.7853981633974483};
  std::vector<double> got_at = Values<double>(at.view());
  for (size_t i = 0; i < want_at.size(); ++i) {
    EXPECT_EQ(got_at[i], want_at[i]);
    EXPECT_EQ(std::signbit(got_at[i]), std::signbit(want_at[i]));
  }
}

TEST(BinaryTest, ShiftsMatchNumpy) {
  NDArray a = Make<int8_t>({6}, {1, -1, 5, 64, 3, 3});
  NDArray b = Make<int8_t>({6}, {3, 7, 8, 1, -1, 100});
  NDArray out = Empty(DTypeId::kInt8, {6});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kBitwiseLeftShift, a.view(), b.view(), out.view()).ok());
  EXPECT_EQ(Values<int8_t>(out.view()), (std::vector<int8_t>{8, -128, 0, -128, 0, 0}));
  NDArray c = Make<int8_t>({6}, {-128, -1, 100, -5, 3, -3});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kBitwiseRightShift, c.view(), b.view(), out.view()).ok());
  EXPECT_EQ(Values<int8_t>(out.view()), (std::vector<int8_t>{-16, -1, 0, -3, 0, -1}));
}

// ---------------------------------------------------------------------------
// Broadcasting and layouts.

TEST(BroadcastTest, Shapes) {
  auto broadcast = [](std::vector<Shape> shapes) { return BroadcastShapes(shapes); };
  EXPECT_EQ(*broadcast({{3, 4}, {4}}), Shape({3, 4}));
  EXPECT_EQ(*broadcast({{3, 1}, {1, 4}}), Shape({3, 4}));
  EXPECT_EQ(*broadcast({{2, 1, 4}, {3, 1}, {}}), Shape({2, 3, 4}));
  EXPECT_EQ(*broadcast({{}, {}}), Shape({}));
  EXPECT_EQ(*broadcast({{0, 1}, {1, 5}}), Shape({0, 5}));
  EXPECT_EQ(*broadcast({{5}}), Shape({5}));
  Result<Shape> bad = broadcast({{3, 4}, {5}});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "shapes (3, 4) and (5,) cannot be broadcast together");
  bad = broadcast({{1, 4}, {3, 1}, {2, 1, 5}});
  EXPECT_THAT(bad.status().message(), HasSubstr("(1, 4) and (2, 1, 5) cannot be broadcast"));
}

TEST(BroadcastTest, ToGivesZeroStrides) {
  NDArray a = Make<int32_t>({3, 1}, {1, 2, 3});
  ConstArrayView v = BroadcastTo(a.view(), {2, 3, 4});
  EXPECT_EQ(v.shape(), Shape({2, 3, 4}));
  EXPECT_EQ(v.byte_strides(), Shape({0, 4, 0}));
  EXPECT_EQ(Values<int32_t>(v)[5], 2);
}

TEST(BroadcastTest, ScalarRowColumnAndRankExpansion) {
  NDArray m = Make<double>({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  NDArray scalar = *ScalarArray(Pool(), DTypeId::kFloat64, 100);
  NDArray row = Make<double>({4}, {10, 20, 30, 40});
  NDArray column = Make<double>({3, 1}, {1000, 2000, 3000});
  NDArray out = Empty(DTypeId::kFloat64, {3, 4});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kAdd, m.view(), scalar.view(), out.view()).ok());
  EXPECT_EQ(Values<double>(out.view())[7], 107);
  ASSERT_TRUE(ApplyBinary(BinaryOp::kSubtract, row.view(), m.view(), out.view()).ok());
  EXPECT_EQ(Values<double>(out.view()),
            (std::vector<double>{10, 19, 28, 37, 6, 15, 24, 33, 2, 11, 20, 29}));
  ASSERT_TRUE(ApplyBinary(BinaryOp::kAdd, BroadcastTo(column.view(), {3, 4}),
                          BroadcastTo(row.view(), {3, 4}), out.view())
                  .ok());
  EXPECT_EQ(Values<double>(out.view()), (std::vector<double>{1010, 1020, 1030, 1040, 2010, 2020,
                                                             2030, 2040, 3010, 3020, 3030, 3040}));
  NDArray cube = Empty(DTypeId::kFloat64, {2, 3, 4});
  NDArray two = Make<double>({2, 1, 1}, {0, 0.5});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kAdd, two.view(), m.view(), cube.view()).ok());
  std::vector<double> c = Values<double>(cube.view());
  for (Index i = 0; i < 2; ++i)
    for (Index j = 0; j < 12; ++j) EXPECT_EQ(c[i * 12 + j], j + 0.5 * i);
  // Unary over a broadcast scalar.
  NDArray neg = Empty(DTypeId::kFloat64, {3, 4});
  ASSERT_TRUE(ApplyUnary(UnaryOp::kNegative, BroadcastTo(scalar.view(), {3, 4}), neg.view()).ok());
  EXPECT_EQ(Values<double>(neg.view()), std::vector<double>(12, -100));
}

// A transposed input, a reversed input and a transposed output: the kernel
// must visit element (i, j) of each, whatever the strides.
TEST(LayoutTest, TransposedReversedAndSteppedViews) {
  for (DTypeId a_type : {DTypeId::kFloat64, DTypeId::kInt8}) {
    SCOPED_TRACE(DType(a_type).name());
    const Index rows = 6, cols = 9;
    std::vector<V> av, bv;
    for (Index i = 0; i < cols * rows; ++i) av.push_back(V(i % 50));
    for (Index i = 0; i < rows * cols; ++i) bv.push_back(V(1000 + i));
    NDArray a = FromValues(a_type, {cols, rows}, av);             // seen transposed
    NDArray b = FromValues(DTypeId::kFloat64, {rows, cols}, bv);  // seen reversed on axis 0
    NDArray out_buffer = Empty(DTypeId::kFloat64, {cols, rows});  // written transposed
    const int perm[] = {1, 0};
    ConstArrayView at = a.view().Transpose(perm);
    const Index steps[] = {-1, 1};
    ConstArrayView br = b.view().Stepped(Box::FromShape({rows, cols}), steps);
    ArrayView out = out_buffer.view().Transpose(perm);
    ASSERT_TRUE(ApplyBinary(BinaryOp::kAdd, at, br, out).ok());
    const std::vector<V> o = ToValues(out_buffer.view());
    for (Index i = 0; i < rows; ++i) {
      for (Index j = 0; j < cols; ++j) {
        const long double want = (j * rows + i) % 50 + 1000 + (rows - 1 - i) * cols + j;
        EXPECT_EQ(o[j * rows + i].real(), want) << i << ", " << j;
      }
    }
    // Every other column, backwards, into a stepped output.
    NDArray wide = Empty(DTypeId::kFloat64, {rows, 2 * cols});
    const Index out_steps[] = {1, 2};
    ArrayView stepped_out = wide.view().Stepped(Box::FromShape({rows, 2 * cols}), out_steps);
    const Index in_steps[] = {1, -1};
    ConstArrayView b_rev = b.view().Stepped(Box::FromShape({rows, cols}), in_steps);
    ASSERT_TRUE(ApplyUnary(UnaryOp::kSquare, b_rev, stepped_out).ok());
    const std::vector<double> w = Values<double>(wide.view());
    for (Index i = 0; i < rows; ++i) {
      for (Index j = 0; j < cols; ++j) {
        const double x = 1000 + i * cols + (cols - 1 - j);
        EXPECT_EQ(w[i * 2 * cols + 2 * j], x * x);
      }
    }
  }
}

// Runs longer than the conversion block, with converted inputs that are
// strided, broadcast (stride 0) and contiguous.
TEST(LayoutTest, LongRunsWithConversion) {
  const Index n = 5000;
  std::vector<int16_t> xs(n);
  for (Index i = 0; i < n; ++i) xs[i] = static_cast<int16_t>(i * 7 - 3000);
  NDArray x = Make<int16_t>({n}, xs);
  NDArray scalar = *ScalarArray(Pool(), DTypeId::kFloat32, 0.5);
  NDArray out = Empty(DTypeId::kFloat32, {n});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kMultiply, x.view(), scalar.view(), out.view()).ok());
  std::vector<float> o = Values<float>(out.view());
  for (Index i = 0; i < n; ++i) ASSERT_EQ(o[i], xs[i] * 0.5f) << i;

  // Strided int16 (every other element, reversed) against a float32 column.
  const Index half = n / 2;
  const Index steps[] = {-2};
  ConstArrayView strided = x.view().Stepped(Box::FromShape({n}), steps);
  ASSERT_EQ(strided.shape(), Shape({half}));
  NDArray col = Make<float>({2, 1}, {1.0f, -1.0f});
  NDArray out2 = Empty(DTypeId::kFloat32, {2, half});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kMultiply, col.view(), strided, out2.view()).ok());
  std::vector<float> o2 = Values<float>(out2.view());
  for (Index i = 0; i < half; ++i) {
    ASSERT_EQ(o2[i], float(xs[n - 1 - 2 * i])) << i;
    ASSERT_EQ(o2[half + i], -float(xs[n - 1 - 2 * i])) << i;
  }
}

// A transposed input larger than the kernel's cache tiles, with edge tiles,
// an outer axis and a dtype conversion on the transposed input.
TEST(LayoutTest, TransposedInputAcrossTiles) {
  const Index planes = 3, rows = 150, cols = 301;
  std::vector<int32_t> tv(planes * cols * rows);
  for (size_t i = 0; i < tv.size(); ++i) tv[i] = static_cast<int32_t>(i * 37 % 1009);
  std::vector<double> cv(planes * rows * cols);
  for (size_t i = 0; i < cv.size(); ++i) cv[i] = 0.5 * i;
  NDArray t = Make<int32_t>({planes, cols, rows}, tv);
  NDArray c = Make<double>({planes, rows, cols}, cv);
  NDArray out = Empty(DTypeId::kFloat64, {planes, rows, cols});
  const int perm[] = {0, 2, 1};
  ASSERT_TRUE(
      ApplyBinary(BinaryOp::kSubtract, c.view(), t.view().Transpose(perm), out.view()).ok());
  const std::vector<double> o = Values<double>(out.view());
  for (Index p = 0; p < planes; ++p) {
    for (Index i = 0; i < rows; ++i) {
      for (Index j = 0; j < cols; ++j) {
        const Index at = (p * rows + i) * cols + j;
        ASSERT_EQ(o[at], cv[at] - tv[(p * cols + j) * rows + i]) << p << ", " << i << ", " << j;
      }
    }
  }
}

TEST(LayoutTest, InPlaceAndEmpty) {
  NDArray a = Make<double>({4}, {1, 2, 3, 4});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kMultiply, a.view(), a.view(), a.view()).ok());
  EXPECT_EQ(Values<double>(a.view()), (std::vector<double>{1, 4, 9, 16}));
  NDArray e = Empty(DTypeId::kFloat64, {0, 3});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kAdd, e.view(), e.view(), e.view()).ok());
  ASSERT_TRUE(ApplyUnary(UnaryOp::kExp, e.view(), e.view()).ok());
}

TEST(LayoutTest, Rank0) {
  NDArray a = *ScalarArray(Pool(), DTypeId::kInt32, 7);
  NDArray b = *ScalarArray(Pool(), DTypeId::kInt32, -2);
  NDArray out = Empty(DTypeId::kInt32, {});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kFloorDivide, a.view(), b.view(), out.view()).ok());
  EXPECT_EQ(Values<int32_t>(out.view())[0], -4);
}

TEST(LayoutDeathTest, WrongOutputDTypeIsAProgrammerError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  NDArray a = Make<int32_t>({2}, {1, 2});
  NDArray out = Empty(DTypeId::kInt32, {2});
  EXPECT_DEATH((void)ApplyBinary(BinaryOp::kDivide, a.view(), a.view(), out.view()),
               "gives float64, not int32");
}

// ---------------------------------------------------------------------------
// where, clip, scalars.

TEST(WhereTest, SelectsWithBroadcastAndConversion) {
  NDArray cond = Make<bool>({2, 1}, {true, false});
  NDArray a = Make<double>({3}, {1, 2, 3});
  NDArray b = *ScalarArray(Pool(), DTypeId::kFloat64, -1);
  NDArray out = Empty(DTypeId::kFloat64, {2, 3});
  ASSERT_TRUE(ApplyWhere(cond.view(), a.view(), b.view(), out.view()).ok());
  EXPECT_EQ(Values<double>(out.view()), (std::vector<double>{1, 2, 3, -1, -1, -1}));

  // Every element size, with a NaN payload kept bit for bit.
  for (DType t : AllDTypes()) {
    SCOPED_TRACE(t.name());
    std::vector<V> samples = Samples(t);
    const Index n = samples.size();
    NDArray x = FromValues(t, {n}, samples);
    std::vector<V> reversed(samples.rbegin(), samples.rend());
    NDArray y = FromValues(t, {n}, reversed);
    std::vector<bool> c(n);
    for (Index i = 0; i < n; ++i) c[i] = i % 3 == 0;
    NDArray cn = Make<bool>({n}, c);
    NDArray o = Empty(t, {n});
    ASSERT_TRUE(ApplyWhere(cn.view(), x.view(), y.view(), o.view()).ok());
    for (Index i = 0; i < n; ++i) {
      const std::byte* want = (c[i] ? x.data() : y.data()) + i * t.size();
      EXPECT_EQ(std::memcmp(o.data() + i * t.size(), want, t.size()), 0) << i;
    }
  }

  // A non-bool condition is "!= 0"; inputs of another dtype are cast to out's.
  NDArray ci = Make<int32_t>({3}, {0, 5, -1});
  NDArray ai = Make<int8_t>({3}, {1, 2, 3});
  NDArray bf = Make<float>({3}, {0.5f, 0.5f, 0.5f});
  NDArray of = Empty(DTypeId::kFloat32, {3});
  ASSERT_TRUE(ApplyWhere(ci.view(), ai.view(), bf.view(), of.view()).ok());
  EXPECT_EQ(Values<float>(of.view()), (std::vector<float>{0.5f, 2, 3}));
}

TEST(ClipTest, MatchesNumpy) {
  NDArray x = Make<double>({4}, {-5.0, 0.5, NAN, 7.0});
  NDArray lo = Make<double>({1}, {0.0});
  NDArray hi = Make<double>({1}, {1.0});
  NDArray out = Empty(DTypeId::kFloat64, {4});
  ASSERT_TRUE(ApplyClip(x.view(), lo.view(), hi.view(), out.view()).ok());
  std::vector<double> o = Values<double>(out.view());
  EXPECT_EQ(o[0], 0.0);
  EXPECT_EQ(o[1], 0.5);
  EXPECT_TRUE(std::isnan(o[2]));
  EXPECT_EQ(o[3], 1.0);

  // lo > hi gives hi, as np.clip.
  NDArray i = Make<int32_t>({3}, {5, -10, 100});
  NDArray ilo = *ScalarArray(Pool(), DTypeId::kInt32, 7);
  NDArray ihi = *ScalarArray(Pool(), DTypeId::kInt32, 3);
  NDArray iout = Empty(DTypeId::kInt32, {3});
  ASSERT_TRUE(ApplyClip(i.view(), ilo.view(), ihi.view(), iout.view()).ok());
  EXPECT_EQ(Values<int32_t>(iout.view()), (std::vector<int32_t>{3, 3, 3}));

  // Per-row bounds, broadcast; uint8 input clipped in int16.
  NDArray u = Make<uint8_t>({2, 3}, {0, 100, 255, 0, 100, 255});
  NDArray rlo = Make<int16_t>({2, 1}, {-5, 50});
  NDArray rhi = Make<int16_t>({2, 1}, {200, 99});
  NDArray r = Empty(DTypeId::kInt16, {2, 3});
  ASSERT_TRUE(ApplyClip(u.view(), rlo.view(), rhi.view(), r.view()).ok());
  EXPECT_EQ(Values<int16_t>(r.view()), (std::vector<int16_t>{0, 100, 200, 50, 99, 99}));

  NDArray z = Empty(DTypeId::kComplex64, {1});
  Status s = ApplyClip(z.view(), z.view(), z.view(), z.view());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "clip does not support complex64");
}

TEST(ScalarArrayTest, ConvertsTheValue) {
  NDArray a = *ScalarArray(Pool(), DTypeId::kUInt8, 3.9);
  EXPECT_EQ(a.shape(), Shape({}));
  EXPECT_EQ(a.data_as<uint8_t>()[0], 3);
  NDArray b = *ScalarArray(Pool(), DTypeId::kComplex64, -1.5);
  EXPECT_EQ(b.data_as<std::complex<float>>()[0], std::complex<float>(-1.5f, 0));
  NDArray c = *ScalarArray(Pool(), DTypeId::kBool, 0.25);
  EXPECT_TRUE(c.data_as<bool>()[0]);
  NDArray d = *ScalarArray(Pool(), DTypeId::kInt16, NAN);
  EXPECT_EQ(d.data_as<int16_t>()[0], 0);
}

// ---------------------------------------------------------------------------
// Casts.

// numpy astype(casting="unsafe") semantics, written out per target kind;
// float to int out of range (numpy: platform-dependent) is 0 here.
V ExpectedCast(V v, DType from, DType to) {
  if (to.is_bool()) return V(v.real() != 0 || v.imag() != 0);
  return VisitDType(to, [&](auto tag) -> V {
    using T = typename decltype(tag)::type;
    if constexpr (kIsComplex<T>) {
      using R = typename T::value_type;
      return V(static_cast<R>(v.real()), static_cast<R>(v.imag()));
    } else if constexpr (std::is_floating_point_v<T>) {
      return V(static_cast<T>(v.real()));
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const long double x = v.real();
      if (from.is_float() || from.is_complex()) {
        const long double t = std::trunc(x);
        if (std::isnan(x) || t < std::numeric_limits<T>::min() ||
            t > std::numeric_limits<T>::max()) {
          return V(0);
        }
        return V(t);
      }
      return ToV(Wrap<T>(UInt128(static_cast<Int128>(x))));
    } else {
      return V(0);
    }
  });
}

std::vector<V> CastSamples(DType t) {
  std::vector<V> v = Samples(t);
  if (t.is_float()) {
    for (long double x : {1.9L, -1.9L, 127.5L, -128.9L, 255.5L, -129.5L, 300.7L, 65535.9L,
                          4294967296.5L, 1e19L, -1e19L, 9.3e18L, 0.999L}) {
      v.push_back(x);
    }
  }
  if (t.is_complex()) {
    v.push_back(V(-300.5, 7));
    v.push_back(V(0, 1));
  }
  return v;
}

TEST(CastTest, EveryPair) {
  for (DType from : AllDTypes()) {
    for (DType to : AllDTypes()) {
      SCOPED_TRACE(std::string(from.name()) + " -> " + std::string(to.name()));
      const std::vector<V> samples = CastSamples(from);
      const Index n = samples.size();
      NDArray in = FromValues(from, {n}, samples);
      NDArray out = Empty(to, {n});
      ASSERT_TRUE(Cast(in.view(), out.view()).ok());
      const std::vector<V> xs = ToValues(in.view());
      const std::vector<V> got = ToValues(out.view());
      for (Index i = 0; i < n; ++i) {
        const V want = ExpectedCast(xs[i], from, to);
        // Exact: a cast rounds once.
        const bool same =
            (std::isnan(want.real()) ? std::isnan(got[i].real()) : got[i].real() == want.real()) &&
            (std::isnan(want.imag()) ? std::isnan(got[i].imag()) : got[i].imag() == want.imag());
        EXPECT_TRUE(same) << "x = (" << double(xs[i].real()) << ", " << double(xs[i].imag())
                          << ") got " << double(got[i].real()) << " want " << double(want.real());
      }
    }
  }
}

TEST(CastTest, MatchesNumpy) {
  NDArray f = Make<double>({6}, {1.9, -1.9, 127.5, -128.9, -0.0, 0.999});
  NDArray i8 = Empty(DTypeId::kInt8, {6});
  ASSERT_TRUE(Cast(f.view(), i8.view()).ok());
  EXPECT_EQ(Values<int8_t>(i8.view()), (std::vector<int8_t>{1, -1, 127, -128, 0, 0}));

  NDArray big = Make<int64_t>({5}, {300, -129, 255, 128, -1});
  ASSERT_TRUE(Cast(big.view(), i8.view().Slice(Box({0}, {5}))).ok());
  EXPECT_EQ(Values<int8_t>(i8.view().Slice(Box({0}, {5}))),
            (std::vector<int8_t>{44, 127, -1, -128, -1}));

  NDArray wide = Make<int64_t>({3}, {70000, -1, 65536});
  NDArray u16 = Empty(DTypeId::kUInt16, {3});
  ASSERT_TRUE(Cast(wide.view(), u16.view()).ok());
  EXPECT_EQ(Values<uint16_t>(u16.view()), (std::vector<uint16_t>{4464, 65535, 0}));

  NDArray u64 = Make<uint64_t>({3}, {18446744073709551615ull, 9007199254740993ull, 16777217});
  NDArray f32 = Empty(DTypeId::kFloat32, {3});
  ASSERT_TRUE(Cast(u64.view(), f32.view()).ok());
  EXPECT_EQ(Values<float>(f32.view()),
            (std::vector<float>{1.8446744073709552e+19f, 9007199254740992.0f, 16777216.0f}));

  NDArray d = Make<double>({4}, {1e300, -1e300, 0.1, 1e-50});
  NDArray df = Empty(DTypeId::kFloat32, {4});
  ASSERT_TRUE(Cast(d.view(), df.view()).ok());
  EXPECT_EQ(Values<float>(df.view()), (std::vector<float>{INFINITY, -INFINITY, 0.1f, 0.0f}));

  NDArray fb = Make<double>({5}, {NAN, -0.0, 0.0, 1e-300, INFINITY});
  NDArray b = Empty(DTypeId::kBool, {5});
  ASSERT_TRUE(Cast(fb.view(), b.view()).ok());
  EXPECT_EQ(Values<bool>(b.view()), (std::vector<bool>{true, false, false, true, true}));

  NDArray c = Make<std::complex<double>>({2}, {{1.5, 2}, {-2.5, -1}});
  NDArray cr = Empty(DTypeId::kFloat64, {2});
  ASSERT_TRUE(Cast(c.view(), cr.view()).ok());
  EXPECT_EQ(Values<double>(cr.view()), (std::vector<double>{1.5, -2.5}));
  NDArray c64 = Make<std::complex<float>>({2}, {{0, 1}, {0, 0}});
  NDArray cb = Empty(DTypeId::kBool, {2});
  ASSERT_TRUE(Cast(c64.view(), cb.view()).ok());
  EXPECT_EQ(Values<bool>(cb.view()), (std::vector<bool>{true, false}));
}

TEST(CastTest, StridedAndBroadcast) {
  NDArray a = Make<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  const int perm[] = {1, 0};
  NDArray out = Empty(DTypeId::kFloat64, {3, 2});
  ASSERT_TRUE(Cast(a.view().Transpose(perm), out.view()).ok());
  EXPECT_EQ(Values<double>(out.view()), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  NDArray s = *ScalarArray(Pool(), DTypeId::kFloat32, 2.5);
  NDArray filled = Empty(DTypeId::kInt64, {2, 2});
  ASSERT_TRUE(Cast(BroadcastTo(s.view(), {2, 2}), filled.view()).ok());
  EXPECT_EQ(Values<int64_t>(filled.view()), (std::vector<int64_t>{2, 2, 2, 2}));
}

TEST(CastTest, Float16ToAndFromEveryNumericType) {
  // numpy: np.array([...], dtype=np.float64).astype(np.float16).
  NDArray d = Make<double>({6}, {1.0, 0.1, 65520.0, -2.5, NAN, 1e-8});
  NDArray h = Empty(DTypeId::kFloat16, {6});
  ASSERT_TRUE(Cast(d.view(), h.view()).ok());
  EXPECT_EQ(Values<uint16_t>(h.view()),
            (std::vector<uint16_t>{0x3c00, 0x2e66, 0x7c00, 0xc100, 0x7e00, 0x0000}));
  for (DType to : AllDTypes()) {
    SCOPED_TRACE(std::string(to.name()));
    NDArray src = Make<uint16_t>({3}, {0x3c00, 0xc100, 0x4248});  // 1, -2.5, 3.140625
    NDArray half = NDArray::FromBuffer(std::move(src.buffer()), DTypeId::kFloat16, {3});
    NDArray out = Empty(to, {3});
    ASSERT_TRUE(Cast(half.view(), out.view()).ok());
    const std::vector<V> got = ToValues(out.view());
    for (int i = 0; i < 3; ++i) {
      const double value = HalfToDouble(Values<uint16_t>(half.view())[i]);
      EXPECT_EQ(got[i], ExpectedCast(V(value, 0), DTypeId::kFloat64, to));
    }
    // And back: every numeric type converts to float16.
    NDArray again = Empty(DTypeId::kFloat16, {3});
    ASSERT_TRUE(Cast(out.view(), again.view()).ok());
  }
  NDArray ints = Make<int32_t>({3}, {70000, -3, 2049});
  ASSERT_TRUE(Cast(ints.view(), h.view().Slice(Box({0}, {3}))).ok());
  EXPECT_EQ(Values<uint16_t>(h.view().Slice(Box({0}, {3}))),
            (std::vector<uint16_t>{0x7c00, 0xc200, 0x6800}));
  // Fixed-length types convert only to themselves.
  NDArray bytes = *NDArray::Zeros(Pool(), DType::FixedBytes(4), {3});
  NDArray i32 = Empty(DTypeId::kInt32, {3});
  EXPECT_EQ(Cast(bytes.view(), i32.view()).code(), StatusCode::kInvalidArgument);
}

TEST(PromoteTypesTest, Float16ComputesInFloat32AndStringsAreRefused) {
  EXPECT_EQ(*PromoteTypes(DTypeId::kFloat16, DTypeId::kFloat16), DType(DTypeId::kFloat32));
  EXPECT_EQ(*PromoteTypes(DTypeId::kFloat16, DTypeId::kFloat64), DType(DTypeId::kFloat64));
  EXPECT_EQ(*UnaryResultType(UnaryOp::kSqrt, DTypeId::kFloat16), DType(DTypeId::kFloat32));
  EXPECT_EQ(*BinaryResultType(BinaryOp::kLess, DTypeId::kFloat16, DTypeId::kInt8),
            DType(DTypeId::kBool));
  Result<DType> r = BinaryResultType(BinaryOp::kAdd, DType::FixedUnicode(3), DTypeId::kInt8);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("does not support U3"));
  // Arithmetic on float16 inputs: converted on the fly, computed in float32.
  NDArray src = Make<uint16_t>({2}, {0x3c00, 0x4000});  // 1, 2
  NDArray a = NDArray::FromBuffer(std::move(src.buffer()), DTypeId::kFloat16, {2});
  NDArray sum = Empty(DTypeId::kFloat32, {2});
  ASSERT_TRUE(ApplyBinary(BinaryOp::kAdd, a.view(), a.view(), sum.view()).ok());
  EXPECT_EQ(Values<float>(sum.view()), (std::vector<float>{2, 4}));
  NDArray root = Empty(DTypeId::kFloat32, {2});
  ASSERT_TRUE(ApplyUnary(UnaryOp::kSqrt, a.view(), root.view()).ok());
  EXPECT_FLOAT_EQ(Values<float>(root.view())[1], std::sqrt(2.0f));
}

}  // namespace
}  // namespace strata
