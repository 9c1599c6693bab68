// CRC-32C: known vectors, incremental use, and the hardware and table
// implementations agreeing.
#include <blosc.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "strata/core/memory_pool.h"
#include "strata/storage/codec/codec.h"
#include "strata/storage/codec/codec_internal.h"
#include "strata/storage/codec/codec_test_internal.h"

namespace strata::internal_codec {
namespace {

// ---------------------------------------------------------------- CRC-32C

uint32_t Crc32cOf(std::string_view text) {
  return Crc32c({reinterpret_cast<const std::byte*>(text.data()), text.size()});
}

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32cOf(""), 0u);
  EXPECT_EQ(Crc32cOf("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32cOf("a"), 0xC1D04330u);
  // RFC 3720, appendix B.4.
  std::vector<std::byte> bytes(32, std::byte{0});
  EXPECT_EQ(Crc32c(Span(bytes)), 0x8A9136AAu);
  std::fill(bytes.begin(), bytes.end(), std::byte{0xff});
  EXPECT_EQ(Crc32c(Span(bytes)), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) bytes[i] = static_cast<std::byte>(i);
  EXPECT_EQ(Crc32c(Span(bytes)), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) bytes[i] = static_cast<std::byte>(31 - i);
  EXPECT_EQ(Crc32c(Span(bytes)), 0x113FDB5Cu);
}

TEST(Crc32cTest, ExtendsIncrementally) {
  const auto data = TestBytes(1000, 1, DataKind::kRandom);
  for (size_t split : {0, 1, 7, 8, 500, 999, 1000}) {
    uint32_t crc = Crc32c(Span(data).first(split));
    EXPECT_EQ(Crc32c(Span(data).subspan(split), crc), Crc32c(Span(data))) << split;
  }
}

TEST(Crc32cTest, HardwareAndTableAgreeAtEveryAlignmentAndLength) {
  const auto data = TestBytes(4200, 2, DataKind::kRandom);
  if (!Crc32cHardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  for (size_t offset = 0; offset < 9; ++offset) {
    for (size_t length : {0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 63, 64, 100, 1000, 4096}) {
      auto piece = Span(data).subspan(offset, length);
      EXPECT_EQ(Crc32cHardware(piece, 0x12345678u), Crc32cPortable(piece, 0x12345678u))
          << offset << " " << length;
    }
  }
  EXPECT_EQ(Crc32cPortable(Span(data), 0), Crc32c(Span(data)));
}

}  // namespace
}  // namespace strata::internal_codec
