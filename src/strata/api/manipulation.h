// Manipulation: permute_dims, transpose, expand_dims, squeeze, broadcast_to,
// concat, stack, flip and reshape (the Array API's manipulation functions;
// more in api/manipulation_extras.h, rechunk in api/chunks.h).
//
//   Array by_lon = permute_dims(t2m, {2, 0, 1});
//   Array year = concat({jan_to_jun, jul_to_dec}, /*axis=*/0);
//
// Each is one blockwise op with per-axis key functions: an output block reads
// the input blocks its elements come from and nothing else. Only reshape
// may move data first: it rechunks when its blocks would not map onto whole
// blocks.
//
// Errors come back as an Array in an error state (api/array.h):
// InvalidArgument for axes out of range or repeated, a squeezed axis that is
// not 1, shapes that do not broadcast or concatenate, and a reshape to a
// different number of elements.
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_MANIPULATION_H_
#define STRATA_API_MANIPULATION_H_

#include <vector>

#include "strata/api/array.h"

namespace strata {

Array permute_dims(const Array& x, std::vector<int> axes);
Array transpose(const Array& x);  // reverses the axes
Array expand_dims(const Array& x, int axis);
Array squeeze(const Array& x, std::vector<int> axes = {});
Array broadcast_to(const Array& x, Shape shape, Shape chunks = {});
Array concat(const std::vector<Array>& arrays, int axis = 0);
Array stack(const std::vector<Array>& arrays, int axis = 0);
Array flip(const Array& x, std::vector<int> axes = {});
Array reshape(const Array& x, Shape shape);

}  // namespace strata

#endif  // STRATA_API_MANIPULATION_H_
