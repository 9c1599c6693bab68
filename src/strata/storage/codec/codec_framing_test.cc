// The bytes codecs' framing: Blosc, Zstd, zlib, gzip and LZ4 headers as the
// formats define them, CRC-32C's trailer, decoded sizes from headers, and
// one codec used from several threads.
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

// ---------------------------------------------------------------- framing

uint32_t LoadLe32(const std::vector<std::byte>& b, size_t offset) {
  uint32_t v;
  std::memcpy(&v, b.data() + offset, 4);
  return v;
}

TEST(BloscFramingTest, HeaderRecordsSizesTypesizeAndShuffle) {
  const auto data = TestBytes(4096, 1, DataKind::kCompressible);
  struct Case {
    BloscSpec spec;
    int dtype_size;
    uint8_t typesize;
    uint8_t shuffle_flags;  // BLOSC_DOSHUFFLE 0x1, BLOSC_DOBITSHUFFLE 0x4
  };
  const Case cases[] = {
      {{"lz4", 5, 1, 0, 0}, 8, 8, 0x1},  {{"lz4", 5, 2, 0, 0}, 8, 8, 0x4},
      {{"lz4", 5, 0, 0, 0}, 8, 8, 0x0},  {{"lz4", 5, -1, 0, 0}, 1, 1, 0x4},
      {{"lz4", 5, -1, 0, 0}, 2, 2, 0x1}, {{"zstd", 5, 1, 0, 4}, 16, 4, 0x1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(DescribeCodec(c.spec));
    const auto encoded = EncodeOrDie(*MakeOrDie(c.spec, c.dtype_size), data);
    ASSERT_GE(encoded.size(), 16u);
    EXPECT_EQ(encoded[0], std::byte{2});  // blosc 1.x format version
    EXPECT_EQ(static_cast<uint8_t>(encoded[2]) & 0x5, c.shuffle_flags);
    EXPECT_EQ(static_cast<uint8_t>(encoded[3]), c.typesize);
    EXPECT_EQ(LoadLe32(encoded, 4), 4096u);
    EXPECT_EQ(LoadLe32(encoded, 12), encoded.size());
  }
}

TEST(BloscFramingTest, ClevelZeroStoresAHeaderAndTheRawBytes) {
  const auto data = TestBytes(1000, 2, DataKind::kRandom);
  const auto encoded = EncodeOrDie(*MakeOrDie(BloscSpec{"lz4", 0, 1, 0, 0}, 4), data);
  ASSERT_EQ(encoded.size(), 1016u);
  EXPECT_EQ(static_cast<uint8_t>(encoded[2]) & 0x2, 0x2);  // BLOSC_MEMCPYED
  EXPECT_TRUE(std::equal(data.begin(), data.end(), encoded.begin() + 16));
}

TEST(BloscFramingTest, ExplicitBlocksizeIsRecorded) {
  const auto data = TestBytes(4096, 1, DataKind::kCompressible);
  // (Blosc itself enlarges blocks that it splits per byte: 256 4-byte elements
  // are too few to split.)
  const auto encoded = EncodeOrDie(*MakeOrDie(BloscSpec{"lz4", 5, 1, 256, 0}, 4), data);
  EXPECT_EQ(LoadLe32(encoded, 8), 256u);
}

TEST(BloscFramingTest, InconsistentHeaderIsDataLossBeforeDecompressing) {
  auto codec = MakeOrDie(BloscSpec{}, 4);
  auto encoded = EncodeOrDie(*codec, TestBytes(4096, 1, DataKind::kCompressible));
  auto claims_more = encoded;
  uint32_t huge = 1u << 30;
  std::memcpy(claims_more.data() + 4, &huge, 4);  // decoded size
  EXPECT_TRUE(StatusIs(codec->Decode(Span(claims_more), Pool()).status(), StatusCode::kDataLoss,
                       "blosc: inconsistent header"));
  auto padded = encoded;
  padded.push_back(std::byte{0});
  EXPECT_TRUE(StatusIs(codec->DecodedSize(Span(padded)).status(), StatusCode::kDataLoss,
                       "header records a"));
}

TEST(ZstdFramingTest, FrameRecordsContentSizeAndOptionalChecksum) {
  const auto data = TestBytes(5000, 3, DataKind::kCompressible);
  for (bool checksum : {false, true}) {
    SCOPED_TRACE(checksum);
    const auto encoded = EncodeOrDie(*MakeOrDie(ZstdSpec{3, checksum}), data);
    EXPECT_EQ(LoadLe32(encoded, 0), 0xFD2FB528u);  // zstd magic
    EXPECT_EQ(ZSTD_getFrameContentSize(encoded.data(), encoded.size()), 5000u);
    const auto descriptor = static_cast<uint8_t>(encoded[4]);
    EXPECT_EQ((descriptor >> 2) & 1, checksum ? 1 : 0);  // Content_Checksum_flag
  }
}

TEST(ZstdFramingTest, ChecksumMismatchIsDataLoss) {
  auto codec = MakeOrDie(ZstdSpec{3, true});
  const auto data = TestBytes(5000, 3, DataKind::kCompressible);
  auto encoded = EncodeOrDie(*codec, data);
  encoded.back() ^= std::byte{0x01};  // the last byte belongs to the checksum
  std::vector<std::byte> decoded(data.size());
  EXPECT_TRUE(StatusIs(codec->DecodeInto(Span(encoded), Span(decoded)), StatusCode::kDataLoss,
                       "zstd: corrupt or truncated frame"));
}

// Frames written by streaming compressors may omit the content size.
TEST(ZstdFramingTest, FrameWithoutContentSizeDecodes) {
  const auto data = TestBytes(300000, 4, DataKind::kCompressible);
  std::vector<std::byte> frame(ZSTD_compressBound(data.size()));
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  ZSTD_outBuffer out{frame.data(), frame.size(), 0};
  // Streamed in two calls, so zstd never learns the size before writing the header.
  ASSERT_FALSE(ZSTD_isError(ZSTD_compressStream2(cctx, &out, &in, ZSTD_e_continue)));
  ZSTD_inBuffer none{nullptr, 0, 0};
  ASSERT_EQ(ZSTD_compressStream2(cctx, &out, &none, ZSTD_e_end), 0u);
  ZSTD_freeCCtx(cctx);
  frame.resize(out.pos);
  ASSERT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), ZSTD_CONTENTSIZE_UNKNOWN);

  auto codec = MakeOrDie(ZstdSpec{});
  auto size = codec->DecodedSize(Span(frame));
  ASSERT_TRUE(size.ok());
  EXPECT_FALSE(size->has_value());
  auto grown = codec->Decode(Span(frame), Pool());
  ASSERT_TRUE(grown.ok()) << grown.status().ToString();
  EXPECT_EQ(ToVector(*grown), data);
  std::vector<std::byte> decoded(data.size());
  EXPECT_TRUE(codec->DecodeInto(Span(frame), Span(decoded)).ok());
  EXPECT_EQ(decoded, data);
  std::vector<std::byte> too_small(data.size() - 1);
  EXPECT_TRUE(StatusIs(codec->DecodeInto(Span(frame), Span(too_small)), StatusCode::kDataLoss,
                       "zstd: encoded chunk decodes to more than 299999 bytes"));
  frame.resize(frame.size() - 3);
  EXPECT_TRUE(StatusIs(codec->Decode(Span(frame), Pool()).status(), StatusCode::kDataLoss,
                       "zstd: truncated frame"));
}

TEST(ZlibFramingTest, StreamHasAZlibHeaderForTheLevel) {
  const auto data = TestBytes(2000, 5, DataKind::kCompressible);
  const std::pair<int, uint8_t> levels[] = {{1, 0x01}, {6, 0x9c}, {9, 0xda}};
  for (auto [level, flg] : levels) {
    const auto encoded = EncodeOrDie(*MakeOrDie(ZlibSpec{level}), data);
    EXPECT_EQ(encoded[0], std::byte{0x78});  // deflate, 32 KiB window
    EXPECT_EQ(static_cast<uint8_t>(encoded[1]), flg) << "level " << level;
  }
}

TEST(ZlibFramingTest, BytesAfterTheStreamAreDataLoss) {
  auto codec = MakeOrDie(ZlibSpec{});
  const auto data = TestBytes(2000, 5, DataKind::kCompressible);
  auto encoded = EncodeOrDie(*codec, data);
  encoded.push_back(std::byte{0});
  std::vector<std::byte> decoded(data.size());
  EXPECT_TRUE(StatusIs(codec->DecodeInto(Span(encoded), Span(decoded)), StatusCode::kDataLoss,
                       "zlib: 1 bytes follow the end of the stream"));
}

TEST(GzipFramingTest, HeaderIsWhatPythonsGzipWrites) {
  const auto data = TestBytes(2000, 5, DataKind::kCompressible);
  const std::pair<int, uint8_t> levels[] = {{0, 0}, {1, 4}, {6, 0}, {9, 2}};
  for (auto [level, xfl] : levels) {
    SCOPED_TRACE(level);
    const auto encoded = EncodeOrDie(*MakeOrDie(GzipSpec{level}), data);
    const std::vector<std::byte> header(encoded.begin(), encoded.begin() + 10);
    EXPECT_EQ(header, FromHex(fmt::format("1f8b080000000000{:02x}ff", xfl)));
    EXPECT_EQ(LoadLe32(encoded, encoded.size() - 4), 2000u);  // ISIZE
  }
}

TEST(GzipFramingTest, SeveralMembersAndZeroPaddingDecodeAsPythonReadsThem) {
  auto codec = MakeOrDie(GzipSpec{});
  const auto a = TestBytes(1500, 1, DataKind::kCompressible);
  const auto b = TestBytes(700, 2, DataKind::kRandom);
  auto encoded = EncodeOrDie(*codec, a);
  const auto second = EncodeOrDie(*codec, b);
  encoded.insert(encoded.end(), second.begin(), second.end());
  encoded.insert(encoded.end(), 5, std::byte{0});
  auto expected = a;
  expected.insert(expected.end(), b.begin(), b.end());

  std::vector<std::byte> decoded(expected.size());
  ASSERT_TRUE(codec->DecodeInto(Span(encoded), Span(decoded)).ok());
  EXPECT_EQ(decoded, expected);
  auto grown = codec->Decode(Span(encoded), Pool());
  ASSERT_TRUE(grown.ok()) << grown.status().ToString();
  EXPECT_EQ(ToVector(*grown), expected);

  encoded.push_back(std::byte{'x'});
  EXPECT_TRUE(StatusIs(codec->DecodeInto(Span(encoded), Span(decoded)), StatusCode::kDataLoss,
                       "gzip: 6 bytes that are not a gzip member follow the data"));
}

// Decoding a stream nobody knows the size of grows the buffer as it goes.
TEST(ZlibFramingTest, DecodeWithoutSizeGrowsTheBuffer) {
  std::vector<std::byte> zeros(3'000'000, std::byte{0});
  for (const BytesCodecSpec& spec : {BytesCodecSpec(ZlibSpec{6}), BytesCodecSpec(GzipSpec{6})}) {
    SCOPED_TRACE(DescribeCodec(spec));
    auto codec = MakeOrDie(spec);
    const auto encoded = EncodeOrDie(*codec, zeros);
    ASSERT_LT(encoded.size(), 10000u);
    auto decoded = codec->Decode(Span(encoded), Pool());
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(ToVector(*decoded), zeros);
  }
}

TEST(ZlibFramingTest, DecodeRespectsThePoolCap) {
  std::vector<std::byte> zeros(3'000'000, std::byte{0});
  auto codec = MakeOrDie(ZlibSpec{});
  const auto encoded = EncodeOrDie(*codec, zeros);
  auto capped = MemoryPool::Default()->NewChild({"capped", 1'000'000});
  EXPECT_EQ(codec->Decode(Span(encoded), *capped).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(capped->bytes_in_use(), 0);
}

TEST(Lz4FramingTest, StartsWithTheLittleEndianDecodedSize) {
  const auto data = TestBytes(70000, 6, DataKind::kCompressible);
  const auto encoded = EncodeOrDie(*MakeOrDie(Lz4Spec{}), data);
  EXPECT_EQ(LoadLe32(encoded, 0), 70000u);
  std::vector<std::byte> decoded(data.size());
  ASSERT_EQ(
      LZ4_decompress_safe(reinterpret_cast<const char*>(encoded.data()) + 4,
                          reinterpret_cast<char*>(decoded.data()),
                          static_cast<int>(encoded.size() - 4), static_cast<int>(decoded.size())),
      70000);
  EXPECT_EQ(decoded, data);
}

TEST(Lz4FramingTest, ImplausibleDecodedSizeIsDataLoss) {
  auto codec = MakeOrDie(Lz4Spec{});
  auto encoded = EncodeOrDie(*codec, TestBytes(100, 6, DataKind::kRandom));
  const uint32_t huge = 1u << 30;
  std::memcpy(encoded.data(), &huge, 4);
  EXPECT_TRUE(StatusIs(codec->Decode(Span(encoded), Pool()).status(), StatusCode::kDataLoss,
                       "lz4: header records 1073741824 decoded bytes"));
}

TEST(Crc32cCodecTest, AppendsTheLittleEndianChecksumAndDecodesToASubrange) {
  auto codec = MakeOrDie(Crc32cSpec{});
  const std::string text = "123456789";
  std::vector<std::byte> data(text.size());
  std::memcpy(data.data(), text.data(), text.size());
  const auto encoded = EncodeOrDie(*codec, data);
  ASSERT_EQ(encoded.size(), 13u);
  EXPECT_EQ(LoadLe32(encoded, 9), 0xE3069283u);
  ASSERT_TRUE(codec->decodes_to_subrange());
  auto sub = codec->DecodedSubrange(Span(encoded));
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(sub->data(), encoded.data());  // no copy
  EXPECT_EQ(sub->size(), 9u);
  auto corrupt = encoded;
  corrupt[0] = std::byte{'0'};
  EXPECT_TRUE(StatusIs(codec->DecodedSubrange(Span(corrupt)).status(), StatusCode::kDataLoss,
                       "crc32c: checksum mismatch over 9 bytes (stored e3069283"));
}

TEST(BytesCodecTest, DecodedSizeComesFromTheHeaderWhereTheFormatHasOne) {
  const auto data = TestBytes(1234, 9, DataKind::kCompressible);
  const std::pair<BytesCodecSpec, std::optional<int64_t>> cases[] = {
      {BloscSpec{}, 1234},        {ZstdSpec{}, 1234},         {Lz4Spec{}, 1234},
      {ZlibSpec{}, std::nullopt}, {GzipSpec{}, std::nullopt}, {Crc32cSpec{}, 1234}};
  for (const auto& [spec, expected] : cases) {
    auto codec = MakeOrDie(spec);
    auto size = codec->DecodedSize(Span(EncodeOrDie(*codec, data)));
    ASSERT_TRUE(size.ok());
    EXPECT_EQ(*size, expected) << DescribeCodec(spec);
  }
}

// Codecs are immutable and keep per-thread library contexts: several threads
// may use one codec at once.
TEST(BytesCodecTest, ConcurrentUseFromSeveralThreads) {
  const BytesCodecSpec specs[] = {BloscSpec{},       BloscSpec{"zstd", 3, 2, 0, 0},
                                  ZstdSpec{3, true}, ZlibSpec{},
                                  GzipSpec{},        Lz4Spec{},
                                  Crc32cSpec{}};
  for (const BytesCodecSpec& spec : specs) {
    SCOPED_TRACE(DescribeCodec(spec));
    auto codec = MakeOrDie(spec, 8);
    std::vector<std::thread> threads;
    std::vector<int> failures(3, 0);
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 10; ++i) {
          const auto data = TestBytes(3000 + 8 * i, t * 100 + i, DataKind::kCompressible);
          auto encoded = codec->Encode(Span(data), Pool());
          if (!encoded.ok()) {
            ++failures[t];
            continue;
          }
          auto decoded = codec->Decode(encoded->span(), Pool(), static_cast<int64_t>(data.size()));
          if (!decoded.ok() || ToVector(*decoded) != data) ++failures[t];
        }
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(failures, std::vector<int>(3, 0));
  }
}

}  // namespace
}  // namespace strata::internal_codec
