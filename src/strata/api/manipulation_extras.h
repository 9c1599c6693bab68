// Manipulation functions of the Array API 2024.12 beyond api/manipulation.h's:
// broadcast_arrays, broadcast_shapes, moveaxis, matrix_transpose, repeat,
// roll, tile, unstack, and vecdot.
//
// roll, tile and repeat are one gather each (api/gather_internal.h): every
// output block reads only the input blocks its elements come from (a roll
// reads at most the two or three blocks its shifted range crosses, a tile
// repeat the block it copies), never a rechunk of the whole array.
// matrix_transpose and moveaxis are permute_dims; unstack is one getitem per
// position; vecdot is a fused multiply + sum (streamed strip by strip).
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_MANIPULATION_EXTRAS_H_
#define STRATA_API_MANIPULATION_EXTRAS_H_

#include <optional>
#include <vector>

#include "strata/api/array.h"
#include "strata/base/status.h"

namespace strata {

// The shape the shapes broadcast to (numpy's rules), or InvalidArgument.
Result<Shape> broadcast_shapes(const std::vector<Shape>& shapes);
// Every array broadcast to the common shape, all with the same chunks (taken
// per axis from the first array spanning it, as elementwise ops do).
std::vector<Array> broadcast_arrays(const std::vector<Array>& arrays);

// Moves axes `source` to positions `destination` (same length, unique),
// keeping the others in order.
Array moveaxis(const Array& x, std::vector<int> source, std::vector<int> destination);
Array moveaxis(const Array& x, int source, int destination);
// Swaps the last two axes (rank >= 2).
Array matrix_transpose(const Array& x);

// Each element repeated `repeats` times along `axis` (the flattened array
// when none). Output blocks hold at most the input's nominal chunk along the
// axis (a large repeat count splits them). InvalidArgument for a negative
// count.
Array repeat(const Array& x, Index repeats, std::optional<int> axis = std::nullopt);
// Element i repeated repeats[i] times (one count per element along `axis`).
Array repeat(const Array& x, const std::vector<Index>& repeats,
             std::optional<int> axis = std::nullopt);
// Counts given as an integer Strata array: computed first (they decide the
// output's shape), then as above.
Array repeat(const Array& x, const Array& repeats, std::optional<int> axis = std::nullopt);

// Elements shifted by shift[i] along axes[i] (wrapping around); no axes: the
// flattened array, shifted by the single shift, in x's shape.
Array roll(const Array& x, std::vector<Index> shifts, std::vector<int> axes = {});
Array roll(const Array& x, Index shift, std::optional<int> axis = std::nullopt);

// x repeated reps[i] times along each axis (numpy's tile: reps shorter than
// the rank apply to the last axes, longer adds leading axes).
Array tile(const Array& x, std::vector<Index> reps);

// The slices of x along `axis`, each of rank - 1.
std::vector<Array> unstack(const Array& x, int axis = 0);

// sum(conj(a) * b) over `axis` of the broadcast inputs (the Array API's
// vecdot); the dtype is the inputs' promoted dtype. InvalidArgument when the
// two extents along the axis differ.
Array vecdot(const Array& a, const Array& b, int axis = -1);

}  // namespace strata

#endif  // STRATA_API_MANIPULATION_EXTRAS_H_
