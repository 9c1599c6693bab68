// Creation functions of the Array API 2024.12 beyond api/creation.h's: the *_like
// family, meshgrid, tril/triu, and construction from external memory (what
// from_dlpack does for a Python caller: wrap memory someone else owns without
// copying it).
//
// Like every creation function they build lazy arrays: *_like arrays are
// virtual (computed per block, never stored) in x's shape and chunks;
// meshgrid broadcasts its 1-d inputs (each output block reads one block of
// one input); tril/triu are one blockwise op over x (identity key function,
// blocks wholly on the kept side copied, wholly on the other side zeroed).
//
// Thread-safety: pure functions of immutable values. An ExternalArray's memory
// must stay valid and unchanged while any Array built from it (or anything
// computed from one) is alive; `owner` is held until then.
#ifndef STRATA_API_CREATION_EXTRAS_H_
#define STRATA_API_CREATION_EXTRAS_H_

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "strata/api/array.h"

namespace strata {

// Arrays of x's shape and chunks (the given chunks when not empty), of x's
// dtype unless `dtype` is given. x's values are never read.
Array zeros_like(const Array& x, std::optional<DType> dtype = std::nullopt, Shape chunks = {});
Array ones_like(const Array& x, std::optional<DType> dtype = std::nullopt, Shape chunks = {});
// Uninitialised in numpy; zeros here (deterministic), as empty().
Array empty_like(const Array& x, std::optional<DType> dtype = std::nullopt, Shape chunks = {});
// x's dtype unless given; the value is converted to it as astype converts.
Array full_like(const Array& x, Scalar value, std::optional<DType> dtype = std::nullopt,
                Shape chunks = {});

enum class MeshIndexing { kXY, kIJ };
// Coordinate matrices from 1-d arrays (np.meshgrid): with n inputs of
// lengths N0..Nn-1 each output has shape (N0, ..., Nn-1) under kIJ, and the
// first two extents swapped under kXY (the default, as the standard's).
// Output i takes its chunks along its own axis from input i. All inputs must
// have one dtype (InvalidArgument otherwise, or for an input of rank != 1).
std::vector<Array> meshgrid(const std::vector<Array>& arrays,
                            MeshIndexing indexing = MeshIndexing::kXY);

// The lower (tril) or upper (triu) triangle of the last two axes: elements
// with column - row > k (tril) or < k (triu) are zero. InvalidArgument for
// rank < 2.
Array tril(const Array& x, Index k = 0);
Array triu(const Array& x, Index k = 0);

// Memory owned elsewhere, described as DLPack describes a tensor: a data
// pointer, dtype, shape and byte strides (empty: C order). `owner` keeps it
// alive (e.g. a numpy array's reference, a std::vector).
struct ExternalArray {
  const void* data = nullptr;
  DType dtype;
  Shape shape;
  Shape byte_strides;  // empty: dense C order
  std::shared_ptr<const void> owner;
};
// A lazy array over external memory, without a copy. C-order memory is
// viewed in place by every task (like asarray); strided memory (a transposed
// or sliced numpy view, negative strides included) is gathered per block.
// `chunks` empty picks automatic chunks. InvalidArgument for a null pointer
// with a non-empty shape, a negative extent or a stride/shape rank mismatch.
Array from_external(ExternalArray array, Shape chunks = {}, const Spec& spec = {});

}  // namespace strata

#endif  // STRATA_API_CREATION_EXTRAS_H_
