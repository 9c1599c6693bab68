// api/creation_extras.h and api/dtype_info.h against numpy: *_like,
// meshgrid, tril/triu, from_external (C-order and strided memory), finfo,
// iinfo, can_cast, isdtype, result_type.
#include "strata/api/creation_extras.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "strata/api/dtype_info.h"
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

TEST(CreationExtrasTest, LikeFunctions) {
  Array x = random::random({7, 5}, {3, 2}, 1, SmallSpec());
  for (const auto& [name, a] : std::vector<std::pair<std::string, Array>>{
           {"zeros_like", zeros_like(x)},
           {"ones_like", ones_like(x, DType(DTypeId::kInt8))},
           {"empty_like", empty_like(x)},
           {"full_like", full_like(x, Scalar(2.5), DType(DTypeId::kFloat32), {7, 1})}}) {
    ASSERT_TRUE(a.ok()) << name << ": " << a.status().ToString();
    EXPECT_EQ(a.shape(), x.shape()) << name;
    NDArray v = Compute(a);
    NDArray want = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, v.shape());
    ASSERT_TRUE(Cast(v.view(), want.view()).ok());
    const double expect = name == "ones_like" ? 1 : name == "full_like" ? 2.5 : 0;
    for (double e : want.values<double>()) EXPECT_EQ(e, expect) << name;
  }
  EXPECT_EQ(zeros_like(x).chunks(), x.chunks());
  EXPECT_EQ(ones_like(x, DType(DTypeId::kInt8)).dtype(), DType(DTypeId::kInt8));
  EXPECT_EQ(full_like(x, Scalar(2.5), DType(DTypeId::kFloat32), {7, 1}).chunksize(), Shape({7, 1}));
  // A rectilinear x: the same grid.
  Array r = concat({random::random({2, 5}, {2, 5}, 1, SmallSpec()),
                    random::random({3, 5}, {3, 5}, 2, SmallSpec())});
  EXPECT_EQ(zeros_like(r).chunks(), r.chunks());
  // Error arrays pass their error on.
  Array bad = reshape(x, {3});
  EXPECT_FALSE(zeros_like(bad).ok());
  EXPECT_EQ(zeros_like(bad).status().message(), bad.status().message());
  // full_like of a 0-d array.
  NDArray s = Compute(full_like(random::random({}, {}, 1, SmallSpec()), Scalar(3)));
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.data_as<double>()[0], 3.0);
}

TEST(CreationExtrasTest, MeshgridAgainstNumpy) {
  const NDArray a = RandomHost(DTypeId::kFloat64, {4}, 1);
  const NDArray b = RandomHost(DTypeId::kFloat64, {3}, 2);
  const NDArray c = RandomHost(DTypeId::kFloat64, {2}, 3);
  NumpyOracle np;
  std::vector<std::pair<std::vector<Array>, int>> cases;
  for (MeshIndexing ix : {MeshIndexing::kXY, MeshIndexing::kIJ}) {
    const std::string ind = ix == MeshIndexing::kXY ? "'xy'" : "'ij'";
    cases.push_back({meshgrid({Lazy(a, {3}), Lazy(b, {2}), Lazy(c, {1})}, ix),
                     np.Add("tuple(np.meshgrid(a, b, c, indexing=" + ind + "))", {&a, &b, &c})});
    cases.push_back({meshgrid({Lazy(a, {3}), Lazy(b, {2})}, ix),
                     np.Add("tuple(np.meshgrid(a, b, indexing=" + ind + "))", {&a, &b})});
    cases.push_back({meshgrid({Lazy(a, {3})}, ix),
                     np.Add("tuple(np.meshgrid(a, indexing=" + ind + "))", {&a})});
  }
  np.Run();
  for (auto& [got, id] : cases) {
    std::vector<NDArray> want = np.Result(id);
    ASSERT_EQ(got.size(), want.size()) << np.expr(id);
    for (size_t i = 0; i < got.size(); ++i) {
      ExpectArrayNear(Compute(got[i]), want[i], 0, 0, np.expr(id) + " output " + std::to_string(i));
    }
  }
  // Output i is chunked along its axis as input i.
  std::vector<Array> g = meshgrid({Lazy(a, {3}), Lazy(b, {2})}, MeshIndexing::kIJ);
  EXPECT_EQ(g[0].chunksize(), Shape({3, 2}));
  EXPECT_FALSE(meshgrid({Lazy(a, {3}), Lazy(RandomHost(DTypeId::kInt32, {2}, 1), {2})})[0].ok());
  EXPECT_FALSE(meshgrid({Lazy(RandomHost(DTypeId::kInt32, {2, 2}, 1), {2, 2})})[0].ok());
}

TEST(CreationExtrasTest, TrilTriuAgainstNumpy) {
  NumpyOracle np;
  std::vector<std::pair<NDArray, int>> cases;
  uint32_t seed = 1;
  for (const Shape& shape : std::vector<Shape>{{5, 7}, {7, 5}, {2, 4, 4}, {0, 3}, {3, 1}}) {
    for (DType t : {DType(DTypeId::kFloat64), DType(DTypeId::kInt16), DType(DTypeId::kBool)}) {
      const NDArray h = RandomHost(t, shape, seed++);
      for (const Shape& chunks : testing_util::Chunkings(shape, seed++, 1)) {
        for (Index k : {-2, 0, 1, 3}) {
          const std::string ks = std::to_string(k);
          cases.push_back(
              {Compute(tril(Lazy(h, chunks), k)), np.Add("np.tril(a, " + ks + ")", {&h})});
          cases.push_back(
              {Compute(triu(Lazy(h, chunks), k)), np.Add("np.triu(a, " + ks + ")", {&h})});
        }
      }
    }
  }
  np.Run();
  for (auto& [got, id] : cases) ExpectArrayNear(got, np.First(id), 0, 0, np.expr(id));
  Array v = tril(random::random({4}, {2}, 1, SmallSpec()));
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("rank >= 2"), std::string::npos) << v.status().message();
}

TEST(CreationExtrasTest, FromExternalMemory) {
  auto owner = std::make_shared<std::vector<double>>(24);
  std::iota(owner->begin(), owner->end(), 0.0);
  // C order: viewed in place.
  ExternalArray e{owner->data(), DTypeId::kFloat64, {4, 6}, {}, owner};
  Array a = from_external(e, {3, 4}, SmallSpec());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  NDArray v = Compute(a * 1.0);
  for (Index i = 0; i < 24; ++i) EXPECT_EQ(v.data_as<double>()[i], static_cast<double>(i));
  // The transpose, as numpy's a.T strides say, and a reversed, stepped view.
  ExternalArray t{owner->data(), DTypeId::kFloat64, {6, 4}, {8, 48}, owner};
  NDArray tv = Compute(from_external(t, {4, 3}, SmallSpec()));
  for (Index i = 0; i < 6; ++i) {
    for (Index j = 0; j < 4; ++j) EXPECT_EQ(tv.data_as<double>()[i * 4 + j], j * 6 + i);
  }
  ExternalArray r{owner->data() + 23, DTypeId::kFloat64, {12}, {-16}, owner};
  NDArray rv = Compute(from_external(r, {5}, SmallSpec()));
  for (Index i = 0; i < 12; ++i) EXPECT_EQ(rv.data_as<double>()[i], 23 - 2 * i);
  // The Array keeps the memory alive after the caller lets go.
  std::weak_ptr<std::vector<double>> weak = owner;
  Array kept = from_external(e, {}, SmallSpec());
  e.owner.reset();
  t.owner.reset();
  r.owner.reset();
  owner.reset();
  EXPECT_FALSE(weak.expired());
  EXPECT_EQ(Compute(sum(kept)).data_as<double>()[0], 276.0);
  kept = Array();
  a = Array();
  EXPECT_TRUE(weak.expired());
  // Bad descriptions.
  EXPECT_EQ(from_external({nullptr, DTypeId::kFloat64, {3}, {}, nullptr}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(from_external({&e, DTypeId::kFloat64, {3, -1}, {}, nullptr}).ok());
  EXPECT_FALSE(from_external({&e, DTypeId::kFloat64, {3}, {8, 8}, nullptr}).ok());
  EXPECT_TRUE(from_external({nullptr, DTypeId::kFloat64, {0}, {}, nullptr}).ok());
}

TEST(DTypeInfoTest, AgainstNumpy) {
  NumpyOracle np;
  std::vector<std::pair<DType, int>> fcases, icases;
  for (DType t : AllDTypes()) {
    const std::string n = NpType(t);
    if (t.is_float() || t.is_complex()) {
      fcases.push_back({t, np.Add("(lambda f: np.array([f.bits, f.eps, f.max, f.min, "
                                  "f.smallest_normal]))(np.finfo(" +
                                      n + "))",
                                  {})});
    }
    if (t.is_integer()) {
      icases.push_back({t, np.Add("(lambda f: (np.array([f.bits]), np.array([f.min]), "
                                  "np.array([f.max], dtype=np.uint64)))(np.iinfo(" +
                                      n + "))",
                                  {})});
    }
  }
  // can_cast against numpy's "safe" casting, which the standard's promotion
  // table follows for these pairs except where Strata documents otherwise.
  std::vector<std::tuple<DType, DType, int>> casts;
  for (DType a : AllDTypes()) {
    for (DType b : AllDTypes()) {
      casts.push_back(
          {a, b, np.Add("np.array(np.can_cast(" + NpType(a) + ", " + NpType(b) + "))", {})});
    }
  }
  np.Run();
  for (auto [t, id] : fcases) {
    Result<FloatInfo> f = finfo(t);
    ASSERT_TRUE(f.ok()) << t.name();
    NDArray w = np.First(id);
    const double* v = w.data_as<double>();
    EXPECT_EQ(f->bits, v[0]) << t.name();
    EXPECT_EQ(f->eps, v[1]) << t.name();
    EXPECT_EQ(f->max, v[2]) << t.name();
    EXPECT_EQ(f->min, v[3]) << t.name();
    EXPECT_EQ(f->smallest_normal, v[4]) << t.name();
  }
  for (auto [t, id] : icases) {
    Result<IntInfo> f = iinfo(t);
    ASSERT_TRUE(f.ok()) << t.name();
    std::vector<NDArray> w = np.Result(id);
    ASSERT_EQ(w.size(), 3u);
    EXPECT_EQ(f->bits, w[0].data_as<int64_t>()[0]) << t.name();
    EXPECT_EQ(f->min, w[1].data_as<int64_t>()[0]) << t.name();
    EXPECT_EQ(f->max_unsigned, w[2].data_as<uint64_t>()[0]) << t.name();
  }
  for (auto [a, b, id] : casts) {
    const bool numpy_says = np.First(id).data_as<bool>()[0];
    // Departures: numpy casts integers to floats of the same or larger size
    // "safely" only when the float holds every value (int32 -> float64, not
    // float32), while the standard's mixed-kind promotion (and Strata's) gives
    // the float; and numpy casts uint64/int64 to float64 safely.
    const bool mixed_kind = (a.is_integer() || a.is_bool()) && (b.is_float() || b.is_complex());
    if (mixed_kind) {
      EXPECT_TRUE(can_cast(a, b)) << a.name() << " -> " << b.name();
      continue;
    }
    EXPECT_EQ(can_cast(a, b), numpy_says) << a.name() << " -> " << b.name();
  }
  EXPECT_EQ(finfo(DTypeId::kInt8).status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(iinfo(DTypeId::kFloat32).status().message().find("float32"), std::string::npos);
}

TEST(DTypeInfoTest, IsdtypeAndResultType) {
  EXPECT_TRUE(*isdtype(DTypeId::kInt8, "signed integer"));
  EXPECT_FALSE(*isdtype(DTypeId::kUInt8, "signed integer"));
  EXPECT_TRUE(*isdtype(DTypeId::kUInt8, "integral"));
  EXPECT_TRUE(*isdtype(DTypeId::kFloat32, "real floating"));
  EXPECT_TRUE(*isdtype(DTypeId::kComplex64, "complex floating"));
  EXPECT_TRUE(*isdtype(DTypeId::kComplex64, "numeric"));
  EXPECT_FALSE(*isdtype(DTypeId::kBool, "numeric"));
  EXPECT_TRUE(*isdtype(DTypeId::kBool, "bool"));
  EXPECT_TRUE(*isdtype(DTypeId::kFloat64, DType(DTypeId::kFloat64)));
  EXPECT_TRUE(*isdtype(DTypeId::kInt16, {DTypeKind("real floating"), DTypeKind("integral")}));
  EXPECT_FALSE(*isdtype(DTypeId::kBool, {DTypeKind("real floating"), DType(DTypeId::kInt8)}));
  Result<bool> bad = isdtype(DTypeId::kBool, "floating");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'floating'"), std::string::npos);

  Array f32 = random::random({3}, {3}, 1, SmallSpec()).astype(DTypeId::kFloat32);
  Array i16 = random::integers(0, 5, {3}, {3}, 1, DTypeId::kInt16, SmallSpec());
  EXPECT_EQ(*result_type({f32, i16}), DType(DTypeId::kFloat32));
  EXPECT_EQ(*result_type({DType(DTypeId::kInt8), DType(DTypeId::kUInt8)}), DType(DTypeId::kInt16));
  EXPECT_EQ(*result_type({i16, Scalar(2)}), DType(DTypeId::kInt16));
  EXPECT_EQ(*result_type({i16, Scalar(2.5)}), DType(DTypeId::kFloat64));
  EXPECT_EQ(*result_type({f32, Scalar(std::complex<double>(1, 1))}), DType(DTypeId::kComplex64));
  EXPECT_EQ(*result_type({Scalar(1), Scalar(true)}), DType(DTypeId::kInt64));
  EXPECT_FALSE(result_type({}).ok());
  EXPECT_FALSE(result_type({DType(DTypeId::kUInt64), DType(DTypeId::kInt64)}).ok());
  EXPECT_FALSE(result_type({reshape(f32, {2})}).ok());
  // Same as the elementwise ops give.
  EXPECT_EQ((f32 + i16).dtype(), *result_type({f32, i16}));
}

}  // namespace
}  // namespace strata
