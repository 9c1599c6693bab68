// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) and the Zarr v3
// "crc32c" codec: the data followed by its 4-byte little-endian CRC-32C.
//
// On x86 CPUs with SSE4.2 the crc32 instruction computes 8 bytes per step;
// elsewhere a slicing-by-8 table does. Both give identical results (tested).
#include <fmt/format.h>

#include <array>
#include <cstring>

#include "strata/storage/codec/codec_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define STRATA_CRC32C_X86 1
#endif

namespace strata {
namespace internal_codec {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;

// kTables[k][b]: the CRC of byte b followed by k zero bytes.
constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1) ? kPolynomial : 0);
    t[0][b] = c;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}

constexpr auto kTables = MakeTables();

constexpr size_t kCrc32cSize = 4;

class Crc32cCodec final : public BytesCodec {
 public:
  const BytesCodecSpec& spec() const override { return spec_; }

  int64_t MaxEncodedSize(int64_t decoded_size) const override {
    return decoded_size + static_cast<int64_t>(kCrc32cSize);
  }

  Result<int64_t> EncodeInto(std::span<const std::byte> input,
                             std::span<std::byte> output) const override {
    STRATA_CHECK(output.size() >= input.size() + kCrc32cSize);
    if (!input.empty() && output.data() != input.data()) {
      std::memmove(output.data(), input.data(), input.size());
    }
    const uint32_t crc = Crc32c(input);  // stored little-endian, as is the host
    std::memcpy(output.data() + input.size(), &crc, kCrc32cSize);
    return static_cast<int64_t>(input.size() + kCrc32cSize);
  }

  Result<std::optional<int64_t>> DecodedSize(std::span<const std::byte> encoded) const override {
    if (encoded.size() < kCrc32cSize) return TooShort(encoded.size());
    return std::optional<int64_t>(static_cast<int64_t>(encoded.size() - kCrc32cSize));
  }

  Status DecodeInto(std::span<const std::byte> input, std::span<std::byte> output) const override {
    STRATA_ASSIGN_OR_RETURN(std::span<const std::byte> data, DecodedSubrange(input));
    if (data.size() != output.size()) {
      return DecodedSizeMismatch("crc32c", static_cast<int64_t>(data.size()),
                                 static_cast<int64_t>(output.size()));
    }
    if (!data.empty()) std::memcpy(output.data(), data.data(), data.size());
    return Status::Ok();
  }

  bool decodes_to_subrange() const override { return true; }
  bool appends_checksum() const override { return true; }

  Result<std::span<const std::byte>> DecodedSubrange(
      std::span<const std::byte> input) const override {
    if (input.size() < kCrc32cSize) return TooShort(input.size());
    std::span<const std::byte> data = input.first(input.size() - kCrc32cSize);
    uint32_t stored;
    std::memcpy(&stored, input.data() + data.size(), kCrc32cSize);
    const uint32_t actual = Crc32c(data);
    if (actual != stored) {
      return DataLossError(
          fmt::format("crc32c: checksum mismatch over {} bytes (stored {:08x}, computed {:08x})",
                      data.size(), stored, actual));
    }
    return data;
  }

 private:
  static Status TooShort(size_t size) {
    return DataLossError(
        fmt::format("crc32c: encoded chunk is {} bytes, shorter than the 4-byte checksum", size));
  }

  BytesCodecSpec spec_ = Crc32cSpec{};
};

}  // namespace

uint32_t Crc32cPortable(std::span<const std::byte> data, uint32_t crc) {
  uint32_t c = ~crc;
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t n = data.size();
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^ kTables[5][(lo >> 16) & 0xff] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xff] ^ kTables[2][(hi >> 8) & 0xff] ^
        kTables[1][(hi >> 16) & 0xff] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
  return ~c;
}

#ifdef STRATA_CRC32C_X86

bool Crc32cHardwareAvailable() {
  static const bool available = __builtin_cpu_supports("sse4.2");
  return available;
}

__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(std::span<const std::byte> data,
                                                          uint32_t crc) {
  uint64_t c = ~crc;
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t n = data.size();
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
#if defined(__x86_64__)
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
#endif
  while (n >= 4) {
    uint32_t word;
    std::memcpy(&word, p, 4);
    c = _mm_crc32_u32(static_cast<uint32_t>(c), word);
    p += 4;
    n -= 4;
  }
  while (n-- > 0) c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
  return ~static_cast<uint32_t>(c);
}

#else

bool Crc32cHardwareAvailable() { return false; }

uint32_t Crc32cHardware(std::span<const std::byte> data, uint32_t crc) {
  return Crc32cPortable(data, crc);
}

#endif  // STRATA_CRC32C_X86

std::unique_ptr<const BytesCodec> MakeCrc32cCodec() { return std::make_unique<Crc32cCodec>(); }

}  // namespace internal_codec

uint32_t Crc32c(std::span<const std::byte> data, uint32_t crc) {
  if (internal_codec::Crc32cHardwareAvailable()) return internal_codec::Crc32cHardware(data, crc);
  return internal_codec::Crc32cPortable(data, crc);
}

}  // namespace strata
