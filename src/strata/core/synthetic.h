// Chunk-independent synthetic data: each element's value is a pure function of
// its flat (C-order) index in the whole array and a seed.
//
// So the same array can be generated in any chunking, on any number of
// workers, in any order, and compared element for element: the oracle for
// every rechunk test, and the data behind `strata random` and random::random.
//
// Values: floats uniform in [0, 1); integers uniform over the type's range;
// bool a fair coin; complex numbers two independent floats.
#ifndef STRATA_CORE_SYNTHETIC_H_
#define STRATA_CORE_SYNTHETIC_H_

#include <cstdint>

#include "strata/core/box.h"
#include "strata/core/ndarray.h"

namespace strata {

// The 64 random bits behind element `flat_index` (splitmix64 of seed and index).
inline uint64_t SyntheticBits(uint64_t seed, uint64_t flat_index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + flat_index * 0xD1B54A32D192ED03ull +
               0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform double in [0, 1) for element `flat_index`.
inline double SyntheticUniform(uint64_t seed, uint64_t flat_index) {
  return static_cast<double>(SyntheticBits(seed, flat_index) >> 11) * 0x1.0p-53;
}

// Fills `out` with the values of `region` of an array of `array_shape`.
// out.shape() == region.shape.
void FillSynthetic(const ArrayView& out, const Box& region, std::span<const Index> array_shape,
                   uint64_t seed);

}  // namespace strata

#endif  // STRATA_CORE_SYNTHETIC_H_
