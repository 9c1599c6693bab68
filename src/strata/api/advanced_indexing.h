// NumPy's indexing beyond api/indexing.h's getitem (integers and slices): integer
// arrays on several axes at once with broadcasting (advanced indexing, and
// Dask's pointwise `vindex`), boolean masks, Ellipsis and newaxis; take with
// the indices given as a Strata array; and nonzero.
//
//   // 5,000 stations at (lat, lon) grid points of a (time, lat, lon) array:
//   Array series = index(t2m, {Slice{}, Indexer(ilat), Indexer(ilon)});  // (time, 5000)
//   Array wet = index(precip, {precip > 1.0});                           // 1-d, C order
//
// How they run, and what they read:
//   - Integer array indices are known when the array is built: host vectors,
//     or Strata arrays computed first (they decide which blocks are read).
//     The points are sorted by the block they fall in; one task per block
//     touched (or a few, for a block holding very many points) reads that
//     block once and copies its points; a final take puts them back in the
//     caller's order (skipped when they already are). Only the blocks the
//     points fall in are read, and never a rechunk of the source.
//   - A boolean mask over the leading axes (x[mask], or one mask with
//     integers and slices elsewhere) is counted first (one eager pass over the
//     mask: the count is the output's shape), then each row-slab of blocks
//     along axis 0 emits its selected elements in C order: no index lists on
//     the host, whatever the mask's size. Masks mixed with integer arrays are
//     turned into their nonzero() indices first.
//   - Slices, integers, Ellipsis and newaxis alone are strata::getitem.
// Results follow NumPy: advanced indices broadcast together; when they are
// adjacent their dimensions replace them in place, otherwise they come first
// (vindex always puts them first, as Dask does); an integer next to an array
// index counts as an advanced index.
//
// Errors (InvalidArgument when built): an index out of bounds ("index 12 is
// out of bounds for axis 1 with size 10"), a float index array, a mask whose
// shape does not match the axes it covers, more than one Ellipsis, too many
// indices, index arrays that do not broadcast; a failure computing an index
// array is passed on.
//
// Thread-safety: pure functions of immutable Array values (the eager steps
// run compute() with the arrays' spec).
#ifndef STRATA_API_ADVANCED_INDEXING_H_
#define STRATA_API_ADVANCED_INDEXING_H_

#include <optional>
#include <vector>

#include "strata/api/array.h"
#include "strata/api/indexing.h"

namespace strata {

struct EllipsisIndex {};
struct NewAxisIndex {};
inline constexpr EllipsisIndex ellipsis{};
inline constexpr NewAxisIndex newaxis{};

// One item of an index expression.
class Indexer {
 public:
  enum class Kind { kInteger, kSlice, kEllipsis, kNewAxis, kArray };
  Indexer(Index i) : kind_(Kind::kInteger), integer_(i) {}  // NOLINT
  Indexer(int i) : kind_(Kind::kInteger), integer_(i) {}    // NOLINT
  Indexer(Slice s) : kind_(Kind::kSlice), slice_(s) {}      // NOLINT
  Indexer(EllipsisIndex) : kind_(Kind::kEllipsis) {}        // NOLINT
  Indexer(NewAxisIndex) : kind_(Kind::kNewAxis) {}          // NOLINT
  // An integer or bool array (a mask).
  Indexer(Array a) : kind_(Kind::kArray), array_(std::move(a)) {}  // NOLINT
  // Host integer indices (a 1-d index array).
  Indexer(std::vector<Index> indices);  // NOLINT
  Indexer(IndexItem item);              // NOLINT

  Kind kind() const { return kind_; }
  Index integer() const { return integer_; }
  const Slice& slice() const { return slice_; }
  const Array& array() const { return array_; }

 private:
  Kind kind_;
  Index integer_ = 0;
  Slice slice_;
  Array array_;
};

// x[items...] with NumPy's semantics (see the file comment).
Array index(const Array& x, std::vector<Indexer> items);

// Pointwise selection (Dask's x.vindex[...]): like index(), but the
// broadcast dimensions of the array indices always come first.
Array vindex(const Array& x, std::vector<Indexer> items);

// The elements at `indices` along `axis` (x flattened when none), with the
// indices a Strata integer array (computed first): numpy's take, shape
// x.shape[:axis] + indices.shape + x.shape[axis + 1:].
Array take(const Array& x, const Array& indices, std::optional<int> axis);

// x[mask] for a bool `mask` of x's leading shape: the selected elements in C
// order (shape (count,) + x.shape[mask.ndim:]). Counts first, then slabs.
Array boolean_mask(const Array& x, const Array& mask);

// The indices of the nonzero elements, one int64 array per axis, in C order
// (counted first). InvalidArgument for rank 0.
std::vector<Array> nonzero(const Array& x);

}  // namespace strata

#endif  // STRATA_API_ADVANCED_INDEXING_H_
