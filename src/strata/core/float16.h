// IEEE 754 binary16 ("half", numpy float16) conversions.
//
// float16 is a storage type in Strata (dtype.h): arrays of it are read,
// written, rechunked and converted, and arithmetic on them computes in
// float32. These are the scalar conversions behind that, bit-exact with
// numpy's: DoubleToHalf rounds to nearest, ties to even, straight from the
// double (no double rounding through float), overflows to infinity, keeps
// NaN a NaN (with the top payload bits) and handles subnormals.
//
// Thread-safety: pure functions.
#ifndef STRATA_CORE_FLOAT16_H_
#define STRATA_CORE_FLOAT16_H_

#include <bit>
#include <cstdint>

namespace strata {

// The value of the binary16 `bits`, exactly.
inline double HalfToDouble(uint16_t bits) {
  const uint64_t sign = static_cast<uint64_t>(bits & 0x8000u) << 48;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) {
    // Infinity or NaN (the payload moves to the top of the double's mantissa).
    return std::bit_cast<double>(sign | 0x7ff0000000000000ull |
                                 (static_cast<uint64_t>(mantissa) << 42));
  }
  if (exponent == 0) {
    if (mantissa == 0) return std::bit_cast<double>(sign);
    // Subnormal: mantissa x 2^-24.
    const double magnitude = static_cast<double>(mantissa) * 0x1p-24;
    return sign != 0 ? -magnitude : magnitude;
  }
  const uint64_t e = static_cast<uint64_t>(exponent) - 15 + 1023;
  return std::bit_cast<double>(sign | (e << 52) | (static_cast<uint64_t>(mantissa) << 42));
}

inline float HalfToFloat(uint16_t bits) { return static_cast<float>(HalfToDouble(bits)); }

// `value` rounded to the nearest binary16 (ties to even).
inline uint16_t DoubleToHalf(double value) {
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 48) & 0x8000u);
  const int exponent = static_cast<int>((bits >> 52) & 0x7ffu);
  const uint64_t mantissa = bits & 0xfffffffffffffull;
  if (exponent == 0x7ff) {
    if (mantissa == 0) return sign | 0x7c00u;  // infinity
    // NaN: keep the top payload bits, and make sure it stays a NaN.
    uint16_t payload = static_cast<uint16_t>(mantissa >> 42);
    return sign | 0x7c00u | (payload != 0 ? payload : 0x200u);
  }
  // The value is m x 2^(e - 52) with m the 53-bit significand.
  const int unbiased = exponent - 1023;
  if (unbiased > 15) return sign | 0x7c00u;  // overflows to infinity
  // Target: a binary16 with 10 fraction bits; `shift` is how many low bits of
  // the 53-bit significand fall off.
  uint64_t significand = mantissa | (exponent != 0 ? (1ull << 52) : 0);
  int shift;
  uint16_t half_exponent;
  if (unbiased >= -14) {
    shift = 42;
    half_exponent = static_cast<uint16_t>(unbiased + 15);
  } else {
    // Subnormal half (or zero): units of 2^-24.
    shift = 42 + (-14 - unbiased);
    half_exponent = 0;
    if (shift > 53 + 1) return sign;  // rounds to zero
  }
  uint64_t kept = significand >> shift;
  const uint64_t rest = significand & ((1ull << shift) - 1);
  const uint64_t halfway = 1ull << (shift - 1);
  if (rest > halfway || (rest == halfway && (kept & 1) != 0)) ++kept;
  if (half_exponent == 0) {
    // kept counts units of 2^-24; 0x400 of them is the smallest normal.
    return sign | static_cast<uint16_t>(kept);
  }
  // kept has the implicit bit at 1 << 10; rounding may carry into the exponent.
  if (kept >= (1u << 11)) {
    kept >>= 1;
    ++half_exponent;
  }
  if (half_exponent >= 31) return sign | 0x7c00u;
  return sign | static_cast<uint16_t>(half_exponent << 10) | static_cast<uint16_t>(kept & 0x3ffu);
}

inline uint16_t FloatToHalf(float value) { return DoubleToHalf(static_cast<double>(value)); }

}  // namespace strata

#endif  // STRATA_CORE_FLOAT16_H_
