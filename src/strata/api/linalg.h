// Linear algebra on chunked arrays: matmul and tensordot, built as Cubed
// builds them (api/linalg.cc): the contracted axes' chunks are unified, one
// blockwise op computes the partial products of block pairs, and the tree
// reduction (api/reduction.h) sums them, so every task stays within
// allowed_mem however long the contracted axes are. The Array API's linalg
// extension (norms, decompositions, solve): api/linalg_extension.h.
//
//   Array gram = matmul(transpose(x), x);
//
// Errors come back as an Array in an error state (api/array.h):
// InvalidArgument for bool or scalar operands, batch axes that do not
// broadcast, contracted axes whose extents differ, and tensordot axes out
// of range, repeated, or unequal in number.
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_LINALG_H_
#define STRATA_API_LINALG_H_

#include <vector>

#include "strata/api/array.h"

namespace strata {

Array matmul(const Array& a, const Array& b);
// Contracts a's `a_axes` with b's `b_axes`; the result has a's remaining axes
// then b's.
Array tensordot(const Array& a, const Array& b, std::vector<int> a_axes, std::vector<int> b_axes);
Array tensordot(const Array& a, const Array& b, int n_axes = 2);

}  // namespace strata

#endif  // STRATA_API_LINALG_H_
