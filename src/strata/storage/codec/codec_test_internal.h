// Helpers shared by the codec tests: deterministic test data, hex literals,
// the dtype list, a status assertion that checks the code and a message
// substring, and making and running a bytes codec in a test.
#ifndef STRATA_STORAGE_CODEC_CODEC_TEST_INTERNAL_H_
#define STRATA_STORAGE_CODEC_CODEC_TEST_INTERNAL_H_

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/dtype.h"
#include "strata/core/memory_pool.h"
#include "strata/storage/codec/codec.h"

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

// A bytes codec in a test: made (a failure is a test failure), and run.
inline MemoryPool& Pool() { return *MemoryPool::Default(); }

inline std::span<const std::byte> Span(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }
inline std::span<std::byte> Span(std::vector<std::byte>& v) { return {v.data(), v.size()}; }

inline std::vector<std::byte> ToVector(const Buffer& b) {
  return std::vector<std::byte>(b.data(), b.data() + b.size());
}

inline std::unique_ptr<const BytesCodec> MakeOrDie(const BytesCodecSpec& spec, int dtype_size = 1) {
  auto codec = MakeBytesCodec(spec, dtype_size);
  EXPECT_TRUE(codec.ok()) << codec.status().ToString();
  return std::move(codec).value();
}

inline std::vector<std::byte> EncodeOrDie(const BytesCodec& codec, const std::vector<std::byte>& data) {
  auto encoded = codec.Encode(Span(data), Pool());
  EXPECT_TRUE(encoded.ok()) << encoded.status().ToString();
  return encoded.ok() ? ToVector(*encoded) : std::vector<std::byte>();
}

}  // namespace strata::internal_codec

#endif  // STRATA_STORAGE_CODEC_CODEC_TEST_INTERNAL_H_
