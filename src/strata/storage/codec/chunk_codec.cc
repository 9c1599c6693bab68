// ChunkCodec: elements <-> stored bytes (transpose, byte order, bytes codecs).
//
// Decoding runs the bytes codecs last to first. Checksums only narrow the
// input span (no copy). The innermost compressor decompresses straight into
// the caller's chunk when the chunk is contiguous and the stored layout is its
// C order; otherwise into one temporary that is then swapped and copied (with
// the transpose) into `out`. Encoding mirrors this: serialise into a temporary
// only for a transpose, a byte swap or a strided chunk, and append checksums in
// place in spare room left at the end of the previous buffer.
//
// The copy counts (read_copies/write_copies) assume the chunk buffer is
// contiguous, as a chunk a task allocates is. Decoding a compressed chunk into
// a strided view (a sub-box of a larger array) needs one temporary more, but
// then the chunk is not a buffer of its own either, so the total is the same.
#include "strata/storage/codec/chunk_codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace strata {
namespace {

// True when the stored layout (the chunk transposed by `order`, C order) is
// the chunk's own C order: the axes longer than 1 keep their relative order.
// F order of a 1-D chunk, or of a (1, n) chunk, is C order.
bool KeepsLayout(std::span<const int> order, const Shape& shape) {
  if (NumElements(shape) == 0) return true;
  int last = -1;
  for (int axis : order) {
    if (shape[axis] <= 1) continue;
    if (axis < last) return false;
    last = axis;
  }
  return true;
}

// Swaps the bytes of every element of a view with any strides.
void ByteSwapView(const ArrayView& view, int component_size) {
  if (component_size == 1 || view.num_elements() == 0) return;
  if (view.is_contiguous()) {
    ByteSwapInPlace(view.bytes(), component_size);
    return;
  }
  const int esize = view.dtype().size();
  const int r = view.rank();
  const Index inner = view.shape()[r - 1];
  const Index inner_stride = view.byte_strides()[r - 1];
  const Shape outer(view.shape().begin(), view.shape().end() - 1);
  Shape idx(outer.size(), 0);
  do {
    std::byte* p = view.data();
    for (size_t i = 0; i < outer.size(); ++i) p += idx[i] * view.byte_strides()[i];
    if (inner_stride == esize) {
      ByteSwapInPlace({p, static_cast<size_t>(inner * esize)}, component_size);
    } else {
      for (Index j = 0; j < inner; ++j) {
        ByteSwapInPlace({p + j * inner_stride, static_cast<size_t>(esize)}, component_size);
      }
    }
  } while (NextIndex(idx, outer));
}

// A checksum appended after the bytes: encoded in place in spare room.
bool AppendsChecksum(const BytesCodec& codec) { return codec.appends_checksum(); }

}  // namespace

Result<std::shared_ptr<const ChunkCodec>> ChunkCodec::Make(ChunkEncoding encoding,
                                                           Shape chunk_shape) {
  STRATA_ASSIGN_OR_RETURN(Index num_elements, CheckedNumElements(chunk_shape, "chunk shape"));
  const int rank = static_cast<int>(chunk_shape.size());
  const int esize = encoding.dtype.size();
  if (num_elements > INT64_MAX / esize) {
    return InvalidArgumentError(fmt::format("chunk shape {} of {} has more bytes than fit in int64",
                                            ShapeToString(chunk_shape), encoding.dtype.name()));
  }
  if (!encoding.transpose.empty()) {
    std::vector<bool> seen(rank, false);
    bool valid = static_cast<int>(encoding.transpose.size()) == rank;
    for (int axis : encoding.transpose) {
      valid = valid && axis >= 0 && axis < rank && !seen[axis];
      if (valid) seen[axis] = true;
    }
    if (!valid) {
      return InvalidArgumentError(
          fmt::format("transpose ({}) is not a permutation of the {} axes of chunk shape {}",
                      fmt::join(encoding.transpose, ", "), rank, ShapeToString(chunk_shape)));
    }
  }

  ChunkCodec codec;
  for (size_t i = 0; i < encoding.bytes_codecs.size(); ++i) {
    const BytesCodecSpec& spec = encoding.bytes_codecs[i];
    auto made = MakeBytesCodec(spec, esize);
    if (!made.ok()) {
      return made.status().WithContext(fmt::format("codec {} ({})", i, CodecName(spec)));
    }
    codec.codecs_.push_back(std::move(made).value());
  }
  codec.chunk_bytes_ = num_elements * esize;
  codec.max_encoded_bytes_ = codec.chunk_bytes_;
  for (const auto& c : codec.codecs_) {
    codec.max_encoded_bytes_ = c->MaxEncodedSize(codec.max_encoded_bytes_);
  }
  codec.needs_byteswap_ = encoding.endian != kNativeEndian && encoding.dtype.component_size() > 1;
  const bool keeps_layout =
      encoding.transpose.empty() || KeepsLayout(encoding.transpose, chunk_shape);
  codec.identity_ = codec.codecs_.empty() && !codec.needs_byteswap_ && keeps_layout;
  codec.encodes_streamed_ = keeps_layout && !codec.needs_byteswap_ && codec.codecs_.size() == 1 &&
                           codec.codecs_[0]->encodes_streamed();
  codec.reads_runs_ = keeps_layout && (codec.codecs_.empty() ||
                                       (codec.codecs_.size() == 1 && codec.codecs_[0]->decodes_runs()));

  // Count the chunk-sized buffers held at once by walking Decode's and
  // Encode's steps (a compressor's output is counted as chunk-sized).
  if (codec.identity_) {
    // The store reads straight into the chunk. Encode still returns the bytes
    // in a buffer of their own (a writer that writes the chunk's bytes itself
    // when is_identity() holds none).
    codec.read_copies_ = 0;
    codec.write_copies_ = 1;
  } else {
    // Decode: the caller's encoded bytes; an intermediate buffer for each
    // compressor but the innermost (the previous one freed once it is
    // decoded); a temporary for a transpose.
    int peak = 1, intermediate = 0;
    for (size_t i = codec.codecs_.size(); i-- > 0;) {
      if (codec.codecs_[i]->decodes_to_subrange()) continue;
      if (i > 0) {
        peak = std::max(peak, 1 + intermediate + 1);
        intermediate = 1;
      } else if (!keeps_layout) {
        peak = std::max(peak, 1 + intermediate + 1);
      }
    }
    codec.read_copies_ = peak;
    // Encode: a serialised temporary for a transpose or swap; each compressor's
    // output beside its input; checksums appended in place; and at least the
    // output buffer.
    int current = (!keeps_layout || codec.needs_byteswap_) ? 1 : 0;
    peak = current;
    for (const auto& c : codec.codecs_) {
      if (AppendsChecksum(*c) && current == 1) continue;
      peak = std::max(peak, current + 1);
      current = 1;
    }
    codec.write_copies_ = std::max(peak, 1);
  }
  codec.encoding_ = std::move(encoding);
  codec.chunk_shape_ = std::move(chunk_shape);
  return std::make_shared<const ChunkCodec>(std::move(codec));
}

Status ChunkCodec::Decode(std::span<const std::byte> encoded, const ArrayView& out,
                          MemoryPool& scratch) const {
  STRATA_CHECK(out.dtype() == encoding_.dtype && out.shape() == chunk_shape_)
      << "decoding a " << encoding_.dtype.name() << " chunk of shape "
      << ShapeToString(chunk_shape_) << " into a " << out.dtype().name() << " view of shape "
      << ShapeToString(out.shape());
  const DType dtype = encoding_.dtype;
  const int component_size = dtype.component_size();
  const bool keeps_layout =
      encoding_.transpose.empty() || KeepsLayout(encoding_.transpose, chunk_shape_);
  const bool direct = keeps_layout && out.is_contiguous();

  // The stored bytes seen as a chunk-shaped view: stored axis i is chunk axis
  // transpose[i], so chunk axis a is stored axis inverse[a].
  auto stored_as_chunk = [&](const std::byte* stored) {
    if (keeps_layout) return ConstArrayView::Contiguous(stored, dtype, chunk_shape_);
    const int rank = static_cast<int>(chunk_shape_.size());
    Shape stored_shape(rank);
    std::vector<int> inverse(rank);
    for (int i = 0; i < rank; ++i) {
      stored_shape[i] = chunk_shape_[encoding_.transpose[i]];
      inverse[encoding_.transpose[i]] = i;
    }
    return ConstArrayView::Contiguous(stored, dtype, std::move(stored_shape)).Transpose(inverse);
  };

  std::span<const std::byte> bytes = encoded;
  Buffer intermediate;  // output of the latest outer compressor
  for (size_t i = codecs_.size(); i-- > 0;) {
    const BytesCodec& codec = *codecs_[i];
    if (codec.decodes_to_subrange()) {
      STRATA_ASSIGN_OR_RETURN(bytes, codec.DecodedSubrange(bytes));
      continue;
    }
    if (i > 0) {
      STRATA_ASSIGN_OR_RETURN(Buffer next, codec.Decode(bytes, scratch));
      intermediate = std::move(next);
      bytes = intermediate.span();
      continue;
    }
    // The innermost compressor: its output is the stored elements.
    if (direct) {
      STRATA_RETURN_IF_ERROR(codec.DecodeInto(bytes, out.bytes()));
      if (needs_byteswap_) ByteSwapInPlace(out.bytes(), component_size);
      return Status::Ok();
    }
    STRATA_ASSIGN_OR_RETURN(Buffer stored, scratch.Allocate(chunk_bytes_));
    STRATA_RETURN_IF_ERROR(codec.DecodeInto(bytes, stored.span()));
    intermediate.Reset();
    if (needs_byteswap_) ByteSwapInPlace(stored.span(), component_size);
    CopyArray(stored_as_chunk(stored.data()), out);
    return Status::Ok();
  }

  // No compressor: `bytes` are the stored elements themselves.
  if (static_cast<int64_t>(bytes.size()) != chunk_bytes_) {
    return DataLossError(fmt::format("stored chunk has {} bytes, expected {} ({} of shape {})",
                                     bytes.size(), chunk_bytes_, dtype.name(),
                                     ShapeToString(chunk_shape_)));
  }
  if (chunk_bytes_ == 0) return Status::Ok();
  if (direct) {
    std::memcpy(out.data(), bytes.data(), bytes.size());
    if (needs_byteswap_) ByteSwapInPlace(out.bytes(), component_size);
    return Status::Ok();
  }
  CopyArray(stored_as_chunk(bytes.data()), out);
  if (needs_byteswap_) ByteSwapView(out, component_size);
  return Status::Ok();
}

int64_t ChunkCodec::max_streamed_bytes() const {
  STRATA_CHECK(encodes_streamed_);
  return codecs_[0]->MaxStreamedSize(chunk_bytes_);
}

Status ChunkCodec::EncodeTo(const ConstArrayView& chunk, EncodedSink& sink,
                            MemoryPool& scratch) const {
  STRATA_CHECK(encodes_streamed_ && chunk.is_contiguous() && chunk.dtype() == encoding_.dtype &&
               chunk.shape() == chunk_shape_)
      << "EncodeTo of a " << chunk.dtype().name() << " view of shape "
      << ShapeToString(chunk.shape());
  return codecs_[0]->EncodeTo(chunk.bytes(), sink, scratch);
}

namespace {

// Raw stored bytes: runs closer than this are fetched with one read.
constexpr int64_t kRawReadGap = 64 << 10;
// The most one read of raw runs fetches.
constexpr int64_t kRawReadMax = 4 << 20;

}  // namespace

Status ChunkCodec::DecodeRuns(const EncodedRangeReader& read, std::span<const DecodedRun> runs,
                              MemoryPool& scratch) const {
  STRATA_CHECK(reads_runs_) << "DecodeRuns on a codec that cannot decode part of a chunk";
  if (!codecs_.empty()) {
    STRATA_RETURN_IF_ERROR(codecs_[0]->DecodeRuns(read, chunk_bytes_, runs, scratch));
  } else {
    size_t g = 0;
    while (g < runs.size()) {
      size_t end = g + 1;
      int64_t last = runs[g].offset + static_cast<int64_t>(runs[g].out.size());
      while (end < runs.size() && runs[end].offset - last <= kRawReadGap &&
             runs[end].offset + static_cast<int64_t>(runs[end].out.size()) - runs[g].offset <=
                 kRawReadMax) {
        last = runs[end].offset + static_cast<int64_t>(runs[end].out.size());
        ++end;
      }
      STRATA_CHECK(runs[g].offset >= 0 && last <= chunk_bytes_)
          << "raw run [" << runs[g].offset << ", " << last << ") outside a chunk of "
          << chunk_bytes_ << " bytes";
      if (last > runs[g].offset) {
        STRATA_ASSIGN_OR_RETURN(EncodedRange got, read(runs[g].offset, last - runs[g].offset));
        // As Decode checks a whole raw chunk's length.
        if (got.stored_size != chunk_bytes_) {
          return DataLossError(fmt::format("stored chunk has {} bytes, expected {} ({} of shape {})",
                                           got.stored_size, chunk_bytes_,
                                           encoding_.dtype.name(), ShapeToString(chunk_shape_)));
        }
        const Buffer& bytes = got.bytes;
        for (size_t i = g; i < end; ++i) {
          if (runs[i].out.empty()) continue;
          std::memcpy(runs[i].out.data(), bytes.data() + (runs[i].offset - runs[g].offset),
                      runs[i].out.size());
        }
      }
      g = end;
    }
  }
  if (needs_byteswap_) {
    for (const DecodedRun& r : runs) ByteSwapInPlace(r.out, encoding_.dtype.component_size());
  }
  return Status::Ok();
}

Result<int64_t> ChunkCodec::RunUnit(std::span<const std::byte> header) const {
  STRATA_CHECK(reads_runs_) << "RunUnit on a codec that cannot decode part of a chunk";
  if (codecs_.empty()) return int64_t{1};
  return codecs_[0]->RunUnit(header);
}

Result<int64_t> ChunkCodec::RunScratchBytes(std::span<const std::byte> header,
                                            int64_t max_run_bytes) const {
  STRATA_CHECK(reads_runs_) << "RunScratchBytes on a codec that cannot decode part of a chunk";
  // Raw runs are fetched a read at a time (a run longer than a read alone),
  // never past the chunk.
  if (codecs_.empty()) return std::min(std::max(kRawReadMax, max_run_bytes), chunk_bytes_);
  return codecs_[0]->RunScratchBytes(header, max_run_bytes);
}

Result<Buffer> ChunkCodec::Encode(const ConstArrayView& chunk, MemoryPool& pool) const {
  STRATA_CHECK(chunk.dtype() == encoding_.dtype && chunk.shape() == chunk_shape_)
      << "encoding a " << chunk.dtype().name() << " view of shape " << ShapeToString(chunk.shape())
      << " with a codec for " << encoding_.dtype.name() << " chunks of shape "
      << ShapeToString(chunk_shape_);
  const DType dtype = encoding_.dtype;
  const bool keeps_layout =
      encoding_.transpose.empty() || KeepsLayout(encoding_.transpose, chunk_shape_);

  // Room for the checksums that directly follow stage i (stage 0 is the
  // serialised elements, stage i+1 the output of codecs_[i]), so that they
  // are appended in place instead of copying the whole buffer.
  auto checksum_room_after = [&](size_t stage) {
    int64_t room = 0;
    for (size_t j = stage; j < codecs_.size() && AppendsChecksum(*codecs_[j]); ++j) {
      room += codecs_[j]->MaxEncodedSize(0);
    }
    return room;
  };

  Buffer current;           // owns `bytes` unless they are the caller's chunk
  int64_t current_len = 0;  // bytes of `current` in use
  std::span<const std::byte> bytes;
  if (chunk.is_contiguous() && keeps_layout && !needs_byteswap_) {
    bytes = chunk_bytes_ == 0 ? std::span<const std::byte>() : chunk.bytes();
  } else {
    STRATA_ASSIGN_OR_RETURN(current, pool.Allocate(chunk_bytes_ + checksum_room_after(0)));
    const int rank = chunk.rank();
    Shape stored_shape(rank);
    for (int i = 0; i < rank; ++i) {
      stored_shape[i] = keeps_layout ? chunk_shape_[i] : chunk_shape_[encoding_.transpose[i]];
    }
    ArrayView stored = ArrayView::Contiguous(current.data(), dtype, std::move(stored_shape));
    CopyArray(keeps_layout ? chunk : chunk.Transpose(encoding_.transpose), stored);
    if (needs_byteswap_) {
      ByteSwapInPlace(current.span().first(chunk_bytes_), dtype.component_size());
    }
    current_len = chunk_bytes_;
    bytes = current.span().first(current_len);
  }

  for (size_t i = 0; i < codecs_.size(); ++i) {
    const BytesCodec& codec = *codecs_[i];
    const int64_t len = static_cast<int64_t>(bytes.size());
    const int64_t needed = codec.MaxEncodedSize(len);
    if (AppendsChecksum(codec) && bytes.data() == current.data() && current.size() >= needed) {
      // Append the checksum in place.
      STRATA_ASSIGN_OR_RETURN(current_len, codec.EncodeInto(bytes, current.span().first(needed)));
    } else {
      STRATA_ASSIGN_OR_RETURN(Buffer next, pool.Allocate(needed + checksum_room_after(i + 1)));
      STRATA_ASSIGN_OR_RETURN(current_len, codec.EncodeInto(bytes, next.span().first(needed)));
      current = std::move(next);
    }
    bytes = current.span().first(current_len);
  }

  if (current.data() == nullptr || bytes.data() != current.data()) {
    // No stage copied the caller's chunk (identity encoding): the output is a copy.
    STRATA_ASSIGN_OR_RETURN(current, pool.Allocate(static_cast<int64_t>(bytes.size())));
    if (!bytes.empty()) std::memcpy(current.data(), bytes.data(), bytes.size());
    current_len = static_cast<int64_t>(bytes.size());
  }
  current.Shrink(current_len);
  return current;
}

}  // namespace strata
