// Blosc 1.x frames, as numcodecs.Blosc and the Zarr v3 "blosc" codec write them.
//
// A frame is a 16-byte header (format version, compressor version, flags,
// typesize, then little-endian decoded size, block size and frame size) and the
// compressed blocks. Every frame is checked with blosc_cbuffer_validate and its
// header sizes before libblosc decompresses it, so corrupt input never reaches
// the library unchecked. Compression and decompression use the *_ctx entry
// points with one internal thread: they share no global state, so any number
// of Strata threads may call them at once.
//
// Partial decoding (DecodeRuns): the blocks of a frame are compressed
// independently and the header is followed by the stored offset of each
// ("bstarts"), so a run of the decoded bytes needs only the blocks covering
// it. A block is decoded here when Strata has its compressor (lz4, lz4hc,
// zlib, zstd) and its filter (none, byte shuffle): each of its streams is
// decompressed into a scratch buffer the call keeps, then unshuffled into
// place. libblosc allocates a scratch of twice the block size on every call
// (serial_blosc's my_malloc), and where malloc maps every large request
// anew, that scratch is faulted in page by page each time: in a Dask worker
// (its nanny sets MALLOC_TRIM_THRESHOLD_, which fixes glibc's mmap threshold
// at 128 KiB) W4's tasks spent more time in those page faults than in
// decoding. Other blocks (blosclz,
// snappy, bit shuffle) are decoded by libblosc as a frame of one block: the
// 20 bytes before the block's stored bytes (already decoded, or not needed)
// are overwritten with a header for it and its one offset, so nothing is
// copied.
#include <blosc.h>
#include <fmt/format.h>
#include <lz4.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "strata/base/byte_size.h"
#include "strata/storage/codec/codec_internal.h"

namespace strata::internal_codec {
namespace {

constexpr std::array<std::string_view, 5> kCnames = {"lz4", "lz4hc", "blosclz", "zstd", "zlib"};

// The header flag that says a block was compressed as one stream, not split
// per byte of the element (blosc 1.x's "dont_split"): the last block of a
// frame, shorter than the others, is never split.
constexpr uint8_t kDontSplit = 0x10;
// A frame of one block: the 16-byte header and the block's stored offset.
constexpr int64_t kOneBlockPrefix = BLOSC_MIN_HEADER_LENGTH + 4;
// Blocks fetched with one read at most (bounds the scratch of DecodeRuns to
// a few blocks beside the decoded one).
constexpr int64_t kBlocksPerRead = 8;
// libblosc's rule for splitting a block into one stream per byte of the
// element (blosc.c: MAX_SPLITS, MIN_BUFFERSIZE).
constexpr int kMaxSplits = 16;
constexpr int64_t kMinSplitBytes = 128;
// The compressors DecodeBlock decodes (bits 5-7 of a frame's flags).
constexpr int kLz4Format = BLOSC_LZ4_FORMAT;  // lz4hc too
constexpr int kZlibFormat = BLOSC_ZLIB_FORMAT;
constexpr int kZstdFormat = BLOSC_ZSTD_FORMAT;

uint32_t LoadLe32(const std::byte* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

void StoreLe32(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

// The fields of a frame's 16-byte header, checked for consistency.
struct FrameHeader {
  uint8_t version = 0;
  uint8_t compressor_version = 0;
  uint8_t flags = 0;
  uint8_t typesize = 0;
  int64_t nbytes = 0;
  int64_t blocksize = 0;
  int64_t cbytes = 0;

  bool memcpyed() const { return (flags & BLOSC_MEMCPYED) != 0; }
  int64_t nblocks() const { return blocksize == 0 ? 0 : (nbytes + blocksize - 1) / blocksize; }

  static Result<FrameHeader> Parse(std::span<const std::byte> bytes) {
    if (bytes.size() < BLOSC_MIN_HEADER_LENGTH) {
      return DataLossError(
          fmt::format("blosc: encoded chunk is {} bytes, shorter than the {}-byte blosc header",
                      bytes.size(), BLOSC_MIN_HEADER_LENGTH));
    }
    FrameHeader h;
    h.version = static_cast<uint8_t>(bytes[0]);
    h.compressor_version = static_cast<uint8_t>(bytes[1]);
    h.flags = static_cast<uint8_t>(bytes[2]);
    h.typesize = static_cast<uint8_t>(bytes[3]);
    h.nbytes = LoadLe32(bytes.data() + 4);
    h.blocksize = LoadLe32(bytes.data() + 8);
    h.cbytes = LoadLe32(bytes.data() + 12);
    if (h.version != BLOSC_VERSION_FORMAT || (h.flags & 0x08) != 0) {
      return DataLossError(fmt::format(
          "blosc: frame format version {} with flags {:#x} is not one libblosc {} decodes",
          h.version, h.flags, BLOSC_VERSION_STRING));
    }
    if (h.nbytes > static_cast<int64_t>(BLOSC_MAX_BUFFERSIZE) || h.cbytes < BLOSC_MIN_HEADER_LENGTH) {
      return DataLossError(fmt::format("blosc: invalid frame header (records {} decoded bytes, {} "
                                       "frame bytes)",
                                       h.nbytes, h.cbytes));
    }
    if (h.nbytes == 0) return h;
    if (h.memcpyed()) {
      if (h.nbytes + BLOSC_MAX_OVERHEAD != h.cbytes) {
        return DataLossError(fmt::format(
            "blosc: header of an uncompressed frame records {} decoded bytes in a {}-byte frame",
            h.nbytes, h.cbytes));
      }
      return h;
    }
    if (h.blocksize == 0 || h.blocksize > h.nbytes || h.blocksize > static_cast<int64_t>(BLOSC_MAX_BLOCKSIZE) ||
        h.typesize == 0 || BLOSC_MIN_HEADER_LENGTH + 4 * h.nblocks() > h.cbytes) {
      return DataLossError(fmt::format(
          "blosc: inconsistent header ({} decoded bytes in blocks of {}, {}-byte frame)", h.nbytes,
          h.blocksize, h.cbytes));
    }
    return h;
  }
};

// Decompresses `input` (one stream of a block) into exactly `output`: false
// when it is corrupt or decodes to another size.
bool DecompressStream(int format, std::span<const std::byte> input, std::span<std::byte> output) {
  switch (format) {
    case kLz4Format:
      return LZ4_decompress_safe(reinterpret_cast<const char*>(input.data()),
                                 reinterpret_cast<char*>(output.data()),
                                 static_cast<int>(input.size()), static_cast<int>(output.size())) ==
             static_cast<int>(output.size());
    case kZlibFormat: {
      uLongf length = output.size();
      return uncompress(reinterpret_cast<Bytef*>(output.data()), &length,
                        reinterpret_cast<const Bytef*>(input.data()),
                        static_cast<uLong>(input.size())) == Z_OK &&
             length == output.size();
    }
    case kZstdFormat: {
      Result<int64_t> n = ZstdDecompressInto(input, output);
      return n.ok() && *n == static_cast<int64_t>(output.size());
    }
    default:
      return false;
  }
}

// True when DecodeBlock decodes blocks of frames with header `h`; the others
// go to libblosc.
bool DecodesBlocks(const FrameHeader& h) {
  const int format = h.flags >> 5;
  // Every compressor's format version is 1 (BLOSC_*_VERSION_FORMAT); libblosc
  // refuses others, so they go to it for its error.
  return h.compressor_version == 1 && (h.flags & BLOSC_DOBITSHUFFLE) == 0 &&
         (format == kLz4Format || format == kZlibFormat || format == kZstdFormat);
}

// Decodes block `j` of a frame with header `h` (DecodesBlocks), whose stored
// bytes are `stored`, into `dest` (the block's `bsize` bytes), as libblosc's
// blosc_d does. `streams` holds the shuffled bytes when the frame is shuffled
// (allocated from `pool` once, at the frame's block size). nullopt when the
// block is not one this decodes (a split that does not divide it), DataLoss
// when it is corrupt.
std::optional<Status> DecodeBlock(const FrameHeader& h, int64_t j,
                                  std::span<const std::byte> stored, std::byte* dest, int64_t bsize,
                                  Buffer& streams, MemoryPool& pool) {
  const int typesize = h.typesize;
  const bool shuffled = (h.flags & BLOSC_DOSHUFFLE) != 0 && typesize > 1;
  // The last block, shorter than the others, is never split; kDontSplit says
  // the writer split none.
  const bool leftover = bsize < h.blocksize;
  const int nsplits = (h.flags & kDontSplit) == 0 && typesize <= kMaxSplits &&
                              bsize / typesize >= kMinSplitBytes && !leftover
                          ? typesize
                          : 1;
  if (bsize % nsplits != 0) return std::nullopt;
  const int64_t neblock = bsize / nsplits;
  std::byte* out = dest;
  if (shuffled) {
    if (streams.empty()) {
      Result<Buffer> b = pool.Allocate(h.blocksize);
      if (!b.ok()) return b.status();
      streams = std::move(*b);
    }
    out = streams.data();
  }
  auto corrupt = [&](std::string_view what) {
    return DataLossError(fmt::format("blosc: block {} of {} ({} stored bytes) is corrupt ({})", j,
                                     h.nblocks(), stored.size(), what));
  };
  size_t pos = 0;
  for (int split = 0; split < nsplits; ++split) {
    if (stored.size() - pos < 4) return corrupt("a stream's length runs past the block");
    const auto cbytes = static_cast<int32_t>(LoadLe32(stored.data() + pos));
    pos += 4;
    if (cbytes < 0 || static_cast<size_t>(cbytes) > stored.size() - pos) {
      return corrupt(fmt::format("stream {} records {} bytes", split, cbytes));
    }
    const std::span<const std::byte> in = stored.subspan(pos, static_cast<size_t>(cbytes));
    const std::span<std::byte> piece(out + split * neblock, static_cast<size_t>(neblock));
    if (cbytes == neblock) {
      std::memcpy(piece.data(), in.data(), piece.size());  // stored uncompressed
    } else if (!DecompressStream(h.flags >> 5, in, piece)) {
      return corrupt(fmt::format("stream {} does not decode to {} bytes", split, neblock));
    }
    pos += static_cast<size_t>(cbytes);
  }
  if (shuffled) {
    Unshuffle(typesize, {streams.data(), static_cast<size_t>(bsize)},
              {dest, static_cast<size_t>(bsize)});
  }
  return Status::Ok();
}

class BloscCodec final : public BytesCodec {
 public:
  BloscCodec(const BloscSpec& spec, int typesize, int shuffle)
      : spec_(spec), typesize_(typesize), shuffle_(shuffle) {}

  const BytesCodecSpec& spec() const override { return spec_; }

  int64_t MaxEncodedSize(int64_t decoded_size) const override {
    return decoded_size + BLOSC_MAX_OVERHEAD;
  }

  // Segments EncodeTo compresses at a time (and the smallest input it
  // streams is two of them).
  static constexpr int64_t kStreamSegmentBytes = int64_t{8} << 20;

  // A frame of `nbytes` in blocks of `block` with every stream stored as it
  // is: header, offsets, and per block a length per stream (at most one per
  // byte of the element) before its bytes.
  int64_t FrameBound(int64_t nbytes, int64_t block) const {
    const int64_t nblocks = (nbytes + block - 1) / block;
    return BLOSC_MIN_HEADER_LENGTH + nbytes + 4 * nblocks * (1 + std::max(typesize_, 1));
  }

  static Status CheckEncodable(int64_t nbytes) {
    if (nbytes <= BLOSC_MAX_BUFFERSIZE) return Status::Ok();
    return InvalidArgumentError(
        fmt::format("blosc cannot encode a chunk of {} (at most {} bytes); use smaller chunks",
                    FormatBytes(nbytes), BLOSC_MAX_BUFFERSIZE));
  }

  // Compresses `input` as one frame into `output`, which may be larger than
  // MaxEncodedSize: libblosc then never stores it uncompressed (memcpyed).
  Result<int64_t> CompressFrame(std::span<const std::byte> input,
                                std::span<std::byte> output) const {
    const BloscSpec& s = std::get<BloscSpec>(spec_);
    const int written = blosc_compress_ctx(
        s.clevel, shuffle_, static_cast<size_t>(typesize_), input.size(), DataOrEmpty(input),
        DataOrEmpty(output), std::min<size_t>(output.size(), INT32_MAX), s.cname.c_str(),
        static_cast<size_t>(s.blocksize), /*numinternalthreads=*/1);
    if (written <= 0) {
      return InternalError(fmt::format("blosc: compressing {} bytes with {} failed (error {})",
                                       input.size(), DescribeCodec(spec_), written));
    }
    return written;
  }

  Result<int64_t> EncodeInto(std::span<const std::byte> input,
                             std::span<std::byte> output) const override {
    const auto nbytes = static_cast<int64_t>(input.size());
    STRATA_RETURN_IF_ERROR(CheckEncodable(nbytes));
    STRATA_CHECK(static_cast<int64_t>(output.size()) >= MaxEncodedSize(nbytes));
    // Blosc keeps the destination size in an int: never pass more than it needs.
    return CompressFrame(input, output.first(static_cast<size_t>(MaxEncodedSize(nbytes))));
  }

  bool encodes_streamed() const override { return std::get<BloscSpec>(spec_).clevel > 0; }

  int64_t MaxStreamedSize(int64_t decoded_size) const override {
    // Every block's streams stored as they are (FrameBound), in blocks of
    // libblosc's smallest, 128 bytes.
    return FrameBound(decoded_size, kMinSplitBytes);
  }

  Status EncodeTo(std::span<const std::byte> input, EncodedSink& sink,
                  MemoryPool& scratch) const override {
    const auto nbytes = static_cast<int64_t>(input.size());
    STRATA_RETURN_IF_ERROR(CheckEncodable(nbytes));
    auto not_streamed = [](std::string_view why) {
      return FailedPreconditionError(fmt::format("blosc: not encoded piece by piece: {}", why));
    };
    if (nbytes < 2 * kStreamSegmentBytes) return not_streamed("the input is small");
    // 1. The block size and header flags libblosc gives this input, from a
    // probe of its start: they depend on the input's size only through the
    // clamp to it, so a probe longer than a block finds them (libblosc's
    // automatic blocks are at most 1 MiB).
    int64_t probe = std::min<int64_t>(kStreamSegmentBytes / 4, nbytes);
    Buffer out;
    FrameHeader h0;
    while (true) {
      out.Reset();
      STRATA_ASSIGN_OR_RETURN(out, scratch.Allocate(FrameBound(probe, kMinSplitBytes)));
      STRATA_ASSIGN_OR_RETURN(int64_t n, CompressFrame(input.first(probe), out.span()));
      STRATA_ASSIGN_OR_RETURN(h0, FrameHeader::Parse(out.span().first(static_cast<size_t>(n))));
      if (h0.blocksize < probe || probe == nbytes) break;
      // Blocks of a MiB or more (a forced block size): one more probe, past
      // the largest block a segment holds.
      if (probe > kStreamSegmentBytes) return not_streamed("blocks too large");
      probe = std::min(nbytes, 2 * kStreamSegmentBytes);
    }
    const int64_t block = h0.blocksize;
    if (h0.memcpyed() || block <= 0 || block > kStreamSegmentBytes) {
      return not_streamed("blocks too large");
    }
    // 2. Segments of whole blocks, each compressed as a frame of its own
    // with room for every stream stored as it is (so libblosc never falls
    // back to an uncompressed frame): the blocks of a frame are compressed
    // independently, so each segment's blocks are the whole frame's. A tail
    // shorter than a block joins the segment before it, whose last block is
    // then the short one, as in the whole frame (never split).
    const int64_t per_segment = std::max<int64_t>(1, kStreamSegmentBytes / block) * block;
    const int64_t nblocks = (nbytes + block - 1) / block;
    const int64_t data_start = BLOSC_MIN_HEADER_LENGTH + 4 * nblocks;
    std::vector<std::byte> head(static_cast<size_t>(data_start));
    STRATA_RETURN_IF_ERROR(sink.Append(head));  // the header and offsets, patched at the end
    const int64_t capacity = FrameBound(per_segment + block, block);
    if (out.size() < capacity) {
      out.Reset();
      STRATA_ASSIGN_OR_RETURN(out, scratch.Allocate(capacity));
    }
    int64_t written = data_start;  // frame bytes so far
    int64_t j = 0;                 // blocks so far
    for (int64_t begin = 0; begin < nbytes;) {
      int64_t length = std::min(per_segment, nbytes - begin);
      if (nbytes - begin - length < block) length = nbytes - begin;
      STRATA_ASSIGN_OR_RETURN(
          int64_t n, CompressFrame(input.subspan(static_cast<size_t>(begin), static_cast<size_t>(length)),
                                   out.span().first(static_cast<size_t>(FrameBound(length, block)))));
      const std::span<const std::byte> frame = out.span().first(static_cast<size_t>(n));
      STRATA_ASSIGN_OR_RETURN(FrameHeader h, FrameHeader::Parse(frame));
      const int64_t nb = h.nblocks();
      const int64_t own_start = BLOSC_MIN_HEADER_LENGTH + 4 * nb;
      if (h.memcpyed() || h.blocksize != block || h.flags != h0.flags ||
          h.compressor_version != h0.compressor_version || h.nbytes != length ||
          own_start > n || j + nb > nblocks) {
        return not_streamed("a segment's frame differs from the first");
      }
      // One thread stores the blocks in order, right after the offsets.
      for (int64_t k = 0, previous = 0; k < nb; ++k) {
        const int64_t start = LoadLe32(frame.data() + BLOSC_MIN_HEADER_LENGTH + 4 * k);
        if (start >= n || (k == 0 ? start != own_start : start <= previous)) {
          return not_streamed("a segment's blocks are not stored in order");
        }
        previous = start;
        StoreLe32(head.data() + BLOSC_MIN_HEADER_LENGTH + 4 * (j + k),
                  static_cast<uint32_t>(written + start - own_start));
      }
      STRATA_RETURN_IF_ERROR(sink.Append(frame.subspan(static_cast<size_t>(own_start))));
      written += n - own_start;
      if (written > static_cast<int64_t>(INT32_MAX)) return not_streamed("the frame is too large");
      j += nb;
      begin += length;
    }
    STRATA_CHECK(j == nblocks) << "blosc: " << j << " blocks streamed of " << nblocks;
    head[0] = static_cast<std::byte>(h0.version);
    head[1] = static_cast<std::byte>(h0.compressor_version);
    head[2] = static_cast<std::byte>(h0.flags);
    head[3] = static_cast<std::byte>(h0.typesize);
    StoreLe32(head.data() + 4, static_cast<uint32_t>(nbytes));
    StoreLe32(head.data() + 8, static_cast<uint32_t>(block));
    StoreLe32(head.data() + 12, static_cast<uint32_t>(written));
    return sink.PatchAt(0, head);
  }

  Result<std::optional<int64_t>> DecodedSize(std::span<const std::byte> encoded) const override {
    STRATA_ASSIGN_OR_RETURN(int64_t nbytes, CheckFrame(encoded));
    return std::optional<int64_t>(nbytes);
  }

  bool decodes_runs() const override { return true; }

  Result<int64_t> RunUnit(std::span<const std::byte> header) const override {
    STRATA_ASSIGN_OR_RETURN(FrameHeader h, FrameHeader::Parse(header));
    // An uncompressed frame is read byte range by byte range.
    return h.memcpyed() || h.nbytes == 0 ? int64_t{1} : h.blocksize;
  }

  Result<int64_t> RunScratchBytes(std::span<const std::byte> header,
                                  int64_t max_run_bytes) const override {
    STRATA_ASSIGN_OR_RETURN(FrameHeader h, FrameHeader::Parse(header));
    if (h.nbytes == 0) return int64_t{0};
    // A copied frame's block size is the one its compressed siblings have
    // (blosc chooses it before compressing); where it is not, a block is at
    // most the frame.
    const int64_t block = h.blocksize > 0 && h.blocksize <= h.nbytes ? h.blocksize : h.nbytes;
    const int64_t nblocks = (h.nbytes + block - 1) / block;
    // DecodeRuns on compressed blocks: the offset table and its sorted
    // copies, one read of up to kBlocksPerRead stored blocks (a block's
    // streams stored as they are at worst, each after its 4-byte size), the
    // decoded block beside its streams, or libblosc's scratch of about three
    // blocks. On a copied frame: one run's bytes at a time.
    const int64_t blocks = 36 * nblocks + kOneBlockPrefix +
                           kBlocksPerRead * (block + 4 * kMaxSplits) + 4 * block;
    return std::max(blocks, max_run_bytes);
  }

  Status DecodeRuns(const EncodedRangeReader& read, int64_t decoded_size,
                    std::span<const DecodedRun> runs, MemoryPool& scratch) const override {
    STRATA_ASSIGN_OR_RETURN(EncodedRange head, read(0, BLOSC_MIN_HEADER_LENGTH));
    STRATA_ASSIGN_OR_RETURN(FrameHeader h, FrameHeader::Parse(head.bytes.span()));
    if (h.nbytes != decoded_size) return DecodedSizeMismatch("blosc", h.nbytes, decoded_size);
    // As CheckFrame does for a whole frame.
    if (h.cbytes != head.stored_size) {
      return DataLossError(
          fmt::format("blosc: header records a {}-byte frame but the encoded chunk has {} bytes "
                      "(truncated or not a blosc frame)",
                      h.cbytes, head.stored_size));
    }
    for (size_t i = 0; i < runs.size(); ++i) {
      STRATA_CHECK(runs[i].offset >= 0 &&
                   runs[i].offset + static_cast<int64_t>(runs[i].out.size()) <= decoded_size &&
                   (i == 0 || runs[i].offset >= runs[i - 1].offset +
                                                    static_cast<int64_t>(runs[i - 1].out.size())))
          << "blosc: run " << i << " at " << runs[i].offset << " is out of order or bounds";
    }
    if (runs.empty() || h.nbytes == 0) return Status::Ok();
    if (h.memcpyed()) {
      for (const DecodedRun& r : runs) {
        if (r.out.empty()) continue;
        STRATA_ASSIGN_OR_RETURN(
            EncodedRange got,
            read(BLOSC_MAX_OVERHEAD + r.offset, static_cast<int64_t>(r.out.size())));
        std::memcpy(r.out.data(), got.bytes.data(), r.out.size());
      }
      return Status::Ok();
    }
    const int64_t nblocks = h.nblocks();
    const int64_t blocksize = h.blocksize;
    const int64_t data_start = BLOSC_MIN_HEADER_LENGTH + 4 * nblocks;
    STRATA_ASSIGN_OR_RETURN(EncodedRange table_read, read(BLOSC_MIN_HEADER_LENGTH, 4 * nblocks));
    Buffer table = std::move(table_read.bytes);
    std::vector<int64_t> starts(nblocks), ends(nblocks);
    for (int64_t j = 0; j < nblocks; ++j) {
      starts[j] = LoadLe32(table.data() + 4 * j);
      if (starts[j] < data_start || starts[j] >= h.cbytes) {
        return DataLossError(fmt::format(
            "blosc: block {} of {} starts at byte {}, outside the {}-byte frame's blocks", j,
            nblocks, starts[j], h.cbytes));
      }
    }
    table.Reset();
    // A block's bytes end where the next stored block begins (several
    // compressing threads may have stored blocks out of order).
    std::vector<int64_t> by_start(nblocks);
    std::iota(by_start.begin(), by_start.end(), 0);
    std::sort(by_start.begin(), by_start.end(),
              [&](int64_t a, int64_t b) { return starts[a] < starts[b]; });
    for (int64_t i = 0; i < nblocks; ++i) {
      const int64_t j = by_start[i];
      ends[j] = i + 1 < nblocks ? starts[by_start[i + 1]] : h.cbytes;
      if (ends[j] <= starts[j]) {
        return DataLossError(fmt::format("blosc: blocks {} and {} of a {}-byte frame start at the "
                                         "same byte {}",
                                         j, by_start[i + 1], h.cbytes, starts[j]));
      }
    }
    // The blocks the runs touch, in stored order.
    std::vector<int64_t> needed;
    for (const DecodedRun& r : runs) {
      if (r.out.empty()) continue;
      const int64_t first = r.offset / blocksize;
      const int64_t last = (r.offset + static_cast<int64_t>(r.out.size()) - 1) / blocksize;
      for (int64_t j = needed.empty() ? first : std::max(first, needed.back() + 1); j <= last; ++j) {
        needed.push_back(j);
      }
    }
    std::sort(needed.begin(), needed.end(),
              [&](int64_t a, int64_t b) { return starts[a] < starts[b]; });
    Buffer block;    // a decoded block, when no run takes one whole
    Buffer streams;  // a block's streams before unshuffling (DecodeBlock)
    const bool direct = DecodesBlocks(h);
    size_t g = 0;
    while (g < needed.size()) {
      // One read for consecutive stored blocks, with the 20 bytes before the
      // first (there is always a header and an offset table before it).
      size_t end = g + 1;
      while (end < needed.size() && static_cast<int64_t>(end - g) < kBlocksPerRead &&
             ends[needed[end - 1]] == starts[needed[end]]) {
        ++end;
      }
      const int64_t from = starts[needed[g]] - kOneBlockPrefix;
      STRATA_ASSIGN_OR_RETURN(EncodedRange got, read(from, ends[needed[end - 1]] - from));
      Buffer& bytes = got.bytes;
      for (size_t n = g; n < end; ++n) {
        const int64_t j = needed[n];
        const int64_t begin = j * blocksize;
        const int64_t bsize = std::min(blocksize, h.nbytes - begin);
        std::byte* frame = bytes.data() + (starts[j] - kOneBlockPrefix - from);
        frame[0] = static_cast<std::byte>(h.version);
        frame[1] = static_cast<std::byte>(h.compressor_version);
        frame[2] = static_cast<std::byte>(bsize < blocksize ? h.flags | kDontSplit : h.flags);
        frame[3] = static_cast<std::byte>(h.typesize);
        StoreLe32(frame + 4, static_cast<uint32_t>(bsize));
        StoreLe32(frame + 8, static_cast<uint32_t>(bsize));
        StoreLe32(frame + 12, static_cast<uint32_t>(kOneBlockPrefix + ends[j] - starts[j]));
        StoreLe32(frame + 16, static_cast<uint32_t>(kOneBlockPrefix));
        // The runs overlapping the block (sorted, not overlapping each other).
        auto it = std::partition_point(runs.begin(), runs.end(), [&](const DecodedRun& r) {
          return r.offset + static_cast<int64_t>(r.out.size()) <= begin;
        });
        std::byte* dest = nullptr;
        if (it != runs.end() && it->offset <= begin &&
            it->offset + static_cast<int64_t>(it->out.size()) >= begin + bsize) {
          dest = it->out.data() + (begin - it->offset);  // one run takes the whole block
        } else {
          if (block.empty()) {
            STRATA_ASSIGN_OR_RETURN(block, scratch.Allocate(blocksize));
          }
          dest = block.data();
        }
        std::optional<Status> here;
        if (direct) {
          here = DecodeBlock(h, j,
                             std::span<const std::byte>(frame + kOneBlockPrefix,
                                                        static_cast<size_t>(ends[j] - starts[j])),
                             dest, bsize, streams, scratch);
        }
        if (here) {
          STRATA_RETURN_IF_ERROR(*here);
        } else {
          const int decoded = blosc_decompress_ctx(frame, dest, static_cast<size_t>(bsize),
                                                   /*numinternalthreads=*/1);
          if (decoded != bsize) {
            return DataLossError(fmt::format(
                "blosc: block {} of {} (bytes [{}, {}) of a {}-byte frame) is corrupt (libblosc "
                "error {})",
                j, nblocks, starts[j], ends[j], h.cbytes, decoded));
          }
        }
        if (dest != block.data()) continue;
        for (; it != runs.end() && it->offset < begin + bsize; ++it) {
          if (it->out.empty()) continue;
          const int64_t lo = std::max(begin, it->offset);
          const int64_t hi = std::min(begin + bsize, it->offset + static_cast<int64_t>(it->out.size()));
          std::memcpy(it->out.data() + (lo - it->offset), block.data() + (lo - begin),
                      static_cast<size_t>(hi - lo));
        }
      }
      g = end;
    }
    return Status::Ok();
  }

  Status DecodeInto(std::span<const std::byte> input, std::span<std::byte> output) const override {
    STRATA_ASSIGN_OR_RETURN(int64_t nbytes, CheckFrame(input));
    const auto expected = static_cast<int64_t>(output.size());
    if (nbytes != expected) return DecodedSizeMismatch("blosc", nbytes, expected);
    if (nbytes == 0) return Status::Ok();
    int decoded = blosc_decompress_ctx(input.data(), output.data(), output.size(),
                                       /*numinternalthreads=*/1);
    if (decoded < 0) {
      return DataLossError(fmt::format("blosc: corrupt frame of {} bytes (libblosc error {})",
                                       input.size(), decoded));
    }
    if (decoded != nbytes) return DecodedSizeMismatch("blosc", decoded, expected);
    return Status::Ok();
  }

 private:
  // Checks the frame header against the bytes actually present and returns the
  // decoded size it records.
  static Result<int64_t> CheckFrame(std::span<const std::byte> frame) {
    if (frame.size() < BLOSC_MIN_HEADER_LENGTH) {
      return DataLossError(
          fmt::format("blosc: encoded chunk is {} bytes, shorter than the {}-byte blosc header",
                      frame.size(), BLOSC_MIN_HEADER_LENGTH));
    }
    size_t nbytes = 0, cbytes = 0, blocksize = 0;
    blosc_cbuffer_sizes(frame.data(), &nbytes, &cbytes, &blocksize);
    if (cbytes != frame.size()) {
      return DataLossError(
          fmt::format("blosc: header records a {}-byte frame but the encoded chunk has {} bytes "
                      "(truncated or not a blosc frame)",
                      cbytes, frame.size()));
    }
    if (blosc_cbuffer_validate(frame.data(), frame.size(), &nbytes) != 0) {
      return DataLossError(
          fmt::format("blosc: invalid frame header (records {} decoded bytes, {} frame bytes)",
                      nbytes, cbytes));
    }
    // libblosc checks these too, but only once it decompresses; checking them
    // here keeps Decode from allocating what a corrupt header claims.
    const auto flags = static_cast<uint8_t>(frame[2]);
    if (flags & BLOSC_MEMCPYED) {
      if (nbytes + BLOSC_MAX_OVERHEAD != cbytes) {
        return DataLossError(fmt::format(
            "blosc: header of an uncompressed frame records {} decoded bytes in a {}-byte frame",
            nbytes, cbytes));
      }
    } else if (nbytes > 0) {
      const size_t nblocks = blocksize == 0 ? 0 : (nbytes + blocksize - 1) / blocksize;
      if (blocksize == 0 || blocksize > nbytes ||
          blocksize > static_cast<size_t>(BLOSC_MAX_BLOCKSIZE) ||
          BLOSC_MIN_HEADER_LENGTH + 4 * nblocks > cbytes) {
        return DataLossError(fmt::format(
            "blosc: inconsistent header ({} decoded bytes in blocks of {}, {}-byte frame)", nbytes,
            blocksize, cbytes));
      }
    }
    return static_cast<int64_t>(nbytes);
  }

  BytesCodecSpec spec_;
  int typesize_;
  int shuffle_;  // BLOSC_NOSHUFFLE, BLOSC_SHUFFLE or BLOSC_BITSHUFFLE
};

}  // namespace

Result<std::unique_ptr<const BytesCodec>> MakeBloscCodec(const BloscSpec& spec, int dtype_size) {
  bool known = false;
  for (std::string_view c : kCnames) known = known || c == spec.cname;
  if (!known) {
    return InvalidArgumentError(fmt::format("unknown blosc cname '{}' (expected one of {})",
                                            spec.cname, fmt::join(kCnames, ", ")));
  }
  if (blosc_compname_to_compcode(spec.cname.c_str()) < 0) {
    return InvalidArgumentError(
        fmt::format("blosc cname '{}' is not supported by this libblosc (it has {})", spec.cname,
                    blosc_list_compressors()));
  }
  if (spec.clevel < 0 || spec.clevel > 9) {
    return InvalidArgumentError(fmt::format("blosc clevel {} out of range 0..9", spec.clevel));
  }
  if (spec.shuffle < -1 || spec.shuffle > 2) {
    return InvalidArgumentError(fmt::format(
        "blosc shuffle {} is not one of -1 (auto), 0 (none), 1 (byte), 2 (bit)", spec.shuffle));
  }
  constexpr auto kMaxBlocksize = static_cast<int64_t>(BLOSC_MAX_BLOCKSIZE);
  if (spec.blocksize < 0 || spec.blocksize > kMaxBlocksize) {
    return InvalidArgumentError(
        fmt::format("blosc blocksize {} out of range 0..{}", spec.blocksize, kMaxBlocksize));
  }
  if (spec.typesize < 0 || spec.typesize > BLOSC_MAX_TYPESIZE) {
    return InvalidArgumentError(
        fmt::format("blosc typesize {} out of range 0..{}", spec.typesize, BLOSC_MAX_TYPESIZE));
  }
  if (spec.typesize == 0 && (dtype_size < 1 || dtype_size > BLOSC_MAX_TYPESIZE)) {
    return InvalidArgumentError(
        fmt::format("blosc cannot shuffle {}-byte elements; set typesize", dtype_size));
  }
  const int typesize = spec.typesize > 0 ? spec.typesize : dtype_size;
  // numcodecs' AUTOSHUFFLE: bit shuffle for 1-byte elements, byte shuffle otherwise.
  int shuffle = spec.shuffle;
  if (shuffle == -1) shuffle = typesize == 1 ? BLOSC_BITSHUFFLE : BLOSC_SHUFFLE;
  return std::unique_ptr<const BytesCodec>(std::make_unique<BloscCodec>(spec, typesize, shuffle));
}

}  // namespace strata::internal_codec
