// Private helpers shared by the bytes codecs: one factory per format (each
// validates its options), decoders for encoded bytes whose decoded size is not
// known up front, the common DataLoss messages, and the two CRC-32C
// implementations (exposed so that tests can check one against the other).
//
// Thread-safety: every function here is thread-safe; GrowableOutput is a value
// owned by one thread.
#ifndef STRATA_STORAGE_CODEC_CODEC_INTERNAL_H_
#define STRATA_STORAGE_CODEC_CODEC_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "strata/base/status.h"
#include "strata/core/memory_pool.h"
#include "strata/storage/codec/codec.h"
#include "strata/storage/codec/codec_spec.h"

namespace strata::internal_codec {

// Factories. InvalidArgument names the bad option, e.g. "gzip level 12 out of
// range 0..9".
Result<std::unique_ptr<const BytesCodec>> MakeBloscCodec(const BloscSpec& spec, int dtype_size);
Result<std::unique_ptr<const BytesCodec>> MakeZstdCodec(const ZstdSpec& spec);
Result<std::unique_ptr<const BytesCodec>> MakeZlibCodec(const ZlibSpec& spec);
Result<std::unique_ptr<const BytesCodec>> MakeGzipCodec(const GzipSpec& spec);
Result<std::unique_ptr<const BytesCodec>> MakeLz4Codec(const Lz4Spec& spec);
std::unique_ptr<const BytesCodec> MakeCrc32cCodec();
Result<std::unique_ptr<const BytesCodec>> MakeBz2Codec(const Bz2Spec& spec);
Result<std::unique_ptr<const BytesCodec>> MakeChecksum32Codec(const Checksum32Spec& spec);
Result<std::unique_ptr<const BytesCodec>> MakeShuffleCodec(const ShuffleSpec& spec);

// Decoders for the case where neither the format nor the caller knows the
// decoded size (a zlib or gzip stream that is not the innermost codec, a zstd
// frame written without its content size): the output grows from `pool`.
// DataLoss on corrupt or truncated input.
Result<Buffer> InflateToNewBuffer(std::span<const std::byte> input, bool gzip, MemoryPool& pool);
Result<Buffer> ZstdDecompressToNewBuffer(std::span<const std::byte> input, MemoryPool& pool);
Result<Buffer> Bz2DecompressToNewBuffer(std::span<const std::byte> input, MemoryPool& pool);

// Decompresses the zstd frame `input` into `output` with this thread's
// context: the number of bytes decoded, or DataLoss (corrupt, or more than
// `output` holds).
Result<int64_t> ZstdDecompressInto(std::span<const std::byte> input, std::span<std::byte> output);

// Byte unshuffle, as numcodecs.Shuffle and blosc's shuffle filter undo it:
// byte j of element i of `out` is byte j * count + i of `in`, for the count
// = size / typesize whole elements; the size % typesize bytes after them are
// copied as they are (blosc's rule). `in` and `out` have the same size and
// do not overlap.
void Unshuffle(int typesize, std::span<const std::byte> in, std::span<std::byte> out);

// DataLoss "<codec>: encoded chunk decodes to <actual> bytes, expected <expected>".
Status DecodedSizeMismatch(std::string_view codec, int64_t actual, int64_t expected);

// Library entry points reject null pointers even for zero lengths, and a view
// of an empty chunk may have a null data pointer: this gives a valid address.
const std::byte* DataOrEmpty(std::span<const std::byte> bytes);
std::byte* DataOrEmpty(std::span<std::byte> bytes);

// A buffer from a pool that grows by doubling (with a copy) as a streaming
// decoder produces output; Finish() hands it over trimmed to what was written.
class GrowableOutput {
 public:
  explicit GrowableOutput(MemoryPool& pool) : pool_(pool) {}

  // Makes at least `min_free` bytes writable after what is written, growing to
  // at least `initial_capacity` on the first call. ResourceExhausted from the pool.
  Status Reserve(int64_t min_free, int64_t initial_capacity = 0);

  std::byte* write_ptr() { return buffer_.data() + size_; }
  int64_t free_bytes() const { return buffer_.size() - size_; }
  int64_t size() const { return size_; }
  void Advance(int64_t n) { size_ += n; }

  Result<Buffer> Finish() &&;

 private:
  MemoryPool& pool_;
  Buffer buffer_;
  int64_t size_ = 0;
};

// CRC-32C with the usual pre- and post-inversion, as Crc32c() in codec.h.
uint32_t Crc32cPortable(std::span<const std::byte> data, uint32_t crc);
// True when this CPU has the SSE4.2 crc32 instruction.
bool Crc32cHardwareAvailable();
// Requires Crc32cHardwareAvailable().
uint32_t Crc32cHardware(std::span<const std::byte> data, uint32_t crc);

// HDF5's Fletcher-32 as numcodecs computes it (exposed for known answers).
uint32_t Fletcher32ForTest(std::span<const std::byte> data);

}  // namespace strata::internal_codec

#endif  // STRATA_STORAGE_CODEC_CODEC_INTERNAL_H_
