// numcodecs.Shuffle: byte j of element i goes to position j * count + i, so
// that the bytes of equal significance sit together (it helps a compressor
// after it). An element size of 0 or 1 changes nothing.
#include <fmt/format.h>

#include <cstring>

#include "strata/storage/codec/codec_internal.h"

namespace strata::internal_codec {
namespace {

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
    const size_t es = static_cast<size_t>(elementsize_);
    const size_t count = in.size() / es;
    for (size_t j = 0; j < es; ++j) {
      for (size_t i = 0; i < count; ++i) {
        if (shuffle) {
          out[j * count + i] = in[i * es + j];
        } else {
          out[i * es + j] = in[j * count + i];
        }
      }
    }
  }

  BytesCodecSpec spec_;
  int elementsize_;
};

}  // namespace

Result<std::unique_ptr<const BytesCodec>> MakeShuffleCodec(const ShuffleSpec& spec) {
  if (spec.elementsize < 0 || spec.elementsize > 1 << 16) {
    return InvalidArgumentError(
        fmt::format("shuffle elementsize {} out of range 0..65536", spec.elementsize));
  }
  return std::unique_ptr<const BytesCodec>(new ShuffleCodec(spec));
}

}  // namespace strata::internal_codec
