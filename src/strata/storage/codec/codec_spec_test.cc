#include "strata/storage/codec/codec_spec.h"

#include <gtest/gtest.h>

#include "strata/storage/codec/codec_test_internal.h"

namespace strata::internal_codec {
namespace {

std::vector<BytesCodecSpec> ParseOrDie(std::string_view text) {
  auto specs = ParseCodecArgument(text);
  EXPECT_TRUE(specs.ok()) << text << ": " << specs.status().ToString();
  return specs.ok() ? *specs : std::vector<BytesCodecSpec>();
}

TEST(ParseCodecArgumentTest, NoneIsNoCodecs) {
  EXPECT_TRUE(ParseOrDie("none").empty());
  EXPECT_TRUE(ParseOrDie("  none ").empty());
}

TEST(ParseCodecArgumentTest, NamesAloneGiveTheDefaults) {
  EXPECT_EQ(ParseOrDie("blosc"), (std::vector<BytesCodecSpec>{BloscSpec{}}));
  EXPECT_EQ(ParseOrDie("zstd"), (std::vector<BytesCodecSpec>{ZstdSpec{}}));
  EXPECT_EQ(ParseOrDie("zlib"), (std::vector<BytesCodecSpec>{ZlibSpec{}}));
  EXPECT_EQ(ParseOrDie("gzip"), (std::vector<BytesCodecSpec>{GzipSpec{}}));
  EXPECT_EQ(ParseOrDie("lz4"), (std::vector<BytesCodecSpec>{Lz4Spec{}}));
  EXPECT_EQ(ParseOrDie("crc32c"), (std::vector<BytesCodecSpec>{Crc32cSpec{}}));
}

TEST(ParseCodecArgumentTest, Options) {
  EXPECT_EQ(ParseOrDie("blosc:cname=zstd,clevel=3,shuffle=bit"),
            (std::vector<BytesCodecSpec>{BloscSpec{"zstd", 3, 2, 0, 0}}));
  EXPECT_EQ(ParseOrDie("blosc:cname=lz4hc,shuffle=none,blocksize=65536,typesize=4"),
            (std::vector<BytesCodecSpec>{BloscSpec{"lz4hc", 5, 0, 65536, 4}}));
  EXPECT_EQ(ParseOrDie("blosc:shuffle=auto"),
            (std::vector<BytesCodecSpec>{BloscSpec{"lz4", 5, -1, 0, 0}}));
  EXPECT_EQ(ParseOrDie("blosc:shuffle=byte"), (std::vector<BytesCodecSpec>{BloscSpec{}}));
  const std::pair<const char*, int> shuffles[] = {{"0", 0}, {"1", 1}, {"2", 2}, {"-1", -1}};
  for (auto [text, shuffle] : shuffles) {
    EXPECT_EQ(ParseOrDie(std::string("blosc:shuffle=") + text),
              (std::vector<BytesCodecSpec>{BloscSpec{"lz4", 5, shuffle, 0, 0}}));
  }
  EXPECT_EQ(ParseOrDie("zstd:level=5"), (std::vector<BytesCodecSpec>{ZstdSpec{5, false}}));
  EXPECT_EQ(ParseOrDie("zstd:level=-3,checksum=true"),
            (std::vector<BytesCodecSpec>{ZstdSpec{-3, true}}));
  EXPECT_EQ(ParseOrDie("zstd:checksum=false"), (std::vector<BytesCodecSpec>{ZstdSpec{1, false}}));
  EXPECT_EQ(ParseOrDie("zlib:level=6"), (std::vector<BytesCodecSpec>{ZlibSpec{6}}));
  EXPECT_EQ(ParseOrDie("gzip:level=9"), (std::vector<BytesCodecSpec>{GzipSpec{9}}));
  EXPECT_EQ(ParseOrDie("lz4:acceleration=2"), (std::vector<BytesCodecSpec>{Lz4Spec{2}}));
}

TEST(ParseCodecArgumentTest, ChainsJoinWithPlus) {
  EXPECT_EQ(ParseOrDie("zstd+crc32c"), (std::vector<BytesCodecSpec>{ZstdSpec{}, Crc32cSpec{}}));
  EXPECT_EQ(ParseOrDie("blosc:cname=zstd, clevel=3 + crc32c"),
            (std::vector<BytesCodecSpec>{BloscSpec{"zstd", 3, 1, 0, 0}, Crc32cSpec{}}));
}

TEST(ParseCodecArgumentTest, ErrorsNameTheBadPart) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"", "empty codec argument"},
      {"   ", "empty codec argument"},
      {"snappy",
       "unknown codec 'snappy' (expected blosc, zstd, zlib, gzip, lz4, bz2, crc32c, crc32, "
       "adler32, fletcher32, shuffle or none)"},
      {"bz2:level=0", "bz2 level 0 out of range 1..9"},
      {"crc32:location=middle", "crc32 location 'middle' is not start or end"},
      {"fletcher32:location=end", "fletcher32 takes no options"},
      {"shuffle:size=4", "unknown shuffle option 'size' (expected elementsize)"},
      {"Blosc", "unknown codec 'Blosc'"},
      {"none+zstd", "'none' cannot be combined with other codecs"},
      {"zstd++crc32c", "empty codec in 'zstd++crc32c'"},
      {"zstd+", "empty codec in 'zstd+'"},
      {"blosc:foo=1",
       "unknown blosc option 'foo' (expected cname, clevel, shuffle, blocksize, "
       "typesize)"},
      {"blosc:cname=foo",
       "unknown blosc cname 'foo' (expected one of lz4, lz4hc, blosclz, zstd, zlib)"},
      {"blosc:clevel=x", "blosc clevel 'x' is not an integer"},
      {"blosc:clevel=5x", "blosc clevel '5x' is not an integer"},
      {"blosc:clevel=", "blosc clevel '' is not an integer"},
      {"blosc:clevel=12", "blosc clevel 12 out of range 0..9"},
      {"blosc:shuffle=sideways", "blosc shuffle 'sideways' is not one of none, byte, bit, auto"},
      {"blosc:clevel", "blosc option 'clevel' is not key=value"},
      {"blosc:", "blosc option '' is not key=value"},
      {"blosc:clevel=3,clevel=4", "blosc option 'clevel' given twice"},
      {"zstd:lvl=3", "unknown zstd option 'lvl' (expected level, checksum)"},
      {"zstd:checksum=maybe", "zstd checksum 'maybe' is not a boolean"},
      {"zstd:level=99", "zstd level 99 out of range"},
      {"zlib:level=10", "zlib level 10 out of range 0..9"},
      {"gzip:level=12", "gzip level 12 out of range 0..9"},
      {"gzip:clevel=1", "unknown gzip option 'clevel' (expected level)"},
      {"lz4:acceleration=0", "lz4 acceleration 0 out of range"},
      {"lz4:level=1", "unknown lz4 option 'level' (expected acceleration)"},
      {"crc32c:x=1", "crc32c takes no options"},
  };
  for (const auto& [text, message] : cases) {
    EXPECT_TRUE(StatusIs(ParseCodecArgument(text).status(), StatusCode::kInvalidArgument, message))
        << "'" << text << "'";
  }
}

TEST(DescribeCodecTest, OneLinePerCodec) {
  EXPECT_EQ(DescribeCodec(BloscSpec{}), "blosc(cname=lz4, clevel=5, shuffle=byte)");
  EXPECT_EQ(DescribeCodec(BloscSpec{"zstd", 3, 2, 0, 0}),
            "blosc(cname=zstd, clevel=3, shuffle=bit)");
  EXPECT_EQ(DescribeCodec(BloscSpec{"lz4", 5, 0, 0, 0}),
            "blosc(cname=lz4, clevel=5, shuffle=none)");
  EXPECT_EQ(DescribeCodec(BloscSpec{"zlib", 1, -1, 65536, 4}),
            "blosc(cname=zlib, clevel=1, shuffle=auto, blocksize=65536, typesize=4)");
  EXPECT_EQ(DescribeCodec(ZstdSpec{3, false}), "zstd(level=3)");
  EXPECT_EQ(DescribeCodec(ZstdSpec{3, true}), "zstd(level=3, checksum=true)");
  EXPECT_EQ(DescribeCodec(ZlibSpec{1}), "zlib(level=1)");
  EXPECT_EQ(DescribeCodec(GzipSpec{6}), "gzip(level=6)");
  EXPECT_EQ(DescribeCodec(Lz4Spec{1}), "lz4(acceleration=1)");
  EXPECT_EQ(DescribeCodec(Crc32cSpec{}), "crc32c");
}

TEST(CodecNameTest, ZarrSpellings) {
  EXPECT_EQ(CodecName(BloscSpec{}), "blosc");
  EXPECT_EQ(CodecName(ZstdSpec{}), "zstd");
  EXPECT_EQ(CodecName(ZlibSpec{}), "zlib");
  EXPECT_EQ(CodecName(GzipSpec{}), "gzip");
  EXPECT_EQ(CodecName(Lz4Spec{}), "lz4");
  EXPECT_EQ(CodecName(Crc32cSpec{}), "crc32c");
}

}  // namespace
}  // namespace strata::internal_codec
