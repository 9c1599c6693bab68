// Tests of blosc's streaming encoder (BytesCodec::EncodeTo): the frame it
// writes segment by segment is libblosc's whole frame byte for byte where
// that one is compressed, decodes to the input (libblosc, Strata's decoder
// and its partial decoder) where libblosc's would be stored uncompressed,
// keeps its scratch to a few segments, and declines (FailedPrecondition)
// what it cannot stream.
#include <blosc.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "strata/core/memory_pool.h"
#include "strata/storage/codec/codec.h"
#include "strata/storage/codec/codec_test_internal.h"

namespace strata::internal_codec {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Collects what an encoder appends, as a store writer would.
struct VectorSink final : EncodedSink {
  std::vector<std::byte> bytes;
  int appends = 0;
  bool patched = false;

  Status Append(std::span<const std::byte> b) override {
    bytes.insert(bytes.end(), b.begin(), b.end());
    ++appends;
    return Status::Ok();
  }
  Status PatchAt(int64_t offset, std::span<const std::byte> b) override {
    EXPECT_LE(offset + static_cast<int64_t>(b.size()), static_cast<int64_t>(bytes.size()));
    std::memcpy(bytes.data() + offset, b.data(), b.size());
    patched = true;
    return Status::Ok();
  }
};

std::vector<std::byte> Whole(const BytesCodec& codec, std::span<const std::byte> data) {
  Result<Buffer> e = codec.Encode(data, Pool());
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::vector<std::byte>(e->data(), e->data() + e->size())
                : std::vector<std::byte>();
}

std::vector<std::byte> Streamed(const BytesCodec& codec, std::span<const std::byte> data) {
  EXPECT_TRUE(codec.encodes_streamed());
  VectorSink sink;
  Status s = codec.EncodeTo(data, sink, Pool());
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(sink.patched);
  EXPECT_GT(sink.appends, 2);  // the header, then segment after segment
  EXPECT_LE(static_cast<int64_t>(sink.bytes.size()),
            codec.MaxStreamedSize(static_cast<int64_t>(data.size())));
  return std::move(sink.bytes);
}

// libblosc's own decoder, and Strata's whole and partial ones.
void ExpectDecodes(const BytesCodec& codec, const std::vector<std::byte>& frame,
                   std::span<const std::byte> data) {
  std::vector<std::byte> out(data.size());
  ASSERT_EQ(blosc_decompress_ctx(frame.data(), out.data(), out.size(), 1),
            static_cast<int>(data.size()));
  ASSERT_TRUE(std::equal(out.begin(), out.end(), data.begin()));
  std::fill(out.begin(), out.end(), std::byte{0});
  ASSERT_TRUE(codec.DecodeInto({frame.data(), frame.size()}, {out.data(), out.size()}).ok());
  ASSERT_TRUE(std::equal(out.begin(), out.end(), data.begin()));
  // Two runs: across a segment boundary (8 MiB), and the last bytes.
  const int64_t n = static_cast<int64_t>(data.size());
  std::vector<std::byte> a(kMiB), b(1000);
  std::vector<DecodedRun> runs = {{int64_t{8 << 20} - int64_t{kMiB / 2}, {a.data(), a.size()}},
                                  {n - 1000, {b.data(), b.size()}}};
  EncodedRangeReader read = [&](int64_t offset, int64_t length) -> Result<EncodedRange> {
    if (offset < 0 || offset + length > static_cast<int64_t>(frame.size())) {
      return DataLossError("test reader: past the end of the frame");
    }
    STRATA_ASSIGN_OR_RETURN(Buffer buffer, Pool().Allocate(length));
    std::memcpy(buffer.data(), frame.data() + offset, static_cast<size_t>(length));
    return EncodedRange{std::move(buffer), static_cast<int64_t>(frame.size())};
  };
  ASSERT_TRUE(codec.DecodeRuns(read, n, runs, Pool()).ok());
  EXPECT_TRUE(std::equal(a.begin(), a.end(), data.begin() + runs[0].offset));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), data.begin() + runs[1].offset));
}

TEST(BloscStreamedTest, FramesAreLibbloscsWholeFrames) {
  const std::vector<std::byte> data = TestBytes(25 * kMiB + 4099, 3, DataKind::kCompressible);
  const int typesizes[] = {1, 4, 8, 2, 16};
  const int64_t blocksizes[] = {0, 4096, 0, 300000};
  int i = 0;
  for (std::string cname : {"lz4", "blosclz", "zstd", "zlib", "lz4hc"}) {
    for (int shuffle : {0, 1, 2}) {
      const int typesize = typesizes[i % 5];
      const int64_t blocksize = blocksizes[i % 4];
      // Whole segments exactly; a short last block; a tail shorter than a
      // block after the last whole segment.
      const size_t sizes[] = {16 * kMiB, (16 * kMiB + 4099) / typesize * typesize,
                              (24 * kMiB + 100) / typesize * typesize,
                              (25 * kMiB + 4099) / typesize * typesize};
      const size_t n = sizes[i % 4];
      ++i;
      SCOPED_TRACE(::testing::Message() << cname << " shuffle " << shuffle << " typesize "
                                        << typesize << " blocksize " << blocksize << " n " << n);
      auto codec = MakeBytesCodec(BloscSpec{cname, 5, shuffle, blocksize, 0}, typesize);
      ASSERT_TRUE(codec.ok()) << codec.status().ToString();
      const std::span<const std::byte> input(data.data(), n);
      const auto whole = Whole(**codec, input);
      ASSERT_EQ(static_cast<uint8_t>(whole[2]) & BLOSC_MEMCPYED, 0);
      const auto streamed = Streamed(**codec, input);
      ASSERT_EQ(streamed.size(), whole.size());
      EXPECT_TRUE(streamed == whole);
      if (i == 1) ExpectDecodes(**codec, streamed, input);
    }
  }
}

// Random bytes: libblosc stores the whole frame uncompressed; the streamed
// frame stays a compressed one whose streams are stored as they are, which
// every decoder reads back (numcodecs too: tests/interop).
TEST(BloscStreamedTest, IncompressibleInputStillDecodes) {
  for (int shuffle : {0, 1, 2}) {
    for (std::string cname : {"lz4", "zstd"}) {
      SCOPED_TRACE(::testing::Message() << cname << " shuffle " << shuffle);
      const size_t n = 17 * kMiB + 40;
      auto data = TestBytes(n, 11, DataKind::kRandom);
      // A compressible stretch in the middle: a mix of stored and
      // compressed streams.
      const auto runs = TestBytes(3 * kMiB, 12, DataKind::kCompressible);
      std::copy(runs.begin(), runs.end(), data.begin() + 7 * kMiB);
      auto codec = MakeBytesCodec(BloscSpec{cname, 5, shuffle, 0, 0}, 8);
      ASSERT_TRUE(codec.ok());
      const auto streamed = Streamed(**codec, data);
      EXPECT_EQ(static_cast<uint8_t>(streamed[2]) & BLOSC_MEMCPYED, 0);
      ExpectDecodes(**codec, streamed, data);
    }
  }
}

TEST(BloscStreamedTest, ScratchIsAFewSegmentsNotTheInput) {
  const auto data = TestBytes(64 * kMiB, 5, DataKind::kCompressible);
  auto codec = MakeBytesCodec(BloscSpec{"lz4", 5, 1, 0, 0}, 8);
  ASSERT_TRUE(codec.ok());
  auto pool = MemoryPool::Default()->NewChild({.name = "encode"});
  VectorSink sink;
  ASSERT_TRUE((*codec)->EncodeTo(data, sink, *pool).ok());
  EXPECT_GT(pool->peak_bytes(), 0);
  EXPECT_LT(pool->peak_bytes(), int64_t{12} << 20) << "of a 64 MiB input";
  EXPECT_EQ(pool->bytes_in_use(), 0);
  // The whole encoding holds a buffer of the input's size.
  auto whole = MemoryPool::Default()->NewChild({.name = "whole"});
  ASSERT_TRUE((*codec)->Encode(data, *whole).ok());
  EXPECT_GE(whole->peak_bytes(), int64_t{64} << 20);
}

TEST(BloscStreamedTest, DeclinesWhatItCannotStream) {
  const auto data = TestBytes(40 * kMiB, 9, DataKind::kCompressible);
  // Blocks larger than a segment (zstd does not split, so libblosc keeps
  // the forced 16 MiB), and a small input.
  auto big_blocks = MakeBytesCodec(BloscSpec{"zstd", 1, 1, int64_t{16} << 20, 0}, 8);
  ASSERT_TRUE(big_blocks.ok());
  VectorSink sink;
  EXPECT_TRUE(StatusIs((*big_blocks)->EncodeTo(data, sink, Pool()),
                       StatusCode::kFailedPrecondition, "blocks too large"));
  auto lz4 = MakeBytesCodec(BloscSpec{"lz4", 5, 1, 0, 0}, 8);
  ASSERT_TRUE(lz4.ok());
  EXPECT_TRUE(StatusIs((*lz4)->EncodeTo(std::span(data).first(kMiB), sink, Pool()),
                       StatusCode::kFailedPrecondition, "small"));
  // Level 0 (libblosc copies the input as it is) does not stream.
  auto copy = MakeBytesCodec(BloscSpec{"lz4", 0, 1, 0, 0}, 8);
  ASSERT_TRUE(copy.ok());
  EXPECT_FALSE((*copy)->encodes_streamed());
  // Other codecs do not stream.
  auto zstd = MakeBytesCodec(ZstdSpec{}, 8);
  ASSERT_TRUE(zstd.ok());
  EXPECT_FALSE((*zstd)->encodes_streamed());
}

}  // namespace
}  // namespace strata::internal_codec
