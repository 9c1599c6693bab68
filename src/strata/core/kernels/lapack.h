// Dense matrix decompositions of one matrix, over Debian's reference LAPACK:
// the per-matrix work of the strata::linalg ops that need a whole matrix in
// one task (cholesky, det, eigh, inv, pinv, qr, solve, svd, ...).
//
// Every matrix here is float64, row-major and contiguous (the API layer casts
// float32 blocks into such a copy, one matrix at a time). LAPACK is
// column-major, so each function says which copy it makes; all scratch
// (copies, pivots, LAPACK workspace) is allocated from the caller's pool, and
// `...ScratchBytes` gives the most a call allocates, so that the op's memory
// projection is an upper bound of what a task measures.
//
// Errors: FailedPrecondition for a matrix the algorithm cannot handle (a
// singular matrix for Inverse/Solve, one that is not positive definite for
// Cholesky, an SVD or eigensolver that did not converge), with `op` leading
// the message; ResourceExhausted from the pool.
//
// Thread-safety: pure functions (reference LAPACK keeps no state).
#ifndef STRATA_CORE_KERNELS_LAPACK_H_
#define STRATA_CORE_KERNELS_LAPACK_H_

#include <string_view>

#include "strata/base/status.h"
#include "strata/core/memory_pool.h"
#include "strata/core/ndarray.h"

namespace strata::lapack {

// out = L (lower, a = L Lᵀ) or, when `upper`, U = Lᵀ (a = Uᵀ U), reading only
// the lower triangle of the symmetric a (n x n), as numpy does. `out` may be `a`.
Status Cholesky(std::string_view op, const double* a, Index n, bool upper, double* out,
                MemoryPool& pool);
int64_t CholeskyScratchBytes(Index n);

// sign and log|det| of a (n x n) by LU; a singular matrix gives sign 0 and
// log|det| -inf (numpy's). `det` (when not null) gets the product of U's
// diagonal with the pivots' sign, as numpy's det computes it.
Status SlogDet(const double* a, Index n, double* sign, double* logabsdet, double* det,
               MemoryPool& pool);
int64_t SlogDetScratchBytes(Index n);

// out = a⁻¹ (n x n). FailedPrecondition "singular matrix".
Status Inverse(std::string_view op, const double* a, Index n, double* out, MemoryPool& pool);
int64_t InverseScratchBytes(Index n);

// x (n x k) with a x = b, b (n x k). FailedPrecondition "singular matrix".
Status Solve(std::string_view op, const double* a, const double* b, Index n, Index k, double* x,
             MemoryPool& pool);
int64_t SolveScratchBytes(Index n, Index k);

// Eigenvalues w (n, ascending) and, when `v` is not null, eigenvectors v
// (n x n, column j for w[j]) of the symmetric a, from its lower triangle.
Status SymmetricEigen(std::string_view op, const double* a, Index n, double* w, double* v,
                      MemoryPool& pool);
int64_t SymmetricEigenScratchBytes(Index n, bool vectors);

// a (m x n) = u diag(s) vh, s descending (k = min(m, n) values). With
// `vectors`: u (m x m, or m x k when !full) and vh (n x n, or k x n);
// without, u and vh are not touched (may be null).
Status Svd(std::string_view op, const double* a, Index m, Index n, bool vectors, bool full,
           double* u, double* s, double* vh, MemoryPool& pool);
int64_t SvdScratchBytes(Index m, Index n, bool vectors, bool full);

// a (m x n) = q r by Householder reflections: q (m x m when `complete`, else
// m x k) with orthonormal columns, r (m x n, or k x n) upper triangular.
// k = min(m, n). `q` may be null (only r is wanted).
Status Qr(std::string_view op, const double* a, Index m, Index n, bool complete, double* q,
          double* r, MemoryPool& pool);
int64_t QrScratchBytes(Index m, Index n, bool complete);

}  // namespace strata::lapack

#endif  // STRATA_CORE_KERNELS_LAPACK_H_
