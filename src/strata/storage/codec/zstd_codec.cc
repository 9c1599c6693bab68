// Zstandard frames with the decoded size in the frame header, as numcodecs.Zstd
// (ZSTD_compress) and the Zarr v3 "zstd" codec write them. With `checksum` the
// frame also carries zstd's content checksum, which decoding verifies.
//
// Compression and decompression contexts are expensive to create, so each
// thread keeps one of each; a codec object itself holds no context and is
// shared freely between threads.
#include <fmt/format.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>

#include "strata/storage/codec/codec_internal.h"

namespace strata::internal_codec {
namespace {

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

ZSTD_CCtx* ThreadCCtx() {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx(ZSTD_createCCtx());
  return cctx.get();
}

ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
  return dctx.get();
}

Status CorruptFrame(size_t zstd_error) {
  return DataLossError(
      fmt::format("zstd: corrupt or truncated frame ({})", ZSTD_getErrorName(zstd_error)));
}

class ZstdCodec final : public BytesCodec {
 public:
  explicit ZstdCodec(const ZstdSpec& spec) : spec_(spec) {}

  const BytesCodecSpec& spec() const override { return spec_; }

  int64_t MaxEncodedSize(int64_t decoded_size) const override {
    // The bound covers the frame header; the 4-byte checksum comes on top.
    return static_cast<int64_t>(ZSTD_compressBound(static_cast<size_t>(decoded_size))) + 4;
  }

  Result<int64_t> EncodeInto(std::span<const std::byte> input,
                             std::span<std::byte> output) const override {
    STRATA_CHECK(static_cast<int64_t>(output.size()) >=
                 MaxEncodedSize(static_cast<int64_t>(input.size())));
    const ZstdSpec& s = std::get<ZstdSpec>(spec_);
    ZSTD_CCtx* cctx = ThreadCCtx();
    if (cctx == nullptr) return ResourceExhaustedError("zstd: cannot create a compression context");
    size_t written;
    if (!s.checksum) {
      // Exactly numcodecs' ZSTD_compress: the simple API ignores (and so is not
      // affected by) any parameter an earlier checksum call left on the context.
      written = ZSTD_compressCCtx(cctx, DataOrEmpty(output), output.size(), DataOrEmpty(input),
                                  input.size(), s.level);
    } else {
      ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
      ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, s.level);
      ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
      ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
      written = ZSTD_compress2(cctx, DataOrEmpty(output), output.size(), DataOrEmpty(input),
                               input.size());
    }
    if (ZSTD_isError(written)) {
      return InternalError(fmt::format("zstd: compressing {} bytes failed ({})", input.size(),
                                       ZSTD_getErrorName(written)));
    }
    return static_cast<int64_t>(written);
  }

  Result<std::optional<int64_t>> DecodedSize(std::span<const std::byte> encoded) const override {
    unsigned long long size = ZSTD_getFrameContentSize(DataOrEmpty(encoded), encoded.size());
    if (size == ZSTD_CONTENTSIZE_ERROR) {
      return DataLossError(
          fmt::format("zstd: encoded chunk of {} bytes does not start with a zstd frame header",
                      encoded.size()));
    }
    if (size == ZSTD_CONTENTSIZE_UNKNOWN) return std::optional<int64_t>();
    // A block decodes to at most 128 KiB and costs at least 4 bytes (an RLE
    // block), so a frame expands at most ~32768x: a larger recorded size is a
    // corrupt header (refused here rather than allocated for by Decode).
    const auto limit = static_cast<unsigned long long>(encoded.size()) * 32768 + (128 << 10);
    if (size > limit) {
      return DataLossError(fmt::format(
          "zstd: frame header records {} decoded bytes, more than a {}-byte frame can hold", size,
          encoded.size()));
    }
    return std::optional<int64_t>(static_cast<int64_t>(size));
  }

  Status DecodeInto(std::span<const std::byte> input, std::span<std::byte> output) const override {
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> recorded, DecodedSize(input));
    const auto expected = static_cast<int64_t>(output.size());
    if (recorded && *recorded != expected) return DecodedSizeMismatch("zstd", *recorded, expected);
    ZSTD_DCtx* dctx = ThreadDCtx();
    if (dctx == nullptr) {
      return ResourceExhaustedError("zstd: cannot create a decompression context");
    }
    size_t decoded =
        ZSTD_decompressDCtx(dctx, DataOrEmpty(output), output.size(), input.data(), input.size());
    if (ZSTD_isError(decoded)) {
      if (ZSTD_getErrorCode(decoded) == ZSTD_error_dstSize_tooSmall) {
        return DataLossError(fmt::format(
            "zstd: encoded chunk decodes to more than {} bytes, expected {}", expected, expected));
      }
      return CorruptFrame(decoded);
    }
    if (static_cast<int64_t>(decoded) != expected) {
      return DecodedSizeMismatch("zstd", static_cast<int64_t>(decoded), expected);
    }
    return Status::Ok();
  }

 private:
  BytesCodecSpec spec_;
};

}  // namespace

Result<int64_t> ZstdDecompressInto(std::span<const std::byte> input, std::span<std::byte> output) {
  ZSTD_DCtx* dctx = ThreadDCtx();
  if (dctx == nullptr) return ResourceExhaustedError("zstd: cannot create a decompression context");
  const size_t decoded = ZSTD_decompressDCtx(dctx, DataOrEmpty(output), output.size(),
                                             DataOrEmpty(input), input.size());
  if (ZSTD_isError(decoded)) return CorruptFrame(decoded);
  return static_cast<int64_t>(decoded);
}

Result<Buffer> ZstdDecompressToNewBuffer(std::span<const std::byte> input, MemoryPool& pool) {
  ZSTD_DCtx* dctx = ThreadDCtx();
  if (dctx == nullptr) return ResourceExhaustedError("zstd: cannot create a decompression context");
  ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
  GrowableOutput out(pool);
  ZSTD_inBuffer in{DataOrEmpty(input), input.size(), 0};
  const int64_t initial = std::max<int64_t>(int64_t{4} * static_cast<int64_t>(input.size()),
                                            static_cast<int64_t>(ZSTD_DStreamOutSize()));
  while (true) {
    STRATA_RETURN_IF_ERROR(out.Reserve(static_cast<int64_t>(ZSTD_DStreamOutSize()), initial));
    ZSTD_outBuffer o{out.write_ptr(), static_cast<size_t>(out.free_bytes()), 0};
    size_t hint = ZSTD_decompressStream(dctx, &o, &in);
    if (ZSTD_isError(hint)) return CorruptFrame(hint);
    out.Advance(static_cast<int64_t>(o.pos));
    if (hint == 0 && in.pos == in.size) break;  // the last frame is complete
    // With output space left, zstd has flushed all it can: it is waiting for input.
    if (in.pos == in.size && o.pos < o.size) {
      return DataLossError(
          fmt::format("zstd: truncated frame ({} bytes decoded before the end)", out.size()));
    }
  }
  return std::move(out).Finish();
}

Result<std::unique_ptr<const BytesCodec>> MakeZstdCodec(const ZstdSpec& spec) {
  if (spec.level < ZSTD_minCLevel() || spec.level > ZSTD_maxCLevel()) {
    return InvalidArgumentError(fmt::format("zstd level {} out of range {}..{}", spec.level,
                                            ZSTD_minCLevel(), ZSTD_maxCLevel()));
  }
  return std::unique_ptr<const BytesCodec>(std::make_unique<ZstdCodec>(spec));
}

}  // namespace strata::internal_codec
