// Tests for the bytes codecs: one conformance suite that every codec
// configuration runs (round trips over every dtype and size, corruption of
// every kind), and option validation. Known answers from numcodecs are in
// codec_known_answer_test.cc, the formats' framing in codec_framing_test.cc,
// CRC-32C in crc32c_test.cc.
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

// ---------------------------------------------------------------- conformance suite

struct CodecCase {
  std::string name;
  BytesCodecSpec spec;
};

std::vector<CodecCase> AllCodecCases() {
  std::vector<CodecCase> cases;
  for (std::string cname : {"lz4", "lz4hc", "blosclz", "zstd", "zlib"}) {
    for (int shuffle : {0, 1, 2}) {
      for (int clevel : {1, 5}) {
        cases.push_back({fmt::format("blosc_{}_shuffle{}_clevel{}", cname, shuffle, clevel),
                         BloscSpec{cname, clevel, shuffle, 0, 0}});
      }
      cases.push_back({fmt::format("blosc_{}_shuffle{}_blocksize256", cname, shuffle),
                       BloscSpec{cname, 5, shuffle, 256, 0}});
    }
  }
  cases.push_back({"blosc_lz4_clevel0", BloscSpec{"lz4", 0, 1, 0, 0}});
  cases.push_back({"blosc_lz4_autoshuffle", BloscSpec{"lz4", 5, -1, 0, 0}});
  cases.push_back({"blosc_zstd_typesize3", BloscSpec{"zstd", 3, 1, 0, 3}});
  for (int level : {-5, 1, 3, 19}) {
    cases.push_back({fmt::format("zstd_level{}", level < 0 ? "m5" : std::to_string(level)),
                     ZstdSpec{level, false}});
  }
  cases.push_back({"zstd_level3_checksum", ZstdSpec{3, true}});
  for (int level : {0, 1, 9}) {
    cases.push_back({fmt::format("zlib_level{}", level), ZlibSpec{level}});
    cases.push_back({fmt::format("gzip_level{}", level), GzipSpec{level}});
  }
  for (int level : {1, 9}) cases.push_back({fmt::format("bz2_level{}", level), Bz2Spec{level}});
  using K = Checksum32Spec::Kind;
  for (bool at_start : {true, false}) {
    const char* where = at_start ? "start" : "end";
    cases.push_back({fmt::format("crc32_{}", where), Checksum32Spec{K::kCrc32, at_start}});
    cases.push_back({fmt::format("adler32_{}", where), Checksum32Spec{K::kAdler32, at_start}});
    cases.push_back({fmt::format("numcodecs_crc32c_{}", where), Checksum32Spec{K::kCrc32c, at_start}});
  }
  cases.push_back({"fletcher32", Checksum32Spec{K::kFletcher32, false}});
  // (Shuffle is a permutation without framing: it cannot notice corruption,
  // so it has its own tests below instead of this suite.)
  cases.push_back({"lz4_acceleration1", Lz4Spec{1}});
  cases.push_back({"lz4_acceleration8", Lz4Spec{8}});
  cases.push_back({"crc32c", Crc32cSpec{}});
  return cases;
}

class BytesCodecConformanceTest : public ::testing::TestWithParam<CodecCase> {
 protected:
  const BytesCodecSpec& spec() const { return GetParam().spec; }
  std::string_view name() const { return CodecName(spec()); }
  // Formats that detect any corruption of their payload.
  bool checksummed() const { return std::holds_alternative<Crc32cSpec>(spec()); }
};

// Decode(Encode(x)) == x for every dtype's element size, for empty, one-element,
// ragged and multi-block inputs, random and compressible.
TEST_P(BytesCodecConformanceTest, RoundTripsEveryDTypeAndSize) {
  for (DType dtype : AllDTypes()) {
    auto codec = MakeOrDie(spec(), dtype.size());
    for (int64_t elements : {0, 1, 7, 300, 1500}) {
      for (DataKind kind : {DataKind::kRandom, DataKind::kCompressible}) {
        SCOPED_TRACE(fmt::format("{} x {} {}", elements, dtype.name(),
                                 kind == DataKind::kRandom ? "random" : "compressible"));
        const auto data = TestBytes(elements * dtype.size(), elements, kind);
        const auto encoded = EncodeOrDie(*codec, data);
        ASSERT_LE(static_cast<int64_t>(encoded.size()), codec->MaxEncodedSize(data.size()));

        std::vector<std::byte> decoded(data.size());
        ASSERT_TRUE(codec->DecodeInto(Span(encoded), Span(decoded)).ok());
        EXPECT_EQ(decoded, data);

        auto with_hint = codec->Decode(Span(encoded), Pool(), static_cast<int64_t>(data.size()));
        ASSERT_TRUE(with_hint.ok()) << with_hint.status().ToString();
        EXPECT_EQ(ToVector(*with_hint), data);

        auto without_hint = codec->Decode(Span(encoded), Pool());
        ASSERT_TRUE(without_hint.ok()) << without_hint.status().ToString();
        EXPECT_EQ(ToVector(*without_hint), data);

        auto size = codec->DecodedSize(Span(encoded));
        ASSERT_TRUE(size.ok()) << size.status().ToString();
        if (size->has_value()) {
          EXPECT_EQ(**size, static_cast<int64_t>(data.size()));
        }
      }
    }
  }
}

TEST_P(BytesCodecConformanceTest, TruncatedInputIsDataLoss) {
  auto codec = MakeOrDie(spec(), 4);
  for (DataKind kind : {DataKind::kRandom, DataKind::kCompressible}) {
    const auto data = TestBytes(4000, 7, kind);
    const auto encoded = EncodeOrDie(*codec, data);
    for (size_t keep : {size_t{0}, size_t{1}, size_t{3}, encoded.size() / 2, encoded.size() - 1}) {
      SCOPED_TRACE(fmt::format("keeping {} of {} bytes", keep, encoded.size()));
      std::vector<std::byte> truncated(encoded.begin(), encoded.begin() + keep);
      std::vector<std::byte> decoded(data.size());
      EXPECT_TRUE(StatusIs(codec->DecodeInto(Span(truncated), Span(decoded)), StatusCode::kDataLoss,
                           name()));
      EXPECT_TRUE(
          StatusIs(codec->Decode(Span(truncated), Pool()).status(), StatusCode::kDataLoss, name()));
    }
  }
}

TEST_P(BytesCodecConformanceTest, WrongDecodedSizeIsDataLossNamingBothSizes) {
  auto codec = MakeOrDie(spec(), 8);
  const auto data = TestBytes(8000, 3, DataKind::kCompressible);
  const auto encoded = EncodeOrDie(*codec, data);
  for (size_t wrong : {size_t{0}, size_t{7999}, size_t{8001}, size_t{800}}) {
    SCOPED_TRACE(wrong);
    std::vector<std::byte> decoded(wrong);
    Status s = codec->DecodeInto(Span(encoded), Span(decoded));
    EXPECT_TRUE(StatusIs(s, StatusCode::kDataLoss, fmt::format("expected {}", wrong)));
    EXPECT_TRUE(s.message().starts_with(name())) << s.message();
    EXPECT_TRUE(StatusIs(codec->Decode(Span(encoded), Pool(), static_cast<int64_t>(wrong)).status(),
                         StatusCode::kDataLoss, fmt::format("expected {}", wrong)));
  }
  // The message of the common case reads naturally.
  std::vector<std::byte> small(800);
  Status s = codec->DecodeInto(Span(encoded), Span(small));
  // Streams without a recorded size (zlib, gzip, bz2) only know it is more.
  if (!std::holds_alternative<ZlibSpec>(spec()) && !std::holds_alternative<GzipSpec>(spec()) &&
      !std::holds_alternative<Bz2Spec>(spec())) {
    EXPECT_EQ(s.message(),
              fmt::format("{}: encoded chunk decodes to 8000 bytes, expected 800", name()));
  } else {
    EXPECT_EQ(
        s.message(),
        fmt::format("{}: encoded chunk decodes to more than 800 bytes, expected 800", name()));
  }
}

TEST_P(BytesCodecConformanceTest, GarbageIsDataLoss) {
  auto codec = MakeOrDie(spec(), 4);
  for (size_t length : {0, 1, 3, 4, 16, 17, 100, 1000, 5000}) {
    SCOPED_TRACE(length);
    const auto garbage = TestBytes(length, 1000 + length, DataKind::kRandom);
    std::vector<std::byte> decoded(1000);
    EXPECT_TRUE(
        StatusIs(codec->DecodeInto(Span(garbage), Span(decoded)), StatusCode::kDataLoss, name()));
    EXPECT_TRUE(
        StatusIs(codec->Decode(Span(garbage), Pool()).status(), StatusCode::kDataLoss, name()));
  }
}

// Every single-bit flip either is caught (DataLoss) or decodes to some bytes of
// the right size; never a crash or a read out of bounds (the debug build runs
// this under ASan). A checksum catches every flip.
TEST_P(BytesCodecConformanceTest, BitFlipsAreCaughtOrHarmless) {
  auto codec = MakeOrDie(spec(), 4);
  for (DataKind kind : {DataKind::kRandom, DataKind::kCompressible}) {
    const auto data = TestBytes(1200, 11, kind);
    const auto encoded = EncodeOrDie(*codec, data);
    const size_t bits = encoded.size() * 8;
    const size_t step = std::max<size_t>(1, bits / 600);  // about 600 flips per input
    int caught = 0, flips = 0;
    for (size_t bit = 0; bit < bits; bit += step) {
      auto corrupt = encoded;
      corrupt[bit / 8] ^= static_cast<std::byte>(1 << (bit % 8));
      std::vector<std::byte> decoded(data.size());
      Status s = codec->DecodeInto(Span(corrupt), Span(decoded));
      ++flips;
      if (!s.ok()) {
        ++caught;
        EXPECT_TRUE(StatusIs(s, StatusCode::kDataLoss, name())) << "bit " << bit;
      }
      auto grown = codec->Decode(Span(corrupt), Pool());
      if (!grown.ok()) {
        EXPECT_EQ(grown.status().code(), StatusCode::kDataLoss) << "bit " << bit;
      }
    }
    if (checksummed()) {
      EXPECT_EQ(caught, flips);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, BytesCodecConformanceTest, ::testing::ValuesIn(AllCodecCases()),
                         [](const ::testing::TestParamInfo<CodecCase>& info) {
                           return info.param.name;
                         });

// ---------------------------------------------------------------- validation

TEST(MakeBytesCodecTest, InvalidOptionsAreInvalidArgumentNamingTheOption) {
  const std::pair<BytesCodecSpec, std::string> cases[] = {
      {BloscSpec{"foo", 5, 1, 0, 0},
       "unknown blosc cname 'foo' (expected one of lz4, lz4hc, blosclz, zstd, zlib)"},
      {BloscSpec{"snappy", 5, 1, 0, 0}, "unknown blosc cname 'snappy'"},
      {BloscSpec{"lz4", 10, 1, 0, 0}, "blosc clevel 10 out of range 0..9"},
      {BloscSpec{"lz4", -1, 1, 0, 0}, "blosc clevel -1 out of range 0..9"},
      {BloscSpec{"lz4", 5, 3, 0, 0}, "blosc shuffle 3 is not one of"},
      {BloscSpec{"lz4", 5, 1, -1, 0}, "blosc blocksize -1 out of range"},
      {BloscSpec{"lz4", 5, 1, 0, 256}, "blosc typesize 256 out of range 0..255"},
      {ZstdSpec{23, false}, "zstd level 23 out of range"},
      {ZlibSpec{10}, "zlib level 10 out of range 0..9"},
      {ZlibSpec{-1}, "zlib level -1 out of range 0..9"},
      {GzipSpec{12}, "gzip level 12 out of range 0..9"},
      {Lz4Spec{0}, "lz4 acceleration 0 out of range 1..65537"},
  };
  for (const auto& [spec, message] : cases) {
    auto codec = MakeBytesCodec(spec, 8);
    EXPECT_TRUE(StatusIs(codec.status(), StatusCode::kInvalidArgument, message));
  }
  EXPECT_EQ(MakeBytesCodec(GzipSpec{12}, 8).status().message(), "gzip level 12 out of range 0..9");
}

}  // namespace
}  // namespace strata::internal_codec
