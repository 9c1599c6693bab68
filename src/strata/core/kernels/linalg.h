// Linear-algebra kernels on chunk blocks: the per-task work of the planner's
// matmul, where each output block is the sum over k of a[i, k] @ b[k, j]
// (accumulated one k-block at a time into the same output).
//
// Thread-safety: pure functions.
#ifndef STRATA_CORE_KERNELS_LINALG_H_
#define STRATA_CORE_KERNELS_LINALG_H_

#include "strata/base/status.h"
#include "strata/core/ndarray.h"

namespace strata {

// out += a @ b for a (m x k), b (k x n) and out (m x n), all of one numeric
// dtype (CHECKed, as are the shapes). Views may have any strides; `out` must
// not overlap `a` or `b`. Integers wrap on overflow like numpy's. Float sums
// are blocked, so results may differ from a naive loop in the last bits.
// Uses up to 512 KiB of scratch from MemoryPool::Default() (plus a copy of
// `out` when its rows are not contiguous).
// Errors: InvalidArgument for bool; ResourceExhausted from the pool.
Status MatMulAccumulate(const ConstArrayView& a, const ConstArrayView& b, const ArrayView& out);

}  // namespace strata

#endif  // STRATA_CORE_KERNELS_LINALG_H_
