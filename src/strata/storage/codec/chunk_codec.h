// ChunkCodec: turns a whole chunk (an N-d array of elements) into the bytes
// stored under its key, and back, per a ChunkEncoding.
//
// Lifecycle: Make() once per array (it validates the encoding against the chunk
// shape and builds the bytes codecs); then Encode/Decode any number of chunks
// from any number of threads (immutable, thread-safe).
//
// Copies. `read_copies()` and `write_copies()` report how many chunk-sized
// buffers besides the chunk itself a decode/encode needs, for the memory
// contract (shared/DESIGN.md): an identity encoding (C order, native endian, no
// compression) reads 0 (the store reads straight into the destination), a
// compressed one 1 (the encoded bytes); a transpose or byte swap plus a
// compressor may need 2.
#ifndef STRATA_STORAGE_CODEC_CHUNK_CODEC_H_
#define STRATA_STORAGE_CODEC_CHUNK_CODEC_H_

#include <memory>
#include <span>
#include <vector>

#include "strata/base/status.h"
#include "strata/core/memory_pool.h"
#include "strata/core/ndarray.h"
#include "strata/storage/codec/codec.h"
#include "strata/storage/codec/codec_spec.h"

namespace strata {

class ChunkCodec {
 public:
  // InvalidArgument when `encoding.transpose` is not a permutation of the
  // chunk's axes or a codec's options are invalid.
  static Result<std::shared_ptr<const ChunkCodec>> Make(ChunkEncoding encoding, Shape chunk_shape);

  const ChunkEncoding& encoding() const { return encoding_; }
  const Shape& chunk_shape() const { return chunk_shape_; }
  // Decoded bytes of one chunk.
  int64_t chunk_bytes() const { return chunk_bytes_; }
  // An upper bound on the encoded bytes of one chunk.
  int64_t max_encoded_bytes() const { return max_encoded_bytes_; }

  // True when stored bytes are exactly the C-order native-endian elements, so
  // a store can read them straight into a chunk buffer.
  bool is_identity() const { return identity_; }

  // Decodes `encoded` into `out`, a view of the full chunk shape (any strides).
  // `scratch` provides temporary buffers. DataLoss when the bytes are corrupt or
  // do not decode to exactly chunk_bytes(); the message names the codec.
  Status Decode(std::span<const std::byte> encoded, const ArrayView& out,
                MemoryPool& scratch) const;

  // Encodes `chunk` (the full chunk shape, any strides) into a new buffer from
  // `pool`, sized to the encoded length.
  Result<Buffer> Encode(const ConstArrayView& chunk, MemoryPool& pool) const;

  // Streaming writes: true when EncodeTo writes a chunk's encoding piece by
  // piece with a bounded scratch, not into a buffer of the chunk's size: the
  // stored layout is the chunk's C order, native endian, and the one bytes
  // codec streams (blosc; BytesCodec::EncodeTo).
  bool encodes_streamed() const { return encodes_streamed_; }
  // Encodes `chunk` (contiguous, the full chunk shape) into `sink`, at most
  // max_streamed_bytes(). FailedPrecondition when this chunk is not streamed
  // (then Encode it, discarding the sink). Requires encodes_streamed().
  Status EncodeTo(const ConstArrayView& chunk, EncodedSink& sink, MemoryPool& scratch) const;
  int64_t max_streamed_bytes() const;

  // Partial reads: true when a run of the chunk's C-order bytes can be
  // decoded from part of its stored bytes, i.e. the stored layout is the
  // chunk's C order and the bytes codecs are none (raw bytes, read as they
  // are) or one that decodes runs (blosc; BytesCodec::DecodeRuns). Checksums
  // and stream compressors need every stored byte.
  bool reads_runs() const { return reads_runs_; }
  // Decodes `runs` (offsets in the chunk's C-order bytes, sorted, not
  // overlapping) from what `read` fetches of the stored chunk. Requires
  // reads_runs(). Scratch from `scratch`; DataLoss as Decode.
  Status DecodeRuns(const EncodedRangeReader& read, std::span<const DecodedRun> runs,
                    MemoryPool& scratch) const;
  // What a partial read decodes at least, given the first
  // BytesCodec::kRunUnitHeaderBytes of a stored chunk (1 for raw bytes;
  // blosc's block size). Requires reads_runs().
  Result<int64_t> RunUnit(std::span<const std::byte> header) const;
  // The most scratch DecodeRuns holds (fetched bytes, decoded blocks) for a
  // chunk stored as the one beginning with `header` (ignored for raw bytes),
  // asked for runs of at most `max_run_bytes` each. Requires reads_runs().
  Result<int64_t> RunScratchBytes(std::span<const std::byte> header, int64_t max_run_bytes) const;
  // True when RunUnit needs a stored chunk's header.
  bool run_unit_needs_header() const { return reads_runs_ && !codecs_.empty(); }

  // Chunk-sized buffers beyond the chunk itself that Decode/Encode hold at
  // once (see the file comment).
  int read_copies() const { return read_copies_; }
  int write_copies() const { return write_copies_; }

 private:
  ChunkCodec() = default;

  ChunkEncoding encoding_;
  Shape chunk_shape_;
  int64_t chunk_bytes_ = 0;
  int64_t max_encoded_bytes_ = 0;
  bool identity_ = false;
  bool needs_byteswap_ = false;
  bool reads_runs_ = false;
  bool encodes_streamed_ = false;
  int read_copies_ = 0;
  int write_copies_ = 0;
  std::vector<std::unique_ptr<const BytesCodec>> codecs_;
};

}  // namespace strata

#endif  // STRATA_STORAGE_CODEC_CHUNK_CODEC_H_
