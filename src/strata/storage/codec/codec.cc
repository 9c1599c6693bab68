// BytesCodec's shared methods (buffer-allocating Encode/Decode) and
// MakeBytesCodec, which dispatches to one factory per format.
#include "strata/storage/codec/codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "strata/storage/codec/codec_internal.h"

namespace strata {
namespace internal_codec {
namespace {

alignas(64) std::byte kEmpty[64];

}  // namespace

Status DecodedSizeMismatch(std::string_view codec, int64_t actual, int64_t expected) {
  return DataLossError(
      fmt::format("{}: encoded chunk decodes to {} bytes, expected {}", codec, actual, expected));
}

const std::byte* DataOrEmpty(std::span<const std::byte> bytes) {
  return bytes.data() != nullptr ? bytes.data() : kEmpty;
}

std::byte* DataOrEmpty(std::span<std::byte> bytes) {
  return bytes.data() != nullptr ? bytes.data() : kEmpty;
}

Status GrowableOutput::Reserve(int64_t min_free, int64_t initial_capacity) {
  if (free_bytes() >= min_free) return Status::Ok();
  int64_t capacity = std::max<int64_t>({size_ + min_free, buffer_.size() * 2, initial_capacity});
  STRATA_ASSIGN_OR_RETURN(Buffer bigger, pool_.Allocate(capacity));
  if (size_ > 0) std::memcpy(bigger.data(), buffer_.data(), static_cast<size_t>(size_));
  buffer_ = std::move(bigger);
  return Status::Ok();
}

Result<Buffer> GrowableOutput::Finish() && {
  if (buffer_.data() == nullptr) return pool_.Allocate(0);
  buffer_.Shrink(size_);
  return std::move(buffer_);
}

}  // namespace internal_codec

Result<std::span<const std::byte>> BytesCodec::DecodedSubrange(
    std::span<const std::byte> input) const {
  return InternalError(
      fmt::format("{} does not decode to a sub-range of its input", CodecName(spec())));
}

Status BytesCodec::DecodeRuns(const EncodedRangeReader&, int64_t, std::span<const DecodedRun>,
                              MemoryPool&) const {
  return InternalError(fmt::format("{} cannot decode part of a chunk", CodecName(spec())));
}

Result<int64_t> BytesCodec::RunUnit(std::span<const std::byte>) const {
  return InternalError(fmt::format("{} cannot decode part of a chunk", CodecName(spec())));
}

Result<int64_t> BytesCodec::RunScratchBytes(std::span<const std::byte>, int64_t) const {
  return InternalError(fmt::format("{} cannot decode part of a chunk", CodecName(spec())));
}

Status BytesCodec::EncodeTo(std::span<const std::byte>, EncodedSink&, MemoryPool&) const {
  return InternalError(fmt::format("{} cannot encode a chunk piece by piece", CodecName(spec())));
}

Result<Buffer> BytesCodec::Encode(std::span<const std::byte> input, MemoryPool& pool) const {
  STRATA_ASSIGN_OR_RETURN(Buffer output,
                          pool.Allocate(MaxEncodedSize(static_cast<int64_t>(input.size()))));
  STRATA_ASSIGN_OR_RETURN(int64_t size, EncodeInto(input, output.span()));
  output.Shrink(size);
  return output;
}

Result<Buffer> BytesCodec::Decode(std::span<const std::byte> input, MemoryPool& pool,
                                  std::optional<int64_t> size_hint) const {
  if (decodes_to_subrange()) {
    STRATA_ASSIGN_OR_RETURN(std::span<const std::byte> decoded, DecodedSubrange(input));
    const auto size = static_cast<int64_t>(decoded.size());
    if (size_hint && *size_hint != size) {
      return internal_codec::DecodedSizeMismatch(CodecName(spec()), size, *size_hint);
    }
    STRATA_ASSIGN_OR_RETURN(Buffer output, pool.Allocate(size));
    if (size > 0) std::memcpy(output.data(), decoded.data(), decoded.size());
    return output;
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> size, DecodedSize(input));
  if (size && size_hint && *size != *size_hint) {
    return internal_codec::DecodedSizeMismatch(CodecName(spec()), *size, *size_hint);
  }
  if (!size) size = size_hint;
  if (size) {
    STRATA_ASSIGN_OR_RETURN(Buffer output, pool.Allocate(*size));
    STRATA_RETURN_IF_ERROR(DecodeInto(input, output.span()));
    return output;
  }
  // Neither the format nor the caller knows the size: stream into a growing buffer.
  if (std::holds_alternative<ZlibSpec>(spec())) {
    return internal_codec::InflateToNewBuffer(input, /*gzip=*/false, pool);
  }
  if (std::holds_alternative<GzipSpec>(spec())) {
    return internal_codec::InflateToNewBuffer(input, /*gzip=*/true, pool);
  }
  if (std::holds_alternative<ZstdSpec>(spec())) {
    return internal_codec::ZstdDecompressToNewBuffer(input, pool);
  }
  if (std::holds_alternative<Bz2Spec>(spec())) {
    return internal_codec::Bz2DecompressToNewBuffer(input, pool);
  }
  return InternalError(
      fmt::format("{}: the decoded size is unknown and cannot be discovered", CodecName(spec())));
}

Result<std::unique_ptr<const BytesCodec>> MakeBytesCodec(const BytesCodecSpec& spec,
                                                         int dtype_size) {
  return std::visit(
      [&](const auto& s) -> Result<std::unique_ptr<const BytesCodec>> {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, BloscSpec>) {
          return internal_codec::MakeBloscCodec(s, dtype_size);
        } else if constexpr (std::is_same_v<S, ZstdSpec>) {
          return internal_codec::MakeZstdCodec(s);
        } else if constexpr (std::is_same_v<S, ZlibSpec>) {
          return internal_codec::MakeZlibCodec(s);
        } else if constexpr (std::is_same_v<S, GzipSpec>) {
          return internal_codec::MakeGzipCodec(s);
        } else if constexpr (std::is_same_v<S, Lz4Spec>) {
          return internal_codec::MakeLz4Codec(s);
        } else if constexpr (std::is_same_v<S, Bz2Spec>) {
          return internal_codec::MakeBz2Codec(s);
        } else if constexpr (std::is_same_v<S, Checksum32Spec>) {
          return internal_codec::MakeChecksum32Codec(s);
        } else if constexpr (std::is_same_v<S, ShuffleSpec>) {
          return internal_codec::MakeShuffleCodec(s);
        } else {
          static_assert(std::is_same_v<S, Crc32cSpec>);
          return internal_codec::MakeCrc32cCodec();
        }
      },
      spec);
}

}  // namespace strata
