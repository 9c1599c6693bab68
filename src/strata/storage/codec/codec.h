// BytesCodec: a bytes -> bytes stage of a chunk's encoding (a compressor or a
// checksum), and MakeBytesCodec to build one from its spec.
//
// Lifecycle: build once per array from its metadata (MakeBytesCodec), then call
// Encode/Decode for any number of chunks from any number of threads: codecs are
// immutable and thread-safe.
//
// Decoding writes straight into the caller's destination whenever the format
// records (or the caller knows) the decoded size: no intermediate copy. That is
// what makes a compressed read cost one buffer (the encoded bytes) beside the
// chunk, not two.
#ifndef STRATA_STORAGE_CODEC_CODEC_H_
#define STRATA_STORAGE_CODEC_CODEC_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "strata/base/status.h"
#include "strata/core/memory_pool.h"
#include "strata/storage/codec/codec_spec.h"

namespace strata {

// Partial decoding (BytesCodec::DecodeRuns): fetches `length` stored bytes
// at `offset` of one encoded chunk (a ranged read of its object) into a new
// buffer of exactly that size, with the stored chunk's whole size, which a
// decoder checks as it checks a whole chunk's (a raw chunk's length, a blosc
// frame's recorded size): a chunk of the wrong length is corrupt however
// little of it is read. DataLoss when fewer bytes are stored.
struct EncodedRange {
  Buffer bytes;
  int64_t stored_size = 0;
};
using EncodedRangeReader = std::function<Result<EncodedRange>(int64_t offset, int64_t length)>;

// A run of a decoded chunk's bytes, and where it goes.
struct DecodedRun {
  int64_t offset = 0;        // in the decoded bytes
  std::span<std::byte> out;  // out.size() bytes from `offset`
};

// Where a streaming encoder (BytesCodec::EncodeTo) puts the encoded bytes:
// appended in order, with bytes already appended patched later (a header
// whose fields are known only at the end). A StoreWriter behind it writes a
// chunk's stored object as it is encoded.
class EncodedSink {
 public:
  virtual ~EncodedSink() = default;
  virtual Status Append(std::span<const std::byte> bytes) = 0;
  virtual Status PatchAt(int64_t offset, std::span<const std::byte> bytes) = 0;
};

class BytesCodec {
 public:
  virtual ~BytesCodec() = default;

  virtual const BytesCodecSpec& spec() const = 0;

  // An upper bound on the encoded size of `decoded_size` bytes.
  virtual int64_t MaxEncodedSize(int64_t decoded_size) const = 0;

  // Encodes `input` into `output`, which holds at least
  // MaxEncodedSize(input.size()) bytes; returns the encoded length.
  // Internal on a library failure.
  virtual Result<int64_t> EncodeInto(std::span<const std::byte> input,
                                     std::span<std::byte> output) const = 0;

  // The decoded size recorded in the encoded bytes' header (blosc, zstd, lz4),
  // or nullopt for formats without one (zlib, gzip). DataLoss when the header
  // itself is malformed.
  virtual Result<std::optional<int64_t>> DecodedSize(std::span<const std::byte> encoded) const = 0;

  // Decodes `input` into exactly `output`. DataLoss when the input is corrupt,
  // truncated, or decodes to a size other than output.size(); the message
  // gives both sizes.
  virtual Status DecodeInto(std::span<const std::byte> input,
                            std::span<std::byte> output) const = 0;

  // Checksum codecs decode to a sub-range of their input (the bytes before the
  // checksum) after verifying it; they return true here and implement
  // DecodedSubrange, so that decoding costs no copy. DataLoss on a mismatch.
  virtual bool decodes_to_subrange() const { return false; }
  // Checksums stored after the bytes: encoding can append them in place.
  virtual bool appends_checksum() const { return false; }
  virtual Result<std::span<const std::byte>> DecodedSubrange(
      std::span<const std::byte> input) const;

  // Partial decoding. A format made of independently compressed blocks
  // (blosc) decodes some runs of its output from the stored bytes of the
  // blocks that hold them, fetched through `read`, without the rest of the
  // frame: decodes_runs() is true and DecodeRuns decodes `runs` (sorted by
  // offset, not overlapping), each block once, into their destinations.
  // `decoded_size` is what the whole frame must decode to. Scratch (the
  // fetched bytes, a decoded block) comes from `scratch`. DataLoss when the
  // frame is corrupt or truncated, or records another decoded size.
  virtual bool decodes_runs() const { return false; }
  virtual Status DecodeRuns(const EncodedRangeReader& read, int64_t decoded_size,
                            std::span<const DecodedRun> runs, MemoryPool& scratch) const;
  // The bytes a partial decode of the frame beginning with `header` (its
  // first kRunUnitHeaderBytes bytes, or all of a shorter frame) decodes at
  // least, whatever run it is asked for: blosc's block size. A planner's
  // estimate; DataLoss for a malformed header.
  static constexpr int64_t kRunUnitHeaderBytes = 16;
  virtual Result<int64_t> RunUnit(std::span<const std::byte> header) const;
  // The most scratch DecodeRuns holds for a frame encoded as the one
  // beginning with `header` (same parameters, same decoded size), asked for
  // runs of at most `max_run_bytes` each: whichever way such a frame was
  // stored (blosc: compressed blocks, or copied when incompressible). A
  // planner's bound; DataLoss for a malformed header.
  virtual Result<int64_t> RunScratchBytes(std::span<const std::byte> header,
                                          int64_t max_run_bytes) const;

  // Streaming encoding: true when EncodeTo writes the encoding of a large
  // input piece by piece with a bounded scratch (blosc: a few MiB of blocks
  // at a time), not into one buffer of the input's size.
  virtual bool encodes_streamed() const { return false; }
  // Encodes `input` into `sink`: the same bytes, or bytes any decoder of the
  // format decodes to the same input, as Encode. At most MaxStreamedSize
  // bytes are appended. FailedPrecondition when this input cannot be
  // streamed (the caller encodes it whole instead, discarding what the sink
  // holds); other errors as EncodeInto. Requires encodes_streamed().
  virtual Status EncodeTo(std::span<const std::byte> input, EncodedSink& sink,
                          MemoryPool& scratch) const;
  virtual int64_t MaxStreamedSize(int64_t decoded_size) const {
    return MaxEncodedSize(decoded_size);
  }

  // Encode into a new buffer from `pool`, sized to the encoded length.
  Result<Buffer> Encode(std::span<const std::byte> input, MemoryPool& pool) const;

  // Decode into a new buffer from `pool`. Uses DecodedSize when the format has
  // it; otherwise grows the buffer. `size_hint` (when known, e.g. the chunk's
  // byte size for the innermost codec) is checked against the result.
  Result<Buffer> Decode(std::span<const std::byte> input, MemoryPool& pool,
                        std::optional<int64_t> size_hint = std::nullopt) const;
};

// Builds a codec. `dtype_size` is the element size of the array (used by blosc
// for shuffling when spec.typesize is 0). InvalidArgument for invalid options
// (unknown blosc cname, a level out of range), naming the option.
Result<std::unique_ptr<const BytesCodec>> MakeBytesCodec(const BytesCodecSpec& spec, int dtype_size);

// CRC-32C (Castagnoli) of `data`, hardware-accelerated where the CPU allows.
uint32_t Crc32c(std::span<const std::byte> data, uint32_t crc = 0);

}  // namespace strata

#endif  // STRATA_STORAGE_CODEC_CODEC_H_
