// The matrix (or vector) at one batch index of a batched view: the view's
// leading axes are the batch axes, an extent-1 batch axis broadcasts.
//
//   // x: (batch..., m, n); idx: one index per batch axis
//   ConstArrayView a = internal_api::BatchElement(x, idx);  // (m, n)
//
// Used by the batched linear algebra (linalg.cc, linalg_extension.cc).
#ifndef STRATA_API_BATCH_ELEMENT_H_
#define STRATA_API_BATCH_ELEMENT_H_

#include <utility>

#include "strata/core/ndarray.h"

namespace strata::internal_api {

inline ConstArrayView BatchElement(const ConstArrayView& v, const Shape& idx) {
  const int nb = static_cast<int>(idx.size());
  const std::byte* p = v.data();
  for (int i = 0; i < nb; ++i) {
    if (v.shape()[i] != 1) p += idx[i] * v.byte_strides()[i];
  }
  Shape shape(v.shape().begin() + nb, v.shape().end());
  Shape strides(v.byte_strides().begin() + nb, v.byte_strides().end());
  return ConstArrayView(p, v.dtype(), std::move(shape), std::move(strides));
}

}  // namespace strata::internal_api

#endif  // STRATA_API_BATCH_ELEMENT_H_
