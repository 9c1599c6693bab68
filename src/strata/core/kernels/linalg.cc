#include "strata/core/kernels/linalg.h"

#include <fmt/format.h>

#include <algorithm>

#include "strata/core/dtype_dispatch.h"
#include "strata/core/kernels/elementwise_internal.h"

namespace strata {
namespace {

using internal_kernels::kIsInt;
using internal_kernels::kVectorBlock;
using internal_kernels::Load;
using internal_kernels::WrapT;

// Panel of b packed per (k-block, n-block): kKc x kNc elements, at most
// 128 x 256 x 16 bytes = 512 KiB, which stays in a 1 MiB L2 while every row
// pair of a streams over it.
constexpr Index kKc = 128;
constexpr Index kNc = 256;

// Integers accumulate in an unsigned type so that overflow wraps.
template <typename T, bool kInt = kIsInt<T>>
struct Acc {
  using type = T;
};
template <typename T>
struct Acc<T, true> {
  using type = WrapT<T>;
};
template <typename T>
using AccT = typename Acc<T>::type;

// c0 += a[0][0..3] . b[0..3], c1 += a[1][0..3] . b[0..3] over n columns:
// each loaded element of b feeds two rows, each loaded c takes four products.
// (The inner loop counts from 0 to a constant so that GCC -O2 vectorises it.)
template <typename T>
void Update2x4(const AccT<T> (&alpha)[2][4], const T* __restrict b0, const T* __restrict b1,
               const T* __restrict b2, const T* __restrict b3, T* __restrict c0, T* __restrict c1,
               Index n) {
  using A = AccT<T>;
  const A a00 = alpha[0][0], a01 = alpha[0][1], a02 = alpha[0][2], a03 = alpha[0][3];
  const A a10 = alpha[1][0], a11 = alpha[1][1], a12 = alpha[1][2], a13 = alpha[1][3];
  Index j = 0;
  for (; j + kVectorBlock <= n; j += kVectorBlock) {
    for (Index q = 0; q < kVectorBlock; ++q) {
      const A x0 = A(b0[j + q]), x1 = A(b1[j + q]), x2 = A(b2[j + q]), x3 = A(b3[j + q]);
      c0[j + q] = T(A(c0[j + q]) + a00 * x0 + a01 * x1 + a02 * x2 + a03 * x3);
      c1[j + q] = T(A(c1[j + q]) + a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3);
    }
  }
  for (; j < n; ++j) {
    const A x0 = A(b0[j]), x1 = A(b1[j]), x2 = A(b2[j]), x3 = A(b3[j]);
    c0[j] = T(A(c0[j]) + a00 * x0 + a01 * x1 + a02 * x2 + a03 * x3);
    c1[j] = T(A(c1[j]) + a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3);
  }
}

// c += alpha * b over n columns (the edges of the blocking).
template <typename T>
void Update1x1(AccT<T> alpha, const T* __restrict b, T* __restrict c, Index n) {
  using A = AccT<T>;
  Index j = 0;
  for (; j + kVectorBlock <= n; j += kVectorBlock) {
    for (Index q = 0; q < kVectorBlock; ++q) c[j + q] = T(A(c[j + q]) + alpha * A(b[j + q]));
  }
  for (; j < n; ++j) c[j] = T(A(c[j]) + alpha * A(b[j]));
}

// out (contiguous rows, aligned) += a @ b.
template <typename T>
Status MatMulTyped(const ConstArrayView& a, const ConstArrayView& b, T* out, Index out_row) {
  using A = AccT<T>;
  const Index m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  const Index a_s0 = a.byte_strides()[0], a_s1 = a.byte_strides()[1];
  const Index b_s0 = b.byte_strides()[0], b_s1 = b.byte_strides()[1];
  const Index panel_k = std::min(k, kKc), panel_n = std::min(n, kNc);
  STRATA_ASSIGN_OR_RETURN(Buffer panel_buffer,
                          MemoryPool::Default()->Allocate(panel_k * panel_n * Index{sizeof(T)}));
  T* panel = reinterpret_cast<T*>(panel_buffer.data());
  auto a_at = [&](Index i, Index p) { return A(Load<T>(a.data() + i * a_s0 + p * a_s1)); };

  for (Index jc = 0; jc < n; jc += kNc) {
    const Index nb = std::min(kNc, n - jc);
    for (Index pc = 0; pc < k; pc += kKc) {
      const Index kb = std::min(kKc, k - pc);
      for (Index p = 0; p < kb; ++p) {
        const std::byte* src = b.data() + (pc + p) * b_s0 + jc * b_s1;
        T* dst = panel + p * nb;
        if (b_s1 == Index{sizeof(T)}) {
          std::memcpy(dst, src, nb * sizeof(T));
        } else {
          for (Index j = 0; j < nb; ++j) dst[j] = Load<T>(src + j * b_s1);
        }
      }
      Index i = 0;
      for (; i + 2 <= m; i += 2) {
        T* c0 = out + i * out_row + jc;
        T* c1 = c0 + out_row;
        Index p = 0;
        for (; p + 4 <= kb; p += 4) {
          A alpha[2][4];
          for (int r = 0; r < 2; ++r) {
            for (int q = 0; q < 4; ++q) alpha[r][q] = a_at(i + r, pc + p + q);
          }
          const T* bp = panel + p * nb;
          Update2x4<T>(alpha, bp, bp + nb, bp + 2 * nb, bp + 3 * nb, c0, c1, nb);
        }
        for (; p < kb; ++p) {
          Update1x1<T>(a_at(i, pc + p), panel + p * nb, c0, nb);
          Update1x1<T>(a_at(i + 1, pc + p), panel + p * nb, c1, nb);
        }
      }
      for (; i < m; ++i) {
        T* c = out + i * out_row + jc;
        for (Index p = 0; p < kb; ++p) Update1x1<T>(a_at(i, pc + p), panel + p * nb, c, nb);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status MatMulAccumulate(const ConstArrayView& a, const ConstArrayView& b, const ArrayView& out) {
  STRATA_CHECK(a.rank() == 2 && b.rank() == 2 && out.rank() == 2)
      << "matmul of ranks " << a.rank() << ", " << b.rank() << " into " << out.rank();
  STRATA_CHECK(a.dtype() == b.dtype() && a.dtype() == out.dtype())
      << "matmul of " << a.dtype().name() << " and " << b.dtype().name() << " into "
      << out.dtype().name();
  STRATA_CHECK(a.shape()[1] == b.shape()[0] && out.shape()[0] == a.shape()[0] &&
               out.shape()[1] == b.shape()[1])
      << "matmul of " << ShapeToString(a.shape()) << " and " << ShapeToString(b.shape()) << " into "
      << ShapeToString(out.shape());
  if (a.dtype().is_bool()) return InvalidArgumentError("matmul does not support bool");
  if (out.num_elements() == 0 || a.shape()[1] == 0) return Status::Ok();

  return VisitDType(out.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return Status::Ok();  // rejected above
    } else {
      const Index n = out.shape()[1];
      const bool rows_contiguous = (out.byte_strides()[1] == Index{sizeof(T)} || n == 1) &&
                                   out.byte_strides()[0] % Index{sizeof(T)} == 0 &&
                                   out.byte_strides()[0] >= n * Index{sizeof(T)} &&
                                   internal_kernels::IsAligned<T>(out.data());
      if (rows_contiguous) {
        return MatMulTyped<T>(a, b, reinterpret_cast<T*>(out.data()),
                              out.byte_strides()[0] / Index{sizeof(T)});
      }
      STRATA_ASSIGN_OR_RETURN(NDArray tmp, NDArray::CopyOf(*MemoryPool::Default(), out));
      STRATA_RETURN_IF_ERROR(MatMulTyped<T>(a, b, tmp.data_as<T>(), n));
      CopyArray(tmp.view(), out);
      return Status::Ok();
    }
  });
}

}  // namespace strata
