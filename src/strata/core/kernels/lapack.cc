// core/kernels/lapack.h over the Fortran LAPACK interface (liblapack3:
// 32-bit integers, column-major, hidden string lengths after the arguments).
//
// A row-major n x m buffer read column-major is the transpose, which several
// functions use instead of copying: the LU of aᵀ has a's determinant, the
// inverse of aᵀ is (a⁻¹)ᵀ, and the SVD of aᵀ = U' S V'ᵀ gives a = V' S U'ᵀ,
// so LAPACK's U' (column-major) is a's vh row-major and its V'ᵀ is a's u.
#include "strata/core/kernels/lapack.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

extern "C" {
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void dgetri_(const int* n, double* a, const int* lda, const int* ipiv, double* work,
             const int* lwork, int* info);
void dgesv_(const int* n, const int* nrhs, double* a, const int* lda, int* ipiv, double* b,
            const int* ldb, int* info);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda,
             double* w, double* work, const int* lwork, int* iwork, const int* liwork, int* info,
             size_t, size_t);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s,
             double* u, const int* ldu, double* vt, const int* ldvt, double* work,
             const int* lwork, int* iwork, int* info, size_t);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda,
             const double* tau, double* work, const int* lwork, int* info);
}

namespace strata::lapack {
namespace {

// LAPACK's blocked routines want about this many columns of workspace per
// row; more only changes speed, so workspace is capped here (and the cap is
// what the projection counts).
constexpr Index kBlock = 64;

// Typed scratch from the pool.
template <typename T>
struct Scratch {
  Buffer buffer;
  T* get() { return reinterpret_cast<T*>(buffer.data()); }
};

template <typename T>
Result<Scratch<T>> Take(MemoryPool& pool, Index count) {
  STRATA_ASSIGN_OR_RETURN(Buffer b, pool.Allocate(std::max<Index>(count, 1) * sizeof(T)));
  return Scratch<T>{std::move(b)};
}

template <typename T>
constexpr int64_t Bytes(Index count) {
  return std::max<Index>(count, 1) * static_cast<int64_t>(sizeof(T));
}

Status CheckSize(std::string_view op, Index m, Index n) {
  constexpr Index kMax = std::numeric_limits<int>::max();
  if (m > kMax || n > kMax || (m > 0 && n > kMax / m)) {
    return InvalidArgumentError(
        fmt::format("{}: a {}x{} matrix is too large for LAPACK's 32-bit indices", op, m, n));
  }
  return Status::Ok();
}

// The workspace to use: LAPACK's optimum from a query, at least `minimum`,
// at most `cap`.
int WorkSize(double query, Index minimum, Index cap) {
  Index q = static_cast<Index>(query);
  return static_cast<int>(std::max(minimum, std::min(q, cap)));
}

void Transpose(const double* in, Index rows, Index cols, double* out) {
  for (Index i = 0; i < rows; ++i) {
    for (Index j = 0; j < cols; ++j) out[j * rows + i] = in[i * cols + j];
  }
}

Status Failed(std::string_view op, std::string_view what) {
  return FailedPreconditionError(fmt::format("{}: {}", op, what));
}

Index GetriCap(Index n) { return std::max<Index>(1, n * kBlock); }

Index SyevdMinimum(Index n, bool vectors) { return vectors ? 1 + 6 * n + 2 * n * n : 2 * n + 1; }
Index SyevdIntMinimum(Index n, bool vectors) { return vectors ? 3 + 5 * n : 1; }

Index GesddMinimum(Index m, Index n, bool vectors, bool full) {
  const Index mn = std::min(m, n), mx = std::max(m, n);
  if (!vectors) return 3 * mn + std::max(mx, 7 * mn);
  return full ? 4 * mn * mn + 6 * mn + mx : 4 * mn * mn + 7 * mn;
}
Index GesddCap(Index m, Index n, bool vectors, bool full) {
  return GesddMinimum(m, n, vectors, full) + kBlock * (m + n);
}

Index QrCap(Index m, Index n) { return std::max<Index>(1, std::max(m, n) * kBlock); }

}  // namespace

Status Cholesky(std::string_view op, const double* a, Index n, bool upper, double* out,
                MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(CheckSize(op, n, n));
  if (out != a) std::memcpy(out, a, n * n * sizeof(double));
  if (n == 0) return Status::Ok();
  // Column-major, out is aᵀ = a; its upper triangle is a's lower one, and
  // potrf('U') leaves U with aᵀ = Uᵀ U, which read row-major is L = Uᵀ.
  const int ni = static_cast<int>(n);
  int info = 0;
  dpotrf_("U", &ni, out, &ni, &info, 1);
  if (info > 0) {
    return Failed(op, fmt::format("the matrix is not positive definite (leading minor {} is not)",
                                  info));
  }
  if (info < 0) return InternalError(fmt::format("{}: dpotrf argument {} is invalid", op, -info));
  for (Index i = 0; i < n; ++i) {
    for (Index j = i + 1; j < n; ++j) out[i * n + j] = 0;
  }
  if (upper) {
    for (Index i = 0; i < n; ++i) {
      for (Index j = i + 1; j < n; ++j) std::swap(out[i * n + j], out[j * n + i]);
    }
  }
  return Status::Ok();
}

int64_t CholeskyScratchBytes(Index) { return 0; }

Status SlogDet(const double* a, Index n, double* sign, double* logabsdet, double* det,
               MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(CheckSize("slogdet", n, n));
  if (n == 0) {
    *sign = 1;
    *logabsdet = 0;
    if (det) *det = 1;
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(Scratch<double> lu, Take<double>(pool, n * n));
  STRATA_ASSIGN_OR_RETURN(Scratch<int> ipiv, Take<int>(pool, n));
  std::memcpy(lu.get(), a, n * n * sizeof(double));
  const int ni = static_cast<int>(n);
  int info = 0;
  dgetrf_(&ni, &ni, lu.get(), &ni, ipiv.get(), &info);
  if (info < 0) return InternalError(fmt::format("slogdet: dgetrf argument {} is invalid", -info));
  double s = 1, log_abs = 0, product = 1;
  for (Index i = 0; i < n; ++i) {
    const double d = lu.get()[i * n + i];
    if (ipiv.get()[i] != i + 1) s = -s;
    product *= d;
    if (d < 0) s = -s;
    log_abs += std::log(std::abs(d));
  }
  if (info > 0) {
    *sign = 0;
    *logabsdet = -std::numeric_limits<double>::infinity();
  } else {
    *sign = s;
    *logabsdet = log_abs;
  }
  if (det) {
    double parity = 1;
    for (Index i = 0; i < n; ++i) {
      if (ipiv.get()[i] != i + 1) parity = -parity;
    }
    *det = parity * product;
  }
  return Status::Ok();
}

int64_t SlogDetScratchBytes(Index n) { return Bytes<double>(n * n) + Bytes<int>(n); }

Status Inverse(std::string_view op, const double* a, Index n, double* out, MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(CheckSize(op, n, n));
  if (n == 0) return Status::Ok();
  if (out != a) std::memcpy(out, a, n * n * sizeof(double));
  STRATA_ASSIGN_OR_RETURN(Scratch<int> ipiv, Take<int>(pool, n));
  const int ni = static_cast<int>(n);
  int info = 0;
  dgetrf_(&ni, &ni, out, &ni, ipiv.get(), &info);
  if (info > 0) return Failed(op, "singular matrix");
  if (info < 0) return InternalError(fmt::format("{}: dgetrf argument {} is invalid", op, -info));
  double query = 0;
  int lwork = -1;
  dgetri_(&ni, out, &ni, ipiv.get(), &query, &lwork, &info);
  lwork = WorkSize(query, n, GetriCap(n));
  STRATA_ASSIGN_OR_RETURN(Scratch<double> work, Take<double>(pool, lwork));
  dgetri_(&ni, out, &ni, ipiv.get(), work.get(), &lwork, &info);
  if (info > 0) return Failed(op, "singular matrix");
  if (info < 0) return InternalError(fmt::format("{}: dgetri argument {} is invalid", op, -info));
  return Status::Ok();
}

int64_t InverseScratchBytes(Index n) { return Bytes<int>(n) + Bytes<double>(GetriCap(n)); }

Status Solve(std::string_view op, const double* a, const double* b, Index n, Index k, double* x,
             MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(CheckSize(op, n, std::max(n, k)));
  if (n == 0 || k == 0) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(Scratch<double> ca, Take<double>(pool, n * n));
  STRATA_ASSIGN_OR_RETURN(Scratch<double> cb, Take<double>(pool, n * k));
  STRATA_ASSIGN_OR_RETURN(Scratch<int> ipiv, Take<int>(pool, n));
  Transpose(a, n, n, ca.get());
  Transpose(b, n, k, cb.get());
  const int ni = static_cast<int>(n), ki = static_cast<int>(k);
  int info = 0;
  dgesv_(&ni, &ki, ca.get(), &ni, ipiv.get(), cb.get(), &ni, &info);
  if (info > 0) return Failed(op, "singular matrix");
  if (info < 0) return InternalError(fmt::format("{}: dgesv argument {} is invalid", op, -info));
  Transpose(cb.get(), k, n, x);
  return Status::Ok();
}

int64_t SolveScratchBytes(Index n, Index k) {
  return Bytes<double>(n * n) + Bytes<double>(n * k) + Bytes<int>(n);
}

Status SymmetricEigen(std::string_view op, const double* a, Index n, double* w, double* v,
                      MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(CheckSize(op, n, n));
  if (n == 0) return Status::Ok();
  const bool vectors = v != nullptr;
  STRATA_ASSIGN_OR_RETURN(Scratch<double> ca, Take<double>(pool, n * n));
  // Column-major a is aᵀ = a, whose upper triangle is a's lower one.
  std::memcpy(ca.get(), a, n * n * sizeof(double));
  const int ni = static_cast<int>(n);
  const char* jobz = vectors ? "V" : "N";
  int info = 0, lwork = -1, liwork = -1, iquery = 0;
  double query = 0;
  dsyevd_(jobz, "U", &ni, ca.get(), &ni, w, &query, &lwork, &iquery, &liwork, &info, 1, 1);
  lwork = WorkSize(query, SyevdMinimum(n, vectors), SyevdMinimum(n, vectors));
  liwork = static_cast<int>(SyevdIntMinimum(n, vectors));
  STRATA_ASSIGN_OR_RETURN(Scratch<double> work, Take<double>(pool, lwork));
  STRATA_ASSIGN_OR_RETURN(Scratch<int> iwork, Take<int>(pool, liwork));
  dsyevd_(jobz, "U", &ni, ca.get(), &ni, w, work.get(), &lwork, iwork.get(), &liwork, &info, 1,
          1);
  if (info > 0) return Failed(op, "the eigenvalue algorithm did not converge");
  if (info < 0) return InternalError(fmt::format("{}: dsyevd argument {} is invalid", op, -info));
  // Column-major eigenvectors: v[i, j] = ca[i + j n].
  if (vectors) Transpose(ca.get(), n, n, v);
  return Status::Ok();
}

int64_t SymmetricEigenScratchBytes(Index n, bool vectors) {
  return Bytes<double>(n * n) + Bytes<double>(SyevdMinimum(n, vectors)) +
         Bytes<int>(SyevdIntMinimum(n, vectors));
}

Status Svd(std::string_view op, const double* a, Index m, Index n, bool vectors, bool full,
           double* u, double* s, double* vh, MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(CheckSize(op, m, n));
  const Index k = std::min(m, n);
  if (vectors && full) {
    // Empty factors of a matrix with no elements: identities.
    if (k == 0) {
      for (Index i = 0; i < m * m; ++i) u[i] = i % (m + 1) == 0;
      for (Index i = 0; i < n * n; ++i) vh[i] = i % (n + 1) == 0;
      return Status::Ok();
    }
  }
  if (k == 0) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(Scratch<double> ca, Take<double>(pool, m * n));
  std::memcpy(ca.get(), a, m * n * sizeof(double));
  // LAPACK sees aᵀ: n x m with leading dimension n.
  const int mi = static_cast<int>(n), ni = static_cast<int>(m);
  const char* jobz = !vectors ? "N" : full ? "A" : "S";
  // U' (mi x ucols) goes to vh, V'ᵀ (vrows x ni) goes to u.
  const int ldu = mi;
  const int ldvt = !vectors ? 1 : full ? ni : static_cast<int>(k);
  double dummy = 0;
  double* uptr = vectors ? vh : &dummy;
  double* vtptr = vectors ? u : &dummy;
  STRATA_ASSIGN_OR_RETURN(Scratch<int> iwork, Take<int>(pool, 8 * k));
  int info = 0, lwork = -1;
  double query = 0;
  dgesdd_(jobz, &mi, &ni, ca.get(), &mi, s, uptr, &ldu, vtptr, &ldvt, &query, &lwork,
          iwork.get(), &info, 1);
  lwork = WorkSize(query, GesddMinimum(m, n, vectors, full), GesddCap(m, n, vectors, full));
  STRATA_ASSIGN_OR_RETURN(Scratch<double> work, Take<double>(pool, lwork));
  dgesdd_(jobz, &mi, &ni, ca.get(), &mi, s, uptr, &ldu, vtptr, &ldvt, work.get(), &lwork,
          iwork.get(), &info, 1);
  if (info > 0) return Failed(op, "SVD did not converge");
  if (info < 0) return InternalError(fmt::format("{}: dgesdd argument {} is invalid", op, -info));
  return Status::Ok();
}

int64_t SvdScratchBytes(Index m, Index n, bool vectors, bool full) {
  const Index k = std::min(m, n);
  return Bytes<double>(m * n) + Bytes<int>(8 * k) + Bytes<double>(GesddCap(m, n, vectors, full));
}

Status Qr(std::string_view op, const double* a, Index m, Index n, bool complete, double* q,
          double* r, MemoryPool& pool) {
  STRATA_RETURN_IF_ERROR(CheckSize(op, m, std::max(m, n)));
  const Index k = std::min(m, n);
  const Index qcols = complete ? m : k;
  const Index rrows = complete ? m : k;
  const Index cols = std::max(n, qcols);
  if (m == 0) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(Scratch<double> ca, Take<double>(pool, m * cols));
  STRATA_ASSIGN_OR_RETURN(Scratch<double> tau, Take<double>(pool, k));
  Transpose(a, m, n, ca.get());
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  int info = 0, lwork = -1;
  double query = 0;
  const Index cap = QrCap(m, cols);
  if (k > 0) {
    dgeqrf_(&mi, &ni, ca.get(), &mi, tau.get(), &query, &lwork, &info);
  }
  const int qci = static_cast<int>(qcols);
  double query2 = 0;
  if (q != nullptr && qcols > 0) {
    lwork = -1;
    dorgqr_(&mi, &qci, &ki, ca.get(), &mi, tau.get(), &query2, &lwork, &info);
  }
  lwork = WorkSize(std::max(query, query2), std::max<Index>(1, cols), cap);
  STRATA_ASSIGN_OR_RETURN(Scratch<double> work, Take<double>(pool, lwork));
  if (k > 0) {
    dgeqrf_(&mi, &ni, ca.get(), &mi, tau.get(), work.get(), &lwork, &info);
    if (info < 0) {
      return InternalError(fmt::format("{}: dgeqrf argument {} is invalid", op, -info));
    }
  }
  // r[i, j] = ca[i + j m] on and above the diagonal.
  for (Index i = 0; i < rrows; ++i) {
    for (Index j = 0; j < n; ++j) r[i * n + j] = j >= i ? ca.get()[i + j * m] : 0.0;
  }
  if (q == nullptr) return Status::Ok();
  if (qcols > 0) {
    dorgqr_(&mi, &qci, &ki, ca.get(), &mi, tau.get(), work.get(), &lwork, &info);
    if (info < 0) {
      return InternalError(fmt::format("{}: dorgqr argument {} is invalid", op, -info));
    }
  }
  for (Index i = 0; i < m; ++i) {
    for (Index j = 0; j < qcols; ++j) q[i * qcols + j] = ca.get()[i + j * m];
  }
  return Status::Ok();
}

int64_t QrScratchBytes(Index m, Index n, bool complete) {
  const Index k = std::min(m, n);
  const Index cols = std::max(n, complete ? m : k);
  return Bytes<double>(m * cols) + Bytes<double>(k) + Bytes<double>(QrCap(m, cols));
}

}  // namespace strata::lapack
