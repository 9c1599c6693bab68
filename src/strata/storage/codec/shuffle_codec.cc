// numcodecs.Shuffle: byte j of element i goes to position j * count + i, so
// that the bytes of equal significance sit together (it helps a compressor
// after it). An element size of 0 or 1 changes nothing.
//
// Unshuffle (codec_internal.h) is shared with blosc's partial decoding, which
// undoes blosc's shuffle filter block by block: 2-, 4- and 8-byte elements
// go 16 at a time through SSE2 byte transposes, others byte by byte.
#include <fmt/format.h>

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "strata/storage/codec/codec_internal.h"

namespace strata::internal_codec {
namespace {

#if defined(__SSE2__)
// Each takes elements [0, n) of `count`, n the largest multiple of 16, from
// the typesize streams of `src` (stream j at src + j * count) into `dst`,
// and returns n. Interleaving the streams pairwise doubles the bytes of each
// element per round: bytes, then 2-byte words, then 4-byte words.

__m128i Load(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
void Store(uint8_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }

size_t Unshuffle2(const uint8_t* src, uint8_t* dst, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m128i s0 = Load(src + i), s1 = Load(src + count + i);
    Store(dst + 2 * i, _mm_unpacklo_epi8(s0, s1));
    Store(dst + 2 * i + 16, _mm_unpackhi_epi8(s0, s1));
  }
  return i;
}

size_t Unshuffle4(const uint8_t* src, uint8_t* dst, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m128i s[4];
    for (int j = 0; j < 4; ++j) s[j] = Load(src + j * count + i);
    // Bytes (0, 1) and (2, 3) of elements 0..7, then of 8..15.
    const __m128i a0 = _mm_unpacklo_epi8(s[0], s[1]), a1 = _mm_unpacklo_epi8(s[2], s[3]);
    const __m128i a2 = _mm_unpackhi_epi8(s[0], s[1]), a3 = _mm_unpackhi_epi8(s[2], s[3]);
    uint8_t* o = dst + 4 * i;
    Store(o, _mm_unpacklo_epi16(a0, a1));       // elements 0..3
    Store(o + 16, _mm_unpackhi_epi16(a0, a1));  // 4..7
    Store(o + 32, _mm_unpacklo_epi16(a2, a3));  // 8..11
    Store(o + 48, _mm_unpackhi_epi16(a2, a3));  // 12..15
  }
  return i;
}

size_t Unshuffle8(const uint8_t* src, uint8_t* dst, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m128i s[8], a[8], c[8];
    for (int j = 0; j < 8; ++j) s[j] = Load(src + j * count + i);
    // a[4h + p]: bytes (2p, 2p + 1) of elements 8h + 0..7.
    for (int p = 0; p < 4; ++p) {
      a[p] = _mm_unpacklo_epi8(s[2 * p], s[2 * p + 1]);
      a[4 + p] = _mm_unpackhi_epi8(s[2 * p], s[2 * p + 1]);
    }
    // c[4h + 2q + r]: bytes 4q..4q + 3 of elements 8h + 4r + 0..3.
    for (int h = 0; h < 2; ++h) {
      for (int q = 0; q < 2; ++q) {
        c[4 * h + 2 * q] = _mm_unpacklo_epi16(a[4 * h + 2 * q], a[4 * h + 2 * q + 1]);
        c[4 * h + 2 * q + 1] = _mm_unpackhi_epi16(a[4 * h + 2 * q], a[4 * h + 2 * q + 1]);
      }
    }
    // Whole elements 8h + 4r + 0..3.
    for (int h = 0; h < 2; ++h) {
      for (int r = 0; r < 2; ++r) {
        uint8_t* o = dst + 8 * (i + 8 * h + 4 * r);
        Store(o, _mm_unpacklo_epi32(c[4 * h + r], c[4 * h + 2 + r]));
        Store(o + 16, _mm_unpackhi_epi32(c[4 * h + r], c[4 * h + 2 + r]));
      }
    }
  }
  return i;
}
#endif  // __SSE2__

class ShuffleCodec final : public BytesCodec {
 public:
  explicit ShuffleCodec(const ShuffleSpec& spec) : spec_(spec), elementsize_(spec.elementsize) {}

  const BytesCodecSpec& spec() const override { return spec_; }

  int64_t MaxEncodedSize(int64_t decoded_size) const override { return decoded_size; }

  Result<int64_t> EncodeInto(std::span<const std::byte> input,
                             std::span<std::byte> output) const override {
    STRATA_CHECK(output.size() >= input.size());
    STRATA_RETURN_IF_ERROR(CheckMultiple(input.size()));
    Permute(input, output.first(input.size()), /*shuffle=*/true);
    return static_cast<int64_t>(input.size());
  }

  Result<std::optional<int64_t>> DecodedSize(std::span<const std::byte> encoded) const override {
    return std::optional<int64_t>(static_cast<int64_t>(encoded.size()));
  }

  Status DecodeInto(std::span<const std::byte> input, std::span<std::byte> output) const override {
    if (input.size() != output.size()) {
      return DecodedSizeMismatch("shuffle", static_cast<int64_t>(input.size()),
                                 static_cast<int64_t>(output.size()));
    }
    STRATA_RETURN_IF_ERROR(CheckMultiple(input.size()));
    Permute(input, output, /*shuffle=*/false);
    return Status::Ok();
  }

 private:
  Status CheckMultiple(size_t size) const {
    if (elementsize_ > 1 && size % static_cast<size_t>(elementsize_) != 0) {
      return DataLossError(fmt::format("shuffle: {} bytes are not a whole number of {}-byte elements",
                                       size, elementsize_));
    }
    return Status::Ok();
  }

  void Permute(std::span<const std::byte> in, std::span<std::byte> out, bool shuffle) const {
    if (in.empty()) return;
    if (elementsize_ <= 1) {
      std::memcpy(out.data(), in.data(), in.size());
      return;
    }
    if (!shuffle) {
      Unshuffle(elementsize_, in, out);
      return;
    }
    const size_t es = static_cast<size_t>(elementsize_);
    const size_t count = in.size() / es;
    for (size_t j = 0; j < es; ++j) {
      for (size_t i = 0; i < count; ++i) out[j * count + i] = in[i * es + j];
    }
  }

  BytesCodecSpec spec_;
  int elementsize_;
};

}  // namespace

void Unshuffle(int typesize, std::span<const std::byte> in, std::span<std::byte> out) {
  STRATA_CHECK(in.size() == out.size())
      << "unshuffling " << in.size() << " bytes into " << out.size();
  const size_t size = in.size();
  if (size == 0) return;
  const size_t ts = typesize > 1 ? static_cast<size_t>(typesize) : 1;
  const size_t count = size / ts;
  const auto* src = reinterpret_cast<const uint8_t*>(in.data());
  auto* dst = reinterpret_cast<uint8_t*>(out.data());
  if (ts == 1 || count == 0) {
    std::memcpy(dst, src, size);
    return;
  }
  size_t i = 0;
#if defined(__SSE2__)
  if (ts == 2) i = Unshuffle2(src, dst, count);
  if (ts == 4) i = Unshuffle4(src, dst, count);
  if (ts == 8) i = Unshuffle8(src, dst, count);
#endif
  for (; i < count; ++i) {
    for (size_t j = 0; j < ts; ++j) dst[i * ts + j] = src[j * count + i];
  }
  std::memcpy(dst + count * ts, src + count * ts, size - count * ts);
}

Result<std::unique_ptr<const BytesCodec>> MakeShuffleCodec(const ShuffleSpec& spec) {
  if (spec.elementsize < 0 || spec.elementsize > 1 << 16) {
    return InvalidArgumentError(
        fmt::format("shuffle elementsize {} out of range 0..65536", spec.elementsize));
  }
  return std::unique_ptr<const BytesCodec>(new ShuffleCodec(spec));
}

}  // namespace strata::internal_codec
