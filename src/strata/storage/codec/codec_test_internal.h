// Helpers shared by the codec tests: deterministic test data, hex literals,
// the dtype list, and a status assertion that checks the code and a message
// substring.
#ifndef STRATA_STORAGE_CODEC_CODEC_TEST_INTERNAL_H_
#define STRATA_STORAGE_CODEC_CODEC_TEST_INTERNAL_H_

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/dtype.h"

namespace strata::internal_codec {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

enum class DataKind { kRandom, kCompressible };

// `n` bytes: uniformly random, or runs of a few distinct values (which every
// codec compresses), both determined by `seed`.
inline std::vector<std::byte> TestBytes(size_t n, uint64_t seed, DataKind kind) {
  std::vector<std::byte> bytes(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t h = kind == DataKind::kRandom ? SplitMix64(seed * 0x100000001b3ull + i)
                                           : SplitMix64(seed + i / 37) % 5;
    bytes[i] = static_cast<std::byte>(h & 0xff);
  }
  return bytes;
}

inline std::vector<std::byte> FromHex(std::string_view hex) {
  std::vector<std::byte> bytes(hex.size() / 2);
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::byte>(nibble(hex[2 * i]) * 16 + nibble(hex[2 * i + 1]));
  }
  return bytes;
}

inline std::vector<DType> AllDTypes() {
  std::vector<DType> dtypes;
  for (int i = 0; i < kNumDTypes; ++i) dtypes.push_back(DType(static_cast<DTypeId>(i)));
  return dtypes;
}

// EXPECT_TRUE(StatusIs(s, StatusCode::kDataLoss, "expected 8000")).
inline ::testing::AssertionResult StatusIs(const Status& status, StatusCode code,
                                           std::string_view substring) {
  if (status.code() == code && status.message().find(substring) != std::string_view::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "got " << status.ToString() << ", want code " << StatusCodeName(code)
         << " with a message containing '" << substring << "'";
}

}  // namespace strata::internal_codec

#endif  // STRATA_STORAGE_CODEC_CODEC_TEST_INTERNAL_H_
