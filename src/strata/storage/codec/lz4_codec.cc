// numcodecs.LZ4: the decoded size as a 4-byte little-endian integer, then one
// LZ4 block (LZ4_compress_fast / LZ4_decompress_safe). LZ4 blocks hold at most
// LZ4_MAX_INPUT_SIZE (~2 GB) bytes.
#include <fmt/format.h>
#include <lz4.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "strata/base/byte_size.h"
#include "strata/storage/codec/codec_internal.h"

namespace strata::internal_codec {
namespace {

constexpr int64_t kHeaderSize = 4;

class Lz4Codec final : public BytesCodec {
 public:
  explicit Lz4Codec(const Lz4Spec& spec) : spec_(spec), acceleration_(spec.acceleration) {}

  const BytesCodecSpec& spec() const override { return spec_; }

  int64_t MaxEncodedSize(int64_t decoded_size) const override {
    // LZ4_COMPRESSBOUND, without its cutoff at LZ4_MAX_INPUT_SIZE.
    return kHeaderSize + decoded_size + decoded_size / 255 + 16;
  }

  Result<int64_t> EncodeInto(std::span<const std::byte> input,
                             std::span<std::byte> output) const override {
    const auto size = static_cast<int64_t>(input.size());
    if (size > LZ4_MAX_INPUT_SIZE) {
      return InvalidArgumentError(
          fmt::format("lz4 cannot encode a chunk of {} (at most {} bytes); use smaller chunks",
                      FormatBytes(size), LZ4_MAX_INPUT_SIZE));
    }
    STRATA_CHECK(static_cast<int64_t>(output.size()) >= MaxEncodedSize(size));
    const auto le_size = static_cast<uint32_t>(size);  // the host is little-endian
    std::memcpy(output.data(), &le_size, kHeaderSize);
    const int capacity = static_cast<int>(
        std::min<int64_t>(static_cast<int64_t>(output.size()) - kHeaderSize, INT_MAX));
    int written = LZ4_compress_fast(reinterpret_cast<const char*>(DataOrEmpty(input)),
                                    reinterpret_cast<char*>(output.data() + kHeaderSize),
                                    static_cast<int>(size), capacity, acceleration_);
    if (written <= 0) {
      return InternalError(fmt::format("lz4: compressing {} bytes failed", size));
    }
    return kHeaderSize + written;
  }

  Result<std::optional<int64_t>> DecodedSize(std::span<const std::byte> encoded) const override {
    if (static_cast<int64_t>(encoded.size()) < kHeaderSize) {
      return DataLossError(fmt::format(
          "lz4: encoded chunk is {} bytes, shorter than the 4-byte size header", encoded.size()));
    }
    uint32_t size;
    std::memcpy(&size, encoded.data(), kHeaderSize);
    // Each LZ4 sequence costs at least one byte per 255 decoded bytes, so a
    // block expands at most ~255x: a larger recorded size is a corrupt header
    // (refused here rather than allocated for by Decode).
    const int64_t block_size = static_cast<int64_t>(encoded.size()) - kHeaderSize;
    if (size > static_cast<uint32_t>(LZ4_MAX_INPUT_SIZE) || size > 256 * block_size + 64) {
      return DataLossError(fmt::format(
          "lz4: header records {} decoded bytes, more than a {}-byte LZ4 block can hold", size,
          block_size));
    }
    return std::optional<int64_t>(size);
  }

  Status DecodeInto(std::span<const std::byte> input, std::span<std::byte> output) const override {
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> recorded, DecodedSize(input));
    const auto expected = static_cast<int64_t>(output.size());
    if (*recorded != expected) return DecodedSizeMismatch("lz4", *recorded, expected);
    const int64_t block_size = static_cast<int64_t>(input.size()) - kHeaderSize;
    if (block_size > INT_MAX) {
      return DataLossError(
          fmt::format("lz4: block of {} bytes is larger than LZ4 allows", block_size));
    }
    int decoded = LZ4_decompress_safe(reinterpret_cast<const char*>(input.data() + kHeaderSize),
                                      reinterpret_cast<char*>(DataOrEmpty(output)),
                                      static_cast<int>(block_size), static_cast<int>(expected));
    if (decoded < 0) {
      return DataLossError(
          fmt::format("lz4: corrupt or truncated block ({} bytes, header records {} decoded bytes)",
                      block_size, expected));
    }
    if (decoded != expected) {
      return DataLossError(
          fmt::format("lz4: block decodes to {} bytes, its header records {}", decoded, expected));
    }
    return Status::Ok();
  }

 private:
  BytesCodecSpec spec_;
  int acceleration_;
};

}  // namespace

Result<std::unique_ptr<const BytesCodec>> MakeLz4Codec(const Lz4Spec& spec) {
  // LZ4 itself clamps larger values to LZ4_ACCELERATION_MAX (65537).
  constexpr int kMaxAcceleration = 65537;
  if (spec.acceleration < 1 || spec.acceleration > kMaxAcceleration) {
    return InvalidArgumentError(
        fmt::format("lz4 acceleration {} out of range 1..{}", spec.acceleration, kMaxAcceleration));
  }
  return std::unique_ptr<const BytesCodec>(std::make_unique<Lz4Codec>(spec));
}

}  // namespace strata::internal_codec
