// Blosc 1.x frames, as numcodecs.Blosc and the Zarr v3 "blosc" codec write them.
//
// A frame is a 16-byte header (format version, compressor version, flags,
// typesize, then little-endian decoded size, block size and frame size) and the
// compressed blocks. Every frame is checked with blosc_cbuffer_validate and its
// header sizes before libblosc decompresses it, so corrupt input never reaches
// the library unchecked. Compression and decompression use the *_ctx entry
// points with one internal thread: they share no global state, so any number
// of Strata threads may call them at once.
#include <blosc.h>
#include <fmt/format.h>

#include <array>
#include <climits>
#include <string>

#include "strata/base/byte_size.h"
#include "strata/storage/codec/codec_internal.h"

namespace strata::internal_codec {
namespace {

constexpr std::array<std::string_view, 5> kCnames = {"lz4", "lz4hc", "blosclz", "zstd", "zlib"};

class BloscCodec final : public BytesCodec {
 public:
  BloscCodec(const BloscSpec& spec, int typesize, int shuffle)
      : spec_(spec), typesize_(typesize), shuffle_(shuffle) {}

  const BytesCodecSpec& spec() const override { return spec_; }

  int64_t MaxEncodedSize(int64_t decoded_size) const override {
    return decoded_size + BLOSC_MAX_OVERHEAD;
  }

  Result<int64_t> EncodeInto(std::span<const std::byte> input,
                             std::span<std::byte> output) const override {
    const auto nbytes = static_cast<int64_t>(input.size());
    if (nbytes > BLOSC_MAX_BUFFERSIZE) {
      return InvalidArgumentError(
          fmt::format("blosc cannot encode a chunk of {} (at most {} bytes); use smaller chunks",
                      FormatBytes(nbytes), BLOSC_MAX_BUFFERSIZE));
    }
    STRATA_CHECK(static_cast<int64_t>(output.size()) >= MaxEncodedSize(nbytes));
    const BloscSpec& s = std::get<BloscSpec>(spec_);
    // Blosc keeps the destination size in an int: never pass more than it needs.
    const size_t destsize = static_cast<size_t>(MaxEncodedSize(nbytes));
    int written =
        blosc_compress_ctx(s.clevel, shuffle_, static_cast<size_t>(typesize_), input.size(),
                           DataOrEmpty(input), DataOrEmpty(output), destsize, s.cname.c_str(),
                           static_cast<size_t>(s.blocksize), /*numinternalthreads=*/1);
    if (written <= 0) {
      return InternalError(fmt::format("blosc: compressing {} bytes with {} failed (error {})",
                                       nbytes, DescribeCodec(spec_), written));
    }
    return written;
  }

  Result<std::optional<int64_t>> DecodedSize(std::span<const std::byte> encoded) const override {
    STRATA_ASSIGN_OR_RETURN(int64_t nbytes, CheckFrame(encoded));
    return std::optional<int64_t>(nbytes);
  }

  Status DecodeInto(std::span<const std::byte> input, std::span<std::byte> output) const override {
    STRATA_ASSIGN_OR_RETURN(int64_t nbytes, CheckFrame(input));
    const auto expected = static_cast<int64_t>(output.size());
    if (nbytes != expected) return DecodedSizeMismatch("blosc", nbytes, expected);
    if (nbytes == 0) return Status::Ok();
    int decoded = blosc_decompress_ctx(input.data(), output.data(), output.size(),
                                       /*numinternalthreads=*/1);
    if (decoded < 0) {
      return DataLossError(fmt::format("blosc: corrupt frame of {} bytes (libblosc error {})",
                                       input.size(), decoded));
    }
    if (decoded != nbytes) return DecodedSizeMismatch("blosc", decoded, expected);
    return Status::Ok();
  }

 private:
  // Checks the frame header against the bytes actually present and returns the
  // decoded size it records.
  static Result<int64_t> CheckFrame(std::span<const std::byte> frame) {
    if (frame.size() < BLOSC_MIN_HEADER_LENGTH) {
      return DataLossError(
          fmt::format("blosc: encoded chunk is {} bytes, shorter than the {}-byte blosc header",
                      frame.size(), BLOSC_MIN_HEADER_LENGTH));
    }
    size_t nbytes = 0, cbytes = 0, blocksize = 0;
    blosc_cbuffer_sizes(frame.data(), &nbytes, &cbytes, &blocksize);
    if (cbytes != frame.size()) {
      return DataLossError(
          fmt::format("blosc: header records a {}-byte frame but the encoded chunk has {} bytes "
                      "(truncated or not a blosc frame)",
                      cbytes, frame.size()));
    }
    if (blosc_cbuffer_validate(frame.data(), frame.size(), &nbytes) != 0) {
      return DataLossError(
          fmt::format("blosc: invalid frame header (records {} decoded bytes, {} frame bytes)",
                      nbytes, cbytes));
    }
    // libblosc checks these too, but only once it decompresses; checking them
    // here keeps Decode from allocating what a corrupt header claims.
    const auto flags = static_cast<uint8_t>(frame[2]);
    if (flags & BLOSC_MEMCPYED) {
      if (nbytes + BLOSC_MAX_OVERHEAD != cbytes) {
        return DataLossError(fmt::format(
            "blosc: header of an uncompressed frame records {} decoded bytes in a {}-byte frame",
            nbytes, cbytes));
      }
    } else if (nbytes > 0) {
      const size_t nblocks = blocksize == 0 ? 0 : (nbytes + blocksize - 1) / blocksize;
      if (blocksize == 0 || blocksize > nbytes ||
          blocksize > static_cast<size_t>(BLOSC_MAX_BLOCKSIZE) ||
          BLOSC_MIN_HEADER_LENGTH + 4 * nblocks > cbytes) {
        return DataLossError(fmt::format(
            "blosc: inconsistent header ({} decoded bytes in blocks of {}, {}-byte frame)", nbytes,
            blocksize, cbytes));
      }
    }
    return static_cast<int64_t>(nbytes);
  }

  BytesCodecSpec spec_;
  int typesize_;
  int shuffle_;  // BLOSC_NOSHUFFLE, BLOSC_SHUFFLE or BLOSC_BITSHUFFLE
};

}  // namespace

Result<std::unique_ptr<const BytesCodec>> MakeBloscCodec(const BloscSpec& spec, int dtype_size) {
  bool known = false;
  for (std::string_view c : kCnames) known = known || c == spec.cname;
  if (!known) {
    return InvalidArgumentError(fmt::format("unknown blosc cname '{}' (expected one of {})",
                                            spec.cname, fmt::join(kCnames, ", ")));
  }
  if (blosc_compname_to_compcode(spec.cname.c_str()) < 0) {
    return InvalidArgumentError(
        fmt::format("blosc cname '{}' is not supported by this libblosc (it has {})", spec.cname,
                    blosc_list_compressors()));
  }
  if (spec.clevel < 0 || spec.clevel > 9) {
    return InvalidArgumentError(fmt::format("blosc clevel {} out of range 0..9", spec.clevel));
  }
  if (spec.shuffle < -1 || spec.shuffle > 2) {
    return InvalidArgumentError(fmt::format(
        "blosc shuffle {} is not one of -1 (auto), 0 (none), 1 (byte), 2 (bit)", spec.shuffle));
  }
  constexpr auto kMaxBlocksize = static_cast<int64_t>(BLOSC_MAX_BLOCKSIZE);
  if (spec.blocksize < 0 || spec.blocksize > kMaxBlocksize) {
    return InvalidArgumentError(
        fmt::format("blosc blocksize {} out of range 0..{}", spec.blocksize, kMaxBlocksize));
  }
  if (spec.typesize < 0 || spec.typesize > BLOSC_MAX_TYPESIZE) {
    return InvalidArgumentError(
        fmt::format("blosc typesize {} out of range 0..{}", spec.typesize, BLOSC_MAX_TYPESIZE));
  }
  if (spec.typesize == 0 && (dtype_size < 1 || dtype_size > BLOSC_MAX_TYPESIZE)) {
    return InvalidArgumentError(
        fmt::format("blosc cannot shuffle {}-byte elements; set typesize", dtype_size));
  }
  const int typesize = spec.typesize > 0 ? spec.typesize : dtype_size;
  // numcodecs' AUTOSHUFFLE: bit shuffle for 1-byte elements, byte shuffle otherwise.
  int shuffle = spec.shuffle;
  if (shuffle == -1) shuffle = typesize == 1 ? BLOSC_BITSHUFFLE : BLOSC_SHUFFLE;
  return std::unique_ptr<const BytesCodec>(std::make_unique<BloscCodec>(spec, typesize, shuffle));
}

}  // namespace strata::internal_codec
