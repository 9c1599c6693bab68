// numcodecs.BZ2: bzip2 streams (libbz2). numcodecs compresses with Python's
// bz2.compress (one stream at the given level, 1..9); decompression accepts
// several concatenated streams as Python's bz2.decompress does. bzip2 records
// no decoded size: DecodeInto inflates straight into the caller's buffer and
// checks that it is filled exactly.
#include <bzlib.h>
#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "strata/storage/codec/codec_internal.h"

namespace strata::internal_codec {
namespace {

// Pieces of at most this many bytes go to libbz2 (its counters are 32-bit).
constexpr size_t kMaxPiece = size_t{1} << 30;

std::string_view Bz2Error(int code) {
  switch (code) {
    case BZ_DATA_ERROR: return "corrupt data";
    case BZ_DATA_ERROR_MAGIC: return "not a bzip2 stream";
    case BZ_MEM_ERROR: return "out of memory";
    case BZ_UNEXPECTED_EOF: return "truncated stream";
    case BZ_PARAM_ERROR: return "bad parameters";
    default: return "error";
  }
}

// Decompresses all of `input` (one or more streams) into the space `room()`
// offers; room.Advance(n) records n bytes written (and may fail).
template <typename Room>
Status Decompress(std::span<const std::byte> input, Room& room) {
  size_t consumed = 0;
  bool first = true;
  while (first || consumed < input.size()) {
    first = false;
    bz_stream stream{};
    int rc = BZ2_bzDecompressInit(&stream, 0, 0);
    if (rc != BZ_OK) return InternalError(fmt::format("bz2: {}", Bz2Error(rc)));
    Status status;
    while (true) {
      const size_t left = input.size() - consumed;
      const size_t piece = std::min(left, kMaxPiece);
      stream.next_in = const_cast<char*>(reinterpret_cast<const char*>(input.data() + consumed));
      stream.avail_in = static_cast<unsigned>(piece);
      std::span<std::byte> out;
      status = room(out);
      if (!status.ok()) break;
      stream.next_out = reinterpret_cast<char*>(out.data());
      stream.avail_out = static_cast<unsigned>(std::min(out.size(), kMaxPiece));
      const unsigned out_before = stream.avail_out;
      rc = BZ2_bzDecompress(&stream);
      consumed += piece - stream.avail_in;
      status = room.Advance(out_before - stream.avail_out);
      if (!status.ok()) break;
      if (rc == BZ_STREAM_END) break;
      if (rc != BZ_OK) {
        status = DataLossError(fmt::format("bz2: {} after {} input bytes", Bz2Error(rc), consumed));
        break;
      }
      if (stream.avail_in == piece && out_before == stream.avail_out && consumed == input.size()) {
        status = DataLossError("bz2: truncated stream");
        break;
      }
    }
    BZ2_bzDecompressEnd(&stream);
    STRATA_RETURN_IF_ERROR(status);
  }
  return Status::Ok();
}

// Decoding into a buffer of known size. Once it is full, one scratch byte is
// offered so that the end of the stream can still be read; a byte written
// there means the chunk decodes to more than expected.
struct FixedRoom {
  std::span<std::byte> output;
  size_t written = 0;
  bool in_scratch = false;
  std::byte scratch{};
  Status operator()(std::span<std::byte>& out) {
    in_scratch = written == output.size();
    out = in_scratch ? std::span<std::byte>(&scratch, 1) : output.subspan(written);
    return Status::Ok();
  }
  Status Advance(size_t n) {
    if (in_scratch && n > 0) {
      return DataLossError(fmt::format(
          "bz2: encoded chunk decodes to more than {} bytes, expected {}", output.size(),
          output.size()));
    }
    written += n;
    return Status::Ok();
  }
};

struct GrowingRoom {
  GrowableOutput* out_buffer;
  Status operator()(std::span<std::byte>& out) {
    STRATA_RETURN_IF_ERROR(out_buffer->Reserve(int64_t{1} << 16, int64_t{1} << 20));
    out = std::span<std::byte>(out_buffer->write_ptr(),
                               static_cast<size_t>(out_buffer->free_bytes()));
    return Status::Ok();
  }
  Status Advance(size_t n) {
    out_buffer->Advance(static_cast<int64_t>(n));
    return Status::Ok();
  }
};

class Bz2Codec final : public BytesCodec {
 public:
  explicit Bz2Codec(const Bz2Spec& spec) : spec_(spec), level_(spec.level) {}

  const BytesCodecSpec& spec() const override { return spec_; }

  int64_t MaxEncodedSize(int64_t decoded_size) const override {
    // bzlib's documented bound: 1% larger plus 600 bytes.
    return decoded_size + decoded_size / 100 + 601;
  }

  Result<int64_t> EncodeInto(std::span<const std::byte> input,
                             std::span<std::byte> output) const override {
    bz_stream stream{};
    int rc = BZ2_bzCompressInit(&stream, level_, 0, 0);
    if (rc != BZ_OK) return InternalError(fmt::format("bz2: {}", Bz2Error(rc)));
    size_t in_done = 0, out_done = 0;
    Status status;
    while (true) {
      const size_t in_piece = std::min(input.size() - in_done, kMaxPiece);
      const size_t out_piece = std::min(output.size() - out_done, kMaxPiece);
      stream.next_in = const_cast<char*>(reinterpret_cast<const char*>(DataOrEmpty(input) + in_done));
      stream.avail_in = static_cast<unsigned>(in_piece);
      stream.next_out = reinterpret_cast<char*>(output.data() + out_done);
      stream.avail_out = static_cast<unsigned>(out_piece);
      const bool last = in_done + in_piece == input.size();
      rc = BZ2_bzCompress(&stream, last ? BZ_FINISH : BZ_RUN);
      in_done += in_piece - stream.avail_in;
      out_done += out_piece - stream.avail_out;
      if (rc == BZ_STREAM_END) break;
      if (rc != BZ_RUN_OK && rc != BZ_FINISH_OK) {
        status = InternalError(fmt::format("bz2: compressing failed ({})", Bz2Error(rc)));
        break;
      }
      if (out_done == output.size()) {
        status = InternalError("bz2: output exceeded the compression bound");
        break;
      }
    }
    BZ2_bzCompressEnd(&stream);
    STRATA_RETURN_IF_ERROR(status);
    return static_cast<int64_t>(out_done);
  }

  Result<std::optional<int64_t>> DecodedSize(std::span<const std::byte>) const override {
    return std::optional<int64_t>();
  }

  Status DecodeInto(std::span<const std::byte> input, std::span<std::byte> output) const override {
    FixedRoom room{output};
    STRATA_RETURN_IF_ERROR(Decompress(input, room));
    if (room.written != output.size()) {
      return DecodedSizeMismatch("bz2", static_cast<int64_t>(room.written),
                                 static_cast<int64_t>(output.size()));
    }
    return Status::Ok();
  }

 private:
  BytesCodecSpec spec_;
  int level_;
};

}  // namespace

Result<Buffer> Bz2DecompressToNewBuffer(std::span<const std::byte> input, MemoryPool& pool) {
  GrowableOutput out(pool);
  GrowingRoom room{&out};
  STRATA_RETURN_IF_ERROR(Decompress(input, room));
  return std::move(out).Finish();
}

Result<std::unique_ptr<const BytesCodec>> MakeBz2Codec(const Bz2Spec& spec) {
  if (spec.level < 1 || spec.level > 9) {
    return InvalidArgumentError(fmt::format("bz2 level {} out of range 1..9", spec.level));
  }
  return std::unique_ptr<const BytesCodec>(new Bz2Codec(spec));
}

}  // namespace strata::internal_codec
