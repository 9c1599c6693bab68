// Tests of blosc's partial decoding (BytesCodec::DecodeRuns): every run set
// decodes to the same bytes as slicing the whole frame, reading only the
// header, the block offsets and the blocks the runs touch; frames whose
// blocks are stored out of order, uncompressed frames, and corrupt ones.
#include <blosc.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "strata/core/memory_pool.h"
#include "strata/storage/codec/codec.h"
#include "strata/storage/codec/codec_test_internal.h"

namespace strata::internal_codec {
namespace {

uint32_t Le32(const std::vector<std::byte>& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

void SetLe32(std::vector<std::byte>& b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }

std::vector<std::byte> Encode(const BytesCodec& codec, const std::vector<std::byte>& data) {
  Result<Buffer> e = codec.Encode({data.data(), data.size()}, Pool());
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::vector<std::byte>(e->data(), e->data() + e->size())
                : std::vector<std::byte>();
}

// Serves ranged reads of `frame` and counts what they fetch.
struct FrameReader {
  const std::vector<std::byte>* frame;
  int64_t bytes = 0;
  int64_t reads = 0;

  EncodedRangeReader reader() {
    return [this](int64_t offset, int64_t length) -> Result<EncodedRange> {
      const auto size = static_cast<int64_t>(frame->size());
      if (offset < 0 || length < 0 || offset + length > size) {
        return DataLossError("test reader: past the end of the frame");
      }
      STRATA_ASSIGN_OR_RETURN(Buffer b, Pool().Allocate(length));
      if (length > 0) std::memcpy(b.data(), frame->data() + offset, static_cast<size_t>(length));
      bytes += length;
      ++reads;
      return EncodedRange{std::move(b), size};
    };
  }
};

// Random sorted, non-overlapping runs within `size` bytes.
std::vector<std::pair<int64_t, int64_t>> RandomRuns(int64_t size, int count, std::mt19937_64& rng) {
  std::vector<int64_t> cuts;
  for (int i = 0; i < 2 * count; ++i) cuts.push_back(static_cast<int64_t>(rng() % (size + 1)));
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (int i = 0; i + 1 < 2 * count; i += 2) runs.push_back({cuts[i], cuts[i + 1] - cuts[i]});
  return runs;
}

// Decodes `runs` of `frame` through DecodeRuns and checks them against the
// whole decode.
void ExpectRunsMatch(const BytesCodec& codec, const std::vector<std::byte>& frame,
                     const std::vector<std::byte>& whole,
                     const std::vector<std::pair<int64_t, int64_t>>& runs,
                     FrameReader* counted = nullptr) {
  std::vector<std::vector<std::byte>> outs;
  std::vector<DecodedRun> decoded;
  for (const auto& [offset, length] : runs) outs.emplace_back(length, std::byte{0xee});
  for (size_t i = 0; i < runs.size(); ++i) {
    decoded.push_back({runs[i].first, {outs[i].data(), outs[i].size()}});
  }
  FrameReader local{&frame};
  FrameReader& reader = counted ? *counted : local;
  ASSERT_TRUE(codec.DecodeRuns(reader.reader(), static_cast<int64_t>(whole.size()), decoded, Pool())
                  .ok());
  for (size_t i = 0; i < runs.size(); ++i) {
    ASSERT_TRUE(std::equal(outs[i].begin(), outs[i].end(), whole.begin() + runs[i].first))
        << "run " << i << " at " << runs[i].first << " of " << runs[i].second << " bytes";
  }
}

TEST(BloscRunsTest, EveryRunSetDecodesAsTheWholeFrame) {
  std::mt19937_64 rng(20261202);
  for (std::string cname : {"lz4", "blosclz", "zstd", "zlib", "lz4hc"}) {
    for (int shuffle : {0, 1, 2}) {
      for (int typesize : {1, 4, 8}) {
        for (int64_t blocksize : {0, 4096, 20000}) {
          // Sizes with and without a short last block.
          for (size_t n : {size_t{200000}, size_t{200003} / typesize * typesize}) {
            SCOPED_TRACE(::testing::Message() << cname << " shuffle " << shuffle << " typesize "
                                              << typesize << " blocksize " << blocksize << " n "
                                              << n);
            auto codec = MakeBytesCodec(BloscSpec{cname, 5, shuffle, blocksize, 0}, typesize);
            ASSERT_TRUE(codec.ok()) << codec.status().ToString();
            ASSERT_TRUE((*codec)->decodes_runs());
            const auto data = TestBytes(n, n + typesize, DataKind::kCompressible);
            const auto frame = Encode(**codec, data);
            for (int count : {1, 3, 40}) {
              ExpectRunsMatch(**codec, frame, data, RandomRuns(static_cast<int64_t>(n), count, rng));
            }
            ExpectRunsMatch(**codec, frame, data, {{0, static_cast<int64_t>(n)}});
          }
        }
      }
    }
  }
}

// Blocks decoded by Strata rather than libblosc (lz4, lz4hc, zlib, zstd;
// no shuffle or byte shuffle): streams stored uncompressed (random bytes in
// a compressed frame), every split rule (element sizes up to and past 16, short last blocks,
// libblosc's split mode for zstd), against libblosc's whole decode.
TEST(BloscRunsTest, BlocksStrataDecodesMatchLibblosc) {
  std::mt19937_64 rng(5);
  for (std::string cname : {"lz4", "lz4hc", "zlib", "zstd"}) {
    for (int shuffle : {0, 1}) {
      for (int typesize : {2, 3, 8, 16, 24}) {
        for (DataKind kind : {DataKind::kRandom, DataKind::kCompressible}) {
          const size_t n = size_t{100003} / typesize * typesize;
          SCOPED_TRACE(::testing::Message()
                       << cname << " shuffle " << shuffle << " typesize " << typesize
                       << " half random " << (kind == DataKind::kRandom));
          auto codec = MakeBytesCodec(BloscSpec{cname, 5, shuffle, 8192, 0}, typesize);
          ASSERT_TRUE(codec.ok()) << codec.status().ToString();
          // Random bytes in the second half: their streams are stored
          // uncompressed in a frame that is not.
          auto data = TestBytes(n, n + typesize, DataKind::kCompressible);
          if (kind == DataKind::kRandom) {
            const auto noise = TestBytes(n, typesize, DataKind::kRandom);
            std::copy(noise.begin() + n / 2, noise.end(), data.begin() + n / 2);
          }
          const auto frame = Encode(**codec, data);
          ASSERT_EQ(static_cast<uint8_t>(frame[2]) & BLOSC_MEMCPYED, 0);
          std::vector<std::byte> whole(n);
          ASSERT_TRUE((*codec)->DecodeInto({frame.data(), frame.size()}, {whole.data(), n}).ok());
          ASSERT_EQ(whole, data);
          ExpectRunsMatch(**codec, frame, data, {{0, static_cast<int64_t>(n)}});
          ExpectRunsMatch(**codec, frame, data, RandomRuns(static_cast<int64_t>(n), 7, rng));
        }
      }
    }
  }
}

TEST(BloscRunsTest, ReadsOnlyTheHeaderTheOffsetsAndTheBlocksItNeeds) {
  auto codec = MakeBytesCodec(BloscSpec{"lz4", 5, 1, 8192, 0}, 8);
  ASSERT_TRUE(codec.ok());
  const auto data = TestBytes(1 << 20, 7, DataKind::kCompressible);
  const auto frame = Encode(**codec, data);
  const int64_t blocksize = Le32(frame, 8);
  const int64_t nblocks = (static_cast<int64_t>(data.size()) + blocksize - 1) / blocksize;
  ASSERT_EQ(nblocks, 16);  // libblosc enlarges the 8 KiB by the element size
  EXPECT_EQ(*(*codec)->RunUnit({frame.data(), 16}), blocksize);
  // A run inside block 10: the header, the offsets, and block 10 with the
  // 20 bytes before it.
  FrameReader reader{&frame};
  ExpectRunsMatch(**codec, frame, data, {{10 * blocksize + 100, 1000}}, &reader);
  const int64_t block10 = Le32(frame, 16 + 4 * 11) - Le32(frame, 16 + 4 * 10);
  EXPECT_EQ(reader.bytes, 16 + 4 * nblocks + 20 + block10);
  EXPECT_EQ(reader.reads, 3);
  // Runs over blocks 3..5: one read for the three.
  FrameReader three{&frame};
  ExpectRunsMatch(**codec, frame, data, {{3 * blocksize + 1, 100}, {4 * blocksize, 2 * blocksize}},
                  &three);
  EXPECT_EQ(three.reads, 3);
  // Blocks 3 and 5 but not 4: two reads.
  FrameReader two{&frame};
  ExpectRunsMatch(**codec, frame, data, {{3 * blocksize + 1, 100}, {5 * blocksize + 5, 7}}, &two);
  EXPECT_EQ(two.reads, 4);
  EXPECT_LT(three.bytes, 16 + 4 * nblocks + 20 + 3 * (blocksize + 64));
}

TEST(BloscRunsTest, BlocksStoredOutOfOrderDecode) {
  // Several compressing threads may store blocks in any order: swap the
  // stored bytes of blocks 0 and 1 and their offsets.
  auto codec = MakeBytesCodec(BloscSpec{"zstd", 3, 1, 4096, 0}, 4);
  ASSERT_TRUE(codec.ok());
  const auto data = TestBytes(5 * 4096 + 1000, 3, DataKind::kCompressible);
  auto frame = Encode(**codec, data);
  const uint32_t s0 = Le32(frame, 16), s1 = Le32(frame, 20), s2 = Le32(frame, 24);
  ASSERT_LT(s0, s1);
  ASSERT_LT(s1, s2);
  std::vector<std::byte> b0(frame.begin() + s0, frame.begin() + s1);
  std::vector<std::byte> b1(frame.begin() + s1, frame.begin() + s2);
  std::copy(b1.begin(), b1.end(), frame.begin() + s0);
  std::copy(b0.begin(), b0.end(), frame.begin() + s0 + b1.size());
  SetLe32(frame, 16, static_cast<uint32_t>(s0 + b1.size()));
  SetLe32(frame, 20, s0);
  std::vector<std::byte> whole(data.size());
  ASSERT_TRUE((*codec)->DecodeInto({frame.data(), frame.size()}, {whole.data(), whole.size()}).ok());
  ASSERT_EQ(whole, data);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20; ++i) {
    ExpectRunsMatch(**codec, frame, data, RandomRuns(static_cast<int64_t>(data.size()), 4, rng));
  }
}

TEST(BloscRunsTest, AnUncompressedFrameIsReadRangeByRange) {
  auto codec = MakeBytesCodec(BloscSpec{"lz4", 0, 1, 0, 0}, 8);
  ASSERT_TRUE(codec.ok());
  const auto data = TestBytes(100000, 9, DataKind::kRandom);
  const auto frame = Encode(**codec, data);
  ASSERT_NE(static_cast<uint8_t>(frame[2]) & BLOSC_MEMCPYED, 0);
  EXPECT_EQ(*(*codec)->RunUnit({frame.data(), 16}), 1);
  FrameReader reader{&frame};
  ExpectRunsMatch(**codec, frame, data, {{5, 10}, {50000, 17}}, &reader);
  EXPECT_EQ(reader.bytes, 16 + 10 + 17);
}

TEST(BloscRunsTest, CorruptFramesAreDataLoss) {
  auto codec = MakeBytesCodec(BloscSpec{"lz4", 5, 1, 8192, 0}, 8);
  ASSERT_TRUE(codec.ok());
  // (libblosc enlarges the 8 KiB asked for by the element size, as it
  // compresses each byte of the elements apart.)
  const auto data = TestBytes(10 * 65536, 11, DataKind::kCompressible);
  const auto frame = Encode(**codec, data);
  ASSERT_EQ(Le32(frame, 8), 65536u) << "blocks of 64 KiB";
  std::vector<std::byte> out(100);
  const std::vector<DecodedRun> runs = {{65536 * 3, {out.data(), out.size()}}};
  auto decode = [&](const std::vector<std::byte>& f, int64_t size) {
    FrameReader reader{&f};
    return (*codec)->DecodeRuns(reader.reader(), size, runs, Pool());
  };
  ASSERT_TRUE(decode(frame, static_cast<int64_t>(data.size())).ok());
  EXPECT_TRUE(StatusIs(decode(frame, 12345), StatusCode::kDataLoss, "expected 12345"));
  auto bad_offset = frame;
  SetLe32(bad_offset, 16 + 4 * 3, static_cast<uint32_t>(frame.size() + 10));
  EXPECT_TRUE(StatusIs(decode(bad_offset, static_cast<int64_t>(data.size())),
                       StatusCode::kDataLoss, "block 3 of 10 starts at byte"));
  auto same_offset = frame;
  SetLe32(same_offset, 16 + 4 * 4, Le32(frame, 16 + 4 * 3));
  EXPECT_TRUE(StatusIs(decode(same_offset, static_cast<int64_t>(data.size())),
                       StatusCode::kDataLoss, "start at the same byte"));
  auto garbled = frame;
  const uint32_t start = Le32(frame, 16 + 4 * 3);
  for (uint32_t i = start; i < start + 12; ++i) garbled[i] = std::byte{0xff};
  EXPECT_TRUE(StatusIs(decode(garbled, static_cast<int64_t>(data.size())), StatusCode::kDataLoss,
                       "block 3 of 10"));
  auto version = frame;
  version[0] = std::byte{9};
  EXPECT_TRUE(StatusIs(decode(version, static_cast<int64_t>(data.size())), StatusCode::kDataLoss,
                       "format version 9"));
  // A stored frame of another size than its header records, shorter or
  // longer, is refused before any block is read (as a whole frame is).
  const std::vector<std::byte> truncated(frame.begin(), frame.begin() + Le32(frame, 16 + 4 * 3));
  EXPECT_TRUE(StatusIs(decode(truncated, static_cast<int64_t>(data.size())),
                       StatusCode::kDataLoss,
                       fmt::format("header records a {}-byte frame but the encoded chunk has {} "
                                   "bytes",
                                   frame.size(), truncated.size())));
  auto longer = frame;
  longer.resize(frame.size() + 1);
  EXPECT_TRUE(StatusIs(decode(longer, static_cast<int64_t>(data.size())), StatusCode::kDataLoss,
                       fmt::format("but the encoded chunk has {} bytes", longer.size())));
  EXPECT_TRUE(StatusIs((*codec)->RunUnit({frame.data(), 10}).status(), StatusCode::kDataLoss,
                       "shorter than the 16-byte blosc header"));
}

TEST(BloscRunsTest, OtherCodecsDoNotDecodeRuns) {
  for (const BytesCodecSpec& spec :
       {BytesCodecSpec{ZstdSpec{3, false}}, BytesCodecSpec{ZlibSpec{1}}, BytesCodecSpec{Crc32cSpec{}}}) {
    auto codec = MakeBytesCodec(spec, 4);
    ASSERT_TRUE(codec.ok());
    EXPECT_FALSE((*codec)->decodes_runs());
    EXPECT_TRUE(StatusIs((*codec)->RunUnit({}).status(), StatusCode::kInternal,
                         "cannot decode part of a chunk"));
  }
}

}  // namespace
}  // namespace strata::internal_codec
