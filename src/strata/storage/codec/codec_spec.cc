// Codec names, one-line descriptions and the CLI's --codec syntax.
#include "strata/storage/codec/codec_spec.h"

#include <fmt/format.h>

#include <charconv>
#include <set>
#include <type_traits>

#include "strata/storage/codec/codec.h"

namespace strata {
namespace {

std::string_view ShuffleName(int shuffle) {
  switch (shuffle) {
    case -1:
      return "auto";
    case 0:
      return "none";
    case 1:
      return "byte";
    case 2:
      return "bit";
  }
  return "?";
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = s.find(separator, start);
    if (end == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
}

// One "key=value" option of codec `codec`.
struct Option {
  std::string_view codec;
  std::string_view key;
  std::string_view value;

  template <typename Int>
  Result<Int> AsInt() const {
    Int v{};
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
      return InvalidArgumentError(fmt::format("{} {} '{}' is not an integer", codec, key, value));
    }
    return v;
  }

  Result<bool> AsBool() const {
    if (value == "true" || value == "1") return true;
    if (value == "false" || value == "0") return false;
    return InvalidArgumentError(
        fmt::format("{} {} '{}' is not a boolean (expected true or false)", codec, key, value));
  }

  Result<int> AsShuffle() const {
    if (value == "none" || value == "0") return 0;
    if (value == "byte" || value == "1") return 1;
    if (value == "bit" || value == "2") return 2;
    if (value == "auto" || value == "-1") return -1;
    return InvalidArgumentError(fmt::format(
        "blosc shuffle '{}' is not one of none, byte, bit, auto (or 0, 1, 2, -1)", value));
  }

  Status Unknown(std::string_view expected) const {
    return InvalidArgumentError(
        fmt::format("unknown {} option '{}' (expected {})", codec, key, expected));
  }
};

Status ApplyOption(const Option& o, BloscSpec& s) {
  if (o.key == "cname") {
    s.cname = std::string(o.value);
  } else if (o.key == "clevel") {
    STRATA_ASSIGN_OR_RETURN(s.clevel, o.AsInt<int>());
  } else if (o.key == "shuffle") {
    STRATA_ASSIGN_OR_RETURN(s.shuffle, o.AsShuffle());
  } else if (o.key == "blocksize") {
    STRATA_ASSIGN_OR_RETURN(s.blocksize, o.AsInt<int64_t>());
  } else if (o.key == "typesize") {
    STRATA_ASSIGN_OR_RETURN(s.typesize, o.AsInt<int>());
  } else {
    return o.Unknown("cname, clevel, shuffle, blocksize, typesize");
  }
  return Status::Ok();
}

Status ApplyOption(const Option& o, ZstdSpec& s) {
  if (o.key == "level") {
    STRATA_ASSIGN_OR_RETURN(s.level, o.AsInt<int>());
  } else if (o.key == "checksum") {
    STRATA_ASSIGN_OR_RETURN(s.checksum, o.AsBool());
  } else {
    return o.Unknown("level, checksum");
  }
  return Status::Ok();
}

template <typename Spec>
Status ApplyLevel(const Option& o, Spec& s) {
  if (o.key != "level") return o.Unknown("level");
  STRATA_ASSIGN_OR_RETURN(s.level, o.AsInt<int>());
  return Status::Ok();
}

Status ApplyOption(const Option& o, ZlibSpec& s) { return ApplyLevel(o, s); }
Status ApplyOption(const Option& o, GzipSpec& s) { return ApplyLevel(o, s); }

Status ApplyOption(const Option& o, Lz4Spec& s) {
  if (o.key != "acceleration") return o.Unknown("acceleration");
  STRATA_ASSIGN_OR_RETURN(s.acceleration, o.AsInt<int>());
  return Status::Ok();
}

Status ApplyOption(const Option& o, Crc32cSpec&) {
  return InvalidArgumentError(fmt::format("crc32c takes no options (got '{}')", o.key));
}

Status ApplyOption(const Option& o, Bz2Spec& s) { return ApplyLevel(o, s); }

Status ApplyOption(const Option& o, Checksum32Spec& s) {
  if (s.kind == Checksum32Spec::Kind::kFletcher32) {
    return InvalidArgumentError(fmt::format("fletcher32 takes no options (got '{}')", o.key));
  }
  if (o.key != "location") return o.Unknown("location");
  if (o.value == "start") {
    s.at_start = true;
  } else if (o.value == "end") {
    s.at_start = false;
  } else {
    return InvalidArgumentError(
        fmt::format("{} location '{}' is not start or end", o.codec, o.value));
  }
  return Status::Ok();
}

Status ApplyOption(const Option& o, ShuffleSpec& s) {
  if (o.key != "elementsize") return o.Unknown("elementsize");
  STRATA_ASSIGN_OR_RETURN(s.elementsize, o.AsInt<int>());
  return Status::Ok();
}

// The default spec of codec `name`, or nullopt for an unknown name.
std::optional<BytesCodecSpec> DefaultSpec(std::string_view name) {
  if (name == "blosc") return BloscSpec{};
  if (name == "zstd") return ZstdSpec{};
  if (name == "zlib") return ZlibSpec{};
  if (name == "gzip") return GzipSpec{};
  if (name == "lz4") return Lz4Spec{};
  if (name == "crc32c") return Crc32cSpec{};
  if (name == "bz2") return Bz2Spec{};
  if (name == "crc32") return Checksum32Spec{Checksum32Spec::Kind::kCrc32, true};
  if (name == "adler32") return Checksum32Spec{Checksum32Spec::Kind::kAdler32, true};
  if (name == "fletcher32") return Checksum32Spec{Checksum32Spec::Kind::kFletcher32, false};
  if (name == "shuffle") return ShuffleSpec{};
  return std::nullopt;
}

// Parses one "name[:key=value,...]".
Result<BytesCodecSpec> ParseOneCodec(std::string_view text) {
  const size_t colon = text.find(':');
  const std::string_view name = Trim(text.substr(0, colon));
  std::optional<BytesCodecSpec> default_spec = DefaultSpec(name);
  if (!default_spec) {
    return InvalidArgumentError(fmt::format(
        "unknown codec '{}' (expected blosc, zstd, zlib, gzip, lz4, bz2, crc32c, crc32, adler32, "
        "fletcher32, shuffle or none)",
        name));
  }
  BytesCodecSpec spec = std::move(*default_spec);
  if (colon != std::string_view::npos) {
    std::set<std::string_view> seen;
    for (std::string_view item : Split(text.substr(colon + 1), ',')) {
      item = Trim(item);
      const size_t eq = item.find('=');
      if (item.empty() || eq == std::string_view::npos) {
        return InvalidArgumentError(
            fmt::format("{} option '{}' is not key=value (in '{}')", name, item, Trim(text)));
      }
      Option option{name, Trim(item.substr(0, eq)), Trim(item.substr(eq + 1))};
      if (!seen.insert(option.key).second) {
        return InvalidArgumentError(fmt::format("{} option '{}' given twice", name, option.key));
      }
      STRATA_RETURN_IF_ERROR(std::visit([&](auto& s) { return ApplyOption(option, s); }, spec));
    }
  }
  // Range checks live with the codecs; element size 1 is always valid.
  STRATA_RETURN_IF_ERROR(MakeBytesCodec(spec, /*dtype_size=*/1));
  return spec;
}

}  // namespace

std::string_view CodecName(const BytesCodecSpec& spec) {
  return std::visit(
      [](const auto& s) -> std::string_view {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, BloscSpec>) return "blosc";
        if constexpr (std::is_same_v<S, ZstdSpec>) return "zstd";
        if constexpr (std::is_same_v<S, ZlibSpec>) return "zlib";
        if constexpr (std::is_same_v<S, GzipSpec>) return "gzip";
        if constexpr (std::is_same_v<S, Lz4Spec>) return "lz4";
        if constexpr (std::is_same_v<S, Crc32cSpec>) return "crc32c";
        if constexpr (std::is_same_v<S, Bz2Spec>) return "bz2";
        if constexpr (std::is_same_v<S, ShuffleSpec>) return "shuffle";
        if constexpr (std::is_same_v<S, Checksum32Spec>) {
          switch (s.kind) {
            case Checksum32Spec::Kind::kCrc32: return "crc32";
            case Checksum32Spec::Kind::kAdler32: return "adler32";
            case Checksum32Spec::Kind::kCrc32c: return "crc32c";
            case Checksum32Spec::Kind::kFletcher32: return "fletcher32";
          }
          return "checksum";
        }
      },
      spec);
}

bool IsChecksumCodec(const BytesCodecSpec& spec) {
  return std::holds_alternative<Crc32cSpec>(spec) || std::holds_alternative<Checksum32Spec>(spec);
}

std::string DescribeCodec(const BytesCodecSpec& spec) {
  return std::visit(
      [](const auto& s) -> std::string {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, BloscSpec>) {
          std::string text = fmt::format("blosc(cname={}, clevel={}, shuffle=", s.cname, s.clevel);
          std::string_view shuffle = ShuffleName(s.shuffle);
          text += shuffle == "?" ? std::to_string(s.shuffle) : std::string(shuffle);
          if (s.blocksize != 0) text += fmt::format(", blocksize={}", s.blocksize);
          if (s.typesize != 0) text += fmt::format(", typesize={}", s.typesize);
          return text + ")";
        } else if constexpr (std::is_same_v<S, ZstdSpec>) {
          return fmt::format("zstd(level={}{})", s.level, s.checksum ? ", checksum=true" : "");
        } else if constexpr (std::is_same_v<S, ZlibSpec>) {
          return fmt::format("zlib(level={})", s.level);
        } else if constexpr (std::is_same_v<S, GzipSpec>) {
          return fmt::format("gzip(level={})", s.level);
        } else if constexpr (std::is_same_v<S, Lz4Spec>) {
          return fmt::format("lz4(acceleration={})", s.acceleration);
        } else if constexpr (std::is_same_v<S, Bz2Spec>) {
          return fmt::format("bz2(level={})", s.level);
        } else if constexpr (std::is_same_v<S, ShuffleSpec>) {
          return fmt::format("shuffle(elementsize={})", s.elementsize);
        } else if constexpr (std::is_same_v<S, Checksum32Spec>) {
          if (s.kind == Checksum32Spec::Kind::kFletcher32) return "fletcher32";
          return fmt::format("{}(location={})", CodecName(BytesCodecSpec(s)),
                             s.at_start ? "start" : "end");
        } else {
          return "crc32c";
        }
      },
      spec);
}

Result<std::vector<BytesCodecSpec>> ParseCodecArgument(std::string_view text) {
  const std::string_view trimmed = Trim(text);
  if (trimmed.empty()) {
    return InvalidArgumentError(
        "empty codec argument (expected \"none\" or codecs such as \"blosc:cname=zstd,clevel=3\")");
  }
  if (trimmed == "none") return std::vector<BytesCodecSpec>();
  std::vector<BytesCodecSpec> specs;
  for (std::string_view part : Split(trimmed, '+')) {
    part = Trim(part);
    if (part.empty()) {
      return InvalidArgumentError(fmt::format("empty codec in '{}'", trimmed));
    }
    if (part == "none") {
      return InvalidArgumentError(
          fmt::format("'none' cannot be combined with other codecs (in '{}')", trimmed));
    }
    STRATA_ASSIGN_OR_RETURN(BytesCodecSpec spec, ParseOneCodec(part));
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace strata
