// One bytes codec's decoder (chosen at build time) on untrusted bytes: into
// a buffer of the size its header claims (within a 64 MiB pool cap, so a
// lying header is an error, not an out-of-memory kill) and into a fixed
// 4 KiB buffer. An error or the bytes, never a crash; what decodes must
// encode and decode back to itself.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

#include "strata/base/check.h"
#include "strata/core/memory_pool.h"
#include "strata/storage/codec/codec.h"

namespace {

strata::BytesCodecSpec Spec() {
#if defined(STRATA_FUZZ_CODEC_blosc)
  return strata::BloscSpec{};
#elif defined(STRATA_FUZZ_CODEC_zstd)
  return strata::ZstdSpec{};
#elif defined(STRATA_FUZZ_CODEC_zlib)
  return strata::ZlibSpec{};
#elif defined(STRATA_FUZZ_CODEC_gzip)
  return strata::GzipSpec{};
#elif defined(STRATA_FUZZ_CODEC_lz4)
  return strata::Lz4Spec{};
#elif defined(STRATA_FUZZ_CODEC_crc32c)
  return strata::Crc32cSpec{};
#else
#error "define STRATA_FUZZ_CODEC_<name>"
#endif
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto codec = std::move(strata::MakeBytesCodec(Spec(), 8)).value();
  static const auto pool = strata::MemoryPool::Default()->NewChild({"fuzz", int64_t{64} << 20});
  std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);
  strata::Result<std::optional<int64_t>> claimed = codec->DecodedSize(input);
  strata::Result<strata::Buffer> decoded =
      codec->Decode(input, *pool, claimed.ok() ? *claimed : std::nullopt);
  if (decoded.ok()) {
    std::span<const std::byte> plain(decoded->data(), static_cast<size_t>(decoded->size()));
    strata::Result<strata::Buffer> encoded = codec->Encode(plain, *pool);
    STRATA_CHECK(encoded.ok()) << encoded.status().ToString();
    std::span<const std::byte> bytes(encoded->data(), static_cast<size_t>(encoded->size()));
    strata::Result<strata::Buffer> back = codec->Decode(bytes, *pool, decoded->size());
    STRATA_CHECK(back.ok()) << back.status().ToString();
    STRATA_CHECK(back->size() == decoded->size() &&
                 std::memcmp(back->data(), decoded->data(), decoded->size()) == 0);
  }
  std::byte fixed[4096];
  (void)codec->DecodeInto(input, std::span<std::byte>(fixed, sizeof fixed));
  return 0;
}
