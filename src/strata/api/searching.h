// searchsorted and isin: elementwise lookups in a (small) second array.
//
// The second array (searchsorted's sorted x1, isin's test elements, sorted
// first) is made one chunk and read whole by every task beside one block of
// the array being looked up, so the planner counts it in every task's memory
// and refuses it, naming the op, when it does not fit in allowed_mem.
// Comparisons happen in the two arrays' promoted dtype; NaN sorts last
// (numpy's order) and is never "in" anything.
//
// Thread-safety: pure functions of immutable Array values.
#ifndef STRATA_API_SEARCHING_H_
#define STRATA_API_SEARCHING_H_

#include <optional>

#include "strata/api/array.h"

namespace strata {

enum class SearchSide { kLeft, kRight };

// For each element of x2, the index in 1-d x1 (sorted ascending, or sorted by
// `sorter`'s indices) where it would be inserted to keep x1 sorted: the first
// such place (kLeft) or the last (kRight). int64, x2's shape and chunks.
Array searchsorted(const Array& x1, const Array& x2, SearchSide side = SearchSide::kLeft,
                   std::optional<Array> sorter = std::nullopt);

// True where an element of x is equal to some element of test_elements (any
// shape); with `invert`, where it is not. bool, x's shape and chunks.
Array isin(const Array& x, const Array& test_elements, bool invert = false);

}  // namespace strata

#endif  // STRATA_API_SEARCHING_H_
