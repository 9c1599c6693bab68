// The Array API's linear-algebra extension (2021.12: `strata.linalg` in
// Python), over arrays larger than memory.
//
// Two kinds of op:
//   - Chunked, built from the ops Strata already has, so that any matrix size
//     works under allowed_mem: cross (elementwise along `axis`), diagonal (a
//     blockwise gather of the diagonal's blocks), trace (diagonal + sum),
//     outer (a tensordot without contracted axes), vector_norm and
//     matrix_norm for 'fro', 1, -1, inf, -inf (elementwise + tree
//     reductions), matrix_power (repeated squaring with matmul; negative
//     powers of inv), and qr / svd(full_matrices=false) / svdvals of a
//     tall-and-skinny matrix by TSQR (Demmel et al., as Dask and Cubed do it:
//     row blocks with the whole of the last axis, one QR per block, a QR of
//     the stacked R factors, one product per block for Q).
//   - Whole-matrix decompositions (cholesky, det, eigh, eigvalsh, inv, pinv,
//     matrix_rank, slogdet, solve, and qr / svd / svdvals otherwise): the last
//     two (core) axes are rechunked into one chunk, the leading (batch) axes
//     chunked so that a task fits allowed_mem, and each matrix goes to LAPACK
//     (core/kernels/lapack.h). When one matrix with the copies and workspace
//     its task needs does not fit, the op is refused when it is built
//     (InvalidArgument naming the op, the matrix and the budget).
//
// Dtypes: float32 and float64 (float32 is computed in float64 and rounded,
// at least as accurate as LAPACK's float32 routines); integers are promoted
// to float64 as numpy does; bool and complex are refused (InvalidArgument:
// LAPACK's complex routines are not wired in). The chunked ops (cross,
// diagonal, trace, outer, norms' reductions) take every numeric dtype.
//
// A matrix the algorithm cannot handle (singular for inv / solve /
// matrix_power with n < 0, not positive definite for cholesky) fails the
// compute with FailedPrecondition whose message starts "linalg.<op>:"
// (Python: strata.linalg.LinAlgError, numpy's name).
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_LINALG_EXTENSION_H_
#define STRATA_API_LINALG_EXTENSION_H_

#include <optional>
#include <string_view>
#include <vector>

#include "strata/api/array.h"

namespace strata::linalg {

// ------------------------------------------------------------ chunked ops

// The cross product of 3-vectors along `axis` of the broadcast inputs (the
// axis must have extent 3 in both, and is not broadcast).
Array cross(const Array& a, const Array& b, int axis = -1);
// The `offset`-th diagonal of the last two axes (above the main one when
// positive): shape (..., k).
Array diagonal(const Array& x, Index offset = 0);
// sum(diagonal(x, offset), axis=-1), in `dtype` when given (sum's dtype rule
// otherwise).
Array trace(const Array& x, Index offset = 0, std::optional<DType> dtype = std::nullopt);
// a[i] * b[j] for 1-D a and b.
Array outer(const Array& a, const Array& b);
// The `ord`-norm over `axes` (nullopt: all axes; empty: none, elementwise):
// 2 (default), 1, inf, -inf, 0 (the count of non-zeros), or any other p
// (sum(|x|^p)^(1/p)).
Array vector_norm(const Array& x, std::optional<std::vector<int>> axes = std::nullopt,
                  bool keepdims = false, double ord = 2);
// The norm of each matrix of the last two axes: ord is "fro", "nuc", "1",
// "-1", "2", "-2", "inf" or "-inf" ("nuc", "2", "-2" need the singular
// values: svdvals).
Array matrix_norm(const Array& x, std::string_view ord = "fro", bool keepdims = false);
// x @ x @ ... (n times), by repeated squaring; n == 0 gives identities,
// n < 0 powers of inv(x).
Array matrix_power(const Array& x, int64_t n);

// ----------------------------------------------------- whole-matrix ops

Array cholesky(const Array& x, bool upper = false);
Array det(const Array& x);
struct EighResult {
  Array eigenvalues, eigenvectors;
};
EighResult eigh(const Array& x);
Array eigvalsh(const Array& x);
Array inv(const Array& x);
// Singular values at most rtol * the largest count as zero; rtol default
// max(M, N) * eps of the result dtype.
Array pinv(const Array& x, std::optional<double> rtol = std::nullopt);
// rtol per matrix: an array broadcast against x's batch axes.
Array pinv(const Array& x, const Array& rtol);
// int64 counts of singular values over rtol * the largest.
Array matrix_rank(const Array& x, std::optional<double> rtol = std::nullopt);
Array matrix_rank(const Array& x, const Array& rtol);
struct QrResult {
  Array Q, R;
};
// mode "reduced" or "complete".
QrResult qr(const Array& x, std::string_view mode = "reduced");
struct SlogdetResult {
  Array sign, logabsdet;
};
SlogdetResult slogdet(const Array& x);
// x with a @ x = b. b of shape (M,) is one vector for every matrix of a;
// otherwise (..., M, K) with batch axes broadcast against a's.
Array solve(const Array& a, const Array& b);
struct SvdResult {
  Array U, S, Vh;
};
SvdResult svd(const Array& x, bool full_matrices = true);
Array svdvals(const Array& x);

}  // namespace strata::linalg

#endif  // STRATA_API_LINALG_EXTENSION_H_
