// Creation functions: arrays of a constant, a range or an identity matrix,
// reproducible random arrays, in-memory data and existing Zarr arrays, each
// as a lazy Array.
//
//   Array t = arange(0, 365, 1, {100});
//   Array x = random::random({10000, 10000}, {1000, 10000}, /*seed=*/42, spec);
//   Array z = from_zarr("s3://bucket/era5.zarr/t2m", spec);
//
// Virtual arrays (zeros, ones, full, empty, arange, linspace, eye, random)
// are computed per block inside the tasks that read them and never stored;
// asarray shares its NDArray; from_zarr reads chunks when a task needs them.
// `chunks` empty means "auto": chunks of at most ~allowed_mem / 8 along the
// leading axes (api/chunks.h has Dask's full chunk syntax). More creation
// functions (*_like, meshgrid, tril/triu, external memory):
// api/creation_extras.h.
//
// Errors come back as an Array in an error state (api/array.h):
// InvalidArgument for chunks that do not match the shape's rank, a non-finite
// or zero arange step, a dtype the function cannot make; a Zarr path that
// cannot be opened gives the store's status with "from_zarr" as context.
//
// Thread-safety: pure functions of their arguments; the arrays are immutable.
#ifndef STRATA_API_CREATION_H_
#define STRATA_API_CREATION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "strata/api/array.h"
#include "strata/core/ndarray.h"
#include "strata/plan/spec.h"

namespace strata {

class ZarrArray;

Array zeros(Shape shape, Shape chunks = {}, DType dtype = DTypeId::kFloat64, const Spec& spec = {});
Array ones(Shape shape, Shape chunks = {}, DType dtype = DTypeId::kFloat64, const Spec& spec = {});
Array full(Shape shape, Scalar value, Shape chunks = {}, std::optional<DType> dtype = std::nullopt,
           const Spec& spec = {});
// Uninitialised in numpy; here zeros (deterministic), without storage.
Array empty(Shape shape, Shape chunks = {}, DType dtype = DTypeId::kFloat64, const Spec& spec = {});
// [start, stop) by step; dtype int64 when all arguments are whole, else float64.
Array arange(double start, double stop, double step = 1, Shape chunks = {},
             std::optional<DType> dtype = std::nullopt, const Spec& spec = {});
Array linspace(double start, double stop, Index num, bool endpoint = true, Shape chunks = {},
               DType dtype = DTypeId::kFloat64, const Spec& spec = {});
// Ones on the k-th diagonal of an n x m matrix (m = n when 0).
Array eye(Index n, Index m = 0, Index k = 0, Shape chunks = {}, DType dtype = DTypeId::kFloat64,
          const Spec& spec = {});
// An in-memory array as a lazy one (the data is shared, not copied).
Array asarray(NDArray data, Shape chunks = {}, const Spec& spec = {});
Array asarray(std::shared_ptr<const NDArray> data, Shape chunks = {}, const Spec& spec = {});
// An existing Zarr array (v2 or v3), by path or URL. Its chunks are its Zarr chunks.
Array from_zarr(const std::string& path, const Spec& spec = {});
// A Zarr array already open (a caller that read its metadata need not open it
// again). `array` must not be null.
Array from_zarr(std::shared_ptr<ZarrArray> array, const Spec& spec = {});

namespace random {
// Uniform float64 in [0, 1). Each element is a function of its flat index and
// the seed (core/synthetic.h): the same in any chunking, worker count or order.
Array random(Shape shape, Shape chunks, uint64_t seed, const Spec& spec = {});
// Uniform integers in [low, high), chunk-independent like random().
Array integers(int64_t low, int64_t high, Shape shape, Shape chunks, uint64_t seed,
               DType dtype = DTypeId::kInt64, const Spec& spec = {});
}  // namespace random

}  // namespace strata

#endif  // STRATA_API_CREATION_H_
