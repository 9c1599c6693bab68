// Tests of matmul and tensordot: results against plain-loop references over
// many chunkings and dtypes, the memory contract on tight budgets, identical
// bytes across executors and with fusion off, and bad input.
#include <complex>
#include <cstring>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "strata/api/api_test_util.h"
#include "strata/core/synthetic.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::RecordingCallback;
using testing_util::Compute;
using testing_util::SmallSpec;
using C = std::complex<double>;

// Chunk-independent test data of `dtype` (small integers for int32, values
// around 0 for floats, both parts random for complex).
Array Input(const Shape& shape, const Shape& chunks, DTypeId id, uint64_t seed,
            const Spec& spec = SmallSpec()) {
  switch (id) {
    case DTypeId::kInt32:
    case DTypeId::kInt64:
      return random::integers(-9, 10, shape, chunks, seed, id, spec);
    case DTypeId::kComplex128:
      return random::random(shape, chunks, seed, spec) - 0.5 +
             random::random(shape, chunks, seed + 1000, spec) * C(0, 1);
    case DTypeId::kFloat32:
      return astype(random::random(shape, chunks, seed, spec) - 0.5, DTypeId::kFloat32);
    default:
      return random::random(shape, chunks, seed, spec) - 0.5;
  }
}

C Value(const NDArray& a, Index i) {
  switch (a.dtype().id()) {
    case DTypeId::kInt32: return C(a.data_as<int32_t>()[i]);
    case DTypeId::kInt64: return C(static_cast<double>(a.data_as<int64_t>()[i]));
    case DTypeId::kFloat32: return C(a.data_as<float>()[i]);
    case DTypeId::kFloat64: return C(a.data_as<double>()[i]);
    case DTypeId::kComplex64: return C(a.data_as<std::complex<float>>()[i]);
    case DTypeId::kComplex128: return a.data_as<C>()[i];
    default: ADD_FAILURE() << "unexpected dtype " << a.dtype().name(); return 0;
  }
}

// A reference result: values and, per element, the sum of |a||b| (the scale
// of rounding errors).
struct Reference {
  Shape shape;
  std::vector<C> values;
  std::vector<double> scale;
};

// matmul by the Array API's rules, with plain loops.
Reference MatmulReference(const NDArray& a, const NDArray& b) {
  Shape as = a.shape(), bs = b.shape();
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  const size_t nb = std::max(as.size(), bs.size()) - 2;
  while (as.size() < nb + 2) as.insert(as.begin(), 1);
  while (bs.size() < nb + 2) bs.insert(bs.begin(), 1);
  Shape batch(nb);
  for (size_t j = 0; j < nb; ++j) batch[j] = std::max(as[j], bs[j]);
  const Index m = as[nb], k = as[nb + 1], n = bs[nb + 1];
  Reference ref;
  ref.shape = batch;
  if (!a1) ref.shape.push_back(m);
  if (!b1) ref.shape.push_back(n);
  Shape idx(nb, 0);
  if (NumElements(batch) == 0) return ref;
  do {
    Shape ai = idx, bi = idx;
    for (size_t j = 0; j < nb; ++j) {
      if (as[j] == 1) ai[j] = 0;
      if (bs[j] == 1) bi[j] = 0;
    }
    for (Index i = 0; i < m; ++i) {
      for (Index jj = 0; jj < n; ++jj) {
        C sum = 0;
        double scale = 0;
        for (Index p = 0; p < k; ++p) {
          Shape ia = ai, ib = bi;
          ia.push_back(i), ia.push_back(p);
          ib.push_back(p), ib.push_back(jj);
          C x = Value(a, LinearIndex(ia, as)), y = Value(b, LinearIndex(ib, bs));
          sum += x * y;
          scale += std::abs(x) * std::abs(y);
        }
        ref.values.push_back(sum);
        ref.scale.push_back(scale);
      }
    }
  } while (NextIndex(idx, batch));
  return ref;
}

// tensordot with plain loops.
Reference TensordotReference(const NDArray& a, const NDArray& b, const std::vector<int>& a_axes,
                             const std::vector<int>& b_axes) {
  std::vector<int> free_a, free_b;
  for (int i = 0; i < a.rank(); ++i)
    if (std::find(a_axes.begin(), a_axes.end(), i) == a_axes.end()) free_a.push_back(i);
  for (int i = 0; i < b.rank(); ++i)
    if (std::find(b_axes.begin(), b_axes.end(), i) == b_axes.end()) free_b.push_back(i);
  Reference ref;
  for (int i : free_a) ref.shape.push_back(a.shape()[i]);
  for (int i : free_b) ref.shape.push_back(b.shape()[i]);
  Shape kshape;
  for (int i : a_axes) kshape.push_back(a.shape()[i]);
  if (NumElements(ref.shape) == 0) return ref;
  Shape out(ref.shape.size(), 0);
  do {
    C sum = 0;
    double scale = 0;
    Shape kk(kshape.size(), 0);
    if (NumElements(kshape) > 0) {
      do {
        Shape ia(a.rank()), ib(b.rank());
        for (size_t i = 0; i < free_a.size(); ++i) ia[free_a[i]] = out[i];
        for (size_t i = 0; i < free_b.size(); ++i) ib[free_b[i]] = out[free_a.size() + i];
        for (size_t i = 0; i < a_axes.size(); ++i) {
          ia[a_axes[i]] = kk[i];
          ib[b_axes[i]] = kk[i];
        }
        C x = Value(a, LinearIndex(ia, a.shape())), y = Value(b, LinearIndex(ib, b.shape()));
        sum += x * y;
        scale += std::abs(x) * std::abs(y);
      } while (NextIndex(kk, kshape));
    }
    ref.values.push_back(sum);
    ref.scale.push_back(scale);
  } while (NextIndex(out, ref.shape));
  return ref;
}

void ExpectMatches(const NDArray& got, const Reference& ref, DType dtype, const std::string& what) {
  ASSERT_EQ(got.dtype(), dtype) << what;
  ASSERT_EQ(got.shape(), ref.shape) << what;
  ASSERT_EQ(got.num_elements(), static_cast<Index>(ref.values.size())) << what;
  const double eps = dtype.id() == DTypeId::kFloat32 || dtype.id() == DTypeId::kComplex64 ? 1e-6
                     : dtype.is_integer()                                                 ? 0
                                                                                          : 1e-15;
  for (size_t i = 0; i < ref.values.size(); ++i) {
    const double tol = 4 * eps * (ref.scale[i] + 1);
    C v = Value(got, static_cast<Index>(i));
    ASSERT_LE(std::abs(v - ref.values[i]), tol) << what << " element " << i << ": " << v
                                                << " != " << ref.values[i];
  }
}

constexpr DTypeId kDTypes[] = {DTypeId::kFloat64, DTypeId::kFloat32, DTypeId::kInt32,
                               DTypeId::kComplex128};

// Chunkings per axis: whole, size 1, ragged, random.
Shape PickChunks(const Shape& shape, int variant, std::mt19937& rng) {
  Shape c(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    const Index e = std::max<Index>(1, shape[i]);
    switch (variant % 4) {
      case 0: c[i] = e; break;
      case 1: c[i] = 1; break;
      case 2: c[i] = std::max<Index>(1, (e + 1) / 2); break;  // ragged for odd extents
      default: c[i] = std::uniform_int_distribution<Index>(1, e)(rng); break;
    }
  }
  return c;
}

TEST(LinalgTest, Matmul2DOverChunkingsAndDTypes) {
  std::mt19937 rng(1);
  const Shape as = {7, 9}, bs = {9, 5};
  for (DTypeId id : kDTypes) {
    for (int variant = 0; variant < 8; ++variant) {
      Shape ca = PickChunks(as, variant, rng);
      Shape cb = PickChunks(bs, variant / 2 + 1, rng);  // k chunks usually differ: a rechunk
      Array a = Input(as, ca, id, 1);
      Array b = Input(bs, cb, id, 2);
      Array c = matmul(a, b);
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      std::string what = fmt::format("{} a chunks {} b chunks {}", DType(id).name(),
                                     ShapeToString(ca), ShapeToString(cb));
      ExpectMatches(Compute(c), MatmulReference(Compute(a), Compute(b)), id, what);
    }
  }
}

TEST(LinalgTest, MatmulKeepsFreeChunksAndUsesTheSmallerContractedChunk) {
  Array a = Input({10, 12}, {4, 6}, DTypeId::kFloat64, 1);
  Array b = Input({12, 8}, {4, 3}, DTypeId::kFloat64, 2);
  Array c = matmul(a, b);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c.chunksize(), Shape({4, 3}));
  Result<std::shared_ptr<const Plan>> p = plan({c});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // a is rechunked to k-chunks of 4 (b's); b is not.
  int rechunks = 0;
  for (const PlannedOp& op : (*p)->ops()) {
    if (op.node->op_name == "rechunk") {
      ++rechunks;
      EXPECT_EQ(op.node->grid.chunk_shape(), Shape({4, 4}));
    }
  }
  EXPECT_EQ(rechunks, 1);
  ExpectMatches(Compute(c), MatmulReference(Compute(a), Compute(b)), DTypeId::kFloat64, "");
}

TEST(LinalgTest, MatmulWithVectors) {
  std::mt19937 rng(2);
  for (DTypeId id : kDTypes) {
    for (int variant = 0; variant < 4; ++variant) {
      Array v = Input({9}, PickChunks({9}, variant, rng), id, 3);
      Array w = Input({9}, PickChunks({9}, variant + 1, rng), id, 4);
      Array m = Input({7, 9}, PickChunks({7, 9}, variant + 2, rng), id, 5);
      Array n = Input({9, 5}, PickChunks({9, 5}, variant + 3, rng), id, 6);
      NDArray vv = Compute(v), ww = Compute(w), mm = Compute(m), nn = Compute(n);
      ExpectMatches(Compute(matmul(v, n)), MatmulReference(vv, nn), id, "1-D @ 2-D");
      ExpectMatches(Compute(matmul(m, v)), MatmulReference(mm, vv), id, "2-D @ 1-D");
      NDArray dot = Compute(matmul(v, w));
      EXPECT_EQ(dot.shape(), Shape());
      ExpectMatches(dot, MatmulReference(vv, ww), id, "1-D @ 1-D");
    }
  }
}

TEST(LinalgTest, MatmulBatchedAndBroadcast) {
  std::mt19937 rng(3);
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {
      {{3, 4, 6}, {3, 6, 5}},     // equal batch
      {{2, 1, 4, 6}, {3, 6, 5}},  // broadcast batch -> (2, 3, 4, 5)
      {{4, 6}, {3, 6, 5}},        // matrix against a stack
      {{3, 4, 6}, {6}},           // stack against a vector
      {{6}, {2, 6, 5}},           // vector against a stack
  };
  for (DTypeId id : {DTypeId::kFloat64, DTypeId::kInt32}) {
    for (const Case& cs : cases) {
      for (int variant = 0; variant < 4; ++variant) {
        Shape ca = PickChunks(cs.a, variant, rng), cb = PickChunks(cs.b, variant + 3, rng);
        Array a = Input(cs.a, ca, id, 7);
        Array b = Input(cs.b, cb, id, 8);
        std::string what = fmt::format("{} @ {} chunks {} {}", ShapeToString(cs.a),
                                       ShapeToString(cs.b), ShapeToString(ca), ShapeToString(cb));
        Array c = matmul(a, b);
        ASSERT_TRUE(c.ok()) << what << ": " << c.status().ToString();
        ExpectMatches(Compute(c), MatmulReference(Compute(a), Compute(b)), id, what);
      }
    }
  }
}

TEST(LinalgTest, MatmulResultDTypes) {
  Spec spec = SmallSpec();
  Array i32 = Input({4, 6}, {2, 3}, DTypeId::kInt32, 1);
  Array f32 = Input({6, 3}, {3, 3}, DTypeId::kFloat32, 2);
  Array f64 = Input({6, 3}, {2, 2}, DTypeId::kFloat64, 3);
  Array i64 = Input({6, 3}, {4, 1}, DTypeId::kInt64, 4);
  // int32 partial products summed across k-blocks come back as int32.
  EXPECT_EQ(matmul(i32, astype(i64, DTypeId::kInt32)).dtype(), DType(DTypeId::kInt32));
  EXPECT_EQ(matmul(astype(f64, DTypeId::kFloat32), f32.T()).dtype(), DType(DTypeId::kFloat32));
  for (const Array& b : {f32, f64, i64}) {
    Array c = matmul(i32, b);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    DType want = *PromoteTypes(i32.dtype(), b.dtype());
    ExpectMatches(Compute(c), MatmulReference(Compute(i32), Compute(b)), want,
                  std::string(b.dtype().name()));
  }
  Array c = matmul(i32, astype(i64, DTypeId::kInt32));
  ExpectMatches(Compute(c), MatmulReference(Compute(i32), Compute(astype(i64, DTypeId::kInt32))),
                DTypeId::kInt32, "int32");
}

TEST(LinalgTest, IntegerOverflowWrapsLikeNumpy) {
  // 5 * 2^30 * 2 overflows int32: the result wraps, whatever the k-chunking.
  NDArray av = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt32, {1, 5});
  NDArray bv = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt32, {5, 1});
  for (int i = 0; i < 5; ++i) {
    av.data_as<int32_t>()[i] = 1 << 30;
    bv.data_as<int32_t>()[i] = 2;
  }
  const int32_t want = static_cast<int32_t>(uint32_t{5} * (1u << 31));
  auto a_data = std::make_shared<const NDArray>(std::move(av));
  auto b_data = std::make_shared<const NDArray>(std::move(bv));
  for (Index k : {1, 2, 5}) {
    NDArray got = Compute(matmul(asarray(a_data, {1, k}, SmallSpec()), asarray(b_data, {k, 1}, SmallSpec())));
    ASSERT_EQ(got.dtype(), DType(DTypeId::kInt32));
    EXPECT_EQ(got.data_as<int32_t>()[0], want) << k;
  }
}

TEST(LinalgTest, TensordotTwoContractedAxes) {
  std::mt19937 rng(4);
  for (DTypeId id : kDTypes) {
    for (int variant = 0; variant < 4; ++variant) {
      // Axes paired out of order: a's (1, 2) with b's (1, 0).
      Shape sa = {4, 5, 6}, sb = {6, 5, 3};
      Shape ca = PickChunks(sa, variant, rng), cb = PickChunks(sb, variant + 1, rng);
      Array a = Input(sa, ca, id, 9);
      Array b = Input(sb, cb, id, 10);
      std::string what = fmt::format("{} chunks {} {}", DType(id).name(), ShapeToString(ca),
                                     ShapeToString(cb));
      NDArray an = Compute(a), bn = Compute(b);
      ExpectMatches(Compute(tensordot(a, b, {1, 2}, {1, 0})),
                    TensordotReference(an, bn, {1, 2}, {1, 0}), id, what);
      ExpectMatches(Compute(tensordot(a, b, {-2, -1}, {1, -3})),
                    TensordotReference(an, bn, {1, 2}, {1, 0}), id, what + " (negative axes)");
    }
  }
}

TEST(LinalgTest, TensordotByCount) {
  std::mt19937 rng(5);
  Shape sa = {3, 4, 5}, sb = {4, 5, 2};
  for (int variant = 0; variant < 4; ++variant) {
    Array a = Input(sa, PickChunks(sa, variant, rng), DTypeId::kFloat64, 11);
    Array b = Input(sb, PickChunks(sb, variant + 2, rng), DTypeId::kFloat64, 12);
    NDArray an = Compute(a), bn = Compute(b);
    ExpectMatches(Compute(tensordot(a, b, 2)), TensordotReference(an, bn, {1, 2}, {0, 1}),
                  DTypeId::kFloat64, "n=2");
    ExpectMatches(Compute(tensordot(a, b)), TensordotReference(an, bn, {1, 2}, {0, 1}),
                  DTypeId::kFloat64, "default");
    // n = 0: the outer product, no reduction.
    Array outer = tensordot(a, b, 0);
    EXPECT_EQ(outer.shape(), Shape({3, 4, 5, 4, 5, 2}));
    ExpectMatches(Compute(outer), TensordotReference(an, bn, {}, {}), DTypeId::kFloat64, "n=0");
    Array v = Input({4}, {3}, DTypeId::kFloat64, 13);
    ExpectMatches(Compute(tensordot(v, v, 1)), TensordotReference(Compute(v), Compute(v), {0}, {0}),
                  DTypeId::kFloat64, "vector");
  }
}

TEST(LinalgTest, ZeroSizeOperands) {
  for (DTypeId id : {DTypeId::kFloat64, DTypeId::kInt32}) {
    Array a = Input({0, 4}, {1, 2}, id, 1);
    Array b = Input({4, 3}, {2, 2}, id, 2);
    NDArray empty = Compute(matmul(a, b));
    EXPECT_EQ(empty.shape(), Shape({0, 3}));
    EXPECT_EQ(empty.dtype(), DType(id));
    // An empty contraction sums nothing: zeros.
    Array c = Input({3, 0}, {2, 1}, id, 3);
    Array d = Input({0, 4}, {1, 3}, id, 4);
    Array z = matmul(c, d);
    ASSERT_TRUE(z.ok()) << z.status().ToString();
    NDArray zeros_got = Compute(z);
    ASSERT_EQ(zeros_got.shape(), Shape({3, 4}));
    for (Index i = 0; i < 12; ++i) EXPECT_EQ(Value(zeros_got, i), C(0));
    EXPECT_EQ(Compute(tensordot(c, d, {1}, {0})).shape(), Shape({3, 4}));
    EXPECT_EQ(Compute(matmul(Input({0}, {1}, id, 5), Input({0}, {1}, id, 6))).shape(), Shape());
  }
}

TEST(LinalgTest, SameBytesOnInlineAndWithoutFusion) {
  auto build = [](ExecutorKind executor) {
    Spec spec = SmallSpec(executor);
    Array a = Input({30, 24, 7}, {7, 5, 3}, DTypeId::kFloat64, 1, spec);
    Array b = Input({7, 24, 11}, {2, 9, 4}, DTypeId::kFloat64, 2, spec);
    Array m = Input({11, 13}, {3, 13}, DTypeId::kFloat64, 3, spec);
    return matmul(tensordot(a, b, {1, 2}, {1, 0}) * 2.0, m);
  };
  NDArray threads = Compute(build(ExecutorKind::kThreads));
  NDArray inl = Compute(build(ExecutorKind::kInline));
  NDArray unfused = Compute(build(ExecutorKind::kThreads), /*fuse=*/false);
  ASSERT_EQ(threads.shape(), Shape({30, 13}));
  ASSERT_EQ(threads.nbytes(), inl.nbytes());
  ASSERT_EQ(threads.nbytes(), unfused.nbytes());
  EXPECT_EQ(0, std::memcmp(threads.data(), inl.data(), threads.nbytes()));
  EXPECT_EQ(0, std::memcmp(threads.data(), unfused.data(), threads.nbytes()));
}

Spec TightSpec(const char* allowed = "400MB") {
  Spec spec;
  spec.allowed_mem = allowed;
  spec.reserved_mem = "10MB";
  spec.workers = 2;
  return spec;
}

TEST(LinalgTest, MatmulOf50MBChunksStaysWithinBudget) {
  // a's 50 MB blocks are rechunked along k to b's chunks; the partial products
  // of two k-blocks are summed by the tree reduction.
  Spec spec = TightSpec();
  const Shape as = {250000, 50}, bs = {50, 8};
  Array a = random::random(as, {125000, 50}, 1, spec);
  Array b = random::random(bs, {25, 8}, 2, spec);
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  Result<NDArray> r = compute(matmul(a, b), options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  rec->ExpectWithinBudget();
  ASSERT_EQ(r->shape(), Shape({250000, 8}));
  // Spot-check rows against the synthetic values.
  NDArray bn = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, bs);
  FillSynthetic(bn.view(), Box::FromShape(bs), bs, 2);
  NDArray row = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, {1, 50});
  for (Index i : {Index{0}, Index{124999}, Index{125000}, Index{249999}}) {
    FillSynthetic(row.view(), Box({i, 0}, {1, 50}), as, 1);
    for (Index j = 0; j < 8; ++j) {
      double want = 0;
      for (Index p = 0; p < 50; ++p) want += row.data_as<double>()[p] * bn.data_as<double>()[p * 8 + j];
      EXPECT_NEAR(r->data_as<double>()[i * 8 + j], want, 1e-12) << i << "," << j;
    }
  }
}

TEST(LinalgTest, LargeOutputBlocksAreSplitToFit) {
  // Whole-array chunks would give one 128 MB output block, over 100 MB: the
  // free axes are split so that every task fits.
  Spec spec = TightSpec("100MB");
  const Shape as = {4000, 8}, bs = {8, 4000};
  Array a = random::random(as, as, 1, spec);
  Array b = random::random(bs, bs, 2, spec);
  Array c = matmul(a, b);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_LT(c.chunks().max_block_elements() * 8, 90'000'000);
  auto rec = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(rec);
  Result<NDArray> r = compute(c, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  rec->ExpectWithinBudget();
  NDArray an = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, as);
  NDArray bn = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, bs);
  FillSynthetic(an.view(), Box::FromShape(as), as, 1);
  FillSynthetic(bn.view(), Box::FromShape(bs), bs, 2);
  for (Index i : {Index{0}, Index{1999}, Index{2000}, Index{3999}}) {
    for (Index j : {Index{0}, Index{2500}, Index{3999}}) {
      double want = 0;
      for (Index p = 0; p < 8; ++p) want += an.data_as<double>()[i * 8 + p] * bn.data_as<double>()[p * 4000 + j];
      EXPECT_NEAR(r->data_as<double>()[i * 4000 + j], want, 1e-12);
    }
  }
}

TEST(LinalgTest, BadInputGivesClearErrors) {
  Array a = Input({3, 4}, {2, 2}, DTypeId::kFloat64, 1);
  Array b = Input({5, 6}, {2, 2}, DTypeId::kFloat64, 2);
  auto expect_error = [](const Array& x, std::string_view text) {
    ASSERT_FALSE(x.ok()) << text;
    EXPECT_EQ(x.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(x.status().message().find(text), std::string_view::npos) << x.status().ToString();
    Result<NDArray> r = compute(x);
    EXPECT_FALSE(r.ok());
  };
  expect_error(matmul(a, b), "matmul: shapes (3, 4) and (5, 6) are not aligned");
  expect_error(matmul(a, Input({5}, {2}, DTypeId::kFloat64, 3)), "4 (axis 1 of a) != 5 (axis 0 of b)");
  expect_error(matmul(a, zeros({}, {}, DTypeId::kFloat64, SmallSpec())),
               "matmul: operands must have rank >= 1, got shapes (3, 4) and ()");
  expect_error(matmul(Input({2, 3, 4}, {1, 1, 1}, DTypeId::kFloat64, 4),
                      Input({3, 4, 2}, {1, 1, 1}, DTypeId::kFloat64, 5)),
               "the batch axes of shapes (2, 3, 4) and (3, 4, 2) do not broadcast");
  Array flags = a > 0.0;
  expect_error(matmul(flags, a.T()), "matmul: operands must be numeric, got bool and float64");
  expect_error(tensordot(a, b, {1}, {0}), "tensordot: shapes (3, 4) and (5, 6) are not aligned");
  expect_error(tensordot(a, b, {2}, {0}), "tensordot: axis 2 is out of range for an array of rank 2");
  expect_error(tensordot(a, a, {1, 1}, {0, 1}), "tensordot: axis 1 is repeated");
  expect_error(tensordot(a, b, {1}, {0, 1}), "tensordot: 1 axes of a but 2 axes of b given");
  expect_error(tensordot(a, b, 3), "tensordot: cannot contract 3 axes of shapes (3, 4) and (5, 6)");
  expect_error(tensordot(a, b, -1), "cannot contract -1 axes");
  // An error operand passes through.
  expect_error(matmul(matmul(a, b), a), "not aligned");
}

}  // namespace
}  // namespace strata
