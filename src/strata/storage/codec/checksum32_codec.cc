// numcodecs' 32-bit checksum codecs (CRC32, Adler32, CRC32C, Fletcher32): the
// bytes with a 4-byte little-endian checksum before or after them.
//
// CRC-32 and Adler-32 are zlib's (numcodecs calls zlib.crc32/zlib.adler32),
// CRC-32C is Crc32c(), Fletcher-32 is HDF5's (H5checksum.c, as numcodecs'
// fletcher32.pyx): 16-bit words read big-endian, sums folded every 360 words,
// an odd last byte taken as the high byte of a word.
//
// Decoding only verifies and narrows the input (decodes_to_subrange), so a
// checksum costs no copy on read.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "strata/storage/codec/codec_internal.h"

namespace strata::internal_codec {
namespace {

constexpr size_t kChecksumSize = 4;

uint32_t Fletcher32(std::span<const std::byte> data) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t words = data.size() / 2;
  uint32_t sum1 = 0, sum2 = 0;
  while (words > 0) {
    size_t block = std::min<size_t>(words, 360);
    words -= block;
    for (; block > 0; --block) {
      sum1 += (static_cast<uint32_t>(p[0]) << 8) | p[1];
      p += 2;
      sum2 += sum1;
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  if (data.size() % 2 != 0) {
    sum1 += static_cast<uint32_t>(p[0]) << 8;
    sum2 += sum1;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xffff) + (sum1 >> 16);
  sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  return (sum2 << 16) | sum1;
}

// zlib's checksums take a uInt length: feed them in pieces.
template <typename F>
uint32_t ZlibChecksum(F update, uLong initial, std::span<const std::byte> data) {
  uLong value = initial;
  const auto* p = reinterpret_cast<const Bytef*>(data.data());
  size_t n = data.size();
  while (n > 0) {
    const uInt piece = static_cast<uInt>(std::min<size_t>(n, UINT_MAX / 2));
    value = update(value, p, piece);
    p += piece;
    n -= piece;
  }
  return static_cast<uint32_t>(value);
}

class Checksum32Codec final : public BytesCodec {
 public:
  explicit Checksum32Codec(const Checksum32Spec& spec) : spec_(spec), checksum_(spec) {}

  const BytesCodecSpec& spec() const override { return spec_; }

  int64_t MaxEncodedSize(int64_t decoded_size) const override {
    return decoded_size + static_cast<int64_t>(kChecksumSize);
  }

  Result<int64_t> EncodeInto(std::span<const std::byte> input,
                             std::span<std::byte> output) const override {
    STRATA_CHECK(output.size() >= input.size() + kChecksumSize);
    const uint32_t value = Compute(input);  // before moving: input may alias output
    const size_t data_at = checksum_.at_start ? kChecksumSize : 0;
    if (!input.empty() && output.data() + data_at != input.data()) {
      std::memmove(output.data() + data_at, input.data(), input.size());
    }
    std::memcpy(output.data() + (checksum_.at_start ? 0 : input.size()), &value, kChecksumSize);
    return static_cast<int64_t>(input.size() + kChecksumSize);
  }

  Result<std::optional<int64_t>> DecodedSize(std::span<const std::byte> encoded) const override {
    if (encoded.size() < kChecksumSize) return TooShort(encoded.size());
    return std::optional<int64_t>(static_cast<int64_t>(encoded.size() - kChecksumSize));
  }

  Status DecodeInto(std::span<const std::byte> input, std::span<std::byte> output) const override {
    STRATA_ASSIGN_OR_RETURN(std::span<const std::byte> data, DecodedSubrange(input));
    if (data.size() != output.size()) {
      return DecodedSizeMismatch(CodecName(spec_), static_cast<int64_t>(data.size()),
                                 static_cast<int64_t>(output.size()));
    }
    if (!data.empty()) std::memcpy(output.data(), data.data(), data.size());
    return Status::Ok();
  }

  bool decodes_to_subrange() const override { return true; }
  bool appends_checksum() const override { return !checksum_.at_start; }

  Result<std::span<const std::byte>> DecodedSubrange(
      std::span<const std::byte> input) const override {
    if (input.size() < kChecksumSize) return TooShort(input.size());
    const size_t n = input.size() - kChecksumSize;
    std::span<const std::byte> data = input.subspan(checksum_.at_start ? kChecksumSize : 0, n);
    uint32_t stored;
    std::memcpy(&stored, input.data() + (checksum_.at_start ? 0 : n), kChecksumSize);
    const uint32_t actual = Compute(data);
    if (actual != stored) {
      return DataLossError(fmt::format(
          "{}: checksum mismatch over {} bytes (stored {:08x}, computed {:08x})",
          CodecName(spec_), n, stored, actual));
    }
    return data;
  }

 private:
  uint32_t Compute(std::span<const std::byte> data) const {
    switch (checksum_.kind) {
      case Checksum32Spec::Kind::kCrc32:
        return ZlibChecksum(::crc32, 0, data);
      case Checksum32Spec::Kind::kAdler32:
        return ZlibChecksum(::adler32, 1, data);
      case Checksum32Spec::Kind::kCrc32c:
        return Crc32c(data);
      case Checksum32Spec::Kind::kFletcher32:
        return Fletcher32(data);
    }
    return 0;
  }

  Status TooShort(size_t size) const {
    return DataLossError(
        fmt::format("{}: encoded chunk is {} bytes, shorter than the 4-byte checksum",
                    CodecName(spec_), size));
  }

  BytesCodecSpec spec_;
  Checksum32Spec checksum_;
};

}  // namespace

Result<std::unique_ptr<const BytesCodec>> MakeChecksum32Codec(const Checksum32Spec& spec) {
  if (spec.kind == Checksum32Spec::Kind::kFletcher32 && spec.at_start) {
    return InvalidArgumentError("fletcher32 stores its checksum at the end only");
  }
  return std::unique_ptr<const BytesCodec>(new Checksum32Codec(spec));
}

uint32_t Fletcher32ForTest(std::span<const std::byte> data) { return Fletcher32(data); }

}  // namespace strata::internal_codec
