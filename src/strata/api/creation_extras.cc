// *_like, meshgrid, tril/triu and from_external (api/creation_extras.h).
#include "strata/api/creation_extras.h"

#include <fmt/format.h>

#include <cstring>

#include "strata/api/creation.h"
#include "strata/api/internal.h"
#include "strata/api/manipulation.h"

namespace strata {

using internal_api::GridFromSizes;
using internal_api::MakeBlockwise;

namespace {

// A constant array with x's shape and grid (or `chunks`).
Array ConstantLike(const Array& x, Scalar value, std::optional<DType> dtype, const Shape& chunks,
                   std::string_view op) {
  if (!x.ok()) return x;
  const DType t = dtype.value_or(x.dtype());
  Array c = full(x.shape(), value, chunks.empty() ? x.chunksize() : chunks, t, *x.spec());
  if (!c.ok()) return Array::FromStatus(c.status().WithContext(op));
  // A rectilinear x: the same virtual values on x's exact grid (nothing moves).
  if (chunks.empty() && !(c.chunks() == x.chunks())) c = internal_api::RechunkToGrid(c, x.chunks());
  return c;
}

}  // namespace

Array zeros_like(const Array& x, std::optional<DType> dtype, Shape chunks) {
  return ConstantLike(x, Scalar(0), dtype, chunks, "zeros_like");
}
Array ones_like(const Array& x, std::optional<DType> dtype, Shape chunks) {
  return ConstantLike(x, Scalar(1), dtype, chunks, "ones_like");
}
Array empty_like(const Array& x, std::optional<DType> dtype, Shape chunks) {
  return ConstantLike(x, Scalar(0), dtype, chunks, "empty_like");
}
Array full_like(const Array& x, Scalar value, std::optional<DType> dtype, Shape chunks) {
  return ConstantLike(x, value, dtype, chunks, "full_like");
}

std::vector<Array> meshgrid(const std::vector<Array>& arrays, MeshIndexing indexing) {
  auto fail = [&](Status s) { return std::vector<Array>(arrays.size(), Array::FromStatus(s)); };
  if (Status s = internal_api::FirstError(arrays); !s.ok()) return fail(s);
  const int n = static_cast<int>(arrays.size());
  for (const Array& a : arrays) {
    if (a.ndim() != 1) {
      return fail(InvalidArgumentError(
          fmt::format("meshgrid: every input must be one-dimensional (1-D), got shape {}",
                      ShapeToString(a.shape()))));
    }
    if (a.dtype() != arrays[0].dtype()) {
      return fail(InvalidArgumentError(fmt::format("meshgrid: inputs have dtypes {} and {}",
                                                   arrays[0].dtype().name(), a.dtype().name())));
    }
  }
  // The output axis of input i.
  std::vector<int> axis_of(n);
  for (int i = 0; i < n; ++i) axis_of[i] = i;
  if (indexing == MeshIndexing::kXY && n >= 2) std::swap(axis_of[0], axis_of[1]);
  Shape shape(n), chunks(n);
  for (int i = 0; i < n; ++i) {
    shape[axis_of[i]] = arrays[i].shape()[0];
    chunks[axis_of[i]] = std::max<Index>(1, arrays[i].chunksize()[0]);
  }
  std::vector<Array> out;
  for (int i = 0; i < n; ++i) {
    Array a = arrays[i];
    for (int j = 0; j < n; ++j) {
      if (j < axis_of[i]) a = expand_dims(a, 0);
      if (j > axis_of[i]) a = expand_dims(a, -1);
    }
    out.push_back(broadcast_to(a, shape, chunks));
  }
  return out;
}

namespace {

// Zeroes the elements of a C-order block at `box` (of an array whose last two
// axes are the matrix) on the dropped side of diagonal k.
void ZeroTriangle(const ArrayView& out, const Box& box, Index k, bool lower) {
  const int r = box.rank();
  const Index rows = box.shape[r - 2], cols = box.shape[r - 1];
  const Index r0 = box.origin[r - 2], c0 = box.origin[r - 1];
  const Index outer = NumElements(std::span<const Index>(box.shape.data(), r - 2));
  const int64_t item = out.dtype().size();
  std::byte* base = out.data();
  for (Index o = 0; o < outer; ++o) {
    for (Index i = 0; i < rows; ++i) {
      const Index row = r0 + i;
      // tril keeps col <= row + k; triu keeps col >= row + k.
      Index begin, end;
      if (lower) {
        begin = std::clamp<Index>(row + k + 1 - c0, 0, cols);
        end = cols;
      } else {
        begin = 0;
        end = std::clamp<Index>(row + k - c0, 0, cols);
      }
      if (end > begin) {
        std::memset(base + ((o * rows + i) * cols + begin) * item, 0, (end - begin) * item);
      }
    }
  }
}

Array Triangle(const Array& x, Index k, bool lower) {
  if (!x.ok()) return x;
  const char* op = lower ? "tril" : "triu";
  if (x.ndim() < 2) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "{}: the input must have rank >= 2, got shape {}", op, ShapeToString(x.shape()))));
  }
  const DType dtype = x.dtype();
  BlockFunction fn = [dtype, k, lower](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, dtype, r.box.shape));
    CopyArray(r.inputs[0][0].view, out.view());
    if (out.num_elements() > 0) ZeroTriangle(out.view(), r.box, k, lower);
    return out;
  };
  return MakeBlockwise(op, x.shape(), dtype, x.chunks(), {x},
                       {InputMap::IdentityMap(x.chunks().grid_shape())}, std::move(fn), 0,
                       x.spec());
}

}  // namespace

Array tril(const Array& x, Index k) { return Triangle(x, k, true); }
Array triu(const Array& x, Index k) { return Triangle(x, k, false); }

Array from_external(ExternalArray a, Shape chunks, const Spec& spec) {
  for (Index d : a.shape) {
    if (d < 0) {
      return Array::FromStatus(InvalidArgumentError(
          fmt::format("from_external: shape {} has a negative extent", ShapeToString(a.shape))));
    }
  }
  Result<Index> n = CheckedNumElements(a.shape, "from_external: shape");
  if (!n.ok()) return Array::FromStatus(n.status());
  if (a.data == nullptr && *n > 0) {
    return Array::FromStatus(
        InvalidArgumentError("from_external: null data for a non-empty array"));
  }
  const Shape dense = ContiguousStrides(a.shape, a.dtype.size());
  if (!a.byte_strides.empty() && a.byte_strides.size() != a.shape.size()) {
    return Array::FromStatus(
        InvalidArgumentError(fmt::format("from_external: {} strides for an array of rank {}",
                                         a.byte_strides.size(), a.shape.size())));
  }
  auto* data = static_cast<std::byte*>(const_cast<void*>(a.data));
  auto owner = std::const_pointer_cast<void>(a.owner);
  if (a.byte_strides.empty() || a.byte_strides == dense || *n <= 1) {
    // Viewed in place: every task reads a slice of it, nothing is copied.
    auto nd = std::make_shared<const NDArray>(NDArray::FromBuffer(
        Buffer::External(data, *n * a.dtype.size(), std::move(owner)), a.dtype, a.shape));
    return asarray(std::move(nd), std::move(chunks), spec);
  }
  Result<ChunkGrid> grid = internal_api::GridFor(a.shape, chunks, a.dtype, spec, "from_external");
  if (!grid.ok()) return Array::FromStatus(grid.status());
  auto keep = std::make_shared<ExternalArray>(std::move(a));
  return internal_api::MakeVirtual(
      "from_external", keep->shape, *grid, keep->dtype, internal_api::MakeSpec(spec),
      [keep](const Box& box, const ArrayView& out) {
        ConstArrayView all(static_cast<const std::byte*>(keep->data), keep->dtype, keep->shape,
                           keep->byte_strides);
        CopyArray(all.Slice(box), out);
        return Status::Ok();
      });
}

}  // namespace strata
