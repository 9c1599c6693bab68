// api/searching.h.
#include "strata/api/searching.h"

#include <fmt/format.h>

#include <algorithm>

#include "strata/api/advanced_indexing.h"
#include "strata/api/array.h"
#include "strata/api/elementwise.h"
#include "strata/api/internal.h"
#include "strata/api/manipulation.h"
#include "strata/api/sorting.h"
#include "strata/core/dtype_dispatch.h"
#include "strata/core/kernels/elementwise.h"

namespace strata {

using internal_api::MakeBlockwise;
using internal_api::NanLastLess;

namespace {

// `lookup` (one chunk) read whole beside each block of `x`; fn(x block view,
// lookup view, out view) computes the output block of `out_dtype`.
using LookupFn =
    std::function<void(const ConstArrayView& x, const ConstArrayView& table, const ArrayView& out)>;

Array Lookup(std::string op, const Array& x, const Array& table_in, DType out_dtype, LookupFn f) {
  Array table = internal_api::RechunkToGrid(
      table_in, *ChunkGrid::Regular(table_in.shape(), {std::max<Index>(1, table_in.shape()[0])}));
  if (!table.ok()) return table;
  InputMap tmap;
  tmap.axes.push_back(table.shape()[0] == 0 ? AxisMap::Fixed({}, 0) : AxisMap::Fixed({0}, 1));
  BlockFunction fn = [f, out_dtype, empty = table.shape()[0] == 0,
                      tdt = table.dtype()](const BlockRequest& r) -> Result<NDArray> {
    STRATA_ASSIGN_OR_RETURN(NDArray out, NDArray::Allocate(*r.pool, out_dtype, r.box.shape));
    NDArray none = *NDArray::Allocate(*r.pool, tdt, {0});
    const ConstArrayView t = empty ? ConstArrayView(none.view()) : r.inputs[1][0].view;
    NDArray dense;
    ConstArrayView in = r.inputs[0][0].view;
    if (!in.is_contiguous()) {
      STRATA_ASSIGN_OR_RETURN(dense, NDArray::CopyOf(*r.pool, in));
      in = dense.view();
    }
    f(in, t, out.view());
    return out;
  };
  const int64_t copy = x.node()->kind == NodeKind::kMemorySource ? x.node()->max_block_bytes() : 0;
  return MakeBlockwise(std::move(op), x.shape(), out_dtype, x.chunks(), {x, table},
                       {InputMap::IdentityMap(x.chunks().grid_shape()), std::move(tmap)},
                       std::move(fn), copy, x.spec());
}

}  // namespace

Array searchsorted(const Array& x1_in, const Array& x2_in, SearchSide side,
                   std::optional<Array> sorter) {
  if (Status s = internal_api::FirstError({&x1_in, &x2_in}); !s.ok()) return Array::FromStatus(s);
  if (x1_in.ndim() != 1) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "searchsorted: x1 must be one-dimensional, got shape {}", ShapeToString(x1_in.shape()))));
  }
  Result<DType> t = PromoteTypes(x1_in.dtype(), x2_in.dtype());
  if (!t.ok()) return Array::FromStatus(t.status().WithContext("searchsorted"));
  if (t->is_complex()) {
    return Array::FromStatus(InvalidArgumentError("searchsorted: complex numbers are not ordered"));
  }
  Array x1 = x1_in;
  if (sorter) {
    if (!sorter->ok()) return *sorter;
    x1 = take(x1, *sorter, 0);
  }
  if (x1.dtype() != *t) x1 = astype(x1, *t);
  Array x2 = x2_in.dtype() == *t ? x2_in : astype(x2_in, *t);
  const bool right = side == SearchSide::kRight;
  const DType dt = *t;
  return Lookup(
      "searchsorted", x2, x1, DTypeId::kInt64,
      [dt, right](const ConstArrayView& x, const ConstArrayView& table, const ArrayView& out) {
        VisitDType(dt, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (!kIsComplex<T>) {
            const T* a = reinterpret_cast<const T*>(table.data());
            const T* end = a + table.num_elements();
            const T* v = reinterpret_cast<const T*>(x.data());
            int64_t* o = reinterpret_cast<int64_t*>(out.data());
            for (Index i = 0; i < x.num_elements(); ++i) {
              const T* p = right ? std::upper_bound(a, end, v[i], NanLastLess<T>)
                                 : std::lower_bound(a, end, v[i], NanLastLess<T>);
              o[i] = p - a;
            }
          }
        });
      });
}

Array isin(const Array& x_in, const Array& test, bool invert) {
  if (Status s = internal_api::FirstError({&x_in, &test}); !s.ok()) return Array::FromStatus(s);
  Result<DType> t = PromoteTypes(x_in.dtype(), test.dtype());
  if (!t.ok()) return Array::FromStatus(t.status().WithContext("isin"));
  if (t->is_complex()) {
    return Array::FromStatus(InvalidArgumentError("isin: complex numbers are not supported"));
  }
  Array flat = reshape(test, {-1});
  if (flat.dtype() != *t) flat = astype(flat, *t);
  Array sorted = flat.shape()[0] > 1 ? sort(flat, 0) : flat;
  Array x = x_in.dtype() == *t ? x_in : astype(x_in, *t);
  const DType dt = *t;
  return Lookup(
      "isin", x, sorted, DTypeId::kBool,
      [dt, invert](const ConstArrayView& xv, const ConstArrayView& table, const ArrayView& out) {
        VisitDType(dt, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (!kIsComplex<T>) {
            const T* a = reinterpret_cast<const T*>(table.data());
            const T* end = a + table.num_elements();
            const T* v = reinterpret_cast<const T*>(xv.data());
            bool* o = reinterpret_cast<bool*>(out.data());
            for (Index i = 0; i < xv.num_elements(); ++i) {
              const T* p = std::lower_bound(a, end, v[i], NanLastLess<T>);
              bool found = p != end && *p == v[i];  // NaN == NaN is false
              o[i] = found != invert;
            }
          }
        });
      });
}

}  // namespace strata
