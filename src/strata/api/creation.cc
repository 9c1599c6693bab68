// Creation functions: virtual arrays computed per block, in-memory arrays,
// Zarr sources.
#include "strata/api/creation.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "strata/api/internal.h"
#include "strata/core/dtype_dispatch.h"
#include "strata/core/kernels/elementwise.h"
#include "strata/core/synthetic.h"
#include "strata/storage/open_store.h"
#include "strata/storage/zarr/zarr_array.h"

namespace strata {

using internal_api::GridFor;
using internal_api::MakeSpec;
using internal_api::MakeVirtual;

namespace {

// Writes f(flat C-order index of each element) into `out` covering `box` of an
// array of `shape` (T is the element type).
template <typename T, typename F>
void FillByIndex(const Box& box, const ArrayView& out, const Shape& shape, F f) {
  if (box.empty()) return;
  Shape idx(box.rank(), 0), global(box.rank());
  do {
    for (int i = 0; i < box.rank(); ++i) global[i] = box.origin[i] + idx[i];
    T v = f(global);
    std::memcpy(out.ElementPointer(idx), &v, sizeof(T));
  } while (NextIndex(idx, box.shape));
}

Array Constant(std::string op, Shape shape, Shape chunks, DType dtype, Scalar value,
               const Spec& spec) {
  Result<ChunkGrid> grid = GridFor(shape, chunks, dtype, spec, op);
  if (!grid.ok()) return Array::FromStatus(grid.status());
  if (dtype.is_fixed_length()) {
    // Only the all-zero element (empty strings) has a meaning for these types.
    if (value.real() != 0 || value.imag() != 0) {
      return Array::FromStatus(InvalidArgumentError(
          fmt::format("{}: a number cannot fill a {} array", op, dtype.ToString())));
    }
    return MakeVirtual(std::move(op), shape, *grid, dtype, MakeSpec(spec),
                       [](const Box&, const ArrayView& out) {
                         std::vector<std::byte> zero(static_cast<size_t>(out.dtype().size()));
                         FillArray(out, zero);
                         return Status::Ok();
                       });
  }
  // The element's bytes, converted once.
  NDArray scalar = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kComplex128, {});
  *scalar.data_as<std::complex<double>>() = {value.real(), value.imag()};
  auto element = std::make_shared<NDArray>(*NDArray::Allocate(*MemoryPool::Default(), dtype, {}));
  if (value.kind() == Scalar::Kind::kInt && dtype.is_integer()) {
    NDArray i = *NDArray::Allocate(*MemoryPool::Default(), DTypeId::kInt64, {});
    *i.data_as<int64_t>() = value.integer();
    STRATA_CHECK(Cast(i.view(), element->view()).ok());
  } else {
    STRATA_CHECK(Cast(scalar.view(), element->view()).ok());
  }
  return MakeVirtual(std::move(op), shape, *grid, dtype, MakeSpec(spec),
                     [element](const Box& box, const ArrayView& out) {
                       FillArray(out, element->bytes());
                       return Status::Ok();
                     });
}

}  // namespace

Array zeros(Shape shape, Shape chunks, DType dtype, const Spec& spec) {
  return Constant("zeros", std::move(shape), std::move(chunks), dtype, Scalar(0), spec);
}

Array ones(Shape shape, Shape chunks, DType dtype, const Spec& spec) {
  return Constant("ones", std::move(shape), std::move(chunks), dtype, Scalar(1), spec);
}

Array empty(Shape shape, Shape chunks, DType dtype, const Spec& spec) {
  return Constant("empty", std::move(shape), std::move(chunks), dtype, Scalar(0), spec);
}

Array full(Shape shape, Scalar value, Shape chunks, std::optional<DType> dtype, const Spec& spec) {
  return Constant("full", std::move(shape), std::move(chunks), dtype.value_or(value.DefaultDType()),
                  value, spec);
}

Array arange(double start, double stop, double step, Shape chunks, std::optional<DType> dtype,
             const Spec& spec) {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step)) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("arange: invalid start {}, stop {}, step {}", start, stop, step)));
  }
  Index n = static_cast<Index>(std::max(0.0, std::ceil((stop - start) / step)));
  bool whole = start == std::floor(start) && stop == std::floor(stop) && step == std::floor(step);
  DType t = dtype.value_or(whole ? DType(DTypeId::kInt64) : DType(DTypeId::kFloat64));
  if (!t.is_numeric()) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "arange: dtype must be numeric, not {} (for float16, astype the result)", t.ToString())));
  }
  Shape shape = {n};
  Result<ChunkGrid> grid = GridFor(shape, chunks, t, spec, "arange");
  if (!grid.ok()) return Array::FromStatus(grid.status());
  return MakeVirtual("arange", shape, *grid, t, MakeSpec(spec),
                     [start, step, t, shape](const Box& box, const ArrayView& out) {
                       return VisitDType(t, [&](auto tag) -> Status {
                         using T = typename decltype(tag)::type;
                         if constexpr (kIsComplex<T> || std::is_same_v<T, bool>) {
                           return InvalidArgumentError("arange: dtype must be real and numeric");
                         } else {
                           FillByIndex<T>(box, out, shape, [&](const Shape& g) {
                             return static_cast<T>(start + static_cast<double>(g[0]) * step);
                           });
                           return Status::Ok();
                         }
                       });
                     });
}

Array linspace(double start, double stop, Index num, bool endpoint, Shape chunks, DType dtype,
               const Spec& spec) {
  if (num < 0) {
    return Array::FromStatus(
        InvalidArgumentError(fmt::format("linspace: num must be non-negative, got {}", num)));
  }
  if (!dtype.is_float()) {
    return Array::FromStatus(InvalidArgumentError("linspace: dtype must be float32 or float64"));
  }
  Shape shape = {num};
  Result<ChunkGrid> grid = GridFor(shape, chunks, dtype, spec, "linspace");
  if (!grid.ok()) return Array::FromStatus(grid.status());
  const Index div = endpoint ? num - 1 : num;
  const double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0.0;
  return MakeVirtual("linspace", shape, *grid, dtype, MakeSpec(spec),
                     [=](const Box& box, const ArrayView& out) {
                       return VisitDType(dtype, [&](auto tag) -> Status {
                         using T = typename decltype(tag)::type;
                         if constexpr (std::is_floating_point_v<T>) {
                           FillByIndex<T>(box, out, shape, [&](const Shape& g) {
                             if (endpoint && g[0] == num - 1 && num > 1) return static_cast<T>(stop);
                             return static_cast<T>(start + static_cast<double>(g[0]) * step);
                           });
                         }
                         return Status::Ok();
                       });
                     });
}

Array eye(Index n, Index m, Index k, Shape chunks, DType dtype, const Spec& spec) {
  if (m == 0) m = n;
  if (!dtype.is_numeric()) {
    return Array::FromStatus(InvalidArgumentError(fmt::format(
        "eye: dtype must be numeric, not {} (for float16, astype the result)", dtype.ToString())));
  }
  if (n < 0 || m < 0) {
    return Array::FromStatus(InvalidArgumentError(fmt::format("eye: invalid size {} x {}", n, m)));
  }
  Shape shape = {n, m};
  Result<ChunkGrid> grid = GridFor(shape, chunks, dtype, spec, "eye");
  if (!grid.ok()) return Array::FromStatus(grid.status());
  return MakeVirtual("eye", shape, *grid, dtype, MakeSpec(spec),
                     [=](const Box& box, const ArrayView& out) {
                       return VisitDType(dtype, [&](auto tag) -> Status {
                         using T = typename decltype(tag)::type;
                         FillByIndex<T>(box, out, shape, [&](const Shape& g) {
                           return g[1] - g[0] == k ? static_cast<T>(1) : static_cast<T>(0);
                         });
                         return Status::Ok();
                       });
                     });
}

Array asarray(std::shared_ptr<const NDArray> data, Shape chunks, const Spec& spec) {
  if (!data) return Array::FromStatus(InvalidArgumentError("asarray: null array"));
  Result<ChunkGrid> grid = GridFor(data->shape(), chunks, data->dtype(), spec, "asarray");
  if (!grid.ok()) return Array::FromStatus(grid.status());
  Node node;
  node.op_name = "asarray";
  node.kind = NodeKind::kMemorySource;
  node.shape = data->shape();
  node.dtype = data->dtype();
  node.grid = *grid;
  node.data = std::move(data);
  node.spec = MakeSpec(spec);
  return Array(MakeNode(std::move(node)));
}

Array asarray(NDArray data, Shape chunks, const Spec& spec) {
  return asarray(std::make_shared<const NDArray>(std::move(data)), std::move(chunks), spec);
}

Array from_zarr(const std::string& path, const Spec& spec) {
  Result<StoreAndPrefix> at = OpenStoreUrl(path, /*create=*/false);
  if (!at.ok()) return Array::FromStatus(at.status().WithContext("from_zarr"));
  Result<std::shared_ptr<ZarrArray>> z = ZarrArray::Open(at->store, at->prefix);
  if (!z.ok()) return Array::FromStatus(z.status().WithContext("from_zarr"));
  return from_zarr(*std::move(z), spec);
}

Array from_zarr(std::shared_ptr<ZarrArray> array, const Spec& spec) {
  if (!array) return Array::FromStatus(InvalidArgumentError("from_zarr: no array (null)"));
  Node node;
  node.op_name = "from_zarr";
  node.kind = NodeKind::kZarrSource;
  node.shape = array->shape();
  node.dtype = array->dtype();
  // A sharded array is read inner chunk by inner chunk.
  node.grid = array->read_grid();
  node.zarr = std::move(array);
  node.spec = MakeSpec(spec);
  return Array(MakeNode(std::move(node)));
}

namespace random {

Array random(Shape shape, Shape chunks, uint64_t seed, const Spec& spec) {
  Result<ChunkGrid> grid = GridFor(shape, chunks, DTypeId::kFloat64, spec, "random");
  if (!grid.ok()) return Array::FromStatus(grid.status());
  return MakeVirtual("random", shape, *grid, DTypeId::kFloat64, MakeSpec(spec),
                     [shape, seed](const Box& box, const ArrayView& out) {
                       FillSynthetic(out, box, shape, seed);
                       return Status::Ok();
                     });
}

Array integers(int64_t low, int64_t high, Shape shape, Shape chunks, uint64_t seed, DType dtype,
               const Spec& spec) {
  if (high <= low) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("random.integers: high ({}) must be greater than low ({})", high, low)));
  }
  if (!dtype.is_integer()) {
    return Array::FromStatus(InvalidArgumentError("random.integers: dtype must be an integer type"));
  }
  // Values outside the dtype would wrap silently; numpy refuses them too.
  const auto [lowest, highest] = VisitDType(dtype, [](auto tag) -> std::pair<__int128, __int128> {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      return {std::numeric_limits<T>::min(), std::numeric_limits<T>::max()};
    } else {
      return {0, 0};
    }
  });
  if (low < lowest) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("random.integers: low ({}) is out of bounds for {}", low, dtype.name())));
  }
  if (static_cast<__int128>(high) - 1 > highest) {
    return Array::FromStatus(InvalidArgumentError(
        fmt::format("random.integers: high ({}) is out of bounds for {}", high, dtype.name())));
  }
  Result<ChunkGrid> grid = GridFor(shape, chunks, dtype, spec, "random.integers");
  if (!grid.ok()) return Array::FromStatus(grid.status());
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  return MakeVirtual(
      "random.integers", shape, *grid, dtype, MakeSpec(spec),
      [=](const Box& box, const ArrayView& out) {
        return VisitDType(dtype, [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          FillByIndex<T>(box, out, shape, [&](const Shape& g) {
            uint64_t flat = static_cast<uint64_t>(LinearIndex(g, shape));
            // Lemire's multiply-shift maps 64 random bits onto [0, range).
            unsigned __int128 wide =
                static_cast<unsigned __int128>(SyntheticBits(seed, flat)) * range;
            return static_cast<T>(low + static_cast<int64_t>(wide >> 64));
          });
          return Status::Ok();
        });
      });
}

}  // namespace random

}  // namespace strata
