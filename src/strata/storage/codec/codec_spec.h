// Typed descriptions of the codecs Strata reads and writes.
//
// A spec is plain data: what the metadata says (Zarr v2 "compressor", Zarr v3
// "codecs") after parsing, and what the CLI's --codec option builds. Specs are
// turned into working codecs by MakeBytesCodec (codec.h) and into JSON by the
// metadata layer (zarr/metadata.h).
#ifndef STRATA_STORAGE_CODEC_CODEC_SPEC_H_
#define STRATA_STORAGE_CODEC_CODEC_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/dtype.h"

namespace strata {

// Blosc 1.x (numcodecs.Blosc, Zarr v3 "blosc").
struct BloscSpec {
  std::string cname = "lz4";  // lz4, lz4hc, blosclz, zstd, zlib
  int clevel = 5;             // 0..9
  // 0 no shuffle, 1 byte shuffle, 2 bit shuffle, -1 automatic (numcodecs'
  // AUTOSHUFFLE: bit shuffle for 1-byte elements, byte shuffle otherwise).
  int shuffle = 1;
  int64_t blocksize = 0;  // 0: automatic
  int typesize = 0;       // element size for shuffling; 0: the array's dtype size
  friend bool operator==(const BloscSpec&, const BloscSpec&) = default;
};

// Zstandard frames with the content size in the header (numcodecs.Zstd, v3 "zstd").
struct ZstdSpec {
  int level = 1;
  bool checksum = false;
  friend bool operator==(const ZstdSpec&, const ZstdSpec&) = default;
};

// zlib stream with header (numcodecs.Zlib).
struct ZlibSpec {
  int level = 1;  // 0..9
  friend bool operator==(const ZlibSpec&, const ZlibSpec&) = default;
};

// gzip member (numcodecs.GZip, v3 "gzip").
struct GzipSpec {
  int level = 1;  // 0..9
  friend bool operator==(const GzipSpec&, const GzipSpec&) = default;
};

// numcodecs.LZ4: a 4-byte little-endian decoded size, then one LZ4 block.
struct Lz4Spec {
  int acceleration = 1;
  friend bool operator==(const Lz4Spec&, const Lz4Spec&) = default;
};

// Zarr v3 "crc32c": appends the 4-byte little-endian CRC-32C of the bytes.
struct Crc32cSpec {
  friend bool operator==(const Crc32cSpec&, const Crc32cSpec&) = default;
};

// numcodecs.BZ2: one bzip2 stream.
struct Bz2Spec {
  int level = 1;  // 1..9
  friend bool operator==(const Bz2Spec&, const Bz2Spec&) = default;
};

// numcodecs' 32-bit checksums: the bytes with their 4-byte little-endian
// checksum before ("start") or after ("end") them. numcodecs' defaults: crc32
// and adler32 at the start, crc32c at the end; fletcher32 (HDF5's, on 16-bit
// big-endian words) is always at the end.
struct Checksum32Spec {
  enum class Kind { kCrc32, kAdler32, kCrc32c, kFletcher32 };
  Kind kind = Kind::kCrc32;
  bool at_start = true;
  friend bool operator==(const Checksum32Spec&, const Checksum32Spec&) = default;
};

// numcodecs.Shuffle: the bytes regrouped by their position within each
// `elementsize`-byte element (byte 0 of every element, then byte 1, ...).
struct ShuffleSpec {
  int elementsize = 4;  // numcodecs' default
  friend bool operator==(const ShuffleSpec&, const ShuffleSpec&) = default;
};

using BytesCodecSpec = std::variant<BloscSpec, ZstdSpec, ZlibSpec, GzipSpec, Lz4Spec, Crc32cSpec,
                                    Bz2Spec, Checksum32Spec, ShuffleSpec>;

// The codec's name as numcodecs (and the CLI) spells it: "blosc", "zstd",
// "zlib", "gzip", "lz4", "crc32c", "bz2", "crc32", "adler32", "fletcher32",
// "shuffle". A Checksum32Spec of kind kCrc32c is also "crc32c".
std::string_view CodecName(const BytesCodecSpec& spec);

// The checksum codecs (they decode to a sub-range of their input).
bool IsChecksumCodec(const BytesCodecSpec& spec);

// A short human description: "blosc(cname=lz4, clevel=5, shuffle=byte)".
std::string DescribeCodec(const BytesCodecSpec& spec);

// How one chunk's elements become the bytes in the store:
//   elements (C order, native endian)
//     -> axes permuted by `transpose` (v2 order "F" is the reversed axes; v3
//        "transpose" gives the order explicitly; empty means C order)
//     -> serialised with `endian`
//     -> each of `bytes_codecs` in turn (compressors, then checksums).
struct ChunkEncoding {
  DType dtype;
  Endian endian = Endian::kLittle;
  std::vector<int> transpose;
  std::vector<BytesCodecSpec> bytes_codecs;
  friend bool operator==(const ChunkEncoding&, const ChunkEncoding&) = default;
};

// Parses the CLI's codec syntax: "none", "blosc", "blosc:cname=zstd,clevel=3,shuffle=bit",
// "zstd:level=5", "zlib:level=6", "gzip", "lz4:acceleration=2", "crc32c", "bz2:level=9",
// "crc32[:location=start|end]", "adler32[:location=...]", "fletcher32",
// "shuffle:elementsize=8".
// Several codecs are joined with '+': "zstd+crc32c". Returns the list of
// bytes codecs (empty for "none"). InvalidArgument names the bad part.
Result<std::vector<BytesCodecSpec>> ParseCodecArgument(std::string_view text);

}  // namespace strata

#endif  // STRATA_STORAGE_CODEC_CODEC_SPEC_H_
