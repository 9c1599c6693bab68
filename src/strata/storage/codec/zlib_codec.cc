// zlib streams (numcodecs.Zlib: zlib.compress, windowBits 15) and gzip members
// (numcodecs.GZip, Zarr v3 "gzip": windowBits 15 + 16).
//
// Gzip headers are written as Python's gzip module writes them (mtime 0, XFL
// from the level, OS 255), so that, apart from the mtime numcodecs takes from
// the clock, Strata's gzip output equals numcodecs' byte for byte. Decoding
// accepts what Python's reader accepts: several members and trailing zero
// padding.
//
// Neither format records the decoded size. DecodeInto inflates straight into
// the caller's buffer (whose size the caller knows: the chunk's byte size for
// the innermost codec); InflateToNewBuffer grows a buffer when nobody knows.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "strata/storage/codec/codec_internal.h"

namespace strata::internal_codec {
namespace {

// z_stream counts are 32-bit: feed input and output in steps of at most this.
constexpr size_t kMaxStep = size_t{1} << 30;

const char* FormatName(bool gzip) { return gzip ? "gzip" : "zlib"; }

Bytef* ToBytef(const std::byte* p) {
  // zlib's next_in is not const-qualified but is never written through.
  return reinterpret_cast<Bytef*>(const_cast<std::byte*>(p));
}

// Ends a z_stream however the function using it returns.
class DeflateStream {
 public:
  DeflateStream() = default;
  ~DeflateStream() {
    if (initialized_) deflateEnd(&zs_);
  }
  int Init(int level, int window_bits) {
    int ret =
        deflateInit2(&zs_, level, Z_DEFLATED, window_bits, /*memLevel=*/8, Z_DEFAULT_STRATEGY);
    initialized_ = ret == Z_OK;
    return ret;
  }
  z_stream& zs() { return zs_; }

 private:
  z_stream zs_{};
  bool initialized_ = false;
};

class InflateStream {
 public:
  InflateStream() = default;
  ~InflateStream() {
    if (initialized_) inflateEnd(&zs_);
  }
  int Init(int window_bits) {
    int ret = inflateInit2(&zs_, window_bits);
    initialized_ = ret == Z_OK;
    return ret;
  }
  z_stream& zs() { return zs_; }

 private:
  z_stream zs_{};
  bool initialized_ = false;
};

// Inflates all of `input` and returns the number of bytes produced. Output
// goes into the windows that `next_window(bytes_used_in_previous_window)`
// returns whenever the current one is full; an empty window means there is no
// more room, and any further output is DataLoss ("decodes to more than").
template <typename NextWindow>
Result<int64_t> Inflate(std::span<const std::byte> input, bool gzip, NextWindow&& next_window) {
  const char* name = FormatName(gzip);
  InflateStream stream;
  z_stream& zs = stream.zs();
  if (int ret = stream.Init(gzip ? 15 + 16 : 15); ret != Z_OK) {
    return ResourceExhaustedError(
        fmt::format("{}: cannot start inflating (zlib error {})", name, ret));
  }
  zs.next_in = ToBytef(DataOrEmpty(input));
  zs.avail_in = 0;
  size_t in_left = input.size();
  zs.avail_out = 0;
  std::byte overflow[64];  // catches output beyond the last window
  bool overflowing = false;
  int64_t produced = 0;
  int64_t window_used = 0;
  while (true) {
    if (zs.avail_in == 0 && in_left > 0) {
      size_t step = std::min(in_left, kMaxStep);
      zs.avail_in = static_cast<uInt>(step);
      in_left -= step;
    }
    if (zs.avail_out == 0) {
      STRATA_ASSIGN_OR_RETURN(std::span<std::byte> window, next_window(window_used));
      window_used = 0;
      if (window.empty()) {
        overflowing = true;
        zs.next_out = reinterpret_cast<Bytef*>(overflow);
        zs.avail_out = sizeof(overflow);
      } else {
        zs.next_out = reinterpret_cast<Bytef*>(window.data());
        zs.avail_out = static_cast<uInt>(std::min(window.size(), kMaxStep));
      }
    }
    const uInt before = zs.avail_out;
    int ret = inflate(&zs, Z_NO_FLUSH);
    const int64_t made = before - zs.avail_out;
    if (overflowing && made > 0) {
      return DataLossError(
          fmt::format("{}: encoded chunk decodes to more than {} bytes, expected {}", name,
                      produced, produced));
    }
    produced += made;
    window_used += made;
    switch (ret) {
      case Z_OK:
        break;
      case Z_STREAM_END: {
        std::span<const std::byte> rest(reinterpret_cast<const std::byte*>(zs.next_in),
                                        zs.avail_in + in_left);
        if (rest.empty()) return produced;
        if (!gzip) {
          return DataLossError(
              fmt::format("zlib: {} bytes follow the end of the stream", rest.size()));
        }
        if (std::all_of(rest.begin(), rest.end(), [](std::byte b) { return b == std::byte{0}; })) {
          return produced;  // zero padding after the last member
        }
        if (rest.size() >= 2 && rest[0] == std::byte{0x1f} && rest[1] == std::byte{0x8b}) {
          inflateReset(&zs);  // another member
          break;
        }
        return DataLossError(
            fmt::format("gzip: {} bytes that are not a gzip member follow the data", rest.size()));
      }
      case Z_BUF_ERROR:
        // No progress: the output window is full (refilled above) or the input ran out.
        if (zs.avail_in == 0 && in_left == 0) {
          return DataLossError(fmt::format(
              "{}: truncated stream ({} bytes decoded before the input ended)", name, produced));
        }
        break;
      case Z_NEED_DICT:
        return DataLossError(fmt::format("{}: stream needs a preset dictionary", name));
      case Z_MEM_ERROR:
        return ResourceExhaustedError(fmt::format("{}: out of memory while inflating", name));
      default:
        return DataLossError(fmt::format("{}: corrupt stream ({})", name,
                                         zs.msg != nullptr ? zs.msg : "invalid data"));
    }
  }
}

class DeflateCodec final : public BytesCodec {
 public:
  DeflateCodec(BytesCodecSpec spec, int level, bool gzip)
      : spec_(std::move(spec)), level_(level), gzip_(gzip) {}

  const BytesCodecSpec& spec() const override { return spec_; }

  int64_t MaxEncodedSize(int64_t decoded_size) const override {
    // compressBound assumes the 6-byte zlib wrapper; gzip's is 18 bytes.
    return static_cast<int64_t>(compressBound(static_cast<uLong>(decoded_size))) + (gzip_ ? 12 : 0);
  }

  Result<int64_t> EncodeInto(std::span<const std::byte> input,
                             std::span<std::byte> output) const override {
    const char* name = FormatName(gzip_);
    STRATA_CHECK(static_cast<int64_t>(output.size()) >=
                 MaxEncodedSize(static_cast<int64_t>(input.size())));
    DeflateStream stream;
    z_stream& zs = stream.zs();
    if (int ret = stream.Init(level_, gzip_ ? 15 + 16 : 15); ret != Z_OK) {
      return ResourceExhaustedError(
          fmt::format("{}: cannot start deflating (zlib error {})", name, ret));
    }
    zs.next_in = ToBytef(DataOrEmpty(input));
    zs.avail_in = 0;
    zs.next_out = reinterpret_cast<Bytef*>(output.data());
    zs.avail_out = 0;
    size_t in_left = input.size();
    size_t out_left = output.size();
    while (true) {
      if (zs.avail_in == 0 && in_left > 0) {
        size_t step = std::min(in_left, kMaxStep);
        zs.avail_in = static_cast<uInt>(step);
        in_left -= step;
      }
      if (zs.avail_out == 0) {
        if (out_left == 0) {
          return InternalError(fmt::format("{}: output exceeds its bound", name));
        }
        size_t step = std::min(out_left, kMaxStep);
        zs.avail_out = static_cast<uInt>(step);
        out_left -= step;
      }
      // As zlib.compress does: Z_FINISH once the last input has been handed over.
      int ret = deflate(&zs, in_left == 0 ? Z_FINISH : Z_NO_FLUSH);
      if (ret == Z_STREAM_END) break;
      if (ret != Z_OK && ret != Z_BUF_ERROR) {
        return InternalError(fmt::format("{}: deflate failed (zlib error {})", name, ret));
      }
    }
    const auto written = static_cast<int64_t>(zs.total_out);
    if (gzip_) {
      // zlib wrote mtime 0; match Python's XFL and OS bytes (RFC 1952 header
      // bytes 8 and 9, covered by no checksum).
      output[8] = std::byte{static_cast<uint8_t>(level_ == 9 ? 2 : level_ == 1 ? 4 : 0)};
      output[9] = std::byte{0xff};
    }
    return written;
  }

  Result<std::optional<int64_t>> DecodedSize(std::span<const std::byte> encoded) const override {
    return std::optional<int64_t>();
  }

  Status DecodeInto(std::span<const std::byte> input, std::span<std::byte> output) const override {
    size_t offset = 0;
    auto next_window = [&](int64_t used) -> Result<std::span<std::byte>> {
      offset += static_cast<size_t>(used);
      return output.subspan(offset);
    };
    STRATA_ASSIGN_OR_RETURN(int64_t produced, Inflate(input, gzip_, next_window));
    const auto expected = static_cast<int64_t>(output.size());
    if (produced != expected) return DecodedSizeMismatch(FormatName(gzip_), produced, expected);
    return Status::Ok();
  }

 private:
  BytesCodecSpec spec_;
  int level_;
  bool gzip_;
};

}  // namespace

Result<Buffer> InflateToNewBuffer(std::span<const std::byte> input, bool gzip, MemoryPool& pool) {
  // Deflate expands at most ~1032x. A gzip trailer's ISIZE is the decoded size
  // modulo 2^32 for single-member data: a good first guess.
  const auto in_size = static_cast<int64_t>(input.size());
  int64_t guess = 4 * in_size;
  if (gzip && input.size() >= 18) {
    uint32_t isize;
    std::memcpy(&isize, input.data() + input.size() - 4, 4);
    guess = std::min<int64_t>(isize, 1032 * in_size);
  }
  guess = std::max<int64_t>(guess, 4096);
  GrowableOutput out(pool);
  auto next_window = [&](int64_t used) -> Result<std::span<std::byte>> {
    out.Advance(used);
    STRATA_RETURN_IF_ERROR(out.Reserve(4096, guess));
    return std::span<std::byte>(out.write_ptr(), static_cast<size_t>(out.free_bytes()));
  };
  STRATA_ASSIGN_OR_RETURN(int64_t produced, Inflate(input, gzip, next_window));
  out.Advance(produced - out.size());
  return std::move(out).Finish();
}

Result<std::unique_ptr<const BytesCodec>> MakeZlibCodec(const ZlibSpec& spec) {
  if (spec.level < 0 || spec.level > 9) {
    return InvalidArgumentError(fmt::format("zlib level {} out of range 0..9", spec.level));
  }
  return std::unique_ptr<const BytesCodec>(
      std::make_unique<DeflateCodec>(spec, spec.level, /*gzip=*/false));
}

Result<std::unique_ptr<const BytesCodec>> MakeGzipCodec(const GzipSpec& spec) {
  if (spec.level < 0 || spec.level > 9) {
    return InvalidArgumentError(fmt::format("gzip level {} out of range 0..9", spec.level));
  }
  return std::unique_ptr<const BytesCodec>(
      std::make_unique<DeflateCodec>(spec, spec.level, /*gzip=*/true));
}

}  // namespace strata::internal_codec
