#include "strata/core/synthetic.h"

#include <complex>
#include <cstring>

#include "strata/core/dtype_dispatch.h"
#include "strata/core/float16.h"

namespace strata {
namespace {

template <typename T>
T ValueAt(uint64_t seed, uint64_t flat) {
  if constexpr (std::is_same_v<T, bool>) {
    return (SyntheticBits(seed, flat) >> 63) != 0;
  } else if constexpr (std::is_same_v<T, double>) {
    return SyntheticUniform(seed, flat);
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(SyntheticBits(seed, flat) >> 40) * 0x1.0p-24f;
  } else if constexpr (kIsComplex<T>) {
    using R = typename T::value_type;
    return T(ValueAt<R>(seed, 2 * flat), ValueAt<R>(seed, 2 * flat + 1));
  } else {
    uint64_t bits = SyntheticBits(seed, flat);
    T v;
    std::memcpy(&v, &bits, sizeof(T));
    return v;
  }
}

}  // namespace

void FillSynthetic(const ArrayView& out, const Box& region, std::span<const Index> array_shape,
                   uint64_t seed) {
  STRATA_CHECK(out.shape() == region.shape);
  if (region.empty()) return;
  const int rank = region.rank();
  if (out.dtype().is_float16()) {
    // The float32 values rounded to float16 (numpy's astype(float16)).
    Box all = Box::FromShape(region.shape);
    Shape idx(rank, 0);
    Shape global(rank);
    do {
      for (int i = 0; i < rank; ++i) global[i] = region.origin[i] + idx[i];
      const uint64_t flat = rank == 0 ? 0 : static_cast<uint64_t>(LinearIndex(global, array_shape));
      const uint16_t h = FloatToHalf(ValueAt<float>(seed, flat));
      std::memcpy(out.ElementPointer(idx), &h, 2);
    } while (NextIndex(idx, all.shape));
    return;
  }
  STRATA_CHECK(out.dtype().is_numeric())
      << "synthetic data of " << out.dtype().ToString() << " is not defined";
  VisitDType(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (rank == 0) {
      T v = ValueAt<T>(seed, 0);
      std::memcpy(out.data(), &v, sizeof(T));
      return;
    }
    const Index inner = region.shape[rank - 1];
    const Index inner_stride = out.byte_strides()[rank - 1];
    Shape outer(region.shape.begin(), region.shape.end() - 1);
    Shape idx(rank - 1, 0);
    Shape global(rank);
    do {
      for (int i = 0; i < rank - 1; ++i) global[i] = region.origin[i] + idx[i];
      global[rank - 1] = region.origin[rank - 1];
      uint64_t flat = static_cast<uint64_t>(LinearIndex(global, array_shape));
      std::byte* p = out.data();
      for (int i = 0; i < rank - 1; ++i) p += idx[i] * out.byte_strides()[i];
      if (inner_stride == static_cast<Index>(sizeof(T))) {
        T* row = reinterpret_cast<T*>(p);
        for (Index j = 0; j < inner; ++j) row[j] = ValueAt<T>(seed, flat + j);
      } else {
        for (Index j = 0; j < inner; ++j) {
          T v = ValueAt<T>(seed, flat + j);
          std::memcpy(p + j * inner_stride, &v, sizeof(T));
        }
      }
    } while (NextIndex(idx, outer));
  });
}

}  // namespace strata
