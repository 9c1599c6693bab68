// Tests for ChunkCodec: round trips over every encoding, dtype, shape,
// transpose and byte order, into contiguous and strided outputs; the stored
// layout against an independent oracle; chunks written by zarr-python; the
// copy counts and the memory they promise; and corrupt input.
#include "strata/storage/codec/chunk_codec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <complex>
#include <cstring>

#include "strata/core/dtype_dispatch.h"
#include "strata/storage/codec/codec_test_internal.h"

namespace strata::internal_codec {
namespace {

std::span<const std::byte> Span(const Buffer& b) { return b.span(); }
std::span<const std::byte> Span(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }

NDArray MakeChunk(DType dtype, const Shape& shape, uint64_t seed, DataKind kind) {
  NDArray a = *NDArray::Allocate(Pool(), dtype, shape);
  auto bytes = TestBytes(a.nbytes(), seed, kind);
  if (dtype.is_bool()) {
    for (std::byte& b : bytes) b &= std::byte{1};  // a bool other than 0 or 1 is undefined
  }
  if (!bytes.empty()) std::memcpy(a.data(), bytes.data(), bytes.size());
  return a;
}

std::shared_ptr<const ChunkCodec> MakeOrDie(ChunkEncoding encoding, Shape shape) {
  auto codec = ChunkCodec::Make(std::move(encoding), std::move(shape));
  EXPECT_TRUE(codec.ok()) << codec.status().ToString();
  return codec.ok() ? *codec : nullptr;
}

// The stored bytes as the Zarr specs define them, computed element by element:
// stored axis i is chunk axis order[i], C order, then each component swapped
// for big-endian storage.
std::vector<std::byte> StoredBytesOracle(const ConstArrayView& chunk,
                                         const std::vector<int>& transpose, Endian endian) {
  const int rank = chunk.rank();
  std::vector<int> order = transpose;
  if (order.empty()) {
    for (int i = 0; i < rank; ++i) order.push_back(i);
  }
  Shape stored_shape(rank);
  for (int i = 0; i < rank; ++i) stored_shape[i] = chunk.shape()[order[i]];
  const int esize = chunk.dtype().size();
  const int csize = chunk.dtype().component_size();
  std::vector<std::byte> out;
  if (chunk.num_elements() == 0) return out;
  Shape stored_index(rank, 0), chunk_index(rank, 0);
  do {
    for (int i = 0; i < rank; ++i) chunk_index[order[i]] = stored_index[i];
    const std::byte* element = chunk.ElementPointer(chunk_index);
    for (int c = 0; c < esize; c += csize) {
      for (int b = 0; b < csize; ++b) {
        out.push_back(element[c + (endian == Endian::kBig ? csize - 1 - b : b)]);
      }
    }
  } while (NextIndex(stored_index, stored_shape));
  return out;
}

// Runs the bytes codecs' decoders last to first, as the spec defines them.
std::vector<std::byte> DecodeBytesCodecs(std::span<const std::byte> encoded,
                                         const std::vector<BytesCodecSpec>& specs, int dtype_size) {
  std::vector<std::byte> bytes(encoded.begin(), encoded.end());
  for (size_t i = specs.size(); i-- > 0;) {
    auto codec = *MakeBytesCodec(specs[i], dtype_size);
    auto decoded = codec->Decode(Span(bytes), Pool());
    EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
    if (!decoded.ok()) return {};
    bytes.assign(decoded->data(), decoded->data() + decoded->size());
  }
  return bytes;
}

struct CodecList {
  std::string name;
  std::vector<BytesCodecSpec> codecs;
};

std::vector<CodecList> CodecLists() {
  return {
      {"none", {}},
      {"blosc-lz4-byte", {BloscSpec{"lz4", 5, 1, 0, 0}}},
      {"blosc-zstd-bit", {BloscSpec{"zstd", 3, 2, 0, 0}}},
      {"blosc-blosclz-none-blocksize", {BloscSpec{"blosclz", 9, 0, 128, 0}}},
      {"blosc-lz4-auto", {BloscSpec{"lz4", 5, -1, 0, 0}}},
      {"zstd", {ZstdSpec{1, false}}},
      {"zstd+crc32c", {ZstdSpec{3, true}, Crc32cSpec{}}},
      {"zlib", {ZlibSpec{1}}},
      {"gzip", {GzipSpec{6}}},
      {"lz4", {Lz4Spec{1}}},
      {"crc32c", {Crc32cSpec{}}},
      {"crc32c+crc32c", {Crc32cSpec{}, Crc32cSpec{}}},
      {"gzip+zstd", {GzipSpec{1}, ZstdSpec{1, false}}},
  };
}

std::vector<std::vector<int>> Transposes(int rank) {
  std::vector<std::vector<int>> t = {{}};
  if (rank >= 2) {
    std::vector<int> f;
    for (int i = rank; i-- > 0;) f.push_back(i);
    t.push_back(f);  // Zarr v2 order "F"
  }
  if (rank == 3) {
    t.push_back({2, 0, 1});
    t.push_back({1, 2, 0});
  }
  if (rank == 1) t.push_back({0});
  return t;
}

// Decode(Encode(x)) == x for every encoding, dtype, shape, transpose and byte
// order, into a contiguous chunk and into a sub-box of a larger array; and the
// stored bytes are exactly what the Zarr specs define.
TEST(ChunkCodecTest, RoundTripsEveryEncodingDTypeShapeAndLayout) {
  const Shape shapes[] = {{}, {0}, {1}, {13}, {7, 5}, {3, 0, 4}, {3, 4, 5}, {2, 1, 6}};
  int combinations = 0;
  for (const CodecList& list : CodecLists()) {
    for (DType dtype : AllDTypes()) {
      for (const Shape& shape : shapes) {
        for (const std::vector<int>& transpose : Transposes(static_cast<int>(shape.size()))) {
          for (Endian endian : {Endian::kLittle, Endian::kBig}) {
            ++combinations;
            SCOPED_TRACE(fmt::format("{} {} shape {} transpose ({}) {}", list.name, dtype.name(),
                                     ShapeToString(shape), fmt::join(transpose, ","),
                                     EndianName(endian)));
            auto codec = MakeOrDie(ChunkEncoding{dtype, endian, transpose, list.codecs}, shape);
            ASSERT_NE(codec, nullptr);
            const NDArray chunk =
                MakeChunk(dtype, shape, combinations,
                          combinations % 2 ? DataKind::kRandom : DataKind::kCompressible);
            auto encoded = codec->Encode(chunk.view(), Pool());
            ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();

            // The stored layout, checked through the bytes codecs alone.
            EXPECT_EQ(DecodeBytesCodecs(Span(*encoded), list.codecs, dtype.size()),
                      StoredBytesOracle(chunk.view(), transpose, endian));

            NDArray out = *NDArray::Allocate(Pool(), dtype, shape);
            ASSERT_TRUE(codec->Decode(Span(*encoded), out.view(), Pool()).ok());
            EXPECT_TRUE(ArraysEqual(out.view(), chunk.view()));

            // Strided: the chunk as a sub-box of a larger array whose other
            // elements must stay untouched.
            Shape big_shape = shape, origin(shape.size(), 1);
            for (Index& d : big_shape) d += 2;
            NDArray big = MakeChunk(dtype, big_shape, 99, DataKind::kRandom);
            NDArray expected = *NDArray::CopyOf(Pool(), big.view());
            CopyArray(chunk.view(), expected.view().Slice(Box(origin, shape)));
            ArrayView sub = big.view().Slice(Box(origin, shape));
            ASSERT_TRUE(codec->Decode(Span(*encoded), sub, Pool()).ok());
            EXPECT_TRUE(ArraysEqual(big.view(), expected.view()));

            // Encoding from the strided view gives the same bytes.
            auto from_strided = codec->Encode(ConstArrayView(sub), Pool());
            ASSERT_TRUE(from_strided.ok());
            EXPECT_TRUE(std::equal(encoded->span().begin(), encoded->span().end(),
                                   from_strided->span().begin(), from_strided->span().end()));
          }
        }
      }
    }
  }
  EXPECT_GT(combinations, 5000);
}

TEST(ChunkCodecTest, StoredLayoutOfTransposesAndByteOrders) {
  // int32 [[0, 1, 2], [3, 4, 5]] in F order: 0 3 1 4 2 5.
  NDArray a = *NDArray::Allocate(Pool(), DTypeId::kInt32, {2, 3});
  for (int i = 0; i < 6; ++i) a.data_as<int32_t>()[i] = i;
  auto f = MakeOrDie(ChunkEncoding{DTypeId::kInt32, Endian::kLittle, {1, 0}, {}}, {2, 3});
  auto stored = *f->Encode(a.view(), Pool());
  std::vector<int32_t> values(6);
  std::memcpy(values.data(), stored.data(), 24);
  EXPECT_EQ(values, (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));

  auto be = MakeOrDie(ChunkEncoding{DTypeId::kInt32, Endian::kBig, {}, {}}, {2, 3});
  auto be_stored = *be->Encode(a.view(), Pool());
  EXPECT_EQ(std::vector<std::byte>(be_stored.data(), be_stored.data() + 8),
            FromHex("0000000000000001"));

  // complex64 swaps each float on its own.
  NDArray c = *NDArray::Allocate(Pool(), DTypeId::kComplex64, {1});
  c.data_as<std::complex<float>>()[0] = {1.0f, -2.0f};  // 0x3f800000, 0xc0000000
  auto cbe = MakeOrDie(ChunkEncoding{DTypeId::kComplex64, Endian::kBig, {}, {}}, {1});
  auto c_stored = *cbe->Encode(c.view(), Pool());
  EXPECT_EQ(std::vector<std::byte>(c_stored.data(), c_stored.data() + 8),
            FromHex("3f800000c0000000"));
}

// ---------------------------------------------------------------- zarr-python interop

// Chunk "0.0" (or "0.0.0") of arrays written by zarr-python 2.13.6 on this machine:
//   zarr.create(shape=(4, 6), chunks=(4, 6), dtype='>i4', order='F',
//               compressor=Blosc(cname='lz4', clevel=5, shuffle=Blosc.SHUFFLE));
//   a[:] = np.arange(24).reshape(4, 6)
constexpr std::string_view kZarrFBeI4Blosc =
    "0201330460000000600000007000000000000000000000060000000c0000001200000001000000070000000d"
    "0000001300000002000000080000000e0000001400000003000000090000000f00000015000000040000000a"
    "0000001000000016000000050000000b0000001100000017";
//   shape (3, 5), dtype '>c8', order 'F', compressor Zlib(level=1);
//   a[:] = (np.arange(15) + 1j * (100 - np.arange(15))).reshape(3, 5)
constexpr std::string_view kZarrFBeC8Zlib =
    "780115c9e10940500045e13382118c6003bc098c6094378a01244992a497246318c5f1ebeb9e0b101ea83a3d"
    "a0ce758632ea6d4fbadb0b9ddce8a5af6e764318ddbfa7fbff576d74b0474dee4c176db5870f82ad171b";
//   shape (2, 3, 4), dtype '<f8', order 'F', no compressor; a[:] = np.arange(24).reshape(2, 3, 4) *
//   0.5
constexpr std::string_view kZarrFLeF8Raw =
    "0000000000000000000000000000184000000000000000400000000000002040000000000000104000000000"
    "00002440000000000000e03f0000000000001a40000000000000044000000000000021400000000000001240"
    "0000000000002540000000000000f03f0000000000001c400000000000000840000000000000224000000000"
    "000014400000000000002640000000000000f83f0000000000001e400000000000000c400000000000002340"
    "00000000000016400000000000002740";

TEST(ChunkCodecTest, DecodesChunksWrittenByZarrPython) {
  {
    auto codec = MakeOrDie(
        ChunkEncoding{DTypeId::kInt32, Endian::kBig, {1, 0}, {BloscSpec{"lz4", 5, 1, 0, 0}}},
        {4, 6});
    NDArray out = *NDArray::Allocate(Pool(), DTypeId::kInt32, {4, 6});
    ASSERT_TRUE(codec->Decode(Span(FromHex(kZarrFBeI4Blosc)), out.view(), Pool()).ok());
    for (int i = 0; i < 24; ++i) EXPECT_EQ(out.data_as<int32_t>()[i], i);
    // And writes the same bytes back.
    auto encoded = *codec->Encode(out.view(), Pool());
    EXPECT_EQ(std::vector<std::byte>(encoded.data(), encoded.data() + encoded.size()),
              FromHex(kZarrFBeI4Blosc));
  }
  {
    auto codec =
        MakeOrDie(ChunkEncoding{DTypeId::kComplex64, Endian::kBig, {1, 0}, {ZlibSpec{1}}}, {3, 5});
    NDArray out = *NDArray::Allocate(Pool(), DTypeId::kComplex64, {3, 5});
    ASSERT_TRUE(codec->Decode(Span(FromHex(kZarrFBeC8Zlib)), out.view(), Pool()).ok());
    for (int i = 0; i < 15; ++i) {
      EXPECT_EQ(out.data_as<std::complex<float>>()[i],
                std::complex<float>(static_cast<float>(i), static_cast<float>(100 - i)));
    }
  }
  {
    auto codec =
        MakeOrDie(ChunkEncoding{DTypeId::kFloat64, Endian::kLittle, {2, 1, 0}, {}}, {2, 3, 4});
    EXPECT_FALSE(codec->is_identity());
    NDArray out = *NDArray::Allocate(Pool(), DTypeId::kFloat64, {2, 3, 4});
    ASSERT_TRUE(codec->Decode(Span(FromHex(kZarrFLeF8Raw)), out.view(), Pool()).ok());
    for (int i = 0; i < 24; ++i) EXPECT_EQ(out.data_as<double>()[i], i * 0.5);
  }
}

// ---------------------------------------------------------------- copies and memory

struct CopiesCase {
  std::string name;
  ChunkEncoding encoding;
  Shape shape;
  bool identity;
  int read_copies;
  int write_copies;
};

std::vector<CopiesCase> CopiesCases() {
  const DType f8 = DTypeId::kFloat64;
  const BloscSpec blosc{"lz4", 5, 1, 0, 0};
  return {
      {"identity", {f8, Endian::kLittle, {}, {}}, {100, 80}, true, 0, 1},
      {"identity, 1-byte big-endian",
       {DTypeId::kUInt8, Endian::kBig, {}, {}},
       {100, 80},
       true,
       0,
       1},
      {"identity, F order of a vector", {f8, Endian::kLittle, {0}, {}}, {8000}, true, 0, 1},
      {"identity, F order of a (1, n) chunk",
       {f8, Endian::kLittle, {1, 0}, {}},
       {1, 8000},
       true,
       0,
       1},
      {"big-endian", {f8, Endian::kBig, {}, {}}, {100, 80}, false, 1, 1},
      {"F order", {f8, Endian::kLittle, {1, 0}, {}}, {100, 80}, false, 1, 1},
      {"crc32c", {f8, Endian::kLittle, {}, {Crc32cSpec{}}}, {100, 80}, false, 1, 1},
      {"blosc", {f8, Endian::kLittle, {}, {blosc}}, {100, 80}, false, 1, 1},
      {"blosc + crc32c", {f8, Endian::kLittle, {}, {blosc, Crc32cSpec{}}}, {100, 80}, false, 1, 1},
      {"blosc big-endian", {f8, Endian::kBig, {}, {blosc}}, {100, 80}, false, 1, 2},
      {"blosc F order", {f8, Endian::kLittle, {1, 0}, {blosc}}, {100, 80}, false, 2, 2},
      {"gzip + zstd", {f8, Endian::kLittle, {}, {GzipSpec{}, ZstdSpec{}}}, {100, 80}, false, 2, 2},
      {"crc32c inside zstd",
       {f8, Endian::kLittle, {}, {Crc32cSpec{}, ZstdSpec{}}},
       {100, 80},
       false,
       2,
       2},
      {"gzip + zstd F order",
       {f8, Endian::kLittle, {1, 0}, {GzipSpec{}, ZstdSpec{}}},
       {100, 80},
       false,
       3,
       2},
  };
}

TEST(ChunkCodecTest, IdentityAndCopyCounts) {
  for (const CopiesCase& c : CopiesCases()) {
    SCOPED_TRACE(c.name);
    auto codec = MakeOrDie(c.encoding, c.shape);
    EXPECT_EQ(codec->is_identity(), c.identity);
    EXPECT_EQ(codec->read_copies(), c.read_copies);
    EXPECT_EQ(codec->write_copies(), c.write_copies);
    EXPECT_EQ(codec->chunk_bytes(),
              NumElements(c.shape) * 8 / (c.encoding.dtype.size() == 1 ? 8 : 1));
  }
}

// What Decode and Encode allocate stays within what the copy counts promise
// (the memory model trusts them): Decode's scratch holds at most
// read_copies - 1 chunk-sized buffers (the caller holds the encoded bytes), and
// Encode at most write_copies, its output included.
TEST(ChunkCodecTest, MeasuredMemoryStaysWithinTheCopyCounts) {
  for (const CopiesCase& c : CopiesCases()) {
    SCOPED_TRACE(c.name);
    auto codec = MakeOrDie(c.encoding, c.shape);
    const NDArray chunk = MakeChunk(c.encoding.dtype, c.shape, 5, DataKind::kRandom);
    // A chunk-sized buffer here is at most its encoded bound.
    const int64_t bound = codec->chunk_bytes() + codec->chunk_bytes() / 100 + 4096;

    auto encode_pool = MemoryPool::Default()->NewChild({"encode"});
    auto encoded = codec->Encode(chunk.view(), *encode_pool);
    ASSERT_TRUE(encoded.ok());
    EXPECT_LE(encode_pool->peak_bytes(), c.write_copies * bound);

    auto scratch = MemoryPool::Default()->NewChild({"scratch"});
    NDArray out = *NDArray::Allocate(Pool(), c.encoding.dtype, c.shape);
    ASSERT_TRUE(codec->Decode(encoded->span(), out.view(), *scratch).ok());
    EXPECT_LE(scratch->peak_bytes(), std::max(0, c.read_copies - 1) * bound);
    EXPECT_EQ(scratch->bytes_in_use(), 0);
    EXPECT_TRUE(ArraysEqual(out.view(), chunk.view()));
  }
}

// A compressed chunk in C order and native byte order decompresses straight
// into the destination: no scratch at all.
TEST(ChunkCodecTest, CompressedDecodeWritesStraightIntoTheChunk) {
  auto codec = MakeOrDie(
      ChunkEncoding{DTypeId::kFloat64, Endian::kLittle, {}, {BloscSpec{}, Crc32cSpec{}}}, {50, 40});
  const NDArray chunk = MakeChunk(DTypeId::kFloat64, {50, 40}, 6, DataKind::kCompressible);
  auto encoded = *codec->Encode(chunk.view(), Pool());
  auto scratch = MemoryPool::Default()->NewChild({"scratch"});
  NDArray out = *NDArray::Allocate(Pool(), DTypeId::kFloat64, {50, 40});
  ASSERT_TRUE(codec->Decode(encoded.span(), out.view(), *scratch).ok());
  EXPECT_EQ(scratch->peak_bytes(), 0);
  EXPECT_TRUE(ArraysEqual(out.view(), chunk.view()));
}

TEST(ChunkCodecTest, ScratchPoolCapIsResourceExhausted) {
  auto codec = MakeOrDie(ChunkEncoding{DTypeId::kFloat64, Endian::kLittle, {1, 0}, {ZstdSpec{}}},
                         {100, 100});
  const NDArray chunk = MakeChunk(DTypeId::kFloat64, {100, 100}, 6, DataKind::kRandom);
  auto encoded = *codec->Encode(chunk.view(), Pool());
  auto capped = MemoryPool::Default()->NewChild({"capped", 1000});
  NDArray out = *NDArray::Allocate(Pool(), DTypeId::kFloat64, {100, 100});
  EXPECT_TRUE(StatusIs(codec->Decode(encoded.span(), out.view(), *capped),
                       StatusCode::kResourceExhausted, "capped"));
}

// ---------------------------------------------------------------- corrupt input

TEST(ChunkCodecTest, WrongSizedChunkIsDataLossNamingBothSizes) {
  for (const CodecList& list : CodecLists()) {
    SCOPED_TRACE(list.name);
    const ChunkEncoding encoding{DTypeId::kInt32, Endian::kLittle, {}, list.codecs};
    auto writer = MakeOrDie(encoding, {4, 6});
    auto reader = MakeOrDie(encoding, {5, 6});
    const NDArray chunk = MakeChunk(DTypeId::kInt32, {4, 6}, 1, DataKind::kCompressible);
    auto encoded = *writer->Encode(chunk.view(), Pool());
    NDArray out = *NDArray::Allocate(Pool(), DTypeId::kInt32, {5, 6});
    Status s = reader->Decode(encoded.span(), out.view(), Pool());
    EXPECT_TRUE(StatusIs(s, StatusCode::kDataLoss, "expected 120"));
    EXPECT_NE(s.message().find("96"), std::string_view::npos) << s.message();
  }
  auto identity = MakeOrDie(ChunkEncoding{DTypeId::kInt32, Endian::kLittle, {}, {}}, {5, 6});
  NDArray out = *NDArray::Allocate(Pool(), DTypeId::kInt32, {5, 6});
  std::vector<std::byte> short_chunk(96);
  EXPECT_EQ(identity->Decode(Span(short_chunk), out.view(), Pool()).message(),
            "stored chunk has 96 bytes, expected 120 (int32 of shape (5, 6))");
}

// Truncated, bit-flipped and garbage chunks are DataLoss (or, for a flip a
// format cannot detect, decode to some values); never a crash, never another
// error, whatever the layout.
TEST(ChunkCodecTest, CorruptChunksAreDataLoss) {
  for (const CodecList& list : CodecLists()) {
    for (const std::vector<int>& transpose : {std::vector<int>{}, std::vector<int>{1, 0}}) {
      SCOPED_TRACE(fmt::format("{} transpose ({})", list.name, fmt::join(transpose, ",")));
      auto codec = MakeOrDie(ChunkEncoding{DTypeId::kFloat32, Endian::kBig, transpose, list.codecs},
                             {20, 30});
      const NDArray chunk = MakeChunk(DTypeId::kFloat32, {20, 30}, 2, DataKind::kCompressible);
      auto buffer = *codec->Encode(chunk.view(), Pool());
      const std::vector<std::byte> encoded(buffer.data(), buffer.data() + buffer.size());
      NDArray out = *NDArray::Allocate(Pool(), DTypeId::kFloat32, {20, 30});

      for (size_t keep : {size_t{0}, size_t{5}, encoded.size() / 2, encoded.size() - 1}) {
        std::vector<std::byte> truncated(encoded.begin(), encoded.begin() + keep);
        EXPECT_EQ(codec->Decode(Span(truncated), out.view(), Pool()).code(), StatusCode::kDataLoss)
            << "keeping " << keep;
      }
      const auto garbage = TestBytes(encoded.size(), 77, DataKind::kRandom);
      if (!list.codecs.empty()) {
        EXPECT_EQ(codec->Decode(Span(garbage), out.view(), Pool()).code(), StatusCode::kDataLoss);
      }
      for (size_t bit = 0; bit < encoded.size() * 8; bit += 13) {
        auto corrupt = encoded;
        corrupt[bit / 8] ^= static_cast<std::byte>(1 << (bit % 8));
        Status s = codec->Decode(Span(corrupt), out.view(), Pool());
        if (!s.ok()) {
          EXPECT_EQ(s.code(), StatusCode::kDataLoss) << "bit " << bit << ": " << s.ToString();
        }
      }
    }
  }
}

// ---------------------------------------------------------------- Make

TEST(ChunkCodecTest, MakeRejectsBadTransposesAndOptions) {
  const DType i4 = DTypeId::kInt32;
  const std::pair<std::vector<int>, Shape> bad[] = {
      {{0, 0}, {2, 3}}, {{0}, {2, 3}}, {{0, 1, 2}, {2, 3}}, {{-1, 0}, {2, 3}}, {{0, 2}, {2, 3}}};
  for (const auto& [transpose, shape] : bad) {
    EXPECT_TRUE(StatusIs(
        ChunkCodec::Make(ChunkEncoding{i4, Endian::kLittle, transpose, {}}, shape).status(),
        StatusCode::kInvalidArgument,
        fmt::format("transpose ({}) is not a permutation of the 2 axes",
                    fmt::join(transpose, ", "))));
  }
  EXPECT_EQ(
      ChunkCodec::Make(ChunkEncoding{i4, Endian::kLittle, {}, {ZstdSpec{}, GzipSpec{12}}}, {2, 3})
          .status()
          .message(),
      "codec 1 (gzip): gzip level 12 out of range 0..9");
  EXPECT_TRUE(
      StatusIs(ChunkCodec::Make(ChunkEncoding{i4, Endian::kLittle, {}, {}}, {2, -3}).status(),
               StatusCode::kInvalidArgument, "negative extent"));
}

}  // namespace
}  // namespace strata::internal_codec
