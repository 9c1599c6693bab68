// The Array API's set functions: unique_values, unique_counts,
// unique_inverse, unique_all.
//
// The number of unique values is the output's shape, so these compute
// eagerly (as Dask does for unknown chunks): one pass counts the distinct
// values of every block, a second returns each block's sorted distinct values
// with their counts and first positions, and the host merges them. The unique
// values (and the per-block ones) must fit in memory beside the running tasks
// (compute() refuses results larger than total_system_mem allows, naming
// them). The returned values, counts and indices are in-memory arrays;
// inverse_indices is lazy (a lookup in the values per block of x).
//
// As the standard says (and numpy 2 with equal_nan=False): every NaN is a
// distinct value, sorted after the numbers in the order they occur. indices
// are flat C-order positions of first occurrences; inverse_indices has x's
// shape. Bool and real dtypes; complex is refused.
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_SET_FUNCTIONS_H_
#define STRATA_API_SET_FUNCTIONS_H_

#include "strata/api/array.h"

namespace strata {

struct UniqueCounts {
  Array values;
  Array counts;  // int64
};
struct UniqueInverse {
  Array values;
  Array inverse_indices;  // int64, x's shape
};
struct UniqueAll {
  Array values;
  Array indices;          // int64: first occurrence, flat
  Array inverse_indices;  // int64, x's shape
  Array counts;           // int64
};

// Sorted unique values (1-d). On error every field is an error array.
Array unique_values(const Array& x);
UniqueCounts unique_counts(const Array& x);
UniqueInverse unique_inverse(const Array& x);
UniqueAll unique_all(const Array& x);

}  // namespace strata

#endif  // STRATA_API_SET_FUNCTIONS_H_
