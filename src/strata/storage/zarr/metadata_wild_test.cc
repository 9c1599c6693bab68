// Metadata as other implementations write it: zarr-python 3's numcodecs.*
// codec names, v2 filters, float16 and the fixed-length types, bool fill
// values given as 0/1, the early-draft transpose order.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "strata/core/float16.h"
#include "strata/storage/zarr/metadata.h"

namespace strata {
namespace {

using json = nlohmann::json;

#define EXPECT_STATUS_HAS(expr, code_, substring)                                    \
  do {                                                                               \
    const ::strata::Status s_ = ::strata::internal_base::ToStatus(expr);             \
    EXPECT_EQ(s_.code(), code_) << s_.ToString();                                    \
    EXPECT_NE(s_.message().find(substring), std::string_view::npos)                  \
        << "message: " << s_.message() << "\nexpected to contain: " << (substring);  \
  } while (false)

std::string V3Array(std::string_view data_type, std::string_view fill, std::string_view codecs) {
  return fmt::format(R"({{
    "zarr_format": 3, "node_type": "array", "shape": [10], "data_type": {},
    "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [5]}}}},
    "chunk_key_encoding": {{"name": "default"}}, "fill_value": {}, "codecs": {}}})",
                     data_type, fill, codecs);
}

std::string V2Array(std::string_view dtype, std::string_view fill, std::string_view compressor,
                    std::string_view filters) {
  return fmt::format(R"({{"zarr_format": 2, "shape": [10], "chunks": [5], "dtype": "{}",
    "compressor": {}, "filters": {}, "fill_value": {}, "order": "C"}})",
                     dtype, compressor, filters, fill);
}

TEST(NumcodecsNamesTest, ZarrPython3CodecsParseAndRoundTrip) {
  // The forms zarr-python 3 (src/zarr/codecs/numcodecs/_codecs.py) writes:
  // "numcodecs.<id>" with numcodecs' configuration minus the id.
  using K = Checksum32Spec::Kind;
  const std::pair<const char*, BytesCodecSpec> cases[] = {
      {R"({"name": "numcodecs.zlib", "configuration": {"level": 3}})", ZlibSpec{3}},
      {R"({"name": "numcodecs.zlib", "configuration": {}})", ZlibSpec{1}},
      {R"({"name": "numcodecs.bz2", "configuration": {"level": 9}})", Bz2Spec{9}},
      {R"({"name": "numcodecs.lz4", "configuration": {"acceleration": 2}})", Lz4Spec{2}},
      {R"({"name": "numcodecs.fletcher32", "configuration": {}})",
       Checksum32Spec{K::kFletcher32, false}},
      {R"({"name": "numcodecs.crc32", "configuration": {"location": "end"}})",
       Checksum32Spec{K::kCrc32, false}},
      {R"({"name": "numcodecs.adler32"})", Checksum32Spec{K::kAdler32, true}},
      {R"({"name": "numcodecs.crc32c", "configuration": {}})", Checksum32Spec{K::kCrc32c, false}},
      {R"({"name": "numcodecs.shuffle", "configuration": {"elementsize": 2}})", ShuffleSpec{2}},
      {R"({"name": "numcodecs.gzip", "configuration": {"level": 5}})", GzipSpec{5}},
      {R"({"name": "numcodecs.zstd", "configuration": {"level": 3}})", ZstdSpec{3, false}},
      {R"({"name": "numcodecs.blosc", "configuration": {"cname": "zstd", "clevel": 3,
          "shuffle": 2, "blocksize": 0}})",
       BloscSpec{"zstd", 3, 2, 0, 0}},
  };
  for (const auto& [codec, spec] : cases) {
    SCOPED_TRACE(codec);
    const std::string codecs =
        fmt::format(R"([{{"name": "bytes", "configuration": {{"endian": "little"}}}}, {}])", codec);
    Result<ArrayMetadata> m = ParseZarrV3ArrayMetadata(V3Array("\"int16\"", "0", codecs));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    ASSERT_EQ(m->encoding.bytes_codecs.size(), 1u);
    EXPECT_EQ(m->encoding.bytes_codecs[0], spec);
    // Written back and read again: the same codec (zlib, bz2, lz4, the
    // checksums and shuffle keep their numcodecs.* names).
    const std::string text = m->Encode()[0].second;
    Result<ArrayMetadata> again = ParseZarrV3ArrayMetadata(text);
    ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << text;
    EXPECT_EQ(again->encoding, m->encoding);
  }
}

TEST(NumcodecsNamesTest, EncodeWritesZarrPython3Forms) {
  ArrayMetadata m = *ParseZarrV3ArrayMetadata(V3Array(
      "\"float64\"", "0", R"([{"name": "bytes", "configuration": {"endian": "little"}}])"));
  m.encoding.bytes_codecs = {ZlibSpec{1}, Checksum32Spec{Checksum32Spec::Kind::kCrc32, true}};
  json doc = json::parse(m.Encode()[0].second);
  EXPECT_EQ(doc["codecs"][1], json::parse(R"({"name": "numcodecs.zlib",
                                              "configuration": {"level": 1}})"));
  EXPECT_EQ(doc["codecs"][2], json::parse(R"({"name": "numcodecs.crc32",
                                              "configuration": {}})"));
  m.encoding.bytes_codecs = {Lz4Spec{1}, Checksum32Spec{Checksum32Spec::Kind::kFletcher32, false}};
  doc = json::parse(m.Encode()[0].second);
  EXPECT_EQ(doc["codecs"][1], json::parse(R"({"name": "numcodecs.lz4",
                                              "configuration": {"acceleration": 1}})"));
  EXPECT_EQ(doc["codecs"][2], json::parse(R"({"name": "numcodecs.fletcher32",
                                              "configuration": {}})"));
}

TEST(ZarrV2FiltersTest, BytesFiltersComeBeforeTheCompressor) {
  Result<ArrayMetadata> m = ParseZarrV2ArrayMetadata(
      V2Array("<i4", "0", R"({"id": "bz2", "level": 5})",
              R"([{"id": "shuffle", "elementsize": 4}, {"id": "crc32"}])"),
      "");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  using K = Checksum32Spec::Kind;
  EXPECT_EQ(m->encoding.bytes_codecs,
            (std::vector<BytesCodecSpec>{ShuffleSpec{4}, Checksum32Spec{K::kCrc32, true},
                                         Bz2Spec{5}}));
  // Written back: the last codec is the compressor, the others the filters.
  json zarray = json::parse(m->Encode()[0].second);
  EXPECT_EQ(zarray["compressor"], json::parse(R"({"id": "bz2", "level": 5})"));
  EXPECT_EQ(zarray["filters"],
            json::parse(R"([{"id": "shuffle", "elementsize": 4}, {"id": "crc32"}])"));
  // A filter alone, no compressor (zarr-python 3 writes Fletcher32 this way
  // into v2 arrays: zarrs' fletcher32.zarr fixture).
  m = ParseZarrV2ArrayMetadata(V2Array("<u2", "0", R"({"id": "fletcher32"})", "null"), "");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->encoding.bytes_codecs,
            (std::vector<BytesCodecSpec>{Checksum32Spec{K::kFletcher32, false}}));
  // numcodecs >= 0.13 writes the checksum location; a non-default one is kept.
  m = ParseZarrV2ArrayMetadata(
      V2Array("<u2", "0", "null", R"([{"id": "adler32", "location": "end"}])"), "");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->encoding.bytes_codecs,
            (std::vector<BytesCodecSpec>{Checksum32Spec{K::kAdler32, false}}));
  EXPECT_EQ(json::parse(m->Encode()[0].second)["compressor"],
            json::parse(R"({"id": "adler32", "location": "end"})"));
  // Array filters are refused by name.
  EXPECT_STATUS_HAS(
      ParseZarrV2ArrayMetadata(
          V2Array("<i4", "0", "null", R"([{"id": "fixedscaleoffset", "offset": 0}])"), "")
          .status(),
      StatusCode::kInvalidArgument,
      "codec 'fixedscaleoffset' is not supported (an array filter: filters[0]");
}

TEST(StorageDTypesTest, Float16) {
  Result<ArrayMetadata> m = ParseZarrV2ArrayMetadata(V2Array("<f2", "1.5", "null", "null"), "");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->dtype(), DType(DTypeId::kFloat16));
  EXPECT_EQ(m->fill_value.bytes, MakeFillValue(DTypeId::kFloat16, 1.5).bytes);
  EXPECT_EQ(json::parse(m->Encode()[0].second)["fill_value"], 1.5);
  EXPECT_EQ(json::parse(m->Encode()[0].second)["dtype"], "<f2");
  for (const char* fill : {R"("NaN")", R"("0x7e00")", R"("Infinity")", "65504"}) {
    SCOPED_TRACE(fill);
    Result<ArrayMetadata> v3 = ParseZarrV3ArrayMetadata(V3Array(
        "\"float16\"", fill, R"([{"name": "bytes", "configuration": {"endian": "big"}}])"));
    ASSERT_TRUE(v3.ok()) << v3.status().ToString();
    EXPECT_EQ(v3->encoding.endian, Endian::kBig);
    Result<ArrayMetadata> again = ParseZarrV3ArrayMetadata(v3->Encode()[0].second);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(again->fill_value, v3->fill_value);
  }
  // A NaN with a payload keeps its bits in v3.
  Result<ArrayMetadata> payload = ParseZarrV3ArrayMetadata(V3Array(
      "\"float16\"", R"("0x7e01")", R"([{"name": "bytes", "configuration": {"endian": "little"}}])"));
  ASSERT_TRUE(payload.ok());
  EXPECT_EQ(json::parse(payload->Encode()[0].second)["fill_value"], "0x7e01");
}

TEST(StorageDTypesTest, FixedLengthTypesInV2) {
  // zarr-python 2.13: fill values of "U" are the string, of "S" base64.
  Result<ArrayMetadata> u = ParseZarrV2ArrayMetadata(V2Array(">U3", R"("hé")", "null", "null"), "");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->dtype(), DType::FixedUnicode(3));
  EXPECT_EQ(u->encoding.endian, Endian::kBig);
  const uint32_t expected[3] = {'h', 0xe9, 0};
  EXPECT_EQ(0, std::memcmp(u->fill_value.bytes.data(), expected, 12));
  json zarray = json::parse(u->Encode()[0].second);
  EXPECT_EQ(zarray["dtype"], ">U3");
  EXPECT_EQ(zarray["fill_value"], "h\u00e9");

  Result<ArrayMetadata> s = ParseZarrV2ArrayMetadata(V2Array("|S4", R"("YWI=")", "null", "null"), "");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->dtype(), DType::FixedBytes(4));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(s->fill_value.bytes.data()), 4),
            std::string("ab\0\0", 4));
  EXPECT_EQ(json::parse(s->Encode()[0].second)["fill_value"], "YWI=");
  // 0 and null are both accepted (zarr-python 2 writes either).
  EXPECT_TRUE(ParseZarrV2ArrayMetadata(V2Array("|S4", "0", "null", "null"), "").ok());
  EXPECT_TRUE(ParseZarrV2ArrayMetadata(V2Array("<U4", "null", "null", "null"), "").ok());
  EXPECT_STATUS_HAS(
      ParseZarrV2ArrayMetadata(V2Array("|S2", R"("YWJj")", "null", "null"), "").status(),
      StatusCode::kInvalidArgument, "decodes to 3 bytes, more than the 2 of S2");
  EXPECT_STATUS_HAS(
      ParseZarrV2ArrayMetadata(V2Array("|S2", R"("!!")", "null", "null"), "").status(),
      StatusCode::kInvalidArgument, "is not base64");
  EXPECT_STATUS_HAS(
      ParseZarrV2ArrayMetadata(V2Array("<U2", R"("abc")", "null", "null"), "").status(),
      StatusCode::kInvalidArgument, "longer than 2 characters");
}

TEST(StorageDTypesTest, FixedLengthTypesInV3) {
  // zarr-python 3.1's JSON (src/zarr/core/dtype/npy/string.py and bytes.py).
  const char* kBytesLE = R"([{"name": "bytes", "configuration": {"endian": "little"}}])";
  Result<ArrayMetadata> u = ParseZarrV3ArrayMetadata(V3Array(
      R"({"name": "fixed_length_utf32", "configuration": {"length_bytes": 28}})", R"("abc")",
      kBytesLE));
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->dtype(), DType::FixedUnicode(7));
  json doc = json::parse(u->Encode()[0].second);
  EXPECT_EQ(doc["data_type"],
            json::parse(R"({"name": "fixed_length_utf32", "configuration": {"length_bytes": 28}})"));
  EXPECT_EQ(doc["fill_value"], "abc");

  Result<ArrayMetadata> s = ParseZarrV3ArrayMetadata(V3Array(
      R"({"name": "null_terminated_bytes", "configuration": {"length_bytes": 7}})", R"("")",
      R"([{"name": "bytes"}])"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->dtype(), DType::FixedBytes(7));
  doc = json::parse(s->Encode()[0].second);
  // One-byte components need no endian.
  EXPECT_EQ(doc["codecs"][0], json::parse(R"({"name": "bytes"})"));
  EXPECT_EQ(doc["fill_value"], "");

  Result<ArrayMetadata> v = ParseZarrV3ArrayMetadata(V3Array(
      R"({"name": "raw_bytes", "configuration": {"length_bytes": 2}})", R"("AAE=")",
      R"([{"name": "bytes"}])"));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->dtype(), DType::RawBytes(2));
  EXPECT_EQ(v->fill_value.bytes, (std::vector<std::byte>{std::byte{0}, std::byte{1}}));
  EXPECT_EQ(json::parse(v->Encode()[0].second)["fill_value"], "AAE=");
}

TEST(OldFormsTest, BoolFillAsNumberAndTransposeAsCOrF) {
  Result<ArrayMetadata> b =
      ParseZarrV3ArrayMetadata(V3Array("\"bool\"", "1", R"([{"name": "bytes"}])"));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->fill_value.bytes, std::vector<std::byte>{std::byte{1}});
  EXPECT_EQ(json::parse(b->Encode()[0].second)["fill_value"], true);

  const std::string two_d = R"({
    "zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "int32",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
    "codecs": [{"name": "transpose", "configuration": {"order": "F"}},
               {"name": "bytes", "configuration": {"endian": "little"}}]})";
  Result<ArrayMetadata> f = ParseZarrV3ArrayMetadata(two_d);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->encoding.transpose, (std::vector<int>{1, 0}));
  // Written in today's form.
  EXPECT_EQ(json::parse(f->Encode()[0].second)["codecs"][0]["configuration"]["order"],
            json::parse("[1, 0]"));
  std::string c_order = two_d;
  c_order.replace(c_order.find("\"F\""), 3, "\"C\"");
  Result<ArrayMetadata> c = ParseZarrV3ArrayMetadata(c_order);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->encoding.transpose.empty());
}

// Codecs Strata does not read are refused by their name, in one line, both as
// zarr-python 2 writes them (v2 compressor or filter) and as zarr-python 3
// does (v3 "numcodecs.<id>" in the stage the codec belongs to: pcodec and
// zfpy in place of 'bytes', delta and the other array filters before it,
// lzma after it), never with an error about the codec's place.
struct RefusedCodec {
  const char* id;
  const char* v2_config;  // numcodecs' configuration, with its id
  bool v2_filter;         // written as a filter (else as the compressor)
  const char* v3_codecs;  // the v3 codecs list
  const char* v3_kind;    // how the message names its kind ("" for none)
};

class RefusedCodecTest : public ::testing::TestWithParam<RefusedCodec> {};

TEST_P(RefusedCodecTest, IsRefusedByNameInV2AndV3) {
  const RefusedCodec& c = GetParam();
  const std::string expected = fmt::format("codec '{}' is not supported ({}", c.id, c.v3_kind);
  // v3 names it as zarr.json does.
  const std::string expected_v3 =
      fmt::format("codec 'numcodecs.{}' is not supported ({}", c.id, c.v3_kind);
  const std::string v2 = c.v2_filter ? V2Array("<i4", "0", "null", fmt::format("[{}]", c.v2_config))
                                     : V2Array("<i4", "0", c.v2_config, "null");
  Result<ArrayMetadata> m2 = ParseZarrV2ArrayMetadata(v2, "");
  EXPECT_STATUS_HAS(m2.status(), StatusCode::kInvalidArgument, expected);
  EXPECT_STATUS_HAS(m2.status(), StatusCode::kInvalidArgument,
                    c.v2_filter ? "filters[0] in .zarray" : "compressor in .zarray");
  EXPECT_EQ(m2.status().message().find('\n'), std::string_view::npos);
  Result<ArrayMetadata> m3 = ParseZarrV3ArrayMetadata(V3Array("\"int32\"", "0", c.v3_codecs));
  EXPECT_STATUS_HAS(m3.status(), StatusCode::kInvalidArgument, expected_v3);
  EXPECT_STATUS_HAS(m3.status(), StatusCode::kInvalidArgument, "in zarr.json");
  EXPECT_EQ(m3.status().message().find("must come after"), std::string_view::npos)
      << m3.status().message();
  EXPECT_EQ(m3.status().message().find('\n'), std::string_view::npos);
}


INSTANTIATE_TEST_SUITE_P(
    WildCodecs, RefusedCodecTest,
    ::testing::Values(
        RefusedCodec{"pcodec",
                     R"({"id": "pcodec", "level": 8, "mode_spec": "auto", "delta_spec": "auto",
                         "paging_spec": "equal_pages_up_to", "delta_encoding_order": null,
                         "equal_pages_up_to": 262144})",
                     false,
                     R"([{"name": "numcodecs.pcodec", "configuration": {"level": 8,
                         "mode_spec": "auto", "delta_spec": "auto",
                         "paging_spec": "equal_pages_up_to", "delta_encoding_order": null,
                         "equal_pages_up_to": 262144}}])",
                     "a numeric compressor: "},
        RefusedCodec{"zfpy", R"({"id": "zfpy", "mode": 4, "tolerance": 0.01, "rate": -1,
                                  "precision": -1})",
                     false,
                     R"([{"name": "numcodecs.zfpy", "configuration": {"mode": 4,
                         "tolerance": 0.01, "rate": -1, "precision": -1}}])",
                     "a numeric compressor: "},
        RefusedCodec{"lzma", R"({"id": "lzma", "format": 1, "check": -1, "preset": null,
                                  "filters": null})",
                     false,
                     "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
                     "{\"name\": \"numcodecs.lzma\", \"configuration\": {\"format\": 1}}]",
                     ""},
        RefusedCodec{"delta", R"({"id": "delta", "dtype": "<i4"})", true,
                     "[{\"name\": \"numcodecs.delta\", \"configuration\": {\"dtype\": "
                     "\"<i4\"}}, {\"name\": \"bytes\", \"configuration\": {\"endian\": "
                     "\"little\"}}]",
                     "an array filter: "},
        RefusedCodec{"fixedscaleoffset",
                     R"({"id": "fixedscaleoffset", "offset": 0, "scale": 10, "dtype": "<i4"})",
                     true,
                     R"([{"name": "numcodecs.fixedscaleoffset", "configuration": {"offset": 0,
                         "scale": 10, "dtype": "<i4"}},
                         {"name": "bytes", "configuration": {"endian": "little"}}])",
                     "an array filter: "},
        RefusedCodec{"bitround", R"({"id": "bitround", "keepbits": 4})", true,
                     R"([{"name": "numcodecs.bitround", "configuration": {"keepbits": 4}},
                         {"name": "bytes", "configuration": {"endian": "little"}}])",
                     "an array filter: "},
        RefusedCodec{"quantize", R"({"id": "quantize", "digits": 2, "dtype": "<f8"})", true,
                     R"([{"name": "numcodecs.quantize", "configuration": {"digits": 2}},
                         {"name": "bytes", "configuration": {"endian": "little"}}])",
                     "an array filter: "}),
    [](const auto& info) { return std::string(info.param.id); });

// A bare name no codec list of Strata's knows, in any stage: by name too.
TEST(RefusedCodecNameTest, AnUnknownV3CodecIsRefusedByName) {
  Result<ArrayMetadata> m = ParseZarrV3ArrayMetadata(
      V3Array("\"int32\"", "0", R"([{"name": "pcodec", "configuration": {"level": 8}}])"));
  EXPECT_STATUS_HAS(m.status(), StatusCode::kInvalidArgument,
                    "codec 'pcodec' is not supported (codecs[0] in zarr.json");
}

// Variable-length strings (zarr-python 3's default for str: v3 data type
// "string" with the vlen-utf8 codec, v2 dtype "|O" with the vlen-utf8 filter)
// and other objects: refused in one line naming the data type and what it
// holds, exactly as zarr-python 3 writes the documents.
TEST(VariableLengthTest, IsRefusedNamingTheDataType) {
  struct Case {
    std::string document;
    bool v3;
    const char* expected;
  };
  const std::string vlen_utf8_v3 =
      R"([{"name": "vlen-utf8", "configuration": {}},
          {"name": "zstd", "configuration": {"level": 0, "checksum": false}}])";
  const Case cases[] = {
      {V3Array("\"string\"", "\"\"", vlen_utf8_v3), true,
       "unsupported data_type 'string' in zarr.json: variable-length UTF-8 strings are not "
       "supported (Strata holds fixed-size elements only"},
      {V3Array("\"variable_length_utf8\"", "\"\"", vlen_utf8_v3), true,
       "unsupported data_type 'variable_length_utf8' in zarr.json: variable-length UTF-8 "
       "strings are not supported"},
      {V3Array("\"variable_length_bytes\"", "\"\"",
               R"([{"name": "vlen-bytes", "configuration": {}}])"),
       true, "unsupported data_type 'variable_length_bytes' in zarr.json: variable-length bytes"},
      {V2Array("|O", "\"\"", R"({"id": "zstd", "level": 0})", R"([{"id": "vlen-utf8"}])"), false,
       "unsupported Zarr v2 dtype '|O' in .zarray: variable-length UTF-8 strings are not "
       "supported (Strata holds fixed-size elements only"},
      {V2Array("|O", "null", "null", R"([{"id": "vlen-bytes"}])"), false,
       "unsupported Zarr v2 dtype '|O' in .zarray: variable-length bytes are not supported"},
      {V2Array("|O", "0", "null", R"([{"id": "json2", "encoding": "utf-8"}])"), false,
       "unsupported Zarr v2 dtype '|O' in .zarray: variable-length Python objects are not"},
      // No object codec at all (zarr-python cannot read it either): still by name.
      {V2Array("|O", "0", "null", "null"), false,
       "unsupported Zarr v2 dtype '|O' in .zarray: variable-length Python objects are not"},
  };
  for (const Case& c : cases) {
    Result<ArrayMetadata> m =
        c.v3 ? ParseZarrV3ArrayMetadata(c.document) : ParseZarrV2ArrayMetadata(c.document, "");
    EXPECT_STATUS_HAS(m.status(), StatusCode::kInvalidArgument, c.expected);
    EXPECT_EQ(m.status().message().find('\n'), std::string_view::npos) << m.status().message();
  }
}

}  // namespace
}  // namespace strata
