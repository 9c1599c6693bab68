// Tests of strata::linalg (api/linalg_extension.h): each decomposition is
// checked by multiplying its factors back (and against plain-loop references
// for det, diagonal, trace, cross, norms), over batched and ragged chunkings,
// TSQR over several row blocks, the memory contract of every task, the
// refusal of a matrix over allowed_mem, and bad arguments.
#include "strata/api/linalg_extension.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "strata/api/manipulation_extras.h"
#include "strata/api/memory_contract_test_util.h"
#include "strata/api/api_test_util.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/strata.h"

namespace strata {
namespace {

using testing_util::RecordingCallback;
using testing_util::SmallSpec;

// Values of `a` as float64, C order.
std::vector<double> Values(const NDArray& a) {
  NDArray d = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kFloat64, a.shape());
  EXPECT_TRUE(Cast(a.view(), d.view()).ok());
  const double* p = d.data_as<double>();
  return std::vector<double>(p, p + d.num_elements());
}

// Computes `arrays` together, checking every task's measured <= projected <=
// allowed.
std::vector<std::vector<double>> ComputeAll(const std::vector<Array>& arrays) {
  for (const Array& a : arrays) EXPECT_TRUE(a.ok()) << a.status().ToString();
  auto cb = std::make_shared<RecordingCallback>();
  ComputeOptions options;
  options.callbacks.push_back(cb);
  Result<std::vector<NDArray>> r = compute(arrays, options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  std::vector<std::vector<double>> out;
  if (!r.ok()) return out;
  cb->ExpectWithinBudget();
  for (const NDArray& a : *r) out.push_back(Values(a));
  return out;
}

Array Random(const Shape& shape, const Shape& chunks, uint64_t seed, const Spec& spec = SmallSpec()) {
  return random::random(shape, chunks, seed, spec) - 0.5;
}

// a (m x k) @ b (k x n) at matrix `i` of a batch.
std::vector<double> MatMul(const double* a, const double* b, Index m, Index k, Index n) {
  std::vector<double> c(m * n, 0.0);
  for (Index i = 0; i < m; ++i) {
    for (Index l = 0; l < k; ++l) {
      for (Index j = 0; j < n; ++j) c[i * n + j] += a[i * k + l] * b[l * n + j];
    }
  }
  return c;
}

void ExpectNear(const std::vector<double>& got, const double* want, Index count, double tol,
                const std::string& what) {
  ASSERT_GE(static_cast<Index>(got.size()), count) << what;
  for (Index i = 0; i < count; ++i) {
    ASSERT_NEAR(got[i], want[i], tol) << what << " element " << i;
  }
}

// A symmetric positive definite batch: x xᵀ + n I.
Array Spd(const Shape& batch, Index n, const Shape& chunks, uint64_t seed) {
  Shape shape = batch;
  shape.push_back(n);
  shape.push_back(n);
  Array x = Random(shape, chunks, seed);
  return matmul(x, matrix_transpose(x)) + broadcast_to(eye(n, n, 0, {n, n}) * double(n), shape);
}

TEST(LinalgExtensionTest, InvAndSolveMultiplyBack) {
  // Batch (5, 3) in ragged chunks of 2, matrices 4 x 4 in chunks of 3 (the
  // core axes are rechunked whole).
  const Shape shape = {5, 3, 4, 4};
  Array a = Random(shape, {2, 2, 3, 3}, 1) + broadcast_to(eye(4, 4, 0, {4, 4}) * 2.0, shape);
  Array b = Random({5, 3, 4, 2}, {3, 1, 2, 2}, 2);
  Array bv = Random({4}, {3}, 3);
  auto r = ComputeAll({a, linalg::inv(a), b, linalg::solve(a, b), bv, linalg::solve(a, bv)});
  ASSERT_EQ(r.size(), 6u);
  for (Index i = 0; i < 15; ++i) {
    const double* ai = r[0].data() + i * 16;
    std::vector<double> eye4(16, 0.0);
    for (int d = 0; d < 4; ++d) eye4[d * 5] = 1;
    ExpectNear(MatMul(ai, r[1].data() + i * 16, 4, 4, 4), eye4.data(), 16, 1e-10, "a @ inv(a)");
    ExpectNear(MatMul(ai, r[3].data() + i * 8, 4, 4, 2), r[2].data() + i * 8, 8, 1e-10,
               "a @ solve(a, b)");
    ExpectNear(MatMul(ai, r[5].data() + i * 4, 4, 4, 1), r[4].data(), 4, 1e-10,
               "a @ solve(a, vector)");
  }
}

TEST(LinalgExtensionTest, CholeskyEighDet) {
  Array a = Spd({3}, 5, {2, 2, 5}, 4);
  auto [w, v] = linalg::eigh(a);
  auto [sign, logabs] = linalg::slogdet(a);
  auto r = ComputeAll({a, linalg::cholesky(a), linalg::cholesky(a, true), w, v, linalg::det(a), sign,
                logabs, linalg::eigvalsh(a)});
  ASSERT_EQ(r.size(), 9u);
  for (Index i = 0; i < 3; ++i) {
    const double* ai = r[0].data() + i * 25;
    const double* l = r[1].data() + i * 25;
    const double* u = r[2].data() + i * 25;
    std::vector<double> lt(25);
    for (int p = 0; p < 5; ++p) {
      for (int q = 0; q < 5; ++q) {
        lt[q * 5 + p] = l[p * 5 + q];
        if (q > p) {
          EXPECT_EQ(l[p * 5 + q], 0.0);
        }
        EXPECT_EQ(u[p * 5 + q], l[q * 5 + p]);
      }
    }
    ExpectNear(MatMul(l, lt.data(), 5, 5, 5), ai, 25, 1e-10, "L Lᵀ");
    // a v = v diag(w), eigenvalues ascending, as eigvalsh.
    const double* wi = r[3].data() + i * 5;
    const double* vi = r[4].data() + i * 25;
    std::vector<double> av = MatMul(ai, vi, 5, 5, 5), vw(25);
    for (int p = 0; p < 5; ++p) {
      for (int q = 0; q < 5; ++q) vw[p * 5 + q] = vi[p * 5 + q] * wi[q];
    }
    ExpectNear(av, vw.data(), 25, 1e-9, "a v");
    ExpectNear(std::vector<double>(r[8].begin() + i * 5, r[8].begin() + i * 5 + 5), wi, 5, 1e-10,
               "eigvalsh");
    for (int q = 1; q < 5; ++q) EXPECT_LE(wi[q - 1], wi[q]);
    // det is the product of the eigenvalues; slogdet agrees.
    double prod = 1;
    for (int q = 0; q < 5; ++q) prod *= wi[q];
    EXPECT_NEAR(r[5][i], prod, 1e-8 * std::abs(prod));
    EXPECT_EQ(r[6][i], 1.0);
    EXPECT_NEAR(r[7][i], std::log(prod), 1e-10);
  }
}

TEST(LinalgExtensionTest, SingularMatrixFailsTheComputeWithItsName) {
  Array a = zeros({2, 3, 3}, {1, 3, 3});
  Result<NDArray> r = compute(linalg::inv(a));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("linalg.inv: singular matrix"), std::string::npos)
      << r.status().ToString();
  // slogdet of a singular matrix is (0, -inf), as numpy's.
  auto [sign, logabs] = linalg::slogdet(a);
  auto v = ComputeAll({sign, logabs, linalg::det(a)});
  EXPECT_EQ(v[0][0], 0.0);
  EXPECT_EQ(v[1][0], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(v[2][0], 0.0);
}

void CheckQr(const std::vector<double>& a, const std::vector<double>& q,
             const std::vector<double>& r, Index m, Index n, Index k, const std::string& what) {
  ExpectNear(MatMul(q.data(), r.data(), m, k, n), a.data(), m * n, 1e-10, what + ": Q R");
  for (Index i = 0; i < k; ++i) {
    for (Index j = 0; j < std::min(i, n); ++j) EXPECT_EQ(r[i * n + j], 0.0) << what;
    for (Index j = 0; j < k; ++j) {
      double dot = 0;
      for (Index l = 0; l < m; ++l) dot += q[l * k + i] * q[l * k + j];
      ASSERT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-10) << what << ": QᵀQ";
    }
  }
}

TEST(LinalgExtensionTest, QrAndSvdOfBatchedMatrices) {
  for (auto [m, n] : {std::pair<Index, Index>{5, 3}, {3, 5}, {4, 4}}) {
    Array a = Random({2, m, n}, {1, 2, 2}, 5 + m);
    auto [q, r] = linalg::qr(a);
    auto [qc, rc] = linalg::qr(a, "complete");
    auto [u, s, vh] = linalg::svd(a, false);
    auto [uf, sf, vhf] = linalg::svd(a, true);
    auto v = ComputeAll({a, q, r, qc, rc, u, s, vh, uf, vhf, linalg::svdvals(a)});
    const Index k = std::min(m, n);
    for (Index i = 0; i < 2; ++i) {
      std::vector<double> ai(v[0].begin() + i * m * n, v[0].begin() + (i + 1) * m * n);
      auto part = [&](int j, Index size) {
        return std::vector<double>(v[j].begin() + i * size, v[j].begin() + (i + 1) * size);
      };
      const std::string what = fmt::format("{}x{} matrix {}", m, n, i);
      CheckQr(ai, part(1, m * k), part(2, k * n), m, n, k, what + " reduced");
      CheckQr(ai, part(3, m * m), part(4, m * n), m, n, m, what + " complete");
      // U diag(S) Vh = a, S descending and equal to svdvals.
      std::vector<double> us = part(5, m * k), sv = part(6, k);
      for (Index p = 0; p < m; ++p) {
        for (Index l = 0; l < k; ++l) us[p * k + l] *= sv[l];
      }
      ExpectNear(MatMul(us.data(), part(7, k * n).data(), m, k, n), ai.data(), m * n, 1e-10,
                 what + ": U S Vh");
      for (Index l = 1; l < k; ++l) EXPECT_GE(sv[l - 1], sv[l]);
      ExpectNear(part(10, k), sv.data(), k, 1e-10, what + ": svdvals");
      EXPECT_EQ(v[8].size(), static_cast<size_t>(2 * m * m));
      EXPECT_EQ(v[9].size(), static_cast<size_t>(2 * n * n));
    }
  }
}

TEST(LinalgExtensionTest, TsqrOverSeveralRowBlocks) {
  // 103 x 6 in ragged row blocks of 20 (6 blocks), one column chunk: TSQR.
  const Index m = 103, n = 6;
  Array a = Random({m, n}, {20, n}, 7);
  auto [q, r] = linalg::qr(a);
  auto [u, s, vh] = linalg::svd(a, false);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q.chunks().grid_shape()[0], 6) << "Q keeps the row blocks";
  Result<std::shared_ptr<const Plan>> p = plan({q});
  ASSERT_TRUE(p.ok());
  bool tsqr = false;
  for (const PlannedOp& op : (*p)->ops()) tsqr = tsqr || op.node->op_name.find("tsqr") != std::string::npos;
  EXPECT_TRUE(tsqr);
  auto v = ComputeAll({a, q, r, u, s, vh, linalg::svdvals(a)});
  CheckQr(v[0], v[1], v[2], m, n, n, "tsqr");
  std::vector<double> us = v[3];
  for (Index i = 0; i < m; ++i) {
    for (Index l = 0; l < n; ++l) us[i * n + l] *= v[4][l];
  }
  ExpectNear(MatMul(us.data(), v[5].data(), m, n, n), v[0].data(), m * n, 1e-10, "tsqr U S Vh");
  ExpectNear(v[6], v[4].data(), n, 1e-10, "tsqr svdvals");
  // Rows blocks shorter than n (padded R factors) still give a = Q R.
  Array thin = Random({10, 4}, {3, 4}, 8);
  auto [q2, r2] = linalg::qr(thin);
  auto v2 = ComputeAll({thin, q2, r2});
  CheckQr(v2[0], v2[1], v2[2], 10, 4, 4, "tsqr with short blocks");
}

TEST(LinalgExtensionTest, ChunkedOpsAgainstLoops) {
  const Shape shape = {3, 7, 5};
  Array x = Random(shape, {2, 3, 2}, 9);
  Array y = Random({3, 7, 3}, {2, 4, 3}, 10);
  Array z = Random({3, 7, 3}, {1, 7, 1}, 11);
  std::vector<Array> arrays = {x, y, z, linalg::cross(y, z), linalg::matrix_norm(x),
                               linalg::matrix_norm(x, "1"), linalg::matrix_norm(x, "-inf"),
                               linalg::vector_norm(x, std::vector<int>{1}, false, 3),
                               linalg::vector_norm(x), linalg::matrix_norm(x, "2")};
  for (Index offset : {-8, -2, 0, 1, 4, 5}) {
    arrays.push_back(linalg::diagonal(x, offset));
    arrays.push_back(linalg::trace(x, offset));
  }
  auto v = ComputeAll(arrays);
  ASSERT_EQ(v.size(), arrays.size());
  const std::vector<double>& xv = v[0];
  auto at = [&](Index b, Index i, Index j) { return xv[(b * 7 + i) * 5 + j]; };
  for (Index b = 0; b < 3; ++b) {
    for (Index i = 0; i < 7; ++i) {
      const double* p = v[1].data() + (b * 7 + i) * 3;
      const double* q = v[2].data() + (b * 7 + i) * 3;
      const double want[3] = {p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2],
                              p[0] * q[1] - p[1] * q[0]};
      ExpectNear(std::vector<double>(v[3].begin() + (b * 7 + i) * 3, v[3].begin() + (b * 7 + i) * 3 + 3),
                 want, 3, 1e-14, "cross");
    }
    double fro = 0, max_col = 0, min_row = 1e300;
    for (Index j = 0; j < 5; ++j) {
      double c = 0;
      for (Index i = 0; i < 7; ++i) c += std::abs(at(b, i, j));
      max_col = std::max(max_col, c);
    }
    for (Index i = 0; i < 7; ++i) {
      double rsum = 0;
      for (Index j = 0; j < 5; ++j) {
        rsum += std::abs(at(b, i, j));
        fro += at(b, i, j) * at(b, i, j);
      }
      min_row = std::min(min_row, rsum);
    }
    EXPECT_NEAR(v[4][b], std::sqrt(fro), 1e-12);
    EXPECT_NEAR(v[5][b], max_col, 1e-12);
    EXPECT_NEAR(v[6][b], min_row, 1e-12);
    for (Index j = 0; j < 5; ++j) {
      double p3 = 0;
      for (Index i = 0; i < 7; ++i) p3 += std::pow(std::abs(at(b, i, j)), 3);
      EXPECT_NEAR(v[7][b * 5 + j], std::cbrt(p3), 1e-12);
    }
    // The 2-norm is the largest singular value: at least the Frobenius norm
    // over sqrt(rank), at most the Frobenius norm.
    EXPECT_LE(v[9][b], std::sqrt(fro) + 1e-12);
    EXPECT_GE(v[9][b], std::sqrt(fro / 5) - 1e-12);
  }
  double all = 0;
  for (double e : xv) all += e * e;
  EXPECT_NEAR(v[8][0], std::sqrt(all), 1e-12);
  size_t idx = 10;
  for (Index offset : {-8, -2, 0, 1, 4, 5}) {
    const Index r0 = std::max<Index>(0, -offset), c0 = std::max<Index>(0, offset);
    const Index len = std::max<Index>(0, std::min(7 - r0, 5 - c0));
    const std::vector<double>& d = v[idx++];
    const std::vector<double>& t = v[idx++];
    ASSERT_EQ(d.size(), static_cast<size_t>(3 * len)) << "offset " << offset;
    for (Index b = 0; b < 3; ++b) {
      double tr = 0;
      for (Index i = 0; i < len; ++i) {
        EXPECT_EQ(d[b * len + i], at(b, i + r0, i + c0)) << "offset " << offset;
        tr += at(b, i + r0, i + c0);
      }
      EXPECT_NEAR(t[b], tr, 1e-14) << "offset " << offset;
    }
  }
}

TEST(LinalgExtensionTest, MatrixPowerAndOuter) {
  Array a = Random({2, 4, 4}, {1, 3, 3}, 12) + broadcast_to(eye(4, 4, 0, {4, 4}), {2, 4, 4});
  Array v1 = Random({5}, {2}, 13), v2 = Random({3}, {2}, 14);
  auto v = ComputeAll({a, linalg::matrix_power(a, 0), linalg::matrix_power(a, 5),
                linalg::matrix_power(a, -2), v1, v2, linalg::outer(v1, v2)});
  for (Index i = 0; i < 2; ++i) {
    const double* ai = v[0].data() + i * 16;
    std::vector<double> p(ai, ai + 16);
    for (int e = 1; e < 5; ++e) p = MatMul(p.data(), ai, 4, 4, 4);
    ExpectNear(std::vector<double>(v[2].begin() + i * 16, v[2].begin() + (i + 1) * 16), p.data(),
               16, 1e-9, "a^5");
    std::vector<double> a2 = MatMul(ai, ai, 4, 4, 4);
    std::vector<double> back = MatMul(a2.data(), v[3].data() + i * 16, 4, 4, 4);
    for (int d = 0; d < 16; ++d) EXPECT_NEAR(back[d], d % 5 == 0 ? 1.0 : 0.0, 1e-9) << "a^2 a^-2";
    for (int d = 0; d < 16; ++d) EXPECT_EQ(v[1][i * 16 + d], d % 5 == 0 ? 1.0 : 0.0) << "a^0";
  }
  for (Index i = 0; i < 5; ++i) {
    for (Index j = 0; j < 3; ++j) EXPECT_DOUBLE_EQ(v[6][i * 3 + j], v[4][i] * v[5][j]);
  }
}

TEST(LinalgExtensionTest, Float32StaysFloat32) {
  Array a = astype(Spd({}, 3, {3, 3}, 15), DTypeId::kFloat32);
  EXPECT_EQ(linalg::inv(a).dtype(), DType(DTypeId::kFloat32));
  EXPECT_EQ(linalg::svd(a).S.dtype(), DType(DTypeId::kFloat32));
  EXPECT_EQ(linalg::matrix_rank(a).dtype(), DType(DTypeId::kInt64));
  EXPECT_EQ(linalg::det(astype(a, DTypeId::kInt32)).dtype(), DType(DTypeId::kFloat64));
  auto v = ComputeAll({linalg::matrix_rank(a), linalg::matrix_rank(zeros({3, 3}))});
  EXPECT_EQ(v[0][0], 3);
  EXPECT_EQ(v[1][0], 0);
}

TEST(LinalgExtensionTest, MatrixOverAllowedMemIsRefusedWhenBuilt) {
  Spec spec = SmallSpec();
  spec.allowed_mem = "20MB";
  // A 2000 x 2000 float64 matrix is 32 MB: it cannot be one chunk.
  Array a = random::random({2000, 2000}, {500, 500}, 16, spec);
  for (const Array& r : {linalg::inv(a), linalg::det(a), linalg::eigh(a).eigenvalues,
                         linalg::cholesky(a), linalg::svd(a).S}) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("a 2000x2000 float64 matrix must be in one chunk"),
              std::string::npos)
        << r.status().ToString();
    EXPECT_NE(r.status().message().find("allowed_mem"), std::string::npos);
  }
  // The chunked ops run under the same budget.
  EXPECT_TRUE(linalg::matrix_norm(a, "1").ok());
  EXPECT_TRUE(linalg::trace(a).ok());
}

// The memory contract from the history file under a budget that binds
// (RunTight: just above the largest projection, so measured peaks are
// checked against a projection that is the whole budget): a batch of 200
// matrices of 100 x 100 (80 kB each, 16 MB in all) for inv, and
// TSQR of a 20000 x 16 matrix in 2000-row blocks (256 kB each).
TEST(LinalgExtensionTest, MemoryContractUnderATightBudget) {
  using testing_util::RunTight;
  testing_util::History inv_h = RunTight(
      [](const Spec& spec) {
        Array a = random::random({200, 100, 100}, {200, 100, 100}, 17, spec);
        return std::vector<Array>{linalg::inv(a + broadcast_to(eye(100, 100, 0, {100, 100}) * 100.0,
                                                               {200, 100, 100}))};
      },
      100 * 100 * 8);
  EXPECT_GT(inv_h.tasks, 0);
  testing_util::History qr_h = RunTight(
      [](const Spec& spec) {
        Array a = random::random({20000, 16}, {2000, 16}, 18, spec);
        auto [q, r] = linalg::qr(a);
        return std::vector<Array>{q, r};
      },
      2000 * 16 * 8);
  EXPECT_GE(qr_h.tasks, 10);
}

TEST(LinalgExtensionTest, BadArguments) {
  Array v = zeros({4}), m = zeros({3, 4}), sq = zeros({3, 3});
  auto expect = [](const Array& a, const std::string& text) {
    ASSERT_FALSE(a.ok()) << text;
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(a.status().message().find(text), std::string::npos) << a.status().ToString();
  };
  expect(linalg::inv(v), "linalg.inv: expected an array of rank >= 2");
  expect(linalg::inv(m), "linalg.inv: the last two axes must be square");
  expect(linalg::cholesky(m), "must be square");
  expect(linalg::det(zeros({3, 3}, {}, DTypeId::kComplex128)), "complex input");
  expect(linalg::inv(zeros({3, 3}, {}, DTypeId::kBool)), "got bool");
  expect(linalg::matrix_norm(sq, "3"), "linalg.matrix_norm: ord must be");
  expect(linalg::qr(sq, "full").Q, "linalg.qr: mode must be");
  expect(linalg::solve(sq, zeros({4})), "linalg.solve: b of shape");
  expect(linalg::cross(zeros({4}), zeros({4})), "must have extent 3");
  expect(linalg::outer(m, v), "linalg.outer: the inputs must be 1-D");
  expect(linalg::vector_norm(m, std::vector<int>{0, -2}), "repeated");
  expect(linalg::vector_norm(m, std::vector<int>{2}), "out of range");
  expect(linalg::solve(zeros({2, 3, 3}), zeros({4, 3, 1})), "do not broadcast");
}

}  // namespace
}  // namespace strata
